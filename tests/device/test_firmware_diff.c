/*
 * Differential test of the device model (src/emulation/device) against the reference
 * firmware: crates.io autd3-rs-firmware-emulator 0.9.0, which runs the real
 * CPU firmware sources (autd3-cpu-fw 0.9.0) over an FPGA emulator, driven by
 * the peer tests/peers/firmware-emulator-0.9 (built by ctest when cargo is
 * present; skipped by name otherwise).
 *
 * The same frame script goes to both, one frame at a time, each processed to
 * completion (the peer: recv + process_pending; ours: autd3_dev_recv_frame);
 * after every frame both print (ack, data, FPGA state byte) and the lines
 * must match. The scripts are the client's own 0.9 open sequence, close's
 * silencing frame, the identity and FPGA-state answers, invalid payloads,
 * duplicates, a wrong seq, low-latency mode, a Reset and a power cycle.
 *
 * Known, deliberate differences (not in the scripts): XorHash (0xF0) is a
 * libautd3 test command the 0.9 firmware does not know; the FPGA-side
 * commands' own checks (silencer, transition, STM config) are not modelled
 * (docs/device-model.md).
 */
#include <stdio.h>
#include <string.h>

#include "autd3/autd3.h"
#include "client/seqcmd/seqcmd.h" /* autd3__silence_payload: the frame close really sends */
#include "emulation/device/device.h"
#include "harness/peer_proc.h"
#include "harness/test.h"

#ifndef AUTD3_PEER_FW_EMU
#define AUTD3_PEER_FW_EMU ""
#endif

#define LINE 32

static void add(peer_script_t *sc, const char *what, uint8_t seq, uint8_t cmd, const uint8_t *pl, size_t len) {
  autd3_tx_encode(peer_script_frame(sc, what), seq, cmd, pl, len);
}

static void add_power_cycle(peer_script_t *sc) { peer_script_directive(sc, "power cycle", "power_cycle"); }

/* The script through our device model: one line per step, as the peer prints. */
static void run_model(const peer_script_t *sc, char lines[][LINE]) {
  autd3_timing_model_t ideal = autd3_timing_model_ideal();
  autd3_dev_t d;
  autd3_dev_init(&d, NULL, &ideal);
  /* The reference's emulated FPGA advertises flash OTA (bit 2) besides the
   * emulator bit; our emulator does not model OTA and does not claim it. */
  d.fpga_functions = 0x84;
  autd3_dev_set_sync0(&d, 0, 1000000); /* as the peer: SYNC0 active, 1 ms */
  for (int i = 0; i < sc->n; i++) {
    if (sc->s[i].directive) {
      autd3_dev_power_cycle(&d, 0);
      snprintf(lines[i], LINE, "power_cycle");
      continue;
    }
    autd3_dev_recv_frame(&d, sc->s[i].frame, 0);
    snprintf(lines[i], LINE, "%02x %02x %02x", d.ack, d.data, d.fpga_state);
  }
  ASSERT_EQ(d.time_reversals, 0);
}

static void compare(const peer_script_t *sc) {
  peer_proc_require(AUTD3_PEER_FW_EMU, "firmware-emulator-0.9");
  static char peer[PEER_SCRIPT_MAX][LINE], ours[PEER_SCRIPT_MAX][LINE];
  peer_script_run(AUTD3_PEER_FW_EMU, sc, peer[0], LINE);
  run_model(sc, ours);
  peer_script_compare(sc, peer[0], ours[0], LINE);
}

static const uint8_t identity_cmds[] = {
    AUTD3_CMD_READ_CPU_FW_VERSION_MAJOR,  AUTD3_CMD_READ_CPU_FW_VERSION_MINOR,  AUTD3_CMD_READ_CPU_FW_VERSION_PATCH,
    AUTD3_CMD_READ_ERROR_DETAIL,          AUTD3_CMD_READ_FPGA_FW_VERSION_MAJOR, AUTD3_CMD_READ_FPGA_FW_VERSION_MINOR,
    AUTD3_CMD_READ_FPGA_FW_VERSION_PATCH, AUTD3_CMD_READ_ERROR_DETAIL,          AUTD3_CMD_READ_FPGA_FUNCTIONS,
    AUTD3_CMD_READ_ERROR_DETAIL};

/* The client's open sequence (bus.c handshake + session.c), then close's
 * silencing frame. Returns the next seq. */
