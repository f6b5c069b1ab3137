/*
 * Differential test of the v12 device model (src/emulation/device/v12.c) against the
 * reference v12 firmware emulator: crates.io autd3-firmware-emulator 38.1.0
 * (the previous SDK generation's port of the v12.1.0 CPU firmware), driven by
 * the peer tests/peers/firmware-emulator-v12 (built by ctest when cargo is
 * present; skipped by name otherwise).
 *
 * The same frame script goes to both, one frame at a time, each executed to
 * completion (the reference executes on receipt; ours: take + update until the
 * ring is empty). After every frame both print (data, ack, FPGA state) and the
 * lines must match: the legacy open sequence (Nop, Clear + Synchronize in two
 * slots, the firmware-info reads), the FPGA-state reads, error nibbles
 * (unknown tag in slot 1 and slot 2, bad info type, msg_id > 15), duplicate
 * msg_ids, msg_id wrap-around through all 16 ids, and a power cycle.
 *
 * Not comparable here: the ring (the reference has none; it executes on
 * receipt) — tests/legacy/test_v12_device.c covers overflow and pacing; the
 * FPGA-side operations' own checks (not modelled, docs/legacy.md).
 */
#include <stdio.h>
#include <string.h>

#include "autd3/autd3.h"
#include "emulation/device/v12.h"
#include "harness/peer_proc.h"
#include "harness/test.h"

#ifndef AUTD3_PEER_FW_EMU_V12
#define AUTD3_PEER_FW_EMU_V12 ""
#endif

#define LINE 32

/* One frame: msg_id, operation 1 (and 2 when len2 > 0), via the public encoder. */
static void add2(peer_script_t *sc, const char *what, uint8_t msg_id, const uint8_t *op1, size_t len1, const uint8_t *op2,
                 size_t len2) {
  autd3_frame_t f;
  ASSERT_OK(autd3_v12_frame(&f, op1, len1, op2, len2));
  autd3_tx_encode(peer_script_frame(sc, what), msg_id, f.cmd, f.payload, f.len);
}

static void add(peer_script_t *sc, const char *what, uint8_t msg_id, uint8_t tag, uint8_t arg) {
  uint8_t op[2] = {tag, arg};
  add2(sc, what, msg_id, op, 2, NULL, 0);
}

static void add_power_cycle(peer_script_t *sc) { peer_script_directive(sc, "power cycle", "power_cycle"); }

static void run_model(const peer_script_t *sc, char lines[][LINE]) {
  static autd3_v12_dev_t d;
  autd3_v12_dev_init(&d, 0);
  for (int i = 0; i < sc->n; i++) {
    if (sc->s[i].directive) {
      autd3_v12_dev_init(&d, 0);
      snprintf(lines[i], LINE, "power_cycle");
      continue;
    }
    autd3_v12_dev_recv_frame(&d, sc->s[i].frame);
    uint8_t rx[2];
    autd3_v12_dev_read(&d, 0, rx);
    snprintf(lines[i], LINE, "%02x %02x %02x", rx[0], rx[1], d.fpga_state);
  }
}

static char peer[PEER_SCRIPT_MAX][LINE], ours[PEER_SCRIPT_MAX][LINE];

static void compare(const peer_script_t *sc) {
  peer_proc_require(AUTD3_PEER_FW_EMU_V12, "firmware-emulator-v12");
  peer_script_run(AUTD3_PEER_FW_EMU_V12, sc, peer[0], LINE);
  run_model(sc, ours);
  peer_script_compare(sc, peer[0], ours[0], LINE);
}

/* The legacy open sequence (crate autd3 38.1.0 controller start-up). Returns the last msg_id. */
static uint8_t open_sequence(peer_script_t *sc) {
  add(sc, "Nop", 1, AUTD3_V12_TAG_NOP, 0);
  uint8_t clear[2] = {AUTD3_V12_TAG_CLEAR, 0}, sync[2] = {AUTD3_V12_TAG_SYNC, 0};
  add2(sc, "Clear + Synchronize (slot 2)", 2, clear, 2, sync, 2);
  add(sc, "info CPU major", 3, AUTD3_V12_TAG_FIRM_INFO, AUTD3_V12_INFO_CPU_MAJOR);
  add(sc, "info CPU minor", 4, AUTD3_V12_TAG_FIRM_INFO, AUTD3_V12_INFO_CPU_MINOR);
  add(sc, "info FPGA major", 5, AUTD3_V12_TAG_FIRM_INFO, AUTD3_V12_INFO_FPGA_MAJOR);
  add(sc, "info FPGA minor", 6, AUTD3_V12_TAG_FIRM_INFO, AUTD3_V12_INFO_FPGA_MINOR);
  add(sc, "info FPGA functions", 7, AUTD3_V12_TAG_FIRM_INFO, AUTD3_V12_INFO_FPGA_FUNCTIONS);
  add(sc, "info clear", 8, AUTD3_V12_TAG_FIRM_INFO, AUTD3_V12_INFO_CLEAR);
  return 8;
}

