/*
 * autd3 synctune (docs/tools.md "synctune"): the options of a sweep, what one setting measured, and the
 * measurement of one setting (synctune_run.c). Public API only.
 */
#ifndef AUTD3_TOOLS_AUTD3_SYNCTUNE_H
#define AUTD3_TOOLS_AUTD3_SYNCTUNE_H

#include <stdbool.h>
#include <stdint.h>

#include "autd3/autd3.h"

/* The load during the dwell: none, one frame at a time (send_checked), or a window of frames in flight. */
typedef enum tune_mode { TUNE_IDLE = 0, TUNE_STOP_AND_WAIT, TUNE_STREAMING } tune_mode_t;

typedef struct tune_opts {
  const char *link, *interface, *capture;
  bool measure;           /* `synctune measure`: one setting (--cycle-us, --shift-percent) */
  uint64_t cycle_us;      /* measure's period (0: not given, 1000) */
  int64_t shift_percent;  /* measure's shift */
  bool shift_percent_set; /* --shift-percent was given */
  uint64_t devices, inflight;
  uint64_t dwell_ns, warmup_ns, poll_ns;
  uint64_t period_min, period_max, period_step; /* us */
  int64_t shift_min, shift_max, shift_step;     /* percent of the period */
  tune_mode_t mode;
  bool csv;
} tune_opts_t;

/* One setting: what opening it gave and what the dwell measured (deltas over the dwell unless noted). */
typedef struct tune_result {
  uint32_t period_us;
  int32_t shift_percent;
  autd3_err_t open_err;
  char why[160];
  uint64_t checks, all_op, recoveries; /* state checks every poll interval; recoveries during the dwell */
  uint64_t cycles, stale, lost;
  uint32_t measured;                  /* the link's AUTD3_LINK_MEASURES_* */
  uint64_t phase_excursions;          /* during the dwell */
  uint64_t worst_phase_deviation_ns;  /* since open (the warm-up included: a maximum cannot be split) */
  uint64_t exchanges, exchange_ns;    /* during the dwell */
  bool drift_known;
  double dc_drift_ppm;                /* the DC clock against the host's over the dwell */
  uint64_t frames_ok, frames_failed;  /* the load's frames */
  uint64_t elapsed_ns;                /* the dwell as it ran */
  int64_t first_drop_ns;              /* from the dwell's start to the first drop (-1: none) */
} tune_result_t;

/* The SYNC0 shift of a setting in ns and in whole microseconds (period_us is a multiple of 500). */
int64_t tune_shift_ns(const tune_result_t *r);

/* Open a client for the setting in r (period_us, shift_percent), warm up, measure for the dwell, close. */
void tune_run_one(const tune_opts_t *t, tune_result_t *r);

#endif
