/*
 * The firmware v12 device model. src/emulation/device/v12.h has the behaviour and its
 * sources (crate autd3-firmware-emulator 38.1.0 src/cpu/{emulator.rs,
 * operation/ files}; shinolab/autd3-firmware v12.1.0 src/cpu/src/{app,buf}.c).
 */
#include "emulation/device/v12.h"

#include <string.h>

static void boot(autd3_v12_dev_t *d) {
  d->ring_head = 0;
  d->ring_len = 0;
  d->last_queued = 0xFF;
  d->ack_msg_id = 0xFF;
  d->err = 0;
  d->rx_data = 0;
  d->fpga_state = 0;
  d->fpga_flags = 0;
  d->reads_fpga_state = false;
  d->reads_fpga_state_store = false;
  d->rx_data_used = false;
  d->synchronized = false;
  memset(&d->fault, 0, sizeof d->fault);
}

void autd3_v12_dev_init(autd3_v12_dev_t *d, uint32_t update_period_ns) {
  memset(d, 0, sizeof *d);
  d->update_period_ns = update_period_ns;
  boot(d);
}

void autd3_v12_dev_power_cycle(autd3_v12_dev_t *d, uint64_t now_ns) {
  boot(d);
  d->now_ns = now_ns;
  d->next_update_ns = now_ns + d->update_period_ns;
}

/* The data byte carries the FPGA state while READS_FPGA_STATE is on, unless a
 * firmware-info read holds it (emulator.rs read_fpga_state). */
static void read_fpga_state(autd3_v12_dev_t *d) {
  if (d->rx_data_used) return;
  if (d->reads_fpga_state)
    d->rx_data = (uint8_t)(AUTD3_V12_DATA_FPGA_STATE | d->fpga_state);
  else
    d->rx_data &= (uint8_t)~AUTD3_V12_DATA_FPGA_STATE;
}

static uint8_t firm_info(autd3_v12_dev_t *d, uint8_t type) {
  switch (type) {
    case AUTD3_V12_INFO_CPU_MAJOR:
      /* The version reads hold the data byte until INFO_CLEAR (info.rs). */
      d->reads_fpga_state_store = d->reads_fpga_state;
      d->reads_fpga_state = false;
      d->rx_data_used = true;
      d->rx_data = AUTD3_V12_CPU_MAJOR;
      return AUTD3_V12_ERR_NONE;
    case AUTD3_V12_INFO_CPU_MINOR: d->rx_data = AUTD3_V12_CPU_MINOR; return AUTD3_V12_ERR_NONE;
    case AUTD3_V12_INFO_FPGA_MAJOR: d->rx_data = AUTD3_V12_FPGA_MAJOR; return AUTD3_V12_ERR_NONE;
    case AUTD3_V12_INFO_FPGA_MINOR: d->rx_data = AUTD3_V12_FPGA_MINOR; return AUTD3_V12_ERR_NONE;
    case AUTD3_V12_INFO_FPGA_FUNCTIONS: d->rx_data = AUTD3_V12_FPGA_FUNCTIONS; return AUTD3_V12_ERR_NONE;
    case AUTD3_V12_INFO_CLEAR:
      d->reads_fpga_state = d->reads_fpga_state_store;
      d->rx_data_used = false;
      return AUTD3_V12_ERR_NONE;
    default:
      return AUTD3_V12_ERR_INVALID_INFO_TYPE;
  }
}

/* One operation; op[0] is its tag, op[1] its first parameter byte. */
static uint8_t handle_op(autd3_v12_dev_t *d, const uint8_t *op) {
  switch (op[0]) {
    case AUTD3_V12_TAG_NOP: return AUTD3_V12_ERR_NONE;
    case AUTD3_V12_TAG_CLEAR:
      /* clear.rs: reads off, control flags cleared, FPGA re-initialised. */
      d->reads_fpga_state = false;
      d->fpga_flags = 0;
      return AUTD3_V12_ERR_NONE;
    case AUTD3_V12_TAG_SYNC: d->synchronized = true; return AUTD3_V12_ERR_NONE;
    case AUTD3_V12_TAG_FIRM_INFO: return firm_info(d, op[1]);
    case AUTD3_V12_TAG_FORCE_FAN:
      d->fpga_flags = op[1] ? (uint8_t)(d->fpga_flags | 1u) : (uint8_t)(d->fpga_flags & ~1u);
      return AUTD3_V12_ERR_NONE;
    case AUTD3_V12_TAG_READS_FPGA_STATE: d->reads_fpga_state = op[1] != 0; return AUTD3_V12_ERR_NONE;
    /* Known, executed by the FPGA side, not modelled (v12.h). */
    case AUTD3_V12_TAG_MODULATION:
    case AUTD3_V12_TAG_MODULATION_CHANGE_SEGMENT:
    case AUTD3_V12_TAG_SILENCER:
    case AUTD3_V12_TAG_GAIN:
    case AUTD3_V12_TAG_GAIN_CHANGE_SEGMENT:
    case AUTD3_V12_TAG_GAIN_STM:
    case AUTD3_V12_TAG_FOCI_STM:
    case AUTD3_V12_TAG_GAIN_STM_CHANGE_SEGMENT:
    case AUTD3_V12_TAG_FOCI_STM_CHANGE_SEGMENT:
    case AUTD3_V12_TAG_CONFIG_PWE:
    case AUTD3_V12_TAG_PHASE_CORRECTION:
    case AUTD3_V12_TAG_OUTPUT_MASK:
    case AUTD3_V12_TAG_DEBUG:
    case AUTD3_V12_TAG_EMULATE_GPIO_IN:
    case AUTD3_V12_TAG_CPU_GPIO_OUT:
      return AUTD3_V12_ERR_NONE;
    default:
      return AUTD3_V12_ERR_NOT_SUPPORTED_TAG;
  }
}

