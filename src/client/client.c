/*
 * The client's user side: configuration, open/close, the request slot pool,
 * send and the waits, the exclusive reads. The bus thread lives in bus.c.
 *
 * Algorithm and defaults follow shinolab/autd3-sdk crates/autd3-rs/src/client/
 * {mod,config,pool}.rs (crate autd3-rs 0.9.0 src/client/). Where this
 * C version differs it says why next to the code.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"
#include "core/struct_size.h"

static autd3_client_config_t config_defaults(void) {
  autd3_client_config_t c = {
      .size = sizeof(autd3_client_config_t),
      .timeout_cycles = 10,
      .max_inflight = AUTD3_MAX_INFLIGHT,
      .max_resync_rounds = 8,
      .low_latency = false,
      .reset_resend_cycles = 2,
      .rt_priority = 0,
      .rt_cpu = -1,
      .require_supported_firmware = false,
      .close_timeout_ms = 1000,
      .protocol = AUTD3_PROTOCOL_NEW,
  };
  return c;
}

/* Every sizeof(autd3_client_config_t) a header had (src/core/struct_size.h): append the old one when a field is added. */
static const size_t config_sizes[] = {sizeof(autd3_client_config_t)};

void autd3_client_config_init(autd3_client_config_t *c, size_t size) {
  if (c == NULL || size < sizeof c->size) return;
  autd3_client_config_t d = config_defaults();
  d.size = (uint32_t)size;
  autd3__out_copy(c, size, &d, sizeof d);
}

autd3_client_config_t(autd3_client_config_default)(void) { return config_defaults(); }

/* The caller's config as this library's struct: its prefix over the defaults. */
static autd3_err_t config_full(const autd3_client_config_t *c, autd3_client_config_t *out) {
  if (!autd3__size_known(c->size, config_sizes, sizeof config_sizes / sizeof config_sizes[0]))
    return autd3_set_error(AUTD3_E_INVALID_CONFIG,
                           "client config: size = %u is not a size this library knows (%zu; start from "
                           "autd3_client_config_default(), which sets it)",
                           c->size, sizeof(autd3_client_config_t));
  *out = config_defaults();
  memcpy(out, c, c->size);
  return AUTD3_OK;
}

autd3_err_t autd3_client_config_validate(const autd3_client_config_t *config) {
  if (config == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "client config is NULL");
  autd3_client_config_t full;
  autd3_err_t err = config_full(config, &full);
  if (err != AUTD3_OK) return err;
  const autd3_client_config_t *c = &full;
  if (c->timeout_cycles < 1) return autd3_set_error(AUTD3_E_INVALID_CONFIG, "timeout_cycles = 0: must be >= 1");
  /* 127 = half the 8-bit seq space, so "newer than" stays unambiguous (config.rs). */
  if (c->max_inflight < 1 || c->max_inflight > AUTD3_MAX_INFLIGHT)
    return autd3_set_error(AUTD3_E_INVALID_CONFIG, "max_inflight = %u: must be 1..%d", c->max_inflight, AUTD3_MAX_INFLIGHT);
  if (c->max_resync_rounds < 1) return autd3_set_error(AUTD3_E_INVALID_CONFIG, "max_resync_rounds = 0: must be >= 1");
  if (c->reset_resend_cycles < 1) return autd3_set_error(AUTD3_E_INVALID_CONFIG, "reset_resend_cycles = 0: must be >= 1");
  if (c->rt_priority < 0 || c->rt_priority > 99)
    return autd3_set_error(AUTD3_E_INVALID_CONFIG, "rt_priority = %d: must be 0 (none) or 1..99", c->rt_priority);
  if (c->rt_cpu < -1) return autd3_set_error(AUTD3_E_INVALID_CONFIG, "rt_cpu = %d: must be -1 (none) or a CPU index", c->rt_cpu);
  /* ≥ 1: close always tries to silence the array (a safety rule, client.h). */
  if (c->close_timeout_ms < 1 || c->close_timeout_ms > 60000)
    return autd3_set_error(AUTD3_E_INVALID_CONFIG, "close_timeout_ms = %u: must be 1..60000", c->close_timeout_ms);
  if (c->protocol > AUTD3_PROTOCOL_AUTO)
    return autd3_set_error(AUTD3_E_INVALID_CONFIG, "protocol = %u: must be 0 (new), 1 (v12) or 2 (auto)", c->protocol);
  return AUTD3_OK;
}

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

