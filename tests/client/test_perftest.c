/*
 * autd3-perftest: its statistics (nearest rank, integer mean, duration
 * formatting, byte/sec = successes × 626 / elapsed) on known samples, and one
 * short end-to-end run over the emulator whose stdout must have the
 * reference's summary layout line for line. No timing is asserted.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../tools/perftest/perftest.h"
#include "harness/test.h"

TEST(stats_nearest_rank) {
  pt_sample_t s[101];
  for (int i = 0; i < 100; i++) s[i] = (pt_sample_t){.index = (uint64_t)i, .rtt_ns = (uint64_t)(100 - i) * 1000, .status = PT_OK};
  s[100] = (pt_sample_t){.index = 100, .rtt_ns = 1, .status = PT_DEVICE, .code = 3}; /* not in latency */
  pt_summary_t sum;
  pt_summarize(s, 101, 2000000000ull, 5, 1, &sum);
  ASSERT_EQ(sum.success, 100);
  ASSERT_EQ(sum.device_errors, 1);
  ASSERT_EQ(sum.device_error_counts[3], 1);
  ASSERT_EQ(sum.latency.min, 1000);
  ASSERT_EQ(sum.latency.max, 100000);
  ASSERT_EQ(sum.latency.p50, 50000); /* index ceil(50*100/100)-1 = 49 → 50 µs */
  ASSERT_EQ(sum.latency.p95, 95000);
  ASSERT_EQ(sum.latency.p99, 99000);
  ASSERT_EQ(sum.latency.mean, 50500);
  ASSERT_TRUE(sum.cmd_per_sec > 49.99 && sum.cmd_per_sec < 50.01);      /* 100 / 2 s */
  ASSERT_TRUE(sum.byte_per_sec > 31299.9 && sum.byte_per_sec < 31300.1); /* 100 × 626 / 2 s */
  ASSERT_EQ(sum.stale_cycles, 5);
  ASSERT_EQ(sum.lost_cycles, 1);

  pt_sample_t one = {.rtt_ns = 7, .status = PT_OK};
  pt_summarize(&one, 1, 1, 0, 0, &sum);
  ASSERT_EQ(sum.latency.p50, 7);
  ASSERT_EQ(sum.latency.p99, 7);
  pt_summarize(NULL, 0, 0, 0, 0, &sum);
  ASSERT_EQ(sum.success, 0);
  ASSERT_EQ(sum.latency.max, 0);
}

TEST(format_duration) {
  char b[32];
  pt_format_duration(999, b, sizeof b);
  ASSERT_STREQ(b, "999 ns");
  pt_format_duration(1000, b, sizeof b);
  ASSERT_STREQ(b, "1.000 us");
  pt_format_duration(4999123, b, sizeof b);
  ASSERT_STREQ(b, "4.999 ms");
  pt_format_duration(101236000000ull, b, sizeof b);
  ASSERT_STREQ(b, "101.236 s");
}

/* The built tool, or the case is skipped. */
static const char *perftest_exe(void) {
  const char *exe = AUTD3_BINARY_DIR "/tools/perftest/autd3-perftest";
  if (access(exe, X_OK) != 0) SKIP("%s not built (AUTD3_BUILD_TOOLS=OFF)", exe);
  return exe;
}

TEST(summary_layout_end_to_end) {
  const char *exe = perftest_exe();
  char csv[128], cmd[512];
  snprintf(csv, sizeof csv, "/tmp/autd3-perftest-%d.csv", (int)getpid());
  snprintf(cmd, sizeof cmd, "%s --devices 2 --count 30 --mode streaming --inflight 8 --cycle-us 500 --csv %s 2>/dev/null", exe, csv);
  FILE *p = popen(cmd, "r");
  ASSERT_TRUE(p != NULL);
  /* The reference's print_summary() labels, in order (report.rs). */
  static const char *want[] = {"=== perftest summary ===", "elapsed         : ", "total sends     : 30", "  success       : 30",
                               "  timeouts      : 0", "  link errors   : 0", "  device errors : 0", "  stale cycles  : ",
                               "  lost cycles   : ", "", "throughput      :", "  cmd / sec     : ", "  byte / sec    : ", "",
                               "latency (successful samples):", "  mean          : ", "  p50           : ", "  p95           : ",
                               "  p99           : ", "  min           : ", "  max           : "};
  char line[256];
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    ASSERT_TRUE(fgets(line, sizeof line, p) != NULL);
    line[strcspn(line, "\n")] = 0;
    if (strncmp(line, want[i], strlen(want[i])) != 0) TEST_FAIL_("line %zu: \"%s\" does not start with \"%s\"", i, line, want[i]);
    if (want[i][0] == 0) ASSERT_STREQ(line, "");
  }
  int extra = 0;
  while (fgets(line, sizeof line, p)) extra += strstr(line, "latency in cycles") != NULL || strstr(line, "% of one core") != NULL;
  ASSERT_EQ(pclose(p), 0);
  ASSERT_EQ(extra, 2);
  FILE *f = fopen(csv, "r");
  ASSERT_TRUE(f != NULL);
  int rows = 0;
  ASSERT_TRUE(fgets(line, sizeof line, f) != NULL);
  ASSERT_STREQ(line, "index,rtt_ns,status\n");
  while (fgets(line, sizeof line, f)) {
    ASSERT_CONTAINS(line, ",ok");
    rows++;
  }
  fclose(f);
  unlink(csv);
  ASSERT_EQ(rows, 30);
}

/* Any send that ends in a link error (here: a device power-cycled mid-run,
 * whose in-flight frames end DEVICE_RESET / OUTCOME_UNKNOWN) → exit status 3. */
