/*
 * The seq/cmd protocol's user side and its table: the open sequence after the
 * bus thread's handshake, the reads, and close's silencing: the steps of the
 * reference client autd3-rs 0.9.0 (crate autd3-rs 0.9.0 src/client/mod.rs
 * open_impl, read_firmware_version, check_firmware_version, close_impl → stop)
 * on top of the normal send path. The handshake itself (Reset, SetMode) runs
 * on the bus thread (bus.c).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "client/seqcmd/seqcmd.h"
#include "core/error_context.h"

/* ---- the silencing frame ------------------------------------------------------------- */

/* WritePatternFused header (crate autd3-cpu-wire 0.9.0 payload
 * WritePatternFusedPayload, 32 bytes, little-endian), as the reference's
 * close() fills it for Pattern::new(all Emission::NULL): bank 0, raw
 * emissions, divider 0xFFFF, one pattern, no foci, immediate transition,
 * sound speed 0, infinite repetition, data_len = 249 × 2, transition value
 * and margin 0; the 249 emissions (phase, intensity) all zero follow. */
#define SIL_OFF_BANK 0
#define SIL_OFF_EMISSION_TYPE 1
#define SIL_OFF_DIVIDER 2
#define SIL_OFF_SIZE 4
#define SIL_OFF_TRANSITION_MODE 9
#define SIL_OFF_REP 12
#define SIL_OFF_DATA_LEN 14
#define SIL_HEADER_BYTES 32
#define SIL_EMISSION_TYPE_RAW 0x01   /* params EMISSION_TYPE_RAW */
#define SIL_TRANSITION_IMMEDIATE 0xFF /* params TRANSITION_MODE_IMMEDIATE */
#define SIL_REP_INFINITE 0xFFFFu      /* params REP_INFINITE */