/* ---- lifetime ------------------------------------------------------------------ */

/* What client_alloc() allocated (each may be NULL). */
static void client_free_memory(struct autd3_client *c) {
  free(c->slots);
  free(c->slot_mem);
  free(c->bus.tx);
  free(c->bus.rx);
  free(c);
}

static void client_free(struct autd3_client *c) {
  for (uint32_t i = 0; i < c->num_slots; i++) autd3__sem_destroy(&c->slots[i].done);
  autd3__sem_destroy(&c->free_sem);
  autd3__sem_destroy(&c->hs_done);
  autd3__mutex_destroy(&c->send_lock);
  autd3__handle_unregister(c); /* its handles are refused from here on */
  atomic_store(&c->magic, 0);
  client_free_memory(c);
}

static void client_unref(struct autd3_client *c) {
  if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1) client_free(c);
}

/* Return a slot to the pool. Called by the user side, or by the bus thread for
 * detached requests: atomics and a semaphore post only. The client cannot be
 * freed here while the bus thread runs (close holds its reference until the
 * thread is joined). */
static void slot_release(struct autd3__slot *r) {
  struct autd3_client *c = r->client;
  atomic_store_explicit(&r->handle, (uint64_t)r->gen << 2 | AUTD3__H_NONE, memory_order_relaxed);
  atomic_store_explicit(&r->flags, 0, memory_order_relaxed);
  atomic_store_explicit(&r->state, AUTD3__SLOT_FREE, memory_order_release);
  if (r->index != c->num_slots - 1) autd3__sem_post(&c->free_sem); /* close's reserved slot is not in the count */
  client_unref(c);
}

