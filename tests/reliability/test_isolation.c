/*
 * Per-device fault isolation (docs/reliability.md "A fault costs only its
 * device"): while device k of a chain is unplugged, power-cycled or silent,
 * every other device keeps streaming. Against autd3-emu in a private
 * namespace (autd3-netns), with the devices' own execution logs
 * (exactly_once.h) and output states (control socket `output K`).
 *
 * Each point: open a client, send a focus (so every device emits something a
 * Clear would wipe), note every device's output and reset count, stream
 * tagged XorHash frames and, while the stream runs (the sender never sleeps
 * for the fault), inject the fault on device k for `ms`:
 *   unplug       `unplug k` ... `replug`: devices k.. leave the line (the
 *                ones after k with it: a line's cable)
 *   power_cycle  the same, and device k reboots before it comes back
 *                (`power-cycle k` between; a device without power also
 *                takes the line after it down)
 *   silence      `mute k` ... `unmute k`: k alone answers nothing while the
 *                line through it stays intact
 * Then it asserts, first, that the fault happened (the link counted stale
 * cycles; a power-cycled device's reset reached the client), then for every
 * device the fault did not touch (0..k-1; after k too for silence): every
 * frame sent was executed by it exactly once and reported EXECUTED, it was
 * never reset (reset count unchanged, no Reset/SetMode/Clear/Synchronize in
 * its log) and it still emits what it emitted before.
 *
 * Built once per EtherCAT link (LINK_KIND; a link that is not built SKIPs by
 * name). The default points cover each fault once on 2 and once on 5 devices
 * for echocat, and one point per fault for the other links (the mechanism is
 * the client's and the shared one; what differs per link is how it tells
 * whose inputs came back). The full matrix (3 faults x 50 ms / 300 ms / 3 s x
 * 2 and 5 devices) runs with AUTD3_TEST_FULL=1 (label "slow"), two entries,
 * one namespace each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "autd3/autd3.h"
#include "harness/emu_chain.h"
#include "harness/emuctl.h"
#include "harness/test.h"
#include "reliability/exactly_once.h"

#ifndef LINK_KIND
#  define LINK_KIND AUTD3_LINK_ECHOCAT
#endif

typedef enum { F_UNPLUG, F_POWER_CYCLE, F_SILENCE } fault_kind_t;
static const char *const fault_name[] = {"unplug", "power_cycle", "silence"};

typedef struct {
  fault_kind_t kind;
  uint16_t k;   /* the faulty device */
  unsigned ms;  /* how long the fault lasts */
} point_t;

/* ---- the fixture ------------------------------------------------------------ */

static char g_reply[8192];

