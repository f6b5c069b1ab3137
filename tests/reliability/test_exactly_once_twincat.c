/*
 * Exactly-once over the TwinCAT link against the emulated TwinCAT runtime
 * (src/emulation/twincat, in-process on loopback), proven with the runtime's
 * device execution logs (autd3_tcemu_log_drain). Faults: dropped TCP connections
 * and a device reporting SAFE-OP+ERROR in its state word for a while.
 * power_cycle: each device's firmware reboots once (autd3_tcemu_power_cycle).
 * A fault case first asserts that its faults happened (reconnections the
 * runtime accepted, the state the link reported, the device resets the client
 * saw and the reboots in the devices' logs), then exactness.
 * log_file_tool: the autd3-twincat-emu tool's --log-file has every execution.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "autd3/autd3.h"
#include "harness/test.h"
#include "reliability/exactly_once.h"
#include "emulation/twincat/twincat_emu.h"

static void *emu_thread(void *arg) {
  autd3_tcemu_run(arg);
  return NULL;
}

static size_t drain_tcemu(void *emu, uint16_t dev, autd3_exec_entry_t *out, size_t cap, uint64_t *dropped) {
  return autd3_tcemu_log_drain(emu, dev, out, cap, dropped);
}

/* What a fault schedule reaches, and the evidence that its faults happened. */
typedef struct {
  autd3_tcemu_t *emu;
  autd3_link_t *link;            /* the client's link: the state-word fault's checks (the run's only checker) */
  uint64_t accepted_at_open;     /* connections the runtime had accepted when the stream started */
  uint64_t accepted_at_end;
  bool state_seen, op_again;     /* the link saw device 1 in SAFE-OP+ERROR, then in OP again */
} tc_fault_ctx_t;

/* Check the link's states until device dev is in `want` (bounded: 5 s). */
static bool wait_state(autd3_link_t *link, uint16_t dev, autd3_device_state_t want) {
  for (int i = 0; i < 1000; i++) {
    autd3_link_status_t st;
    if (autd3_link_check_state(link, &st) == AUTD3_OK && st.state[dev] == want) return true;
    struct timespec ts = {0, 5000000L};
    nanosleep(&ts, NULL);
  }
  return false;
}

/* Two dropped connections; device 1 reports SAFE-OP+ERROR from send 800 until send 900, held until the link has
 * seen it, and OP again afterwards. */
static void schedule(void *vctx, size_t i, uint64_t elapsed_ns) {
  (void)elapsed_ns;
  tc_fault_ctx_t *x = vctx;
  if (i == 300 || i == 1300) autd3_tcemu_drop_connections(x->emu);
  if (i == 800) {
    autd3_tcemu_set_state_word(x->emu, 1, 0x0014); /* SAFE-OP + error */
    x->state_seen = wait_state(x->link, 1, AUTD3_DEVICE_SAFE_OP_ERROR);
  }
  if (i == 900) {
    autd3_tcemu_set_state_word(x->emu, 1, 0x0008);
    x->op_again = wait_state(x->link, 1, AUTD3_DEVICE_OP);
  }
}

/* Device 1, then device 0, reboots behind a running TwinCAT task. */
static void power_cycles(void *vctx, size_t i, uint64_t elapsed_ns) {
  (void)elapsed_ns;
  tc_fault_ctx_t *x = vctx;
  if (i == 300) autd3_tcemu_power_cycle(x->emu, 1);
  if (i == 1300) autd3_tcemu_power_cycle(x->emu, 0);
}

/* `requests` tagged frames through a TwinCAT client against the emulated runtime (2 devices) while `faults` runs;
 * `own_checks`: no state-checker thread (the schedule checks the states itself). Exactness is left to the caller,
 * which first asserts its evidence (fx). */
static void twincat_case(const char *name, size_t requests, eo_fault_fn faults, bool own_checks, tc_fault_ctx_t *fx,
                         eo_result_t *res) {
  autd3_tcemu_config_t tc = autd3_tcemu_config_default();
  tc.devices = 2;
  tc.listen_port = 0; /* any free port */
  autd3_tcemu_t *emu;
  ASSERT_OK(autd3_tcemu_create(&tc, &emu));
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, emu_thread, emu), 0);
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, NULL, &g));
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_TWINCAT);
  o.u.twincat.server_ip = "127.0.0.1";
  o.u.twincat.server_port = autd3_tcemu_port(emu);
  o.u.twincat.server_ams_net_id = "127.0.0.1.1.1";
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, NULL, &c));
  autd3_tcemu_conn_stats_t cs;
  autd3_tcemu_conn_stats(emu, &cs);
  *fx = (tc_fault_ctx_t){.emu = emu, .link = autd3_client_link(c), .accepted_at_open = cs.accepted};
  eo_config_t cfg = {.requests = requests, .wait_ms = 20000, .drain = drain_tcemu, .drain_ctx = emu,
                     .fault = faults, .fault_ctx = fx, .name = name, .no_state_check = own_checks};
  eo_run(c, &cfg, res);
  ASSERT_CLOSE_OK(c);
  autd3_tcemu_conn_stats(emu, &cs);
  fx->accepted_at_end = cs.accepted;
  eo_finish(&cfg, res);
  eo_print(&cfg, res);
  autd3_tcemu_stop(emu);
  pthread_join(th, NULL);
  autd3_tcemu_free(emu);
  autd3_geometry_free(g);
}

