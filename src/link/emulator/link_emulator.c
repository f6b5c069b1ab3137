/*
 * The in-process emulator link: N device models (src/device) driven by a real
 * periodic timer, so a client runs end to end without hardware or privileges.
 *
 * Pacing: exchanges sit on a grid of absolute deadlines start + k·cycle_ns
 * (autd3__sleep_until_ns), and each device's SYNC0 edges lie on the same grid.
 * One cycle() is one exchange at its deadline T: device time is T itself (the
 * nominal grid instant, so the timing model is exact and independent of the
 * host's wake-up jitter); the edge at T runs first, then the frame arrives
 * (like SOEM/EtherCrab with sync0_shift 0, whose frame passes the slave just
 * after SYNC0), then the inputs are read in the same pass.
 * A caller late by a cycle or more does not burst through the missed
 * deadlines: the exchange takes the latest grid point at once and the missed
 * ones are skipped and counted (SYNC0 keeps its grid, as a DC clock would).
 *
 * Threads: cycle() runs on the caller's (bus) thread and owns the devices.
 * autd3_emulator_inject() hands faults over through a mutex that the bus
 * thread only ever *tries* (it never waits: a busy mutex defers the faults to
 * the next cycle); autd3_emulator_counters() reads per-device atomic copies
 * that the bus thread refreshes after each exchange. No allocation in cycle().
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "device/device.h"
#include "link/link_internal.h"
#include "platform/platform.h"

#define MAX_CYCLE_NS 1000000000u /* 1 s: longer cycles are surely a units mistake */

typedef struct emu_counters {
  _Atomic uint64_t v[7]; /* in autd3_device_counters_t field order */
} emu_counters_t;

typedef struct emu_slot {
  autd3_dev_t dev;
  autd3_device_fault_t pending; /* guarded by emu_link.mu */
  bool has_pending;             /* guarded by emu_link.mu */
  bool power_cycle_pending;     /* guarded by emu_link.mu (autd3_emulator_power_cycle) */
  emu_counters_t counters;
} emu_slot_t;

typedef struct emu_link {
  struct autd3_link hdr; /* must be first */
  uint32_t cycle_ns;
  autd3_timing_model_t timing;
  uint64_t grid_start_ns;
  uint64_t next_deadline_ns;
  autd3__mutex_t mu;               /* pending faults only */
  _Atomic bool any_pending;        /* fast path: skip the trylock when nothing was injected */
  _Atomic uint64_t late_cycles;    /* exchanges that started after their deadline */
  _Atomic uint64_t skipped_points; /* grid points skipped by resynchronisation */
  _Atomic uint64_t max_late_ns;
  bool armed;       /* emu_wait() already slept to armed_t */
  uint64_t armed_t;
  emu_slot_t slots[];
} emu_link_t;

static void publish_counters(emu_slot_t *s) {
  const autd3_device_counters_t *c = &s->dev.counters;
  const uint64_t v[7] = {c->received, c->executed, c->deduplicated, c->dropped, c->seq_mismatch, c->resets, c->errors};
  for (int i = 0; i < 7; i++) atomic_store_explicit(&s->counters.v[i], v[i], memory_order_relaxed);
}

static void apply_pending_faults(emu_link_t *l, uint64_t t) {
  if (!atomic_load_explicit(&l->any_pending, memory_order_acquire)) return;
  if (!autd3__mutex_trylock(&l->mu)) return; /* an injector holds it for a copy: next cycle */
  atomic_store_explicit(&l->any_pending, false, memory_order_relaxed);
  for (uint16_t i = 0; i < l->hdr.num_devices; i++) {
    emu_slot_t *s = &l->slots[i];
    if (s->power_cycle_pending) {
      /* Reported before this cycle's inputs are read, as link_driver.h asks:
       * the client must never take the rebooted device's 0xFF for an ack. */
      autd3_dev_power_cycle(&s->dev, t);
      autd3_link_report_device_reset(&l->hdr, i);
      s->power_cycle_pending = false;
    }
    if (!s->has_pending) continue;
    autd3_dev_set_fault(&s->dev, &s->pending, t);
    s->has_pending = false;
  }
  autd3__mutex_unlock(&l->mu);
}

