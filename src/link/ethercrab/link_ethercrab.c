/*
 * The EtherCrab link: the C half. EtherCrab (crates.io `ethercrab`, a pure
 * Rust EtherCAT MainDevice) runs inside the Rust shim of this folder
 * (src/, a staticlib); this file is the only code that calls it. It
 * implements the link vtable of autd3/link_driver.h, validates options, runs
 * the OP wait every EtherCAT link shares (services ecat_bringup) over the
 * shim's cycle, paces each cycle to the DC phase with absolute-deadline
 * sleeps, counts stale/lost cycles, and turns the shim's status codes + messages into autd3_err_t +
 * autd3_set_error(). Rust never sees an autd3 type; C never sees a Rust one.
 *
 * Merely linking this object registers the link (constructor below); the
 * registry in src/link/link.c then opens it for AUTD3_LINK_ETHERCRAB.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "core/error_context.h" /* header-only: autd3__error_save/_restore (public API only) */
#include "crab_pace.h"
#include "ecat/regs.h" /* register numbers: the tree's one map (header-only constants) */

/* Everything this library needs of libautd3 besides the public API (time,
 * the pacer, threads' RT policy, the capture tap, the one-master guard, the
 * identity check) comes through the versioned services table, so that nothing
 * of libautd3 is compiled in twice. Set at registration; the table is static. */
static const autd3_link_services_t *S;

/* ---- the shim's C ABI (mirror of src/ffi.rs; bump both on change) ---------- */
#define CRAB_ABI_VERSION 9u

enum {
  CRAB_OK = 0,
  CRAB_INVALID_OPTION = 1,
  CRAB_NO_INTERFACE = 2,
  CRAB_PERMISSION = 3,
  CRAB_NO_DEVICE = 4,
  CRAB_NOT_AUTD = 5,
  CRAB_COUNT_MISMATCH = 6,
  CRAB_SYNC_TIMEOUT = 7,
  CRAB_STATE_TIMEOUT = 8,
  CRAB_IO = 9,
  CRAB_LINK = 10,
  CRAB_INTERNAL = 11,
  CRAB_VERSION = 12,
  CRAB_LOST = 13,
  CRAB_SECOND_MASTER = 14, /* from C's on_adapter hook only (the shim passes it through) */
  CRAB_NOT_BUILT = 15,     /* the shim has no raw-socket transport for this OS */
};

typedef struct crab_open_args {
  uint32_t abi_version;
  const char *interface;
  uint16_t num_devices;
  uint32_t sync0_period_ns;
  int32_t sync0_shift_ns;
  uint32_t sync_tolerance_ns;
  uint32_t sync_timeout_ms;
  uint32_t state_timeout_ms;
  uint32_t pdu_timeout_ms;
  int32_t rt_priority;
  int32_t rt_cpu;
  /* Called on the shim's bring-up thread right before it opens an adapter
   * (each candidate, for "auto"); non-zero = a CRAB_* code, `msg` says why. */
  int32_t (*on_adapter)(void *user, const char *ifname, char *msg, size_t cap);
  void *on_adapter_user;
  /* The shared AUTD3 identity check (src/ecat/identity.h), called during
   * discovery for every device; non-zero = a CRAB_* code, `msg` says why. */
  int32_t (*check_identity)(const char *ifname, uint16_t position, uint32_t vendor, uint32_t product, const char *name,
                            char *msg, size_t cap);
  /* libautd3's RT policy for the shim's tx/rx thread (a thread the link
   * owns), called on that thread; non-zero = a CRAB_* code, `msg` says why. */
  int32_t (*apply_rt)(int32_t priority, int32_t cpu, char *msg, size_t cap);
} crab_open_args_t;

typedef struct crab_open_info {
  uint16_t num_devices;
  char interface[64];
} crab_open_info_t;

typedef struct crab_cycle_out {
  uint16_t working_counter;
  uint16_t expected_wkc;
  uint8_t all_op;
  uint8_t rx_valid;
  uint8_t lost; /* some group's frame did not come back (ABI 8) */
  uint64_t next_cycle_wait_ns;
  uint64_t dc_system_time_ns;
  uint8_t dev_valid[AUTD3_MAX_DEVICES]; /* per device: its inputs came back (ABI 8) */
} crab_cycle_out_t;