TEST(link_errors_exit_nonzero) {
  const char *exe = perftest_exe();
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s --devices 2 --count 200 --mode streaming --inflight 16 --cycle-us 500 --emu-power-cycle 50 "
           ">/dev/null 2>&1", exe);
  int st = system(cmd);
  ASSERT_TRUE(WIFEXITED(st));
  ASSERT_EQ(WEXITSTATUS(st), 3);
  /* The same run without the fault exits 0. */
  snprintf(cmd, sizeof cmd, "%s --devices 2 --count 200 --mode streaming --inflight 16 --cycle-us 500 >/dev/null 2>&1", exe);
  st = system(cmd);
  ASSERT_TRUE(WIFEXITED(st));
  ASSERT_EQ(WEXITSTATUS(st), 0);
}

TEST(rejects_bad_arguments) {
  const char *exe = perftest_exe();
  static const char *bad[] = {
      "",                                           /* neither --count nor --duration */
      "--count 5 --duration 1s",                    /* both */
      "--count 5 --mode streaming --inflight 128",  /* window */
      "--count 5 --link nosuch",                    /* unknown link */
      "--count 5 --interface eth0",                 /* EtherCAT option on the emulator */
      "--count 5 --link remote --timing ideal",     /* emulator option on remote */
      "--count 5 --data-len 621",                   /* XorHash max */
      "--count 5 --link remote --emu-power-cycle 2", /* emulator-only fault */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s %s >/dev/null 2>&1", exe, bad[i]);
    int st = system(cmd);
    if (st == 0) TEST_FAIL_("autd3-perftest %s: accepted", bad[i]);
  }
}

/* The whole of a small file into buf (NUL-terminated), then the file removed. */
static void slurp(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  ASSERT_TRUE(f != NULL);
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = 0;
  fclose(f);
  unlink(path);
}

/* The link block of the report: "not measured" where the link's bits say so, numbers where they are set, one
 * row per device with its state and counters. */
TEST(link_block_says_not_measured) {
  autd3_link_stats_t ls = {.cycles = 10, .stale_cycles = 2, .measured = AUTD3_LINK_MEASURES_STALE | AUTD3_LINK_MEASURES_EXCHANGE,
                           .exchanges = 4, .exchange_ns_total = 4000, .worst_exchange_ns = 2500};
  autd3_link_status_t st = {.num_devices = 2, .state = {AUTD3_DEVICE_OP, AUTD3_DEVICE_LOST}, .recoveries = 1,
                            .measured = AUTD3_LINK_STATUS_STATES | AUTD3_LINK_STATUS_RECOVERIES |
                                        AUTD3_LINK_STATUS_DEVICE_RECOVERIES,
                            .device_recoveries = {0, 3}};
  pt_context_t ctx = {.link = "test", .devices = 2, .link_stats = &ls, .checks = 5, .checks_not_all_op = 1, .status = &st};
  char buf[4096] = {0};
  FILE *f = fmemopen(buf, sizeof buf - 1, "w");
  ASSERT_TRUE(f != NULL);
  pt_print_link(f, &ctx);
  fclose(f);
  ASSERT_CONTAINS(buf, "lost cycles      : not measured");
  ASSERT_CONTAINS(buf, "phase excursions : not measured");
  ASSERT_CONTAINS(buf, "exchanges        : 4 (mean 1.0 us, worst 2.5 us)");
  ASSERT_CONTAINS(buf, "state checks    : 5 (1 with a device not in OP), recoveries 1");
  ASSERT_CONTAINS(buf, "LOST");
  char json[] = "/tmp/autd3-perftest-linkXXXXXX";
  int fd = mkstemp(json);
  ASSERT_TRUE(fd >= 0);
  close(fd);
  pt_summary_t sum;
  pt_summarize(NULL, 0, 1, 2, 0, &sum);
  ASSERT_EQ(pt_write_json(json, &sum, &ctx), 0);
  slurp(json, buf, sizeof buf);
  ASSERT_CONTAINS(buf, "\"lost_cycles\":null,\"phase_excursions\":null");
  ASSERT_CONTAINS(buf, "\"exchanges\":4,\"mean_exchange_ns\":1000,\"worst_exchange_ns\":2500");
  ASSERT_CONTAINS(buf, "\"state_checks\": {\"checks\": 5, \"not_all_op\": 1, \"recoveries\": 1}");
  ASSERT_CONTAINS(buf, "{\"position\": 1, \"state\": \"LOST\", \"al_state\": 0, \"recoveries\": 3, \"link\": null}");
}

/* An end-to-end run's JSON carries the emulator link's statistics: exchanges timed, phase not measured. */
TEST(json_has_link_statistics) {
  const char *exe = perftest_exe();
  char json[128], cmd[512];
  snprintf(json, sizeof json, "/tmp/autd3-perftest-%d.json", (int)getpid());
  snprintf(cmd, sizeof cmd, "%s --devices 2 --count 20 --cycle-us 500 --json %s >/dev/null 2>&1", exe, json);
  ASSERT_EQ(system(cmd), 0);
  static char buf[8192];
  slurp(json, buf, sizeof buf);
  ASSERT_CONTAINS(buf, "\"link_stats\": {\"cycles\":");
  ASSERT_CONTAINS(buf, "\"lost_cycles\":0,\"phase_excursions\":null");
  ASSERT_TRUE(strstr(buf, "\"exchanges\":null") == NULL);
  ASSERT_CONTAINS(buf, "{\"position\": 1, \"state\": \"OP\"");
}
