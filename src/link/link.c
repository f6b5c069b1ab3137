/*
 * The link registry and the generic link API: one table maps a kind to its
 * open function, so the client (and every tool) opens any link the same way.
 * Built-in kinds are filled in at compile time; links in separate libraries
 * (SOEM, EtherCrab) register themselves when loaded.
 */
#include <stdatomic.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "link/link_internal.h"

static const struct {
  const char *name;
  const char *cmake_option;
} kind_info[AUTD3_LINK_KIND_COUNT_] = {
#define AUTD3_KIND_INFO_(n, v, str, opt) [v] = {str, opt},
    AUTD3_LINK_KIND_MAP(AUTD3_KIND_INFO_)
#undef AUTD3_KIND_INFO_
};

/* Atomic pointers: registration may race with an open on another thread. */
static _Atomic(autd3_link_open_fn) registry[AUTD3_LINK_KIND_COUNT_] = {
    [AUTD3_LINK_EMULATOR] = autd3__link_open_emulator,
#ifdef AUTD3_HAVE_ECHOCAT
    [AUTD3_LINK_ECHOCAT] = autd3__link_open_echocat,
#endif
#ifdef AUTD3_HAVE_TWINCAT
    [AUTD3_LINK_TWINCAT] = autd3__link_open_twincat,
#endif
#ifdef AUTD3_HAVE_REMOTE
    [AUTD3_LINK_REMOTE] = autd3__link_open_remote,
#endif
};

autd3_err_t autd3_link_register(autd3_link_kind_t kind, autd3_link_open_fn open) {
  if ((unsigned)kind >= AUTD3_LINK_KIND_COUNT_ || open == NULL)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_link_register: bad kind %d or NULL open", (int)kind);
  atomic_store(&registry[kind], open);
  return AUTD3_OK;
}

const char *autd3_link_kind_name(autd3_link_kind_t kind) {
  return (unsigned)kind < AUTD3_LINK_KIND_COUNT_ ? kind_info[kind].name : "unknown";
}

autd3_err_t autd3_link_kind_parse(const char *name, autd3_link_kind_t *out) {
  if (name == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_link_kind_parse: NULL argument");
  for (int k = 0; k < AUTD3_LINK_KIND_COUNT_; k++) {
    if (strcmp(name, kind_info[k].name) == 0) {
      *out = (autd3_link_kind_t)k;
      return AUTD3_OK;
    }
  }
  return autd3_set_error(AUTD3_E_UNKNOWN_LINK,
                         "unknown link kind \"%s\" (expected emulator, echocat, soem, ethercrab, twincat or remote)", name);
}

bool autd3_link_kind_available(autd3_link_kind_t kind) {
  return (unsigned)kind < AUTD3_LINK_KIND_COUNT_ && atomic_load(&registry[kind]) != NULL;
}

autd3_ethercat_option_t autd3_ethercat_option_default(void) {
  autd3_ethercat_option_t o = {
      .interface = NULL,
      .sync0_period_ns = 1000000,
      .sync0_shift_ns = 0,
      .send_cycle_ns = 0,
      .sync_tolerance_ns = 1000,
      .sync_timeout_ms = 10000,
      .state_timeout_ms = 10000,
      .op_wait_timeout_ms = 10000,
      .rt_priority = 0,
      .rt_cpu = -1,
      .capture_path = NULL,
  };
  return o;
}

#define EC_CYCLE_BASE_NS 500000u /* EC_CYCLE_TIME_BASE: SYNC0 is a multiple of 500 µs */

autd3_err_t autd3_ethercat_option_validate(const autd3_ethercat_option_t *o) {
  if (o == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "EtherCAT option is NULL");
  if (o->sync0_period_ns == 0 || o->sync0_period_ns % EC_CYCLE_BASE_NS != 0)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "sync0_period_ns = %u: must be a non-zero multiple of 500000 (500 us)",
                           o->sync0_period_ns);
  if (o->send_cycle_ns != 0 && o->send_cycle_ns % EC_CYCLE_BASE_NS != 0)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "send_cycle_ns = %u: must be 0 (= sync0_period_ns) or a multiple of 500000",
                           o->send_cycle_ns);
  int64_t shift = o->sync0_shift_ns;
  if (shift <= -(int64_t)o->sync0_period_ns || shift >= (int64_t)o->sync0_period_ns * 2)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "sync0_shift_ns = %d: must lie in (-period, 2*period)", o->sync0_shift_ns);
  if (o->sync_tolerance_ns == 0)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "sync_tolerance_ns must be > 0");
  if (o->sync_timeout_ms == 0 || o->state_timeout_ms == 0 || o->op_wait_timeout_ms == 0)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "sync_timeout_ms, state_timeout_ms and op_wait_timeout_ms must be > 0");
  if (o->rt_priority < 0 || o->rt_priority > 99)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "rt_priority = %d: must be 0 (none) or 1..99", o->rt_priority);
  if (o->rt_cpu < -1) return autd3_set_error(AUTD3_E_INVALID_OPTION, "rt_cpu = %d: must be -1 (none) or a CPU index", o->rt_cpu);
  if (o->interface != NULL && strlen(o->interface) >= 64)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "interface name too long");
  return AUTD3_OK;
}