struct crab_link; /* Rust-owned */

uint32_t autd3crab_abi_version(void);
int32_t autd3crab_open(const crab_open_args_t *args, struct crab_link **out, crab_open_info_t *info, char *msg, size_t cap);
int32_t autd3crab_cycle(const struct crab_link *link, const uint8_t *tx, uint8_t *rx, crab_cycle_out_t *out, char *msg, size_t cap);
int32_t autd3crab_request_op(struct crab_link *link, char *msg, size_t cap);
void autd3crab_set_expected_wkc(struct crab_link *link, uint16_t wkc);
int32_t autd3crab_register(const struct crab_link *link, uint16_t dev, bool by_position, bool write, uint16_t reg, uint8_t *buf,
                           uint16_t len, uint16_t *wkc, char *msg, size_t cap);
uint16_t autd3crab_station(const struct crab_link *link, uint16_t dev);
uint64_t autd3crab_ignored_replies(const struct crab_link *link);
void autd3crab_close(struct crab_link *link);

/* ---- the link object --------------------------------------------------------- */

#define MSG_CAP 512

typedef struct ethercrab_link {
  struct autd3_link base;
  struct crab_link *crab;
  /* EtherCrab owns its socket, so the shared passive tap watches the adapter
   * for another master's frames and, with capture_path, records it */
  autd3_link_tap_t *cap;
  autd3_link_master_guard_t *guard; /* one master per chain: the interface's lock, held until close */
  /* the state checker: libautd3's EtherCAT recovery (services ecat_recovery_*)
   * on the shim's register access */
  autd3_link_ecat_recovery_t *rec;
  uint32_t period_ns;     /* SYNC0 period */
  uint64_t send_period_ns; /* send_cycle_ns (a multiple of the SYNC0 period) */
  /* the shared pacer, anchored by pace() at the next send (host monotonic
   * time), unanchored = at once (right after open); its counters are the
   * late wake-up diagnostics */
  autd3_link_pacer_t pace;
  crab_pace_t dc; /* when the next frame goes, from the DC time of the last reply (crab_pace.h) */
  bool waited;            /* wait_next_cycle already slept for the coming cycle */
  uint16_t expected_wkc;
  char ifname[64];
  char cycle_msg[MSG_CAP]; /* bus thread only */
  /* diagnostics: written by the bus thread, read by anyone */
  _Atomic uint32_t last_wkc;
  _Atomic uint64_t exchange_max_ns;  /* longest send->all groups received */
  _Atomic uint64_t exchange_last_ns;
  /* DC phase of each frame: how long after its aim point (SYNC0 edge + shift
   * + publish allowance, crab_pace.h) the frame reached the reference. */
  _Atomic uint64_t phase_last_ns;
  _Atomic uint64_t phase_early; /* arrived in the half period before its aim point */
  _Atomic uint64_t phase_samples;
  bool aimed; /* the frame in flight was paced to L->dc.target_dc_ns (the link statistics' phase) */
} ethercrab_link_t;

/* The source MAC EtherCrab sends with (crate ethercrab 0.7 src/lib.rs MAINDEVICE_ADDR). */
static const uint8_t CRAB_MASTER_MAC[6] = {0x10, 0x10, 0x10, 0x10, 0x10, 0x10};

/* Another master's frames on the chain (the tap's watch): fatal for the link. */
static autd3_err_t foreign_master_error(ethercrab_link_t *L, const char *ifname, const char *when) {
  return S->foreign_master_error("ethercrab", ifname, when, L->cap);
}

