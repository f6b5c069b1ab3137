/* The SOEM link (src/link/soem): registration, option and bring-up errors
 * (no emulator needed), and smoke tests over autd3-emu on a veth pair in a
 * private network namespace. Every case SKIPs with the reason when the SOEM
 * link is not built (AUTD3_LINK_SOEM; needs an installed SOEM v2). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "autd3/link.h"
#include "harness/netns.h"
#include "harness/test.h"
#include "platform/platform.h"

static void need_soem(void) {
  if (!autd3_link_kind_available(AUTD3_LINK_SOEM))
    SKIP("SOEM link not built (configure with -DAUTD3_LINK_SOEM=ON and -DSOEM_ROOT=<SOEM v2 prefix>)");
}

static void reexec(const char *flags, const char *name) { autd3_test_reexec_unshare(flags, name); }

static void veth(const char *name, bool up) {
  reexec("-rn", name);
  autd3_test_veth("soem0", "soem1", up);
}

static autd3_geometry_t *geometry(size_t n) {
  autd3_device_pose_t poses[8];
  for (size_t i = 0; i < n; i++) poses[i] = autd3_device_pose_at(192.0f * (float)i, 0, 0);
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(n, poses, &g));
  return g;
}

static autd3_link_option_t option(const char *ifname) {
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_SOEM);
  o.u.soem.ethercat.interface = ifname;
  return o;
}

static autd3_err_t try_open(const autd3_link_option_t *o, size_t n) {
  autd3_geometry_t *g = geometry(n);
  autd3_link_t *link = NULL;
  autd3_err_t err = autd3_link_open(o, g, &link);
  fprintf(stderr, "open: %s: %s\n", autd3_err_name(err), autd3_last_error());
  autd3_link_close(link);
  autd3_geometry_free(g);
  return err;
}

TEST(registered) {
  need_soem();
  ASSERT_TRUE(autd3_link_kind_available(AUTD3_LINK_SOEM));
  autd3_link_kind_t k;
  ASSERT_OK(autd3_link_kind_parse("soem", &k));
  ASSERT_EQ(k, AUTD3_LINK_SOEM);
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_SOEM);
  ASSERT_EQ(o.u.soem.ethercat.sync0_period_ns, 1000000);
  ASSERT_TRUE(autd3_link_option_ethercat(&o) == &o.u.soem.ethercat);
}

TEST(invalid_options) {
  need_soem();
  autd3_link_option_t o = option("soem0");
  o.u.soem.ethercat.sync0_period_ns = 750000;
  ASSERT_ERR(try_open(&o, 1), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "sync0_period_ns");
  o = option("soem0");
  o.u.soem.ethercat.sync_timeout_ms = 0;
  ASSERT_ERR(try_open(&o, 1), AUTD3_E_INVALID_OPTION);
}

TEST(no_interface) {
  need_soem();
  autd3_link_option_t o = option("nosuchif0");
  ASSERT_ERR(try_open(&o, 1), AUTD3_E_NO_INTERFACE);
  ASSERT_CONTAINS(autd3_last_error(), "nosuchif0");
  o = option("an-interface-name-longer-than-ifnamsiz");
  ASSERT_ERR(try_open(&o, 1), AUTD3_E_NO_INTERFACE);
}

/* A user namespace without its own network namespace holds no capability over
 * the host's adapters: SOEM's raw socket is refused. */
TEST(permission) {
  need_soem();
  reexec("-r", "permission");
  autd3_link_option_t o = option("lo");
  ASSERT_ERR(try_open(&o, 1), AUTD3_E_PERMISSION);
  ASSERT_CONTAINS(autd3_last_error(), "CAP_NET_RAW");
}

/* Nothing at the other end of the veth: no EtherCAT device answers. */
TEST(no_device) {
  need_soem();
  veth("no_device", true);
  autd3_link_option_t o = option("soem0");
  ASSERT_ERR(try_open(&o, 1), AUTD3_E_NO_DEVICE);
  ASSERT_CONTAINS(autd3_last_error(), "soem0");
  /* a capture file that cannot be created fails the open, naming the path */
  o.u.soem.ethercat.capture_path = "/nonexistent-dir/soem.pcap";
  ASSERT_ERR(try_open(&o, 1), AUTD3_E_IO);
  ASSERT_CONTAINS(autd3_last_error(), "/nonexistent-dir/soem.pcap");
}

