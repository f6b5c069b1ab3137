/*
 * The firmware v12 device model (shinolab/autd3-firmware v12.1.0, the CPU
 * logic as ported by crate autd3-firmware-emulator 38.1.0 src/cpu/emulator.rs),
 * beside the new-generation model of device.h (firmware.h chooses one of the
 * two per device). docs/legacy.md describes it.
 *
 * The firmware in two halves, as on the device:
 *  - recv (the EtherCAT ISR, every new output image): a frame whose msg_id
 *    equals the last queued one is ignored (the host repeats its frame every
 *    cycle); otherwise it goes into a 16-slot ring (15 usable: one slot stays
 *    free to tell full from empty) and its msg_id is remembered. A frame that
 *    finds the ring full is dropped *without* being remembered, so the host's
 *    next repetition of it is taken once there is room (assumption: the v12
 *    sources are not at hand; this is the choice that loses nothing).
 *  - update (the main loop, about every 1 ms): pop one frame and execute it:
 *    ack = its msg_id; msg_id > 15 → error 2 and stop; run operation 1; if no
 *    error and slot_2_offset ≠ 0, run operation 2. The published inputs are
 *    (data, err << 4 | msg_id). Every pass also refreshes the data byte with
 *    the FPGA state while READS_FPGA_STATE is on.
 *
 * Shared with the new-generation model: the firmware identity type, the
 * counters and the fault-injection type of autd3/emulator.h; the time base
 * rules of device.h (non-decreasing now_ns, events run in time order).
 *
 * Not modelled (accepted with error 0 when the tag is known): the FPGA-side
 * operations' own checks (modulation, gain, STM, silencer, PWE, phase
 * correction, output mask, GPIO); the FPGA state byte is 0 apart from the
 * READS_FPGA_STATE flag bit, as the reference emulator between time updates.
 *
 * Not thread-safe: the owner serialises calls. No allocation, no I/O.
 */
#ifndef AUTD3_EMULATION_DEVICE_V12_H
#define AUTD3_EMULATION_DEVICE_V12_H

#include <stdbool.h>
#include <stdint.h>

#include "autd3/emulator.h"
#include "autd3/proto.h"

/* The identity firmware v12.1.0 reports (crate autd3-firmware-emulator 38.1.0:
 * CPU_VERSION_MAJOR 0xA5 / MINOR 0x00, FPGA VERSION_NUM_MAJOR 0xA5 / MINOR
 * 0x00, ENABLED_FEATURES_BITS = the emulator bit 0x80). */
#define AUTD3_V12_CPU_MAJOR 0xA5u
#define AUTD3_V12_CPU_MINOR 0x00u
#define AUTD3_V12_FPGA_MAJOR 0xA5u
#define AUTD3_V12_FPGA_MINOR 0x00u
#define AUTD3_V12_FPGA_FUNCTIONS 0x80u
#define AUTD3_V12_UPDATE_PERIOD_NS 1000000u /* the main loop's pace */

typedef struct autd3_v12_dev {
  uint8_t ring[AUTD3_V12_RING_SLOTS][AUTD3_TX_FRAME_BYTES];
  uint8_t ring_head, ring_len;
  uint8_t last_queued;   /* msg_id of the last frame taken (boot 0xFF) */
  uint8_t ack_msg_id;    /* msg_id of the last executed frame (boot 0xFF) */
  uint8_t err;           /* error nibble of the last executed frame */
  uint8_t rx_data;       /* data byte */
  uint8_t fpga_state;    /* FPGA state register (bits 0..6) */
  uint8_t fpga_flags;    /* control flags the CPU writes (force fan) */
  bool reads_fpga_state, reads_fpga_state_store, rx_data_used;
  bool synchronized;
  uint32_t update_period_ns; /* 0 = execute on arrival (zero-latency, as the reference emulator) */
  uint64_t next_update_ns;
  uint64_t now_ns;
  autd3_device_fault_t fault;
  autd3_device_counters_t counters;
} autd3_v12_dev_t;

/* Boot (power-on state). update_period_ns 0 = every frame executes at once. */
void autd3_v12_dev_init(autd3_v12_dev_t *d, uint32_t update_period_ns);
/* Power-cycle: boot state, ring emptied, counters kept. */
void autd3_v12_dev_power_cycle(autd3_v12_dev_t *d, uint64_t now_ns);
/* Run the main loop's updates due up to now_ns (one frame per update). */
void autd3_v12_dev_advance(autd3_v12_dev_t *d, uint64_t now_ns);
/* A new output image arrived (the ISR half). */
void autd3_v12_dev_write(autd3_v12_dev_t *d, const uint8_t frame[AUTD3_TX_FRAME_BYTES], uint64_t now_ns);
/* Replace the injected faults (drop_next, freeze; invalidate_rx is not
 * modelled) from now_ns on; the updates due up to now_ns run first. */
void autd3_v12_dev_set_fault(autd3_v12_dev_t *d, const autd3_device_fault_t *fault, uint64_t now_ns);
/* Published inputs: rx[0] = data, rx[1] = err << 4 | msg_id. */
void autd3_v12_dev_read(autd3_v12_dev_t *d, uint64_t now_ns, uint8_t rx[AUTD3_RX_FRAME_BYTES]);
/* Without timing (tests, the differential harness): take the frame, then run
 * the main loop until the ring is empty. */
void autd3_v12_dev_recv_frame(autd3_v12_dev_t *d, const uint8_t frame[AUTD3_TX_FRAME_BYTES]);
/* Take the frame only / run one update only (ring tests). */
void autd3_v12_dev_take(autd3_v12_dev_t *d, const uint8_t frame[AUTD3_TX_FRAME_BYTES]);
bool autd3_v12_dev_update(autd3_v12_dev_t *d);

#endif