static autd3_err_t map_code(int32_t code) {
  switch (code) {
    case CRAB_OK: return AUTD3_OK;
    case CRAB_INVALID_OPTION: return AUTD3_E_INVALID_OPTION;
    case CRAB_NO_INTERFACE: return AUTD3_E_NO_INTERFACE;
    case CRAB_PERMISSION: return AUTD3_E_PERMISSION;
    case CRAB_NO_DEVICE: return AUTD3_E_NO_DEVICE;
    case CRAB_NOT_AUTD: return AUTD3_E_NOT_AUTD;
    case CRAB_COUNT_MISMATCH: return AUTD3_E_DEVICE_COUNT_MISMATCH;
    case CRAB_SYNC_TIMEOUT: return AUTD3_E_SYNC_TIMEOUT;
    case CRAB_STATE_TIMEOUT: return AUTD3_E_STATE_TIMEOUT;
    case CRAB_IO: return AUTD3_E_IO;
    case CRAB_LINK: return AUTD3_E_LINK;
    case CRAB_VERSION: return AUTD3_E_VERSION;
    case CRAB_SECOND_MASTER: return AUTD3_E_SECOND_MASTER;
    case CRAB_NOT_BUILT: return AUTD3_E_NOT_BUILT;
    default: return AUTD3_E_INTERNAL;
  }
}

/* Bus thread: when to send next (crab_pace.c: on the aim points of the DC
 * grid, through a filtered host<->DC offset, one image per SYNC0 edge). */
static void pace(ethercrab_link_t *L, uint64_t t0, uint64_t dc_ns) {
  uint64_t send = crab_pace_next(&L->dc, t0, dc_ns, S->now_ns());
  L->aimed = send != 0; /* the next frame aims at L->dc.target_dc_ns */
  S->pacer_anchor(&L->pace, send);
}

/* Bus thread: sleep (absolute deadline) until the next DC-aligned send.
 * pace() picks the send time in DC time, always a slot still ahead; the
 * shared pacer sleeps to it and counts a late wake-up by the one policy. */
static void crab_sleep(ethercrab_link_t *L) { (void)S->pacer_wait(&L->pace); }

/* Bus thread, optional pacing step: sleep now so that the caller stages its
 * tx right before the exchange; the cycle() that follows sends at once. */
static autd3_err_t crab_wait_next_cycle(struct autd3_link *l) {
  ethercrab_link_t *L = (ethercrab_link_t *)l;
  crab_sleep(L);
  L->waited = true;
  return AUTD3_OK;
}

/* Bus thread. The shim does one exchange (all groups in flight); the pacing
 * is here, as an absolute-deadline sleep on the SYNC0 grid computed by pace()
 * from the DC time of the reply. No allocation, no lock. */
