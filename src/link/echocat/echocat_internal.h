/*
 * echocat's internals, shared by its files (one concern each):
 *   echocat.c  the link's entry points: open (its phases; the OP wait is src/ecat/bringup.h's), close,
 *              state check and recovery, diagnostics
 *   slots.c    frame slots and transactions (send, reply matching, the checker's mailbox)
 *   scan.c     count, addresses, SII and identity, AL states, PRE-OP, SM/FMMU mapping
 *   dc.c       distributed clocks (phase samples, offsets/delays/drift, alignment, SYNC0)
 *   cycle.c    the cycle engine and wait_next_cycle
 * Private to src/link/echocat. Every file defines _GNU_SOURCE before including it.
 */
#ifndef AUTD3_LINK_ECHOCAT_INTERNAL_H
#define AUTD3_LINK_ECHOCAT_INTERNAL_H

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "ecat/bringup.h"
#include "ecat/identity.h"
#include "ecat/recovery.h"
#include "link/echocat/ecat.h"
#include "link/link_internal.h"
#include "nic/master_guard.h"
#include "nic/nic.h"
#include "platform/platform.h"

#define SM2_START 0x1800
#define SM3_START 0x1F80
#define MAX_GROUPS ((AUTD3_MAX_DEVICES + 1) / 2)
/* The read frame's per-device AL status reads while a device is missing or
 * out of OP (one FPRD each, so that the read tells whose inputs came back,
 * cycle.c read_inputs): up to this many devices, with the FRMW, the LRD and
 * the BRD inside a slot's 64 datagrams (docs/reliability.md "A fault costs
 * only its device"). A healthy chain's read has none. */
#define IN_DG_MAX 60
/* Complete read frames in a row (every device's inputs valid) before the read
 * drops its per-device AL status reads again. */
#define IN_SPLIT_HOLD 100
#define OUT_BYTES AUTD3_TX_FRAME_BYTES
#define IN_BYTES AUTD3_RX_FRAME_BYTES
#define JIT_BUCKETS 2048 /* 1 µs buckets */
#define STATIC_DRIFT_ITER 10000 /* FRMW compares before cyclic operation (ethercrab 0.7 src/dc.rs's count) */
#define GUARD_NS 50000u          /* aim: outputs through the chain this long before SYNC0 */
#define MIN_LEAD_NS 30000u       /* try an edge only if at least this far ahead */
/* wait_next_cycle wakes this long (at most a fifth of the cycle) before the
 * outputs' own need: room for the wake-up latency (p99 60-120 µs on a loaded
 * VM), the caller's staging and the send. */
#define WAKE_MARGIN_NS 200000u
/* From the reference reading its clock to the last device holding the image:
 * ~1 µs per ESC hop plus a margin (Beckhoff ESC datasheet section I: 200-600 ns per hop). */
#define CHAIN_PASS_NS(n) (5000u + 1000u * (uint64_t)(n))
/* Time the devices get after SYNC0 to take, process and publish before the
 * inputs are read (the default device model needs 100 µs in FIFO mode). */
#define PROCESS_NS 300000u
/* A deferring cycle (streaming, one wake-up per cycle) sends its read and, as
 * soon as it returns, the caller's next outputs: it reads this long after the
 * edge (the default device model publishes 100 µs after it), so that those
 * outputs keep the rest of the cycle to make the next edge despite a late
 * wake-up. A device slower to publish shows its ack one cycle later, never a
 * wrong one (each image's ack carries its own sequence number). */
#define DEFER_READ_NS 150000u
/* Forwarding budget per device on the line (an ESC forwards in 0.2-0.6 µs,
 * Beckhoff ET1100 datasheet "forwarding delay"; 1 µs leaves a margin). */
#define HOP_MAX_NS 1000u
/* The split plan (outputs after one edge, the read before the next) needs this
 * much host time besides the outputs' wire time: the read's round trip, the
 * wake-up latency and the caller's turnaround. A chain whose outputs leave
 * less runs the long-chain plan (docs/echocat.md "Long chains"). */
#define SPLIT_HOST_NS 200000u
/* A frame's reply is back no sooner than ring_ns after the reference read it, less
 * this (the bytes ahead of the reading datagram, latch jitter). */
