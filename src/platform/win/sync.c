/* Windows semaphores (kernel objects) and mutexes (slim reader/writer locks). */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include "autd3/link_driver.h"
#include "platform/platform.h"

_Static_assert(sizeof(HANDLE) <= sizeof(((autd3__sem_t *)0)->u.bytes), "HANDLE does not fit autd3__sem_t");
_Static_assert(sizeof(SRWLOCK) <= sizeof(((autd3__mutex_t *)0)->u.bytes), "SRWLOCK does not fit autd3__mutex_t");

#define SEM(s) (*(HANDLE *)(void *)(s)->u.bytes)
#define MTX(m) ((SRWLOCK *)(void *)(m)->u.bytes)

autd3_err_t autd3__sem_init(autd3__sem_t *s, uint32_t initial) {
  HANDLE h = CreateSemaphoreW(NULL, (LONG)initial, 0x7FFFFFFF, NULL);
  if (h == NULL)
    return autd3_set_error(AUTD3_E_INTERNAL, "cannot create a semaphore (Windows error %lu)", (unsigned long)GetLastError());
  SEM(s) = h;
  return AUTD3_OK;
}

void autd3__sem_destroy(autd3__sem_t *s) { CloseHandle(SEM(s)); }

/* A system call, no user-mode lock: a waiter can hold nothing it needs. */
void autd3__sem_post(autd3__sem_t *s) { ReleaseSemaphore(SEM(s), 1, NULL); }

autd3_err_t autd3__sem_wait(autd3__sem_t *s) {
  if (WaitForSingleObject(SEM(s), INFINITE) != WAIT_OBJECT_0)
    return autd3_set_error(AUTD3_E_INTERNAL, "semaphore wait failed (Windows error %lu)", (unsigned long)GetLastError());
  return AUTD3_OK;
}

bool autd3__sem_trywait(autd3__sem_t *s) { return WaitForSingleObject(SEM(s), 0) == WAIT_OBJECT_0; }

/* WaitForSingleObject times out on the interrupt-time clock, which wall-clock
 * changes do not move (the seam's monotonic contract). Milliseconds, rounded
 * up so a wait never ends early; long waits go in slices below INFINITE. */
autd3_err_t autd3__sem_timedwait_ns(autd3__sem_t *s, uint64_t timeout_ns) {
  uint64_t ms = (timeout_ns + 999999ull) / 1000000ull;
  for (;;) {
    DWORD slice = ms > 0x7FFFFFFFull ? 0x7FFFFFFFu : (DWORD)ms;
    DWORD r = WaitForSingleObject(SEM(s), slice);
    if (r == WAIT_OBJECT_0) return AUTD3_OK;
    if (r != WAIT_TIMEOUT)
      return autd3_set_error(AUTD3_E_INTERNAL, "semaphore timed wait failed (Windows error %lu)", (unsigned long)GetLastError());
    ms -= slice;
    if (ms == 0) return AUTD3_E_PENDING;
  }
}

autd3_err_t autd3__mutex_init(autd3__mutex_t *m) {
  InitializeSRWLock(MTX(m));
  return AUTD3_OK;
}

void autd3__mutex_destroy(autd3__mutex_t *m) { (void)m; /* an SRW lock owns no resources */ }
void autd3__mutex_lock(autd3__mutex_t *m) { AcquireSRWLockExclusive(MTX(m)); }
void autd3__mutex_unlock(autd3__mutex_t *m) { ReleaseSRWLockExclusive(MTX(m)); }
bool autd3__mutex_trylock(autd3__mutex_t *m) { return TryAcquireSRWLockExclusive(MTX(m)) != 0; }
