/**
 * @file command.h
 * @brief Making ultrasound: encoders for the commands that drive the
 * transducers (patterns, silencer, phase correction, output mask) and the
 * helpers users expect (focus, plane wave, Bessel beam, null) that turn a
 * geometry into the frame(s) to send.
 *
 * Payload layouts are those of the 0.9 firmware generation (crate
 * autd3-cpu-wire 0.9.0, src/payload); docs/commands.md describes each one.
 * Out-of-range values are errors (AUTD3_E_INVALID_ARGUMENT with a message
 * naming the value and its range), never clamped.
 *
 * Calling context: every function here is pure (no allocation, no lock, no
 * blocking): any thread; RT-safe.
 * @since 0.3.0
 */
#ifndef AUTD3_COMMAND_H
#define AUTD3_COMMAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autd3/error.h"
#include "autd3/geometry.h"
#include "autd3/proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Drive of one transducer: phase (256 = 2π) and intensity (0 = off, 255 = full). */
typedef struct autd3_drive {
  uint8_t phase;
  uint8_t intensity;
} autd3_drive_t;

/** One device's command: opcode and payload (the rest of the payload is zero). */
typedef struct autd3_command {
  uint8_t cmd;
  uint16_t len;
  uint8_t payload[AUTD3_PAYLOAD_BYTES];
} autd3_command_t;

/** Pattern / modulation loop: forever, or a finite number of repetitions. */
#define AUTD3_LOOP_INFINITE 0xFFFFu

/** When the device switches to a newly written bank. */
typedef enum autd3_transition_mode {
  AUTD3_TRANSITION_SYNC_IDX = 0x00,  /**< at the next wrap of the sampling index (finite loops) */
  AUTD3_TRANSITION_SYS_TIME = 0x01,  /**< at DC system time `value` ns (finite loops) */
  AUTD3_TRANSITION_GPIO = 0x02,      /**< on GPIO input `value` (0..3) (finite loops) */
  AUTD3_TRANSITION_EXT = 0xF0,       /**< alternate banks on the external signal (infinite loops) */
  AUTD3_TRANSITION_IMMEDIATE = 0xFF  /**< at once (infinite loops) */
} autd3_transition_mode_t;

/** A bank transition: mode, its value, and the sys-time margin (0 = the firmware's 10 ms). */
typedef struct autd3_transition {
  autd3_transition_mode_t mode;
  uint64_t value;
  uint32_t margin_ns;
} autd3_transition_t;

/* ---- encoders (one device's command) -------------------------------------------------- */

/**
 * WritePatternBuffer (0x10): `n` drives written at word `offset` of pattern
 * bank `bank` (pattern index i starts at word 256·i). n ≤ 308, bank ≤ 1,
 * offset + n ≤ 262144.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_write_pattern(autd3_command_t *out, uint8_t bank, uint32_t offset, const autd3_drive_t *drives,
                                                 size_t n);
/**
 * ConfigPattern (0x11) for raw drives: bank `bank` plays `size` patterns
 * (1 = a static pattern, 2..1024 = an STM), one every `divider` periods of
 * 40 kHz, `rep` loops (AUTD3_LOOP_INFINITE or repetitions − 1; a finite loop
 * needs size ≥ 2).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_config_pattern(autd3_command_t *out, uint8_t bank, uint16_t divider, uint32_t size,
                                                  uint16_t rep);
/**
 * ChangePatternBank (0x12): switch to bank `bank` with `transition` (an
 * infinite loop takes IMMEDIATE or EXT, a finite one SYNC_IDX, SYS_TIME or GPIO).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_change_pattern_bank(autd3_command_t *out, uint8_t bank, const autd3_transition_t *transition);
/**
 * WritePatternFused (0x14), what the 0.9 client sends for a static gain:
 * 249 drives into slot 0 of bank `bank`, configured as a single pattern
 * (divider, infinite loop) and switched to with `transition` (NULL =
 * IMMEDIATE). divider ≥ 1.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_write_pattern_fused(autd3_command_t *out, uint8_t bank,
                                                       const autd3_drive_t drives[AUTD3_NUM_TRANSDUCERS], uint16_t divider,
                                                       const autd3_transition_t *transition);
/**
 * SetSilencer (0x30), fixed update rate: phase and intensity move towards
 * their target by a fixed rate per 40 kHz step; the values go to the FPGA as
 * they are (the firmware's default is 256). Both ≥ 1.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_silencer_fixed_update_rate(autd3_command_t *out, uint16_t intensity, uint16_t phase);
/**
 * SetSilencer (0x30), fixed completion time: every change completes in
 * `intensity_ns`/`phase_ns`, each a non-zero multiple of 25 µs (one 40 kHz
 * period) of at most 65535 periods. `strict`: the device then refuses
 * sampling dividers shorter than the completion (the reference's default,
 * 250 µs / 1 ms, strict). Default: autd3_cmd_silencer_default().
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_silencer_fixed_completion_time(autd3_command_t *out, uint64_t intensity_ns, uint64_t phase_ns,
                                                                  bool strict);
/**
 * The reference's default silencer: fixed completion time 250 µs (intensity)
 * and 1 ms (phase), strict.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_silencer_default(autd3_command_t *out);
/**
 * The silencer off: completion in one period (25 µs) for both, not strict.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_silencer_disable(autd3_command_t *out);
/**
 * SetPhaseCorrection (0x40): a phase added to every transducer's drive.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_phase_correction(autd3_command_t *out, const uint8_t phase[AUTD3_NUM_TRANSDUCERS]);
/**
 * SetOutputMask (0x41): enabled[i] false silences transducer i whatever its drive.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_output_mask(autd3_command_t *out, const bool enabled[AUTD3_NUM_TRANSDUCERS]);

/** Packings of WritePatternCompressed: phases only, at full intensity. */
typedef enum autd3_pattern_compression {
  AUTD3_PATTERN_PHASE_FULL = 1, /**< 2 patterns per frame, 8-bit phases */
  AUTD3_PATTERN_PHASE_HALF = 2  /**< 4 patterns per frame, 4-bit phases (the high nibble of each) */
} autd3_pattern_compression_t;