TEST(open_sequence_and_reads) {
  static peer_script_t sc;
  sc.n = 0;
  open_sequence(&sc);
  add(&sc, "reads FPGA state on", 9, AUTD3_V12_TAG_READS_FPGA_STATE, 1);
  add(&sc, "Nop (data = FPGA state)", 10, AUTD3_V12_TAG_NOP, 0);
  add(&sc, "info CPU major holds data", 11, AUTD3_V12_TAG_FIRM_INFO, AUTD3_V12_INFO_CPU_MAJOR);
  add(&sc, "Nop while held", 12, AUTD3_V12_TAG_NOP, 0);
  add(&sc, "info clear restores reads", 13, AUTD3_V12_TAG_FIRM_INFO, AUTD3_V12_INFO_CLEAR);
  add(&sc, "Nop (state again)", 14, AUTD3_V12_TAG_NOP, 0);
  add(&sc, "force fan", 15, AUTD3_V12_TAG_FORCE_FAN, 1);
  add(&sc, "Clear turns reads off", 0, AUTD3_V12_TAG_CLEAR, 0);
  add(&sc, "Nop", 1, AUTD3_V12_TAG_NOP, 0);
  compare(&sc);
}

TEST(errors_duplicates_wrap_power_cycle) {
  static peer_script_t sc;
  sc.n = 0;
  uint8_t id = open_sequence(&sc);
  add(&sc, "unknown tag 0x55 -> err 1", ++id, 0x55, 0);
  add(&sc, "duplicate msg_id (valid op) ignored", id, AUTD3_V12_TAG_NOP, 0);
  add(&sc, "bad info type -> err 3", ++id, AUTD3_V12_TAG_FIRM_INFO, 0x09);
  uint8_t nop[2] = {AUTD3_V12_TAG_NOP, 0}, bad[2] = {0x77, 0}, reads[2] = {AUTD3_V12_TAG_READS_FPGA_STATE, 1};
  add2(&sc, "Nop + unknown tag in slot 2 -> err 1", ++id, nop, 2, bad, 2);
  add2(&sc, "unknown in slot 1: slot 2 (reads on) not run", ++id, bad, 2, reads, 2);
  add(&sc, "Nop (reads still off)", ++id, AUTD3_V12_TAG_NOP, 0);
  add(&sc, "msg_id 0x10 -> err 2", 0x10, AUTD3_V12_TAG_NOP, 0);
  add(&sc, "msg_id 0x10 again ignored", 0x10, AUTD3_V12_TAG_NOP, 0);
  add(&sc, "msg_id 0xFF -> err 2", 0xFF, AUTD3_V12_TAG_NOP, 0);
  add(&sc, "msg_id 0x1F -> err 2", 0x1F, AUTD3_V12_TAG_NOP, 0);
  /* Wrap-around: 2 × 16 msg_ids, alternating Nop and reads on/off. */
  for (int k = 0; k < 32; k++) {
    uint8_t m = (uint8_t)((id + 1 + k) & 0x0F);
    if (k % 3 == 0)
      add(&sc, "wrap: reads toggle", m, AUTD3_V12_TAG_READS_FPGA_STATE, (uint8_t)(k & 1));
    else
      add(&sc, "wrap: Nop", m, AUTD3_V12_TAG_NOP, 0);
  }
  add_power_cycle(&sc);
  add(&sc, "after power cycle: msg_id 1", 1, AUTD3_V12_TAG_NOP, 0);
  add(&sc, "after power cycle: msg_id 15", 15, AUTD3_V12_TAG_NOP, 0);
  compare(&sc);
}

TEST(peer_detects_a_wrong_model) {
  /* The harness can fail: a script whose answer we deliberately corrupt. */
  peer_proc_require(AUTD3_PEER_FW_EMU_V12, "firmware-emulator-v12");
  static peer_script_t sc;
  sc.n = 0;
  add(&sc, "info CPU major", 1, AUTD3_V12_TAG_FIRM_INFO, AUTD3_V12_INFO_CPU_MAJOR);
  peer_script_run(AUTD3_PEER_FW_EMU_V12, &sc, peer[0], LINE);
  ASSERT_STREQ(peer[0], "a5 01 00");
}

