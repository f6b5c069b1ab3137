/*
 * The client's protocol-neutral core, shared by its files (docs/architecture.md
 * "Files and the protocol table"): the request slot and the client, the
 * hand-off ring, the protocol table, and what each core file offers.
 *
 *   client.c      public API: config, open/close, stats, the reads (through the table)
 *   request.c     send (acquire, fill, push) and wait/poll/detach, the request's message
 *   pool.c        the client's memory, slot release, completion
 *   bus_thread.c  the bus thread's frame: its RT policy, the protocol's handshake and
 *                 loop, teardown; the link's reset evidence
 *   handle.c      request handles          probe.c  protocol AUTO
 *   seqcmd/ v12/  the two protocols, each an autd3__protocol_t
 *
 * A core file calls a protocol only through the table; a protocol calls the
 * core. No file of src/client calls into a file that calls it.
 *
 * Ownership in one sentence: a request slot belongs to the user between
 * acquire and push, to the bus thread from the moment it is taken out of the
 * hand-off ring until it is completed, and to whoever sets the second of the
 * two flags COMPLETED/DETACHED afterwards (that party returns it to the pool).
 * The bus thread never takes a lock: it reads the ring lock-free, completes
 * through a per-slot atomic + semaphore, and frees through the pool semaphore.
 */
#ifndef AUTD3_CLIENT_CLIENT_INTERNAL_H
#define AUTD3_CLIENT_CLIENT_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "autd3/client.h"
#include "autd3/link_driver.h"
#include "autd3/proto.h" /* autd3_fw_version_t */
#include "platform/platform.h"

/* Ring of slot indices from the senders to the bus thread. At most
 * max_inflight + 1 (≤ 128: the last one is close's) slots exist, each in the
 * ring at most once, so 128 entries never overflow (free-running counters:
 * tail - head reaches 128 at most). */
#define AUTD3__RING_CAP 128u
#define AUTD3__RING_CLOSED 0x80000000u /* bit of ring_tail: no more pushes */
#define AUTD3__RING_MASK 0x7FFFFFFFu   /* free-running counters live in 31 bits */

/* Request completion flags (struct autd3__slot.flags). */
#define AUTD3__REQ_COMPLETED 1u /* the bus thread wrote `result`/`data` */
#define AUTD3__REQ_DETACHED 2u  /* the user gave the handle up */

/* Pool ownership (struct autd3__slot.state). */
#define AUTD3__SLOT_FREE 0u
#define AUTD3__SLOT_BUSY 1u

/* Why a device did not (or may not have) executed a frame: the detail of a
 * request's error (struct autd3__slot.err_why), for its message. */
enum {
  AUTD3__WHY_NONE = 0,
  AUTD3__WHY_RESET_EVIDENCE, /* the link reported the device's reset */
  AUTD3__WHY_ACK_FF,         /* ack 0xFF outside the device's window: a reboot */
  AUTD3__WHY_ACK_FF_STALE,   /* ack 0xFF inside the window after stale cycles: maybe a reboot */
  AUTD3__WHY_RECOVERING,     /* staged while the client re-established the device */
  AUTD3__WHY_TIMEOUT,        /* not acked after resync; the device then confirmed the client's Reset */
  AUTD3__WHY_HUNG,           /* not acked after resync and the Reset not confirmed: it may still run it */
  AUTD3__WHY_STALE,          /* inputs stale for the whole budget */
  AUTD3__WHY_AWAY,           /* never sent to it: its inputs had been stale for the whole budget (AWAY) */
  AUTD3__WHY_FOREIGN,        /* an ack the client never caused: another master */
  AUTD3__WHY_CLOSED,
  AUTD3__WHY_LINK,
  AUTD3__WHY_V12_ERR,    /* legacy: the device executed the frame and answered an error nibble (err_ack) */
  AUTD3__WHY_V12_TIMEOUT, /* legacy: no ack with the frame's msg_id within 200 ms */
  AUTD3__WHY_V12_RESET    /* legacy: the link reported the device's reset with the frame in flight */
};

/* Per-device client state (struct autd3_client.ds_state; the numbers of autd3_client_device_state_t). */
enum { AUTD3__DEV_RUN = 0, AUTD3__DEV_RECOVER = 1, AUTD3__DEV_FOREIGN = 2, AUTD3__DEV_AWAY = 3 };

/* struct autd3__slot.handle = generation << 2 | one of (handle.c): */
#define AUTD3__H_NONE 0u    /* no user handle (free, fire-and-forget, or released) */
#define AUTD3__H_OUT 1u     /* the user holds the handle */
#define AUTD3__H_WAITING 2u /* a wait/poll/detach on the handle is in progress */
#define AUTD3__NO_ENTRY UINT32_MAX /* struct autd3_client.entry before handle.c registered the client */

