/*
 * autd3-emu as a process on a veth pair in a private network namespace
 * (tools/netns/autd3-netns): raw frames through src/nic, faults through the
 * control socket (tests/harness/emuctl.h), pysoem as an independent master,
 * and tshark's EtherCAT dissector over a capture.
 *
 * Tests that need the namespace re-run themselves inside autd3-netns through
 * the one emulated-chain harness (tests/harness/emu_chain.h).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frame.h"
#include "harness/emu_chain.h"
#include "harness/emuctl.h"
#include "harness/test.h"
#include "nic/nic.h"
#include "platform/platform.h"

#define NETNS AUTD3_BINARY_DIR "/tools/netns/autd3-netns"

static void need_userns(void) {
  if (system("unshare -rn true >/dev/null 2>&1") != 0)
    SKIP("unprivileged user namespaces unavailable (unshare -rn failed)");
  if (access(AUTD3_BINARY_DIR "/tools/emu/autd3-emu", X_OK) != 0) SKIP("autd3-emu not built");
}

static autd3_nic_t *g_nic;
static uint8_t g_idx;

/* How long a frame may wait for its reply: a bound for a reply that never comes
 * (the emulator answers in microseconds), generous so that a stalled CI machine
 * cannot turn a late reply into a missing one. Where *no* reply is the expected
 * outcome (silence, drop) a short wait suffices: a stall cannot create a reply. */
#define REPLY_WAIT_NS 10000000000ull
#define NO_REPLY_WAIT_NS 300000000ull
static uint64_t g_wait_ns = REPLY_WAIT_NS;

/* Send one frame and wait (≤ g_wait_ns) for its reply: same length, first command
 * and index (a late reply to an earlier hostile frame can carry the same index).
 * Returns false if none came. */
static bool xfer(fr_t *f) {
  f->b[16 + 1] = ++g_idx;
  size_t sent = f->len < 60 ? 60 : f->len;
  ASSERT_OK(autd3__nic_send(g_nic, f->b, sent));
  uint64_t deadline = autd3__now_ns() + g_wait_ns;
  for (;;) {
    uint8_t buf[AUTD3_NIC_MAX_FRAME];
    size_t len;
    if (autd3__nic_recv(g_nic, buf, sizeof buf, &len, deadline) != AUTD3_OK) return false;
    if (len == sent && buf[16] == f->b[16] && buf[17] == g_idx) {
      ASSERT_EQ(buf[6] & 0x02, 0x02);
      memcpy(f->b, buf, len < sizeof f->b ? len : sizeof f->b);
      return true;
    }
  }
}

static int one(uint8_t cmd, uint16_t adp, uint16_t ado, uint16_t *val) {
  fr_t f;
  fr_init(&f);
  uint8_t d[2] = {(uint8_t)(val ? *val : 0), (uint8_t)((val ? *val : 0) >> 8)};
  size_t o = fr_add(&f, cmd, adp, ado, d, 2);
  if (!xfer(&f)) return -1;
  if (val) *val = fr_u16(&f, o);
  return fr_wkc(&f, o);
}

/* `one` where no reply is expected: -1 if none came. */
static int one_no_reply(uint8_t cmd, uint16_t adp, uint16_t ado) {
  uint16_t v = 0;
  g_wait_ns = NO_REPLY_WAIT_NS;
  int r = one(cmd, adp, ado, &v);
  g_wait_ns = REPLY_WAIT_NS;
  return r;
}

static void ctl_ok(const char *cmd, char *r, size_t cap) {
  int rc = autd3_emuctl(cmd, r, cap);
  if (rc != 0) TEST_FAIL_("emuctl '%s': %s", cmd, r);
}

