/*
 * The emulated TwinCAT runtime: an ADS/TCP server (one thread, one loop on
 * src/net) that behaves like a TwinCAT 3 system running the AUTD3 I/O task
 * that the reference's twincat-cli creates, backed by the AUTD3 device model
 * (emulation/device/firmware.h: each device runs the firmware cfg.firmware
 * gives it). A library: tests and the fuzz target run it in-process,
 * tools/twincat-emu (autd3-twincat-emu) is its command line.
 *
 * What it serves (docs/twincat.md has the full table):
 *  - router: AMS/TCP port connect (0x1000, answers the NetId and a port, as a
 *    local TwinCAT router does for ads-rs/ads-client), get local NetId
 *    (0x1002), port close (0x0001);
 *  - AMS port 301 ("Task 1"): ReadDeviceInfo, ReadState (Run), Read/Write and
 *    device notifications on index group 0x03040030: outputs at 0x81000000
 *    (N×626), inputs at 0x80000000 (u16 slave count, N×2 rx, N×2 state words);
 *  - AMS port 10000 (system service): ReadState, ReadDeviceInfo;
 *  - everything else: the ADS error a real runtime returns (0x0006/0x0007 in
 *    the AMS header, 0x0701/0x0702/0x0703/0x0704/0x0705/0x0713/0x0714 results).
 * ADS requests to a TwinCAT I/O task are served in the task's real-time
 * context, once per task cycle, not on arrival: that is why the reference
 * link, which waits for every Write and Read, tops out below one cycle per
 * task cycle (815 cmd/s at 1 ms on the documentation page). The emulator does
 * the same by default: each task cycle it (1) serves every request that
 * arrived since the last cycle, (2) hands the output image to each device
 * (SYNC0 = task cycle) and reads the inputs back, (3) sends due
 * notifications. `serve_immediately` answers on arrival instead.
 *
 * Bounded: at most `max_conns` connections, fixed buffers per connection
 * (allocated at accept), oversized frames answered with 0x0705 and skipped.
 * Several ADS clients at once are served, as by a real runtime. Holding up
 * (idle connections must not lock the link out): a connection that has not
 * sent a complete AMS/TCP frame within `handshake_timeout_ms` of connecting
 * is closed; when every place is taken, a new connection takes the place of
 * the connection that has been quiet longest (no complete frame for
 * `idle_timeout_ms` or more), else it is closed at once. Send progress
 * (net/progress.h, the Remote server's rule): a connection whose output the
 * kernel has taken nothing of for `idle_timeout_ms` is dropped, and one whose
 * replies no longer fit its buffer at once. Verbose log lines are rate
 * limited (net/log_limit.h).
 */
#ifndef AUTD3_EMULATION_TWINCAT_TWINCAT_EMU_H
#define AUTD3_EMULATION_TWINCAT_TWINCAT_EMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autd3/emulator.h"
#include "autd3/error.h"
#include "link/twincat/ads.h"

#define AUTD3_TCEMU_MAX_CONNS 16        /* default max_conns */
#define AUTD3_TCEMU_MAX_CONNS_LIMIT 1024 /* largest accepted max_conns */
#define AUTD3_TCEMU_MAX_NOTIF 8 /* per connection */

typedef struct autd3_tcemu_config {
  uint16_t devices;         /* 1..128 */
  const char *listen_host;  /* IPv4 / IPv6 literal or name, default 127.0.0.1 */
  uint16_t listen_port;     /* default 48898; 0 = any free port (see autd3_tcemu_port) */
  uint32_t task_us;         /* task cycle, default 1000 */
  ams_netid_t netid;        /* default 127.0.0.1.1.1 */
  autd3_timing_model_t timing;
  uint32_t firmware;        /* autd3_emu_firmware_t: NEW (default), V12 (firmware v12.1.0) or MIXED (odd devices v12) */
  bool legacy_image;        /* input image as the previous SDK generation's TwinCAT project maps it: N × 2 rx bytes at
                               0x80000000, no CfgSlaveCount prefix (what pyautd3 36's RemoteTwinCAT reads); default false */
  bool serve_immediately;   /* answer requests on arrival instead of in the task cycle (default false) */
  bool verbose;             /* log connections (to `log`, else stderr) */
  uint32_t max_conns;            /* connections at once, 1..1024, default 16 */
  uint32_t handshake_timeout_ms; /* first complete frame within this after connecting; 1..3600000, default 10000 */
  uint32_t idle_timeout_ms;      /* quiet this long: yields its place to a new connection when full; its output not taken
                                    by the kernel for this long: dropped (send progress); 1..3600000, default 10000 */
  uint32_t log_lines_per_s;      /* verbose log rate limit (bursts of 10 s worth); 0 = none; default 10 */
  void (*log)(void *ctx, const char *line); /* log sink (one line, no newline); NULL = stderr */
  void *log_ctx;
} autd3_tcemu_config_t;