/* One request slot = one frame and its response. */
struct autd3__slot {
  struct autd3_client *client;
  _Atomic uint32_t state;  /* FREE / BUSY: who may acquire it */
  _Atomic uint32_t flags;  /* COMPLETED | DETACHED */
  _Atomic uint64_t handle; /* generation << 2 | AUTD3__H_*: validates and claims user handles */
  uint32_t gen;            /* generation: sends on this slot so far, from the client's start (owner-written) */
  autd3__sem_t done;             /* posted once by the bus thread on completion unless detached */
  uint8_t index;           /* position in client->slots */
  bool broadcast;          /* cmds[0]/payload[0..624) for every device */
  bool exclusive;          /* a value read: staged alone (seqcmd/bus.c stage()) */
  autd3_err_t result;      /* written by the bus thread before COMPLETED */
  /* The error of the lowest-index device that did not execute the frame. */
  int err_dev;          /* -1 = none */
  autd3_err_t err_code; /* DEVICE_RESET, OUTCOME_UNKNOWN, TIMEOUT, SECOND_MASTER, CLOSED, LINK */
  uint8_t err_why;      /* AUTD3__WHY_* */
  uint8_t err_ack;      /* the ack seen, for FOREIGN / ACK_FF */
  uint8_t *cmds;        /* N opcodes (1 used when broadcast) */
  uint8_t *payload;     /* N × 624 bytes (624 used when broadcast) */
  uint8_t *data;        /* N data bytes recorded from the acks */
  uint8_t *outcome;     /* N autd3_outcome_t */
};

/* What every protocol's bus thread works with (bus-thread-owned after open's
 * handshake): the images and the link's reset evidence as last seen. */
typedef struct autd3__bus_io {
  uint8_t *tx; /* N × 626 */
  uint8_t *rx; /* N × 2 */
  bool dev_valid[AUTD3_MAX_DEVICES]; /* autd3_link_cycle_devices() of the last cycle */
  uint32_t resets_any;               /* the link's device_resets_any */
  uint32_t resets[AUTD3_MAX_DEVICES]; /* the link's device_resets[d] */
} autd3__bus_io_t;

struct autd3_client;

/* One protocol (seqcmd/: the new generation's seq/cmd; v12/: firmware v12's
 * msg_id). The core calls a protocol only through this table. */
typedef struct autd3__protocol {
  /* Its bus thread's own state, allocated (zeroed) with the client: c->proto_state. */
  size_t state_size;
  /* Bus thread (bus_thread.c runs them in this order). handshake: before
   * open returns; an error is the link's, and open fails with
   * handshake_fail + the link's message (AUTD3_E_LINK). */
  autd3_err_t (*handshake)(struct autd3_client *c);
  const char *handshake_fail;
  /* The cycle loop: until `closing` (returns AUTD3_E_CLOSED) or a failed
   * link cycle (returns AUTD3_E_LINK at once, the link's message still the
   * thread's). Allocates nothing, takes no lock, prints nothing. */
  autd3_err_t (*run)(struct autd3_client *c);
  /* After run, `dead` set: complete every frame it had taken from the ring
   * (result `why`, detail `w`: AUTD3__WHY_CLOSED or _LINK). The core then
   * fails what is still queued. */
  void (*stop)(struct autd3_client *c, autd3_err_t why, uint8_t w);
  /* User side, through the normal send path. open_sequence: after the
   * handshake, before open returns; silence: close's first step, the bus
   * thread still running. */
  autd3_err_t (*open_sequence)(struct autd3_client *c);
  autd3_err_t (*silence)(struct autd3_client *c);
  autd3_err_t (*read_firmware_version)(struct autd3_client *c, autd3_fw_version_t *out);
  autd3_err_t (*read_fpga_state)(struct autd3_client *c, uint8_t *out);
  autd3_err_t (*read_error_detail)(struct autd3_client *c, uint8_t *out);
  /* Refuse a frame this protocol would misread (autd3_client_send); NULL: any. */
  autd3_err_t (*frame_check)(const struct autd3_client *c, const autd3_frame_t *f);
  /* autd3_client_send_checked after a successful request: whether the data
   * bytes report an error; NULL: they are values, never errors. */
  autd3_err_t (*response_check)(const autd3_response_t *r);
} autd3__protocol_t;

extern const autd3__protocol_t autd3__protocol_seqcmd; /* seqcmd/session.c */
extern const autd3__protocol_t autd3__protocol_v12;    /* v12/session.c */

struct autd3_client {
  autd3_link_t *link;
  uint16_t num_devices;
  autd3_client_config_t cfg;
  const autd3__protocol_t *proto; /* the table of cfg.protocol (never AUTO once open) */
  _Atomic int refs; /* 1 for the open client + 1 per busy slot; the last one frees */

