/*
 * The send path and the waits: acquire a slot (back-pressure), fill it, push
 * it into the hand-off ring; then wait/poll/detach on the handle and report
 * the request's result with its message; send_checked and the response check.
 * What a protocol adds (refusing a frame it would misread, whether a data
 * byte is an error) comes from its table. docs/architecture.md §1, §4.
 */
#include <string.h>

#include "client/client_internal.h"

/* ---- send ----------------------------------------------------------------------------- */

static autd3_err_t closed_error(struct autd3_client *c) {
  if (c->dead_reason == AUTD3_E_LINK)
    return autd3_set_error(AUTD3_E_LINK, "client bus thread stopped: link cycle failed: %s", c->link_msg);
  return autd3_set_error(AUTD3_E_CLOSED, "client is closed");
}

/* Take a free slot; blocks while all max_inflight are in use (back-pressure),
 * until `deadline` if given (close's silencing must stay bounded). */
static autd3_err_t slot_acquire(struct autd3_client *c, uint64_t deadline_ns, struct autd3__slot **out) {
  if (atomic_load(&c->dead)) return closed_error(c);
  if (deadline_ns != 0) {
    /* Close: its reserved slot, if free (it is, unless a previous silencing
     * attempt is still in flight: then wait for that, bounded). */
    struct autd3__slot *r = &c->slots[c->num_slots - 1];
    for (;;) {
      uint32_t expect = AUTD3__SLOT_FREE;
      if (atomic_compare_exchange_strong(&r->state, &expect, AUTD3__SLOT_BUSY)) {
        atomic_fetch_add(&c->refs, 1);
        *out = r;
        return AUTD3_OK;
      }
      if (atomic_load(&c->dead)) return closed_error(c);
      if (autd3__now_ns() >= deadline_ns) return autd3_set_error(AUTD3_E_TIMEOUT, "timed out");
      autd3__sleep_ns(1000000);
    }
  }
  autd3_err_t err = autd3__sem_wait(&c->free_sem);
  if (err != AUTD3_OK) return err;
  if (!atomic_load(&c->dead)) {
    /* The semaphore guarantees a FREE slot exists for us; CAS because other
     * senders scan at the same time. Bounded: one pass over ≤ 127 slots. */
    for (uint32_t i = 0; i + 1 < c->num_slots; i++) { /* not close's reserved last slot */
      uint32_t expect = AUTD3__SLOT_FREE;
      if (atomic_compare_exchange_strong(&c->slots[i].state, &expect, AUTD3__SLOT_BUSY)) {
        atomic_fetch_add(&c->refs, 1);
        *out = &c->slots[i];
        return AUTD3_OK;
      }
    }
  }
  /* The bus thread is gone and we took its "baton" post: pass it on so every
   * other blocked sender wakes too. */
  autd3__sem_post(&c->free_sem);
  return closed_error(c);
}

static autd3_err_t submit(struct autd3_client *c, const autd3_frame_t *frame, bool exclusive, uint64_t deadline_ns,
                          autd3_request_t **req) {
  struct autd3__slot *r = NULL;
  autd3_err_t err = slot_acquire(c, deadline_ns, &r);
  if (err != AUTD3_OK) return err;
  size_t n = c->num_devices;
  r->broadcast = frame->device_cmds == NULL;
  r->exclusive = exclusive;
  r->result = AUTD3_E_PENDING;
  r->err_dev = -1;
  r->err_code = AUTD3_OK;
  r->err_why = AUTD3__WHY_NONE;
  memset(r->data, 0, n);
  memset(r->outcome, AUTD3_OUTCOME_NONE, n);
  if (r->broadcast) {
    r->cmds[0] = frame->cmd;
    memcpy(r->payload, frame->payload, frame->len);
    memset(r->payload + frame->len, 0, AUTD3_PAYLOAD_BYTES - frame->len);
  } else {
    memcpy(r->cmds, frame->device_cmds, n);
    memcpy(r->payload, frame->device_payloads, n * AUTD3_PAYLOAD_BYTES);
  }
  /* A new generation: the handle of every earlier send on this slot is stale from here on (handle.c). */
  r->gen++;
  atomic_store_explicit(&r->handle, (uint64_t)r->gen << 2 | (req ? AUTD3__H_OUT : AUTD3__H_NONE), memory_order_release);
  /* Fire-and-forget: detached from the start, the bus thread frees it. */
  atomic_store_explicit(&r->flags, req ? 0u : AUTD3__REQ_DETACHED, memory_order_relaxed);

  /* Publish into the ring (refused once the bus thread has closed it). */
  autd3__mutex_lock(&c->send_lock);
  /* Once close has begun (magic cleared, before it pushes its silencing
   * frame under this lock), nothing else is pushed: the silencing frame is
   * the last frame the devices get, whatever other threads were doing. */
  bool open = deadline_ns != 0 || atomic_load(&c->magic) == AUTD3__CLIENT_MAGIC;
  bool pushed = open && autd3__ring_push(c, r->index);
  autd3__mutex_unlock(&c->send_lock);
  if (!pushed) {
    err = closed_error(c);
    autd3__slot_release(r);
    return err;
  }
  if (req) *req = autd3__handle_of(r);
  return AUTD3_OK;
}