/* Pick the next exchange's grid point and sleep until it. */
static uint64_t sleep_to_next_point(emu_link_t *l) {
  uint64_t t = l->next_deadline_ns;
  uint64_t now = autd3__now_ns();
  if (now >= t + l->cycle_ns) {
    /* Late by a cycle or more: this exchange takes the latest grid point
     * (now, late by less than a cycle) and the missed ones are skipped,
     * instead of bursting through them. */
    uint64_t nt = l->grid_start_ns + (now - l->grid_start_ns) / l->cycle_ns * l->cycle_ns;
    atomic_fetch_add_explicit(&l->skipped_points, (nt - t) / l->cycle_ns, memory_order_relaxed);
    t = nt;
  }
  if (now > t) {
    uint64_t late = now - t;
    atomic_fetch_add_explicit(&l->late_cycles, 1, memory_order_relaxed);
    if (late > atomic_load_explicit(&l->max_late_ns, memory_order_relaxed))
      atomic_store_explicit(&l->max_late_ns, late, memory_order_relaxed);
  }
  autd3__sleep_until_ns(t, 0);
  l->next_deadline_ns = t + l->cycle_ns;
  return t;
}

/* wait_next_cycle: sleep now, so the caller stages its tx after waking; the
 * cycle() that follows exchanges at the same grid point without sleeping. */
static autd3_err_t emu_wait(struct autd3_link *link) {
  emu_link_t *l = (emu_link_t *)link;
  if (!l->armed) {
    l->armed_t = sleep_to_next_point(l);
    l->armed = true;
  }
  return AUTD3_OK;
}

static autd3_err_t emu_cycle(struct autd3_link *link, const uint8_t *tx, uint8_t *rx, bool *rx_valid) {
  emu_link_t *l = (emu_link_t *)link;
  if (tx == NULL || rx == NULL || rx_valid == NULL)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "emulator: cycle with NULL tx, rx or rx_valid");
  uint64_t t = l->armed ? l->armed_t : sleep_to_next_point(l);
  l->armed = false;

  apply_pending_faults(l, t);
  bool valid = true;
  for (uint16_t i = 0; i < l->hdr.num_devices; i++) {
    autd3_dev_t *d = &l->slots[i].dev;
    autd3_dev_write(d, tx + (size_t)i * AUTD3_TX_FRAME_BYTES, t);
    autd3_dev_read(d, t, rx + (size_t)i * AUTD3_RX_FRAME_BYTES);
    if (autd3_dev_consume_rx_invalid(d)) valid = false;
    publish_counters(&l->slots[i]);
  }
  *rx_valid = valid;
  autd3_link_count_cycle(link, valid, false);
  return AUTD3_OK;
}

/* The emulated ESCs never leave OP: a frozen device models a hung firmware
 * (the EtherCAT slave controller keeps answering), so the client sees
 * Timeout errors, not a lost slave. */
static autd3_err_t emu_check_state(struct autd3_link *link, autd3_link_status_t *out) {
  for (uint16_t d = 0; d < link->num_devices; d++) out->state[d] = AUTD3_DEVICE_OP;
  return AUTD3_OK;
}

static void emu_close(struct autd3_link *link) {
  emu_link_t *l = (emu_link_t *)link;
  autd3__mutex_destroy(&l->mu);
  free(l);
}

static size_t emu_diagnostics(struct autd3_link *link, char *buf, size_t cap) {
  emu_link_t *l = (emu_link_t *)link;
  int n = snprintf(buf, cap,
                   "cycle_ns : %u\n"
                   "timing model : take=%s,fifo=%u,ll=%u,publish=%s\n"
                   "late exchanges : %llu\n"
                   "max lateness ns : %llu\n"
                   "skipped grid points : %llu\n",
                   l->cycle_ns, l->timing.take_on_sync0 ? "sync0" : "arrival", l->timing.fifo_latency_ns,
                   l->timing.ll_latency_ns, l->timing.publish_on_sync0 ? "sync0" : "now",
                   (unsigned long long)atomic_load(&l->late_cycles), (unsigned long long)atomic_load(&l->max_late_ns),
                   (unsigned long long)atomic_load(&l->skipped_points));
  if (n < 0) return 0;
  return (size_t)n < cap ? (size_t)n : cap - 1;
}

static const autd3_link_vtable_t emu_vtable = {
    .cycle = emu_cycle, .check_state = emu_check_state, .close = emu_close, .diagnostics = emu_diagnostics,
    .wait_next_cycle = emu_wait};