static autd3_err_t crab_cycle(struct autd3_link *l, const uint8_t *tx, uint8_t *rx, bool *rx_valid) {
  ethercrab_link_t *L = (ethercrab_link_t *)l;
  if (tx == NULL || rx == NULL || rx_valid == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "ethercrab: cycle: NULL buffer");
  *rx_valid = false;
  if (S->tap_foreign(L->cap, NULL) != 0) return foreign_master_error(L, L->ifname, "mid-run");
  if (!L->waited) crab_sleep(L);
  L->waited = false;
  crab_cycle_out_t out;
  memset(&out, 0, sizeof out);
  uint64_t t0 = S->now_ns();
  int32_t rc = autd3crab_cycle(L->crab, tx, rx, &out, L->cycle_msg, sizeof L->cycle_msg);
  uint64_t dt = S->now_ns() - t0;
  autd3_link_report_exchange(l, dt);
  atomic_store_explicit(&L->exchange_last_ns, dt, memory_order_relaxed);
  if (dt > atomic_load_explicit(&L->exchange_max_ns, memory_order_relaxed))
    atomic_store_explicit(&L->exchange_max_ns, dt, memory_order_relaxed);
  if (rc == CRAB_OK && S->tap_foreign(L->cap, NULL) != 0) { /* these inputs may be the other master's doing */
    autd3_link_count_cycle(l, false, false);
    return foreign_master_error(L, L->ifname, "mid-run");
  }
  if (rc == CRAB_OK) {
    *rx_valid = out.rx_valid != 0;
    atomic_store_explicit(&L->last_wkc, out.working_counter, memory_order_relaxed);
    uint64_t phase = crab_pace_phase(&L->dc, out.dc_system_time_ns);
    atomic_store_explicit(&L->phase_last_ns, phase, memory_order_relaxed);
    atomic_fetch_add_explicit(&L->phase_samples, 1, memory_order_relaxed);
    if (phase >= L->period_ns / 2) atomic_fetch_add_explicit(&L->phase_early, 1, memory_order_relaxed);
    if (out.dc_system_time_ns != 0) autd3_link_report_dc_time(l, t0 + dt / 2, out.dc_system_time_ns);
    if (L->aimed && out.dc_system_time_ns != 0) { /* against its aim; SYNC0 edges at multiples of the period */
      uint64_t aim = L->dc.target_dc_ns, early = aim % L->period_ns;
      autd3_link_report_phase(l, (int64_t)(out.dc_system_time_ns - aim), early, L->period_ns - early);
    }
    pace(L, t0, out.dc_system_time_ns);
    autd3_link_count_cycle(l, *rx_valid, out.lost != 0);
    if (!*rx_valid) { /* whose inputs this cycle still carries (a group's frame lost or a device missing) */
      bool dv[AUTD3_MAX_DEVICES];
      for (uint16_t d = 0; d < l->num_devices; d++) dv[d] = out.dev_valid[d] != 0;
      autd3_link_report_inputs(l, dv);
    }
    return AUTD3_OK;
  }
  if (rc == CRAB_LOST) {
    /* No reply (PDU timeout) or a working-counter error: the frame is lost.
     * Keep the grid: the next frame goes at the next aim point. */
    atomic_store_explicit(&L->last_wkc, 0, memory_order_relaxed);
    pace(L, t0, 0);
    autd3_link_count_cycle(l, false, true);
    return AUTD3_OK;
  }
  return autd3_set_error(map_code(rc), "%s", L->cycle_msg[0] ? L->cycle_msg : "ethercrab: bus cycle failed");
}

/* ---- the OP wait: the one every EtherCAT link shares (services ecat_bringup) on the shim ---- */

typedef struct crab_bringup {
  ethercrab_link_t *L;
  uint8_t *tx, *rx;  /* zero outputs, inputs ignored (n devices each) */
  uint64_t next_ns;  /* the next exchange's send point (0: at once) */
} crab_bringup_t;

/* One exchange, then the wait EtherCrab computes to the next SYNC0 edge +
 * shift (its own pacing rule, as the shim's bring-up always paced). The
 * working counter is learned: a good cycle's is the one that holds. */
static autd3_err_t bu_exchange(void *c, autd3_link_ecat_cycle_t *out) {
  crab_bringup_t *b = c;
  if (b->next_ns != 0) S->sleep_until_ns(b->next_ns, 0);
  crab_cycle_out_t co;
  memset(&co, 0, sizeof co);
  char msg[MSG_CAP] = "";
  uint64_t t0 = S->now_ns();
  int32_t rc = autd3crab_cycle(b->L->crab, b->tx, b->rx, &co, msg, sizeof msg);
  if (rc != CRAB_OK && rc != CRAB_LOST) return autd3_set_error(map_code(rc), "%s", msg[0] ? msg : "ethercrab: bus cycle failed");
  bool lost = rc == CRAB_LOST || co.lost;
  b->next_ns = rc == CRAB_OK ? t0 + co.next_cycle_wait_ns : 0;
  *out = (autd3_link_ecat_cycle_t){.wkc = co.working_counter, .wkc_ok = !lost, .lost = lost, .all_op = co.all_op != 0};
  return AUTD3_OK;
}

static autd3_err_t bu_request_op(void *c) {
  char msg[MSG_CAP] = "";
  int32_t rc = autd3crab_request_op(((crab_bringup_t *)c)->L->crab, msg, sizeof msg);
  return rc == CRAB_OK ? AUTD3_OK : autd3_set_error(map_code(rc), "%s", msg[0] ? msg : "ethercrab: requesting OP failed");
}