static void put_u16(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

void autd3__silence_payload(uint8_t payload[AUTD3_PAYLOAD_BYTES], uint16_t *len) {
  memset(payload, 0, AUTD3_PAYLOAD_BYTES);
  const uint32_t data_len = AUTD3_NUM_TRANSDUCERS * 2u;
  payload[SIL_OFF_BANK] = 0;
  payload[SIL_OFF_EMISSION_TYPE] = SIL_EMISSION_TYPE_RAW;
  put_u16(payload + SIL_OFF_DIVIDER, 0xFFFFu);
  put_u16(payload + SIL_OFF_SIZE, 1); /* u32 size = 1: bytes 6..7 stay 0 */
  payload[SIL_OFF_TRANSITION_MODE] = SIL_TRANSITION_IMMEDIATE;
  put_u16(payload + SIL_OFF_REP, SIL_REP_INFINITE);
  put_u16(payload + SIL_OFF_DATA_LEN, data_len);
  /* the emissions: all zero already */
  if (len) *len = (uint16_t)(SIL_HEADER_BYTES + data_len);
}

/* ---- close: silence every device ----------------------------------------------------------- */

/* Why device d is not (known to be) silent. */
enum { SIL_PENDING = 0, SIL_DONE, SIL_FOREIGN, SIL_DEVERR, SIL_LOST };

/* Append "d" to a comma-separated list in buf (bounded; "..." once full). */
static void list_add(char *buf, size_t cap, size_t d) {
  size_t l = strlen(buf);
  if (l + 16 >= cap) {
    if (l + 4 < cap && (l < 3 || strcmp(buf + l - 3, "...") != 0)) strcat(buf, "...");
    return;
  }
  snprintf(buf + l, cap - l, "%s%zu", l ? ", " : "", d);
}

static autd3_err_t silence(struct autd3_client *c) {
  const size_t n = c->num_devices;
  const uint64_t deadline_ns = autd3__now_ns() + (uint64_t)c->cfg.close_timeout_ms * 1000000ull;
  uint8_t st[AUTD3_MAX_DEVICES];
  uint8_t code[AUTD3_MAX_DEVICES];
  memset(st, SIL_PENDING, sizeof st);
  memset(code, 0, sizeof code);
  autd3_frame_t f = autd3_frame_simple(AUTD3_CMD_WRITE_PATTERN_FUSED);
  f.cmd = AUTD3_CMD_WRITE_PATTERN_FUSED;
  autd3__silence_payload(f.payload, &f.len);
  /* Every AUTD3 has 249 transducers, so the per-device frames of the
   * reference are byte-identical: one broadcast. A retry goes to every
   * device again: a second zero pattern on a silent device changes nothing. */
  autd3_err_t stop = AUTD3_OK; /* why no (further) attempt could be made */
  autd3__error_saved_t stop_msg = {""};
  for (;;) {
    size_t pending = 0;
    for (size_t d = 0; d < n; d++) pending += st[d] == SIL_PENDING;
    if (pending == 0) break;
    autd3_request_t *req = NULL;
    autd3_err_t err = autd3__client_submit_until(c, &f, deadline_ns, &req);
    if (err != AUTD3_OK) {
      stop = err;
      autd3__error_save(&stop_msg);
      break;
    }
    uint64_t now = autd3__now_ns();
    uint32_t left_ms = now >= deadline_ns ? 0 : (uint32_t)((deadline_ns - now + 999999u) / 1000000u);
    autd3_response_t resp;
    err = autd3_request_wait_for(req, left_ms, &resp);
    if (err == AUTD3_E_PENDING) {
      /* Still in flight at the deadline: stop the bus thread now (the rest of
       * close), which completes the request (CLOSED) with the outcome of
       * every device that did ack it. */
      autd3__bus_stop(c);
      autd3_request_wait(req, &resp);
      for (size_t d = 0; d < n; d++)
        if (st[d] == SIL_PENDING && resp.outcome[d] == AUTD3_OUTCOME_EXECUTED) {
          st[d] = resp.data[d] == 0 ? SIL_DONE : SIL_DEVERR;
          code[d] = resp.data[d];
        }
      stop = AUTD3_E_TIMEOUT;
      break;
    }
    if (err == AUTD3_E_LINK || err == AUTD3_E_CLOSED) {
      stop = err;
      autd3__error_save(&stop_msg);
      break;
    }
    for (size_t d = 0; d < n; d++) {
      if (st[d] != SIL_PENDING) continue;
      if (resp.outcome[d] == AUTD3_OUTCOME_EXECUTED) {
        st[d] = resp.data[d] == 0 ? SIL_DONE : SIL_DEVERR;
        code[d] = resp.data[d];
      } else if (atomic_load(&c->ds_state[d]) == AUTD3__DEV_FOREIGN) {
        st[d] = SIL_FOREIGN; /* another master drives it: not ours to silence */
      }
    }
    /* The devices left are being re-established (their frame was not run or
     * its outcome is unknown): wait until they are back, then try again. */
    bool again = false;
    while (!again) {
      again = true;
      for (size_t d = 0; d < n; d++)
        if (st[d] == SIL_PENDING && atomic_load(&c->ds_state[d]) != AUTD3__DEV_RUN) again = false;
      if (again || autd3__now_ns() >= deadline_ns || atomic_load(&c->dead)) break;
      autd3__sleep_ns(1000000);
    }
    if (!again) {
      stop = atomic_load(&c->dead) ? c->dead_reason : AUTD3_E_TIMEOUT;
      if (stop == AUTD3_E_LINK) snprintf(stop_msg.msg, sizeof stop_msg.msg, "link cycle failed: %.300s", c->link_msg);
      break;
    }
  }

  /* Report: the worst class first. */
  char lost[256] = "", foreign[256] = "", deverr[256] = "";
  uint8_t first_code = 0;
  for (size_t d = 0; d < n; d++) {
    if (st[d] == SIL_PENDING) st[d] = SIL_LOST;
    if (st[d] == SIL_LOST) list_add(lost, sizeof lost, d);
    if (st[d] == SIL_FOREIGN) list_add(foreign, sizeof foreign, d);
    if (st[d] == SIL_DEVERR) {
      if (deverr[0] == 0) first_code = code[d];
      list_add(deverr, sizeof deverr, d);
    }
  }
  if (lost[0]) {
    autd3_err_t e = stop == AUTD3_E_LINK ? AUTD3_E_LINK : AUTD3_E_TIMEOUT;
    if (stop == AUTD3_E_LINK || stop == AUTD3_E_CLOSED)
      return autd3_set_error(e, "close: device(s) %s not silenced (they may still be emitting): %s", lost,
                             stop_msg.msg[0] ? stop_msg.msg : "the client had stopped");
    return autd3_set_error(e, "close: device(s) %s did not ack the silencing frame (WritePatternFused, zero pattern) "
                              "within close_timeout_ms = %u: they may still be emitting",
                           lost, c->cfg.close_timeout_ms);
  }
  if (foreign[0])
    return autd3_set_error(AUTD3_E_SECOND_MASTER, "close: device(s) %s are driven by another master and were not silenced",
                           foreign);
  if (deverr[0])
    return autd3_set_error(AUTD3_E_DEVICE, "close: device(s) %s rejected the silencing frame (error 0x%02x %s): they may "
                                           "still be emitting",
                           deverr, first_code, autd3_dev_err_message(first_code));
  return AUTD3_OK;
}

/* ---- open: identity, series check, Clear, Synchronize ----------------------------------- */

/* One broadcast read into out[0..N). Exclusive because cumulative acks give
 * every frame acked in the same cycle the same data byte (rt.rs route_acks);
 * a read must be the only frame in flight for its byte to be its own. */
static autd3_err_t read_exclusive(struct autd3_client *c, uint8_t cmd, uint8_t *out) {
  autd3_frame_t f = autd3_frame_simple(cmd);
  autd3_request_t *req = NULL;
  autd3_err_t err = autd3__client_submit(c, &f, true, &req);
  if (err != AUTD3_OK) return err;
  autd3_response_t resp;
  err = autd3_request_wait(req, &resp);
  if (err != AUTD3_OK) return err;
  memcpy(out, resp.data, resp.num_devices);
  return AUTD3_OK;
}

/* The reference's read_firmware_version: each version read is followed by an
 * error-detail read so that an old FPGA that does not know the command
 * (UNKNOWN_CMD latched) reads as "unknown" rather than as version 0.0.0. */
static autd3_err_t read_identity(struct autd3_client *c, autd3_fw_version_t *v, bool *fpga_known, uint8_t *functions) {
  const size_t n = c->num_devices;
  enum { CPU_MA, CPU_MI, CPU_PA, ERR0, FPGA_MA, FPGA_MI, FPGA_PA, ERR1, FUNCS, ERR2, NREADS };
  static const uint8_t cmds[NREADS] = {
      AUTD3_CMD_READ_CPU_FW_VERSION_MAJOR,  AUTD3_CMD_READ_CPU_FW_VERSION_MINOR,  AUTD3_CMD_READ_CPU_FW_VERSION_PATCH,
      AUTD3_CMD_READ_ERROR_DETAIL,          AUTD3_CMD_READ_FPGA_FW_VERSION_MAJOR, AUTD3_CMD_READ_FPGA_FW_VERSION_MINOR,
      AUTD3_CMD_READ_FPGA_FW_VERSION_PATCH, AUTD3_CMD_READ_ERROR_DETAIL,          AUTD3_CMD_READ_FPGA_FUNCTIONS,
      AUTD3_CMD_READ_ERROR_DETAIL};
  uint8_t r[NREADS][AUTD3_MAX_DEVICES];
  for (int i = 0; i < NREADS; i++) {
    autd3_err_t err = read_exclusive(c, cmds[i], r[i]);
    if (err != AUTD3_OK) return err;
  }
  for (size_t d = 0; d < n; d++) {
    v[d].cpu_major = r[CPU_MA][d];
    v[d].cpu_minor = r[CPU_MI][d];
    v[d].cpu_patch = r[CPU_PA][d];
    fpga_known[d] = r[ERR1][d] != AUTD3_DEV_ERR_UNKNOWN_CMD;
    v[d].fpga_major = fpga_known[d] ? r[FPGA_MA][d] : 0;
    v[d].fpga_minor = fpga_known[d] ? r[FPGA_MI][d] : 0;
    v[d].fpga_patch = fpga_known[d] ? r[FPGA_PA][d] : 0;
    functions[d] = r[ERR2][d] == AUTD3_DEV_ERR_UNKNOWN_CMD ? 0 : r[FUNCS][d];
  }
  return AUTD3_OK;
}

/* firmware_version.rs is_supported: FPGA version known, CPU and FPGA in the series. */
static bool supported(const autd3_fw_version_t *v, bool fpga_known) {
  return fpga_known && v->cpu_major == AUTD3_FW_SERIES_MAJOR && v->cpu_minor == AUTD3_FW_SERIES_MINOR &&
         v->fpga_major == AUTD3_FW_SERIES_MAJOR && v->fpga_minor == AUTD3_FW_SERIES_MINOR;
}

static autd3_err_t open_sequence(struct autd3_client *c) {
  autd3_fw_version_t v[AUTD3_MAX_DEVICES];
  bool known[AUTD3_MAX_DEVICES];
  uint8_t functions[AUTD3_MAX_DEVICES];
  /* As the reference, the identity is read even when the check is off; a
   * failed read fails the open only when the check was asked for. */
  autd3_err_t err = read_identity(c, v, known, functions);
  if (err != AUTD3_OK && c->cfg.require_supported_firmware) {
    return autd3__error_context(err, "reading the firmware version failed");
  }
  if (err == AUTD3_OK && c->cfg.require_supported_firmware) {
    for (size_t d = 0; d < c->num_devices; d++) {
      if (supported(&v[d], known[d])) continue;
      char fpga[16] = "unknown";
      if (known[d]) snprintf(fpga, sizeof fpga, "%u.%u.%u", v[d].fpga_major, v[d].fpga_minor, v[d].fpga_patch);
      return autd3_set_error(AUTD3_E_VERSION,
                             "device %zu runs firmware CPU %u.%u.%u, FPGA %s%s: outside the series %d.%d.x this client "
                             "supports (require_supported_firmware)",
                             d, v[d].cpu_major, v[d].cpu_minor, v[d].cpu_patch, fpga,
                             (functions[d] & 0x80) ? " [emulator]" : "", AUTD3_FW_SERIES_MAJOR, AUTD3_FW_SERIES_MINOR);
    }
  }
  /* Clear, then Synchronize, each stop-and-wait and checked. */
  static const uint8_t init_cmds[] = {AUTD3_CMD_CLEAR, AUTD3_CMD_SYNCHRONIZE};
  for (size_t i = 0; i < sizeof init_cmds; i++) {
    autd3_frame_t f = autd3_frame_simple(init_cmds[i]);
    err = autd3_client_send_checked(c, &f, NULL);
    if (err != AUTD3_OK) {
      return autd3__error_context(err, "%s failed", autd3_cmd_name(init_cmds[i]));
    }
  }
  return AUTD3_OK;
}

/* ---- the reads, and the table ------------------------------------------------------------- */

static autd3_err_t read_firmware_version(struct autd3_client *c, autd3_fw_version_t *out) {
  bool known[AUTD3_MAX_DEVICES];
  uint8_t functions[AUTD3_MAX_DEVICES];
  return read_identity(c, out, known, functions); /* the 0.9 reads */
}

static autd3_err_t read_fpga_state(struct autd3_client *c, uint8_t *out) {
  return read_exclusive(c, AUTD3_CMD_READ_FPGA_STATE, out);
}

static autd3_err_t read_error_detail(struct autd3_client *c, uint8_t *out) {
  return read_exclusive(c, AUTD3_CMD_READ_ERROR_DETAIL, out);
}

/* The data byte of a new-generation ack is the device's error code (0 = none). */
static autd3_err_t response_check(const autd3_response_t *r) { return autd3_response_check(r, NULL, NULL); }

const autd3__protocol_t autd3__protocol_seqcmd = {
    .state_size = sizeof(autd3__seqcmd_t),
    .handshake = autd3__seqcmd_handshake,
    .handshake_fail = "client handshake: link cycle failed: ",
    .run = autd3__seqcmd_run,
    .stop = autd3__seqcmd_stop,
    .open_sequence = open_sequence,
    .silence = silence,
    .read_firmware_version = read_firmware_version,
    .read_fpga_state = read_fpga_state,
    .read_error_detail = read_error_detail,
    .frame_check = NULL, /* autd3_frame_t is this protocol's frame */
    .response_check = response_check,
};
