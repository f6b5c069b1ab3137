/* The SOEM link (src/link/soem): what only SOEM has. Registration, SOEM's
 * own bring-up errors (no emulator needed), and over the emulated chain
 * (tests/harness/emu_chain.h): the warm-up before OP, the whole chain
 * unplugged, DC re-alignment after a power-cycle, the state checker sharing
 * SOEM's socket. The scenarios every EtherCAT link shares (open, client,
 * auto interface, count mismatch, identity, partial unplug, power-cycle
 * evidence, capture, second master) run for SOEM in tests/ethercat as
 * soem.*. Every case SKIPs with the reason when the SOEM link is not built
 * (AUTD3_LINK_SOEM; needs an installed SOEM v2). */
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

#include "autd3/client.h" /* AUTD3_FW_SERIES_MINOR: the emulated CPU firmware minor version */
#include "autd3/link.h"
#include "harness/emu_chain.h"
#include "harness/emuctl.h"
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

/* ---- over the emulated chain (tests/harness/emu_chain.h) ---- */

/* This case inside the emulated chain with `devices` devices (SM watchdog
 * off unless `emu_args` asks for it, as in tests/ethercat). */
static void emu_start(const char *name, int devices, const char *emu_args) {
  need_soem();
  in_netns_kind(AUTD3_LINK_SOEM, name, devices, emu_args, false);
}

static const char *ifname(void) { return getenv("AUTD3_TEST_IFNAME"); }

/* One control command to the emulator; returns the reply line (static buffer), or NULL if unreachable. */
static const char *emu_cmd(const char *cmd) {
  static char reply[4096];
  return autd3_emuctl(cmd, reply, sizeof reply) < 0 ? NULL : reply;
}

