/*
 * The link registry and the generic link API: one table maps a kind to its
 * open function, so the client (and every tool) opens any link the same way.
 * Built-in kinds are filled in at compile time; links in separate libraries
 * (SOEM, EtherCrab) register themselves when loaded.
 */
#include <stdatomic.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "core/struct_size.h"
#include "ecat/recovery.h"
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

autd3_err_t autd3_emu_firmware_parse(const char *s, autd3_emu_firmware_t *out) {
  if (s == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_emu_firmware_parse: NULL argument");
  if (strcmp(s, "new") == 0 || strcmp(s, "0.9") == 0) *out = AUTD3_EMU_FIRMWARE_NEW;
  else if (strcmp(s, "v12") == 0) *out = AUTD3_EMU_FIRMWARE_V12;
  else if (strcmp(s, "mixed") == 0) *out = AUTD3_EMU_FIRMWARE_MIXED;
  else return autd3_set_error(AUTD3_E_INVALID_OPTION, "firmware '%s': expected new, v12 or mixed", s);
  return AUTD3_OK;
}

/* The kinds' defaults. The exported per-kind functions below return them by
 * value (frozen at the 0.3.0 layout); in source they are macros over
 * autd3_link_option_default(), whose struct has a fixed size (link.h). */
static autd3_link_option_t kind_defaults(autd3_link_kind_t kind) {
  autd3_link_option_t o;
  memset(&o, 0, sizeof o);
  o.kind = kind;
  switch (kind) {
    case AUTD3_LINK_EMULATOR:
      o.size = AUTD3_LINK_OPTION_SIZE(autd3_emulator_option_t);
      o.u.emulator.cycle_ns = 1000000;
      o.u.emulator.timing = autd3_timing_model_default();
      o.u.emulator.version = (autd3_fw_version_t)AUTD3_FW_VERSION_DEFAULT;
      break;
    case AUTD3_LINK_ECHOCAT:
      o.size = AUTD3_LINK_OPTION_SIZE(autd3_echocat_option_t);
      o.u.echocat.ethercat = autd3_ethercat_option_default();
      o.u.echocat.backend = AUTD3_NIC_AUTO;
      o.u.echocat.warmup_cycles = AUTD3_LINK_ECAT_WARMUP_CYCLES;
      break;
    case AUTD3_LINK_SOEM:
      o.size = AUTD3_LINK_OPTION_SIZE(autd3_soem_option_t);
      o.u.soem.ethercat = autd3_ethercat_option_default();
      break;
    case AUTD3_LINK_ETHERCRAB:
      o.size = AUTD3_LINK_OPTION_SIZE(autd3_ethercrab_option_t);
      o.u.ethercrab.ethercat = autd3_ethercat_option_default();
      o.u.ethercrab.pdu_timeout_ms = 100;
      break;
    case AUTD3_LINK_TWINCAT:
      o.size = AUTD3_LINK_OPTION_SIZE(autd3_twincat_option_t);
      o.u.twincat.server_port = 48898;
      o.u.twincat.ams_port = 301;
      o.u.twincat.timeout_ms = 1000;
      break;
    case AUTD3_LINK_REMOTE:
      o.size = AUTD3_LINK_OPTION_SIZE(autd3_remote_option_t);
      o.u.remote.address = "127.0.0.1:8080";
      o.u.remote.pipeline = AUTD3_REMOTE_PIPELINE_AUTO;
      o.u.remote.protocol = AUTD3_REMOTE_PROTOCOL_NEWEST;
      break;
    default: break;
  }
  return o;
}

autd3_link_option_t autd3_link_option_default(autd3_link_kind_t kind) { return kind_defaults(kind); }

autd3_emulator_option_t(autd3_emulator_option_default)(void) { return kind_defaults(AUTD3_LINK_EMULATOR).u.emulator; }
autd3_echocat_option_t(autd3_echocat_option_default)(void) { return kind_defaults(AUTD3_LINK_ECHOCAT).u.echocat; }
autd3_soem_option_t(autd3_soem_option_default)(void) { return kind_defaults(AUTD3_LINK_SOEM).u.soem; }
autd3_ethercrab_option_t(autd3_ethercrab_option_default)(void) { return kind_defaults(AUTD3_LINK_ETHERCRAB).u.ethercrab; }
autd3_twincat_option_t(autd3_twincat_option_default)(void) { return kind_defaults(AUTD3_LINK_TWINCAT).u.twincat; }
autd3_remote_option_t(autd3_remote_option_default)(void) { return kind_defaults(AUTD3_LINK_REMOTE).u.remote; }

/* The union's reserved room is what keeps sizeof(autd3_link_option_t) fixed:
 * a member that outgrows it changes the size of every link option. */
_Static_assert(sizeof(((autd3_link_option_t *)0)->u) == sizeof(((autd3_link_option_t *)0)->u.reserved_),
               "a link kind's option outgrew the reserved room of autd3_link_option_t");

/* Every size of a kind's member a header had, as AUTD3_LINK_OPTION_SIZE
 * (src/core/struct_size.h). Append the old size when a kind gains a field.
 * Remote's first entry is its field set without `protocol` (appended in
 * 0.3.0): a caller that knows no `protocol` gets the newest. */
#define OPT_SIZE_THROUGH_(T, f) ((size_t)offsetof(autd3_link_option_t, u) + AUTD3__SIZE_THROUGH(T, f))
static const size_t emulator_sizes[] = {AUTD3_LINK_OPTION_SIZE(autd3_emulator_option_t)};
static const size_t echocat_sizes[] = {AUTD3_LINK_OPTION_SIZE(autd3_echocat_option_t)};
static const size_t soem_sizes[] = {AUTD3_LINK_OPTION_SIZE(autd3_soem_option_t)};
static const size_t ethercrab_sizes[] = {AUTD3_LINK_OPTION_SIZE(autd3_ethercrab_option_t)};
static const size_t twincat_sizes[] = {AUTD3_LINK_OPTION_SIZE(autd3_twincat_option_t)};
static const size_t remote_sizes[] = {OPT_SIZE_THROUGH_(autd3_remote_option_t, pipeline),
                                      AUTD3_LINK_OPTION_SIZE(autd3_remote_option_t)};
static const struct {
  const size_t *v;
  size_t n;
} kind_sizes[AUTD3_LINK_KIND_COUNT_] = {
#define SIZES_(a) {a, sizeof a / sizeof a[0]}
    [AUTD3_LINK_EMULATOR] = SIZES_(emulator_sizes), [AUTD3_LINK_ECHOCAT] = SIZES_(echocat_sizes),
    [AUTD3_LINK_SOEM] = SIZES_(soem_sizes),         [AUTD3_LINK_ETHERCRAB] = SIZES_(ethercrab_sizes),
    [AUTD3_LINK_TWINCAT] = SIZES_(twincat_sizes),   [AUTD3_LINK_REMOTE] = SIZES_(remote_sizes),
#undef SIZES_
};

autd3_err_t autd3__link_option_full(const autd3_link_option_t *option, autd3_link_option_t *out) {
  if ((unsigned)option->kind >= AUTD3_LINK_KIND_COUNT_)
    return autd3_set_error(AUTD3_E_UNKNOWN_LINK, "unknown link kind %d", (int)option->kind);
  const autd3_link_kind_t kind = option->kind;
  if (!autd3__size_known(option->size, kind_sizes[kind].v, kind_sizes[kind].n))
    return autd3_set_error(AUTD3_E_INVALID_OPTION,
                           "link option: size = %u is not a size of the %s option this library knows (newest %u); "
                           "start from autd3_link_option_default(), which sets it",
                           option->size, kind_info[kind].name, (unsigned)kind_sizes[kind].v[kind_sizes[kind].n - 1]);
  *out = kind_defaults(kind);
  memcpy(out, option, option->size);
  return AUTD3_OK;
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

/* ---- the link header and its statistics (link_driver.h): the links report, this file counts ---- */

/* The header as links built against the 0.3.0 headers have it. */
#define HEADER_0_3 AUTD3__SIZE_THROUGH(struct autd3_link, device_resets_any)
/* Whether the link's header has the statistics appended in 0.5.0 (autd3_link_init_sized). */
static bool has_ext(const struct autd3_link *link) { return link->header_size_ >= sizeof(struct autd3_link); }

void autd3_link_init_sized(struct autd3_link *link, const autd3_link_vtable_t *vt, autd3_link_kind_t kind,
                           uint16_t num_devices, size_t header_size) {
  link->vt = vt;
  link->kind = kind;
  link->num_devices = num_devices;
  link->header_size_ = (uint16_t)(header_size < sizeof(struct autd3_link) ? HEADER_0_3 : sizeof(struct autd3_link));
  atomic_init(&link->cycles, 0);
  atomic_init(&link->stale_cycles, 0);
  atomic_init(&link->lost_cycles, 0);
  for (size_t d = 0; d < AUTD3_MAX_DEVICES; d++) atomic_init(&link->device_resets[d], 0);
  atomic_init(&link->device_resets_any, 0);
  if (!has_ext(link)) return;
  atomic_init(&link->measured, AUTD3_LINK_MEASURES_STALE);
  atomic_init(&link->phase_excursions, 0);
  atomic_init(&link->phase_worst_ns, 0);
  atomic_init(&link->exchanges, 0);
  atomic_init(&link->exchange_ns_total, 0);
  atomic_init(&link->exchange_worst_ns, 0);
  for (size_t d = 0; d < AUTD3_MAX_DEVICES; d++) atomic_init(&link->device_stale[d], 0);
  atomic_init(&link->ecat_recovery_, 0);
  atomic_init(&link->dc_seq_, 0);
  atomic_init(&link->dc_host_ns_, 0);
  atomic_init(&link->dc_time_ns_, 0);
  memset(link->checked_state_, AUTD3_DEVICE_OP, sizeof link->checked_state_); /* open leaves every device in OP */
  memset(link->device_recoveries_, 0, sizeof link->device_recoveries_);
}

void(autd3_link_init)(struct autd3_link *link, const autd3_link_vtable_t *vt, autd3_link_kind_t kind, uint16_t num_devices) {
  autd3_link_init_sized(link, vt, kind, num_devices, HEADER_0_3);
}

void autd3_link_set_measured(struct autd3_link *link, uint32_t measured) {
  if (link != NULL && has_ext(link))
    atomic_fetch_or_explicit(&link->measured, measured | AUTD3_LINK_MEASURES_STALE, memory_order_relaxed);
}

/* Raise a maximum that one thread (the bus thread) writes and any thread reads. */
static void keep_max(_Atomic uint64_t *m, uint64_t v) {
  if (v > atomic_load_explicit(m, memory_order_relaxed)) atomic_store_explicit(m, v, memory_order_relaxed);
}

void autd3_link_report_exchange(struct autd3_link *link, uint64_t elapsed_ns) {
  if (link == NULL || !has_ext(link)) return;
  atomic_fetch_or_explicit(&link->measured, AUTD3_LINK_MEASURES_EXCHANGE, memory_order_relaxed);
  keep_max(&link->exchange_worst_ns, elapsed_ns);
  /* the total before the count (release): a reader that loads the count first never sees a total short of it */
  atomic_fetch_add_explicit(&link->exchange_ns_total, elapsed_ns, memory_order_relaxed);
  atomic_fetch_add_explicit(&link->exchanges, 1, memory_order_release);
}

void autd3_link_report_phase(struct autd3_link *link, int64_t deviation_ns, uint64_t early_ns, uint64_t late_ns) {
  if (link == NULL || !has_ext(link)) return;
  atomic_fetch_or_explicit(&link->measured, AUTD3_LINK_MEASURES_PHASE, memory_order_relaxed);
  uint64_t mag = deviation_ns < 0 ? (uint64_t)0 - (uint64_t)deviation_ns : (uint64_t)deviation_ns;
  if (deviation_ns < 0 ? mag > early_ns : mag >= late_ns)
    atomic_fetch_add_explicit(&link->phase_excursions, 1, memory_order_relaxed);
  keep_max(&link->phase_worst_ns, mag);
}

void autd3_link_report_dc_time(struct autd3_link *link, uint64_t host_ns, uint64_t dc_ns) {
  if (link == NULL || !has_ext(link)) return;
  atomic_fetch_or_explicit(&link->measured, AUTD3_LINK_MEASURES_DC_TIME, memory_order_relaxed);
  /* a sequence lock with one writer: odd while the pair is written (the release fences order the stores) */
  uint32_t q = atomic_load_explicit(&link->dc_seq_, memory_order_relaxed);
  atomic_store_explicit(&link->dc_seq_, q + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&link->dc_host_ns_, host_ns, memory_order_relaxed);
  atomic_store_explicit(&link->dc_time_ns_, dc_ns, memory_order_relaxed);
  atomic_store_explicit(&link->dc_seq_, q + 2, memory_order_release);
}

/* The last DC sample as one pair (the reader side of autd3_link_report_dc_time); a few tries, then none. */
static void read_dc_time(const struct autd3_link *link, uint64_t *host_ns, uint64_t *dc_ns) {
  struct autd3_link *l = (struct autd3_link *)link; /* atomics are only read */
  for (int tries = 0; tries < 64; tries++) {
    uint32_t q0 = atomic_load_explicit(&l->dc_seq_, memory_order_acquire);
    uint64_t h = atomic_load_explicit(&l->dc_host_ns_, memory_order_relaxed);
    uint64_t d = atomic_load_explicit(&l->dc_time_ns_, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (!(q0 & 1u) && atomic_load_explicit(&l->dc_seq_, memory_order_relaxed) == q0) {
      *host_ns = h, *dc_ns = d;
      return;
    }
  }
  *host_ns = *dc_ns = 0;
}

void autd3_link_add_counts(struct autd3_link *link, uint64_t stale, uint64_t lost, uint64_t phase_excursions,
                           uint64_t worst_phase_deviation_ns) {
  if (link == NULL) return;
  atomic_fetch_add_explicit(&link->stale_cycles, stale > lost ? stale : lost, memory_order_relaxed);
  atomic_fetch_add_explicit(&link->lost_cycles, lost, memory_order_relaxed);
  if (!has_ext(link)) return;
  atomic_fetch_add_explicit(&link->phase_excursions, phase_excursions, memory_order_relaxed);
  keep_max(&link->phase_worst_ns, worst_phase_deviation_ns);
}

/* The per-device stale count of one cycle (autd3_link_cycle_devices). */
static void count_devices(struct autd3_link *link, const bool *dev_valid) {
  if (!has_ext(link)) return;
  for (size_t d = 0; d < link->num_devices; d++)
    if (!dev_valid[d]) atomic_fetch_add_explicit(&link->device_stale[d], 1, memory_order_relaxed);
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

autd3_err_t autd3_link_open(const autd3_link_option_t *given, const autd3_geometry_t *geometry, autd3_link_t **out) {
  if (given == NULL || geometry == NULL || out == NULL)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_link_open: NULL argument");
  *out = NULL;
  /* Every open function sees this library's full struct: the caller's prefix, defaults past it. */
  autd3_link_option_t full;
  autd3_err_t err = autd3__link_option_full(given, &full);
  if (err != AUTD3_OK) return err;
  const autd3_link_option_t *option = &full;
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
  err = open(option, geometry, &link);
  if (err != AUTD3_OK) return err;
  if (link == NULL) return autd3_set_error(AUTD3_E_INTERNAL, "%s link open returned no link", kind_info[option->kind].name);
  *out = link;
  return AUTD3_OK;
}

size_t autd3_link_num_devices(const autd3_link_t *link) { return link ? link->num_devices : 0; }

autd3_link_kind_t autd3_link_kind(const autd3_link_t *link) { return link->kind; }

autd3_err_t autd3_link_cycle(autd3_link_t *link, const uint8_t *tx, uint8_t *rx, bool *rx_valid) {
  bool dev_valid[AUTD3_MAX_DEVICES]; /* for the per-device statistics */
  return autd3_link_cycle_devices(link, tx, rx, rx_valid, dev_valid);
}

/* Per-device input validity (autd3_link_report_inputs): the caller's buffer
 * for the cycle running on this thread. A thread-local rather than a field of
 * the link header or a vtable member: both are laid out by links built
 * against older headers, which must keep working unchanged; a link that
 * never reports leaves `reported` false and every device gets *rx_valid. */
static _Thread_local struct {
  const struct autd3_link *link;
  bool *out;
  bool reported;
} inputs_;

void autd3_link_report_inputs(struct autd3_link *link, const bool *valid) {
  if (link == NULL || valid == NULL || inputs_.link != link) return;
  memcpy(inputs_.out, valid, link->num_devices);
  inputs_.reported = true;
}

autd3_err_t autd3_link_cycle_devices(autd3_link_t *link, const uint8_t *tx, uint8_t *rx, bool *rx_valid, bool *dev_valid) {
  inputs_.link = link;
  inputs_.out = dev_valid;
  inputs_.reported = false;
  *rx_valid = false;
  autd3_err_t err = link->vt->cycle(link, tx, rx, rx_valid);
  bool all = true;
  if (err == AUTD3_OK && inputs_.reported) {
    for (size_t d = 0; d < link->num_devices; d++) all = all && dev_valid[d];
  } else {
    memset(dev_valid, err == AUTD3_OK && *rx_valid, link->num_devices);
  }
  /* "every device valid" never claims more than the devices do */
  if (!all) *rx_valid = false;
  inputs_.link = NULL;
  if (err == AUTD3_OK) count_devices(link, dev_valid);
  return err;
}

autd3_err_t autd3_link_wait_next_cycle(autd3_link_t *link) {
  return link->vt->wait_next_cycle ? link->vt->wait_next_cycle(link) : AUTD3_OK;
}

void autd3_link_stats_sized(const autd3_link_t *link, autd3_link_stats_t *out, size_t size) {
  if (link == NULL || out == NULL) return;
  autd3_link_stats_t st;
  memset(&st, 0, sizeof st);
  st.cycles = atomic_load_explicit(&link->cycles, memory_order_relaxed);
  st.stale_cycles = atomic_load_explicit(&link->stale_cycles, memory_order_relaxed);
  st.lost_cycles = atomic_load_explicit(&link->lost_cycles, memory_order_relaxed);
  if (has_ext(link)) {
    st.measured = atomic_load_explicit(&link->measured, memory_order_relaxed);
    st.exchanges = atomic_load_explicit(&link->exchanges, memory_order_acquire);
    st.exchange_ns_total = atomic_load_explicit(&link->exchange_ns_total, memory_order_relaxed);
    st.worst_exchange_ns = atomic_load_explicit(&link->exchange_worst_ns, memory_order_relaxed);
    st.phase_excursions = atomic_load_explicit(&link->phase_excursions, memory_order_relaxed);
    st.worst_phase_deviation_ns = atomic_load_explicit(&link->phase_worst_ns, memory_order_relaxed);
    read_dc_time(link, &st.dc_sample_host_ns, &st.dc_sample_time_ns);
  } else {
    st.measured = AUTD3_LINK_MEASURES_STALE | AUTD3_LINK_MEASURES_LOST; /* what a 0.3.0 link counts */
  }
  autd3__out_copy(out, size, &st, sizeof st);
}

void(autd3_link_stats)(const autd3_link_t *link, autd3_link_stats_t *out) {
  autd3_link_stats_sized(link, out, AUTD3__SIZE_THROUGH(autd3_link_stats_t, lost_cycles));
}

autd3_err_t autd3_link_check_state_sized(autd3_link_t *link, autd3_link_status_t *out, size_t size) {
  if (link == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_link_check_state: NULL argument");
  /* The link's checker fills this library's struct; the caller gets `size` bytes of it. */
  autd3_link_status_t st;
  memset(&st, 0, sizeof st);
  st.num_devices = link->num_devices;
  /* Zeroed = AUTD3_DEVICE_UNKNOWN: a link without a checker (Remote) reports no state it has not seen. */
  autd3_err_t err = link->vt->check_state == NULL ? AUTD3_OK : link->vt->check_state(link, &st);
  if (err == AUTD3_OK && has_ext(link) && (st.measured & AUTD3_LINK_STATUS_STATES)) {
    /* Per device, one mechanism for every link: back in OP after a check that saw it elsewhere. */
    for (size_t d = 0; d < link->num_devices; d++) {
      if (st.state[d] == AUTD3_DEVICE_UNKNOWN) continue;
      if (st.state[d] == AUTD3_DEVICE_OP && link->checked_state_[d] != AUTD3_DEVICE_OP) link->device_recoveries_[d]++;
      link->checked_state_[d] = st.state[d];
    }
    memcpy(st.device_recoveries, link->device_recoveries_, link->num_devices * sizeof st.device_recoveries[0]);
    st.measured |= AUTD3_LINK_STATUS_DEVICE_RECOVERIES;
  }
  autd3__out_copy(out, size, &st, sizeof st);
  return err;
}

autd3_err_t(autd3_link_check_state)(autd3_link_t *link, autd3_link_status_t *out) {
  return autd3_link_check_state_sized(link, out, AUTD3__SIZE_THROUGH(autd3_link_status_t, recoveries));
}

void autd3__link_set_device_reader(struct autd3_link *link, const autd3__link_device_reader_t *reader) {
  if (link != NULL && has_ext(link)) atomic_store_explicit(&link->ecat_recovery_, (uintptr_t)reader, memory_order_release);
}

autd3_err_t autd3_link_device_info_sized(autd3_link_t *link, uint16_t dev, autd3_link_device_info_t *out, size_t size) {
  if (link == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_link_device_info: NULL argument");
  if (dev >= link->num_devices)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_link_device_info: device %u of %u", dev, link->num_devices);
  autd3_link_device_info_t in;
  memset(&in, 0, sizeof in);
  in.resets = autd3_link_device_resets(link, dev);
  if (has_ext(link)) {
    in.stale_cycles = atomic_load_explicit(&link->device_stale[dev], memory_order_relaxed);
    in.measured = atomic_load_explicit(&link->measured, memory_order_relaxed) & AUTD3_LINK_MEASURES_DEVICE_STALE;
    const autd3__link_device_reader_t *reader =
        (const autd3__link_device_reader_t *)atomic_load_explicit(&link->ecat_recovery_, memory_order_acquire);
    if (reader != NULL) reader->read(reader, dev, &in);
  } else {
    in.stale_cycles = atomic_load_explicit(&link->stale_cycles, memory_order_relaxed); /* cannot tell devices apart */
  }
  autd3__out_copy(out, size, &in, sizeof in);
  return AUTD3_OK;
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