TEST(control_unplug_replug_power_cycle) {
  autd3_test_in_emu_chain("control_unplug_replug_power_cycle", 3, "", false);
  ASSERT_OK(autd3__nic_open(getenv("AUTD3_TEST_IFNAME"), AUTD3_NIC_AUTO, &g_nic));
  char r[8192];
  ctl_ok("ping", r, sizeof r);
  uint16_t v = 0;
  ASSERT_EQ(one(BRD, 0, 0x0000, &v), 3);
  for (int i = 0; i < 3; i++) {
    v = (uint16_t)(0x1001 + i);
    ASSERT_EQ(one(APWR, (uint16_t)(0 - i), 0x0010, &v), 1);
  }
  /* unplug device 1 and everything after it: WKC drops, device 2 unreadable */
  ctl_ok("unplug 1", r, sizeof r);
  ASSERT_EQ(one(BRD, 0, 0x0000, &v), 1);
  v = 0;
  ASSERT_EQ(one(FPRD, 0x1003, 0x0130, &v), 0);
  ctl_ok("replug", r, sizeof r);
  ASSERT_EQ(one(BRD, 0, 0x0000, &v), 3);
  /* power-cycle device 1: back in INIT with its station address cleared */
  v = 0x02;
  ASSERT_EQ(one(BWR, 0, 0x0120, &v), 3);
  ctl_ok("power-cycle 1", r, sizeof r);
  ASSERT_EQ(one(FPRD, 0x1002, 0x0130, &v), 0);
  v = 0;
  ASSERT_EQ(one(APRD, 0xFFFF, 0x0130, &v), 1);
  ASSERT_EQ(v, 0x01);
  v = 0;
  ASSERT_EQ(one(FPRD, 0x1001, 0x0130, &v), 1);
  ASSERT_EQ(v, 0x02);
  ctl_ok("status", r, sizeof r);
  ASSERT_CONTAINS(r, "dev 1 state INIT");
  ASSERT_CONTAINS(r, "dev 0 state PREOP");
  ctl_ok("al 0", r, sizeof r);
  ASSERT_CONTAINS(r, "0x02");
  ASSERT_EQ(autd3_emuctl("unplug 9", r, sizeof r), 1);
  ASSERT_EQ(autd3_emuctl("power-cycle x", r, sizeof r), 1);
  ASSERT_EQ(autd3_emuctl("frobnicate", r, sizeof r), 1);
  ASSERT_EQ(autd3_emuctl("drop 2", r, sizeof r), 1);
  autd3__nic_close(g_nic);
}

TEST(control_silence_drop_delay) {
  autd3_test_in_emu_chain("control_silence_drop_delay", 1, "", false);
  ASSERT_OK(autd3__nic_open(getenv("AUTD3_TEST_IFNAME"), AUTD3_NIC_AUTO, &g_nic));
  char r[512];
  uint16_t v;
  ASSERT_EQ(one(BRD, 0, 0x0000, &v), 1);
  ctl_ok("silence 1", r, sizeof r);
  ASSERT_EQ(one_no_reply(BRD, 0, 0x0000), -1);
  ctl_ok("silence 0", r, sizeof r);
  ASSERT_EQ(one(BRD, 0, 0x0000, &v), 1);
  ctl_ok("drop 1", r, sizeof r);
  ASSERT_EQ(one_no_reply(BRD, 0, 0x0000), -1);
  ctl_ok("drop 0", r, sizeof r);
  ctl_ok("delay 3000", r, sizeof r); /* replies still come (the amount is not asserted) */
  ASSERT_EQ(one(BRD, 0, 0x0000, &v), 1);
  ctl_ok("delay 0", r, sizeof r);
  ctl_ok("status", r, sizeof r);
  ASSERT_CONTAINS(r, "dropped 1");
  autd3__nic_close(g_nic);
}

/* The wire model starts a frame's line time when the frame reached the
 * interface (the kernel's receive stamp, src/nic/rx_clock.h), not when
 * autd3-emu got round to reading it: two frames sent 20 ms apart while the
 * emulator is stopped reach the reference clock at least 20 ms apart. Timed
 * by the read, both would be read together after SIGCONT and lie one frame
 * time apart. Only a lower bound is asserted (the sleep guarantees it). */
