/*
 * The parts of the emulator's server (server.h): server.c owns the loop, the
 * interface, the delayed replies and the control socket's connections;
 * control.c parses and answers one control command. One thread.
 */
#ifndef AUTD3_EMULATION_ETHERCAT_SERVER_INTERNAL_H
#define AUTD3_EMULATION_ETHERCAT_SERVER_INTERNAL_H

#include "emulation/ethercat/server.h"
#include "net/net.h"
#include "nic/capture.h"
#include "nic/nic.h"
#include "nic/rx_clock.h"

#define AUTD3_EMU_SERVER_QLEN 256      /* replies waiting for their due time */
#define AUTD3_EMU_SERVER_CLIENTS 8     /* control connections at once */
#define AUTD3_EMU_SERVER_LINE 512      /* longest control command line */
#define AUTD3_EMU_SERVER_REPLY 33000   /* longest reply line ("log K": 512 entries, "output K") */
#define AUTD3_EMU_SERVER_LOG_BATCH 512 /* log entries per "log K" reply: 512 x <= 28 bytes fit the reply */

typedef struct autd3_emu_pending {
  uint64_t due;
  size_t len;
  uint8_t buf[AUTD3_NIC_MAX_FRAME];
} autd3_emu_pending_t;

typedef struct autd3_emu_client {
  int fd; /* -1 = free */
  size_t len;
  char buf[AUTD3_EMU_SERVER_LINE];
} autd3_emu_client_t;

struct autd3_emu_server {
  autd3_emu_server_config_t cfg;
  autd3_emu_t *emu;
  autd3_nic_t *nic;
  int nic_fd;
  int lfd; /* control listener, -1 = none */
  autd3_net_wake_t stop;
  uint32_t delay_us;          /* "delay US" */
  autd3_rx_clock_t rx_clock;  /* when each frame arrived (the wire model's start) */
  autd3_capture_t cap;        /* --capture (zero = closed) */
  autd3_emu_pending_t q[AUTD3_EMU_SERVER_QLEN];
  unsigned qhead, qlen;
  autd3_emu_client_t cl[AUTD3_EMU_SERVER_CLIENTS];
  uint8_t prev_state[AUTD3_EMU_MAX_DEVICES]; /* AL status last printed (verbose) */
  uint8_t frame[AUTD3_NIC_MAX_FRAME + 64];
  char reply[AUTD3_EMU_SERVER_REPLY];
  char status[32768];
  autd3_exec_entry_t ent[AUTD3_EMU_SERVER_LOG_BATCH];
};

/* Run the chain's time-driven work (the SM watchdog above all) at now, but only once every frame that arrived
 * before now has been processed: false (try again after the queued frames) if frames are waiting (server.c). */
bool autd3__emu_server_tick_if_drained(autd3_emu_server_t *s);
/* Answer one control command line (without its newline) into reply, without a trailing newline (control.c). */
void autd3__emu_server_command(autd3_emu_server_t *s, char *line, char *reply, size_t cap);

#endif
