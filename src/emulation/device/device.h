/*
 * The AUTD3 device model: the new-generation firmware's protocol behaviour
 * (firmware/cpu/src/{app,proto}.c of shinolab/autd3-sdk) plus an explicit
 * timing model of *when* the firmware sees a frame and publishes its answer.
 *
 * One autd3_dev_t is one device. The in-process emulator link, the EtherCAT
 * slave model (src/emulation/ethercat) and the emulated TwinCAT runtime
 * (src/emulation/twincat) reach it through firmware.h, which also holds the
 * v12 model (v12.h) and chooses between them once per device.
 *
 * Time: every call takes `now_ns` on one monotonic time base chosen by the
 * caller (the in-process link uses CLOCK_MONOTONIC, the EtherCAT emulator the
 * device's own DC local time). Calls must come with non-decreasing `now_ns`;
 * each call first runs every event due up to `now_ns` (SYNC0 edges, finished
 * processing) in time order.
 *
 * Not thread-safe: the owner serialises calls. No allocation, no I/O, no
 * locks: every function is safe on a hot path (bus thread, frame handler).
 *
 * Event order at one instant: SYNC0 publish, ISR completion, FIFO completion,
 * take. So at an edge E the inputs first get what was processed before E,
 * then the pending image is taken; an image written *at* E (it arrives just
 * after the edge) is taken at the next edge. docs/device-model.md has the
 * model, the defaults and why.
 *
 * Typical owner loop (one exchange at time t):
 *   autd3_dev_write(d, tx_of_this_device, t);   // the frame passes the device
 *   autd3_dev_read(d, t, rx_of_this_device);    // inputs as published at t
 *   if (autd3_dev_consume_rx_invalid(d)) rx_valid = false;
 */
#ifndef AUTD3_EMULATION_DEVICE_DEVICE_H
#define AUTD3_EMULATION_DEVICE_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "autd3/emulator.h"
#include "autd3/proto.h"
#include "emulation/device/fpga.h"

#define AUTD3_DEV_FIFO_DEPTH 8 /* ring of 8, 7 usable, as the firmware */

/* FPGA state byte (ReadFpgaState 0xE7) bits, crate autd3-cpu-wire 0.9.0
 * params FPGA_STATE_BIT_*. PATTERN_MODE, PATTERN_BANK and TRANSITION_PENDING
 * follow the FPGA model (fpga.h); THERMAL is an input. PATTERN_MODE is set while the
 * current pattern bank holds a single pattern (cycle register 0 → 1 entry,
 * i.e. a Pattern, not an STM), which is the case after power-on and after
 * Clear (fpga::init writes PATTERN_CYCLE = 0 for both banks). Hence 0x08
 * after open, as the reference's in-process firmware answers. */
#define AUTD3_DEV_FPGA_STATE_THERMAL_ASSERT 0x01u
#define AUTD3_DEV_FPGA_STATE_MOD_BANK 0x02u
#define AUTD3_DEV_FPGA_STATE_PATTERN_BANK 0x04u
#define AUTD3_DEV_FPGA_STATE_PATTERN_MODE 0x08u
#define AUTD3_DEV_FPGA_STATE_PATTERN_STOPPED 0x10u
#define AUTD3_DEV_FPGA_STATE_MOD_STOPPED 0x20u
#define AUTD3_DEV_FPGA_STATE_TRANSITION_PENDING 0x40u
#define AUTD3_DEV_FPGA_STATE_READS_ENABLED 0x80u
/* FPGA function bits (ReadFpgaFunctions 0xE9), params FUNC_*_BIT. An
 * emulated device says it is one (bit 7), as the reference's emulator does;
 * it does not claim dynamic frequency (bit 1) or flash OTA (bit 2), which it
 * does not model. */
#define AUTD3_DEV_FPGA_FUNC_EMULATOR 0x80u

typedef struct autd3_dev_fifo_entry {
  uint8_t frame[AUTD3_TX_FRAME_BYTES];
  uint64_t due_ns; /* when the main loop finishes processing it */
} autd3_dev_fifo_entry_t;

