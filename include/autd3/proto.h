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

#ifdef __cplusplus
}
#endif
#endif
