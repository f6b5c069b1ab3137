/*
 * Exactly-once over the TwinCAT link against the emulated TwinCAT runtime
 * (tools/twincat-emu, in-process on loopback), proven with the runtime's
 * device execution logs (autd3_tcemu_log_drain). Faults: dropped TCP connections
 * and a device reporting SAFE-OP+ERROR in its state word for a while.
 * power_cycle: each device's firmware reboots once (autd3_tcemu_power_cycle).
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

static void schedule(void *vemu, size_t i, uint64_t elapsed_ns) {
  (void)elapsed_ns;
  autd3_tcemu_t *emu = vemu;
  if (i == 300 || i == 1300) autd3_tcemu_drop_connections(emu);
  if (i == 800) autd3_tcemu_set_state_word(emu, 1, 0x0014); /* SAFE-OP + error */
  if (i == 900) autd3_tcemu_set_state_word(emu, 1, 0x0008);
}

static void twincat_case(const char *name, size_t requests, eo_fault_fn faults) {
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
  eo_config_t cfg = {.requests = requests, .wait_ms = 20000, .drain = drain_tcemu, .drain_ctx = emu,
                     .fault = faults, .fault_ctx = emu, .name = name};
  eo_result_t res;
  eo_run(c, &cfg, &res);
  ASSERT_CLOSE_OK(c);
  eo_finish(&cfg, &res);
  eo_print(&cfg, &res);
  autd3_tcemu_stop(emu);
  pthread_join(th, NULL);
  autd3_tcemu_free(emu);
  autd3_geometry_free(g);
  char why[256];
  if (!eo_ok(&res, why, sizeof why)) TEST_FAIL_("%s: %s", name, why);
}

static void power_cycles(void *vemu, size_t i, uint64_t elapsed_ns) {
  (void)elapsed_ns;
  if (i == 300) autd3_tcemu_power_cycle(vemu, 1);
  if (i == 1300) autd3_tcemu_power_cycle(vemu, 0);
}

TEST(no_faults) { twincat_case("twincat_no_faults", 1000, NULL); }
TEST(connection_drops_and_state) { twincat_case("twincat_faults", 2000, schedule); }
/* Device 1, then device 0, reboots behind a running TwinCAT task. */
TEST(power_cycle) { twincat_case("twincat_power_cycle", 2000, power_cycles); }

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
