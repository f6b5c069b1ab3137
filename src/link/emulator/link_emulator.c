/*
 * The in-process emulator link: N device models (src/emulation/device) driven by a real
 * periodic timer, so a client runs end to end without hardware or privileges.
 *
 * Pacing: exchanges sit on a grid of absolute deadlines start + k·cycle_ns
 * (the shared pacer, link/pacer.h), and each device's SYNC0 edges lie on the same grid.
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
#include "core/struct_size.h"
#include "emulation/device/firmware.h"
#include "link/link_internal.h"
#include "link/pacer.h"
#include "platform/platform.h"

#define MAX_CYCLE_NS 1000000000u /* 1 s: longer cycles are surely a units mistake */

typedef struct emu_counters {
  _Atomic uint64_t v[7]; /* in autd3_device_counters_t field order */
} emu_counters_t;

typedef struct emu_slot {
  autd3_fw_dev_t fw; /* the device, its firmware (option `firmware`) and its execution log
                        (bus thread pushes, autd3_emulator_log_drain drains) */
  autd3_device_fault_t pending; /* guarded by emu_link.mu */
  bool has_pending;             /* guarded by emu_link.mu */
  bool power_cycle_pending;     /* guarded by emu_link.mu (autd3_emulator_power_cycle) */
  emu_counters_t counters;
  uint64_t boots;         /* power cycles applied (bus thread): part of the output generation */
  uint64_t published_gen; /* generation of the last copy published (bus thread only) */
} emu_slot_t;

/* Published output states (autd3_emulator_outputs): a reference-counted
 * object of its own, so a test can read what the devices emit after the
 * client (and with it the link) closed. The bus thread copies a device's
 * state into `out` under `mu` (try-lock only) whenever its generation
 * (frames executed + power cycles) moved; a reader waits until the copy is
 * of the live generation. The link's close publishes the last state. */
typedef struct emu_out {
  uint64_t gen;              /* generation of `state`; guarded by mu */
  autd3_output_state_t state; /* guarded by mu */
  _Atomic uint64_t live_gen; /* generation of the device now */
} emu_out_t;

struct autd3_emulator_outputs {
  _Atomic uint32_t refs;
  autd3__mutex_t mu;
  uint32_t cycle_ns;
  uint16_t n;
  emu_out_t dev[];
};

typedef struct emu_link {
  struct autd3_link hdr; /* must be first */
  uint32_t cycle_ns;
  autd3_timing_model_t timing;
  uint64_t grid_start_ns;
  autd3_link_pacer_t pace; /* the shared pacer on the grid from grid_start_ns; its counters are the diagnostics */
  autd3__mutex_t mu;               /* pending faults only */
  _Atomic bool any_pending;        /* fast path: skip the trylock when nothing was injected */
  autd3_emulator_outputs_t *outputs; /* one reference held by the link */
  bool armed;       /* emu_wait() already slept to armed_t */
  uint64_t armed_t;
  emu_slot_t slots[];
} emu_link_t;

static void publish_counters(emu_slot_t *s) {
  const autd3_device_counters_t *c = autd3_fw_dev_counters(&s->fw);
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
      autd3_fw_dev_power_cycle(&s->fw, t);
      s->boots++;
      autd3_link_report_device_reset(&l->hdr, i);
      s->power_cycle_pending = false;
    }
    if (!s->has_pending) continue;
    autd3_fw_dev_set_fault(&s->fw, &s->pending, t);
    s->has_pending = false;
  }
  autd3__mutex_unlock(&l->mu);
}

/* After an exchange: publish device outputs whose generation moved. A busy
 * mutex (a reader copying) only delays the copy to a later cycle, unless
 * `wait` (the link's close, not the cycle path). */
static void publish_outputs(emu_link_t *l, bool wait) {
  autd3_emulator_outputs_t *o = l->outputs;
  bool locked = false;
  for (uint16_t i = 0; i < l->hdr.num_devices; i++) {
    emu_slot_t *s = &l->slots[i];
    emu_out_t *e = &o->dev[i];
    uint64_t gen = autd3_fw_dev_counters(&s->fw)->executed + s->boots;
    if (!wait && gen == s->published_gen) continue;
    if (!locked) {
      if (wait) {
        autd3__mutex_lock(&o->mu);
      } else if (!autd3__mutex_trylock(&o->mu)) {
        /* The copy stays old (retried next cycle); live_gen still moves, so
         * readers wait for that copy instead of taking the old one. */
        atomic_store_explicit(&e->live_gen, gen, memory_order_release);
        continue;
      }
      locked = true;
    }
    autd3_fw_dev_output_state(&s->fw, &e->state);
    e->gen = gen;
    s->published_gen = gen;
    atomic_store_explicit(&e->live_gen, gen, memory_order_release);
  }
  if (locked) autd3__mutex_unlock(&o->mu);
}

