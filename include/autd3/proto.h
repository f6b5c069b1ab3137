/**
 * @file proto.h
 * @brief The AUTD3 wire protocol (new generation): frame sizes, opcodes,
 * device error codes and payload encoders.
 *
 * Host → device, per device and bus cycle: 626 bytes = seq (u8), cmd (u8),
 * 624 payload bytes. Device → host: 2 bytes = ack (seq of the last accepted
 * frame, 0xFF after boot/Reset), data (0 = OK, an error code, or a read
 * value). Multi-byte payload fields are little-endian.
 * Source: shinolab/autd3-sdk crates/autd3-rs-core/src/protocol, firmware/cpu/inc/proto.h.
 *
 * Calling context: pure functions, thread-safe, no allocation, no I/O.
 * @since 0.1.0
 */
#ifndef AUTD3_PROTO_H
#define AUTD3_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autd3/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AUTD3_TX_FRAME_BYTES 626 /**< host → device bytes per device per cycle */
#define AUTD3_RX_FRAME_BYTES 2   /**< device → host bytes per device per cycle */
#define AUTD3_PAYLOAD_BYTES 624  /**< payload bytes after seq and cmd */
#define AUTD3_MAX_DEVICES 128    /**< largest chain a client drives */
#define AUTD3_MAX_INFLIGHT 127   /**< half the 8-bit seq space */
#define AUTD3_NUM_TRANSDUCERS 249 /**< transducers per AUTD3 device */
#define AUTD3_XOR_HASH_MAX_DATA 620 /**< XorHash data bytes at most */

/**
 * Firmware identity: the CPU and FPGA versions a device reports
 * (autd3_client_read_firmware_version(); the emulators report
 * AUTD3_FW_VERSION_DEFAULT unless told otherwise). Formerly in emulator.h,
 * which still provides it (it includes this header). @since 0.1.0
 */
typedef struct autd3_fw_version {
  uint8_t cpu_major, cpu_minor, cpu_patch;
  uint8_t fpga_major, fpga_minor, fpga_patch;
} autd3_fw_version_t;

/**
 * The firmware identity an emulated device reports unless told otherwise:
 * CPU 0.9.0 and FPGA 0.9.0, the series the client's open sequence follows
 * (crate autd3-rs 0.9.0; AUTD3_FW_SERIES_MAJOR/MINOR in client.h), so that
 * `require_supported_firmware` accepts the emulator as it accepts a device of
 * that generation. Before 0.2.0 the default was 0.1.0, which that check
 * refuses. Use as an initializer: `autd3_fw_version_t v = AUTD3_FW_VERSION_DEFAULT;`
 */
#define AUTD3_FW_VERSION_DEFAULT {0, 9, 0, 0, 9, 0}

/** Opcodes (byte 1 of a tx frame). */
#define AUTD3_CMD_MAP(XX)                    \
  XX(RESET, 0x00)                            \
  XX(SYNCHRONIZE, 0x01)                      \
  XX(SET_MODE, 0x02)                         \
  XX(CLEAR, 0x03)                            \
  XX(NOP, 0x04)                              \
  XX(WRITE_PATTERN_BUFFER, 0x10)             \
  XX(CONFIG_PATTERN, 0x11)                   \
  XX(CHANGE_PATTERN_BANK, 0x12)              \
  XX(WRITE_PATTERN_COMPRESSED, 0x13)         \
  XX(WRITE_MODULATION_BUFFER, 0x20)          \
  XX(CONFIG_MODULATION, 0x21)                \
  XX(CHANGE_MODULATION_BANK, 0x22)           \
  XX(SET_SILENCER, 0x30)                     \
  XX(SET_PHASE_CORRECTION, 0x40)             \
  XX(SET_OUTPUT_MASK, 0x41)                  \
  XX(SET_PULSE_WIDTH_TABLE, 0x42)            \
  XX(EMULATE_GPIO_IN, 0x50)                  \
  XX(SET_GPIO_OUT, 0x52)                     \
  XX(FORCE_FAN, 0x60)                        \
  XX(READ_ERROR_DETAIL, 0xE0)                \
  XX(READ_CPU_FW_VERSION_MAJOR, 0xE1)        \
  XX(READ_CPU_FW_VERSION_MINOR, 0xE2)        \
  XX(READ_CPU_FW_VERSION_PATCH, 0xE3)        \
  XX(READ_FPGA_FW_VERSION_MAJOR, 0xE4)       \
  XX(READ_FPGA_FW_VERSION_MINOR, 0xE5)       \
  XX(READ_FPGA_FW_VERSION_PATCH, 0xE6)       \
  XX(READ_FPGA_STATE, 0xE7)                  \
  XX(XOR_HASH, 0xF0)                         \
  /* Sent by the reference client autd3-rs 0.9.0 (PyPI autd3 0.9.0, crate \
   * autd3-cpu-wire Cmd table; firmware fw/src/app.rs dispatch): a pattern \
   * write + config + bank change in one frame (close() sends a zero raw    \
   * pattern with it), its modulation twin, and the FPGA function bits read \
   * (high byte of the FPGA major-version register) after the versions. */ \
  XX(WRITE_PATTERN_FUSED, 0x14)              \
  XX(WRITE_MODULATION_FUSED, 0x23)           \
  XX(READ_FPGA_FUNCTIONS, 0xE9)