void autd3__client_complete(struct autd3_client *c, struct autd3__slot *r, autd3_err_t result) {
  r->result = result;
  atomic_fetch_add_explicit(result == AUTD3_OK ? &c->st_completed : &c->st_failed, 1, memory_order_relaxed);
  uint32_t old = atomic_fetch_or_explicit(&r->flags, AUTD3__REQ_COMPLETED, memory_order_acq_rel);
  if (old & AUTD3__REQ_DETACHED)
    slot_release(r);
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

/* ---- open / close ----------------------------------------------------------------- */

static autd3_err_t client_alloc(struct autd3_client **out, autd3_link_t *link, const autd3_client_config_t *cfg) {
  struct autd3_client *c = calloc(1, sizeof *c);
  if (c == NULL) return autd3_set_error(AUTD3_E_NOMEM, "client: out of memory");
  size_t n = autd3_link_num_devices(link);
  c->link = link;
  c->num_devices = (uint16_t)n;
  c->cfg = *cfg;
  atomic_init(&c->refs, 1);
  c->entry = AUTD3__NO_ENTRY;
  /* Everything the bus thread touches is allocated here, once: slots with
   * room for a per-device frame, the tx/rx images. */
  size_t per_slot = n + n * AUTD3_PAYLOAD_BYTES + n + n;
  /* One slot more than max_inflight: the last one is close's own (its
   * silencing frame must not depend on the user releasing handles). */
  const uint32_t nslots = cfg->max_inflight + 1;
  c->slots = calloc(nslots, sizeof *c->slots);
  c->slot_mem = calloc(nslots, per_slot);
  c->bus.tx = calloc(n, AUTD3_TX_FRAME_BYTES);
  c->bus.rx = calloc(n, AUTD3_RX_FRAME_BYTES);
  if (c->slots == NULL || c->slot_mem == NULL || c->bus.tx == NULL || c->bus.rx == NULL) {
    client_free_memory(c);
    return autd3_set_error(AUTD3_E_NOMEM, "client: out of memory for %u slots of %zu devices", cfg->max_inflight, n);
  }
  /* Each primitive is destroyed by client_free() only once initialised:
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
      client_free(c);
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
    client_free(c);
    return reg_err;
  }
  atomic_init(&c->magic, AUTD3__CLIENT_MAGIC);
  *out = c;
  return AUTD3_OK;
}

static autd3_err_t client_close(autd3_client_t *c, bool silence);

autd3_err_t autd3_client_open(const autd3_geometry_t *geometry, const autd3_link_option_t *link_opt,
                              const autd3_client_config_t *config, autd3_client_t **out) {
  if (out) *out = NULL;
  if (geometry == NULL || link_opt == NULL || out == NULL)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_client_open: %s is NULL",
                           geometry == NULL ? "geometry" : link_opt == NULL ? "link option" : "out");
  autd3_client_config_t cfg = config_defaults();
  autd3_err_t err = config ? config_full(config, &cfg) : AUTD3_OK;
  if (err == AUTD3_OK) err = autd3_client_config_validate(&cfg);
  if (err != AUTD3_OK) return err;

  autd3_link_t *link = NULL;
  err = autd3_link_open(link_opt, geometry, &link);
  if (err != AUTD3_OK) return err;
  size_t ln = autd3_link_num_devices(link), gn = autd3_geometry_num_devices(geometry);
  if (ln < 1 || ln > AUTD3_MAX_DEVICES) {
    autd3_link_close(link);
    return autd3_set_error(AUTD3_E_DEVICE_COUNT_RANGE, "%s link exposes %zu devices; must be 1..%d",
                           autd3_link_kind_name(link_opt->kind), ln, AUTD3_MAX_DEVICES);
  }
  if (ln != gn) {
    autd3_link_close(link);
    return autd3_set_error(AUTD3_E_GEOMETRY_MISMATCH, "geometry has %zu device(s) but the %s link exposes %zu", gn,
                           autd3_link_kind_name(link_opt->kind), ln);
  }

  if (cfg.protocol == AUTD3_PROTOCOL_AUTO) {
    /* Probe on this thread before any bus thread exists (legacy.c). */
    err = autd3__legacy_probe(link, ln, &cfg.protocol);
    if (err != AUTD3_OK) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", autd3_last_error());
      autd3_link_close(link);
      return autd3_set_error(err, "client open: %s", msg);
    }
  }
  const bool v12 = cfg.protocol == AUTD3_PROTOCOL_V12;
  struct autd3_client *c = NULL;
  err = client_alloc(&c, link, &cfg);
  if (err != AUTD3_OK) {
    autd3_link_close(link);
    return err;
  }
  err = autd3__thread_start(&c->thread, v12 ? autd3__legacy_bus_main : autd3__client_bus_main, c, "autd3-bus");
  if (err != AUTD3_OK) {
    autd3_link_close(link);
    client_free(c);
    return err;
  }
  c->thread_started = true;
  autd3__sem_wait(&c->hs_done);
  if (c->hs_err != AUTD3_OK) {
    /* The bus thread has returned without entering its loop. */
    autd3__thread_join(&c->thread);
    autd3_link_close(link);
    err = autd3_set_error(c->hs_err, "%s", c->hs_msg);
    client_free(c);
    return err;
  }

  /* The rest of the 0.9 open sequence (identity reads, optional series
   * check, Clear, Synchronize) runs through the normal send path. */
  err = v12 ? autd3__legacy_open_sequence(c) : autd3__client_open_sequence(c);
  if (err != AUTD3_OK) {
    char msg[768];
    snprintf(msg, sizeof msg, "%s", autd3_last_error());
    /* As the reference (mod.rs open_impl → close_impl(stop = false)): no
     * silencing frame to devices the open did not establish (e.g. firmware
     * of another series, which may read the frame differently). */
    client_close(c, false);
    return autd3_set_error(err, "client open: %s", msg);
  }
  *out = c;
  return AUTD3_OK;
}

static autd3_err_t client_close(autd3_client_t *c, bool silence) {
  /* A second close while the client still exists (requests not yet
   * released keep it alive) is detected and ignored; after the last release
   * the memory is gone and any call is undefined (client.h). */
  uint32_t magic = AUTD3__CLIENT_MAGIC;
  if (!atomic_compare_exchange_strong(&c->magic, &magic, 0))
    return autd3_set_error(AUTD3_E_CLOSED, "autd3_client_close: the client is already closed");
  /* Silence first, while the bus thread still runs (session.c). New sends
   * from other threads are refused from here on (magic cleared). */
  char msg[768] = "";
  autd3_err_t result = AUTD3_OK;
  if (silence && c->thread_started)
    result = c->cfg.protocol == AUTD3_PROTOCOL_V12 ? autd3__legacy_silence(c) : autd3__client_silence(c);
  if (result != AUTD3_OK) snprintf(msg, sizeof msg, "%s", autd3_last_error());
  atomic_store(&c->closing, true);
  /* The bus thread notices `closing` at its next cycle boundary (≤ one bus
   * cycle), fails everything in flight or queued with CLOSED and returns. */
  if (c->thread_started) autd3__thread_join(&c->thread);
  c->thread_started = false;
  autd3_link_close(c->link);
  c->link = NULL;
  client_unref(c);
  if (result != AUTD3_OK) return autd3_set_error(result, "%s", msg);
  return AUTD3_OK;
}