TEST(wire_model_times_arrival_not_read) {
  autd3_test_in_emu_chain("wire_model_times_arrival_not_read", 1, "--wire", false);
  const char *pid = getenv("AUTD3_EMU_PID");
  ASSERT_TRUE(pid != NULL);
  ASSERT_OK(autd3__nic_open(getenv("AUTD3_TEST_IFNAME"), AUTD3_NIC_AUTO, &g_nic));
  uint16_t v = 0;
  ASSERT_EQ(one(BRD, 0, 0x0000, &v), 1); /* the emulator runs */
  fr_t f[2];
  size_t off[2];
  for (int i = 0; i < 2; i++) {
    fr_init(&f[i]);
    off[i] = fr_add(&f[i], APRD, 0, 0x0910, NULL, 8); /* the reference's system time */
    f[i].b[16 + 1] = (uint8_t)(0x40 + i);
  }
  ASSERT_EQ(kill((pid_t)atoi(pid), SIGSTOP), 0);
  ASSERT_OK(autd3__nic_send(g_nic, f[0].b, f[0].len));
  autd3__sleep_ns(20000000);
  ASSERT_OK(autd3__nic_send(g_nic, f[1].b, f[1].len));
  ASSERT_EQ(kill((pid_t)atoi(pid), SIGCONT), 0);
  uint64_t t[2] = {0, 0};
  uint64_t deadline = autd3__now_ns() + REPLY_WAIT_NS;
  while (!t[0] || !t[1]) {
    uint8_t buf[AUTD3_NIC_MAX_FRAME];
    size_t len;
    ASSERT_OK(autd3__nic_recv(g_nic, buf, sizeof buf, &len, deadline));
    int i = buf[17] - 0x40;
    if (len != f[0].len || i < 0 || i > 1) continue;
    memcpy(f[i].b, buf, len);
    ASSERT_EQ(fr_wkc(&f[i], off[i]), 1);
    uint64_t x = 0;
    for (int b = 7; b >= 0; b--) x = (x << 8) | fr_data(&f[i], off[i])[b];
    t[i] = x;
  }
  printf("reference time between the two frames: %llu ns\n", (unsigned long long)(t[1] - t[0]));
  ASSERT_GE(t[1] - t[0], 20000000ull);
  char r[256];
  ctl_ok("rx-clock", r, sizeof r);
  printf("%s\n", r);
  /* Both frames of interest were timed by a kernel stamp (the ring's, or SIOCGSTAMPNS); the first
   * frame of a run may go by its read time (the ring's clock offset is not known yet). */
  unsigned long long kernel = 0, read = 0;
  ASSERT_EQ(sscanf(r, "ok rx-clock kernel %llu read %llu", &kernel, &read), 2);
  ASSERT_TRUE(kernel >= 2);
  ASSERT_TRUE(read <= 1);
  autd3__nic_close(g_nic);
}

/* Hostile frames on the wire: the emulator survives and keeps answering. */
TEST(hostile_frames_on_the_wire) {
  autd3_test_in_emu_chain("hostile_frames_on_the_wire", 2, "", false);
  ASSERT_OK(autd3__nic_open(getenv("AUTD3_TEST_IFNAME"), AUTD3_NIC_AUTO, &g_nic));
  uint8_t b[1514];
  for (int k = 0; k < 200; k++) {
    size_t len = 14 + (size_t)(k * 37) % 1500;
    for (size_t i = 0; i < len; i++) b[i] = (uint8_t)(i * 29 + (size_t)k * 13);
    b[12] = 0x88;
    b[13] = 0xA4;
    if (k % 5 == 0) b[14] = 0xFF, b[15] = 0x17; /* length field far beyond the frame */
    autd3__nic_send(g_nic, b, len < 60 ? 60 : len);
  }
  /* drain whatever came back, then a valid frame still works */
  uint8_t buf[AUTD3_NIC_MAX_FRAME];
  size_t len;
  while (autd3__nic_recv(g_nic, buf, sizeof buf, &len, autd3__now_ns() + 50000000ull) == AUTD3_OK) {
  }
  uint16_t v;
  ASSERT_EQ(one(BRD, 0, 0x0000, &v), 2);
  char r[512];
  ctl_ok("ping", r, sizeof r);
  autd3__nic_close(g_nic);
}