/** Opcode values. */
typedef enum autd3_cmd {
#define AUTD3_CMD_ENUM_(name, val) AUTD3_CMD_##name = (val),
  AUTD3_CMD_MAP(AUTD3_CMD_ENUM_)
#undef AUTD3_CMD_ENUM_
} autd3_cmd_t;

/** Device error codes (rx data byte for non-read commands). */
#define AUTD3_DEV_ERR_MAP(XX)                   \
  XX(NONE, 0x00, "no error")                    \
  XX(UNKNOWN_CMD, 0x01, "unknown command")      \
  XX(INVALID_PAYLOAD, 0x02, "invalid payload")  \
  XX(INVALID_DATA, 0x03, "invalid data")        \
  XX(INVALID_SILENCER_SETTING, 0x04, "invalid silencer setting") \
  XX(INVALID_TRANSITION_MODE, 0x05, "invalid transition mode")   \
  XX(MISS_TRANSITION_TIME, 0x06, "missed transition time")       \
  XX(FPGA_TIMEOUT, 0x07, "FPGA timeout")                         \
  XX(SYNC_NOT_READY, 0x08, "DC not configured")                  \
  XX(INVALID_SYNC0_CYCLE, 0x09, "SYNC0 cycle not a multiple of 500 us")

/** Device error code values. */
typedef enum autd3_dev_err {
#define AUTD3_DEV_ERR_ENUM_(name, val, msg) AUTD3_DEV_ERR_##name = (val),
  AUTD3_DEV_ERR_MAP(AUTD3_DEV_ERR_ENUM_)
#undef AUTD3_DEV_ERR_ENUM_
} autd3_dev_err_t;

/**
 * Name of an opcode ("UNKNOWN" if not in the table).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN const char *autd3_cmd_name(uint8_t cmd);
/**
 * Message of a device error code ("unknown device error" if not in the table).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN const char *autd3_dev_err_message(uint8_t code);

/** Firmware mode for SetMode. */
typedef enum autd3_fw_mode { AUTD3_MODE_FIFO = 0, AUTD3_MODE_LOW_LATENCY = 1 } autd3_fw_mode_t;

/**
 * One command to send. Broadcast (the same cmd and payload for every device)
 * when `device_cmds` is NULL; otherwise per device: `device_cmds[i]` and
 * `device_payloads + i*624` for device i (use AUTD3_CMD_NOP for devices the
 * command does not address). The client copies the frame at send time, so the
 * caller's buffers may be reused as soon as send returns.
 */
typedef struct autd3_frame {
  uint8_t cmd;                          /**< broadcast opcode */
  uint16_t len;                         /**< meaningful payload bytes (rest is zero) */
  uint8_t payload[AUTD3_PAYLOAD_BYTES]; /**< broadcast payload */
  const uint8_t *device_cmds;           /**< NULL = broadcast, else N opcodes */
  const uint8_t *device_payloads;       /**< N × 624 bytes when device_cmds != NULL */
} autd3_frame_t;