autd3_err_t autd3_client_close(autd3_client_t *c) {
  if (c == NULL) return AUTD3_OK;
  return client_close(c, true);
}

size_t autd3_client_num_devices(const autd3_client_t *c) { return c ? c->num_devices : 0; }

autd3_protocol_t autd3_client_protocol(const autd3_client_t *c) {
  return c ? (autd3_protocol_t)c->cfg.protocol : AUTD3_PROTOCOL_NEW;
}

autd3_link_t *autd3_client_link(autd3_client_t *c) { return c ? c->link : NULL; }

void autd3_client_stats_sized(const autd3_client_t *c, autd3_client_stats_t *dst, size_t size) {
  if (c == NULL || dst == NULL) return;
  autd3_client_stats_t st, *out = &st;
  autd3_client_t *m = (autd3_client_t *)c; /* atomics are read-only here */
  out->sent = atomic_load_explicit(&m->st_sent, memory_order_relaxed);
  out->completed = atomic_load_explicit(&m->st_completed, memory_order_relaxed);
  out->failed = atomic_load_explicit(&m->st_failed, memory_order_relaxed);
  out->resyncs = atomic_load_explicit(&m->st_resyncs, memory_order_relaxed);
  out->resets = atomic_load_explicit(&m->st_resets, memory_order_relaxed);
  out->retransmits = atomic_load_explicit(&m->st_retransmits, memory_order_relaxed);
  out->bus_cpu_ns = 0;
  if (m->thread_started && !atomic_load(&m->dead)) out->bus_cpu_ns = autd3__thread_cpu_ns_of(&m->thread);
  if (out->bus_cpu_ns == 0) out->bus_cpu_ns = atomic_load_explicit(&m->st_cpu_ns, memory_order_relaxed);
  out->bus_cycles = atomic_load_explicit(&m->st_cycles, memory_order_relaxed);
  out->device_resets = atomic_load_explicit(&m->st_device_resets, memory_order_relaxed);
  out->reinits = atomic_load_explicit(&m->st_reinits, memory_order_relaxed);
  out->unknown_outcomes = atomic_load_explicit(&m->st_unknown, memory_order_relaxed);
  out->second_master = atomic_load_explicit(&m->st_foreign, memory_order_relaxed);
  out->device_timeouts = atomic_load_explicit(&m->st_timeouts, memory_order_relaxed);
  autd3__out_copy(dst, size, &st, sizeof st);
}

void(autd3_client_stats)(const autd3_client_t *c, autd3_client_stats_t *out) {
  autd3_client_stats_sized(c, out, AUTD3__SIZE_THROUGH(autd3_client_stats_t, device_timeouts));
}

uint32_t autd3_client_device_resets(const autd3_client_t *c, uint16_t dev) {
  if (c == NULL || dev >= c->num_devices) return 0;
  return atomic_load(&((autd3_client_t *)c)->ds_resets[dev]);
}

autd3_err_t autd3_client_device_status_sized(const autd3_client_t *c, uint16_t dev, autd3_client_device_status_t *dst,
                                             size_t size) {
  if (c == NULL || dst == NULL)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_client_device_status: %s is NULL", c ? "out" : "client");
  if (dev >= c->num_devices)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_client_device_status: device %u out of range (%u devices)",
                           (unsigned)dev, (unsigned)c->num_devices);
  autd3_client_device_status_t st, *out = &st;
  autd3_client_t *m = (autd3_client_t *)c; /* atomics are read-only here */
  /* reinits before resets and state last: a reader never sees a finished
   * re-establishment that the counters do not account for. */
  uint32_t reinits = atomic_load(&m->ds_reinits[dev]);
  out->resets = atomic_load(&m->ds_resets[dev]);
  out->reinits = reinits;
  out->state = (autd3_client_device_state_t)atomic_load(&m->ds_state[dev]);
  autd3__out_copy(dst, size, &st, sizeof st);
  return AUTD3_OK;
}