#define RING_MARGIN_NS 5000u
/* A guard shorter than this is spun rather than slept: a wake-up on a loaded
 * host costs more than that (docs/echocat.md "Long chains"). */
#define BURST_SPIN_MAX_NS 100000u
#define WAKE_LAT_STEP_NS 1000u
#define RESOLVE_CAP_NS 20000000u
#define WAIT_SEEN_NS 5000u /* a receive that took longer slept (the diagnostics' wake-up count) */ /* wait at most this long for outputs of unknown fate */
#define STATION(k) ((uint16_t)(0x1000 + (k) + 1))
#define POSITION(k) ((uint16_t)(0u - (unsigned)(k)))

enum { SLOT_IDLE, SLOT_SENT, SLOT_DONE, SLOT_FAILED };
enum { MBX_IDLE, MBX_POSTED, MBX_SENT, MBX_DONE, MBX_FAILED };
enum { OWN_NONE, OWN_BUS, OWN_CHECKER };

/* A preallocated frame slot: the frame as built, then (after the reply) as returned. */
typedef struct slot {
  ecat_frame_t f;
  size_t wire;
  int state;
  bool accounted; /* output slot: its reference time was taken into last_slot */
  bool stamped;   /* rx_ns is the NIC's arrival stamp (autd3__nic_rx_ns), not the time it was taken */
  uint64_t sent_ns, rx_ns;
  ecat_dg_t dg[64];
} slot_t;

typedef struct slave {
  uint32_t vendor, product, revision;
  char name[33];
  uint16_t mbx_out_off, mbx_out_len, mbx_in_off, mbx_in_len;
  bool no_lrw;
  uint32_t delay;
} slave_t;

typedef struct cycle_res {
  bool lost;     /* a frame did not come back */
  bool wkc_ok;   /* every working counter as expected */
  bool all_op;   /* BRD AL status == OP from every device */
  bool in_ok[AUTD3_MAX_DEVICES]; /* device d's input group came back with its full working counter */
} cycle_res_t;

