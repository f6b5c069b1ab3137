/**
 * @file emulator.h
 * @brief The in-process AUTD3 device emulator: counters, fault injection,
 * execution log and output state. Its link options and the device timing
 * model (shared with the network emulator autd3-emu and the emulated TwinCAT
 * runtime) are in autd3/link_emulator.h, which this header includes.
 *
 * See docs/device-model.md for the timing model and why its defaults are what
 * they are.
 * @since 0.1.0
 */
#ifndef AUTD3_EMULATOR_H
#define AUTD3_EMULATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autd3/error.h"
#include "autd3/link_emulator.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Counters of one emulated device. */
typedef struct autd3_device_counters {
  uint64_t received;     /**< output images handed to the firmware */
  uint64_t executed;     /**< frames processed in order (seq == expected) */
  uint64_t deduplicated; /**< frames ignored as the same (seq, cmd) as the last */
  uint64_t dropped;      /**< frames dropped because the FIFO was full */
  uint64_t seq_mismatch; /**< processed frames ignored for seq != expected */
  uint64_t resets;       /**< Reset commands executed */
  uint64_t errors;       /**< commands that returned a non-zero error code */
} autd3_device_counters_t;

/** Faults to inject into one emulated device (all zero = none). */
typedef struct autd3_device_fault {
  uint32_t drop_next;        /**< drop the next K output images before the firmware sees them */
  bool freeze;               /**< stop processing and publishing (inputs keep their last value) */
  uint32_t invalidate_rx;    /**< make the next K cycles' inputs invalid (rx_valid false) */
} autd3_device_fault_t;

struct autd3_link;
/**
 * Inject faults into device `dev` of an emulator link (thread-safe; applied at
 * the next cycle). Replaces the device's current faults (all fields): a zeroed
 * fault clears them, `freeze = false` thaws a frozen device.
 * Context: any thread; takes the link's fault mutex for a copy (the bus thread only try-locks it, so never waits); no allocation.
 */
AUTD3_EXTERN autd3_err_t autd3_emulator_inject(struct autd3_link *link, uint16_t dev, const autd3_device_fault_t *fault);
/**
 * Power-cycle device `dev` of an emulator link at the next cycle (thread-safe):
 * its firmware goes back to the boot state (ack 0xFF, FIFO empty, mode FIFO,
 * not synchronized; injected faults end; counters kept) and the link reports
 * it through autd3_link_report_device_reset() before that cycle's inputs, as
 * an EtherCAT link that saw the device leave OP would.
 * Context: any thread; takes the link's fault mutex briefly (the bus thread only try-locks it); no allocation.
 */
AUTD3_EXTERN autd3_err_t autd3_emulator_power_cycle(struct autd3_link *link, uint16_t dev);
/**
 * Read device `dev`'s counters (thread-safe).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_emulator_counters(struct autd3_link *link, uint16_t dev, autd3_device_counters_t *out);
/**
 * autd3_emulator_counters() writing exactly `size` bytes of `out`: the prefix a smaller (older) struct has, zeros
 * past what the library knows for a larger one. The macro autd3_emulator_counters(link, dev, out) passes the
 * caller's sizeof; the exported function of that name writes the 0.3.0 layout. @since 0.3.0
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_emulator_counters_sized(struct autd3_link *link, uint16_t dev, autd3_device_counters_t *out,
                                                       size_t size);
#define autd3_emulator_counters(link, dev, out) autd3_emulator_counters_sized((link), (dev), (out), sizeof *(out))


/* ---- Execution log: the devices' own record of what they executed -------------------------
 * Every emulator (this in-process link, autd3-emu, the emulated TwinCAT runtime) keeps, per
 * device, a bounded log of the frames its firmware model executed, so tests can prove
 * "exactly once" against the device rather than the client (docs/reliability.md). */

/** Entries a device's log holds before the oldest undrained ones make new entries drop. */
#define AUTD3_EXEC_LOG_CAPACITY 2048

/** One frame a device executed (seq == expected, or a Reset). */
typedef struct autd3_exec_entry {
  uint32_t index;  /**< the device's count of executions before this one (gaps = dropped entries); survives power cycles */
  uint32_t tag;    /**< payload bytes 4..7, little-endian: a tagged XorHash frame's data[0..4] (the request id) */
  uint16_t boot;   /**< power cycles of the device before this execution */
  uint8_t seq;     /**< frame seq */
  uint8_t cmd;     /**< command byte (AUTD3_CMD_*) */
  uint8_t result;  /**< the data byte the command returned (0 = success) */
  uint8_t reserved[3];
} autd3_exec_entry_t;

/**
 * Drain device `dev`'s execution log of an emulator link (thread-safe against the bus
 * thread; one drainer at a time): moves up to `cap` oldest entries to `out`, `*n` = how
 * many. `*dropped` (may be NULL) = entries lost so far because the log was full (drain more
 * often than AUTD3_EXEC_LOG_CAPACITY executions). Draining allocates nothing.
 */
