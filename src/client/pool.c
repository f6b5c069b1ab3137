/*
 * The client's memory and its request slot pool: allocation at open (all of
 * it, once), the reference count that frees it, and a slot's way back to the
 * pool (release) and to its waiter (completion). See client_internal.h for
 * who owns a slot when, and docs/architecture.md §1, §4, §5.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"

/* ---- lifetime ------------------------------------------------------------------ */

/* What autd3__client_alloc() allocated (each may be NULL). */
static void client_free_memory(struct autd3_client *c) {
  free(c->slots);
  free(c->slot_mem);
  free(c->bus.tx);
  free(c->bus.rx);
  free(c->proto_state);
  free(c);
}

void autd3__client_free(struct autd3_client *c) {
  for (uint32_t i = 0; i < c->num_slots; i++) autd3__sem_destroy(&c->slots[i].done);
  autd3__sem_destroy(&c->free_sem);
  autd3__sem_destroy(&c->hs_done);
  autd3__mutex_destroy(&c->send_lock);
  autd3__handle_unregister(c); /* its handles are refused from here on */
  atomic_store(&c->magic, 0);
  client_free_memory(c);
}

void autd3__client_unref(struct autd3_client *c) {
  if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1) autd3__client_free(c);
}

/* Return a slot to the pool. Called by the user side, or by the bus thread for
 * detached requests: atomics and a semaphore post only. The client cannot be
 * freed here while the bus thread runs (close holds its reference until the
 * thread is joined). */
void autd3__slot_release(struct autd3__slot *r) {
  struct autd3_client *c = r->client;
  atomic_store_explicit(&r->handle, (uint64_t)r->gen << 2 | AUTD3__H_NONE, memory_order_relaxed);
  atomic_store_explicit(&r->flags, 0, memory_order_relaxed);
  atomic_store_explicit(&r->state, AUTD3__SLOT_FREE, memory_order_release);
  if (r->index != c->num_slots - 1) autd3__sem_post(&c->free_sem); /* close's reserved slot is not in the count */
  autd3__client_unref(c);
}

void autd3__client_complete(struct autd3_client *c, struct autd3__slot *r, autd3_err_t result) {
  r->result = result;
  atomic_fetch_add_explicit(result == AUTD3_OK ? &c->st_completed : &c->st_failed, 1, memory_order_relaxed);
  for (size_t d = 0; d < c->num_devices; d++) /* what each device did with it (autd3_client_device_status) */
    if (r->outcome[d] < 4) atomic_fetch_add_explicit(&c->ds_outcomes[d][r->outcome[d]], 1, memory_order_relaxed);
  uint32_t old = atomic_fetch_or_explicit(&r->flags, AUTD3__REQ_COMPLETED, memory_order_acq_rel);
  if (old & AUTD3__REQ_DETACHED)
    autd3__slot_release(r);
  else
    autd3__sem_post(&r->done);
}

void autd3__slot_blame(struct autd3__slot *r, size_t d, autd3_err_t code, uint8_t why, uint8_t ack) {
  if (r->err_dev < 0 || (int)d < r->err_dev) {
    r->err_dev = (int)d;
    r->err_code = code;
    r->err_why = why;
    r->err_ack = ack;
  }
}

/* ---- allocation (open) ------------------------------------------------------------------ */

autd3_err_t autd3__client_alloc(struct autd3_client **out, autd3_link_t *link, const autd3_client_config_t *cfg,
                                const autd3__protocol_t *proto) {
  struct autd3_client *c = calloc(1, sizeof *c);
  if (c == NULL) return autd3_set_error(AUTD3_E_NOMEM, "client: out of memory");
  size_t n = autd3_link_num_devices(link);
  c->link = link;
  c->num_devices = (uint16_t)n;
  c->cfg = *cfg;
  c->proto = proto;
  /* The built-in links of these kinds report every device reset before the
   * device's inputs count again (EtherCAT: the state check, before it
   * restores the device's SyncManagers; TwinCAT: the state word; the
   * emulator: its power cycle); Remote and custom kinds may not. */
  autd3_link_kind_t kind = autd3_link_kind(link);
  c->reset_evidence = kind == AUTD3_LINK_EMULATOR || kind == AUTD3_LINK_ECHOCAT || kind == AUTD3_LINK_SOEM ||
                      kind == AUTD3_LINK_ETHERCRAB || kind == AUTD3_LINK_TWINCAT;
  atomic_init(&c->refs, 1);
  c->entry = AUTD3__NO_ENTRY;
  /* Everything the bus thread touches is allocated here, once: slots with
   * room for a per-device frame, the tx/rx images, the protocol's state. */
  size_t per_slot = n + n * AUTD3_PAYLOAD_BYTES + n + n;
  /* One slot more than max_inflight: the last one is close's own (its
   * silencing frame must not depend on the user releasing handles). */
  const uint32_t nslots = cfg->max_inflight + 1;
  c->slots = calloc(nslots, sizeof *c->slots);
  c->slot_mem = calloc(nslots, per_slot);
  c->bus.tx = calloc(n, AUTD3_TX_FRAME_BYTES);
  c->bus.rx = calloc(n, AUTD3_RX_FRAME_BYTES);
  c->proto_state = calloc(1, proto->state_size);
  if (c->slots == NULL || c->slot_mem == NULL || c->bus.tx == NULL || c->bus.rx == NULL || c->proto_state == NULL) {
    client_free_memory(c);
    return autd3_set_error(AUTD3_E_NOMEM, "client: out of memory for %u slots of %zu devices", cfg->max_inflight, n);
  }
  /* Each primitive is destroyed by autd3__client_free() only once initialised:
   * num_slots counts the slots whose semaphore exists. */
  autd3_err_t init_err = autd3__sem_init(&c->free_sem, cfg->max_inflight);
  if (init_err == AUTD3_OK && (init_err = autd3__sem_init(&c->hs_done, 0)) != AUTD3_OK) autd3__sem_destroy(&c->free_sem);
  if (init_err == AUTD3_OK && (init_err = autd3__mutex_init(&c->send_lock)) != AUTD3_OK) {
    autd3__sem_destroy(&c->hs_done);
    autd3__sem_destroy(&c->free_sem);
  }
  if (init_err != AUTD3_OK) {
    client_free_memory(c);
    return init_err; /* the seam set the message */
  }
  for (uint32_t i = 0; i < nslots; i++) {
    autd3_err_t e = autd3__sem_init(&c->slots[i].done, 0);
    if (e != AUTD3_OK) {
      autd3__client_free(c);
      return e;
    }
    c->num_slots = i + 1;
  }
  for (uint32_t i = 0; i < c->num_slots; i++) {
    struct autd3__slot *r = &c->slots[i];
    uint8_t *m = c->slot_mem + (size_t)i * per_slot;
    r->client = c;
    r->index = (uint8_t)i;
    r->cmds = m;
    r->payload = m + n;
    r->data = m + n + n * AUTD3_PAYLOAD_BYTES;
    r->outcome = r->data + n;
    atomic_init(&r->state, AUTD3__SLOT_FREE);
    atomic_init(&r->flags, 0);
    atomic_init(&r->handle, 0);
  }
  autd3_err_t reg_err = autd3__handle_register(c); /* the slots' generations */
  if (reg_err != AUTD3_OK) {
    autd3__client_free(c);
    return reg_err;
  }
  atomic_init(&c->magic, AUTD3__CLIENT_MAGIC);
  *out = c;
  return AUTD3_OK;
}