static uint8_t open_and_close(peer_script_t *sc, autd3_fw_mode_t mode) {
  add(sc, "Reset seq 0", 0, AUTD3_CMD_RESET, NULL, 0);
  add(sc, "Reset seq 1", 1, AUTD3_CMD_RESET, NULL, 0);
  uint8_t m = (uint8_t)mode;
  add(sc, mode == AUTD3_MODE_FIFO ? "SetMode FIFO" : "SetMode low latency", 0, AUTD3_CMD_SET_MODE, &m, 1);
  uint8_t seq = 1;
  for (size_t i = 0; i < sizeof identity_cmds; i++) add(sc, autd3_cmd_name(identity_cmds[i]), seq++, identity_cmds[i], NULL, 0);
  add(sc, "ReadFpgaState before Clear", seq++, AUTD3_CMD_READ_FPGA_STATE, NULL, 0);
  add(sc, "Clear", seq++, AUTD3_CMD_CLEAR, NULL, 0);
  add(sc, "Synchronize (SYNC0 1 ms)", seq++, AUTD3_CMD_SYNCHRONIZE, NULL, 0);
  add(sc, "ReadFpgaState after open", seq++, AUTD3_CMD_READ_FPGA_STATE, NULL, 0);
  uint8_t pl[AUTD3_PAYLOAD_BYTES];
  uint16_t len = 0;
  autd3__silence_payload(pl, &len);
  add(sc, "close: WritePatternFused zero pattern", seq++, AUTD3_CMD_WRITE_PATTERN_FUSED, pl, len);
  add(sc, "ReadFpgaState after close", seq++, AUTD3_CMD_READ_FPGA_STATE, NULL, 0);
  add(sc, "ReadErrorDetail after close", seq++, AUTD3_CMD_READ_ERROR_DETAIL, NULL, 0);
  return seq;
}

TEST(open_close_fifo) {
  static peer_script_t sc;
  sc.n = 0;
  open_and_close(&sc, AUTD3_MODE_FIFO);
  compare(&sc);
}

TEST(open_close_low_latency) {
  static peer_script_t sc;
  sc.n = 0;
  uint8_t seq = open_and_close(&sc, AUTD3_MODE_LOW_LATENCY);
  add(&sc, "Nop (low latency)", seq++, AUTD3_CMD_NOP, NULL, 0);
  add(&sc, "ReadCpuFwVersionMinor (low latency)", seq++, AUTD3_CMD_READ_CPU_FW_VERSION_MINOR, NULL, 0);
  compare(&sc);
}

TEST(invalid_payloads_dedup_reset_power_cycle) {
  static peer_script_t sc;
  sc.n = 0;
  uint8_t seq = open_and_close(&sc, AUTD3_MODE_FIFO);
  uint8_t bad_mode = 7;
  add(&sc, "SetMode mode 7 (invalid)", seq++, AUTD3_CMD_SET_MODE, &bad_mode, 1);
  add(&sc, "ReadErrorDetail", seq++, AUTD3_CMD_READ_ERROR_DETAIL, NULL, 0);
  uint8_t pl[AUTD3_PAYLOAD_BYTES];
  uint16_t len = 0;
  autd3__silence_payload(pl, &len);
  pl[14] = 0xF3; /* data_len 499: odd */
  add(&sc, "WritePatternFused odd data_len", seq++, AUTD3_CMD_WRITE_PATTERN_FUSED, pl, len);
  pl[14] = 0x52; /* data_len 594: past the payload */
  pl[15] = 0x02;
  add(&sc, "WritePatternFused data_len 594", seq++, AUTD3_CMD_WRITE_PATTERN_FUSED, pl, len);
  add(&sc, "opcode 0x99 (unknown)", seq++, 0x99, NULL, 0);
  add(&sc, "ReadErrorDetail", seq, AUTD3_CMD_READ_ERROR_DETAIL, NULL, 0);
  add(&sc, "the same frame again (dedup)", seq++, AUTD3_CMD_READ_ERROR_DETAIL, NULL, 0);
  add(&sc, "Nop with a seq from the future", (uint8_t)(seq + 5), AUTD3_CMD_NOP, NULL, 0);
  add(&sc, "Nop with the expected seq", seq++, AUTD3_CMD_NOP, NULL, 0);
  add(&sc, "Reset mid-stream", 0, AUTD3_CMD_RESET, NULL, 0);
  add(&sc, "Nop seq 0 after Reset", 0, AUTD3_CMD_NOP, NULL, 0);
  add_power_cycle(&sc);
  add(&sc, "ReadFpgaState after power cycle", 0, AUTD3_CMD_READ_FPGA_STATE, NULL, 0);
  add(&sc, "ReadErrorDetail after power cycle", 1, AUTD3_CMD_READ_ERROR_DETAIL, NULL, 0);
  compare(&sc);
}