TEST(interface_down) {
  need_soem();
  veth("interface_down", false);
  autd3_link_option_t o = option("soem0");
  ASSERT_ERR(try_open(&o, 1), AUTD3_E_NO_DEVICE);
  ASSERT_CONTAINS(autd3_last_error(), "down");
}

/* interface = NULL/"auto" scans every adapter; with no AUTD3 anywhere it names what it scanned. */
TEST(auto_no_device) {
  need_soem();
  veth("auto_no_device", true);
  autd3_link_option_t o = option(NULL);
  ASSERT_ERR(try_open(&o, 1), AUTD3_E_NO_DEVICE);
  ASSERT_CONTAINS(autd3_last_error(), "soem0");
  o = option("auto");
  ASSERT_ERR(try_open(&o, 1), AUTD3_E_NO_DEVICE);
}

/* ---- over the device emulator (autd3-emu on the other end of the veth) ---- */

static pid_t emu_pid;
static char emu_sock[108];

static void emu_stop(void) {
  if (emu_pid > 0) {
    kill(emu_pid, SIGTERM);
    waitpid(emu_pid, NULL, 0);
    emu_pid = 0;
    unlink(emu_sock);
  }
}

/* One control command to autd3-emu; returns the reply line (static buffer), or NULL if unreachable. */
static const char *emu_cmd(const char *cmd) {
  static char reply[4096];
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return NULL;
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  memcpy(a.sun_path, emu_sock, strlen(emu_sock) + 1);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return NULL;
  }
  char line[128];
  int len = snprintf(line, sizeof line, "%s\n", cmd);
  size_t got = 0;
  if (write(fd, line, (size_t)len) == len) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (got < sizeof reply - 1 && poll(&p, 1, 5000) == 1) {
      ssize_t r = read(fd, reply + got, sizeof reply - 1 - got);
      if (r <= 0) break;
      got += (size_t)r;
      if (memchr(reply, '\n', got)) break;
    }
  }
  close(fd);
  reply[got] = 0;
  char *nl = strchr(reply, '\n');
  if (nl) *nl = 0;
  return got ? reply : NULL;
}

static void emu_ok(const char *cmd) {
  const char *r = emu_cmd(cmd);
  if (r == NULL || strncmp(r, "ok", 2) != 0) TEST_FAIL_("autd3-emu '%s': %s", cmd, r ? r : "no reply");
}

/* Private netns + veth soem0 (master) <-> soem1 (autd3-emu with `devices` devices and `extra` options). */
static void emu_start(const char *name, int devices, const char *const *extra) {
  char exe[4096];
  snprintf(exe, sizeof exe, "%s/tools/emu/autd3-emu", AUTD3_BINARY_DIR);
  if (access(exe, X_OK) != 0) SKIP("the device emulator is not built (%s)", exe);
  veth(name, true);
  snprintf(emu_sock, sizeof emu_sock, "/tmp/autd3-soem-test-%d.sock", (int)getpid());
  unlink(emu_sock);
  char n[8];
  snprintf(n, sizeof n, "%d", devices);
  const char *argv[24] = {exe, "--interface", "soem1", "--devices", n, "--control", emu_sock};
  int argc = 7;
  for (int i = 0; extra && extra[i] && argc < 22; i++) argv[argc++] = extra[i];
  argv[argc] = NULL;
  emu_pid = fork();
  if (emu_pid == 0) {
    execv(exe, (char *const *)argv);
    _exit(127);
  }
  ASSERT_GT(emu_pid, 0);
  atexit(emu_stop);
  for (int i = 0; i < 500; i++) { /* until its control socket answers (bounded; not a timing assertion) */
    const char *r = emu_cmd("ping");
    if (r && strncmp(r, "ok", 2) == 0) break;
    int st;
    if (waitpid(emu_pid, &st, WNOHANG) == emu_pid) {
      emu_pid = 0;
      TEST_FAIL_("autd3-emu exited at start (status %d)", st);
    }
    autd3__sleep_ns(10000000);
    if (i == 499) TEST_FAIL_("autd3-emu did not answer on %s", emu_sock);
  }
}

static autd3_link_t *open_ok(const char *ifname, size_t n, autd3_geometry_t **g) {
  *g = geometry(n);
  autd3_link_option_t o = option(ifname);
  autd3_link_t *link = NULL;
  ASSERT_OK(autd3_link_open(&o, *g, &link));
  ASSERT_EQ(autd3_link_num_devices(link), n);
  ASSERT_EQ(autd3_link_kind(link), AUTD3_LINK_SOEM);
  return link;
}