/**
 * A broadcast frame with no payload for `cmd` (Reset, Clear, Nop, Synchronize, reads).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_frame_t autd3_frame_simple(uint8_t cmd);
/**
 * SetMode frame (payload[0] = mode).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_frame_t autd3_frame_set_mode(autd3_fw_mode_t mode);
/**
 * XorHash (test/benchmark command): u16 sleep_ms at 0, u16 data_len at 2,
 * data at 4. The device sleeps sleep_ms, then answers 0 if the XOR of the
 * data is 0, else INVALID_DATA. len > 620 → AUTD3_E_PAYLOAD.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_frame_xor_hash(autd3_frame_t *out, uint16_t sleep_ms, const uint8_t *data, size_t len);
/**
 * The perftest frame: sleep_ms, then `len` bytes of 0xA5 whose last byte is
 * the XOR of the others (so the device answers 0). len ≤ 620.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_frame_xor_hash_bench(autd3_frame_t *out, uint16_t sleep_ms, size_t len);

/**
 * Write one device's 626-byte tx frame: seq, cmd, then payload (zero-filled).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN void autd3_tx_encode(uint8_t tx[AUTD3_TX_FRAME_BYTES], uint8_t seq, uint8_t cmd, const uint8_t *payload, size_t len);


/* ---- Firmware v12 (msg_id) protocol: the previous generation ----------------
 * Same 626 B out / 2 B in per device; different bytes inside (shinolab/autd3-rs
 * v38 crate autd3-driver 38.1.0 src/firmware, firmware shinolab/autd3-firmware
 * v12.1.0). docs/legacy.md has the client and device behaviour.
 *
 * Tx: byte 0 msg_id (0..15), byte 1 reserved (0), bytes 2..3 slot_2_offset
 * (u16 LE, offset of the second operation from byte 4; 0 = none), bytes
 * 4..625 payload: operation 1 at byte 4 (its first byte is its tag), operation
 * 2 at 4 + slot_2_offset; operations are 2-byte aligned.
 * Rx: byte 0 data, byte 1 ack = (err << 4) | msg_id of the last executed frame
 * (the reverse byte order of the new generation's (ack, data)).
 *
 * In an autd3_frame_t the v12 header's reserved byte sits where `cmd` sits and
 * slot_2_offset + operations fill `payload`, so autd3_tx_encode() writes a v12
 * frame when given msg_id as seq: build frames with autd3_v12_frame(). */
#define AUTD3_V12_MSG_ID_MAX 0x0F     /**< msg_ids 0..15; the host uses 1..15, then 0, cycling */
#define AUTD3_V12_HEADER_BYTES 4      /**< msg_id, reserved, slot_2_offset */
#define AUTD3_V12_PAYLOAD_BYTES 622   /**< operation bytes after the header */
#define AUTD3_V12_RING_SLOTS 16       /**< the firmware's frame ring (MSG_ID_MAX + 1) */
#define AUTD3_V12_MAJOR_BYTE_V12_1 0xA5 /**< CPU/FPGA major version byte of firmware v12.1 (crate autd3-driver 38.1.0 version.rs) */

