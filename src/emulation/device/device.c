/*
 * The AUTD3 device model (see device.h and docs/device-model.md).
 *
 * Protocol behaviour follows the new-generation firmware, shinolab/autd3-sdk
 * firmware/cpu/src/app.c (recv_ethercat, app_process_pending) and proto.c
 * (proto_handle_frame, dispatch); published as crate autd3-cpu-fw 0.9.0.
 *
 * Timing is an explicit model (docs/device-model.md): four kinds of event
 * run lazily, in time order, whenever the owner calls with a later now_ns:
 *   publish  at a SYNC0 edge: latch (ack, data) into the inputs (publish_on_sync0)
 *   isr_done inline processing (Reset, low-latency mode) finished
 *   fifo_done the main loop finished the FIFO head
 *   take     the port layer hands the pending output image to recv_ethercat
 * Ties at one instant run in that order, so an edge first publishes what was
 * processed before it, then takes the new image.
 */
#include <string.h>

#include "autd3/link_driver.h" /* autd3_set_error */
#include "emulation/device/device.h"
#include "emulation/device/exec_log.h"

#define NEVER UINT64_MAX
#define SYNC0_CYCLE_BASE_NS 500000u /* firmware/cpu/src/cmd/sync.c: SYNC0 must be a multiple of 500 µs */

/* ---- timing models ------------------------------------------------------------ */

autd3_timing_model_t autd3_timing_model_default(void) {
  autd3_timing_model_t m = {.take_on_sync0 = true, .fifo_latency_ns = 100000, .ll_latency_ns = 10000, .publish_on_sync0 = false};
  return m;
}

autd3_timing_model_t autd3_timing_model_pessimistic(void) {
  autd3_timing_model_t m = {.take_on_sync0 = true, .fifo_latency_ns = 900000, .ll_latency_ns = 10000, .publish_on_sync0 = true};
  return m;
}

autd3_timing_model_t autd3_timing_model_ideal(void) {
  autd3_timing_model_t m = {.take_on_sync0 = false, .fifo_latency_ns = 0, .ll_latency_ns = 0, .publish_on_sync0 = false};
  return m;
}

static bool parse_u32(const char *s, size_t n, uint32_t *out) {
  if (n == 0 || n > 10) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (v > UINT32_MAX) return false;
  *out = (uint32_t)v;
  return true;
}

static bool word_is(const char *s, size_t n, const char *w) { return strlen(w) == n && memcmp(s, w, n) == 0; }

