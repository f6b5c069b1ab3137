/*
 * Exactly-once harness (docs/reliability.md): prove, per device, that what the
 * client reported matches what the device itself executed.
 *
 * 1. The caller opens a client over some link (in-process emulator, echocat
 *    against autd3-emu in a namespace, TwinCAT against the emulated runtime).
 * 2. eo_run() streams tagged XorHash frames (id at data[0..4] and again at
 *    data[4..8], so the XOR is 0 and the device answers 0), keeping each
 *    request handle in a bounded window; a fault callback runs before each
 *    send (the fault schedule).
 * 3. Every request's wait result and per-device outcome (autd3_response_t.
 *    outcome[]) are recorded; every wait is bounded.
 * 4. The devices' execution logs are drained periodically and at the end
 *    through a log source (one callback per emulator flavour).
 * 5. eo_check() asserts per device: the ids the log shows executed == the ids
 *    the client reported EXECUTED for that device; no id executed twice; every
 *    send accounted for (an outcome for every device). UNKNOWN is allowed only
 *    where the client said UNKNOWN (the id may or may not be in the log).
 *
 * Old client (outcome[] all NONE): an OK request counts as EXECUTED by every
 * device, a failed one as NOT_EXECUTED (what a caller would have to assume)
 * and as unaccounted, so today's bugs show as doubles, "success for
 * non-executed" and unaccounted sends.
 */
#ifndef AUTD3_TESTS_EXACTLY_ONCE_H
#define AUTD3_TESTS_EXACTLY_ONCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autd3/autd3.h"

#define EO_ID_MARK 0x5A000000u /* tag = EO_ID_MARK | request index (24 bits) */
#define EO_MAX_REQUESTS 0x00FFFFFFu

/* Drain up to cap entries of device dev's log; *dropped = entries the log lost
 * so far. Returns the count, or (size_t)-1 if the log cannot be read. */
typedef size_t (*eo_drain_fn)(void *ctx, uint16_t dev, autd3_exec_entry_t *out, size_t cap, uint64_t *dropped);
/* Called before send i (elapsed_ns since the start): inject faults here. */
typedef void (*eo_fault_fn)(void *ctx, size_t i, uint64_t elapsed_ns);

typedef struct eo_config {
  size_t requests;       /* stop after this many sends (0 = only the duration counts) */
  uint64_t duration_ns;  /* stop after this long (0 = only the count counts) */
  size_t window;         /* request handles kept in flight before waiting for the oldest (default 32) */
  uint32_t wait_ms;      /* bound for one request's wait (default 30 000) */
  size_t drain_every;    /* drain the logs every this many sends (default 100) */
  eo_drain_fn drain;
  void *drain_ctx;
  eo_fault_fn fault;     /* may be NULL */
  void *fault_ctx;
  const char *name;      /* for the summary lines */
  const bool *stop;      /* may be NULL: the stream also ends before a send once *stop is true (e.g. set by `fault`) */
  bool no_state_check;   /* true: no state-checker thread (by default one calls autd3_link_check_state every 100 ms,
                            as an application does, so EtherCAT links recover unplugged/power-cycled devices) */
} eo_config_t;

typedef struct eo_dev_summary {
  uint64_t executed_log;       /* distinct tagged ids in the device's log */
  uint64_t reported_executed;  /* requests the client reported EXECUTED for this device */
  uint64_t reported_not;       /* ... NOT_EXECUTED */
  uint64_t reported_unknown;   /* ... UNKNOWN */
  uint64_t unknown_executed;   /* UNKNOWN ones that the log shows executed */
  uint64_t doubles;            /* ids executed more than once */
  uint64_t missing;            /* reported EXECUTED, not in the log */
  uint64_t phantom;            /* in the log, reported NOT_EXECUTED (or never sent) */
  uint64_t unaccounted;        /* no outcome for this device */
  uint64_t log_dropped;        /* log entries lost (the proof is incomplete) */
  uint64_t boots;              /* highest boot number in the log's entries (power cycles before the last execution) */
  uint64_t stream_boot;        /* highest boot number among the stream's (tagged) entries */
  uint64_t stream_in_last_boot;/* tagged entries executed in that boot */
  uint32_t first_double[8], first_missing[8], first_phantom[8]; /* request indices, for the report */
} eo_dev_summary_t;

typedef struct eo_result {
  size_t ndev;
  uint64_t sent, completed_ok, send_errors, wait_hung;
  uint64_t err_device_reset, err_outcome_unknown, err_timeout, err_link, err_closed, err_other;
  bool old_client;             /* no request carried an outcome (outcome[] all NONE) */
  bool log_unreadable;
  autd3_client_stats_t client; /* the client's counters at the end of the run */
  /* Evidence that the faults happened (a fault test asserts these before exactness): */
  autd3_link_stats_t link;                     /* the link's counters at the end of the run (stale, lost cycles) */
  uint32_t dev_resets[AUTD3_MAX_DEVICES];      /* autd3_client_device_resets() per device at the end of the run */
  bool not_op_seen[AUTD3_MAX_DEVICES];         /* the state checker saw the device in a state other than OP */
  uint64_t recoveries;                         /* the last state check's autd3_link_status_t.recoveries */
  eo_dev_summary_t dev[AUTD3_MAX_DEVICES];
} eo_result_t;

/* Run the schedule on client c; fills *res (also on a partial run). */
void eo_run(autd3_client_t *c, const eo_config_t *cfg, eo_result_t *res);
/* After the client is closed: drain the logs until they stay empty, then
 * compute the per-device summaries. Call once, after eo_run. */
void eo_finish(const eo_config_t *cfg, eo_result_t *res);
/* Print one summary line per device (and a total line) to stdout. */
void eo_print(const eo_config_t *cfg, const eo_result_t *res);
/* After eo_finish: requests with index >= first that completed AUTD3_OK (the
 * stream is back after a fault at send `first`). */
uint64_t eo_ok_from(const eo_result_t *res, size_t first);
/* After eo_finish: what the client reported device d did with request i
 * (a send that failed counts NOT_EXECUTED; NONE: hung or unaccounted), and
 * how often d's log shows it executed (0, 1, 2 = twice or more). For
 * timelines: when a device stopped and resumed executing the stream. */
uint8_t eo_outcome(const eo_result_t *res, size_t i, uint16_t d);
unsigned eo_executions(const eo_result_t *res, size_t i, uint16_t d);
/* True when every device is exact: no doubles, missing, phantom, unaccounted,
 * dropped log entries; the first violation is described in why. */
bool eo_ok(const eo_result_t *res, char *why, size_t cap);

/* Log sources. */
size_t eo_drain_emulator(void *link, uint16_t dev, autd3_exec_entry_t *out, size_t cap, uint64_t *dropped);
/* autd3-emu's control socket ("log K"); ctx = socket path (NULL: $AUTD3_EMU_CONTROL). */
size_t eo_drain_emuctl(void *path, uint16_t dev, autd3_exec_entry_t *out, size_t cap, uint64_t *dropped);

#endif
