/*
 * The legacy client's user side and its table (docs/legacy.md): frames
 * through the normal send path for the open sequence, close's silencing
 * (Clear) and the reads; the check that refuses a new-generation frame.
 * Follows crate autd3 38.1.0 (controller open/close) and crate autd3-driver
 * 38.1.0 (src/firmware: info.rs, version.rs, clear.rs).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "client/v12/v12.h"
#include "core/error_context.h"

static autd3_err_t send_ops(struct autd3_client *c, const uint8_t *op1, size_t len1, const uint8_t *op2, size_t len2,
                            uint64_t deadline_ns, autd3_response_t *resp) {
  autd3_frame_t f;
  autd3_err_t err = autd3_v12_frame(&f, op1, len1, op2, len2);
  if (err != AUTD3_OK) return err;
  autd3_request_t *req = NULL;
  err = deadline_ns ? autd3__client_submit_until(c, &f, deadline_ns, &req) : autd3_client_send(c, &f, &req);
  if (err != AUTD3_OK) return err;
  return autd3_request_wait(req, resp);
}

/* The firmware-info reads (info.rs): CPU major, CPU minor, FPGA major, FPGA
 * minor, FPGA functions, then INFO_CLEAR, which gives the data byte back. */
static autd3_err_t read_info(struct autd3_client *c, uint8_t raw[5][AUTD3_MAX_DEVICES]) {
  static const uint8_t types[5] = {AUTD3_V12_INFO_CPU_MAJOR, AUTD3_V12_INFO_CPU_MINOR, AUTD3_V12_INFO_FPGA_MAJOR,
                                   AUTD3_V12_INFO_FPGA_MINOR, AUTD3_V12_INFO_FPGA_FUNCTIONS};
  autd3_response_t resp;
  autd3_err_t first = AUTD3_OK;
  autd3__error_saved_t msg;
  for (int i = 0; i < 5; i++) {
    uint8_t op[2] = {AUTD3_V12_TAG_FIRM_INFO, types[i]};
    autd3_err_t err = send_ops(c, op, 2, NULL, 0, 0, &resp);
    if (err != AUTD3_OK && first == AUTD3_OK) {
      first = err;
      autd3__error_save(&msg);
    }
    for (size_t d = 0; d < c->num_devices; d++) raw[i][d] = resp.data[d];
  }
  uint8_t op[2] = {AUTD3_V12_TAG_FIRM_INFO, AUTD3_V12_INFO_CLEAR};
  autd3_err_t err = send_ops(c, op, 2, NULL, 0, 0, &resp);
  if (first != AUTD3_OK) {
    autd3__error_restore(&msg, first); /* the first failure, not the INFO_CLEAR's */
    return autd3__error_context(first, "read firmware info failed");
  }
  return err;
}

/* crate autd3-driver 38.1.0 src/firmware/version.rs version_map: the major
 * byte names the release (0xA4..0xA5 = v12.0 / v12.1, 0xA3 = v11, 0xA2 = v10,
 * 0xA0..0xA1 = v9.x), the minor byte is the patch. Others: 0.0.0. */
static void decode(uint8_t major, uint8_t minor, uint8_t *ma, uint8_t *mi, uint8_t *pa) {
  *ma = *mi = *pa = 0;
  if (major >= 0xA4 && major <= 0xA5) *ma = 12, *mi = (uint8_t)(major - 0xA4);
  else if (major == 0xA3) *ma = 11;
  else if (major == 0xA2) *ma = 10;
  else if (major >= 0xA0 && major <= 0xA1) *ma = 9, *mi = (uint8_t)(major - 0xA0);
  else return;
  *pa = minor;
}

static autd3_err_t read_firmware_version(struct autd3_client *c, autd3_fw_version_t *out) {
  uint8_t raw[5][AUTD3_MAX_DEVICES];
  autd3_err_t err = read_info(c, raw);
  if (err != AUTD3_OK) return err;
  for (size_t d = 0; d < c->num_devices; d++) {
    decode(raw[0][d], raw[1][d], &out[d].cpu_major, &out[d].cpu_minor, &out[d].cpu_patch);
    decode(raw[2][d], raw[3][d], &out[d].fpga_major, &out[d].fpga_minor, &out[d].fpga_patch);
  }
  return AUTD3_OK;
}

/* READS_FPGA_STATE on, then a Nop: its data byte is 0x80 | state (emulator.rs
 * read_fpga_state). Left on, as the reference's ReadsFPGAState datagram does. */
static autd3_err_t read_fpga_state(struct autd3_client *c, uint8_t *out) {
  uint8_t on[2] = {AUTD3_V12_TAG_READS_FPGA_STATE, 1}, nop[2] = {AUTD3_V12_TAG_NOP, 0};
  autd3_response_t resp;
  autd3_err_t err = send_ops(c, on, 2, NULL, 0, 0, &resp);
  if (err == AUTD3_OK) err = send_ops(c, nop, 2, NULL, 0, 0, &resp);
  if (err != AUTD3_OK) return err;
  for (size_t d = 0; d < c->num_devices; d++) out[d] = resp.data[d];
  return AUTD3_OK;
}

/* crate autd3 38.1.0 controller open: Nop, then (Clear, Synchronize) in one
 * frame; if that fails and every CPU major byte read is below 0xA5, the
 * firmware is unsupported. Then the optional check for v12.1.0 exactly. */
