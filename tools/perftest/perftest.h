/*
 * autd3-perftest: the link benchmark of shinolab/autd3-sdk tools/perftest
 * (its README and src/), in C over any libautd3 link.
 *
 * perftest.c  command line, the run (stop-and-wait / streaming), the state-check thread
 * report.c    statistics (nearest-rank percentiles), the stdout summary, CSV, JSON (the link's statistics,
 *             state checks and devices through tools/common/link_view.h)
 * plot.c      the SVG plot (latency histogram + per-sample timeline)
 */
#ifndef AUTD3_TOOLS_PERFTEST_H
#define AUTD3_TOOLS_PERFTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "autd3/link.h"

/* Sample status, as the reference's SampleStatus: ok / dev:0xNN / timeout / link. */
enum pt_status { PT_OK = 0, PT_DEVICE = 1, PT_TIMEOUT = 2, PT_LINK = 3 };

typedef struct pt_sample {
  uint64_t index;
  uint64_t rtt_ns;
  uint8_t status; /* enum pt_status */
  uint8_t code;   /* device error code when PT_DEVICE */
} pt_sample_t;

typedef struct pt_latency {
  uint64_t mean, p50, p95, p99, min, max; /* ns */
} pt_latency_t;

typedef struct pt_summary {
  uint64_t elapsed_ns;
  uint64_t success, timeouts, link_errors, device_errors;
  uint64_t device_error_counts[256]; /* per code */
  uint64_t stale_cycles, lost_cycles;
  double cmd_per_sec, byte_per_sec;
  pt_latency_t latency;
} pt_summary_t;

/* What the report needs to know about the run besides the samples. */
typedef struct pt_context {
  const char *link;
  const char *mode;
  const char *timing; /* emulator timing model, NULL for other links */
  size_t devices;
  uint32_t cycle_us;
  uint32_t inflight;
  uint64_t warmup;
  double bus_cpu_percent;
  uint64_t bus_cycles;
  uint64_t resyncs, resets, retransmits;
  /* The link, read at the end of the run (NULL: not read): its statistics since open, the state checker's
   * counts and last look (status NULL: no check succeeded; check_error: why the checker stopped), and each
   * device's counters (autd3_link_device_info; NULL: not read). */
  const autd3_link_stats_t *link_stats;
  uint64_t checks, checks_not_all_op;
  const autd3_link_status_t *status;
  const char *check_error;
  const autd3_link_device_info_t *dev_info;
} pt_context_t;

/* report.c */
void pt_summarize(const pt_sample_t *s, size_t n, uint64_t elapsed_ns, uint64_t stale, uint64_t lost, pt_summary_t *out);
void pt_format_duration(uint64_t ns, char *buf, size_t cap);
void pt_print_summary(FILE *f, const pt_summary_t *s);
void pt_print_extra(FILE *f, const pt_summary_t *s, const pt_context_t *ctx, const char *diagnostics);
/* The link statistics, state checks and per-device block of pt_print_extra (nothing when ctx->link_stats is NULL). */
void pt_print_link(FILE *f, const pt_context_t *ctx);
int pt_write_csv(const char *path, const pt_sample_t *s, size_t n);
int pt_write_json(const char *path, const pt_summary_t *s, const pt_context_t *ctx);
/* plot.c */
int pt_write_svg(const char *path, const pt_sample_t *s, size_t n, const pt_summary_t *sum, const pt_context_t *ctx);

#endif
