/* Windows monotonic time and absolute sleeps. */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include "platform/platform.h"
#include "platform/win/win_internal.h"

#ifndef CREATE_WAITABLE_TIMER_HIGH_RESOLUTION
#define CREATE_WAITABLE_TIMER_HIGH_RESOLUTION 0x00000002
#endif

static uint64_t qpc_freq(void) {
  static volatile LONG64 freq; /* constant after boot: a benign race */
  LONG64 f = freq;
  if (f == 0) {
    LARGE_INTEGER li;
    QueryPerformanceFrequency(&li);
    f = li.QuadPart;
    freq = f;
  }
  return (uint64_t)f;
}

/* QueryPerformanceCounter: monotonic, unaffected by wall-clock changes. */
uint64_t autd3__now_ns(void) {
  LARGE_INTEGER c;
  QueryPerformanceCounter(&c);
  uint64_t f = qpc_freq(), t = (uint64_t)c.QuadPart;
  return t / f * 1000000000ull + t % f * 1000000000ull / f;
}

uint64_t autd3__realtime_ns(void) {
  FILETIME ft;
  GetSystemTimePreciseAsFileTime(&ft);
  uint64_t t = (uint64_t)ft.dwHighDateTime << 32 | ft.dwLowDateTime; /* 100 ns since 1601 */
  return (t - 116444736000000000ull) * 100ull;
}

uint64_t autd3__win_filetime_ns(const FILETIME *a, const FILETIME *b) {
  uint64_t x = (uint64_t)a->dwHighDateTime << 32 | a->dwLowDateTime;
  uint64_t y = (uint64_t)b->dwHighDateTime << 32 | b->dwLowDateTime;
  return (x + y) * 100ull;
}

uint64_t autd3__thread_cpu_ns(void) {
  FILETIME c, e, k, u;
  if (!GetThreadTimes(GetCurrentThread(), &c, &e, &k, &u)) return 0;
  return autd3__win_filetime_ns(&k, &u);
}

/* One waitable timer per thread, made on its first sleep and closed when an
 * autd3 thread ends (thread.c). High resolution (Windows 10 1803+) wakes to
 * within tens of microseconds without timeBeginPeriod; where the flag is
 * refused, a plain timer follows the system tick (see thread.c's
 * autd3__thread_precise_timers for raising it). */
static _Thread_local HANDLE sleep_timer;

void autd3__win_sleep_timer_close(void) {
  if (sleep_timer != NULL) {
    CloseHandle(sleep_timer);
    sleep_timer = NULL;
  }
}

static HANDLE get_sleep_timer(void) {
  if (sleep_timer == NULL) {
    sleep_timer = CreateWaitableTimerExW(NULL, NULL, CREATE_WAITABLE_TIMER_HIGH_RESOLUTION, TIMER_ALL_ACCESS);
    if (sleep_timer == NULL) sleep_timer = CreateWaitableTimerExW(NULL, NULL, 0, TIMER_ALL_ACCESS);
  }
  return sleep_timer;
}

/* Windows timers take relative due times here: recompute from the absolute
 * monotonic deadline on every call, so a late wake-up does not push later
 * cycles back (the grid, not the wake-up, sets the next deadline). */
void autd3__sleep_until_ns(uint64_t deadline_ns, uint32_t spin_ns) {
  uint64_t sleep_to = deadline_ns > spin_ns ? deadline_ns - spin_ns : 0;
  uint64_t now = autd3__now_ns();
  if (sleep_to > now) {
    HANDLE t = get_sleep_timer();
    LARGE_INTEGER due;
    due.QuadPart = -(LONGLONG)((sleep_to - now + 99) / 100); /* negative: relative, 100 ns units */
    if (t != NULL && SetWaitableTimer(t, &due, 0, NULL, NULL, FALSE))
      WaitForSingleObject(t, INFINITE);
    else
      Sleep((DWORD)((sleep_to - now + 999999) / 1000000));
  }
  if (spin_ns) {
    while (autd3__now_ns() < deadline_ns) {
      YieldProcessor();
    }
  }
}

void autd3__sleep_ns(uint64_t ns) { autd3__sleep_until_ns(autd3__now_ns() + ns, 0); }