AUTD3_EXTERN autd3_err_t autd3_emulator_log_drain(struct autd3_link *link, uint16_t dev, autd3_exec_entry_t *out,
                                                  size_t cap, size_t *n, uint64_t *dropped);

/* ---- Output state (since 0.3.0) ------------------------------------------------------ */

/** Transducers of one emulated device (AUTD3_NUM_TRANSDUCERS in proto.h). */
#define AUTD3_OUTPUT_TRANSDUCERS 249
/** Modulation samples an output state carries (the first ones of the bank being played). */
#define AUTD3_OUTPUT_MOD_SAMPLES 1024

/**
 * What one emulated device emits now, as its FPGA would (docs/commands.md).
 * Time is not modelled: an STM and a modulation show their index 0, a
 * finite-loop bank change stays pending, silencer ramps are not applied
 * (phase and intensity are the targets, before modulation).
 */
typedef struct autd3_output_state {
  uint8_t phase[AUTD3_OUTPUT_TRANSDUCERS];     /**< drive phase (256 = 2π) plus the phase correction */
  uint8_t intensity[AUTD3_OUTPUT_TRANSDUCERS]; /**< drive intensity; 0 where the output mask disables the transducer */
  uint8_t pattern_bank;          /**< bank being emitted (0 or 1) */
  uint8_t pattern_emission_type; /**< 1 raw drives, 0 foci (foci are not expanded: phase/intensity show the raw RAM) */
  uint16_t pattern_divider;      /**< sampling divider of the bank (40 kHz / divider) */
  uint32_t pattern_size;         /**< 1 = a single pattern, > 1 = an STM of that many patterns */
  uint16_t pattern_rep;          /**< 0xFFFF = loop forever, else repetitions − 1 */
  bool transition_pending;       /**< a pattern bank change waits for its transition */
  uint8_t modulation_bank;       /**< modulation bank being played */
  uint32_t modulation_size;      /**< samples in that bank (2..65536) */
  uint16_t modulation_divider;   /**< sampling divider (40 kHz / divider) */
  uint16_t modulation_rep;       /**< 0xFFFF = loop forever */
  bool modulation_transition_pending; /**< a modulation bank change waits for its transition */
  uint32_t modulation_cursor;    /**< index being played (0: time is not modelled) */
  uint8_t modulation;            /**< the sample at the cursor (255 = full) */
  uint8_t modulation_buffer[AUTD3_OUTPUT_MOD_SAMPLES]; /**< the first min(size, 1024) samples; the rest 0 */
  uint8_t silencer_flag;         /**< bit 0 fixed update rate, bit 1 strict */
  uint16_t silencer_update_rate_intensity, silencer_update_rate_phase;
  uint16_t silencer_completion_steps_intensity, silencer_completion_steps_phase;
  uint16_t pulse_width_table[256]; /**< the pulse width (FPGA clocks of 512 per period) for intensity × modulation / 255 */
  bool force_fan;       /**< ForceFan set */
  uint8_t gpio_in;      /**< emulated GPIO inputs, bit i = input i */
  uint64_t gpio_out[4]; /**< GPIO output settings as sent: type << 56 | parameter */
  uint8_t fpga_state;   /**< the ReadFpgaState (0xE7) answer */
  uint8_t error_detail; /**< the latched firmware error code (ReadErrorDetail 0xE0; 0 = none) */
} autd3_output_state_t;

/**
 * Read device `dev`'s output state (thread-safe). The state reflects every
 * frame whose ack the client has seen: the bus thread publishes a copy after
 * each exchange; this call waits (sleeping, a few cycles at most) while a
 * newer state is not yet published; AUTD3_E_TIMEOUT after 1 s.
 * Context: any thread; takes the output states' mutex for a copy (the bus
 * thread only try-locks it); may sleep; no allocation.
 */
AUTD3_EXTERN autd3_err_t autd3_emulator_output(struct autd3_link *link, uint16_t dev, autd3_output_state_t *out);

/**
 * The published output states of an emulator link's devices, as an object
 * that outlives the link: take it while the client is open, read it after
 * autd3_client_close() to see what close left the devices emitting.
 */
typedef struct autd3_emulator_outputs autd3_emulator_outputs_t;
/**
 * Take a reference to `link`'s output states (release it with
 * autd3_emulator_outputs_release()).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_emulator_outputs(struct autd3_link *link, autd3_emulator_outputs_t **out);
/**
 * Read device `dev`'s output state, as autd3_emulator_output(); after the
 * link closed, the state it had when it closed.
 * Context: any thread; takes the object's mutex for a copy; may sleep; no allocation.
 */
AUTD3_EXTERN autd3_err_t autd3_emulator_outputs_read(autd3_emulator_outputs_t *o, uint16_t dev, autd3_output_state_t *out);
/**
 * Drop a reference (NULL is fine); the last one frees.
 * Context: any thread; may free.
 */
AUTD3_EXTERN void autd3_emulator_outputs_release(autd3_emulator_outputs_t *o);

#ifdef __cplusplus
}
#endif
#endif
