/*
 * One device with its firmware: the one place that knows that a device runs
 * either the new-generation firmware (device.h) or firmware v12.1.0 (v12.h).
 *
 * The choice is made once, when the device is set up (autd3_fw_dev_init,
 * from autd3_emu_firmware_t and the device's index: MIXED gives odd indices
 * v12), as a small table of operations. The device owners (the in-process
 * emulator link, the EtherCAT slave model, the emulated TwinCAT runtime)
 * call only the functions below and never ask which firmware a device runs.
 *
 * What is not dispatched, on purpose:
 *  - the SYNC0 grid (autd3_fw_dev_set_sync0) goes to the new-generation model
 *    only: the v12 main loop paces itself (AUTD3_V12_UPDATE_PERIOD_NS) and
 *    does not look at SYNC0;
 *  - the output state (autd3_fw_dev_output_state) is the new-generation
 *    model's: the v12 model does not model the FPGA side (v12.h), so a v12
 *    device reports the power-on output state.
 *
 * Time base, threading and allocation: as device.h (the owner serialises
 * calls with non-decreasing now_ns; nothing allocates or blocks).
 */
#ifndef AUTD3_EMULATION_DEVICE_FIRMWARE_H
#define AUTD3_EMULATION_DEVICE_FIRMWARE_H

#include <stdbool.h>
#include <stdint.h>

#include "autd3/emulator.h"
#include "autd3/proto.h"
#include "emulation/device/device.h"
#include "emulation/device/exec_log.h"
#include "emulation/device/v12.h"

struct autd3_fw_dev;

/* What differs between the two firmware generations. */
typedef struct autd3_fw_ops {
  const char *name; /* "new" / "v12" */
  /* A new output image arrived at now_ns. */
  void (*write)(struct autd3_fw_dev *f, const uint8_t frame[AUTD3_TX_FRAME_BYTES], uint64_t now_ns);
  /* The published inputs at now_ns (their meaning is the firmware's: proto.h). */
  void (*read)(struct autd3_fw_dev *f, uint64_t now_ns, uint8_t rx[AUTD3_RX_FRAME_BYTES]);
  /* Run every event due up to now_ns. */
  void (*advance)(struct autd3_fw_dev *f, uint64_t now_ns);
  /* Power-cycle: firmware back to boot, faults gone, counters and log kept (a boot counted in the log). */
  void (*power_cycle)(struct autd3_fw_dev *f, uint64_t now_ns);
  /* Replace the injected faults from now_ns on (events up to now_ns run first). */
  void (*set_fault)(struct autd3_fw_dev *f, const autd3_device_fault_t *fault, uint64_t now_ns);
  /* Once per exchange: true (one count consumed) if this cycle's inputs must be reported invalid. */
  bool (*consume_rx_invalid)(struct autd3_fw_dev *f);
  /* The firmware's counters (the owner may save and restore them around a re-init). */
  autd3_device_counters_t *(*counters)(struct autd3_fw_dev *f);
  /* The firmware's time: the latest now_ns it has seen. */
  uint64_t (*now)(const struct autd3_fw_dev *f);
  /* For status lines: frames executed, the last executed frame's ack and the data byte, as the firmware
   * holds them now (without running events). */
  void (*status)(const struct autd3_fw_dev *f, uint64_t *executed, uint8_t *ack, uint8_t *data);
} autd3_fw_ops_t;

typedef struct autd3_fw_dev {
  const autd3_fw_ops_t *ops; /* chosen once, at init */
  autd3_dev_t dev;           /* the new-generation model (also the output state, see above) */
  autd3_v12_dev_t v12;       /* the v12 model */
  autd3_exec_log_t log;      /* the device's execution log: kept across init and power cycles */
} autd3_fw_dev_t;

/* The table for device `index` of a chain running `firmware` (autd3_emu_firmware_t). */
const autd3_fw_ops_t *autd3_fw_ops_for(uint32_t firmware, uint16_t index);

/* Boot device `index` (power-on state); `version`/`timing` NULL → defaults. The execution log is not
 * touched (zero it once, e.g. with calloc, before the first init) and stays attached. */
void autd3_fw_dev_init(autd3_fw_dev_t *f, uint32_t firmware, uint16_t index, const autd3_fw_version_t *version,
                       const autd3_timing_model_t *timing);
/* The SYNC0 grid (device.h autd3_dev_set_sync0); not dispatched, see above. */
void autd3_fw_dev_set_sync0(autd3_fw_dev_t *f, uint64_t start_ns, uint32_t period_ns);
/* The output state (fpga.h autd3_dev_output_state); not dispatched, see above. */
void autd3_fw_dev_output_state(const autd3_fw_dev_t *f, autd3_output_state_t *out);

static inline void autd3_fw_dev_write(autd3_fw_dev_t *f, const uint8_t frame[AUTD3_TX_FRAME_BYTES], uint64_t now_ns) {
  f->ops->write(f, frame, now_ns);
}
static inline void autd3_fw_dev_read(autd3_fw_dev_t *f, uint64_t now_ns, uint8_t rx[AUTD3_RX_FRAME_BYTES]) {
  f->ops->read(f, now_ns, rx);
}
static inline void autd3_fw_dev_advance(autd3_fw_dev_t *f, uint64_t now_ns) { f->ops->advance(f, now_ns); }
static inline void autd3_fw_dev_power_cycle(autd3_fw_dev_t *f, uint64_t now_ns) { f->ops->power_cycle(f, now_ns); }
static inline void autd3_fw_dev_set_fault(autd3_fw_dev_t *f, const autd3_device_fault_t *fault, uint64_t now_ns) {
  f->ops->set_fault(f, fault, now_ns);
}
static inline bool autd3_fw_dev_consume_rx_invalid(autd3_fw_dev_t *f) { return f->ops->consume_rx_invalid(f); }
static inline autd3_device_counters_t *autd3_fw_dev_counters(autd3_fw_dev_t *f) { return f->ops->counters(f); }
static inline uint64_t autd3_fw_dev_now(const autd3_fw_dev_t *f) { return f->ops->now(f); }
static inline void autd3_fw_dev_status(const autd3_fw_dev_t *f, uint64_t *executed, uint8_t *ack, uint8_t *data) {
  f->ops->status(f, executed, ack, data);
}

#endif
