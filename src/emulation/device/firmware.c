/* One device with its firmware: the dispatch table (see firmware.h). */
#include "emulation/device/firmware.h"

/* ---- the new-generation firmware (device.h) ---- */

static void new_write(autd3_fw_dev_t *f, const uint8_t frame[AUTD3_TX_FRAME_BYTES], uint64_t now_ns) {
  autd3_dev_write(&f->dev, frame, now_ns);
}
static void new_read(autd3_fw_dev_t *f, uint64_t now_ns, uint8_t rx[AUTD3_RX_FRAME_BYTES]) {
  autd3_dev_read(&f->dev, now_ns, rx);
}
static void new_advance(autd3_fw_dev_t *f, uint64_t now_ns) { autd3_dev_advance(&f->dev, now_ns); }
static void new_power_cycle(autd3_fw_dev_t *f, uint64_t now_ns) { autd3_dev_power_cycle(&f->dev, now_ns); }
static void new_set_fault(autd3_fw_dev_t *f, const autd3_device_fault_t *fault, uint64_t now_ns) {
  autd3_dev_set_fault(&f->dev, fault, now_ns);
}
static bool new_consume_rx_invalid(autd3_fw_dev_t *f) { return autd3_dev_consume_rx_invalid(&f->dev); }
static autd3_device_counters_t *new_counters(autd3_fw_dev_t *f) { return &f->dev.counters; }
static uint64_t new_now(const autd3_fw_dev_t *f) { return f->dev.now_ns; }
static void new_status(const autd3_fw_dev_t *f, uint64_t *executed, uint8_t *ack, uint8_t *data) {
  *executed = f->dev.counters.executed;
  *ack = f->dev.rx[0];
  *data = f->dev.rx[1];
}

static const autd3_fw_ops_t new_ops = {
    .name = "new", .write = new_write, .read = new_read, .advance = new_advance, .power_cycle = new_power_cycle,
    .set_fault = new_set_fault, .consume_rx_invalid = new_consume_rx_invalid, .counters = new_counters,
    .now = new_now, .status = new_status};

/* ---- firmware v12.1.0 (v12.h) ---- */

static void v12_write(autd3_fw_dev_t *f, const uint8_t frame[AUTD3_TX_FRAME_BYTES], uint64_t now_ns) {
  autd3_v12_dev_write(&f->v12, frame, now_ns);
}
static void v12_read(autd3_fw_dev_t *f, uint64_t now_ns, uint8_t rx[AUTD3_RX_FRAME_BYTES]) {
  autd3_v12_dev_read(&f->v12, now_ns, rx);
}
static void v12_advance(autd3_fw_dev_t *f, uint64_t now_ns) { autd3_v12_dev_advance(&f->v12, now_ns); }
static void v12_power_cycle(autd3_fw_dev_t *f, uint64_t now_ns) {
  autd3_v12_dev_power_cycle(&f->v12, now_ns);
  autd3_exec_log_note_boot(&f->log);
}
static void v12_set_fault(autd3_fw_dev_t *f, const autd3_device_fault_t *fault, uint64_t now_ns) {
  autd3_v12_dev_set_fault(&f->v12, fault, now_ns);
}
/* invalidate_rx is not modelled for v12: its inputs are always reported valid. */
static bool v12_consume_rx_invalid(autd3_fw_dev_t *f) {
  (void)f;
  return false;
}
static autd3_device_counters_t *v12_counters(autd3_fw_dev_t *f) { return &f->v12.counters; }
static uint64_t v12_now(const autd3_fw_dev_t *f) { return f->v12.now_ns; }
static void v12_status(const autd3_fw_dev_t *f, uint64_t *executed, uint8_t *ack, uint8_t *data) {
  *executed = f->v12.counters.executed;
  *ack = f->v12.ack_msg_id;
  *data = f->v12.rx_data;
}

static const autd3_fw_ops_t v12_ops = {
    .name = "v12", .write = v12_write, .read = v12_read, .advance = v12_advance, .power_cycle = v12_power_cycle,
    .set_fault = v12_set_fault, .consume_rx_invalid = v12_consume_rx_invalid, .counters = v12_counters,
    .now = v12_now, .status = v12_status};

/* ---- choice and set-up ---- */

const autd3_fw_ops_t *autd3_fw_ops_for(uint32_t firmware, uint16_t index) {
  bool v12 = firmware == AUTD3_EMU_FIRMWARE_V12 || (firmware == AUTD3_EMU_FIRMWARE_MIXED && (index & 1u));
  return v12 ? &v12_ops : &new_ops;
}

void autd3_fw_dev_init(autd3_fw_dev_t *f, uint32_t firmware, uint16_t index, const autd3_fw_version_t *version,
                       const autd3_timing_model_t *timing) {
  f->ops = autd3_fw_ops_for(firmware, index);
  autd3_dev_init(&f->dev, version, timing);
  autd3_dev_attach_log(&f->dev, &f->log);
  autd3_v12_dev_init(&f->v12, AUTD3_V12_UPDATE_PERIOD_NS);
}

void autd3_fw_dev_set_sync0(autd3_fw_dev_t *f, uint64_t start_ns, uint32_t period_ns) {
  autd3_dev_set_sync0(&f->dev, start_ns, period_ns);
}

void autd3_fw_dev_output_state(const autd3_fw_dev_t *f, autd3_output_state_t *out) {
  autd3_dev_output_state(&f->dev, out);
}