typedef struct echocat {
  struct autd3_link base;
  autd3_echocat_option_t opt;
  char *ifname; /* the adapter's OS name (autd3__nic_resolve), owned; NULL before the first probe */
  autd3_nic_t *nic;
  autd3_master_guard_t *guard; /* the interface's lock, held from before the first frame until close */
  uint8_t mac[6];
  uint16_t n;
  slave_t sl[AUTD3_MAX_DEVICES];
  autd3_capture_tap_t *cap; /* capture_path's tap (NULL: none) */
  uint8_t rxbuf[AUTD3_NIC_MAX_FRAME];

  /* DC / timing (bus thread after open) */
  uint64_t period;        /* host send cycle = slot spacing, ns */
  uint64_t sync0_start;   /* DC time of the first SYNC0 pulse */
  int64_t off;            /* DC system time - host monotonic, filtered */
  bool off_valid;
  uint64_t rtt_floor;     /* fastest recent round trip with a reference read */
  uint64_t ring_ns;       /* a frame's way from the reference round the chain back to it (DC port times at open) */
  uint64_t lb_dc, lb_t;   /* DC lower bound from one reference read (autd3__ecat_dc_lower) */
  bool silent;            /* the bus answered nothing to the last resolve wait */
  bool first_call;        /* next cycle is the caller's first after open */
  uint64_t last_slot;     /* DC time of the SYNC0 edge the last outputs were aimed at */
  double out_rtt_ns;      /* EMA: outputs sent -> the reference reads its clock behind them */
  double rd_rtt_ns;       /* EMA: read frame round trip */
  uint64_t rd_aim_dc;     /* the DC time the read frame in flight was aimed at (the link statistics' phase) */
  uint64_t read_ahead;    /* read frame leaves this long before an edge */
  /* One wake-up per cycle (docs/echocat.md "Wake-ups and CPU"): a caller that
   * uses wait_next_cycle and skips it before a cycle() has more frames queued;
   * that cycle leaves its read's reply in the NIC's ring for the next call. */
  bool hooked;            /* wait_next_cycle ran since the last cycle() */
  bool hook_seen;         /* the caller has used wait_next_cycle */
  bool rd_pending;        /* rd was sent by a deferring cycle(); its reply is the next call's inputs */
  bool rd_stamped;        /* the last read reply taken carried the NIC's arrival stamp */
  /* Long-chain plan (docs/echocat.md "Long chains"): one burst per cycle. */
  bool burst;             /* chosen at open from the wire budget (wire.c) */
  uint64_t w0_ns;         /* line time of the first output frame */
  uint64_t credit_ns;     /* an output frame's line time before its first device holds the image, less 5 µs */
  uint64_t lead_ns;       /* a burst's line time to the last device (autd3__echocat_cycle_wire_ns) */
  uint64_t burst_slot;    /* the edge the last burst aimed at */
  bool out_silent;        /* the last wait for a burst's output replies got none */
  uint32_t serial_n;      /* consecutive bursts whose first outputs took >= 3/4 w0_ns to the reference */
  uint64_t wake_target;   /* host time wait_next_cycle aimed its wake-up at (0: no wait before this cycle) */
  double wake_lat_ns;     /* ~p95 of the time from that target to the first outputs ready to leave (wake-up, staging, the read) */
  uint8_t bus_idx;        /* 0x00..0x7F rolling: cyclic frames */
  uint8_t x_idx;          /* 0x80..0xFF rolling: transactions */
  int ngroups;
  slot_t out[MAX_GROUPS];
  uint16_t out_dc[MAX_GROUPS]; /* offset of the reference time read in each output frame */
  slot_t rd;
  uint16_t rd_frmw, rd_brd; /* data offsets in the read frame */
  uint16_t rd_lrd;            /* data offset of the inputs' LRD */
  uint16_t rd_al[IN_DG_MAX];  /* data offset of each device's AL status FPRD (rd_split) */
  bool rd_split;              /* the read frame in flight carries them */
  bool in_split;              /* a short input read was seen: read every AL status until IN_SPLIT_HOLD good ones */
  uint32_t in_good;           /* consecutive complete split reads */
  uint8_t *zero_tx;

  /* transactions (open, close, checker) */
  slot_t xs;
  bool by_pos;          /* SII reads by position, station addresses untouched (the tools' bus, bus.c) */
  atomic_bool running;  /* open finished: transactions go through the mailbox */
  atomic_int owner;
  atomic_int mbx;
  atomic_uint_fast64_t bus_cycles; /* cycle() calls, for the checker's "is anyone cycling" */
  autd3_link_ecat_recovery_t *rec; /* the state checker's recovery (src/ecat/recovery.h) */

  /* diagnostics (written by the bus thread, read anywhere) */
  atomic_uint jit[JIT_BUCKETS + 1];
  atomic_uint_fast64_t jit_n, jit_max, late, frames, cyc, guard_waits, unproven;
  atomic_uint_fast64_t wakeups; /* blocking waits of the cycling thread (sleeps, receives that waited) */
  atomic_uint_fast64_t deferred; /* cycles that left their read's reply for the next call */
  /* EtherCAT frames received that echocat did not send (another master on
   * the chain): counted by whoever drives the NIC; the first one's source
   * MAC is written before the count leaves 0 (release/acquire). */
  atomic_uint_fast64_t foreign;
  uint8_t foreign_mac[6];
  atomic_uint_fast64_t diag_ra, diag_out; /* read_ahead and out_rtt_ns for other threads */
} echocat_t;

typedef struct dgspec {
  uint8_t cmd;
  uint16_t ado;
  uint16_t len;
} dgspec_t;

/* slots.c: frame slots and transactions */
autd3_err_t autd3__echocat_collect(echocat_t *ec, slot_t **set, int n, uint64_t deadline);
autd3_err_t autd3__echocat_collect_until(echocat_t *ec, slot_t **set, int n, uint64_t deadline, const slot_t *stop);
autd3_err_t autd3__echocat_dg1(echocat_t *ec, uint8_t cmd, uint16_t adp, uint16_t ado, const void *data, uint16_t len,
                         void *out, uint16_t *wkc);
autd3_err_t autd3__echocat_each(echocat_t *ec, const uint16_t *list, int cnt, bool by_pos, const dgspec_t *spec, int nspec,
                          const uint8_t *in, uint8_t *out, uint16_t *wkc);