static void sleep_ms(unsigned ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void emuctl_or_fail(const char *cmd) {
  if (autd3_emuctl(cmd, g_reply, sizeof g_reply) != 0) TEST_FAIL_("emuctl '%s': %s", cmd, g_reply);
}

/* Device d's output state (`output d`), as the emulator prints it. */
static char *output_of(uint16_t d) {
  char cmd[32];
  snprintf(cmd, sizeof cmd, "output %u", (unsigned)d);
  emuctl_or_fail(cmd);
  char *s = strdup(g_reply);
  ASSERT_TRUE(s != NULL);
  return s;
}

/* The stream's fault: started before send `at`, ended once `ms` have passed
 * (checked before each send, so the sender keeps sending meanwhile). */
typedef struct {
  point_t p;
  size_t at;
  int phase; /* 0 before, 1 during, 2 after */
  uint64_t t_start;
} fault_ctx_t;

static void fault_step(void *vctx, size_t i, uint64_t elapsed_ns) {
  fault_ctx_t *f = vctx;
  char cmd[64];
  if (f->phase == 0 && i >= f->at) {
    snprintf(cmd, sizeof cmd, "%s %u", f->p.kind == F_SILENCE ? "mute" : "unplug", (unsigned)f->p.k);
    emuctl_or_fail(cmd);
    printf("at send %zu: %s -> %s\n", i, cmd, g_reply);
    f->phase = 1;
    f->t_start = elapsed_ns;
  } else if (f->phase == 1 && elapsed_ns - f->t_start >= (uint64_t)f->p.ms * 1000000u) {
    if (f->p.kind == F_POWER_CYCLE) {
      snprintf(cmd, sizeof cmd, "power-cycle %u", (unsigned)f->p.k);
      emuctl_or_fail(cmd);
    }
    if (f->p.kind == F_SILENCE) snprintf(cmd, sizeof cmd, "unmute %u", (unsigned)f->p.k);
    else snprintf(cmd, sizeof cmd, "replug");
    emuctl_or_fail(cmd);
    printf("at send %zu: %s after %u ms -> %s\n", i, cmd, f->p.ms, g_reply);
    f->phase = 2;
  }
}

/* The logs, drained through the control socket; on the way, every
 * re-establishing command a device executed is counted. */
static uint32_t g_reinit_cmds[AUTD3_MAX_DEVICES];

static size_t drain_counting(void *ctx, uint16_t dev, autd3_exec_entry_t *out, size_t cap, uint64_t *dropped) {
  size_t n = eo_drain_emuctl(ctx, dev, out, cap, dropped);
  if (n == (size_t)-1) return n;
  for (size_t i = 0; i < n; i++) {
    uint8_t c = out[i].cmd;
    if (c == AUTD3_CMD_RESET || c == AUTD3_CMD_SET_MODE || c == AUTD3_CMD_CLEAR || c == AUTD3_CMD_SYNCHRONIZE)
      g_reinit_cmds[dev]++;
  }
  return n;
}

/* Whether device d was touched by the fault: the faulty one, and for a cable
 * or power fault every device after it (the line ends at k-1). */
static bool touched(const point_t *p, uint16_t d) { return d == p->k || (p->kind != F_SILENCE && d > p->k); }

/* One point on an open chain of ndev devices ($AUTD3_TEST_IFNAME). */
static void run_point(const point_t *p, size_t ndev) {
  char name[96];
  snprintf(name, sizeof name, "%s_dev%u_of%zu_%ums", fault_name[p->kind], (unsigned)p->k, ndev, p->ms);
  printf("---- %s\n", name);
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(ndev, NULL, &g));
  autd3_link_option_t o = autd3_link_option_default(LINK_KIND);
  autd3_link_option_ethercat(&o)->interface = getenv("AUTD3_TEST_IFNAME");
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, NULL, &c));

  /* Something to lose: a focus on every device. */
  autd3_gain_t focus = autd3_gain_focus(180.0f, 60.0f, 120.0f);
  autd3_frame_buffer_t *buf = calloc(1, sizeof *buf);
  ASSERT_TRUE(buf != NULL);
  autd3_frame_t fr;
  ASSERT_OK(autd3_gain_frame(&focus, g, buf, &fr));
  ASSERT_OK(autd3_client_send_checked(c, &fr, NULL));
  free(buf);
  char *before[AUTD3_MAX_DEVICES];
  uint32_t resets[AUTD3_MAX_DEVICES];
  for (uint16_t d = 0; d < ndev; d++) {
    before[d] = output_of(d);
    ASSERT_CONTAINS(before[d], "error 0x00");
    resets[d] = autd3_client_device_resets(c, d);
    g_reinit_cmds[d] = 0;
  }
  for (uint16_t d = 0; d < ndev; d++) { /* what the open and the focus left in the logs */
    autd3_exec_entry_t e[512];
    uint64_t dropped;
    while (eo_drain_emuctl(NULL, d, e, 512, &dropped) > 0) {
    }
  }
  autd3_link_stats_t ls0;
  autd3_link_stats(autd3_client_link(c), &ls0);

  /* Stream: the fault starts at send 200 and the stream goes on ~1.5 s after it ends. */
  static fault_ctx_t fx;
  fx = (fault_ctx_t){.p = *p, .at = 200};
  eo_config_t cfg = {.duration_ns = (uint64_t)(p->ms + 2000) * 1000000u, .wait_ms = 20000, .drain = drain_counting,
                     .fault = fault_step, .fault_ctx = &fx, .name = name};
  static eo_result_t res;
  eo_run(c, &cfg, &res);
  ASSERT_EQ(fx.phase, 2);

  /* 1. The fault happened. */
  autd3_link_stats_t ls1;
  autd3_link_stats(autd3_client_link(c), &ls1);
  printf("%s: link stale cycles during the stream: %llu\n", name, (unsigned long long)(ls1.stale_cycles - ls0.stale_cycles));
  ASSERT_GT(ls1.stale_cycles - ls0.stale_cycles, 0);
  if (p->kind == F_POWER_CYCLE) {
    /* the state check (eo's checker, every 100 ms) finds the reboot; bounded */
    for (int i = 0; i < 500 && autd3_client_device_resets(c, p->k) == resets[p->k]; i++) sleep_ms(20);
    ASSERT_GT(autd3_client_device_resets(c, p->k), resets[p->k]);
  }

  /* 2. The others: not reset, still emitting what they emitted before. */
  for (uint16_t d = 0; d < ndev; d++) {
    if (touched(p, d)) continue;
    autd3_client_device_status_t st;
    ASSERT_OK(autd3_client_device_status(c, d, &st));
    if (st.resets != resets[d] || st.state != AUTD3_CLIENT_DEVICE_READY)
      TEST_FAIL_("%s: device %u (not faulty) was reset: resets %u -> %u, state %d", name, (unsigned)d, resets[d], st.resets,
                 (int)st.state);
    char *after = output_of(d);
    if (strcmp(after, before[d]) != 0)
      TEST_FAIL_("%s: device %u (not faulty) changed its output:\n before %.160s\n after  %.160s", name, (unsigned)d, before[d],
                 after);
    free(after);
  }
  autd3_client_close(c);
  autd3_geometry_free(g);
  eo_finish(&cfg, &res);
  eo_print(&cfg, &res);

  /* 3. The others executed every frame exactly once, reported EXECUTED, and no re-establishing command. */
  char why[256];
  if (!eo_ok(&res, why, sizeof why)) TEST_FAIL_("%s: %s", name, why);
  uint64_t sent = res.sent - res.send_errors;
  for (uint16_t d = 0; d < ndev; d++) {
    if (touched(p, d)) continue;
    const eo_dev_summary_t *s = &res.dev[d];
    if (s->reported_executed != sent || s->executed_log != sent || s->reported_not || s->reported_unknown)
      TEST_FAIL_("%s: device %u (not faulty): %llu sent, %llu executed (log), reported %llu executed / %llu not / %llu unknown",
                 name, (unsigned)d, (unsigned long long)sent, (unsigned long long)s->executed_log,
                 (unsigned long long)s->reported_executed, (unsigned long long)s->reported_not,
                 (unsigned long long)s->reported_unknown);
    if (g_reinit_cmds[d] != 0)
      TEST_FAIL_("%s: device %u (not faulty) executed %u Reset/SetMode/Clear/Synchronize frames", name, (unsigned)d,
                 g_reinit_cmds[d]);
  }
  for (uint16_t d = 0; d < ndev; d++) free(before[d]);
  printf("%s: ok (%llu frames; device %u: %llu executed, %llu not, %llu unknown)\n", name, (unsigned long long)sent,
         (unsigned)p->k, (unsigned long long)res.dev[p->k].reported_executed, (unsigned long long)res.dev[p->k].reported_not,
         (unsigned long long)res.dev[p->k].reported_unknown);
}

