/*
 * The client's public API: configuration, open/close, stats, the reads. What
 * differs between the protocols (handshake, bus loop, open sequence,
 * silencing, reads) is asked of the protocol's table (client_internal.h),
 * chosen once at open. The slot pool lives in pool.c, send and the waits in
 * request.c, the bus thread's frame in bus_thread.c.
 *
 * Algorithm and defaults follow shinolab/autd3-sdk crates/autd3-rs/src/client/
 * {mod,config,pool}.rs (crate autd3-rs 0.9.0 src/client/). Where this
 * C version differs it says why next to the code.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"
#include "core/error_context.h"
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

/* ---- open / close ----------------------------------------------------------------- */

/* The protocols, by autd3_protocol_t (AUTO is resolved by the probe first). */
static const autd3__protocol_t *const protocols[] = {
    [AUTD3_PROTOCOL_NEW] = &autd3__protocol_seqcmd,
    [AUTD3_PROTOCOL_V12] = &autd3__protocol_v12,
};

/* Open failed once the link was open: close it (and free the client, if
 * any), keeping the thread's message, which the close may overwrite. */
static autd3_err_t open_fail(autd3_link_t *link, struct autd3_client *c, autd3_err_t err) {
  autd3__error_saved_t msg;
  autd3__error_save(&msg);
  autd3_link_close(link);
  if (c != NULL) autd3__client_free(c);
  return autd3__error_restore(&msg, err);
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
  if (ln < 1 || ln > AUTD3_MAX_DEVICES)
    return open_fail(link, NULL,
                     autd3_set_error(AUTD3_E_DEVICE_COUNT_RANGE, "%s link exposes %zu devices; must be 1..%d",
                                     autd3_link_kind_name(link_opt->kind), ln, AUTD3_MAX_DEVICES));
  if (ln != gn)
    return open_fail(link, NULL,
                     autd3_set_error(AUTD3_E_GEOMETRY_MISMATCH, "geometry has %zu device(s) but the %s link exposes %zu",
                                     gn, autd3_link_kind_name(link_opt->kind), ln));

  if (cfg.protocol == AUTD3_PROTOCOL_AUTO) {
    /* Probe on this thread before any bus thread exists (probe.c). */
    err = autd3__protocol_probe(link, ln, &cfg.protocol);
    if (err != AUTD3_OK) return autd3__error_context(open_fail(link, NULL, err), "client open");
  }
  struct autd3_client *c = NULL;
  err = autd3__client_alloc(&c, link, &cfg, protocols[cfg.protocol]);
  if (err != AUTD3_OK) return open_fail(link, NULL, err);
  /* The bus thread: its RT policy, then the protocol's handshake (bus_thread.c). */
  err = autd3__bus_start(c);
  if (err != AUTD3_OK) return open_fail(link, c, err);

  /* The rest of the protocol's open sequence (seq/cmd: identity reads,
   * optional series check, Clear, Synchronize) runs through the normal send path. */
  err = c->proto->open_sequence(c);
  if (err != AUTD3_OK) {
    autd3__error_saved_t msg;
    autd3__error_save(&msg);
    /* As the reference (mod.rs open_impl → close_impl(stop = false)): no
     * silencing frame to devices the open did not establish (e.g. firmware
     * of another series, which may read the frame differently). */
    client_close(c, false);
    autd3__error_restore(&msg, err);
    return autd3__error_context(err, "client open");
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
  /* Silence first, while the bus thread still runs (the protocol's). New
   * sends from other threads are refused from here on (magic cleared). */
  autd3__error_saved_t msg;
  autd3_err_t result = AUTD3_OK;
  if (silence && c->thread_started) result = c->proto->silence(c);
  if (result != AUTD3_OK) autd3__error_save(&msg);
  autd3__bus_stop(c);
  autd3_link_close(c->link);
  c->link = NULL;
  autd3__client_unref(c);
  if (result != AUTD3_OK) return autd3__error_restore(&msg, result);
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
  out->reserved_ = 0;
  out->executed = atomic_load_explicit(&m->ds_outcomes[dev][AUTD3_OUTCOME_EXECUTED], memory_order_relaxed);
  out->not_executed = atomic_load_explicit(&m->ds_outcomes[dev][AUTD3_OUTCOME_NOT_EXECUTED], memory_order_relaxed);
  out->unknown = atomic_load_explicit(&m->ds_outcomes[dev][AUTD3_OUTCOME_UNKNOWN], memory_order_relaxed);
  out->aways = atomic_load_explicit(&m->ds_aways[dev], memory_order_relaxed);
  autd3__out_copy(dst, size, &st, sizeof st);
  return AUTD3_OK;
}

autd3_err_t(autd3_client_device_status)(const autd3_client_t *c, uint16_t dev, autd3_client_device_status_t *out) {
  return autd3_client_device_status_sized(c, dev, out, AUTD3__SIZE_THROUGH(autd3_client_device_status_t, state));
}

/* ---- reads: the protocol's ------------------------------------------------------------------ */

autd3_err_t autd3_client_read_firmware_version(autd3_client_t *c, autd3_fw_version_t *out) {
  if (c == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_client_read_firmware_version: NULL argument");
  return c->proto->read_firmware_version(c, out);
}

autd3_err_t autd3_client_read_error_detail(autd3_client_t *c, uint8_t *out) {
  if (c == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_client_read_error_detail: NULL argument");
  return c->proto->read_error_detail(c, out);
}

autd3_err_t autd3_client_read_fpga_state(autd3_client_t *c, uint8_t *out) {
  if (c == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_client_read_fpga_state: NULL argument");
  return c->proto->read_fpga_state(c, out);
}