static void emu_ok(const char *cmd) {
  char r[512];
  if (autd3_emuctl(cmd, r, sizeof r) != 0) TEST_FAIL_("autd3-emu '%s': %s", cmd, r);
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

/* The OP wait runs from the OP request and needs 5 good cycles paced at the
 * 1 ms SYNC0 period, so a 1 ms OP wait cannot succeed. */
TEST(emu_state_timeout) {
  emu_start("emu_state_timeout", 1, NULL);
  autd3_link_option_t o = option(ifname());
  o.u.soem.ethercat.op_wait_timeout_ms = 1;
  ASSERT_ERR(try_open(&o, 1), AUTD3_E_STATE_TIMEOUT);
  ASSERT_CONTAINS(autd3_last_error(), "devices not in OP with a stable working counter within op_wait_timeout_ms = 1");
  ASSERT_CONTAINS(autd3_last_error(), ifname());
  /* the failed open returned the device to INIT and released everything: a normal open works */
  o.u.soem.ethercat.op_wait_timeout_ms = 10000;
  ASSERT_OK(try_open(&o, 1));
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

/* Unplug the whole chain (tests/ethercat unplugs a later device): lost
 * cycles and LOST devices; re-plug: back to OP, one recovery. */
TEST(emu_unplug_replug) {
  emu_start("emu_unplug_replug", 2, "--sm-watchdog-ms 100");
  autd3_geometry_t *g;
  autd3_link_t *link = open_ok(ifname(), 2, &g);
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
}

/* A device that power-cycles (back in INIT, no station address) is found,
 * reconfigured and brought back to OP by the state checker, with its DC clock
 * back on the common time base. `dev` 0 is the reference clock. */
static void power_cycle(const char *name, int dev) {
  emu_start(name, 2, "--sm-watchdog-ms 100");
  autd3_geometry_t *g;
  autd3_link_t *link = open_ok(ifname(), 2, &g);
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
  ASSERT_GT(cycle_until(link, tx, 0, AUTD3_FW_SERIES_MINOR, 1000), 0);
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
}

TEST(emu_power_cycle) { power_cycle("emu_power_cycle", 1); }
TEST(emu_power_cycle_reference) { power_cycle("emu_power_cycle_reference", 0); }

/* check_state may run on another thread while the bus thread cycles (link.h):
 * SOEM serialises the socket, the frames of both are matched by index.
 * What a state check promises is asserted, not that every check sees OP: a
 * loaded host can stall the bus thread past the devices' SM watchdog (SAFE-OP
 * with the error flag, AL status code 0x001B), or the emulator past the
 * check's read timeout (then "no answer", LOST, is what the check saw), and
 * the checker's job is to report that and bring the devices back. What must
 * never happen: a reset reported for a device that was not reset (that would
 * make the client resend commands), or devices left out of OP. */
static _Atomic int checker_stop, checker_not_op, checker_lost;
static void *checker(void *arg) {
  autd3_link_t *link = arg;
  int checks = 0;
  while (!atomic_load(&checker_stop)) {
    autd3_link_status_t st;
    ASSERT_OK(autd3_link_check_state(link, &st));
    for (int d = 0; d < st.num_devices; d++) {
      if (st.state[d] != AUTD3_DEVICE_OP) atomic_fetch_add(&checker_not_op, 1);
      /* counted, not asserted: see above */
      if (st.state[d] == AUTD3_DEVICE_LOST || st.state[d] == AUTD3_DEVICE_OTHER) atomic_fetch_add(&checker_lost, 1);
    }
    checks++;
    autd3__sleep_ns(5000000);
  }
  return (void *)(intptr_t)checks;
}

TEST(emu_check_state_concurrent) {
  emu_start("emu_check_state_concurrent", 2, NULL);
  autd3_geometry_t *g;
  autd3_link_t *link = open_ok(ifname(), 2, &g);
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, checker, link), 0);
  uint8_t tx[2 * AUTD3_TX_FRAME_BYTES];
  set_frame(tx, 2, 0, AUTD3_CMD_READ_CPU_FW_VERSION_MINOR);
  int first = cycle_until(link, tx, 0, AUTD3_FW_SERIES_MINOR, 1000);
  ASSERT_GT(first, 0);
  int valid = 0;
  uint8_t rx[2 * AUTD3_RX_FRAME_BYTES];
  for (int c = 0; c < 1000; c++) {
    bool v;
    ASSERT_OK(autd3_link_cycle(link, tx, rx, &v));
    if (v) {
      valid++;
      ASSERT_EQ(rx[0], 0); /* the checker's frames never end up in the process data */
      ASSERT_EQ(rx[1], AUTD3_FW_SERIES_MINOR);
    }
  }
  atomic_store(&checker_stop, 1);
  void *checks;
  pthread_join(th, &checks);
  ASSERT_GT((intptr_t)checks, 0);
  ASSERT_GT(valid, 0);
  /* Whatever the checks saw, cycling and checking bring every device to OP
   * (bounded by iterations, not by time), and a check that saw a device out
   * of OP before that counts as a recovery. */
  autd3_link_status_t last = {0};
  bool all_op = false;
  for (int k = 0; k < 400 && !all_op; k++) {
    for (int c = 0; c < 10; c++) {
      bool v;
      ASSERT_OK(autd3_link_cycle(link, tx, rx, &v));
    }
    ASSERT_OK(autd3_link_check_state(link, &last));
    all_op = true;
    for (int d = 0; d < last.num_devices; d++) all_op &= last.state[d] == AUTD3_DEVICE_OP;
  }
  int not_op = atomic_load(&checker_not_op);
  printf("%d of %d checks saw a device out of OP; recoveries %llu\n", not_op, (int)(intptr_t)checks, (unsigned long long)last.recoveries);
  for (int d = 0; d < last.num_devices; d++) printf("device %d: state %u al 0x%02x\n", d, last.state[d], last.al_state[d]);
  if (!all_op) printf("emu status: %s\n", emu_cmd("status"));
  printf("%d device reports were LOST or another state (host stalls)\n", atomic_load(&checker_lost));
  ASSERT_TRUE(all_op);
  for (uint16_t d = 0; d < 2; d++) ASSERT_EQ(autd3_link_device_resets(link, d), 0u);
  if (not_op > 0) ASSERT_GT(last.recoveries, 0);
  autd3_link_close(link);
  autd3_geometry_free(g);
}
