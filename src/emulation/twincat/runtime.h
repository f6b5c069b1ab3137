/*
 * The emulated TwinCAT runtime's parts (twincat_emu.h is its interface):
 * runtime.c holds the task (images, devices, task cycle) and the options,
 * ads.c answers AMS/ADS frames and writes notifications into a connection's
 * output buffer, server.c owns the sockets (accept, read, write, time-outs)
 * and the loop. Everything here runs on the runtime's one thread, except the
 * atomics the thread-safe controls of twincat_emu.h write.
 */
#ifndef AUTD3_EMULATION_TWINCAT_RUNTIME_H
#define AUTD3_EMULATION_TWINCAT_RUNTIME_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error_context.h"
#include "emulation/device/firmware.h"
#include "emulation/twincat/twincat_emu.h"
#include "net/log_limit.h"
#include "net/net.h"
#include "net/progress.h"

#define TASK_PORT 301          /* AUTD3 "Task 1" (reference: AMS port 301) */
#define SYSTEM_PORT 10000      /* TwinCAT system service */
#define IG_AUTD 0x03040030u
#define IO_OUTPUT 0x81000000u
#define IO_INPUT 0x80000000u
#define STATE_OP 0x0008u
#define FILETIME_UNIX_EPOCH 116444736000000000ull /* 100 ns ticks from 1601 to 1970 */

typedef struct autd3_tcemu_notif {
  bool used;
  uint32_t handle, offset, len, mode, cycle_100ns;
  uint64_t last_cycle; /* task cycle of the last sample sent */
  bool sent_once;
  uint8_t *last;       /* snapshot for on-change (inside conn->snap) */
} autd3_tcemu_notif_t;

typedef struct autd3_tcemu_conn {
  int fd; /* -1 = free slot */
  uint8_t *rbuf, *wbuf, *snap;
  size_t rlen, wlen;
  size_t skip;           /* bytes of an oversized frame still to discard */
  ams_addr_t peer;       /* source of its last request: where notifications go */
  bool have_peer;
  autd3_tcemu_notif_t notif[AUTD3_TCEMU_MAX_NOTIF];
  bool dead;
  bool framed;           /* it sent a complete AMS/TCP frame (its "handshake") */
  autd3_net_progress_t progress; /* send progress (net/progress.h): replies the kernel has not accepted */
  uint64_t since_ns;     /* accepted at, then: its last complete frame (quiet measure) */
  char name[AUTD3_NET_PEER_MAX]; /* peer address, for the log */
} autd3_tcemu_conn_t;

struct autd3_tcemu {
  autd3_tcemu_config_t cfg;
  int lfd;
  uint16_t port;
  uint64_t task_ns;
  autd3_fw_dev_t *dev; /* per device: its firmware (cfg.firmware) and execution log (autd3_tcemu_log_drain) */
  uint8_t *out_img, *in_img; /* task output / input images */
  uint32_t out_len, in_len;
  uint32_t in_base; /* offset of the first rx pair in in_img: 2 (after CfgSlaveCount) or 0 (legacy_image) */
  size_t rcap, wcap, snap_len;
  autd3_tcemu_conn_t *conns; /* cfg.max_conns places */
  autd3_net_poll_t *pf; /* 1 + cfg.max_conns poll entries (server.c) */
  int *pf_idx;
  autd3_tcemu_conn_t fuzz; /* the fuzz target's socketless connection */
  autd3_log_limit_t log_limit;
  _Atomic uint64_t st_accepted, st_refused, st_timed_out, st_evicted, st_stalled;
  uint32_t next_handle;
  uint16_t next_router_port;
  _Atomic bool stop, drop;
  _Atomic uint64_t cycles;
  _Atomic uint16_t state_word[AUTD3_MAX_DEVICES];
  atomic_bool power_cycle_req[AUTD3_MAX_DEVICES];
  uint32_t power_cycle_left[AUTD3_MAX_DEVICES]; /* task cycles until OP again (emulator thread) */
  atomic_bool lost[AUTD3_MAX_DEVICES];          /* autd3_tcemu_set_lost */
  _Atomic int out_req;                           /* autd3_tcemu_output: device + 1 asked for, 0 none */
  autd3_output_state_t out_snap;                 /* its answer, written by the task cycle before out_req goes 0 */
  uint8_t scratch[AMS_FRAME_HDR_LEN + 64];
};

/* The verbose connection log, rate limited (runtime.c). */
void autd3__tcemu_log(autd3_tcemu_t *e, const char *fmt, ...) AUTD3__PRINTF_(2, 3);
/* One task cycle at now: requests served (unless serve_immediately), outputs to the devices, inputs back,
 * notifications out (runtime.c). */
void autd3__tcemu_task_cycle(autd3_tcemu_t *e, uint64_t now);

/* Answer every whole frame in c's receive buffer into its output buffer (ads.c). */
void autd3__tcemu_process_input(autd3_tcemu_t *e, autd3_tcemu_conn_t *c);
/* Queue one notification frame carrying every sample due at task cycle `cycle` (ads.c). */
void autd3__tcemu_notify(autd3_tcemu_t *e, autd3_tcemu_conn_t *c, uint64_t cycle, uint64_t filetime);

/* A connection's buffers (fd -1: the fuzz target's socketless one), and its end (server.c). */
autd3_err_t autd3__tcemu_conn_alloc(autd3_tcemu_t *e, autd3_tcemu_conn_t *c, int fd);
void autd3__tcemu_conn_close(autd3_tcemu_t *e, autd3_tcemu_conn_t *c, const char *why);
/* Hand c's output to the kernel as far as it takes it (server.c). */
void autd3__tcemu_flush(autd3_tcemu_t *e, autd3_tcemu_conn_t *c);

#endif