/* Run `autd3-netns ... -- python pysoem_peer.py N CYCLES`; 77 = skip. */
static void pysoem(const char *devices, const char *cycles, const char *emu_args, const char *peer_args) {
  need_userns();
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' --devices %s --build '%s' --emu-args '%s' -- '%s' '%s/pysoem_peer.py' %s %s %s", NETNS,
           devices, AUTD3_BINARY_DIR, emu_args, AUTD3_PYTHON_EXE, AUTD3_EMU_TESTS_DIR, devices, cycles, peer_args);
  int st = system(cmd);
  ASSERT_TRUE(WIFEXITED(st));
  if (WEXITSTATUS(st) == 77) SKIP("pysoem is not installed for %s", AUTD3_PYTHON_EXE);
  ASSERT_EQ(WEXITSTATUS(st), 0);
}

/* Runs whose subject is not the SM watchdog switch it off (--sm-watchdog-ms 0): a CI
 * stall longer than 100 ms would otherwise drop the devices to SAFE-OP+ERR mid-run
 * (realistic, but not what these tests are about). pysoem_faults_recovery keeps the
 * ESC's 100 ms and handles such drops as SOEM does. */
#define NO_WD "--sm-watchdog-ms 0 "
TEST(pysoem_2_devices) { pysoem("2", "1000", NO_WD, ""); }
TEST(pysoem_5_devices_drift) { pysoem("5", "1000", NO_WD "--drift-ppm 50", ""); }
/* Fault injection seen by an independent master: unplug → WKC drops, re-plug and
 * power-cycle → SOEM's own recovery (ack, reconfig, recover) brings it back. */
TEST(pysoem_faults_recovery) { pysoem("3", "100", "", "--faults"); }
/* The ESI-faithful variant: mailbox + CoE; SOEM reads the PDO mapping over CoE
 * (complete access, segmented) and maps a mailbox-status byte per device. */
TEST(pysoem_mailbox_coe) { pysoem("2", "300", NO_WD "--mailbox", "--sdo"); }
/* The whole object dictionary through SDO Information (object list, object and
 * entry descriptions) and an upload of every entry, as a configuration tool
 * browses it: every request answered, every field as the dictionary says. */
TEST(pysoem_object_dictionary) { pysoem("2", "0", NO_WD "--mailbox", "--od"); }

/* SOEM v2's own slaveinfo sample (found at configure time, AUTD3_SOEM_SLAVEINFO;
 * skipped when absent) with `-sdo` (the dictionary through SDO Information and
 * an upload of every entry) and `-map` (the PDO mapping through CoE, every
 * mapped entry described): every request must be answered without an error.
 * A request the device leaves unanswered costs SOEM 700 ms, which made this
 * run take minutes; the test's TIMEOUT is only the bound for such a hang. */
static int count_errors(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[512];
  int errors = 0;
  while (fgets(line, sizeof line, f))
    if (strcasestr(line, "error")) {
      fprintf(stderr, "slaveinfo: %s", line);
      errors++;
    }
  fclose(f);
  return errors;
}