autd3_err_t autd3_timing_model_parse(const char *s, autd3_timing_model_t *out) {
  if (s == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_timing_model_parse: NULL argument");
  if (strcmp(s, "default") == 0) return *out = autd3_timing_model_default(), AUTD3_OK;
  if (strcmp(s, "pessimistic") == 0) return *out = autd3_timing_model_pessimistic(), AUTD3_OK;
  if (strcmp(s, "ideal") == 0) return *out = autd3_timing_model_ideal(), AUTD3_OK;
  /* key=value list; keys not given keep the default model's value */
  autd3_timing_model_t m = autd3_timing_model_default();
  const char *p = s;
  if (*p == '\0') goto bad;
  while (*p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *eq = memchr(p, '=', len);
    if (eq == NULL) goto bad;
    size_t klen = (size_t)(eq - p);
    const char *v = eq + 1;
    size_t vlen = len - klen - 1;
    if (word_is(p, klen, "take")) {
      if (word_is(v, vlen, "sync0")) m.take_on_sync0 = true;
      else if (word_is(v, vlen, "arrival")) m.take_on_sync0 = false;
      else goto bad;
    } else if (word_is(p, klen, "publish")) {
      if (word_is(v, vlen, "sync0")) m.publish_on_sync0 = true;
      else if (word_is(v, vlen, "now")) m.publish_on_sync0 = false;
      else goto bad;
    } else if (word_is(p, klen, "fifo")) {
      if (!parse_u32(v, vlen, &m.fifo_latency_ns)) goto bad;
    } else if (word_is(p, klen, "ll")) {
      if (!parse_u32(v, vlen, &m.ll_latency_ns)) goto bad;
    } else {
      goto bad;
    }
    if (end == NULL) break;
    p = end + 1;
    if (*p == '\0') goto bad; /* trailing comma */
  }
  *out = m;
  return AUTD3_OK;
bad:
  return autd3_set_error(AUTD3_E_INVALID_OPTION,
                         "timing model \"%s\": expected default, pessimistic, ideal or "
                         "take=sync0|arrival,fifo=NS,ll=NS,publish=sync0|now",
                         s);
}

/* ---- firmware core (proto.c / app.c behaviour) ------------------------------------ */

static uint16_t rd_u16le(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

/* Whether processing `f` now would dispatch it and, if so, the XorHash sleep
 * it implies (the firmware sleeps inside dispatch, only for a valid length). */
static uint64_t dispatch_sleep_ns(const autd3_dev_t *d, const uint8_t *f) {
  if (f[1] == AUTD3_CMD_RESET || f[0] != d->expected_seq || f[1] != AUTD3_CMD_XOR_HASH) return 0;
  const uint8_t *pl = f + 2;
  if (rd_u16le(pl + 2) > AUTD3_XOR_HASH_MAX_DATA) return 0;
  return (uint64_t)rd_u16le(pl) * 1000000ull;
}

/* proto.c dispatch(): a command's result. Reads return a value and leave
 * error_detail alone; every other non-zero result is latched into it. */
static uint8_t dispatch(autd3_dev_t *d, const uint8_t *f) {
  const uint8_t cmd = f[1];
  const uint8_t *pl = f + 2;
  uint8_t r;
  switch (cmd) {
    case AUTD3_CMD_READ_ERROR_DETAIL: return d->error_detail;
    case AUTD3_CMD_READ_CPU_FW_VERSION_MAJOR: return d->version.cpu_major;
    case AUTD3_CMD_READ_CPU_FW_VERSION_MINOR: return d->version.cpu_minor;
    case AUTD3_CMD_READ_CPU_FW_VERSION_PATCH: return d->version.cpu_patch;
    case AUTD3_CMD_READ_FPGA_FW_VERSION_MAJOR: return d->version.fpga_major;
    case AUTD3_CMD_READ_FPGA_FW_VERSION_MINOR: return d->version.fpga_minor;
    case AUTD3_CMD_READ_FPGA_FW_VERSION_PATCH: return d->version.fpga_patch;
    case AUTD3_CMD_READ_FPGA_STATE: return d->fpga_state;
    case AUTD3_CMD_READ_FPGA_FUNCTIONS: return d->fpga_functions; /* a read: error_detail untouched */
    case AUTD3_CMD_NOP: return AUTD3_DEV_ERR_NONE;
    case AUTD3_CMD_XOR_HASH: { /* xor_hash.c; the sleep is modelled as main-loop/ISR busy time */
      uint16_t len = rd_u16le(pl + 2);
      if (len > AUTD3_XOR_HASH_MAX_DATA) {
        r = AUTD3_DEV_ERR_INVALID_PAYLOAD;
        break;
      }
      uint8_t x = 0;
      for (uint16_t i = 0; i < len; i++) x ^= pl[4 + i];
      r = x ? AUTD3_DEV_ERR_INVALID_DATA : AUTD3_DEV_ERR_NONE;
      break;
    }
    case AUTD3_CMD_SET_MODE: /* set_mode.c */
      if (pl[0] > AUTD3_MODE_LOW_LATENCY) {
        r = AUTD3_DEV_ERR_INVALID_PAYLOAD;
      } else {
        d->mode = pl[0];
        r = AUTD3_DEV_ERR_NONE;
      }
      break;
    case AUTD3_CMD_SYNCHRONIZE: /* sync.c: needs an active SYNC0 whose period is a multiple of 500 µs */
      if (d->sync0_period_ns == 0) {
        r = AUTD3_DEV_ERR_SYNC_NOT_READY;
      } else if (!d->sync0_any_period && d->sync0_period_ns % SYNC0_CYCLE_BASE_NS != 0) {
        r = AUTD3_DEV_ERR_INVALID_SYNC0_CYCLE;
      } else {
        d->synchronized = true;
        r = AUTD3_DEV_ERR_NONE;
      }
      break;
    case AUTD3_CMD_CLEAR: /* fpga::init: single-pattern mode in bank 0, zero output; thermal is an input */
      autd3_fpga_init(&d->fpga);
      d->fpga_state = (uint8_t)((d->fpga_state & AUTD3_DEV_FPGA_STATE_THERMAL_ASSERT) | autd3_fpga_state_bits(&d->fpga));
      r = AUTD3_DEV_ERR_NONE;
      break;
    default:
      if (autd3_fpga_handles(cmd)) { /* the output commands: fpga.c executes them into the output state */
        r = autd3_fpga_exec(&d->fpga, cmd, pl, d->now_ns);
        d->fpga_state = (uint8_t)((d->fpga_state & AUTD3_DEV_FPGA_STATE_THERMAL_ASSERT) | autd3_fpga_state_bits(&d->fpga));
      } else {
        r = AUTD3_DEV_ERR_UNKNOWN_CMD;
      }
      break;
  }
  if (r != AUTD3_DEV_ERR_NONE) {
    d->error_detail = r;
    d->counters.errors++;
  }
  return r;
}

/* Firmware (ack, data) changed at time t: publish now or mark for the next SYNC0. */
static void output_changed(autd3_dev_t *d, uint64_t t) {
  if (d->timing.publish_on_sync0 && d->sync0_period_ns != 0) {
    if (!d->rx_dirty) {
      d->rx_dirty = true;
      d->rx_dirty_ns = t;
    }
  } else {
    d->rx[0] = d->ack;
    d->rx[1] = d->data;
  }
}

/* proto.c proto_handle_frame(): Reset always; otherwise only seq == expected. */
static void handle_frame(autd3_dev_t *d, const uint8_t *f, uint64_t t) {
  if (f[1] == AUTD3_CMD_RESET) {
    d->expected_seq = 0;
    d->ack = 0xFF;
    d->data = 0;
    d->counters.resets++;
    if (d->log) autd3_exec_log_push(d->log, f[0], f[1], 0, f + 2);
  } else if (f[0] == d->expected_seq) {
    d->ack = f[0];
    d->expected_seq = (uint8_t)(d->expected_seq + 1u);
    d->data = dispatch(d, f);
    d->counters.executed++;
    if (d->log) autd3_exec_log_push(d->log, f[0], f[1], d->data, f + 2);
  } else {
    d->counters.seq_mismatch++; /* silently ignored: ack/data unchanged */
  }
  output_changed(d, t);
}

/* The main loop starts the FIFO head at `start`: its finish time. */
static void fifo_start_head(autd3_dev_t *d, uint64_t start) {
  autd3_dev_fifo_entry_t *e = &d->fifo[d->fifo_head];
  e->due_ns = start + d->timing.fifo_latency_ns + dispatch_sleep_ns(d, e->frame);
  d->busy_until_ns = e->due_ns;
}

static void fifo_clear(autd3_dev_t *d) {
  d->fifo_head = 0;
  d->fifo_len = 0;
}

/* app.c recv_ethercat(): called at the take instant t. */
static void recv_ethercat(autd3_dev_t *d, const uint8_t *f, uint64_t t) {
  const uint8_t seq = f[0], cmd = f[1];
  d->counters.received++;
  if (seq == d->last_seq && cmd == d->last_cmd) { /* the host repeats its last frame every cycle */
    d->counters.deduplicated++;
    return;
  }
  if (cmd == AUTD3_CMD_RESET || d->mode == AUTD3_MODE_LOW_LATENCY) {
    if (cmd == AUTD3_CMD_RESET) fifo_clear(d); /* Reset empties the FIFO, also a frame in progress */
    memcpy(d->isr_frame, f, AUTD3_TX_FRAME_BYTES);
    d->isr_pending = true;
    d->isr_due_ns = t + d->timing.ll_latency_ns + dispatch_sleep_ns(d, f);
    d->last_seq = seq;
    d->last_cmd = cmd;
    return;
  }
  if (d->fifo_len >= AUTD3_DEV_FIFO_DEPTH - 1) { /* ring of 8, 7 usable: full → drop, dedup memory untouched */
    d->counters.dropped++;
    return;
  }
  uint8_t slot = (uint8_t)((d->fifo_head + d->fifo_len) % AUTD3_DEV_FIFO_DEPTH);
  memcpy(d->fifo[slot].frame, f, AUTD3_TX_FRAME_BYTES);
  d->fifo_len++;
  if (d->fifo_len == 1) fifo_start_head(d, d->busy_until_ns > t ? d->busy_until_ns : t);
  d->last_seq = seq;
  d->last_cmd = cmd;
}

/* ---- lazy event loop ---------------------------------------------------------------- */

static bool sync0_on(const autd3_dev_t *d) { return d->sync0_period_ns != 0; }

/* First SYNC0 edge strictly after t. */
static uint64_t edge_after(const autd3_dev_t *d, uint64_t t) {
  if (t < d->sync0_start_ns) return d->sync0_start_ns;
  uint64_t k = (t - d->sync0_start_ns) / d->sync0_period_ns + 1;
  return d->sync0_start_ns + k * d->sync0_period_ns;
}

/* First SYNC0 edge at or after t. */
static uint64_t edge_at_or_after(const autd3_dev_t *d, uint64_t t) {
  if (t <= d->sync0_start_ns) return d->sync0_start_ns;
  uint64_t k = (t - d->sync0_start_ns + d->sync0_period_ns - 1) / d->sync0_period_ns;
  return d->sync0_start_ns + k * d->sync0_period_ns;
}

/* When the pending image is taken: at the next SYNC0 after arrival (or on
 * arrival), but never while the ISR is still busy with the previous frame. */
static uint64_t take_time(const autd3_dev_t *d) {
  uint64_t free_at = d->isr_due_ns; /* the end of the last (or current) ISR run */
  if (d->timing.take_on_sync0 && sync0_on(d)) {
    uint64_t t = edge_after(d, d->image_arrival_ns);
    return t >= free_at ? t : edge_at_or_after(d, free_at);
  }
  return d->image_arrival_ns > free_at ? d->image_arrival_ns : free_at;
}

void autd3_dev_advance(autd3_dev_t *d, uint64_t now_ns) {
  if (now_ns < d->now_ns) now_ns = d->now_ns; /* time never goes back */
  d->now_ns = now_ns;
  if (d->fault.freeze) return; /* a frozen firmware neither takes, processes nor publishes */
  /* Each iteration consumes one event (a publish, an ISR or FIFO completion,
   * or a take); a take adds at most one new event, so this is bounded. */
  for (;;) {
    uint64_t t_pub = (d->rx_dirty && sync0_on(d)) ? edge_after(d, d->rx_dirty_ns) : NEVER;
    uint64_t t_isr = d->isr_pending ? d->isr_due_ns : NEVER;
    uint64_t t_fifo = d->fifo_len ? d->fifo[d->fifo_head].due_ns : NEVER;
    uint64_t t_take = d->image_pending ? take_time(d) : NEVER;
    uint64_t t = t_pub;
    if (t_isr < t) t = t_isr;
    if (t_fifo < t) t = t_fifo;
    if (t_take < t) t = t_take;
    if (t == NEVER || t > now_ns) break;
    if (t < d->last_event_ns) d->time_reversals++;
    d->last_event_ns = t;
    if (t == t_pub) {
      d->rx[0] = d->ack;
      d->rx[1] = d->data;
      d->rx_dirty = false;
    } else if (t == t_isr) {
      d->isr_pending = false;
      handle_frame(d, d->isr_frame, t);
    } else if (t == t_fifo) {
      handle_frame(d, d->fifo[d->fifo_head].frame, t);
      d->fifo_head = (uint8_t)((d->fifo_head + 1) % AUTD3_DEV_FIFO_DEPTH);
      d->fifo_len--;
      if (d->fifo_len) fifo_start_head(d, t);
    } else {
      d->image_pending = false;
      recv_ethercat(d, d->image, t);
    }
  }
}

/* ---- public API ------------------------------------------------------------------------ */

static void firmware_boot(autd3_dev_t *d) {
  /* app.c init_app() + proto.c proto_init() */
  d->expected_seq = 0;
  d->ack = 0xFF;
  d->data = 0;
  d->error_detail = AUTD3_DEV_ERR_NONE;
  d->mode = AUTD3_MODE_FIFO;
  d->last_seq = 0xFF;
  d->last_cmd = 0xFF;
  d->synchronized = false;
  autd3_fpga_power_on(&d->fpga);
  d->fpga_state = autd3_fpga_state_bits(&d->fpga); /* PATTERN_MODE: the FPGA powers up with both pattern cycles 0 */
  fifo_clear(d);
  d->busy_until_ns = 0;
  d->isr_pending = false;
  d->isr_due_ns = 0;
  d->image_pending = false;
  d->rx[0] = 0xFF;
  d->rx[1] = 0;
  d->rx_dirty = false;
}

void autd3_dev_init(autd3_dev_t *d, const autd3_fw_version_t *version, const autd3_timing_model_t *timing) {
  memset(d, 0, sizeof *d);
  if (version) {
    d->version = *version;
  } else {
    autd3_fw_version_t v = AUTD3_FW_VERSION_DEFAULT;
    d->version = v;
  }
  d->timing = timing ? *timing : autd3_timing_model_default();
  d->fpga_functions = AUTD3_DEV_FPGA_FUNC_EMULATOR;
  firmware_boot(d);
}

void autd3_dev_power_cycle(autd3_dev_t *d, uint64_t now_ns) {
  autd3_dev_advance(d, now_ns);
  /* A power cycle also ends injected faults: the device comes back fresh. */
  memset(&d->fault, 0, sizeof d->fault);
  firmware_boot(d);
  if (d->log) autd3_exec_log_note_boot(d->log);
}

void autd3_dev_attach_log(autd3_dev_t *d, struct autd3_exec_log *log) { d->log = log; }

void autd3_dev_set_sync0(autd3_dev_t *d, uint64_t start_ns, uint32_t period_ns) {
  d->sync0_start_ns = start_ns;
  d->sync0_period_ns = period_ns;
  if (period_ns == 0 && d->rx_dirty) { /* no more edges: what waited for one is published now */
    d->rx[0] = d->ack;
    d->rx[1] = d->data;
    d->rx_dirty = false;
  }
}

void autd3_dev_write(autd3_dev_t *d, const uint8_t frame[AUTD3_TX_FRAME_BYTES], uint64_t now_ns) {
  autd3_dev_advance(d, now_ns);
  if (d->fault.freeze) return;
  if (d->fault.drop_next > 0) { /* lost before the firmware sees it */
    d->fault.drop_next--;
    return;
  }
  /* Newest image wins, like a 3-buffer SyncManager: an image not yet taken is replaced. */
  memcpy(d->image, frame, AUTD3_TX_FRAME_BYTES);
  d->image_pending = true;
  d->image_arrival_ns = d->now_ns;
  autd3_dev_advance(d, now_ns); /* take on arrival (and zero-latency processing) happen now */
}

void autd3_dev_read(autd3_dev_t *d, uint64_t now_ns, uint8_t rx[AUTD3_RX_FRAME_BYTES]) {
  autd3_dev_advance(d, now_ns);
  rx[0] = d->rx[0];
  rx[1] = d->rx[1];
}

void autd3_dev_set_fault(autd3_dev_t *d, const autd3_device_fault_t *fault, uint64_t now_ns) {
  autd3_dev_advance(d, now_ns);
  bool was_frozen = d->fault.freeze;
  d->fault = *fault;
  if (was_frozen && !fault->freeze) {
    /* Thawing: the firmware resumes from now; nothing happened while frozen. */
    if (d->fifo_len) fifo_start_head(d, d->now_ns);
    if (d->isr_pending && d->isr_due_ns < d->now_ns) d->isr_due_ns = d->now_ns;
    if (d->image_pending) d->image_pending = false; /* images were not taken while frozen */
    if (d->rx_dirty && d->rx_dirty_ns < d->now_ns) d->rx_dirty_ns = d->now_ns;
  }
}

bool autd3_dev_consume_rx_invalid(autd3_dev_t *d) {
  if (d->fault.invalidate_rx == 0) return false;
  d->fault.invalidate_rx--;
  return true;
}

void autd3_dev_recv_frame(autd3_dev_t *d, const uint8_t frame[AUTD3_TX_FRAME_BYTES], uint64_t now_ns) {
  /* recv_ethercat() then app_process_pending(), back to back, no latency. */
  autd3_dev_advance(d, now_ns);
  recv_ethercat(d, frame, d->now_ns);
  if (d->isr_pending) {
    d->isr_pending = false;
    handle_frame(d, d->isr_frame, d->now_ns);
  }
  while (d->fifo_len) {
    handle_frame(d, d->fifo[d->fifo_head].frame, d->now_ns);
    d->fifo_head = (uint8_t)((d->fifo_head + 1) % AUTD3_DEV_FIFO_DEPTH);
    d->fifo_len--;
  }
  d->busy_until_ns = d->now_ns;
  d->rx[0] = d->ack;
  d->rx[1] = d->data;
  d->rx_dirty = false;
}