/* Cycle until every device's ack byte equals `ack` and its data byte `data`
 * (or `limit` cycles); returns the number of cycles with valid inputs that had them. */
static int cycle_until(autd3_link_t *link, uint8_t *tx, uint8_t ack, uint8_t data, int limit) {
  size_t n = autd3_link_num_devices(link);
  uint8_t rx[8 * AUTD3_RX_FRAME_BYTES];
  for (int c = 0; c < limit; c++) {
    bool valid = false;
    ASSERT_OK(autd3_link_cycle(link, tx, rx, &valid));
    if (!valid) continue;
    bool all = true;
    for (size_t d = 0; d < n; d++) all &= rx[d * 2] == ack && rx[d * 2 + 1] == data;
    if (all) return c + 1;
  }
  return 0;
}

static void set_frame(uint8_t *tx, size_t n, uint8_t seq, uint8_t cmd) {
  for (size_t d = 0; d < n; d++) {
    memset(tx + d * AUTD3_TX_FRAME_BYTES, 0, AUTD3_TX_FRAME_BYTES);
    tx[d * AUTD3_TX_FRAME_BYTES] = seq;
    tx[d * AUTD3_TX_FRAME_BYTES + 1] = cmd;
  }
}

/* Open, exchange frames end to end (the devices execute them and their ack /
 * data bytes come back), check state, close: the devices end in INIT. */
static void open_cycle_close(const char *name, int n, const char *ifname) {
  emu_start(name, n, NULL);
  autd3_geometry_t *g;
  autd3_link_t *link = open_ok(ifname, (size_t)n, &g);
  uint8_t tx[8 * AUTD3_TX_FRAME_BYTES];
  set_frame(tx, (size_t)n, 0, AUTD3_CMD_RESET); /* boot/Reset state: ack 0xFF, data 0 */
  ASSERT_GT(cycle_until(link, tx, 0xFF, 0, 1000), 0);
  set_frame(tx, (size_t)n, 0, AUTD3_CMD_READ_CPU_FW_VERSION_MINOR); /* seq 0 accepted: ack 0, data = minor (1) */
  ASSERT_GT(cycle_until(link, tx, 0, 1, 1000), 0);
  set_frame(tx, (size_t)n, 1, AUTD3_CMD_NOP); /* next in order: ack 1, data 0 */
  ASSERT_GT(cycle_until(link, tx, 1, 0, 1000), 0);
  autd3_link_status_t st;
  ASSERT_OK(autd3_link_check_state(link, &st));
  ASSERT_EQ(st.num_devices, n);
  for (int d = 0; d < n; d++) ASSERT_EQ(st.state[d], AUTD3_DEVICE_OP);
  autd3_link_stats_t stats;
  autd3_link_stats(link, &stats);
  ASSERT_GE(stats.cycles, 3); /* lost <= stale is autd3_link_count_cycle()'s, tested in tests/api */
  char diag[1024];
  ASSERT_GT(autd3_link_diagnostics(link, diag, sizeof diag), 0);
  ASSERT_CONTAINS(diag, "expected wkc");
  autd3_link_close(link);
  autd3_geometry_free(g);
  for (int d = 0; d < n; d++) {
    char cmd[16];
    snprintf(cmd, sizeof cmd, "al %d", d);
    const char *r = emu_cmd(cmd);
    ASSERT_TRUE(r != NULL);
    ASSERT_CONTAINS(r, "ok 0x01"); /* INIT after close */
  }
  emu_stop();
}

TEST(emu_open_1) {
  need_soem();
  open_cycle_close("emu_open_1", 1, "soem0");
}

TEST(emu_open_2) {
  need_soem();
  open_cycle_close("emu_open_2", 2, "soem0");
}

TEST(emu_auto_interface) {
  need_soem();
  open_cycle_close("emu_auto_interface", 2, NULL);
}

TEST(emu_count_mismatch) {
  need_soem();
  emu_start("emu_count_mismatch", 2, NULL);
  autd3_link_option_t o = option("soem0");
  ASSERT_ERR(try_open(&o, 1), AUTD3_E_DEVICE_COUNT_MISMATCH);
  ASSERT_CONTAINS(autd3_last_error(), "2 AUTD3 devices");
  ASSERT_ERR(try_open(&o, 3), AUTD3_E_DEVICE_COUNT_MISMATCH);
  emu_stop();
}