/** v12 operation tags (firmware src/cpu/inc/params_cpu.h, crate autd3-firmware-emulator 38.1.0 src/cpu/params.rs). */
#define AUTD3_V12_TAG_NOP 0x00
#define AUTD3_V12_TAG_CLEAR 0x01
#define AUTD3_V12_TAG_SYNC 0x02
#define AUTD3_V12_TAG_FIRM_INFO 0x03
#define AUTD3_V12_TAG_MODULATION 0x10
#define AUTD3_V12_TAG_MODULATION_CHANGE_SEGMENT 0x11
#define AUTD3_V12_TAG_SILENCER 0x21
#define AUTD3_V12_TAG_GAIN 0x30
#define AUTD3_V12_TAG_GAIN_CHANGE_SEGMENT 0x31
#define AUTD3_V12_TAG_GAIN_STM 0x41
#define AUTD3_V12_TAG_FOCI_STM 0x42
#define AUTD3_V12_TAG_GAIN_STM_CHANGE_SEGMENT 0x43
#define AUTD3_V12_TAG_FOCI_STM_CHANGE_SEGMENT 0x44
#define AUTD3_V12_TAG_FORCE_FAN 0x60
#define AUTD3_V12_TAG_READS_FPGA_STATE 0x61
#define AUTD3_V12_TAG_CONFIG_PWE 0x72
#define AUTD3_V12_TAG_PHASE_CORRECTION 0x80
#define AUTD3_V12_TAG_OUTPUT_MASK 0x90
#define AUTD3_V12_TAG_DEBUG 0xF0
#define AUTD3_V12_TAG_EMULATE_GPIO_IN 0xF1
#define AUTD3_V12_TAG_CPU_GPIO_OUT 0xF2

/** FIRM_INFO types (second byte of the operation). */
#define AUTD3_V12_INFO_CPU_MAJOR 0x01
#define AUTD3_V12_INFO_CPU_MINOR 0x02
#define AUTD3_V12_INFO_FPGA_MAJOR 0x03
#define AUTD3_V12_INFO_FPGA_MINOR 0x04
#define AUTD3_V12_INFO_FPGA_FUNCTIONS 0x05
#define AUTD3_V12_INFO_CLEAR 0x06

/** Bit 7 of the data byte: it carries the FPGA state (READS_FPGA_STATE on). */
#define AUTD3_V12_DATA_FPGA_STATE 0x80

/** v12 error nibble (ack >> 4); messages as crate autd3-driver 38.1.0 src/error.rs. */
#define AUTD3_V12_ERR_MAP(XX)                                  \
  XX(NONE, 0x0, "no error")                                    \
  XX(NOT_SUPPORTED_TAG, 0x1, "Not supported tag")              \
  XX(INVALID_MSG_ID, 0x2, "Invalid message ID")                \
  XX(INVALID_INFO_TYPE, 0x3, "Invalid info type")              \
  XX(INVALID_GAIN_STM_MODE, 0x4, "Invalid GainSTM mode")       \
  XX(INVALID_SEGMENT_TRANSITION, 0x5, "Invalid segment transition") \
  XX(MISS_TRANSITION_TIME, 0x6, "Miss transition time")        \
  XX(INVALID_SILENCER_SETTINGS, 0x7, "Invalid silencer settings") \
  XX(INVALID_TRANSITION_MODE, 0x8, "Invalid transition mode")

/** v12 error nibble values. */
typedef enum autd3_v12_err {
#define AUTD3_V12_ERR_ENUM_(name, val, msg) AUTD3_V12_ERR_##name = (val),
  AUTD3_V12_ERR_MAP(AUTD3_V12_ERR_ENUM_)
#undef AUTD3_V12_ERR_ENUM_
} autd3_v12_err_t;

/**
 * Message of a v12 error nibble ("Unknown firmware error" if not in the table).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN const char *autd3_v12_err_message(uint8_t err);

/**
 * A broadcast v12 frame: operation 1 (`op1`, `len1` bytes, first byte its tag)
 * and optionally operation 2 (`op2` NULL or `len2` 0 = none) placed right after
 * operation 1 (padded to 2 bytes) with slot_2_offset set. AUTD3_E_PAYLOAD if
 * they do not fit in 622 bytes, AUTD3_E_INVALID_ARGUMENT for NULL/empty op1.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_v12_frame(autd3_frame_t *out, const uint8_t *op1, size_t len1, const uint8_t *op2, size_t len2);
/**
 * Write one device's 626-byte v12 tx frame (header + operations, zero-filled).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN void autd3_v12_tx_encode(uint8_t tx[AUTD3_TX_FRAME_BYTES], uint8_t msg_id, uint16_t slot_2_offset,
                                      const uint8_t *ops, size_t len);

#ifdef __cplusplus
}
#endif
#endif
