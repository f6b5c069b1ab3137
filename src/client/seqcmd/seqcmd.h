/*
 * The new-generation (seq/cmd) protocol, one autd3__protocol_t
 * (docs/architecture.md §2): its bus loop (bus.c) and its open sequence,
 * reads and close's silencing (session.c). What the two share.
 */
#ifndef AUTD3_CLIENT_SEQCMD_SEQCMD_H
#define AUTD3_CLIENT_SEQCMD_SEQCMD_H

#include "client/client_internal.h"

/* Re-establishment phases of one device (bus.c recover_*). */
enum { AUTD3__PH_RESET0 = 0, AUTD3__PH_RESET1, AUTD3__PH_SETMODE, AUTD3__PH_CLEAR, AUTD3__PH_SYNC };

/* One frame in flight, bus-thread-owned. Frames get consecutive ordinals
 * `g` (wrapping u32); device d gives frame g the seq dev[d].base_seq +
 * (g - dev[d].base_g), so each device has its own numbering. */
typedef struct autd3__pending {
  uint8_t slot;
  uint32_t g;
  uint32_t age;
} autd3__pending_t;

/* Bus-thread state of one device. In RUN, the frames with ordinals
 * [done_g, next_g) are outstanding on it, and done_g's seq is last_ack + 1.
 * Outside RUN every frame staged is resolved for it at once, and only a
 * device given up on after a timeout still holds [done_g, held_end): those
 * are resolved once it confirms the client's Reset (age_head). AWAY: its
 * inputs were stale for the whole budget; [ack_g, done_g) were sent to it and
 * resolved UNKNOWN, its tx image keeps the last of them (go_away,
 * rejoin_step). */
typedef struct autd3__dev {
  uint32_t done_g;   /* frames before this ordinal are resolved for this device */
  uint32_t ack_g;    /* ordinal of the frame after last_ack (= done_g, except AWAY:
                        [ack_g, done_g) were resolved UNKNOWN but may still be acked) */
  uint32_t base_g;   /* ordinal ↔ seq mapping (see autd3__pending_t) */
  uint8_t base_seq;
  uint8_t last_ack;  /* the ack last accepted */
  uint8_t state;     /* AUTD3__DEV_* */
  uint8_t phase;     /* AUTD3__PH_* while recovering */
  uint8_t rec_seq;   /* seq of the current recovery frame */
  uint8_t rec_why;   /* AUTD3__WHY_* that started the recovery */
  bool saw_ff;       /* recovery: an ack 0xFF seen since the Resets started */
  bool held;         /* frames [done_g, held_end) wait for the Reset's confirmation */
  uint32_t held_end;
  uint32_t held_stale; /* its stale_epoch when it was given up on */
  uint32_t phase_cycles;
  /* Staleness is per device (docs/reliability.md "A fault costs only its
   * device"): the link reports which devices' inputs a cycle carries. */
  bool valid;           /* this device's inputs were valid in the last cycle */
  uint32_t stale_run;   /* consecutive cycles with its inputs stale */
  uint32_t stale_epoch; /* bumped on every cycle with its inputs stale */
  uint32_t stale_mark;  /* its stale_epoch when it last made progress */
  uint32_t odd_run;     /* valid cycles in a row with an ack outside the window (not 0xFF) */
  uint32_t quiet;       /* AWAY: valid cycles in a row with its ack unchanged */
} autd3__dev_t;

/* The seq/cmd bus thread's state (c->proto_state; only the bus thread
 * touches it). The images and the link's evidence are the core's (c->bus). */
typedef struct autd3__seqcmd {
  autd3__pending_t pend[AUTD3__RING_CAP];
  uint32_t pend_head, pend_len;
  uint32_t next_g;
  bool resync_active;
  uint32_t resync_rounds;
  uint32_t stale_limit;
  uint32_t recovering;  /* devices not in RUN because of a recovery */
  autd3__dev_t dev[AUTD3_MAX_DEVICES];
} autd3__seqcmd_t;

static inline autd3__seqcmd_t *autd3__seqcmd(const struct autd3_client *c) { return (autd3__seqcmd_t *)c->proto_state; }

/* bus.c: the table's bus-thread entries. */
autd3_err_t autd3__seqcmd_handshake(struct autd3_client *c);
autd3_err_t autd3__seqcmd_run(struct autd3_client *c);
void autd3__seqcmd_stop(struct autd3_client *c, autd3_err_t why, uint8_t w);

/* session.c: the payload of the silencing frame (WritePatternFused, zero
 * raw pattern); `len` gets its meaningful length. */
void autd3__silence_payload(uint8_t payload[AUTD3_PAYLOAD_BYTES], uint16_t *len);

#endif