TEST(emu_not_autd) {
  need_soem();
  const char *extra[] = {"--override-device", "1", "--vendor", "2", "--name", "EL1004", NULL};
  emu_start("emu_not_autd", 2, extra);
  autd3_link_option_t o = option("soem0");
  ASSERT_ERR(try_open(&o, 2), AUTD3_E_NOT_AUTD);
  ASSERT_CONTAINS(autd3_last_error(), "EL1004");
  /* auto-detection skips an adapter whose slaves are not all AUTD3 */
  o = option(NULL);
  ASSERT_ERR(try_open(&o, 2), AUTD3_E_NO_DEVICE);
  emu_stop();
}

/* OP is requested only after 200 paced warm-up cycles, so a 50 ms OP wait cannot succeed. */
TEST(emu_state_timeout) {
  need_soem();
  emu_start("emu_state_timeout", 1, NULL);
  autd3_link_option_t o = option("soem0");
  o.u.soem.ethercat.op_wait_timeout_ms = 50;
  ASSERT_ERR(try_open(&o, 1), AUTD3_E_STATE_TIMEOUT);
  ASSERT_CONTAINS(autd3_last_error(), "op_wait_timeout_ms");
  /* the failed open returned the device to INIT and released everything: a normal open works */
  o.u.soem.ethercat.op_wait_timeout_ms = 10000;
  ASSERT_OK(try_open(&o, 1));
  emu_stop();
}

/* Run cycles with a state check every 100 until `pred` holds for the status (bounded). */
static bool cycle_checking(autd3_link_t *link, int limit, bool (*pred)(const autd3_link_status_t *), autd3_link_status_t *st) {
  uint8_t tx[8 * AUTD3_TX_FRAME_BYTES] = {0}, rx[8 * AUTD3_RX_FRAME_BYTES];
  for (int c = 1; c <= limit; c++) {
    bool valid;
    ASSERT_OK(autd3_link_cycle(link, tx, rx, &valid));
    if (c % 100 == 0) {
      ASSERT_OK(autd3_link_check_state(link, st));
      if (pred(st)) return true;
    }
  }
  return false;
}
static bool all_op(const autd3_link_status_t *s) {
  for (int d = 0; d < s->num_devices; d++)
    if (s->state[d] != AUTD3_DEVICE_OP) return false;
  return true;
}
static bool not_all_op(const autd3_link_status_t *s) { return !all_op(s); }
static bool any_lost(const autd3_link_status_t *s) {
  for (int d = 0; d < s->num_devices; d++)
    if (s->state[d] == AUTD3_DEVICE_LOST) return true;
  return false;
}

/* Unplug the whole chain: lost cycles and LOST devices; re-plug: back to OP, one recovery. */
TEST(emu_unplug_replug) {
  need_soem();
  emu_start("emu_unplug_replug", 2, NULL);
  autd3_geometry_t *g;
  autd3_link_t *link = open_ok("soem0", 2, &g);
  autd3_link_status_t st;
  ASSERT_TRUE(cycle_checking(link, 1000, all_op, &st));
  emu_ok("unplug 0");
  ASSERT_TRUE(cycle_checking(link, 1000, any_lost, &st));
  autd3_link_stats_t s1;
  autd3_link_stats(link, &s1);
  ASSERT_GT(s1.lost_cycles, 0);
  emu_ok("replug");
  ASSERT_TRUE(cycle_checking(link, 5000, all_op, &st));
  ASSERT_GE(st.recoveries, 1);
  /* inputs are valid again */
  uint8_t tx[2 * AUTD3_TX_FRAME_BYTES];
  set_frame(tx, 2, 0, AUTD3_CMD_RESET);
  ASSERT_GT(cycle_until(link, tx, 0xFF, 0, 1000), 0);
  autd3_link_close(link);
  autd3_geometry_free(g);
  emu_stop();
}

/* Unplug the second device only: it is LOST, the first stays OP; cycles are stale, not lost. */
TEST(emu_unplug_second) {
  need_soem();
  emu_start("emu_unplug_second", 2, NULL);
  autd3_geometry_t *g;
  autd3_link_t *link = open_ok("soem0", 2, &g);
  autd3_link_status_t st;
  ASSERT_TRUE(cycle_checking(link, 1000, all_op, &st));
  autd3_link_stats_t s0, s1;
  autd3_link_stats(link, &s0);
  emu_ok("unplug 1");
  ASSERT_TRUE(cycle_checking(link, 1000, any_lost, &st));
  ASSERT_EQ(st.state[1], AUTD3_DEVICE_LOST);
  autd3_link_stats(link, &s1);
  ASSERT_GT(s1.stale_cycles, s0.stale_cycles);
  emu_ok("replug");
  ASSERT_TRUE(cycle_checking(link, 5000, all_op, &st));
  ASSERT_GE(st.recoveries, 1);
  autd3_link_close(link);
  autd3_geometry_free(g);
  emu_stop();
}

