/*
 * Internals shared by the user side of the client (client.c) and its bus
 * thread (bus.c). See docs/architecture.md for the picture.
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

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "autd3/client.h"
#include "autd3/link_driver.h"
#include "platform/platform.h"

/* Ring of slot indices from the senders to the bus thread. At most
 * max_inflight (≤ 127) slots exist, each in the ring at most once, so 128
 * entries never overflow. */
#define AUTD3__RING_CAP 128u
#define AUTD3__RING_CLOSED 0x80000000u /* bit of ring_tail: no more pushes */
#define AUTD3__RING_MASK 0x7FFFFFFFu   /* free-running counters live in 31 bits */

/* Request completion flags (struct autd3_request.flags). */
#define AUTD3__REQ_COMPLETED 1u /* the bus thread wrote `result`/`data` */
#define AUTD3__REQ_DETACHED 2u  /* the user gave the handle up */

/* Pool ownership (struct autd3_request.state). */
#define AUTD3__SLOT_FREE 0u
#define AUTD3__SLOT_BUSY 1u

/* One request slot = one frame and its response (the public handle). */
struct autd3_request {
  struct autd3_client *client;
  _Atomic uint32_t state; /* FREE / BUSY: who may acquire it */
  _Atomic uint32_t flags; /* COMPLETED | DETACHED */
  sem_t done;             /* posted once by the bus thread on completion unless detached */
  uint8_t index;          /* position in client->slots */
  bool broadcast;         /* cmds[0]/payload[0..624) for every device */
  bool exclusive;         /* a value read: staged alone (see bus.c stage()) */
  int missing_device;     /* TIMEOUT: first device that had not acked, -1 = stale run */
  autd3_err_t result;     /* written by the bus thread before COMPLETED */
  uint8_t *cmds;          /* N opcodes (1 used when broadcast) */
  uint8_t *payload;       /* N × 624 bytes (624 used when broadcast) */
  uint8_t *data;          /* N data bytes recorded from the acks */
};

/* One frame in flight, bus-thread-owned. */
typedef struct autd3__pending {
  uint8_t slot;
  uint8_t seq;
  uint32_t age;
  uint64_t acked[2]; /* per-device ack bitmask, 128 devices */
} autd3__pending_t;

/* State only the bus thread touches (after open's handshake). */
typedef struct autd3__bus {
  uint8_t *tx; /* N × 626 */
  uint8_t *rx; /* N × 2 */
  autd3__pending_t pend[AUTD3__RING_CAP];
  uint32_t pend_head, pend_len;
  uint8_t next_seq;
  bool resync_active, reset_tried;
  uint32_t resync_rounds;
  uint32_t stale_run, stale_limit, reset_remaining;
  uint64_t all_acked[2];
} autd3__bus_t;

struct autd3_client {
  autd3_link_t *link;
  uint16_t num_devices;
  autd3_client_config_t cfg;
  _Atomic int refs; /* 1 for the open client + 1 per busy slot; the last one frees */

  /* slot pool */
  struct autd3_request *slots;
  uint32_t num_slots; /* = cfg.max_inflight */
  uint8_t *slot_mem;
  sem_t free_sem;            /* counts FREE slots (+1 "baton" once the bus thread is gone) */
  pthread_mutex_t send_lock; /* serialises producers among themselves; never taken by the bus thread */

  /* hand-off ring (single producer under send_lock, single consumer = bus thread) */
  uint8_t ring[AUTD3__RING_CAP];
  _Atomic uint32_t ring_head; /* consumer position */
  _Atomic uint32_t ring_tail; /* producer position | RING_CLOSED */

  _Atomic bool closing; /* close() asked the bus thread to stop */
  _Atomic bool dead;    /* the bus thread stopped: new sends fail at once */
  autd3_err_t dead_reason;  /* CLOSED or LINK, written before `dead` */
  char link_msg[384];   /* the link's message when its cycle failed, written before any LINK completion */

  /* bus thread */
  autd3__thread_t thread;
  bool thread_started;
  sem_t hs_done;      /* handshake finished (hs_err says how) */
  autd3_err_t hs_err;
  char hs_msg[384];
  autd3__bus_t bus;

  /* counters (bus thread writes, anyone reads) */
  _Atomic uint64_t st_sent, st_completed, st_failed, st_resyncs, st_resets, st_retransmits;
  _Atomic uint64_t st_cpu_ns, st_cycles;
};

/* bus.c: the bus thread's entry point (arg = the client). */
void *autd3__client_bus_main(void *arg);
/* client.c: finish a slot on the bus thread (no lock, no allocation). */
void autd3__client_complete(struct autd3_client *c, struct autd3_request *r, autd3_err_t result);

#endif