/**
 * WritePatternCompressed (0x13): `count` phase-only patterns (full
 * intensity) into indices `index`.. of bank `bank`; `phases` holds count ×
 * 249 phases, pattern after pattern. count 1..2 (PHASE_FULL) or 1..4
 * (PHASE_HALF); index + count ≤ 1024.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_write_pattern_compressed(autd3_command_t *out, uint8_t bank, uint32_t index,
                                                            autd3_pattern_compression_t format, const uint8_t *phases,
                                                            size_t count);

/** A pattern STM: `size` patterns played one after another from one bank. */
typedef struct autd3_pattern_stm {
  const autd3_drive_t *drives; /**< size × 249 drives of one device, pattern after pattern */
  size_t size;                 /**< 2..1024 */
  uint16_t divider;            /**< one pattern every `divider` periods of 40 kHz (≥ 1) */
  uint16_t rep;                /**< AUTD3_LOOP_INFINITE or repetitions − 1 */
  uint8_t bank;                /**< 0 or 1 */
  autd3_transition_t transition; /**< IMMEDIATE/EXT for an infinite loop; SYNC_IDX/SYS_TIME/GPIO for a finite one */
  bool later;                  /**< write and configure only; switch later with autd3_cmd_change_pattern_bank */
  int compression;             /**< 0: phase and intensity (one pattern per frame); or an autd3_pattern_compression_t
                                    (phase only at full intensity, 2 or 4 patterns per frame) */
} autd3_pattern_stm_t;

/** The most commands a pattern STM needs: 1024 patterns one per frame, then config and change. */
#define AUTD3_PATTERN_STM_MAX_COMMANDS 1026

/**
 * One device's commands for a pattern STM, as the 0.9 client splits it
 * (crate autd3-rs 0.9.0 src/commands/stm/pattern.rs): WritePatternBuffer per
 * pattern (or WritePatternCompressed per 2 or 4), ConfigPattern, then
 * (unless `later`) ChangePatternBank. Call it per device and send command
 * k of every device together (autd3_frame_buffer_set). `cap` ≥ the count.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_pattern_stm_commands(const autd3_pattern_stm_t *stm, autd3_command_t *out, size_t cap, size_t *n);

/** One focal point of a foci STM step: a position (mm, world frame) and its phase offset. */
typedef struct autd3_control_point {
  float pos[3];
  uint8_t phase_offset; /**< 256 = 2π; only the offset relative to the step's first point is sent */
} autd3_control_point_t;

/** The most foci a bank holds (size × num_foci), and the most commands a foci STM needs. */
#define AUTD3_FOCI_MAX_TOTAL 65536u
#define AUTD3_FOCI_NUM_MAX 8u
#define AUTD3_FOCI_STM_MAX_COMMANDS 854

/**
 * A foci STM: `size` steps of `num_foci` focal points each; the device's FPGA
 * computes every transducer's phase from the points and the sound speed
 * (emission type "foci" of ConfigPattern), so one step costs 8 bytes per
 * point instead of 498 bytes of drives.
 */