/* Exactly once, per device: asserted after the case's evidence that its faults happened. */
static void assert_exact(const char *name, const eo_result_t *res) {
  char why[256];
  if (!eo_ok(res, why, sizeof why)) TEST_FAIL_("%s: %s", name, why);
}

TEST(no_faults) {
  static eo_result_t res;
  tc_fault_ctx_t fx;
  twincat_case("twincat_no_faults", 1000, NULL, false, &fx, &res);
  assert_exact("twincat_no_faults", &res);
}

/* Each drop costs the link its connection: the runtime accepts a new one (the link reconnects), and the state word
 * is seen by the link's state check. */
TEST(connection_drops_and_state) {
  static eo_result_t res;
  tc_fault_ctx_t fx;
  twincat_case("twincat_faults", 2000, schedule, true, &fx, &res);
  uint64_t reconnected = fx.accepted_at_end - fx.accepted_at_open;
  printf("evidence: connections accepted after the open %llu, state word seen %d, OP again %d\n",
         (unsigned long long)reconnected, fx.state_seen, fx.op_again);
  if (reconnected < 2) TEST_FAIL_("%llu reconnections, expected one per dropped connection (2)", (unsigned long long)reconnected);
  if (!fx.state_seen) TEST_FAIL_("the link never reported device 1 in SAFE-OP+ERROR");
  if (!fx.op_again) TEST_FAIL_("the link never reported device 1 back in OP");
  assert_exact("twincat_faults", &res);
}

/* Each device's reboot is seen by the client (a device reset) and by the device's own log (a new boot). */
TEST(power_cycle) {
  static eo_result_t res;
  tc_fault_ctx_t fx;
  twincat_case("twincat_power_cycle", 2000, power_cycles, false, &fx, &res);
  for (size_t d = 0; d < 2; d++) {
    if (res.dev_resets[d] == 0) TEST_FAIL_("device %zu: the client saw no device reset", d);
    if (res.dev[d].boots == 0) TEST_FAIL_("device %zu: its log shows no reboot", d);
  }
  assert_exact("twincat_power_cycle", &res);
}

/* The tool (a separate process): its --log-file lists every executed tagged
 * frame once per device, and the per-device "dropped" lines at exit. */
static size_t no_drain(void *ctx, uint16_t dev, autd3_exec_entry_t *out, size_t cap, uint64_t *dropped) {
  (void)ctx, (void)dev, (void)out, (void)cap;
  *dropped = 0;
  return 0;
}

TEST(log_file_tool) {
  const char *tool = AUTD3_BINARY_DIR "/tools/twincat-emu/autd3-twincat-emu";
  if (access(tool, X_OK) != 0) SKIP("%s is not built", tool);
  char path[] = "/tmp/autd3-tclog-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_TRUE(fd >= 0);
  close(fd);
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failing assertion in the parent must not leave the tool running */
    dup2(out[1], 1);
    close(out[0]);
    execl(tool, tool, "--devices", "2", "--listen", "127.0.0.1:0", "--log-file", path, (char *)NULL);
    _exit(126);
  }
  close(out[1]);
  FILE *so = fdopen(out[0], "r");
  unsigned port = 0;
  ASSERT_EQ(fscanf(so, "port %u", &port), 1); /* the tool prints its port first */
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, NULL, &g));
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_TWINCAT);
  o.u.twincat.server_ip = "127.0.0.1";
  o.u.twincat.server_port = (uint16_t)port;
  o.u.twincat.server_ams_net_id = "127.0.0.1.1.1";
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, NULL, &c));
  eo_config_t cfg = {.requests = 300, .drain = no_drain, .name = "twincat_log_file"};
  eo_result_t res;
  eo_run(c, &cfg, &res);
  ASSERT_CLOSE_OK(c);
  autd3_geometry_free(g);
  eo_finish(&cfg, &res);
  ASSERT_EQ(res.completed_ok, 300);
  kill(pid, SIGTERM);
  int st = 0;
  waitpid(pid, &st, 0);
  fclose(so);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  FILE *f = fopen(path, "r");
  ASSERT_TRUE(f != NULL);
  static uint8_t seen[2][300];
  unsigned dropped_lines = 0, k, idx, boot, seq, cmd, r, tag;
  unsigned long long d;
  char line[256];
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "dropped %u %llu", &k, &d) == 2) {
      ASSERT_EQ(d, 0);
      dropped_lines++;
    } else {
      ASSERT_EQ(sscanf(line, "%u %u %u %x %x %x %x", &k, &idx, &boot, &seq, &cmd, &r, &tag), 7);
      ASSERT_LT(k, 2);
      if (cmd == AUTD3_CMD_XOR_HASH && (tag & 0xFF000000u) == EO_ID_MARK) {
        ASSERT_LT(tag & EO_MAX_REQUESTS, 300);
        ASSERT_EQ(r, 0);
        seen[k][tag & EO_MAX_REQUESTS]++;
      }
    }
  }
  fclose(f);
  unlink(path);
  ASSERT_EQ(dropped_lines, 2);
  for (int dv = 0; dv < 2; dv++)
    for (int i = 0; i < 300; i++)
      if (seen[dv][i] != 1) TEST_FAIL_("device %d: id %d executed %u times in the log file", dv, i, seen[dv][i]);
}