autd3_err_t(autd3_client_device_status)(const autd3_client_t *c, uint16_t dev, autd3_client_device_status_t *out) {
  return autd3_client_device_status_sized(c, dev, out, AUTD3__SIZE_THROUGH(autd3_client_device_status_t, state));
}

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

  /* Publish into the ring. The CAS fails only if the bus thread closed the
   * ring (it is stopping), so nothing is pushed that nobody will complete. */
  autd3__mutex_lock(&c->send_lock);
  uint32_t t = atomic_load_explicit(&c->ring_tail, memory_order_relaxed);
  bool pushed = false;
  /* Once close has begun (magic cleared, before it pushes its silencing
   * frame under this lock), nothing else is pushed: the silencing frame is
   * the last frame the devices get, whatever other threads were doing. */
  bool open = deadline_ns != 0 || atomic_load(&c->magic) == AUTD3__CLIENT_MAGIC;
  if (!(t & AUTD3__RING_CLOSED) && open) {
    c->ring[t % AUTD3__RING_CAP] = r->index;
    pushed = atomic_compare_exchange_strong_explicit(&c->ring_tail, &t, (t + 1) & AUTD3__RING_MASK, memory_order_release,
                                                     memory_order_relaxed);
  }
  autd3__mutex_unlock(&c->send_lock);
  if (!pushed) {
    err = closed_error(c);
    slot_release(r);
    return err;
  }
  if (req) *req = autd3__handle_of(r);
  return AUTD3_OK;
}

/* A v12 client writes `cmd` into the v12 header's reserved byte and the
 * payload's first two bytes as slot_2_offset (proto.h): a new-generation
 * frame (cmd ≠ 0) would be misread, so it is refused, as is a slot-2 offset
 * that cannot hold an operation. */
static autd3_err_t v12_frame_check(const struct autd3_client *c, const autd3_frame_t *f) {
  size_t n = f->device_cmds ? c->num_devices : 1;
  for (size_t i = 0; i < n; i++) {
    uint8_t cmd = f->device_cmds ? f->device_cmds[i] : f->cmd;
    const uint8_t *p = f->device_cmds ? f->device_payloads + i * AUTD3_PAYLOAD_BYTES : f->payload;
    unsigned s2 = (unsigned)p[0] | (unsigned)p[1] << 8;
    if (cmd != 0)
      return autd3_set_error(AUTD3_E_PAYLOAD, "protocol v12: frame%s has cmd 0x%02x; v12 frames are built with "
                             "autd3_v12_frame() (a new-generation frame would be misread by firmware v12)",
                             f->device_cmds ? " of a device" : "", cmd);
    if ((s2 & 1u) || s2 >= AUTD3_V12_PAYLOAD_BYTES)
      return autd3_set_error(AUTD3_E_PAYLOAD, "protocol v12: slot_2_offset %u must be even and < %d", s2,
                             AUTD3_V12_PAYLOAD_BYTES);
  }
  return AUTD3_OK;
}

static autd3_err_t client_submit(struct autd3_client *c, const autd3_frame_t *frame, bool exclusive, autd3_request_t **req) {
  if (c == NULL || frame == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_client_send: %s is NULL", c ? "frame" : "client");
  if (atomic_load(&c->magic) != AUTD3__CLIENT_MAGIC)
    return autd3_set_error(AUTD3_E_CLOSED, "autd3_client_send: the client was closed (autd3_client_close)");
  if (frame->len > AUTD3_PAYLOAD_BYTES)
    return autd3_set_error(AUTD3_E_PAYLOAD, "frame len = %u: must be <= %d", frame->len, AUTD3_PAYLOAD_BYTES);
  if (frame->device_cmds != NULL && frame->device_payloads == NULL)
    return autd3_set_error(AUTD3_E_PAYLOAD, "per-device frame: device_cmds set but device_payloads is NULL");
  if (c->cfg.protocol == AUTD3_PROTOCOL_V12) {
    autd3_err_t err = v12_frame_check(c, frame);
    if (err != AUTD3_OK) return err;
  }
  /* Hold a reference while inside: a close() on another thread then cannot
   * free the client under a sender that is blocked on back-pressure (it wakes
   * through the baton post and fails with CLOSED). */
  atomic_fetch_add(&c->refs, 1);
  autd3_err_t err = submit(c, frame, exclusive, 0, req);
  client_unref(c);
  return err;
}

autd3_err_t autd3__client_submit_until(struct autd3_client *c, const autd3_frame_t *frame, uint64_t deadline_ns,
                                       autd3_request_t **req) {
  /* Close's own frames: the magic is already cleared, close holds its reference. */
  return submit(c, frame, false, deadline_ns, req);
}


autd3_err_t autd3_client_send(autd3_client_t *c, const autd3_frame_t *frame, autd3_request_t **req) {
  return client_submit(c, frame, false, req);
}

/* ---- handles ------------------------------------------------------------------------------ */

/* What a handle encodes and how a stale one is told apart: handle.c
 * (autd3__handle_claim() / autd3__handle_unclaim()). */

/* ---- completion ------------------------------------------------------------------------- */

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
    case AUTD3__WHY_UNSENT_STALE:
      autd3_set_error(res, "frame (cmd 0x%02x %s) not sent: no device's inputs were valid for %u consecutive cycles and "
                      "device %d's window is full of frames whose fate is unknown, so no device executed it", cmd, name,
                      c->cfg.timeout_cycles * c->cfg.max_resync_rounds, d);
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
  slot_release(r);
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
    slot_release(r);
  }
  /* Otherwise the bus thread releases the slot when it completes it. */
  return AUTD3_OK;
}

