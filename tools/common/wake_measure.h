/*
 * The host's wake-up measurement (autd3-hostcheck, and `autd3 doctor`'s
 * "wake-up floor" check): one thread with the client's bus-thread policy
 * (platform/rt.h: 1 ns timer slack, optional SCHED_FIFO priority and CPU)
 * that either sleeps to absolute deadlines one cycle apart and records how
 * late each wake-up came (cyclictest's measure), or spins for the same time
 * and records the gaps (the thread was not running). Uses only the platform
 * seam (src/platform).
 */
#ifndef AUTD3_TOOLS_WAKE_MEASURE_H
#define AUTD3_TOOLS_WAKE_MEASURE_H

#include <stdbool.h>
#include <stdint.h>

#include "autd3/error.h"

#define WAKE_BUCKETS 20000 /* 1 µs buckets of lateness; beyond: counted in the last */

typedef struct wake_run {
  /* in */
  uint64_t cycle_ns, count;
  int rt_priority, rt_core; /* 0 / -1: leave */
  bool spin;
  /* out */
  autd3_err_t policy_err;
  char policy_msg[256];
  uint64_t cpu_ns, wall_ns, max_ns;
  uint64_t over[4]; /* later (or gaps longer) than 10 µs, 100 µs, 500 µs, one cycle */
  uint32_t hist[WAKE_BUCKETS + 1];
} wake_run_t;

/* Run the measurement on its own thread and wait for it. Returns false if
 * the thread could not start (message in autd3_last_error()); a refused
 * policy is r->policy_err / r->policy_msg. r is large: keep it static. */
bool wake_measure(wake_run_t *r);
/* The q-quantile (0..1) of the lateness (gaps), µs. */
double wake_pct_us(const wake_run_t *r, double q);

#endif