typedef struct autd3_foci_stm {
  const autd3_control_point_t *points; /**< size × num_foci points, step after step */
  const uint8_t *intensities;          /**< size intensities (one per step), or NULL for 255 */
  size_t size;                         /**< ≥ 2, size × num_foci ≤ AUTD3_FOCI_MAX_TOTAL */
  uint8_t num_foci;                    /**< 1..AUTD3_FOCI_NUM_MAX */
  uint16_t divider;                    /**< one step every `divider` periods of 40 kHz (≥ 1) */
  uint16_t rep;                        /**< AUTD3_LOOP_INFINITE or repetitions − 1 */
  uint8_t bank;                        /**< 0 or 1 */
  autd3_transition_t transition;       /**< IMMEDIATE/EXT for an infinite loop; SYNC_IDX/SYS_TIME/GPIO for a finite one */
  bool later;                          /**< write and configure only; switch later with autd3_cmd_change_pattern_bank */
} autd3_foci_stm_t;

/**
 * Device `dev`'s commands for foci STM `stm` on geometry `geo`, as the 0.9
 * client splits them (crate autd3-rs 0.9.0 src/commands/stm/foci.rs): one
 * WritePatternFused of emission type foci when all points fit one frame
 * (≤ 74) and the switch is not `later`; else WritePatternBuffer frames of 77
 * points, ConfigPattern (foci, with the geometry's sound speed in m/s · 64)
 * and (unless `later`) ChangePatternBank. Points are sent in the device's
 * frame in units of 0.025 mm (18-bit: a point off the representable range,
 * about ±3.2 m, is an error naming it). Call it per device and send command
 * k of every device together (autd3_frame_buffer_set). `cap` ≥ the count
 * (AUTD3_FOCI_STM_MAX_COMMANDS always suffices).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_foci_stm_commands(const autd3_foci_stm_t *stm, const autd3_geometry_t *geo, size_t dev,
                                                 autd3_command_t *out, size_t cap, size_t *n);

/**
 * WriteModulationBuffer (0x20): `n` samples (255 = full) at sample `offset`
 * (even) of modulation bank `bank`. n ≤ 616, offset + n ≤ 65536.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_write_modulation(autd3_command_t *out, uint8_t bank, uint32_t offset, const uint8_t *data,
                                                    size_t n);
/**
 * ConfigModulation (0x21): bank `bank` plays `size` samples (2..65536), one
 * every `divider` periods of 40 kHz, `rep` loops (AUTD3_LOOP_INFINITE or
 * repetitions − 1).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_config_modulation(autd3_command_t *out, uint8_t bank, uint16_t divider, uint32_t size,
                                                     uint16_t rep);
/**
 * ChangeModulationBank (0x22): switch to modulation bank `bank` with `transition`.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_change_modulation_bank(autd3_command_t *out, uint8_t bank, const autd3_transition_t *transition);
/**
 * WriteModulationFused (0x23): a whole modulation of `n` samples (2..600)
 * written, configured and switched to in one frame.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_write_modulation_fused(autd3_command_t *out, uint8_t bank, const uint8_t *data, size_t n,
                                                          uint16_t divider, uint16_t rep, const autd3_transition_t *transition);

/** A modulation to send: samples, sampling, loop and how to switch to it. */
typedef struct autd3_modulation {
  const uint8_t *data;  /**< samples, 255 = full intensity */
  size_t size;          /**< 2..65536 */
  uint16_t divider;     /**< one sample every `divider` periods of 40 kHz (≥ 1) */
  uint16_t rep;         /**< AUTD3_LOOP_INFINITE (default) or repetitions − 1 */
  uint8_t bank;         /**< 0 (default) or 1 */
  autd3_transition_t transition; /**< default IMMEDIATE */
  bool later;           /**< write and configure only; switch later with autd3_cmd_change_modulation_bank */
} autd3_modulation_t;

/** The longest modulation in commands: 65536 samples in 616-sample frames, then config and change. */
#define AUTD3_MODULATION_MAX_COMMANDS 109