/* AL status (0x0130) and AL status code (0x0134) of every device, one read each. */
static autd3_err_t bu_read_states(void *c, uint16_t *al, uint16_t *code, bool *answered) {
  ethercrab_link_t *L = ((crab_bringup_t *)c)->L;
  for (uint16_t d = 0; d < L->base.num_devices; d++) {
    uint8_t b[6] = {0};
    uint16_t w = 0;
    char msg[MSG_CAP] = "";
    int32_t rc = autd3crab_register(L->crab, d, false, false, REG_ALSTAT, b, sizeof b, &w, msg, sizeof msg);
    if (rc != CRAB_OK) return autd3_set_error(map_code(rc), "%s", msg[0] ? msg : "ethercrab: reading AL status failed");
    al[d] = (uint16_t)(b[0] | (b[1] << 8)), code[d] = (uint16_t)(b[4] | (b[5] << 8)), answered[d] = w != 0;
  }
  return AUTD3_OK;
}

static autd3_err_t bu_write_control(void *c, uint16_t dev, uint16_t value) {
  uint8_t b[2] = {(uint8_t)value, (uint8_t)(value >> 8)};
  uint16_t w = 0;
  char msg[MSG_CAP] = "";
  int32_t rc = autd3crab_register(((crab_bringup_t *)c)->L->crab, dev, false, true, REG_ALCTL, b, sizeof b, &w, msg, sizeof msg);
  return rc == CRAB_OK ? AUTD3_OK : autd3_set_error(map_code(rc), "%s", msg[0] ? msg : "ethercrab: writing AL control failed");
}

/* Warm-up, OP request, OP with a stable working counter; then the shim
 * judges every cycle against that counter. */
static autd3_err_t wait_for_op(ethercrab_link_t *L, const autd3_ethercat_option_t *e, const char *ifname) {
  uint16_t n = L->base.num_devices;
  crab_bringup_t b = {L, calloc(n, AUTD3_TX_FRAME_BYTES), calloc(n, AUTD3_RX_FRAME_BYTES), 0};
  autd3_err_t err = AUTD3_OK;
  if (b.tx == NULL || b.rx == NULL) err = autd3_set_error(AUTD3_E_NOMEM, "ethercrab: out of memory");
  const autd3_link_ecat_bringup_ops_t ops = {&b, bu_exchange, bu_request_op, bu_read_states, bu_write_control};
  const autd3_link_ecat_bringup_config_t cfg = {sizeof cfg, n, AUTD3_LINK_ECAT_WARMUP_CYCLES, e->op_wait_timeout_ms, "ethercrab",
                                                ifname};
  uint16_t wkc = 0;
  if (err == AUTD3_OK && (err = S->ecat_bringup(&ops, &cfg, &wkc)) == AUTD3_OK) {
    autd3crab_set_expected_wkc(L->crab, wkc);
    L->expected_wkc = wkc;
  }
  free(b.tx);
  free(b.rx);
  return err;
}

/* ---- the state checker: libautd3's EtherCAT recovery on the shim's register access ----
 * Every step (state machine, re-addressing, SM/FMMU restore as read at open,
 * DC offset and SYNC0 re-alignment) is the generic one of src/ecat/recovery.h. */

static autd3_err_t rec_access(void *c, uint16_t dev, bool pos, bool write, uint16_t reg, void *buf, uint16_t len, uint16_t *wkc) {
  ethercrab_link_t *L = c;
  char msg[MSG_CAP] = "";
  int32_t rc = autd3crab_register(L->crab, dev, pos, write, reg, buf, len, wkc, msg, sizeof msg);
  if (rc != CRAB_OK) return autd3_set_error(map_code(rc), "%s", msg[0] ? msg : "ethercrab: register access failed");
  return AUTD3_OK;
}
static autd3_err_t rec_read(void *c, uint16_t dev, bool pos, uint16_t reg, void *buf, uint16_t len, uint16_t *wkc) {
  return rec_access(c, dev, pos, false, reg, buf, len, wkc);
}
static autd3_err_t rec_write(void *c, uint16_t dev, bool pos, uint16_t reg, const void *buf, uint16_t len, uint16_t *wkc) {
  uint8_t data[1500]; /* the shim takes one mutable buffer for both directions */
  if (len > sizeof data) return autd3_set_error(AUTD3_E_INTERNAL, "ethercrab: a %u-byte register write", len);
  memcpy(data, buf, len);
  return rec_access(c, dev, pos, true, reg, data, len, wkc);
}