/* A device that power-cycles (back in INIT, no station address) is found,
 * reconfigured and brought back to OP by the state checker, with its DC clock
 * back on the common time base. `dev` 0 is the reference clock. */
static void power_cycle(const char *name, int dev) {
  need_soem();
  emu_start(name, 2, NULL);
  autd3_geometry_t *g;
  autd3_link_t *link = open_ok("soem0", 2, &g);
  autd3_link_status_t st;
  ASSERT_TRUE(cycle_checking(link, 1000, all_op, &st));
  char cmd[32];
  snprintf(cmd, sizeof cmd, "power-cycle %d", dev);
  emu_ok(cmd);
  ASSERT_TRUE(cycle_checking(link, 1000, not_all_op, &st));
  ASSERT_TRUE(cycle_checking(link, 10000, all_op, &st));
  ASSERT_GE(st.recoveries, 1);
  uint8_t tx[2 * AUTD3_TX_FRAME_BYTES];
  set_frame(tx, 2, 0, AUTD3_CMD_READ_CPU_FW_VERSION_MINOR);
  ASSERT_GT(cycle_until(link, tx, 0, 1, 1000), 0);
  /* The clocks agree again (a power-cycled device starts from an unrelated
   * time: device 1's difference to the reference would stay saturated at
   * ~2^31 ns). Some cycles first: the drift control removes the residual. */
  for (int c = 0; c < 300; c++) {
    bool v;
    uint8_t rx[4];
    ASSERT_OK(autd3_link_cycle(link, tx, rx, &v));
  }
  const char *r = emu_cmd("status");
  ASSERT_TRUE(r != NULL);
  const char *dev1 = strstr(r, "dev 1 ");
  ASSERT_TRUE(dev1 != NULL);
  const char *dc = strstr(dev1, "dcdiff ");
  ASSERT_TRUE(dc != NULL);
  long long diff = strtoll(dc + 7, NULL, 10);
  fprintf(stderr, "device 1 DC difference after recovery: %lld ns\n", diff);
  ASSERT_LT(llabs(diff), 1000000);
  autd3_link_close(link);
  autd3_geometry_free(g);
  emu_stop();
}

TEST(emu_power_cycle) { power_cycle("emu_power_cycle", 1); }
TEST(emu_power_cycle_reference) { power_cycle("emu_power_cycle_reference", 0); }

/* check_state may run on another thread while the bus thread cycles (link.h):
 * SOEM serialises the socket, the frames of both are matched by index. */
static _Atomic int checker_stop;
static void *checker(void *arg) {
  autd3_link_t *link = arg;
  int checks = 0;
  while (!atomic_load(&checker_stop)) {
    autd3_link_status_t st;
    ASSERT_OK(autd3_link_check_state(link, &st));
    for (int d = 0; d < st.num_devices; d++) ASSERT_EQ(st.state[d], AUTD3_DEVICE_OP);
    checks++;
    autd3__sleep_ns(5000000);
  }
  return (void *)(intptr_t)checks;
}

TEST(emu_check_state_concurrent) {
  need_soem();
  emu_start("emu_check_state_concurrent", 2, NULL);
  autd3_geometry_t *g;
  autd3_link_t *link = open_ok("soem0", 2, &g);
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, checker, link), 0);
  uint8_t tx[2 * AUTD3_TX_FRAME_BYTES];
  set_frame(tx, 2, 0, AUTD3_CMD_READ_CPU_FW_VERSION_MINOR);
  ASSERT_GT(cycle_until(link, tx, 0, 1, 1000), 0);
  int valid = 0;
  uint8_t rx[2 * AUTD3_RX_FRAME_BYTES];
  for (int c = 0; c < 1000; c++) {
    bool v;
    ASSERT_OK(autd3_link_cycle(link, tx, rx, &v));
    if (v) {
      valid++;
      ASSERT_EQ(rx[0], 0); /* the checker's frames never end up in the process data */
      ASSERT_EQ(rx[1], 1);
    }
  }
  atomic_store(&checker_stop, 1);
  void *checks;
  pthread_join(th, &checks);
  ASSERT_GT((intptr_t)checks, 0);
  ASSERT_GT(valid, 0);
  autd3_link_close(link);
  autd3_geometry_free(g);
  emu_stop();
}
