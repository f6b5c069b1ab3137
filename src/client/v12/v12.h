/*
 * The firmware-v12 (msg_id) protocol, one autd3__protocol_t (docs/legacy.md):
 * its bus loop (bus.c) and its open sequence, reads and close's silencing
 * (session.c). What the two share.
 */
#ifndef AUTD3_CLIENT_V12_V12_H
#define AUTD3_CLIENT_V12_V12_H

#include "client/client_internal.h"

/* The v12 bus thread's state (c->proto_state; only the bus thread touches it):
 * one frame in flight at a time. */
typedef struct autd3__v12 {
  struct autd3__slot *cur; /* the frame in flight (NULL: none) */
  uint8_t msg_id;          /* cur's msg_id (the last one written) */
  uint64_t deadline;       /* cur's ack deadline (autd3__now_ns() time base) */
  uint32_t left;           /* devices that have not acked cur */
  bool acked[AUTD3_MAX_DEVICES];
} autd3__v12_t;

/* bus.c: the table's bus-thread entries. */
autd3_err_t autd3__v12_handshake(struct autd3_client *c);
autd3_err_t autd3__v12_run(struct autd3_client *c);
void autd3__v12_stop(struct autd3_client *c, autd3_err_t why, uint8_t w);

#endif
