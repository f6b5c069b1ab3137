/* POSIX unnamed semaphores and pthread mutexes (Linux, the BSDs; not macOS,
 * which has no unnamed semaphores: see darwin/). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <time.h>

#include "autd3/link_driver.h"
#include "platform/platform.h"

_Static_assert(sizeof(sem_t) <= sizeof(((autd3__sem_t *)0)->u.bytes), "sem_t does not fit autd3__sem_t");
_Static_assert(_Alignof(sem_t) <= _Alignof(autd3__sem_t), "sem_t alignment");
_Static_assert(sizeof(pthread_mutex_t) <= sizeof(((autd3__mutex_t *)0)->u.bytes), "pthread_mutex_t does not fit");
_Static_assert(_Alignof(pthread_mutex_t) <= _Alignof(autd3__mutex_t), "pthread_mutex_t alignment");

#define SEM(s) ((sem_t *)(void *)(s)->u.bytes)
#define MTX(m) ((pthread_mutex_t *)(void *)(m)->u.bytes)

autd3_err_t autd3__sem_init(autd3__sem_t *s, uint32_t initial) {
  if (sem_init(SEM(s), 0, initial) != 0)
    return autd3_set_error(AUTD3_E_INTERNAL, "cannot initialise a semaphore: %s", strerror(errno));
  return AUTD3_OK;
}

void autd3__sem_destroy(autd3__sem_t *s) { sem_destroy(SEM(s)); }

/* sem_post is lock-free (an atomic and, only with waiters, a futex wake). */
void autd3__sem_post(autd3__sem_t *s) { sem_post(SEM(s)); }

autd3_err_t autd3__sem_wait(autd3__sem_t *s) {
  while (sem_wait(SEM(s)) != 0) {
    if (errno != EINTR) return autd3_set_error(AUTD3_E_INTERNAL, "sem_wait: %s", strerror(errno));
  }
  return AUTD3_OK;
}

bool autd3__sem_trywait(autd3__sem_t *s) {
  while (sem_trywait(SEM(s)) != 0) {
    if (errno != EINTR) return false;
  }
  return true;
}

autd3_err_t autd3__sem_timedwait_ns(autd3__sem_t *s, uint64_t timeout_ns) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 30))
  /* sem_clockwait (glibc >= 2.30) so a wall-clock step cannot stretch the wait. */
  const clockid_t clk = CLOCK_MONOTONIC;
#define AUTD3__SEM_TIMEDWAIT(sem, ts) sem_clockwait((sem), CLOCK_MONOTONIC, (ts))
#else
  /* Elsewhere POSIX only offers the wall clock for this; a clock step
   * during the wait stretches or shortens it. */
  const clockid_t clk = CLOCK_REALTIME;
#define AUTD3__SEM_TIMEDWAIT(sem, ts) sem_timedwait((sem), (ts))
#endif
  struct timespec ts;
  clock_gettime(clk, &ts);
  uint64_t ns = (uint64_t)ts.tv_nsec + timeout_ns % 1000000000ull;
  ts.tv_sec += (time_t)(timeout_ns / 1000000000ull + ns / 1000000000ull);
  ts.tv_nsec = (long)(ns % 1000000000ull);
  while (AUTD3__SEM_TIMEDWAIT(SEM(s), &ts) != 0) {
    int e = errno;
    if (e == EINTR) continue;
    if (e == ETIMEDOUT) return AUTD3_E_PENDING;
    return autd3_set_error(AUTD3_E_INTERNAL, "semaphore timed wait: %s", strerror(e));
  }
#undef AUTD3__SEM_TIMEDWAIT
  return AUTD3_OK;
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
