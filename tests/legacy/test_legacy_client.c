/*
 * The legacy client (src/client/v12/bus.c) end to end: over the in-process
 * emulator running the v12 device model (firmware AUTD3_EMU_FIRMWARE_V12), and
 * over a link shim whose devices are the reference v12 firmware emulator
 * (crates.io autd3-firmware-emulator 38.1.0, peer tests/peers/firmware-emulator-v12:
 * every cycle's output image goes to the peer, its (data, ack) come back).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "autd3/autd3.h"
#include "autd3/link_driver.h"
#include "harness/test.h"

#ifndef AUTD3_PEER_FW_EMU_V12
#define AUTD3_PEER_FW_EMU_V12 ""
#endif

static autd3_geometry_t *geometry(size_t n) {
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(n, NULL, &g));
  return g;
}

static autd3_err_t open_emu(size_t n, uint32_t firmware, uint32_t protocol, autd3_client_t **c) {
  autd3_geometry_t *g = geometry(n);
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  o.u.emulator.cycle_ns = 500000;
  o.u.emulator.firmware = firmware;
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.protocol = protocol;
  autd3_err_t err = autd3_client_open(g, &o, &cfg, c);
  autd3_geometry_free(g);
  return err;
}

static autd3_frame_t v12_op(uint8_t tag, uint8_t arg) {
  uint8_t op[2] = {tag, arg};
  autd3_frame_t f;
  ASSERT_OK(autd3_v12_frame(&f, op, 2, NULL, 0));
  return f;
}

/* What every v12 test checks once open: versions, frames, errors, reads, close. */
static void exercise(autd3_client_t *c) {
  size_t n = autd3_client_num_devices(c);
  ASSERT_EQ(autd3_client_protocol(c), AUTD3_PROTOCOL_V12);
  autd3_fw_version_t v[AUTD3_MAX_DEVICES];
  ASSERT_OK(autd3_client_read_firmware_version(c, v));
  for (size_t d = 0; d < n; d++) {
    ASSERT_EQ(v[d].cpu_major, 12);
    ASSERT_EQ(v[d].cpu_minor, 1);
    ASSERT_EQ(v[d].cpu_patch, 0);
    ASSERT_EQ(v[d].fpga_major, 12);
    ASSERT_EQ(v[d].fpga_minor, 1);
  }
  /* Two operations in one frame (slot 2). */
  uint8_t fan[2] = {AUTD3_V12_TAG_FORCE_FAN, 1}, nop[2] = {AUTD3_V12_TAG_NOP, 0};
  autd3_frame_t f;
  ASSERT_OK(autd3_v12_frame(&f, fan, 2, nop, 2));
  autd3_response_t resp;
  ASSERT_OK(autd3_client_send_checked(c, &f, &resp));
  for (size_t d = 0; d < n; d++) ASSERT_EQ(resp.outcome[d], AUTD3_OUTCOME_EXECUTED);
  /* A firmware error: executed, and the request fails with its message. */
  f = v12_op(0x55, 0);
  autd3_request_t *req = NULL;
  ASSERT_OK(autd3_client_send(c, &f, &req));
  ASSERT_ERR(autd3_request_wait(req, &resp), AUTD3_E_DEVICE);
  ASSERT_CONTAINS(autd3_last_error(), "Not supported tag");
  ASSERT_EQ(resp.outcome[0], AUTD3_OUTCOME_EXECUTED);
  /* The FPGA state read: bit 7 flags it. */
  uint8_t st[AUTD3_MAX_DEVICES];
  ASSERT_OK(autd3_client_read_fpga_state(c, st));
  for (size_t d = 0; d < n; d++) ASSERT_EQ(st[d] & 0x80, 0x80);
  ASSERT_ERR(autd3_client_read_error_detail(c, st), AUTD3_E_VERSION);
  /* A new-generation frame is refused, not misread. */
  autd3_frame_t nf = autd3_frame_simple(AUTD3_CMD_CLEAR);
  ASSERT_ERR(autd3_client_send(c, &nf, NULL), AUTD3_E_PAYLOAD);
  /* Streaming: 40 frames (msg_id wraps twice), fire and forget, then one waited. */
  for (int i = 0; i < 40; i++) {
    f = v12_op(AUTD3_V12_TAG_NOP, 0);
    ASSERT_OK(autd3_client_send(c, &f, NULL));
  }
  f = v12_op(AUTD3_V12_TAG_NOP, 0);
  ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
  autd3_client_stats_t s;
  autd3_client_stats(c, &s);
  ASSERT_EQ(s.failed, 1); /* the unknown tag */
  ASSERT_GE(s.completed, 44);
  ASSERT_OK(autd3_client_close(c));
}

TEST(v12_over_emulator) {
  autd3_client_t *c = NULL;
  ASSERT_OK(open_emu(2, AUTD3_EMU_FIRMWARE_V12, AUTD3_PROTOCOL_V12, &c));
  exercise(c);
}