void autd3__echocat_list_range(uint16_t *list, int first, int cnt);
autd3_err_t autd3__echocat_slot_send(echocat_t *ec, slot_t *s);
void autd3__echocat_slot_start(echocat_t *ec, slot_t *s, bool bus);
autd3_err_t autd3__echocat_xfer(echocat_t *ec, slot_t *s);
autd3_err_t autd3__echocat_xfer_direct(echocat_t *ec, slot_t *s, uint32_t timeout_us, int tries);

/* scan.c: scan, identity, AL states, PDO mapping */
autd3_err_t autd3__echocat_assign_addresses(echocat_t *ec, const uint16_t *list, int cnt);
autd3_err_t autd3__echocat_check_identity(echocat_t *ec, const uint16_t *list, int cnt);
autd3_err_t autd3__echocat_count_slaves(echocat_t *ec, uint16_t *count);
autd3_err_t autd3__echocat_map_pdo(echocat_t *ec, const uint16_t *list, int cnt);
autd3_err_t autd3__echocat_read_states(echocat_t *ec, const uint16_t *list, int cnt, uint8_t *al, uint16_t *code, uint16_t *wkc);
autd3_err_t autd3__echocat_request_state(echocat_t *ec, const uint16_t *list, int cnt, uint16_t state);
autd3_err_t autd3__echocat_reset_slaves(echocat_t *ec);
autd3_err_t autd3__echocat_sii_read(echocat_t *ec, const uint16_t *list, int cnt);
/* 8 bytes of SII from EEPROM word `word` of every slave in list into out[k*8]. */
autd3_err_t autd3__echocat_eep_read(echocat_t *ec, const uint16_t *list, int cnt, uint16_t word, uint8_t *out);
/* The mailbox SyncManagers (SM0/SM1) from SII, for the slaves that have a mailbox. */
autd3_err_t autd3__echocat_mailbox_sm(echocat_t *ec, const uint16_t *list, int cnt);
autd3_err_t autd3__echocat_to_preop(echocat_t *ec, const uint16_t *list, int cnt);
autd3_err_t autd3__echocat_wait_state(echocat_t *ec, const uint16_t *list, int cnt, uint8_t state, uint32_t timeout_ms);

/* dc.c: distributed clocks */
void autd3__echocat_dc_bound(echocat_t *ec, uint64_t dc, uint64_t t_recv);
uint64_t autd3__echocat_dc_lower(const echocat_t *ec, uint64_t now); /* the bound at host time now (0: none yet) */
uint64_t autd3__echocat_dc_lower(const echocat_t *ec, uint64_t now); /* the bound at host time now (0: none yet) */
autd3_err_t autd3__echocat_dc_config(echocat_t *ec, const uint16_t *list, int cnt, bool initial);
void autd3__echocat_dc_sample(echocat_t *ec, uint64_t dc, uint64_t t_send, uint64_t t_recv);
autd3_err_t autd3__echocat_rebase_reference(echocat_t *ec);
autd3_err_t autd3__echocat_sync0_on(echocat_t *ec, const uint16_t *list, int cnt);
autd3_err_t autd3__echocat_wait_sync(echocat_t *ec);

/* wire.c: what a 100 Mbit/s line carries per cycle */
uint64_t autd3__echocat_frame_wire_ns(size_t len);
uint64_t autd3__echocat_out_wire_ns(uint16_t n);
uint64_t autd3__echocat_read_wire_ns(uint16_t n);
uint64_t autd3__echocat_cycle_wire_ns(uint16_t n);
uint64_t autd3__echocat_min_cycle_ns(uint16_t n);

/* cycle.c: the cycle engine */
autd3_err_t autd3__echocat_cycle_core(echocat_t *ec, const uint8_t *tx, uint8_t *rx, cycle_res_t *res);
autd3_err_t autd3__echocat_cycle(struct autd3_link *link, const uint8_t *tx, uint8_t *rx, bool *rx_valid);
autd3_err_t autd3__echocat_wait_next_cycle(struct autd3_link *link);
autd3_err_t autd3__echocat_foreign_master_error(echocat_t *ec, const char *when);
void autd3__echocat_update_read_ahead(echocat_t *ec);

#endif