static void outputs_release(autd3_emulator_outputs_t *o) {
  if (o == NULL) return;
  if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) != 1) return;
  autd3__mutex_destroy(&o->mu);
  free(o);
}

/* Pick the next exchange's grid point and sleep until it: the shared pacer,
 * whose lateness policy is the emulator's own (a caller late by a cycle or
 * more takes the latest grid point at once; the missed ones are skipped,
 * never burst through). */
static uint64_t sleep_to_next_point(emu_link_t *l) { return autd3__pacer_wait(&l->pace); }

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
  uint64_t t_exchange = autd3__now_ns(); /* the exchange: every device model takes its image and answers */
  bool valid = true;
  for (uint16_t i = 0; i < l->hdr.num_devices; i++) {
    autd3_fw_dev_t *d = &l->slots[i].fw;
    autd3_fw_dev_write(d, tx + (size_t)i * AUTD3_TX_FRAME_BYTES, t);
    autd3_fw_dev_read(d, t, rx + (size_t)i * AUTD3_RX_FRAME_BYTES);
    if (autd3_fw_dev_consume_rx_invalid(d)) valid = false;
    publish_counters(&l->slots[i]);
  }
  autd3_link_report_exchange(link, autd3__now_ns() - t_exchange);
  publish_outputs(l, false);
  *rx_valid = valid;
  autd3_link_count_cycle(link, valid, false);
  return AUTD3_OK;
}

/* The emulated ESCs never leave OP: a frozen device models a hung firmware
 * (the EtherCAT slave controller keeps answering), so the client sees
 * Timeout errors, not a lost slave. */
static autd3_err_t emu_check_state(struct autd3_link *link, autd3_link_status_t *out) {
  for (uint16_t d = 0; d < link->num_devices; d++) out->state[d] = AUTD3_DEVICE_OP;
  out->measured = AUTD3_LINK_STATUS_STATES | AUTD3_LINK_STATUS_RECOVERIES;
  return AUTD3_OK;
}