static autd3_err_t recovery_create(ethercrab_link_t *L, uint32_t state_timeout_ms) {
  uint16_t stations[AUTD3_MAX_DEVICES];
  for (uint16_t d = 0; d < L->base.num_devices; d++) stations[d] = autd3crab_station(L->crab, d);
  const autd3_link_ecat_ops_t ops = {.ctx = L, .read = rec_read, .write = rec_write};
  const autd3_link_ecat_recovery_config_t cfg = {sizeof cfg, state_timeout_ms, stations};
  return S->ecat_recovery_create(&L->base, &ops, &cfg, &L->rec);
}

/* Any thread, concurrently with the bus thread (EtherCrab's MainDevice is
 * shared; the check uses its own PDUs). Blocks for a few PDU round trips. */
static autd3_err_t crab_check_state(struct autd3_link *l, autd3_link_status_t *out) {
  return S->ecat_recovery_check(((ethercrab_link_t *)l)->rec, out);
}

static void crab_close(struct autd3_link *l) {
  ethercrab_link_t *L = (ethercrab_link_t *)l;
  S->ecat_recovery_free(L->rec);
  autd3crab_close(L->crab);         /* SYNC0 off, INIT, tx/rx thread joined */
  S->tap_stop(L->cap); /* writes the INIT frames still queued */
  S->master_guard_release(L->guard); /* after the last frame */
  free(L);
}

/* Open: on each adapter the shim is about to open, before EtherCrab's first
 * frame (discovery): one master per chain (the interface's lock and the
 * listen for a master already cycling, nic/master_guard.h), then the tap for
 * capture_path. */
typedef struct crab_adapter_ctx {
  const char *path;
  int rt_priority, rt_cpu; /* the tap thread is one of the link's own threads */
  autd3_link_tap_t *tap;
  autd3_link_master_guard_t *guard;
} crab_adapter_ctx_t;

static int32_t crab_code(autd3_err_t e) {
  switch (e) {
    case AUTD3_E_SECOND_MASTER: return CRAB_SECOND_MASTER;
    case AUTD3_E_PERMISSION: return CRAB_PERMISSION;
    case AUTD3_E_NO_INTERFACE: return CRAB_NO_INTERFACE;
    default: return CRAB_IO;
  }
}

static int32_t crab_on_adapter(void *user, const char *ifname, char *msg, size_t cap) {
  crab_adapter_ctx_t *c = user;
  S->tap_stop(c->tap); /* "auto": the previous candidate was not it */
  c->tap = NULL;
  S->master_guard_release(c->guard);
  c->guard = NULL;
  autd3_err_t e = S->master_guard_take(ifname, "ethercrab", &c->guard);
  if (e != AUTD3_OK) {
    snprintf(msg, cap, "%s", autd3_last_error());
    return crab_code(e);
  }
  /* the watch for a master that starts after the listen (and the capture) */
  e = S->tap_start(ifname, c->path, CRAB_MASTER_MAC, c->rt_priority, c->rt_cpu, &c->tap);
  if (e == AUTD3_OK) return CRAB_OK;
  snprintf(msg, cap, "ethercrab: capture on \"%s\": %s", ifname, autd3_last_error());
  return crab_code(e);
}

/* The shim's tx/rx thread: the services' RT policy, the same as every link thread's. */
static int32_t crab_apply_rt(int32_t priority, int32_t cpu, char *msg, size_t cap) {
  if (S->thread_set_rt(priority, cpu) == AUTD3_OK) return CRAB_OK;
  snprintf(msg, cap, "%s", autd3_last_error());
  return CRAB_PERMISSION;
}

