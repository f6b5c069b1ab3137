/* The host's wake-up measurement (see wake_measure.h). */
#include "wake_measure.h"

#include <stdio.h>

#include "autd3/link_driver.h"
#include "platform/platform.h"
#include "platform/rt.h"

static void record(wake_run_t *r, uint64_t late) {
  if (late > r->max_ns) r->max_ns = late;
  uint64_t us = late / 1000u;
  r->hist[us < WAKE_BUCKETS ? us : WAKE_BUCKETS]++;
  const uint64_t lim[4] = {10000u, 100000u, 500000u, r->cycle_ns};
  for (int i = 0; i < 4; i++)
    if (late > lim[i]) r->over[i]++;
}

static void *measure(void *arg) {
  wake_run_t *r = arg;
  r->policy_err = autd3__bus_thread_policy(r->rt_priority, r->rt_core);
  if (r->policy_err != AUTD3_OK) {
    snprintf(r->policy_msg, sizeof r->policy_msg, "%s", autd3_last_error());
    return NULL;
  }
  uint64_t cpu0 = autd3__thread_cpu_ns(), t0 = autd3__now_ns();
  if (r->spin) {
    /* every clock read that comes more than 1 µs after the previous one is a gap */
    uint64_t end = t0 + r->count * r->cycle_ns, prev = t0;
    for (uint64_t now = t0; now < end; now = autd3__now_ns()) {
      if (now - prev > 1000u) record(r, now - prev);
      prev = now;
    }
  } else {
    uint64_t deadline = t0;
    for (uint64_t i = 0; i < r->count; i++) {
      deadline += r->cycle_ns;
      autd3__sleep_until_ns(deadline, 0);
      uint64_t now = autd3__now_ns();
      record(r, now > deadline ? now - deadline : 0);
      if (now > deadline + r->cycle_ns) /* a stall: the next deadline is the next cycle still ahead */
        deadline += (now - deadline) / r->cycle_ns * r->cycle_ns;
    }
  }
  r->wall_ns = autd3__now_ns() - t0;
  r->cpu_ns = autd3__thread_cpu_ns() - cpu0;
  return NULL;
}

bool wake_measure(wake_run_t *r) {
  autd3__thread_t th;
  if (autd3__thread_start(&th, measure, r, "autd3-wake") != AUTD3_OK) return false;
  autd3__thread_join(&th);
  return true;
}

double wake_pct_us(const wake_run_t *r, double q) {
  uint64_t n = 0, total = 0;
  for (int i = 0; i <= WAKE_BUCKETS; i++) total += r->hist[i];
  if (total == 0) return 0;
  for (int i = 0; i <= WAKE_BUCKETS; i++) {
    n += r->hist[i];
    if ((double)n >= q * (double)total) return i;
  }
  return WAKE_BUCKETS;
}