static void slaveinfo(const char *option, const char *must, int must_count) {
  if (!AUTD3_SOEM_SLAVEINFO[0] || access(AUTD3_SOEM_SLAVEINFO, X_OK) != 0)
    SKIP("SOEM's slaveinfo not found (build SOEM v2 as docs/soem.md says, configure with -DSOEM_ROOT=...)");
  need_userns();
  char out[] = "/tmp/autd3-slaveinfoXXXXXX";
  int fd = mkstemp(out);
  ASSERT_TRUE(fd >= 0);
  close(fd);
  /* slaveinfo's stdout apart from every stderr (the emulator's too): a line
   * written unbuffered to stderr would otherwise land inside a buffered
   * stdout line and split the entry being counted. */
  char err[sizeof out + 4];
  snprintf(err, sizeof err, "%s.err", out);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s' --devices 2 --build '%s' --emu-args '" NO_WD "--mailbox' -- '%s' @MASTER@ %s >'%s' 2>'%s'",
           NETNS, AUTD3_BINARY_DIR, AUTD3_SOEM_SLAVEINFO, option, out, err);
  int st = system(cmd);
  FILE *f = fopen(out, "r");
  ASSERT_TRUE(f != NULL);
  char line[512];
  int found = 0, done = 0, mapped = 0;
  while (fgets(line, sizeof line, f)) {
    if (strstr(line, must)) found++;
    if (strstr(line, "End slaveinfo")) done = 1;
    if (strstr(line, "0x7000:") && strstr(line, "UNSIGNED16")) mapped++; /* -map: an entry, described */
  }
  fclose(f);
  int errors = count_errors(out), err_errors = count_errors(err);
  unlink(out);
  unlink(err);
  ASSERT_TRUE(WIFEXITED(st));
  ASSERT_EQ(WEXITSTATUS(st), 0);
  ASSERT_TRUE(done);
  ASSERT_EQ(errors, 0);
  ASSERT_EQ(err_errors, 0);
  ASSERT_EQ(found, must_count);
  if (!strcmp(option, "-map")) ASSERT_EQ(mapped, 2 * 249);
}
TEST(soem_slaveinfo_sdo) { slaveinfo("-sdo", "CoE Object Description found, 14 entries.", 2); }
TEST(soem_slaveinfo_map) { slaveinfo("-map", "PDO mapping according to CoE", 2); }

TEST(tshark_decodes_capture) {
  if (system("command -v tshark >/dev/null 2>&1") != 0) SKIP("tshark not installed (apt-get install tshark)");
  char cap[] = "/tmp/autd3-emu-capXXXXXX";
  int fd = mkstemp(cap);
  ASSERT_TRUE(fd >= 0);
  close(fd);
  char args[128];
  snprintf(args, sizeof args, NO_WD "--mailbox --capture %s", cap); /* with CoE traffic, for the mailbox dissector too */
  pysoem("2", "200", args, "--sdo");
  char cmd[1024];
  /* every frame is EtherCAT; none malformed or with an error-level expert item */
  snprintf(cmd, sizeof cmd, "tshark -n -r %s -Y 'ecat' 2>/dev/null | wc -l", cap);
  FILE *p = popen(cmd, "r");
  long ecat = -1, bad = -1;
  ASSERT_TRUE(p && fscanf(p, "%ld", &ecat) == 1);
  pclose(p);
  snprintf(cmd, sizeof cmd, "tshark -n -r %s -Y '_ws.malformed || _ws.expert.severity >= error || !ecat' 2>/dev/null | wc -l", cap);
  p = popen(cmd, "r");
  ASSERT_TRUE(p && fscanf(p, "%ld", &bad) == 1);
  pclose(p);
  long coe = -1;
  snprintf(cmd, sizeof cmd, "tshark -n -r %s -Y 'ecat_mailbox.coe' 2>/dev/null | wc -l", cap);
  p = popen(cmd, "r");
  ASSERT_TRUE(p && fscanf(p, "%ld", &coe) == 1);
  pclose(p);
  unlink(cap);
  ASSERT_GT(coe, 10);
  ASSERT_GT(ecat, 400); /* requests and replies of 200+ cycles plus set-up */
  ASSERT_EQ(bad, 0);
}