/**
 * The commands that send modulation `m`, as the 0.9 client splits them
 * (crate autd3-rs 0.9.0 src/commands/modulation.rs): one WriteModulationFused
 * when it fits (≤ 600 samples, not `later`); else WriteModulationBuffer
 * frames of 616 samples, ConfigModulation, and (unless `later`)
 * ChangeModulationBank. Send them in order, each as a broadcast frame.
 * `cap` ≥ the count (AUTD3_MODULATION_MAX_COMMANDS always suffices).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_modulation_commands(const autd3_modulation_t *m, autd3_command_t *out, size_t cap, size_t *n);
/**
 * Static modulation: two samples of `intensity`, divider 0xFFFF, loop forever.
 * `buf` receives the samples (2) and must outlive `*out`.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_modulation_static(uint8_t intensity, uint8_t buf[2], autd3_modulation_t *out);
/**
 * Sine modulation of `freq_hz`, sampled every `divider` periods of 40 kHz:
 * sample i = ⌊offset + amplitude/2 · sin(2π·freq·i/fs) + ½⌋, over the
 * shortest whole number of periods that fits exactly in ≤ `cap` samples
 * (fs = 40 kHz / divider). offset ± amplitude/2 must round into 0..255
 * (pyautd3's default: amplitude 255, offset 127) and 0 < freq ≤ fs/2; a
 * frequency with no exact period within `cap` samples is an error naming
 * the nearest one that has. `buf` (≥ 2 samples) must outlive `*out`.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_modulation_sine(float freq_hz, uint16_t divider, uint8_t amplitude, uint8_t offset, uint8_t *buf,
                                               size_t cap, autd3_modulation_t *out);

/** Entries of the pulse-width table; a pulse width is in FPGA clocks, 0..511 (512 = one 40 kHz period). */
#define AUTD3_PULSE_WIDTH_TABLE_SIZE 256
#define AUTD3_PULSE_WIDTH_PERIOD 512

/**
 * SetPulseWidthTable (0x42): the pulse width for each value of
 * intensity × modulation / 255. Every entry < 512.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_pulse_width_table(autd3_command_t *out, const uint16_t table[AUTD3_PULSE_WIDTH_TABLE_SIZE]);
/**
 * The default table (the firmware's at power-on and the 0.9 client's
 * default): entry i = round(asin(i/255)/π · 512), so that the emitted
 * amplitude is linear in the value.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN void autd3_pulse_width_table_default(uint16_t table[AUTD3_PULSE_WIDTH_TABLE_SIZE]);
/**
 * ForceFan (0x60): run the device's fan regardless of temperature (or not).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_force_fan(autd3_command_t *out, bool on);
/**
 * EmulateGpioIn (0x50): drive the four GPIO inputs from software (for GPIO transitions).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_emulate_gpio_in(autd3_command_t *out, const bool in[4]);

/** What a GPIO output pin shows (crate autd3-cpu-wire 0.9.0 params GPIO_O_TYPE_*). */
typedef enum autd3_gpio_out_type {
  AUTD3_GPIO_OUT_NONE = 0x00,
  AUTD3_GPIO_OUT_BASE_SIGNAL = 0x01,
  AUTD3_GPIO_OUT_THERMO = 0x02,
  AUTD3_GPIO_OUT_FORCE_FAN = 0x03,
  AUTD3_GPIO_OUT_SYNC = 0x10,
  AUTD3_GPIO_OUT_MOD_BANK = 0x20,
  AUTD3_GPIO_OUT_MOD_IDX = 0x21,      /**< value: the modulation index (0..65535) that raises the pin */
  AUTD3_GPIO_OUT_PATTERN_BANK = 0x50,
  AUTD3_GPIO_OUT_PATTERN_IDX = 0x51,  /**< value: the pattern index (0..65535) */
  AUTD3_GPIO_OUT_IS_STM_MODE = 0x52,
  AUTD3_GPIO_OUT_SYS_TIME_EQ = 0x60,  /**< value: a DC system time in ns */
  AUTD3_GPIO_OUT_SYNC_DIFF = 0x70,
  AUTD3_GPIO_OUT_PWM_OUT = 0xE0,      /**< value: the transducer (0..248) whose PWM is shown */
  AUTD3_GPIO_OUT_DIRECT = 0xF0        /**< value: 0 or 1, the pin level */
} autd3_gpio_out_type_t;

/** One GPIO output: what it shows and its parameter (0 for the types that take none). */
typedef struct autd3_gpio_out {
  autd3_gpio_out_type_t type;
  uint64_t value;
} autd3_gpio_out_t;

/**
 * SetGpioOut (0x52): the four GPIO outputs. Each is sent as type << 56 |
 * parameter (a DC time is converted to the FPGA's time base as the reference
 * does); a parameter out of its type's range is an error.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_cmd_gpio_out(autd3_command_t *out, const autd3_gpio_out_t outputs[4]);

/* ---- frames ---------------------------------------------------------------------------- */