TEST(auto_detects_v12) {
  autd3_client_t *c = NULL;
  ASSERT_OK(open_emu(2, AUTD3_EMU_FIRMWARE_V12, AUTD3_PROTOCOL_AUTO, &c));
  exercise(c);
}

TEST(auto_detects_new) {
  autd3_client_t *c = NULL;
  ASSERT_OK(open_emu(2, AUTD3_EMU_FIRMWARE_NEW, AUTD3_PROTOCOL_AUTO, &c));
  ASSERT_EQ(autd3_client_protocol(c), AUTD3_PROTOCOL_NEW);
  autd3_frame_t f = autd3_frame_simple(AUTD3_CMD_NOP);
  ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
  ASSERT_OK(autd3_client_close(c));
}

TEST(auto_refuses_mixed_chain) {
  autd3_client_t *c = NULL;
  ASSERT_ERR(open_emu(3, AUTD3_EMU_FIRMWARE_MIXED, AUTD3_PROTOCOL_AUTO, &c), AUTD3_E_VERSION);
  ASSERT_CONTAINS(autd3_last_error(), "mixed chain refused");
  ASSERT_TRUE(c == NULL);
}

TEST(wrong_generation_fails_open_cleanly) {
  autd3_client_t *c = NULL;
  /* The v12 client's frames are Resets to a new-generation device: open times out. */
  ASSERT_ERR(open_emu(1, AUTD3_EMU_FIRMWARE_NEW, AUTD3_PROTOCOL_V12, &c), AUTD3_E_TIMEOUT);
  ASSERT_TRUE(c == NULL);
  /* The new client against firmware v12: refused at open too. */
  ASSERT_TRUE(open_emu(1, AUTD3_EMU_FIRMWARE_V12, AUTD3_PROTOCOL_NEW, &c) != AUTD3_OK);
  ASSERT_TRUE(c == NULL);
}

TEST(frozen_device_times_out_with_unknown_outcome) {
  autd3_client_t *c = NULL;
  ASSERT_OK(open_emu(2, AUTD3_EMU_FIRMWARE_V12, AUTD3_PROTOCOL_V12, &c));
  autd3_device_fault_t fz = {.freeze = true};
  ASSERT_OK(autd3_emulator_inject(autd3_client_link(c), 1, &fz));
  autd3_frame_t f = v12_op(AUTD3_V12_TAG_NOP, 0);
  autd3_response_t resp;
  autd3_request_t *req = NULL;
  ASSERT_OK(autd3_client_send(c, &f, &req));
  ASSERT_ERR(autd3_request_wait(req, &resp), AUTD3_E_TIMEOUT);
  ASSERT_CONTAINS(autd3_last_error(), "device 1 did not ack");
  ASSERT_EQ(resp.outcome[0], AUTD3_OUTCOME_EXECUTED);
  ASSERT_EQ(resp.outcome[1], AUTD3_OUTCOME_UNKNOWN);
  autd3_device_fault_t none = {0};
  ASSERT_OK(autd3_emulator_inject(autd3_client_link(c), 1, &none));
  ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
  ASSERT_OK(autd3_client_close(c));
}

TEST(v12_frame_validation) {
  autd3_frame_t f;
  uint8_t big[622] = {AUTD3_V12_TAG_GAIN};
  ASSERT_ERR(autd3_v12_frame(&f, big, 622, big, 2), AUTD3_E_PAYLOAD);
  ASSERT_ERR(autd3_v12_frame(&f, NULL, 0, NULL, 0), AUTD3_E_INVALID_ARGUMENT);
  uint8_t a[3] = {AUTD3_V12_TAG_NOP, 1, 2}, b[2] = {AUTD3_V12_TAG_SYNC, 0};
  ASSERT_OK(autd3_v12_frame(&f, a, 3, b, 2));
  ASSERT_EQ(f.payload[0], 4); /* op 2 at the next even offset */
  ASSERT_EQ(f.payload[2 + 4], AUTD3_V12_TAG_SYNC);
  ASSERT_STREQ(autd3_v12_err_message(2), "Invalid message ID");
  ASSERT_STREQ(autd3_v12_err_message(9), "Unknown firmware error");
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.protocol = 7;
  ASSERT_ERR(autd3_client_config_validate(&cfg), AUTD3_E_INVALID_CONFIG);
}

/* ---- the shim: devices = reference v12 emulators (one peer process each) ---- */

typedef struct shim {
  struct autd3_link base;
  pid_t pid[4];
  FILE *to[4], *from[4];
} shim_t;