typedef struct autd3_dev {
  /* configuration */
  autd3_fw_version_t version;
  autd3_timing_model_t timing;
  uint8_t fpga_state;     /* ReadFpgaState (0xE7) answer: boot and Clear → PATTERN_MODE (0x08) */
  uint8_t fpga_functions; /* ReadFpgaFunctions (0xE9) answer: default AUTD3_DEV_FPGA_FUNC_EMULATOR */

  /* firmware state (shinolab/autd3-sdk firmware/cpu/src/app.c) */
  uint8_t expected_seq; /* boot 0 */
  uint8_t ack;          /* boot 0xFF */
  uint8_t data;         /* boot 0 */
  uint8_t error_detail; /* latched non-zero error code */
  uint8_t mode;         /* AUTD3_MODE_FIFO / AUTD3_MODE_LOW_LATENCY */
  uint8_t last_seq, last_cmd; /* dedup memory, boot 0xFF/0xFF */
  bool synchronized;    /* a Synchronize was executed */

  /* FIFO of frames taken but not processed */
  autd3_dev_fifo_entry_t fifo[AUTD3_DEV_FIFO_DEPTH];
  uint8_t fifo_head, fifo_len;
  uint64_t busy_until_ns; /* main loop busy (e.g. XorHash sleep) until */

  /* Inline (ISR) processing: Reset, or any frame in low-latency mode. While
   * the ISR is busy no new image is taken (newer images replace the pending
   * one, as in a 3-buffer SyncManager). */
  bool isr_pending;
  uint64_t isr_due_ns;
  uint8_t isr_frame[AUTD3_TX_FRAME_BYTES];
  bool sync0_any_period; /* Synchronize accepts any SYNC0 period, not only multiples of 500 µs */

  /* timing state */
  uint64_t now_ns;            /* time of the last call */
  uint64_t sync0_start_ns;    /* first SYNC0 edge; 0 with period 0 = SYNC0 inactive */
  uint32_t sync0_period_ns;   /* 0 = SYNC0 inactive: images are taken on arrival */
  bool image_pending;         /* an output image arrived and was not yet taken */
  uint64_t image_arrival_ns;  /* when the pending image arrived */
  uint8_t image[AUTD3_TX_FRAME_BYTES];
  uint8_t rx[AUTD3_RX_FRAME_BYTES];    /* published (ack, data) the master reads */
  bool rx_dirty;                       /* firmware (ack,data) changed, not yet published (publish_on_sync0) */
  uint64_t rx_dirty_ns;                /* first change since the last publish */

  /* self-check of the event loop (tests): events must run in time order */
  uint64_t last_event_ns;
  uint32_t time_reversals; /* must stay 0 */

  /* the FPGA side: pattern banks, silencer, tables (fpga.h) */
  autd3_fpga_t fpga;

  /* fault injection and counters */
  autd3_device_fault_t fault;
  autd3_device_counters_t counters;

  /* execution log (device/exec_log.h), owned by the caller; NULL = none.
   * Survives autd3_dev_power_cycle (which counts a boot in it). */
  struct autd3_exec_log *log;
} autd3_dev_t;

/* Boot a device (power-on state). `version`/`timing` NULL → defaults. */
void autd3_dev_init(autd3_dev_t *d, const autd3_fw_version_t *version, const autd3_timing_model_t *timing);
/* Record every executed frame in `log` (NULL stops recording). Call after init. */
void autd3_dev_attach_log(autd3_dev_t *d, struct autd3_exec_log *log);
/* Power-cycle: firmware back to boot state, FIFO emptied, counters kept. */
void autd3_dev_power_cycle(autd3_dev_t *d, uint64_t now_ns);
/* SYNC0 grid: edges at start + k*period (period 0 = inactive: images are taken
 * on arrival and inputs published when processed, whatever the timing model). */
void autd3_dev_set_sync0(autd3_dev_t *d, uint64_t start_ns, uint32_t period_ns);
/* Run every event due up to now_ns. */
void autd3_dev_advance(autd3_dev_t *d, uint64_t now_ns);
/* A complete new output image (626 logical bytes) arrived at now_ns. */
void autd3_dev_write(autd3_dev_t *d, const uint8_t frame[AUTD3_TX_FRAME_BYTES], uint64_t now_ns);
/* The published inputs at now_ns: rx[0] = ack, rx[1] = data. */
void autd3_dev_read(autd3_dev_t *d, uint64_t now_ns, uint8_t rx[AUTD3_RX_FRAME_BYTES]);

/* Replace the injected faults (all fields; applied from now_ns on; events up to
 * now_ns run first). Thawing a frozen device resumes it from now_ns. */
void autd3_dev_set_fault(autd3_dev_t *d, const autd3_device_fault_t *fault, uint64_t now_ns);
/* For links, once per exchange: true (and one count consumed) if this cycle's
 * inputs must be reported invalid (fault.invalidate_rx). */
bool autd3_dev_consume_rx_invalid(autd3_dev_t *d);

/* The firmware core without timing, for unit tests: what recv_ethercat() and
 * app_process_pending() do when called back to back. */
void autd3_dev_recv_frame(autd3_dev_t *d, const uint8_t frame[AUTD3_TX_FRAME_BYTES], uint64_t now_ns);

#endif
