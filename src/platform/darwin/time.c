/* macOS monotonic time and absolute sleeps: mach_absolute_time, which
 * (unlike CLOCK_MONOTONIC there) has a matching absolute sleep,
 * mach_wait_until. */
#include <mach/mach.h>
#include <mach/mach_time.h>
#include <time.h>

#include "platform/platform.h"

static mach_timebase_info_data_t timebase(void) {
  static mach_timebase_info_data_t tb; /* constant: a benign race on first use */
  if (tb.denom == 0) mach_timebase_info(&tb);
  return tb;
}

static uint64_t ticks_to_ns(uint64_t t) {
  mach_timebase_info_data_t tb = timebase();
  /* Split so t * numer cannot overflow (numer/denom is 125/3 on Apple silicon). */
  return t / tb.denom * tb.numer + t % tb.denom * tb.numer / tb.denom;
}

static uint64_t ns_to_ticks(uint64_t ns) {
  mach_timebase_info_data_t tb = timebase();
  return ns / tb.numer * tb.denom + ns % tb.numer * tb.denom / tb.numer;
}

uint64_t autd3__now_ns(void) { return ticks_to_ns(mach_absolute_time()); }

static uint64_t ts_ns(const struct timespec *ts) { return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec; }

uint64_t autd3__realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts); /* macOS 10.12+ */
  return ts_ns(&ts);
}

uint64_t autd3__thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* macOS 10.12+ */
  return ts_ns(&ts);
}

/* Absolute deadline on the same clock as autd3__now_ns(), so a late wake-up
 * does not shift later cycles. mach_wait_until may return early on an
 * interrupt: loop until the deadline is reached. */
void autd3__sleep_until_ns(uint64_t deadline_ns, uint32_t spin_ns) {
  uint64_t sleep_to = deadline_ns > spin_ns ? deadline_ns - spin_ns : 0;
  while (autd3__now_ns() < sleep_to) {
    uint64_t now = autd3__now_ns();
    if (now >= sleep_to) break;
    mach_wait_until(mach_absolute_time() + ns_to_ticks(sleep_to - now));
  }
  if (spin_ns) {
    while (autd3__now_ns() < deadline_ns) {
    }
  }
}

void autd3__sleep_ns(uint64_t ns) { autd3__sleep_until_ns(autd3__now_ns() + ns, 0); }