autd3_echocat_option_t autd3_echocat_option_default(void) {
  autd3_echocat_option_t o = {.ethercat = autd3_ethercat_option_default(), .backend = AUTD3_NIC_AUTO, .spin_ns = 0, .warmup_cycles = 200};
  return o;
}

autd3_soem_option_t autd3_soem_option_default(void) {
  autd3_soem_option_t o = {.ethercat = autd3_ethercat_option_default()};
  return o;
}

autd3_ethercrab_option_t autd3_ethercrab_option_default(void) {
  autd3_ethercrab_option_t o = {.ethercat = autd3_ethercat_option_default(), .pdu_timeout_ms = 100};
  return o;
}

autd3_twincat_option_t autd3_twincat_option_default(void) {
  autd3_twincat_option_t o = {.server_ip = NULL, .server_port = 48898, .server_ams_net_id = NULL, .client_ams_net_id = NULL, .ams_port = 301, .timeout_ms = 1000};
  return o;
}

autd3_remote_option_t autd3_remote_option_default(void) {
  autd3_remote_option_t o = {.address = "127.0.0.1:8080", .timeout_ms = 0};
  return o;
}

autd3_emulator_option_t autd3_emulator_option_default(void) {
  autd3_emulator_option_t o = {.cycle_ns = 1000000, .timing = autd3_timing_model_default(), .version = AUTD3_FW_VERSION_DEFAULT};
  return o;
}

