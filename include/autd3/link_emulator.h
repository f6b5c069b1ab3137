/**
 * @file link_emulator.h
 * @brief Options of the in-process emulator link: the device timing model
 * (shared with the network emulator autd3-emu and the emulated TwinCAT
 * runtime) and the firmware the emulated devices run. The emulator's
 * counters, fault injection and output state are in autd3/emulator.h.
 *
 * See docs/device-model.md for the timing model and why its defaults are what
 * they are.
 * Formerly part of emulator.h, which includes this header. @since 0.1.0
 */
#ifndef AUTD3_LINK_EMULATOR_H
#define AUTD3_LINK_EMULATOR_H

#include <stdbool.h>
#include <stdint.h>

#include "autd3/error.h"
#include "autd3/proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * When an emulated device acts on a frame. A real AUTD3's port layer is not
 * public (docs/device-model.md explains the choice), so this is explicit.
 */
typedef struct autd3_timing_model {
  bool take_on_sync0;        /**< true: a new output image is taken at the next SYNC0 event; false: on arrival */
  uint32_t fifo_latency_ns;  /**< FIFO mode: time from take to processed (main loop) */
  uint32_t ll_latency_ns;    /**< low-latency mode: time from take to processed (inline ISR) */
  bool publish_on_sync0;     /**< true: (ack, data) become readable at the next SYNC0; false: once processed */
} autd3_timing_model_t;

/**
 * The default model (take at SYNC0, FIFO 100 µs, low-latency 10 µs, publish when processed).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_timing_model_t autd3_timing_model_default(void);
/**
 * The most pessimistic model (take at SYNC0, FIFO 900 µs, publish at SYNC0).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_timing_model_t autd3_timing_model_pessimistic(void);
/**
 * The ideal model (take on arrival, zero latency, publish at once: same-cycle acks).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_timing_model_t autd3_timing_model_ideal(void);
/**
 * Parse "default", "pessimistic", "ideal" or "take=sync0|arrival,fifo=NS,ll=NS,publish=sync0|now".
 * Context: any thread; RT-safe. Errors set the calling thread's message.
 */
AUTD3_EXTERN autd3_err_t autd3_timing_model_parse(const char *s, autd3_timing_model_t *out);

/** Options of the in-process emulator link. The device count comes from the geometry. Grows by appending fields
 * (see autd3_link_option_t); the embedded timing model and version are frozen for the soname. */
typedef struct autd3_emulator_option {
  uint32_t cycle_ns;            /**< bus cycle (SYNC0 period) paced by a real timer; default 1 000 000 */
  autd3_timing_model_t timing;  /**< default autd3_timing_model_default() */
  autd3_fw_version_t version;   /**< reported firmware versions; default AUTD3_FW_VERSION_DEFAULT (0.9.0 / 0.9.0) */
  /* appended in 0.3.0 */
  uint32_t firmware;            /**< autd3_emu_firmware_t: what the devices run; default AUTD3_EMU_FIRMWARE_NEW */
} autd3_emulator_option_t;

/**
 * Firmware the emulated devices run (autd3_emulator_option_t.firmware, and
 * `--firmware` of autd3-emu / autd3-twincat-emu). NEW: the new-generation
 * model (src/emulation/device/device.c; `version` applies). V12: firmware v12.1.0, the
 * msg_id protocol (src/emulation/device/v12.c; `version` and `timing` do not apply: it
 * reports v12.1.0 and executes one frame per 1 ms main-loop update). MIXED:
 * even-index devices NEW, odd-index V12 — a chain no client can drive, for
 * testing that protocol auto-detection refuses it (docs/legacy.md).
 */
typedef enum autd3_emu_firmware {
  AUTD3_EMU_FIRMWARE_NEW = 0,
  AUTD3_EMU_FIRMWARE_V12 = 1,
  AUTD3_EMU_FIRMWARE_MIXED = 2
} autd3_emu_firmware_t;
/**
 * Parse "new" (also "0.9"), "v12" or "mixed"; AUTD3_E_INVALID_OPTION otherwise.
 * Context: any thread; RT-safe. Errors set the calling thread's message.
 */
AUTD3_EXTERN autd3_err_t autd3_emu_firmware_parse(const char *s, autd3_emu_firmware_t *out);

/**
 * Defaults. In source (with autd3/link.h) a macro over autd3_link_option_default() that is safe when this struct
 * grows; this function keeps the 0.3.0 layout for binaries and FFI that call it.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_emulator_option_t autd3_emulator_option_default(void);

#ifdef __cplusplus
}
#endif
#endif