autd3_err_t autd3__client_submit(struct autd3_client *c, const autd3_frame_t *frame, bool exclusive, autd3_request_t **req) {
  if (c == NULL || frame == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_client_send: %s is NULL", c ? "frame" : "client");
  if (atomic_load(&c->magic) != AUTD3__CLIENT_MAGIC)
    return autd3_set_error(AUTD3_E_CLOSED, "autd3_client_send: the client was closed (autd3_client_close)");
  if (frame->len > AUTD3_PAYLOAD_BYTES)
    return autd3_set_error(AUTD3_E_PAYLOAD, "frame len = %u: must be <= %d", frame->len, AUTD3_PAYLOAD_BYTES);
  if (frame->device_cmds != NULL && frame->device_payloads == NULL)
    return autd3_set_error(AUTD3_E_PAYLOAD, "per-device frame: device_cmds set but device_payloads is NULL");
  if (c->proto->frame_check != NULL) { /* a frame this protocol would misread */
    autd3_err_t err = c->proto->frame_check(c, frame);
    if (err != AUTD3_OK) return err;
  }
  /* Hold a reference while inside: a close() on another thread then cannot
   * free the client under a sender that is blocked on back-pressure (it wakes
   * through the baton post and fails with CLOSED). */
  atomic_fetch_add(&c->refs, 1);
  autd3_err_t err = submit(c, frame, exclusive, 0, req);
  autd3__client_unref(c);
  return err;
}

autd3_err_t autd3__client_submit_until(struct autd3_client *c, const autd3_frame_t *frame, uint64_t deadline_ns,
                                       autd3_request_t **req) {
  /* Close's own frames: the magic is already cleared, close holds its reference. */
  return submit(c, frame, false, deadline_ns, req);
}


autd3_err_t autd3_client_send(autd3_client_t *c, const autd3_frame_t *frame, autd3_request_t **req) {
  return autd3__client_submit(c, frame, false, req);
}

/* ---- handles ------------------------------------------------------------------------------ */

/* What a handle encodes and how a stale one is told apart: handle.c
 * (autd3__handle_claim() / autd3__handle_unclaim()). */

/* ---- completion ------------------------------------------------------------------------- */

autd3_err_t autd3_response_check(const autd3_response_t *r, int *device, uint8_t *code) {
  if (r == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_response_check: NULL response");
  for (int i = 0; i < r->num_devices && i < AUTD3_MAX_DEVICES; i++) {
    if (r->data[i] != 0) {
      if (device) *device = i;
      if (code) *code = r->data[i];
      return autd3_set_error(AUTD3_E_DEVICE, "device %d reported error 0x%02x (%s)", i, r->data[i],
                             autd3_dev_err_message(r->data[i]));
    }
  }
  return AUTD3_OK;
}


static void set_request_error(struct autd3__slot *r) {
  struct autd3_client *c = r->client;
  uint8_t cmd = r->cmds[r->broadcast || r->err_dev < 0 ? 0 : r->err_dev];
  const char *name = autd3_cmd_name(cmd);
  int d = r->err_dev;
  autd3_err_t res = r->result;
  switch (r->err_why) {
    case AUTD3__WHY_RESET_EVIDENCE:
      autd3_set_error(res, "device %d was reset (reported by the link) with frame (cmd 0x%02x %s) outstanding: "
                      "whether it executed it is unknown; the client re-establishes the device", d, cmd, name);
      break;
    case AUTD3__WHY_ACK_FF:
      autd3_set_error(res, "device %d answered ack 0xFF outside its window (a reboot) with frame (cmd 0x%02x %s) outstanding: "
                      "whether it executed it is unknown; the client re-establishes the device", d, cmd, name);
      break;
    case AUTD3__WHY_ACK_FF_STALE:
      autd3_set_error(res, "device %d answered ack 0xFF after stale cycles: a reboot or the ack of seq 255, the protocol "
                      "cannot tell; whether it executed frame (cmd 0x%02x %s) is unknown; the client re-establishes the device",
                      d, cmd, name);
      break;
    case AUTD3__WHY_RECOVERING:
      autd3_set_error(res, "device %d did not execute frame (cmd 0x%02x %s): it was being re-established after %s", d, cmd,
                      name, res == AUTD3_E_TIMEOUT ? "a timeout" : "losing its state (reset)");
      break;
    case AUTD3__WHY_TIMEOUT:
      autd3_set_error(res, "frame (cmd 0x%02x %s) not acked by device %d: timeout_cycles %u x max_resync_rounds %u after "
                      "resync; the device then confirmed the client's Reset (which discarded it) and is re-established",
                      cmd, name, d, c->cfg.timeout_cycles, c->cfg.max_resync_rounds);
      break;
    case AUTD3__WHY_HUNG:
      autd3_set_error(res, "frame (cmd 0x%02x %s) not acked by device %d: timeout_cycles %u x max_resync_rounds %u after "
                      "resync, and the device has not confirmed the client's Reset: it may still run what it had queued, "
                      "so whether it executes the frame is unknown (device hung?)",
                      cmd, name, d, c->cfg.timeout_cycles, c->cfg.max_resync_rounds);
      break;
    case AUTD3__WHY_STALE:
      autd3_set_error(res, "frame (cmd 0x%02x %s): inputs stale for %u consecutive cycles, so whether device %d executed it "
                      "is unknown", cmd, name, c->cfg.timeout_cycles * c->cfg.max_resync_rounds, d);
      break;
    case AUTD3__WHY_AWAY:
      autd3_set_error(res, "frame (cmd 0x%02x %s) not sent to device %d: its inputs had been stale for %u consecutive "
                      "cycles (unplugged, silent or out of OP?), so it was away and did not execute it; it rejoins the "
                      "stream by itself, its state kept, once it answers again", cmd, name, d,
                      c->cfg.timeout_cycles * c->cfg.max_resync_rounds);
      break;
    case AUTD3__WHY_FOREIGN:
      autd3_set_error(res, "device %d answered ack 0x%02x, a seq this client did not send or one it had passed: another "
                      "master drives it (frame cmd 0x%02x %s not accepted from this client)", d, r->err_ack, cmd, name);
      break;
    case AUTD3__WHY_V12_ERR:
      autd3_set_error(res, "device %d executed the frame and answered firmware error %u: %s (ack 0x%02x)", d,
                      r->err_ack >> 4, autd3_v12_err_message((uint8_t)(r->err_ack >> 4)), r->err_ack);
      break;
    case AUTD3__WHY_V12_RESET:
      autd3_set_error(res, "device %d was reset (reported by the link) with the frame in flight: whether it executed "
                      "it is unknown; firmware v12 keeps nothing across a reset (Clear, Synchronize and the "
                      "application's state must be sent again)", d);
      break;
    case AUTD3__WHY_V12_TIMEOUT:
      autd3_set_error(res, "device %d did not ack msg_id %u within 200 ms (the legacy client's response timeout): "
                      "whether it executes the frame is unknown (it may still be in its queue)", d, r->err_ack);
      break;
    default:
      if (res == AUTD3_E_LINK)
        /* The bus thread's message lives in its own thread-local slot; it left
         * a copy in the client before completing, which we now make ours. */
        autd3_set_error(res, "link cycle failed: %s", c->link_msg);
      else if (res == AUTD3_E_CLOSED)
        autd3_set_error(res, "client closed while the frame was in flight");
      else
        autd3_set_error(res, "request failed");
      break;
  }
}

/* The request is complete (its `done` was consumed): report and free it. */
static autd3_err_t request_finish(struct autd3__slot *r, autd3_response_t *resp) {
  struct autd3_client *c = r->client;
  autd3_err_t res = r->result;
  if (resp) {
    memset(resp, 0, sizeof *resp);
    resp->num_devices = c->num_devices;
    memcpy(resp->data, r->data, c->num_devices);
    memcpy(resp->outcome, r->outcome, c->num_devices);
  }
  if (res != AUTD3_OK) {
    /* CLOSED/LINK take precedence over per-device detail of the same frame. */
    if (res == AUTD3_E_CLOSED || res == AUTD3_E_LINK) r->err_why = AUTD3__WHY_NONE;
    set_request_error(r);
  }
  autd3__slot_release(r);
  return res;
}

autd3_err_t autd3_request_wait(autd3_request_t *req, autd3_response_t *resp) {
  struct autd3__slot *r = NULL;
  uint32_t g = 0;
  autd3_err_t err = autd3__handle_claim(req, "autd3_request_wait", &r, &g);
  if (err != AUTD3_OK) return err;
  err = autd3__sem_wait(&r->done);
  if (err != AUTD3_OK) {
    autd3__handle_unclaim(r, g);
    return err;
  }
  return request_finish(r, resp);
}

autd3_err_t autd3_request_wait_for(autd3_request_t *req, uint32_t timeout_ms, autd3_response_t *resp) {
  struct autd3__slot *r = NULL;
  uint32_t g = 0;
  autd3_err_t err = autd3__handle_claim(req, "autd3_request_wait_for", &r, &g);
  if (err != AUTD3_OK) return err;
  /* Monotonic (the seam's contract): a wall-clock step cannot stretch the wait. */
  err = autd3__sem_timedwait_ns(&r->done, (uint64_t)timeout_ms * 1000000ull);
  if (err != AUTD3_OK) {
    autd3__handle_unclaim(r, g);
    if (err == AUTD3_E_PENDING) return autd3_set_error(AUTD3_E_PENDING, "request not complete within %u ms", timeout_ms);
    return err;
  }
  return request_finish(r, resp);
}

autd3_err_t autd3_request_poll(autd3_request_t *req, autd3_response_t *resp) {
  struct autd3__slot *r = NULL;
  uint32_t g = 0;
  autd3_err_t err = autd3__handle_claim(req, "autd3_request_poll", &r, &g);
  if (err != AUTD3_OK) return err;
  if (!autd3__sem_trywait(&r->done)) {
    autd3__handle_unclaim(r, g);
    return autd3_set_error(AUTD3_E_PENDING, "request not complete yet");
  }
  return request_finish(r, resp);
}

autd3_err_t autd3_request_detach(autd3_request_t *req) {
  struct autd3__slot *r = NULL;
  uint32_t g = 0;
  autd3_err_t err = autd3__handle_claim(req, "autd3_request_detach", &r, &g);
  if (err != AUTD3_OK) return err;
  uint32_t old = atomic_fetch_or_explicit(&r->flags, AUTD3__REQ_DETACHED, memory_order_acq_rel);
  if (old & AUTD3__REQ_COMPLETED) {
    /* Already completed: its post is (or is about to be) there; take it so
     * the semaphore is zero when the slot is reused. */
    autd3__sem_wait(&r->done);
    autd3__slot_release(r);
  }
  /* Otherwise the bus thread releases the slot when it completes it. */
  return AUTD3_OK;
}

autd3_err_t autd3_client_send_checked(autd3_client_t *c, const autd3_frame_t *frame, autd3_response_t *resp) {
  autd3_request_t *req = NULL;
  autd3_err_t err = autd3_client_send(c, frame, &req);
  if (err != AUTD3_OK) return err;
  /* Whether the data bytes are error codes is the protocol's (v12: values,
   * its devices' errors already failed the request). Read before the wait:
   * if another thread closed the client meanwhile, the wait that releases
   * this last handle frees it (client.h "Lifetime"). */
  autd3_err_t (*check)(const autd3_response_t *) = c->proto->response_check;
  autd3_response_t local;
  autd3_response_t *r = resp ? resp : &local;
  err = autd3_request_wait(req, r);
  if (err != AUTD3_OK) return err;
  return check != NULL ? check(r) : AUTD3_OK;
}