/* A point in its own namespace with ndev devices; `all_links` false: echocat
 * only (the other links run the points marked true by default). */
static void isolation_case(const char *test, bool all_links, size_t ndev, fault_kind_t kind, uint16_t k, unsigned ms) {
  if (!all_links && LINK_KIND != AUTD3_LINK_ECHOCAT)
    SKIP("%s: this point runs for echocat by default; the full matrix for every link with AUTD3_TEST_FULL=1", test);
  in_netns(test, (int)ndev, NULL, false);
  point_t p = {kind, k, ms};
  run_point(&p, ndev);
}

/* ---- the default points: each fault on 2 and on 5 devices ------------------- */

/* The reported case: the tail of two devices unplugged for 300 ms. */
TEST(unplug_2_300ms) { isolation_case("unplug_2_300ms", true, 2, F_UNPLUG, 1, 300); }
TEST(power_cycle_2_50ms) { isolation_case("power_cycle_2_50ms", false, 2, F_POWER_CYCLE, 1, 50); }
TEST(silence_2_3s) { isolation_case("silence_2_3s", false, 2, F_SILENCE, 1, 3000); }
TEST(unplug_5_3s) { isolation_case("unplug_5_3s", false, 5, F_UNPLUG, 3, 3000); }
TEST(power_cycle_5_300ms) { isolation_case("power_cycle_5_300ms", true, 5, F_POWER_CYCLE, 2, 300); }
/* A device in the middle: the ones after it still answer. */
TEST(silence_5_300ms) { isolation_case("silence_5_300ms", true, 5, F_SILENCE, 2, 300); }

/* ---- the full matrix (AUTD3_TEST_FULL=1) ------------------------------------ */

static void full_matrix(const char *test, size_t ndev, uint16_t k) {
  if (!getenv("AUTD3_TEST_FULL")) SKIP("the full isolation matrix runs with AUTD3_TEST_FULL=1 (9 points, about a minute)");
  in_netns(test, (int)ndev, NULL, false);
  static const unsigned durations[] = {50, 300, 3000};
  int failed = 0;
  for (int f = 0; f < 3; f++)
    for (int t = 0; t < 3; t++) {
      /* Each point in a child of its own: the exactly-once harness keeps its
       * records per process (request ids restart at 0 with every run). */
      fflush(NULL);
      pid_t pid = fork();
      ASSERT_TRUE(pid >= 0);
      if (pid == 0) {
        point_t p = {(fault_kind_t)f, k, durations[t]};
        run_point(&p, ndev);
        fflush(NULL);
        _exit(0);
      }
      int st = 0;
      waitpid(pid, &st, 0);
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed++;
      sleep_ms(500); /* the chain settles (the state check of the next client finds it in OP) */
    }
  if (failed) TEST_FAIL_("%d of 9 points failed (above)", failed);
}

TEST(full_matrix_2) { full_matrix("full_matrix_2", 2, 1); }
TEST(full_matrix_5) { full_matrix("full_matrix_5", 5, 2); }