  /* slot pool */
  struct autd3__slot *slots;
  uint32_t num_slots; /* = cfg.max_inflight + 1; the last slot is reserved for close's silencing frame */
  uint8_t *slot_mem;
  autd3__sem_t free_sem;          /* counts FREE slots (+1 "baton" once the bus thread is gone) */
  autd3__mutex_t send_lock; /* serialises producers among themselves; never taken by the bus thread */

  /* hand-off ring (single producer under send_lock, single consumer = bus thread) */
  uint8_t ring[AUTD3__RING_CAP];
  _Atomic uint32_t ring_head; /* consumer position */
  _Atomic uint32_t ring_tail; /* producer position | RING_CLOSED */

  uint32_t entry;         /* this client's entry in handle.c's table (AUTD3__NO_ENTRY: none) */
  _Atomic uint32_t magic; /* AUTD3__CLIENT_MAGIC while open; cleared by close */
  _Atomic bool closing; /* close() asked the bus thread to stop */
  _Atomic bool dead;    /* the bus thread stopped: new sends fail at once */
  autd3_err_t dead_reason;  /* CLOSED or LINK, written before `dead` */
  char link_msg[384];   /* the link's message when its cycle failed, written before any LINK completion */

  /* bus thread */
  autd3__thread_t thread;
  bool thread_started;
  autd3__sem_t hs_done;    /* handshake finished (hs_err says how) */
  autd3_err_t hs_err;
  char hs_msg[384];
  autd3__bus_io_t bus;
  void *proto_state; /* the protocol's own bus-thread state (state_size bytes) */

  /* counters (bus thread writes, anyone reads) */
  _Atomic uint64_t st_sent, st_completed, st_failed, st_resyncs, st_resets, st_retransmits;
  _Atomic uint64_t st_cpu_ns, st_cycles;
  _Atomic uint64_t st_device_resets, st_reinits, st_unknown, st_foreign, st_timeouts;
  /* per device, for autd3_client_device_status() */
  _Atomic uint32_t ds_resets[AUTD3_MAX_DEVICES];
  _Atomic uint32_t ds_reinits[AUTD3_MAX_DEVICES];
  _Atomic uint8_t ds_state[AUTD3_MAX_DEVICES];
  _Atomic uint64_t ds_outcomes[AUTD3_MAX_DEVICES][4]; /* completed frames per AUTD3_OUTCOME_* (autd3__client_complete) */
  _Atomic uint32_t ds_aways[AUTD3_MAX_DEVICES];
  /* The link reports every device reset before that device's inputs count
   * again (autd3_link_report_device_reset): an ack 0xFF inside a window is
   * then an ack, whatever preceded it (seqcmd/bus.c route_acks). */
  bool reset_evidence;
};

#define AUTD3__CLIENT_MAGIC 0x61757433u /* "aut3" */

/* Bump one of the client's counters (bus thread; relaxed: readers only sum). */
#define AUTD3__STAT_INC(c, f) atomic_fetch_add_explicit(&(c)->f, 1, memory_order_relaxed)

/* ---- the hand-off ring: the only code that touches ring / ring_head / ring_tail ---- */

/* Producer (a sender, under send_lock): append slot index `slot`. The CAS
 * fails only if the bus thread has closed the ring, so nothing is pushed
 * that nobody will complete; false then. */
static inline bool autd3__ring_push(struct autd3_client *c, uint8_t slot) {
  uint32_t t = atomic_load_explicit(&c->ring_tail, memory_order_relaxed);
  if (t & AUTD3__RING_CLOSED) return false;
  c->ring[t % AUTD3__RING_CAP] = slot;
  return atomic_compare_exchange_strong_explicit(&c->ring_tail, &t, (t + 1) & AUTD3__RING_MASK, memory_order_release,
                                                 memory_order_relaxed);
}

/* Consumer (the bus thread): how many slots are queued. */
static inline uint32_t autd3__ring_len(struct autd3_client *c) {
  uint32_t head = atomic_load_explicit(&c->ring_head, memory_order_relaxed);
  uint32_t tail = atomic_load_explicit(&c->ring_tail, memory_order_acquire) & AUTD3__RING_MASK;
  return (tail - head) & AUTD3__RING_MASK;
}

/* Consumer: the oldest queued slot, left in the ring (NULL: none). */
static inline struct autd3__slot *autd3__ring_peek(struct autd3_client *c) {
  uint32_t head = atomic_load_explicit(&c->ring_head, memory_order_relaxed);
  uint32_t tail = atomic_load_explicit(&c->ring_tail, memory_order_acquire) & AUTD3__RING_MASK;
  return head == tail ? NULL : &c->slots[c->ring[head % AUTD3__RING_CAP]];
}