typedef struct autd3_tcemu autd3_tcemu_t;

/* Defaults (2 devices, 127.0.0.1:48898, 1 ms, 127.0.0.1.1.1, default timing). */
autd3_tcemu_config_t autd3_tcemu_config_default(void);
/* Create and bind (nothing runs yet). */
autd3_err_t autd3_tcemu_create(const autd3_tcemu_config_t *cfg, autd3_tcemu_t **out);
/* The bound TCP port. */
uint16_t autd3_tcemu_port(const autd3_tcemu_t *emu);
/* Serve until autd3_tcemu_stop(); call from one thread. */
autd3_err_t autd3_tcemu_run(autd3_tcemu_t *emu);
/* Thread-safe controls: stop the loop; close every client connection at the
 * next loop turn (a dropped TCP connection, for tests); set a device's
 * EtherCAT state word (default 0x0008 = OP). */
void autd3_tcemu_stop(autd3_tcemu_t *emu);
void autd3_tcemu_drop_connections(autd3_tcemu_t *emu);
void autd3_tcemu_set_state_word(autd3_tcemu_t *emu, uint16_t dev, uint16_t word);
/* Power-cycle device `dev` at the next task cycle: its firmware model restarts (ack 0xFF, nothing applied) and its
 * state word goes INIT -> PRE-OP -> SAFE-OP -> OP over AUTD3_TCEMU_POWER_CYCLE_TASKS task cycles, as when TwinCAT brings
 * a re-powered slave back; outputs reach it again from SAFE-OP's end. */
#define AUTD3_TCEMU_POWER_CYCLE_TASKS 40
void autd3_tcemu_power_cycle(autd3_tcemu_t *emu, uint16_t dev);
/* Device `dev` off the line (a cable, for tests) or back: while lost no outputs reach it, its inputs in the image
 * stand still and its state word shows 0x0100 (not present) beside the state last seen. Thread-safe. */
void autd3_tcemu_set_lost(autd3_tcemu_t *emu, uint16_t dev, bool lost);
/* What device `dev` emits (a v12 device: its power-on output state, emulation/device/firmware.h), as of the next task
 * cycle (thread-safe; waits for it, at most 2 s). */
autd3_err_t autd3_tcemu_output(autd3_tcemu_t *emu, uint16_t dev, autd3_output_state_t *out);
/* Task cycles run so far (thread-safe). */
uint64_t autd3_tcemu_cycles(const autd3_tcemu_t *emu);
/* Connections accepted / closed at once because every place was taken / closed by the handshake timeout / closed to
 * make room / dropped because the kernel took none of their output for idle_timeout_ms (thread-safe). */
typedef struct autd3_tcemu_conn_stats {
  uint64_t accepted, refused, timed_out, evicted, stalled;
} autd3_tcemu_conn_stats_t;
void autd3_tcemu_conn_stats(const autd3_tcemu_t *emu, autd3_tcemu_conn_stats_t *out);
void autd3_tcemu_free(autd3_tcemu_t *emu);

uint16_t autd3_tcemu_devices(const autd3_tcemu_t *emu);
/* The devices' execution logs (docs/reliability.md): drain up to `cap` of
 * device `dev`'s oldest entries (0 for a bad index); `dropped` (may be NULL)
 * = entries lost to a full log so far. Thread-safe against the task loop;
 * one drainer at a time. */
size_t autd3_tcemu_log_drain(autd3_tcemu_t *emu, uint16_t dev, autd3_exec_entry_t *out, size_t cap, uint64_t *dropped);

/* The devices' execution logs written to a file while the runtime runs (autd3-twincat-emu --log-file): a thread
 * drains them every 100 ms (the task loop never writes files), one line per executed frame,
 * "K INDEX BOOT SEQ CMD RESULT TAG" (K, INDEX, BOOT decimal; SEQ, CMD, RESULT, TAG hex). Closing drains the rest
 * and adds "dropped K D" per device (D = entries lost to a full log), then closes the file.
 * Errors (open): IO (cannot create the file), NOMEM; (close): IO (a write failed). */
typedef struct autd3_tcemu_log_file autd3_tcemu_log_file_t;
autd3_err_t autd3_tcemu_log_file_open(autd3_tcemu_t *emu, const char *path, autd3_tcemu_log_file_t **out);
autd3_err_t autd3_tcemu_log_file_close(autd3_tcemu_log_file_t *lf);

/* For the fuzz target: feed raw bytes as the stream of a socketless
 * connection (replies are produced and discarded), then run one task cycle. */
void autd3_tcemu_fuzz_feed(autd3_tcemu_t *emu, const uint8_t *data, size_t len);

#endif
