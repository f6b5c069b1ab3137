/* macOS semaphores (libdispatch; macOS has no unnamed POSIX semaphores:
 * sem_init fails with ENOSYS) and pthread mutexes. */
#include <dispatch/dispatch.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "platform/platform.h"

_Static_assert(sizeof(dispatch_semaphore_t) <= sizeof(((autd3__sem_t *)0)->u.bytes), "dispatch_semaphore_t does not fit");
_Static_assert(sizeof(pthread_mutex_t) <= sizeof(((autd3__mutex_t *)0)->u.bytes), "pthread_mutex_t does not fit");
_Static_assert(_Alignof(pthread_mutex_t) <= _Alignof(autd3__mutex_t), "pthread_mutex_t alignment");

#define SEM(s) (*(dispatch_semaphore_t *)(void *)(s)->u.bytes)
#define MTX(m) ((pthread_mutex_t *)(void *)(m)->u.bytes)

/* Created at 0 and raised to `initial`: libdispatch aborts when a semaphore
 * is released with a value below the one it was created with, which the
 * client's pool semaphore (created at max_inflight) may be at close. */
autd3_err_t autd3__sem_init(autd3__sem_t *s, uint32_t initial) {
  dispatch_semaphore_t d = dispatch_semaphore_create(0);
  if (d == NULL) return autd3_set_error(AUTD3_E_INTERNAL, "cannot create a dispatch semaphore");
  for (uint32_t i = 0; i < initial; i++) dispatch_semaphore_signal(d);
  SEM(s) = d;
  return AUTD3_OK;
}

void autd3__sem_destroy(autd3__sem_t *s) { dispatch_release(SEM(s)); }

/* dispatch_semaphore_signal is an atomic increment, entering the kernel only
 * to wake a waiter: no lock a waiter can hold. */
void autd3__sem_post(autd3__sem_t *s) { (void)dispatch_semaphore_signal(SEM(s)); }

autd3_err_t autd3__sem_wait(autd3__sem_t *s) {
  (void)dispatch_semaphore_wait(SEM(s), DISPATCH_TIME_FOREVER);
  return AUTD3_OK;
}

bool autd3__sem_trywait(autd3__sem_t *s) { return dispatch_semaphore_wait(SEM(s), DISPATCH_TIME_NOW) == 0; }

/* DISPATCH_TIME_NOW-based deadlines count mach_absolute_time, the monotonic
 * clock of time.c, so a wall-clock step cannot stretch the wait. */
autd3_err_t autd3__sem_timedwait_ns(autd3__sem_t *s, uint64_t timeout_ns) {
  int64_t d = timeout_ns > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)timeout_ns;
  return dispatch_semaphore_wait(SEM(s), dispatch_time(DISPATCH_TIME_NOW, d)) == 0 ? AUTD3_OK : AUTD3_E_PENDING;
}

autd3_err_t autd3__mutex_init(autd3__mutex_t *m) {
  int rc = pthread_mutex_init(MTX(m), NULL);
  if (rc != 0) return autd3_set_error(AUTD3_E_INTERNAL, "cannot initialise a mutex: %s", strerror(rc));
  return AUTD3_OK;
}

void autd3__mutex_destroy(autd3__mutex_t *m) { pthread_mutex_destroy(MTX(m)); }
void autd3__mutex_lock(autd3__mutex_t *m) { pthread_mutex_lock(MTX(m)); }
void autd3__mutex_unlock(autd3__mutex_t *m) { pthread_mutex_unlock(MTX(m)); }
bool autd3__mutex_trylock(autd3__mutex_t *m) { return pthread_mutex_trylock(MTX(m)) == 0; }