/* Consumer: take the slot autd3__ring_peek() returned out of the ring. */
static inline void autd3__ring_pop(struct autd3_client *c) {
  uint32_t head = atomic_load_explicit(&c->ring_head, memory_order_relaxed);
  atomic_store_explicit(&c->ring_head, (head + 1) & AUTD3__RING_MASK, memory_order_release);
}

/* Consumer, once, when the bus thread stops: no push succeeds from here on;
 * what is still queued is then drained with peek/pop. */
static inline void autd3__ring_close(struct autd3_client *c) {
  atomic_fetch_or_explicit(&c->ring_tail, AUTD3__RING_CLOSED, memory_order_acq_rel);
}

/* handle.c: request handles (an integer in the pointer: generation, client
 * entry, slot). register: take an entry and start the slots' generations
 * (open; fails when the table is full); unregister: give it back (the
 * client's memory is being freed). of: the handle of the slot's current
 * generation. claim: check a handle and mark it in use by one wait/poll/
 * detach (*gen gets its generation); unclaim: give it back still pending. */
autd3_err_t autd3__handle_register(struct autd3_client *c);
void autd3__handle_unregister(struct autd3_client *c);
autd3_request_t *autd3__handle_of(const struct autd3__slot *r);
autd3_err_t autd3__handle_claim(autd3_request_t *req, const char *fn, struct autd3__slot **out, uint32_t *gen);
void autd3__handle_unclaim(struct autd3__slot *r, uint32_t gen);

/* pool.c: the client's memory. alloc: everything the bus thread will touch,
 * once, and the handle entry (open); free: the last reference is gone; unref:
 * drop one reference (the client's, or a busy slot's). */
autd3_err_t autd3__client_alloc(struct autd3_client **out, autd3_link_t *link, const autd3_client_config_t *cfg,
                                const autd3__protocol_t *proto);
void autd3__client_free(struct autd3_client *c);
void autd3__client_unref(struct autd3_client *c);
/* pool.c: return a slot to the pool (user side, or the bus thread for a
 * detached request: atomics and a semaphore post only). */
void autd3__slot_release(struct autd3__slot *r);

/* pool.c: finish a slot on the bus thread (no lock, no allocation). */
void autd3__client_complete(struct autd3_client *c, struct autd3__slot *r, autd3_err_t result);
/* pool.c: device d failed the frame in slot r (code, why, ack): the
 * lowest-index failing device names the request's error. */
void autd3__slot_blame(struct autd3__slot *r, size_t d, autd3_err_t code, uint8_t why, uint8_t ack);

/* request.c: queue one frame as autd3_client_send does; `exclusive` marks a
 * value read that the protocol stages alone (seqcmd/bus.c stage()). */
autd3_err_t autd3__client_submit(struct autd3_client *c, const autd3_frame_t *frame, bool exclusive, autd3_request_t **req);
/* request.c: queue one frame from close (the magic is already cleared); a
 * slot is waited for until `deadline_ns` (autd3__now_ns() time base; 0 = no limit). */
autd3_err_t autd3__client_submit_until(struct autd3_client *c, const autd3_frame_t *frame, uint64_t deadline_ns,
                                       autd3_request_t **req);

/* bus_thread.c: start the bus thread and wait for the protocol's handshake;
 * on failure the thread is joined and the message set. */
autd3_err_t autd3__bus_start(struct autd3_client *c);
/* bus_thread.c: ask the bus thread to stop (at its next cycle boundary,
 * failing what is in flight or queued with CLOSED) and join it. */
void autd3__bus_stop(struct autd3_client *c);
/* bus_thread.c, bus thread only: the link's evidence of device resets
 * (autd3_link_report_device_reset). baseline: what the link has reported so
 * far is settled (the handshake's own Resets). reset_devices: the devices
 * whose count changed since the last call, ascending, into out[]; returns
 * how many (one atomic load when none). */
void autd3__bus_evidence_baseline(struct autd3_client *c);
size_t autd3__bus_reset_devices(struct autd3_client *c, uint8_t out[AUTD3_MAX_DEVICES]);

/* probe.c: protocol AUTO, on the opener's thread before any bus thread
 * exists: *out = AUTD3_PROTOCOL_NEW or _V12, or an error (silent or mixed chain). */
autd3_err_t autd3__protocol_probe(autd3_link_t *link, size_t n, uint32_t *out);
/* The reference's datagram timeout (crate autd3 38.1.0 SenderOption): v12's ack wait, and the probe's. */
#define AUTD3__V12_ACK_TIMEOUT_NS 200000000ull

#endif