static void emu_close(struct autd3_link *link) {
  emu_link_t *l = (emu_link_t *)link;
  publish_outputs(l, true); /* the last state, for readers that outlive the link */
  outputs_release(l->outputs);
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
                   (unsigned long long)atomic_load(&l->pace.late), (unsigned long long)atomic_load(&l->pace.max_late_ns),
                   (unsigned long long)atomic_load(&l->pace.skipped));
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
  if (eo->firmware > AUTD3_EMU_FIRMWARE_MIXED)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "emulator: firmware = %u: must be 0 (new), 1 (v12) or 2 (mixed)",
                           eo->firmware);
  size_t n = autd3_geometry_num_devices(g);
  if (n < 1 || n > AUTD3_MAX_DEVICES)
    return autd3_set_error(AUTD3_E_DEVICE_COUNT_RANGE, "emulator: geometry has %zu devices; must be 1..%d", n, AUTD3_MAX_DEVICES);
  emu_link_t *l = calloc(1, sizeof *l + n * sizeof(emu_slot_t));
  autd3_emulator_outputs_t *outs = calloc(1, sizeof *outs + n * sizeof(emu_out_t));
  if (l == NULL || outs == NULL) {
    free(l);
    free(outs);
    return autd3_set_error(AUTD3_E_NOMEM, "emulator: out of memory for %zu devices", n);
  }
  if (autd3__mutex_init(&l->mu) != AUTD3_OK) {
    free(l);
    free(outs);
    return AUTD3_E_INTERNAL; /* the seam set the message */
  }
  if (autd3__mutex_init(&outs->mu) != AUTD3_OK) {
    autd3__mutex_destroy(&l->mu);
    free(l);
    free(outs);
    return AUTD3_E_INTERNAL; /* the seam set the message */
  }
  atomic_init(&outs->refs, 1);
  outs->cycle_ns = eo->cycle_ns;
  outs->n = (uint16_t)n;
  l->outputs = outs;
  autd3_link_init(&l->hdr, &emu_vtable, AUTD3_LINK_EMULATOR, (uint16_t)n);
  /* no wire: a frame is never lost (0 is the truth); the exchange is the device models' own time */
  autd3_link_set_measured(&l->hdr, AUTD3_LINK_MEASURES_LOST | AUTD3_LINK_MEASURES_EXCHANGE);
  l->cycle_ns = eo->cycle_ns;
  l->timing = eo->timing;
  l->grid_start_ns = autd3__now_ns() + eo->cycle_ns;
  autd3__pacer_init(&l->pace, eo->cycle_ns, 0);
  autd3__pacer_anchor(&l->pace, l->grid_start_ns);
  for (size_t i = 0; i < n; i++) {
    autd3_fw_dev_t *d = &l->slots[i].fw;
    autd3_fw_dev_init(d, eo->firmware, (uint16_t)i, &eo->version, &eo->timing);
    /* Not EtherCAT: any cycle is allowed, so Synchronize accepts any SYNC0 period. */
    d->dev.sync0_any_period = true;
    autd3_fw_dev_set_sync0(d, l->grid_start_ns, eo->cycle_ns);
    autd3_fw_dev_output_state(d, &outs->dev[i].state); /* generation 0: the boot state */
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

autd3_err_t autd3_emulator_counters_sized(struct autd3_link *link, uint16_t dev, autd3_device_counters_t *dst, size_t size) {
  emu_slot_t *s = NULL;
  autd3_err_t err = emu_slot(link, dev, "autd3_emulator_counters", &s);
  if (err != AUTD3_OK) return err;
  if (dst == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_emulator_counters: out is NULL");
  uint64_t v[7];
  for (int i = 0; i < 7; i++) v[i] = atomic_load_explicit(&s->counters.v[i], memory_order_relaxed);
  autd3_device_counters_t c, *out = &c;
  out->received = v[0];
  out->executed = v[1];
  out->deduplicated = v[2];
  out->dropped = v[3];
  out->seq_mismatch = v[4];
  out->resets = v[5];
  out->errors = v[6];
  autd3__out_copy(dst, size, &c, sizeof c);
  return AUTD3_OK;
}

autd3_err_t(autd3_emulator_counters)(struct autd3_link *link, uint16_t dev, autd3_device_counters_t *out) {
  return autd3_emulator_counters_sized(link, dev, out, AUTD3__SIZE_THROUGH(autd3_device_counters_t, errors));
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

/* ---- execution log ---- */

autd3_err_t autd3_emulator_log_drain(struct autd3_link *link, uint16_t dev, autd3_exec_entry_t *out, size_t cap,
                                     size_t *n, uint64_t *dropped) {
  emu_slot_t *s = NULL;
  autd3_err_t err = emu_slot(link, dev, "autd3_emulator_log_drain", &s);
  if (err != AUTD3_OK) return err;
  if (n == NULL || (out == NULL && cap > 0))
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_emulator_log_drain: out or n is NULL");
  *n = autd3_exec_log_drain(&s->fw.log, out, cap, dropped);
  return AUTD3_OK;
}

autd3_err_t autd3_emulator_outputs(struct autd3_link *link, autd3_emulator_outputs_t **out) {
  if (out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_emulator_outputs: out is NULL");
  *out = NULL;
  emu_slot_t *s = NULL;
  autd3_err_t err = emu_slot(link, 0, "autd3_emulator_outputs", &s);
  if (err != AUTD3_OK) return err;
  autd3_emulator_outputs_t *o = ((emu_link_t *)link)->outputs;
  atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
  *out = o;
  return AUTD3_OK;
}

void autd3_emulator_outputs_release(autd3_emulator_outputs_t *o) { outputs_release(o); }

autd3_err_t autd3_emulator_outputs_read(autd3_emulator_outputs_t *o, uint16_t dev, autd3_output_state_t *out) {
  if (o == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_emulator_outputs_read: outputs is NULL");
  if (out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_emulator_outputs_read: out is NULL");
  if (dev >= o->n)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_emulator_outputs_read: device %u out of range (%u devices)",
                           (unsigned)dev, (unsigned)o->n);
  emu_out_t *e = &o->dev[dev];
  /* A stale copy is refreshed at the bus thread's next cycle (or by the
   * link's close): wait up to 1 s, then say so. */
  const uint64_t deadline = autd3__now_ns() + 1000000000ull;
  for (;;) {
    uint64_t live = atomic_load_explicit(&e->live_gen, memory_order_acquire);
    autd3__mutex_lock(&o->mu);
    bool fresh = e->gen == live;
    if (fresh) *out = e->state;
    autd3__mutex_unlock(&o->mu);
    if (fresh) return AUTD3_OK;
    uint64_t now = autd3__now_ns();
    if (now >= deadline)
      return autd3_set_error(AUTD3_E_TIMEOUT,
                             "autd3_emulator_outputs_read: device %u's state was not published within 1 s (is the bus thread running?)",
                             (unsigned)dev);
    autd3__sleep_until_ns(now + o->cycle_ns, 0);
  }
}

autd3_err_t autd3_emulator_output(struct autd3_link *link, uint16_t dev, autd3_output_state_t *out) {
  emu_slot_t *s = NULL;
  autd3_err_t err = emu_slot(link, dev, "autd3_emulator_output", &s);
  if (err != AUTD3_OK) return err;
  return autd3_emulator_outputs_read(((emu_link_t *)link)->outputs, dev, out);
}