/**
 * A frame with one command per device (devices may differ). About 80 KB:
 * allocate it (malloc or static), not on a small stack. The frame built from
 * it points into it, so it must outlive the send (until the request
 * completes).
 */
typedef struct autd3_frame_buffer {
  size_t num_devices;
  uint8_t cmds[AUTD3_MAX_DEVICES];
  uint8_t payloads[AUTD3_MAX_DEVICES][AUTD3_PAYLOAD_BYTES];
} autd3_frame_buffer_t;

/**
 * Put `cmd` as device `dev`'s command into `buf` (dev < AUTD3_MAX_DEVICES;
 * num_devices grows to dev + 1).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_frame_buffer_set(autd3_frame_buffer_t *buf, size_t dev, const autd3_command_t *cmd);
/**
 * The per-device frame of `buf` (every device 0..num_devices−1 must be set).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_frame_buffer_frame(const autd3_frame_buffer_t *buf, autd3_frame_t *out);
/**
 * A broadcast frame: the same command to every device (silencer, ...).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_frame_broadcast(const autd3_command_t *cmd, autd3_frame_t *out);

/* ---- gains: a drive per transducer from the geometry ----------------------------------- */

/** Kinds of gain. */
typedef enum autd3_gain_kind {
  AUTD3_GAIN_NULL = 0,   /**< every transducer off */
  AUTD3_GAIN_FOCUS = 1,  /**< a focal point at `pos` */
  AUTD3_GAIN_PLANE = 2,  /**< a plane wave travelling along `dir` */
  AUTD3_GAIN_BESSEL = 3, /**< a Bessel beam from apex `pos` along `dir`, cone half-angle `theta` (rad) */
  AUTD3_GAIN_UNIFORM = 4 /**< every transducer at phase `phase` */
} autd3_gain_kind_t;

/** A gain. Build it with the autd3_gain_*() helpers, then adjust `intensity` or `phase_offset`. */
typedef struct autd3_gain {
  autd3_gain_kind_t kind;
  float pos[3];         /**< mm, world frame (focus, Bessel apex) */
  float dir[3];         /**< direction (plane, Bessel); need not be unit, must not be zero */
  float theta;          /**< Bessel cone half-angle, rad */
  uint8_t intensity;    /**< every transducer's intensity (default 255) */
  uint8_t phase_offset; /**< added to every phase (uniform: the phase) */
} autd3_gain_t;

/** Null gain (silence). Context: any thread; RT-safe. */
AUTD3_EXTERN autd3_gain_t autd3_gain_null(void);
/** Focus at (x, y, z) mm, full intensity. Context: any thread; RT-safe. */
AUTD3_EXTERN autd3_gain_t autd3_gain_focus(float x, float y, float z);
/** Plane wave along (dx, dy, dz), full intensity. Context: any thread; RT-safe. */
AUTD3_EXTERN autd3_gain_t autd3_gain_plane(float dx, float dy, float dz);
/** Bessel beam from apex (x, y, z) mm along (dx, dy, dz), cone half-angle theta rad. Context: any thread; RT-safe. */
AUTD3_EXTERN autd3_gain_t autd3_gain_bessel(float x, float y, float z, float dx, float dy, float dz, float theta);
/** Every transducer at `phase`, `intensity`. Context: any thread; RT-safe. */
AUTD3_EXTERN autd3_gain_t autd3_gain_uniform(uint8_t phase, uint8_t intensity);

/**
 * The drives of device `dev` of `geo` for gain `g`, with the geometry's
 * sound speed (autd3_geometry_sound_speed). Focus: phase = −k·|pos − x_i|;
 * plane: −k·(dir·x_i); Bessel: −k·(sin θ·ρ_i − cos θ·z_i) in the beam frame
 * (the sign the device's FPGA uses for foci, and the SDK's Focus);
 * k = 2π·40 kHz / c; the phase in units of 2π/256, rounded to the nearest
 * (halves away from zero), modulo 256.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_gain_calc(const autd3_gain_t *g, const autd3_geometry_t *geo, size_t dev,
                                         autd3_drive_t out[AUTD3_NUM_TRANSDUCERS]);
/**
 * The frame that puts gain `g` on every device of `geo`: per device a
 * WritePatternFused into bank 0, divider 0xFFFF, loop forever, switched to
 * at once (as the 0.9 client's close silences: for the null gain the bytes
 * are those). `buf` is filled; `out` points into it.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_gain_frame(const autd3_gain_t *g, const autd3_geometry_t *geo, autd3_frame_buffer_t *buf,
                                          autd3_frame_t *out);

#ifdef __cplusplus
}
#endif
#endif