/* Discovery: the same AUTD3 identity check and message as echocat and SOEM. */
static int32_t crab_check_identity(const char *ifname, uint16_t position, uint32_t vendor, uint32_t product,
                                   const char *name, char *msg, size_t cap) {
  if (S->ecat_check_identity("ethercrab", ifname, position, vendor, product, name) == AUTD3_OK) return CRAB_OK;
  snprintf(msg, cap, "%s", autd3_last_error());
  return CRAB_NOT_AUTD;
}

static size_t crab_diagnostics(struct autd3_link *l, char *buf, size_t cap) {
  ethercrab_link_t *L = (ethercrab_link_t *)l;
  int n = snprintf(buf, cap,
                   "interface : %s\n"
                   "expected wkc : %u\n"
                   "last wkc : %u\n"
                   "late wake-ups : %llu\n"
                   "skipped cycles : %llu\n"
                   "exchange last : %.3f us\n"
                   "exchange max : %.3f us\n"
                   "dc aim : SYNC0 + %.3f us (shift + time for the devices to publish)\n"
                   "dc phase last : %.3f us after the aim\n"
                   "dc phase early : %llu of %llu frames reached the devices in the half period before the aim\n"
                   "edge skips : %llu (slots passed over: the frame before was taken at their edge)\n"
                   "ignored replies : %llu\n"
                   "foreign master frames : %llu\n",
                   L->ifname, (unsigned)L->expected_wkc, (unsigned)atomic_load(&L->last_wkc),
                   (unsigned long long)atomic_load(&L->pace.late),
                   (unsigned long long)atomic_load(&L->pace.skipped), (double)atomic_load(&L->exchange_last_ns) / 1e3,
                   (double)atomic_load(&L->exchange_max_ns) / 1e3, (double)L->dc.aim_mod_ns / 1e3,
                   (double)atomic_load(&L->phase_last_ns) / 1e3, (unsigned long long)atomic_load(&L->phase_early),
                   (unsigned long long)atomic_load(&L->phase_samples),
                   (unsigned long long)atomic_load(&L->dc.edge_skips),
                   /* late replies to timed-out PDUs etc., dropped by the shim's tx/rx driver */
                   (unsigned long long)autd3crab_ignored_replies(L->crab),
                   (unsigned long long)S->tap_foreign(L->cap, NULL));
  if (n < 0) return 0;
  return (size_t)n < cap ? (size_t)n : cap - 1;
}

/* Open failed after the shim's open: close it all, keeping err's message. */
static autd3_err_t close_failed(ethercrab_link_t *L, autd3_err_t err) {
  autd3__error_saved_t keep; /* the failure's message survives the close */
  autd3__error_save(&keep);
  crab_close(&L->base);
  return autd3__error_restore(&keep, err);
}

static const autd3_link_vtable_t crab_vtable = {
    .cycle = crab_cycle,
    .check_state = crab_check_state,
    .close = crab_close,
    .diagnostics = crab_diagnostics,
    .wait_next_cycle = crab_wait_next_cycle,
};