autd3_err_t autd3__link_open_emulator(const autd3_link_option_t *o, const autd3_geometry_t *g, struct autd3_link **out) {
  if (o == NULL || g == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "emulator: NULL argument");
  *out = NULL;
  if (o->kind != AUTD3_LINK_EMULATOR)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "emulator: option kind is %s, not emulator", autd3_link_kind_name(o->kind));
  const autd3_emulator_option_t *eo = &o->u.emulator;
  if (eo->cycle_ns == 0 || eo->cycle_ns > MAX_CYCLE_NS)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "emulator: cycle_ns = %u: must be 1..%u", eo->cycle_ns, MAX_CYCLE_NS);
  size_t n = autd3_geometry_num_devices(g);
  if (n < 1 || n > AUTD3_MAX_DEVICES)
    return autd3_set_error(AUTD3_E_DEVICE_COUNT_RANGE, "emulator: geometry has %zu devices; must be 1..%d", n, AUTD3_MAX_DEVICES);
  emu_link_t *l = calloc(1, sizeof *l + n * sizeof(emu_slot_t));
  if (l == NULL) return autd3_set_error(AUTD3_E_NOMEM, "emulator: out of memory for %zu devices", n);
  if (autd3__mutex_init(&l->mu) != AUTD3_OK) {
    free(l);
    return AUTD3_E_INTERNAL; /* the seam set the message */
  }
  autd3_link_init(&l->hdr, &emu_vtable, AUTD3_LINK_EMULATOR, (uint16_t)n);
  l->cycle_ns = eo->cycle_ns;
  l->timing = eo->timing;
  l->grid_start_ns = autd3__now_ns() + eo->cycle_ns;
  l->next_deadline_ns = l->grid_start_ns;
  for (size_t i = 0; i < n; i++) {
    autd3_dev_t *d = &l->slots[i].dev;
    autd3_dev_init(d, &eo->version, &eo->timing);
    /* Not EtherCAT: any cycle is allowed, so Synchronize accepts any SYNC0 period. */
    d->sync0_any_period = true;
    autd3_dev_set_sync0(d, l->grid_start_ns, eo->cycle_ns);
  }
  *out = &l->hdr;
  return AUTD3_OK;
}

static autd3_err_t emu_slot(struct autd3_link *link, uint16_t dev, const char *fn, emu_slot_t **out) {
  if (link == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: link is NULL", fn);
  if (link->kind != AUTD3_LINK_EMULATOR || link->vt != &emu_vtable)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: link is a %s link, not the in-process emulator", fn,
                           autd3_link_kind_name(link->kind));
  if (dev >= link->num_devices)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: device %u out of range (%u devices)", fn, (unsigned)dev,
                           (unsigned)link->num_devices);
  *out = &((emu_link_t *)link)->slots[dev];
  return AUTD3_OK;
}

autd3_err_t autd3_emulator_inject(struct autd3_link *link, uint16_t dev, const autd3_device_fault_t *fault) {
  emu_slot_t *s = NULL; /* set on AUTD3_OK; GCC -O3 cannot see that */
  autd3_err_t err = emu_slot(link, dev, "autd3_emulator_inject", &s);
  if (err != AUTD3_OK) return err;
  if (fault == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_emulator_inject: fault is NULL");
  emu_link_t *l = (emu_link_t *)link;
  autd3__mutex_lock(&l->mu);
  s->pending = *fault;
  s->has_pending = true;
  atomic_store_explicit(&l->any_pending, true, memory_order_release);
  autd3__mutex_unlock(&l->mu);
  return AUTD3_OK;
}

autd3_err_t autd3_emulator_counters(struct autd3_link *link, uint16_t dev, autd3_device_counters_t *out) {
  emu_slot_t *s = NULL;
  autd3_err_t err = emu_slot(link, dev, "autd3_emulator_counters", &s);
  if (err != AUTD3_OK) return err;
  if (out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_emulator_counters: out is NULL");
  uint64_t v[7];
  for (int i = 0; i < 7; i++) v[i] = atomic_load_explicit(&s->counters.v[i], memory_order_relaxed);
  out->received = v[0];
  out->executed = v[1];
  out->deduplicated = v[2];
  out->dropped = v[3];
  out->seq_mismatch = v[4];
  out->resets = v[5];
  out->errors = v[6];
  return AUTD3_OK;
}

/* Power-cycle (autd3_emulator_power_cycle): a separate request from the
 * faults of autd3_emulator_inject, applied first at the next cycle. */
autd3_err_t autd3_emulator_power_cycle(struct autd3_link *link, uint16_t dev) {
  emu_slot_t *s = NULL; /* set on AUTD3_OK; GCC -O3 cannot see that */
  autd3_err_t err = emu_slot(link, dev, "autd3_emulator_power_cycle", &s);
  if (err != AUTD3_OK) return err;
  emu_link_t *l = (emu_link_t *)link;
  autd3__mutex_lock(&l->mu);
  s->power_cycle_pending = true;
  atomic_store_explicit(&l->any_pending, true, memory_order_release);
  autd3__mutex_unlock(&l->mu);
  return AUTD3_OK;
}