autd3_err_t autd3_client_send_checked(autd3_client_t *c, const autd3_frame_t *frame, autd3_response_t *resp) {
  autd3_request_t *req = NULL;
  autd3_err_t err = autd3_client_send(c, frame, &req);
  if (err != AUTD3_OK) return err;
  autd3_response_t local;
  autd3_response_t *r = resp ? resp : &local;
  err = autd3_request_wait(req, r);
  if (err != AUTD3_OK) return err;
  /* v12: the data byte is a value (FPGA state, firmware info), not an error
   * code; the device's error nibble already failed the request. */
  if (c->cfg.protocol == AUTD3_PROTOCOL_V12) return AUTD3_OK;
  return autd3_response_check(r, NULL, NULL);
}

/* ---- exclusive reads -------------------------------------------------------------------- */

/* One broadcast read. Exclusive because cumulative acks give every frame acked
 * in the same cycle the same data byte (rt.rs route_acks); a read must be the
 * only frame in flight for its byte to be its own. */
static autd3_err_t read_exclusive(autd3_client_t *c, uint8_t cmd, uint8_t *out, size_t stride) {
  autd3_frame_t f = autd3_frame_simple(cmd);
  autd3_request_t *req = NULL;
  autd3_err_t err = client_submit(c, &f, true, &req);
  if (err != AUTD3_OK) return err;
  autd3_response_t resp;
  err = autd3_request_wait(req, &resp);
  if (err != AUTD3_OK) return err;
  for (size_t i = 0; i < resp.num_devices; i++) out[i * stride] = resp.data[i];
  return AUTD3_OK;
}

autd3_err_t autd3_client_read_firmware_version(autd3_client_t *c, autd3_fw_version_t *out) {
  if (c == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_client_read_firmware_version: NULL argument");
  if (c->cfg.protocol == AUTD3_PROTOCOL_V12) return autd3__legacy_read_firmware_version(c, out);
  bool known[AUTD3_MAX_DEVICES];
  uint8_t functions[AUTD3_MAX_DEVICES];
  return autd3__client_read_identity(c, out, known, functions); /* session.c: the 0.9 reads */
}

autd3_err_t autd3_client_read_error_detail(autd3_client_t *c, uint8_t *out) {
  if (c == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_client_read_error_detail: NULL argument");
  if (c->cfg.protocol == AUTD3_PROTOCOL_V12)
    return autd3_set_error(AUTD3_E_VERSION, "autd3_client_read_error_detail: firmware v12 has no error-detail read "
                                                "(its errors come with each frame's ack)");
  return read_exclusive(c, AUTD3_CMD_READ_ERROR_DETAIL, out, 1);
}

autd3_err_t autd3_client_read_fpga_state(autd3_client_t *c, uint8_t *out) {
  if (c == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_client_read_fpga_state: NULL argument");
  if (c->cfg.protocol == AUTD3_PROTOCOL_V12) return autd3__legacy_read_fpga_state(c, out);
  return read_exclusive(c, AUTD3_CMD_READ_FPGA_STATE, out, 1);
}

autd3_err_t autd3__client_read_exclusive(struct autd3_client *c, uint8_t cmd, uint8_t *out, size_t stride) {
  return read_exclusive(c, cmd, out, stride);
}