static autd3_err_t crab_open(const autd3_link_option_t *option, const autd3_geometry_t *geometry, struct autd3_link **out) {
  const autd3_ethercrab_option_t *o = &option->u.ethercrab;
  const autd3_ethercat_option_t *e = &o->ethercat;
  autd3_err_t err = autd3_ethercat_option_validate(e);
  if (err != AUTD3_OK) return err;
  if (o->pdu_timeout_ms == 0) return autd3_set_error(AUTD3_E_INVALID_OPTION, "ethercrab: pdu_timeout_ms must be > 0");
  /* EtherCrab computes the next send from the SYNC0 grid, so the host period
   * must be a whole number of SYNC0 periods. */
  if (e->send_cycle_ns != 0 && e->send_cycle_ns % e->sync0_period_ns != 0)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "ethercrab: send_cycle_ns = %u must be 0 or a multiple of sync0_period_ns = %u",
                           e->send_cycle_ns, e->sync0_period_ns);
  uint32_t abi = autd3crab_abi_version();
  if (abi != CRAB_ABI_VERSION)
    return autd3_set_error(AUTD3_E_VERSION, "ethercrab: Rust shim ABI version %u, C glue expects %u (stale build?)", abi,
                           CRAB_ABI_VERSION);

  size_t n = autd3_geometry_num_devices(geometry);
  ethercrab_link_t *L = calloc(1, sizeof *L);
  if (L == NULL) return autd3_set_error(AUTD3_E_NOMEM, "ethercrab: out of memory");
  crab_open_args_t args = {
      .abi_version = CRAB_ABI_VERSION,
      .interface = e->interface,
      .num_devices = (uint16_t)n,
      .sync0_period_ns = e->sync0_period_ns,
      .sync0_shift_ns = e->sync0_shift_ns,
      .sync_tolerance_ns = e->sync_tolerance_ns,
      .sync_timeout_ms = e->sync_timeout_ms,
      .state_timeout_ms = e->state_timeout_ms,
      .pdu_timeout_ms = o->pdu_timeout_ms,
      .rt_priority = e->rt_priority,
      .rt_cpu = e->rt_cpu,
  };
  crab_adapter_ctx_t ad = {e->capture_path, e->rt_priority, e->rt_cpu, NULL, NULL};
  args.on_adapter = crab_on_adapter;
  args.on_adapter_user = &ad;
  autd3_link_init(&L->base, &crab_vtable, AUTD3_LINK_ETHERCRAB, (uint16_t)n);
  autd3_link_set_measured(&L->base, AUTD3_LINK_MEASURES_LOST | AUTD3_LINK_MEASURES_EXCHANGE | AUTD3_LINK_MEASURES_PHASE |
                                        AUTD3_LINK_MEASURES_DEVICE_STALE | AUTD3_LINK_MEASURES_DC_TIME);
  args.check_identity = crab_check_identity;
  args.apply_rt = crab_apply_rt;
  crab_open_info_t info;
  memset(&info, 0, sizeof info);
  char msg[MSG_CAP] = "";
  int32_t rc = autd3crab_open(&args, &L->crab, &info, msg, sizeof msg);
  if (rc != CRAB_OK) {
    S->tap_stop(ad.tap);
    S->master_guard_release(ad.guard);
    free(L);
    return autd3_set_error(map_code(rc), "%s", msg[0] ? msg : "ethercrab: open failed");
  }
  L->cap = ad.tap;
  L->guard = ad.guard;
  /* every device in SAFE-OP: the OP wait, then (every device in OP) what the recovery restores is read */
  if ((err = wait_for_op(L, e, info.interface)) != AUTD3_OK || (err = recovery_create(L, e->state_timeout_ms)) != AUTD3_OK)
    return close_failed(L, err);
  if (S->tap_foreign(L->cap, NULL) != 0) /* another master's frames during the bring-up */
    return close_failed(L, foreign_master_error(L, info.interface, "during open"));
  L->period_ns = e->sync0_period_ns;
  L->send_period_ns = e->send_cycle_ns != 0 ? e->send_cycle_ns : e->sync0_period_ns;
  S->pacer_init(&L->pace, L->send_period_ns, 0);
  crab_pace_init(&L->dc, e->sync0_period_ns, L->send_period_ns, e->sync0_shift_ns);
  memcpy(L->ifname, info.interface, sizeof L->ifname);
  L->ifname[sizeof L->ifname - 1] = 0;
  *out = &L->base;
  return AUTD3_OK;
}

void autd3_link_ethercrab_register(void) {
  if (S == NULL) S = autd3_link_services(AUTD3_LINK_SERVICES_VERSION);
  if (S != NULL) (void)autd3_link_register(AUTD3_LINK_ETHERCRAB, crab_open); /* else opening it reports NOT_BUILT */
}

/* With GCC/Clang (MinGW included) linking this object is enough to make the
 * link available; elsewhere (MSVC) the application calls
 * autd3_link_ethercrab_register(), the explicit contract. */
#if defined(__GNUC__)
__attribute__((constructor)) static void crab_register_at_load(void) { autd3_link_ethercrab_register(); }
#endif