autd3_err_t autd3_emu_firmware_parse(const char *s, autd3_emu_firmware_t *out) {
  if (s == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_emu_firmware_parse: NULL argument");
  if (strcmp(s, "new") == 0 || strcmp(s, "0.9") == 0) *out = AUTD3_EMU_FIRMWARE_NEW;
  else if (strcmp(s, "v12") == 0) *out = AUTD3_EMU_FIRMWARE_V12;
  else if (strcmp(s, "mixed") == 0) *out = AUTD3_EMU_FIRMWARE_MIXED;
  else return autd3_set_error(AUTD3_E_INVALID_OPTION, "firmware '%s': expected new, v12 or mixed", s);
  return AUTD3_OK;
}

autd3_link_option_t autd3_link_option_default(autd3_link_kind_t kind) {
  autd3_link_option_t o;
  memset(&o, 0, sizeof o);
  o.kind = kind;
  switch (kind) {
    case AUTD3_LINK_EMULATOR: o.u.emulator = autd3_emulator_option_default(); break;
    case AUTD3_LINK_ECHOCAT: o.u.echocat = autd3_echocat_option_default(); break;
    case AUTD3_LINK_SOEM: o.u.soem = autd3_soem_option_default(); break;
    case AUTD3_LINK_ETHERCRAB: o.u.ethercrab = autd3_ethercrab_option_default(); break;
    case AUTD3_LINK_TWINCAT: o.u.twincat = autd3_twincat_option_default(); break;
    case AUTD3_LINK_REMOTE: o.u.remote = autd3_remote_option_default(); break;
    default: break;
  }
  return o;
}

autd3_ethercat_option_t *autd3_link_option_ethercat(autd3_link_option_t *o) {
  if (o == NULL) return NULL;
  switch (o->kind) {
    case AUTD3_LINK_ECHOCAT: return &o->u.echocat.ethercat;
    case AUTD3_LINK_SOEM: return &o->u.soem.ethercat;
    case AUTD3_LINK_ETHERCRAB: return &o->u.ethercrab.ethercat;
    default: return NULL;
  }
}

void autd3_link_init(struct autd3_link *link, const autd3_link_vtable_t *vt, autd3_link_kind_t kind, uint16_t num_devices) {
  link->vt = vt;
  link->kind = kind;
  link->num_devices = num_devices;
  atomic_init(&link->cycles, 0);
  atomic_init(&link->stale_cycles, 0);
  atomic_init(&link->lost_cycles, 0);
  for (size_t d = 0; d < AUTD3_MAX_DEVICES; d++) atomic_init(&link->device_resets[d], 0);
  atomic_init(&link->device_resets_any, 0);
}

void autd3_link_report_device_reset(struct autd3_link *link, uint16_t dev) {
  if (link == NULL || dev >= link->num_devices) return;
  atomic_fetch_add_explicit(&link->device_resets[dev], 1, memory_order_release);
  atomic_fetch_add_explicit(&link->device_resets_any, 1, memory_order_release);
}

uint32_t autd3_link_device_resets(const autd3_link_t *link, uint16_t dev) {
  if (link == NULL || dev >= link->num_devices) return 0;
  return atomic_load_explicit(&((struct autd3_link *)link)->device_resets[dev], memory_order_acquire);
}

void autd3_link_count_cycle(struct autd3_link *link, bool rx_valid, bool lost) {
  atomic_fetch_add_explicit(&link->cycles, 1, memory_order_relaxed);
  if (!rx_valid || lost) atomic_fetch_add_explicit(&link->stale_cycles, 1, memory_order_relaxed);
  if (lost) atomic_fetch_add_explicit(&link->lost_cycles, 1, memory_order_relaxed);
}

autd3_err_t autd3_link_open(const autd3_link_option_t *option, const autd3_geometry_t *geometry, autd3_link_t **out) {
  if (option == NULL || geometry == NULL || out == NULL)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_link_open: NULL argument");
  *out = NULL;
  if ((unsigned)option->kind >= AUTD3_LINK_KIND_COUNT_)
    return autd3_set_error(AUTD3_E_UNKNOWN_LINK, "unknown link kind %d", (int)option->kind);
  size_t n = autd3_geometry_num_devices(geometry);
  if (n < 1 || n > AUTD3_MAX_DEVICES)
    return autd3_set_error(AUTD3_E_DEVICE_COUNT_RANGE, "geometry has %zu devices; must be 1..%d", n, AUTD3_MAX_DEVICES);
  autd3_link_open_fn open = atomic_load(&registry[option->kind]);
  if (open == NULL) {
    const char *extra = "";
    if (option->kind == AUTD3_LINK_SOEM)
      extra = " and link libautd3-link-soem (GPL-3.0-only; needs an installed SOEM v2)";
    else if (option->kind == AUTD3_LINK_ETHERCRAB)
      extra = " and link libautd3-link-ethercrab (needs cargo)";
    return autd3_set_error(AUTD3_E_NOT_BUILT, "the %s link is not built into this copy of libautd3: configure with -D%s=ON%s",
                           kind_info[option->kind].name, kind_info[option->kind].cmake_option, extra);
  }
  struct autd3_link *link = NULL;
  autd3_err_t err = open(option, geometry, &link);
  if (err != AUTD3_OK) return err;
  if (link == NULL) return autd3_set_error(AUTD3_E_INTERNAL, "%s link open returned no link", kind_info[option->kind].name);
  *out = link;
  return AUTD3_OK;
}

size_t autd3_link_num_devices(const autd3_link_t *link) { return link ? link->num_devices : 0; }

autd3_link_kind_t autd3_link_kind(const autd3_link_t *link) { return link->kind; }

autd3_err_t autd3_link_cycle(autd3_link_t *link, const uint8_t *tx, uint8_t *rx, bool *rx_valid) {
  return link->vt->cycle(link, tx, rx, rx_valid);
}

autd3_err_t autd3_link_wait_next_cycle(autd3_link_t *link) {
  return link->vt->wait_next_cycle ? link->vt->wait_next_cycle(link) : AUTD3_OK;
}

void autd3_link_stats(const autd3_link_t *link, autd3_link_stats_t *out) {
  out->cycles = atomic_load_explicit(&link->cycles, memory_order_relaxed);
  out->stale_cycles = atomic_load_explicit(&link->stale_cycles, memory_order_relaxed);
  out->lost_cycles = atomic_load_explicit(&link->lost_cycles, memory_order_relaxed);
}

autd3_err_t autd3_link_check_state(autd3_link_t *link, autd3_link_status_t *out) {
  if (link == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_link_check_state: NULL argument");
  memset(out, 0, sizeof *out);
  out->num_devices = link->num_devices;
  /* Zeroed = AUTD3_DEVICE_UNKNOWN: a link without a checker (Remote) reports no state it has not seen. */
  if (link->vt->check_state == NULL) return AUTD3_OK;
  return link->vt->check_state(link, out);
}

size_t autd3_link_diagnostics(autd3_link_t *link, char *buf, size_t cap) {
  if (link == NULL || buf == NULL || cap == 0) return 0;
  buf[0] = 0;
  if (link->vt->diagnostics == NULL) return 0;
  return link->vt->diagnostics(link, buf, cap);
}

void autd3_link_close(autd3_link_t *link) {
  if (link) link->vt->close(link);
}
