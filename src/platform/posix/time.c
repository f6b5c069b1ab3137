/* POSIX monotonic time and absolute sleeps. */
#define _GNU_SOURCE
#include <errno.h>
#include <time.h>

#include "platform/platform.h"

static uint64_t ts_ns(const struct timespec *ts) { return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec; }

uint64_t autd3__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts_ns(&ts);
}

uint64_t autd3__realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts_ns(&ts);
}

uint64_t autd3__thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts_ns(&ts);
}

/* Absolute deadlines (TIMER_ABSTIME) so that a late wake-up does not push
 * every later cycle back: the next deadline is computed from the grid, not
 * from when we happened to wake. */
void autd3__sleep_until_ns(uint64_t deadline_ns, uint32_t spin_ns) {
  uint64_t sleep_to = deadline_ns > spin_ns ? deadline_ns - spin_ns : 0;
  struct timespec ts = {.tv_sec = (time_t)(sleep_to / 1000000000ull), .tv_nsec = (long)(sleep_to % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
  if (spin_ns) {
    while (autd3__now_ns() < deadline_ns) {
    }
  }
}

void autd3__sleep_ns(uint64_t ns) { autd3__sleep_until_ns(autd3__now_ns() + ns, 0); }
