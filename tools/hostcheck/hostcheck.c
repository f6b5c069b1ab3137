/*
 * autd3-hostcheck: what this host costs a bus thread before any link does
 * anything (docs/echocat.md "What the host costs"). A link's figures are only
 * as good as the machine's: a cycle that must act once per SYNC0 edge loses
 * the edge whenever the host wakes its thread too late, and a thread that
 * wakes once per cycle pays the kernel's (and a hypervisor's) price of that
 * wake-up whatever the link does. This tool measures both with nothing else
 * running in the thread, so a benchmark row can be read against them.
 *
 * One thread with the client's bus-thread policy (platform/rt.h: 1 ns timer
 * slack, optional SCHED_FIFO priority and CPU), then either
 *   sleep  (default) absolute-deadline sleeps one cycle apart, the platform
 *          sleep every link's cycle uses; reports the thread's CPU (the floor
 *          of a link that wakes once per cycle) and how late each wake-up
 *          came (cyclictest's measure): p50, p99, max and how many were later
 *          than 100 us, 500 us and one cycle;
 *   --spin busy-waits for the same time, reading the clock, and counts the
 *          gaps (the thread was not running): the stalls a cycle plan that
 *          spins to hit a narrow window (echocat's long chains) cannot avoid.
 * The measurement is tools/common/wake_measure.c (shared with `autd3 doctor`);
 * only the platform seam (src/platform): it builds wherever the library does.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "numopt.h"
#include "wake_measure.h"

#define TOOL "autd3-hostcheck"

static void usage(FILE *o) {
  fprintf(o,
          "usage: " TOOL " [options]\n"
          "  --cycle-us N      cycle, 50..100000 us (default 1000)\n"
          "  --count N         cycles to measure, 1..10000000 (default 10000)\n"
          "  --rt-priority P   SCHED_FIFO priority of the measuring thread, 1..99 (as autd3-perftest's bus thread)\n"
          "  --rt-core C       pin the measuring thread to CPU C\n"
          "  --spin            busy-wait instead of sleeping; count the gaps of a running thread\n");
}

int main(int argc, char **argv) {
  static wake_run_t r; /* the histogram is large: not on the stack */
  r.cycle_ns = 1000000u;
  r.count = 10000u;
  r.rt_core = -1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    }
    if (strcmp(a, "--spin") == 0) {
      r.spin = true;
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, TOOL ": %s: unknown option or missing value (see --help)\n", a);
      return 2;
    }
    const char *v = argv[++i];
    if (strcmp(a, "--cycle-us") == 0)
      r.cycle_ns = autd3_numopt_u64_or_exit(TOOL, a, v, 50, 100000) * 1000u;
    else if (strcmp(a, "--count") == 0)
      r.count = autd3_numopt_u64_or_exit(TOOL, a, v, 1, 10000000);
    else if (strcmp(a, "--rt-priority") == 0)
      r.rt_priority = (int)autd3_numopt_u64_or_exit(TOOL, a, v, 1, 99);
    else if (strcmp(a, "--rt-core") == 0)
      r.rt_core = (int)autd3_numopt_u64_or_exit(TOOL, a, v, 0, 1023);
    else {
      fprintf(stderr, TOOL ": %s: unknown option (see --help)\n", a);
      return 2;
    }
  }
  if (!wake_measure(&r)) {
    fprintf(stderr, TOOL ": cannot start the measuring thread: %s\n", autd3_last_error());
    return 1;
  }
  if (r.policy_err != AUTD3_OK) {
    fprintf(stderr, TOOL ": --rt-priority/--rt-core refused: %s\n", r.policy_msg);
    return 1;
  }
  double secs = (double)r.wall_ns / 1e9;
  printf("host check      : %s, cycle %.0f us, %llu cycles, %.1f s", r.spin ? "spinning thread" : "one sleep per cycle",
         (double)r.cycle_ns / 1e3, (unsigned long long)r.count, secs);
  if (r.rt_priority) printf(", SCHED_FIFO %d", r.rt_priority);
  if (r.rt_core >= 0) printf(", CPU %d", r.rt_core);
  printf("\n");
  printf("  cpu           : %.2f %% of one core\n", r.wall_ns ? 100.0 * (double)r.cpu_ns / (double)r.wall_ns : 0.0);
  if (r.spin) {
    printf("  gaps > 10 us  : %llu (%.1f per second)\n", (unsigned long long)r.over[0], (double)r.over[0] / secs);
    printf("  gaps > 100 us : %llu\n", (unsigned long long)r.over[1]);
    printf("  gaps > 500 us : %llu\n", (unsigned long long)r.over[2]);
    printf("  max gap       : %.1f us\n", (double)r.max_ns / 1e3);
  } else {
    printf("  late p50      : %.0f us\n", wake_pct_us(&r, 0.50));
    printf("  late p99      : %.0f us\n", wake_pct_us(&r, 0.99));
    printf("  late max      : %.1f us\n", (double)r.max_ns / 1e3);
    printf("  late > 100 us : %llu\n", (unsigned long long)r.over[1]);
    printf("  late > 500 us : %llu\n", (unsigned long long)r.over[2]);
    printf("  late > cycle  : %llu (wake-ups no cycle could have used)\n", (unsigned long long)r.over[3]);
  }
  return 0;
}