static autd3_err_t open_sequence(struct autd3_client *c) {
  uint8_t nop[2] = {AUTD3_V12_TAG_NOP, 0}, clear[2] = {AUTD3_V12_TAG_CLEAR, 0}, sync[2] = {AUTD3_V12_TAG_SYNC, 0};
  autd3_err_t err = send_ops(c, nop, 2, NULL, 0, 0, NULL);
  if (err != AUTD3_OK) return err;
  err = send_ops(c, clear, 2, sync, 2, 0, NULL);
  uint8_t raw[5][AUTD3_MAX_DEVICES];
  if (err != AUTD3_OK) {
    autd3__error_saved_t msg; /* the reads below set their own */
    autd3__error_save(&msg);
    if (read_info(c, raw) == AUTD3_OK) {
      bool all_old = true;
      for (size_t d = 0; d < c->num_devices; d++) all_old = all_old && raw[0][d] < AUTD3_V12_MAJOR_BYTE_V12_1;
      if (all_old)
        return autd3_set_error(AUTD3_E_VERSION, "Clear/Synchronize failed (%s) and no device runs firmware v12.1 "
                                                "(device 0 CPU major byte 0x%02x): unsupported firmware", msg.msg, raw[0][0]);
    }
    autd3__error_restore(&msg, err);
    return autd3__error_context(err, "Clear/Synchronize");
  }
  if (!c->cfg.require_supported_firmware) return AUTD3_OK;
  err = read_info(c, raw);
  if (err != AUTD3_OK) return err;
  for (size_t d = 0; d < c->num_devices; d++)
    if (raw[0][d] != AUTD3_V12_MAJOR_BYTE_V12_1 || raw[2][d] != AUTD3_V12_MAJOR_BYTE_V12_1)
      return autd3_set_error(AUTD3_E_VERSION, "device %zu runs CPU major byte 0x%02x / FPGA 0x%02x, not firmware v12.1 "
                                              "(0x%02x): require_supported_firmware",
                             d, raw[0][d], raw[2][d], AUTD3_V12_MAJOR_BYTE_V12_1);
  return AUTD3_OK;
}

/* Close: a Clear, which re-initialises the FPGA and zeroes the drive buffers
 * (clear.rs), so every device ends silent. Bounded by close_timeout_ms. */
static autd3_err_t silence(struct autd3_client *c) {
  uint64_t deadline_ns = autd3__now_ns() + (uint64_t)c->cfg.close_timeout_ms * 1000000ull;
  uint8_t clear[2] = {AUTD3_V12_TAG_CLEAR, 0};
  autd3_response_t resp;
  autd3_err_t err = send_ops(c, clear, 2, NULL, 0, deadline_ns, &resp);
  if (err != AUTD3_OK) {
    return autd3__error_context(err, "close: the silencing Clear failed (devices may still be emitting)");
  }
  return AUTD3_OK;
}

/* Firmware v12 has no error-detail read: its errors come with each frame's ack. */
static autd3_err_t read_error_detail(struct autd3_client *c, uint8_t *out) {
  (void)c, (void)out;
  return autd3_set_error(AUTD3_E_VERSION, "autd3_client_read_error_detail: firmware v12 has no error-detail read "
                                          "(its errors come with each frame's ack)");
}

/* A v12 client writes `cmd` into the v12 header's reserved byte and the
 * payload's first two bytes as slot_2_offset (proto.h): a new-generation
 * frame (cmd ≠ 0) would be misread, so it is refused, as is a slot-2 offset
 * that cannot hold an operation. */
static autd3_err_t frame_check(const struct autd3_client *c, const autd3_frame_t *f) {
  size_t n = f->device_cmds ? c->num_devices : 1;
  for (size_t i = 0; i < n; i++) {
    uint8_t cmd = f->device_cmds ? f->device_cmds[i] : f->cmd;
    const uint8_t *p = f->device_cmds ? f->device_payloads + i * AUTD3_PAYLOAD_BYTES : f->payload;
    unsigned s2 = (unsigned)p[0] | (unsigned)p[1] << 8;
    if (cmd != 0)
      return autd3_set_error(AUTD3_E_PAYLOAD, "protocol v12: frame%s has cmd 0x%02x; v12 frames are built with "
                             "autd3_v12_frame() (a new-generation frame would be misread by firmware v12)",
                             f->device_cmds ? " of a device" : "", cmd);
    if ((s2 & 1u) || s2 >= AUTD3_V12_PAYLOAD_BYTES)
      return autd3_set_error(AUTD3_E_PAYLOAD, "protocol v12: slot_2_offset %u must be even and < %d", s2,
                             AUTD3_V12_PAYLOAD_BYTES);
  }
  return AUTD3_OK;
}

const autd3__protocol_t autd3__protocol_v12 = {
    .state_size = sizeof(autd3__v12_t),
    .handshake = autd3__v12_handshake,
    .handshake_fail = "legacy client: link cycle failed: ",
    .run = autd3__v12_run,
    .stop = autd3__v12_stop,
    .open_sequence = open_sequence,
    .silence = silence,
    .read_firmware_version = read_firmware_version,
    .read_fpga_state = read_fpga_state,
    .read_error_detail = read_error_detail,
    .frame_check = frame_check,
    /* The data byte is a value (FPGA state, firmware info), not an error
     * code; the device's error nibble already failed the request. */
    .response_check = NULL,
};