static void execute(autd3_v12_dev_t *d, const uint8_t *f) {
  d->counters.executed++;
  d->ack_msg_id = f[0];
  read_fpga_state(d);
  if (f[0] > AUTD3_V12_MSG_ID_MAX) {
    d->err = AUTD3_V12_ERR_INVALID_MSG_ID;
    d->counters.errors++;
    return;
  }
  const uint8_t *payload = f + AUTD3_V12_HEADER_BYTES;
  d->err = handle_op(d, payload);
  uint16_t s2 = (uint16_t)(f[2] | (f[3] << 8));
  /* An offset past the payload cannot hold an operation: treated as an
   * unknown tag rather than read out of bounds (the firmware would read
   * whatever follows its buffer). */
  if (d->err == AUTD3_V12_ERR_NONE && s2 != 0)
    d->err = s2 < AUTD3_V12_PAYLOAD_BYTES ? handle_op(d, payload + s2) : (uint8_t)AUTD3_V12_ERR_NOT_SUPPORTED_TAG;
  if (d->err != AUTD3_V12_ERR_NONE) d->counters.errors++;
}

void autd3_v12_dev_take(autd3_v12_dev_t *d, const uint8_t frame[AUTD3_TX_FRAME_BYTES]) {
  d->counters.received++;
  if (frame[0] == d->last_queued) {
    d->counters.deduplicated++;
    return;
  }
  if (d->ring_len >= AUTD3_V12_RING_SLOTS - 1) {
    d->counters.dropped++;
    return;
  }
  d->last_queued = frame[0];
  memcpy(d->ring[(d->ring_head + d->ring_len) % AUTD3_V12_RING_SLOTS], frame, AUTD3_TX_FRAME_BYTES);
  d->ring_len++;
}

bool autd3_v12_dev_update(autd3_v12_dev_t *d) {
  if (d->ring_len == 0) return false;
  execute(d, d->ring[d->ring_head]);
  d->ring_head = (uint8_t)((d->ring_head + 1) % AUTD3_V12_RING_SLOTS);
  d->ring_len--;
  return true;
}

void autd3_v12_dev_recv_frame(autd3_v12_dev_t *d, const uint8_t frame[AUTD3_TX_FRAME_BYTES]) {
  autd3_v12_dev_take(d, frame);
  while (autd3_v12_dev_update(d)) {
  }
}

void autd3_v12_dev_advance(autd3_v12_dev_t *d, uint64_t now_ns) {
  if (now_ns < d->now_ns) now_ns = d->now_ns;
  d->now_ns = now_ns;
  if (d->fault.freeze) return;
  if (d->update_period_ns == 0) {
    while (autd3_v12_dev_update(d)) {
    }
    return;
  }
  if (d->next_update_ns == 0) d->next_update_ns = now_ns;
  /* One frame per update; an idle loop sleeps a period (app.c). Catch up at
   * most a ring's worth of updates after a long gap. */
  uint32_t n = 0;
  while (d->next_update_ns <= now_ns && n < AUTD3_V12_RING_SLOTS) {
    autd3_v12_dev_update(d);
    /* The main loop refreshes the data byte from the FPGA state every pass,
     * idle or not (the reference emulator does it on each time update:
     * emulator.rs update_with_sys_time → read_fpga_state). */
    read_fpga_state(d);
    d->next_update_ns += d->update_period_ns;
    n++;
  }
  if (d->next_update_ns <= now_ns) d->next_update_ns = now_ns + d->update_period_ns;
}

void autd3_v12_dev_write(autd3_v12_dev_t *d, const uint8_t frame[AUTD3_TX_FRAME_BYTES], uint64_t now_ns) {
  autd3_v12_dev_advance(d, now_ns);
  if (d->fault.freeze) return;
  if (d->fault.drop_next) {
    d->fault.drop_next--;
    return;
  }
  autd3_v12_dev_take(d, frame);
  if (d->update_period_ns == 0) autd3_v12_dev_advance(d, now_ns);
}

void autd3_v12_dev_set_fault(autd3_v12_dev_t *d, const autd3_device_fault_t *fault, uint64_t now_ns) {
  autd3_v12_dev_advance(d, now_ns);
  d->fault = *fault;
}

void autd3_v12_dev_read(autd3_v12_dev_t *d, uint64_t now_ns, uint8_t rx[AUTD3_RX_FRAME_BYTES]) {
  autd3_v12_dev_advance(d, now_ns);
  rx[0] = d->rx_data;
  rx[1] = (uint8_t)(((d->err & 0x0Fu) << 4) | (d->ack_msg_id & 0x0Fu));
}