static autd3_err_t shim_cycle(struct autd3_link *l, const uint8_t *tx, uint8_t *rx, bool *valid) {
  shim_t *s = (shim_t *)l;
  char line[2 * AUTD3_TX_FRAME_BYTES + 2];
  for (size_t d = 0; d < l->num_devices; d++) {
    const uint8_t *t = tx + d * AUTD3_TX_FRAME_BYTES;
    for (int b = 0; b < AUTD3_TX_FRAME_BYTES; b++) snprintf(line + 2 * b, 3, "%02x", t[b]);
    fprintf(s->to[d], "%s\n", line);
    fflush(s->to[d]);
    unsigned data = 0, ack = 0, st = 0;
    char buf[64];
    if (!fgets(buf, sizeof buf, s->from[d]) || sscanf(buf, "%x %x %x", &data, &ack, &st) != 3)
      return autd3_set_error(AUTD3_E_LINK, "shim: the reference peer stopped answering");
    rx[2 * d] = (uint8_t)data;
    rx[2 * d + 1] = (uint8_t)ack;
  }
  *valid = true;
  usleep(200); /* paced a little, like a bus */
  autd3_link_count_cycle(l, true, false);
  return AUTD3_OK;
}

static void shim_close(struct autd3_link *l) {
  shim_t *s = (shim_t *)l;
  for (size_t d = 0; d < l->num_devices; d++) {
    fclose(s->to[d]);
    fclose(s->from[d]);
    waitpid(s->pid[d], NULL, 0);
  }
  free(s);
}

static const autd3_link_vtable_t shim_vt = {.cycle = shim_cycle, .close = shim_close};

static autd3_err_t shim_open(const autd3_link_option_t *o, const autd3_geometry_t *g, struct autd3_link **out) {
  (void)o;
  size_t n = autd3_geometry_num_devices(g);
  if (n > 4) return autd3_set_error(AUTD3_E_DEVICE_COUNT_RANGE, "shim: at most 4 devices");
  shim_t *s = calloc(1, sizeof *s);
  autd3_link_init(&s->base, &shim_vt, AUTD3_LINK_EMULATOR, (uint16_t)n);
  for (size_t d = 0; d < n; d++) {
    int in[2], outp[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(outp, O_CLOEXEC) != 0) return autd3_set_error(AUTD3_E_IO, "shim: pipe");
    pid_t pid = fork();
    if (pid == 0) {
      dup2(in[0], 0);
      dup2(outp[1], 1);
      close(in[1]);
      close(outp[0]);
      execl(AUTD3_PEER_FW_EMU_V12, AUTD3_PEER_FW_EMU_V12, (char *)NULL);
      _exit(127);
    }
    close(in[0]);
    close(outp[1]);
    s->pid[d] = pid;
    s->to[d] = fdopen(in[1], "w");
    s->from[d] = fdopen(outp[0], "r");
  }
  *out = &s->base;
  return AUTD3_OK;
}

TEST(legacy_client_against_reference_emulator) {
  if (access(AUTD3_PEER_FW_EMU_V12, X_OK) != 0) SKIP("the firmware-emulator-v12 peer is not built (needs cargo)");
  signal(SIGPIPE, SIG_IGN);
  ASSERT_OK(autd3_link_register(AUTD3_LINK_EMULATOR, shim_open));
  autd3_geometry_t *g = geometry(2);
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.protocol = AUTD3_PROTOCOL_AUTO; /* the probe, too, against the reference */
  cfg.require_supported_firmware = true;
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, &cfg, &c));
  autd3_geometry_free(g);
  exercise(c);
}

/* A power cycle reported by the link: counted, and a frame in flight on that
 * device ends UNKNOWN (never EXECUTED by guess). Frames before and after succeed. */
TEST(power_cycle_is_counted_and_in_flight_frame_unknown) {
  autd3_client_t *c = NULL;
  ASSERT_OK(open_emu(2, AUTD3_EMU_FIRMWARE_V12, AUTD3_PROTOCOL_V12, &c));
  autd3_frame_t f = v12_op(AUTD3_V12_TAG_NOP, 0);
  ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
  /* Freeze device 1 so the next frame stays in flight, then power-cycle it. */
  autd3_device_fault_t fz = {.freeze = true};
  ASSERT_OK(autd3_emulator_inject(autd3_client_link(c), 1, &fz));
  autd3_client_stats_t s0, s1;
  autd3_client_stats(c, &s0);
  autd3_request_t *req = NULL;
  ASSERT_OK(autd3_client_send(c, &f, &req));
  /* Wait until the bus thread has put it on the wire (device 1, frozen, cannot ack it). */
  do {
    usleep(200);
    autd3_client_stats(c, &s1);
  } while (s1.sent == s0.sent);
  ASSERT_OK(autd3_emulator_power_cycle(autd3_client_link(c), 1));
  autd3_response_t resp;
  ASSERT_ERR(autd3_request_wait(req, &resp), AUTD3_E_OUTCOME_UNKNOWN);
  ASSERT_CONTAINS(autd3_last_error(), "device 1 was reset");
  ASSERT_EQ(resp.outcome[1], AUTD3_OUTCOME_UNKNOWN);
  ASSERT_EQ(autd3_client_device_resets(c, 1), 1);
  ASSERT_EQ(autd3_client_device_resets(c, 0), 0);
  ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
  ASSERT_OK(autd3_client_close(c));
}
