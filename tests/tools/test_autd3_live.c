/*
 * The `autd3` subcommands that run a bus (tools/autd3, docs/tools.md): watch over echocat through a power cycle,
 * under tmux, through autd3-remote-server and over TwinCAT against autd3-twincat-emu; synctune over a chain whose
 * replies come late, and with the reference's flags, --csv and --capture. The chain: autd3-emu on a veth pair in a
 * private network namespace (tests/harness/emu_chain.h), faults over its control socket. No timing is asserted.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_harness.h"
#include "harness/emu_chain.h"
#include "harness/emuctl.h"
#include "harness/test.h"

/* device `pos`'s integer `key` in one `watch --json` line, -1 if absent. */
static long long wfield(const char *line, int pos, const char *key) { return jfield(line, pos, -1, key); }

TEST(watch_json_shows_a_power_cycled_device_and_spares_its_neighbour) {
  autd3_test_in_emu_chain("watch_json_shows_a_power_cycled_device_and_spares_its_neighbour", 2, "", false);
  if (access(CLI, X_OK) != 0)
    SKIP("%s is not built", CLI);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' watch --interface '%s' --devices 2 --interval-ms 100 --count 40 --json", CLI,
           getenv("AUTD3_TEST_IFNAME"));
  FILE *p = popen(cmd, "r");
  ASSERT_TRUE(p != NULL);
  static char line[8192], last[8192];
  int lines = 0;
  char r[4096];
  while (fgets(line, sizeof line, p)) {
    lines++;
    if (lines == 1) { /* the client is open: both devices in OP, nothing reset */
      ASSERT_CONTAINS(line, "\"link\":\"echocat\"");
      ASSERT_EQ(wfield(line, 0, "resets"), 0);
      ASSERT_EQ(wfield(line, 1, "resets"), 0);
    }
    if (lines == 2)
      ctl("errors 0 crc 1 5", r, sizeof r);
    if (lines == 3)
      ctl("power-cycle 1", r, sizeof r);
    snprintf(last, sizeof last, "%s", line);
  }
  int st = pclose(p);
  ASSERT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : 128, 0);
  ASSERT_EQ(lines, 40);
  fprintf(stderr, "last: %s", last);
  /* the fault happened and the view shows it: device 1 rebooted, was re-established, is back in OP */
  ASSERT_GE(wfield(last, 1, "resets"), 1);
  ASSERT_EQ(wfield(last, 1, "reinits"), wfield(last, 1, "resets"));
  ASSERT_CONTAINS(last, "\"device_resets\":1");
  /* and its neighbour lost nothing */
  ASSERT_EQ(wfield(last, 0, "resets"), 0);
  ASSERT_TRUE(strstr(last, "{\"position\":0,\"state\":\"OP\"") != NULL);
  /* per device: the frames it executed, its ESC counters as injected (read from the device), its DC deviation */
  ASSERT_GT(wfield(last, 0, "executed"), 0);
  ASSERT_CONTAINS(last, "\"crc_errors\":[0,5,0,0]");
  ASSERT_TRUE(strstr(last, "\"dc_deviation_ns\":null") == NULL);
  ASSERT_GE(wfield(last, 1, "recoveries"), 1); /* device 1 was seen out of OP and back */
  ASSERT_CONTAINS(last, "\"phase_excursions\":");
  ASSERT_TRUE(strstr(last, "\"phase_excursions\":null") == NULL);
}

/* The terminal view under tmux: redrawn in place (one header on the screen
 * after many refreshes), the states readable, Ctrl-C ends it with exit 0. */
static int tmux(const char *args, char *out, size_t cap) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "tmux -L autd3-watch-test %s", args);
  FILE *p = popen(cmd, "r");
  if (!p)
    return -1;
  size_t n = out ? fread(out, 1, cap - 1, p) : 0;
  if (out)
    out[n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int count_of(const char *s, const char *needle) {
  int n = 0;
  for (const char *q = strstr(s, needle); q; q = strstr(q + 1, needle))
    n++;
  return n;
}

TEST(watch_redraws_in_place_under_tmux) {
  if (system("command -v tmux >/dev/null 2>&1") != 0)
    SKIP("tmux is not installed");
  autd3_test_in_emu_chain("watch_redraws_in_place_under_tmux", 2, "", false);
  if (access(CLI, X_OK) != 0)
    SKIP("%s is not built", CLI);
  char cmd[1536], screen[16384];
  snprintf(cmd, sizeof cmd,
           "new-session -d -s w -x 120 -y 30 \"'%s' watch --interface '%s' --devices 2 --interval-ms 50; "
           "echo WATCH-EXIT=\\$?; sleep 30\"",
           CLI, getenv("AUTD3_TEST_IFNAME"));
  ASSERT_EQ(tmux(cmd, NULL, 0), 0);
  /* wait (bounded) until at least the tenth refresh is on the screen */
  bool seen = false;
  for (int i = 0; i < 200 && !seen; i++) {
    usleep(50000);
    tmux("capture-pane -p -t w", screen, sizeof screen);
    const char *t = strstr(screen, "device(s), ");
    seen = t && strtod(t + 11, NULL) >= 0.5 && count_of(screen, "1    OP") == 1;
  }
  fprintf(stderr, "screen:\n%s\n", screen);
  ASSERT_TRUE(seen);
  ASSERT_EQ(count_of(screen, "dev  state"), 1); /* redrawn, not appended */
  ASSERT_CONTAINS(screen, "0    OP");
  tmux("send-keys -t w C-c", NULL, 0);
  bool exited = false;
  for (int i = 0; i < 200 && !exited; i++) {
    usleep(50000);
    tmux("capture-pane -p -t w", screen, sizeof screen);
    exited = strstr(screen, "WATCH-EXIT=") != NULL;
  }
  tmux("kill-server", NULL, 0);
  ASSERT_TRUE(exited);
  ASSERT_CONTAINS(screen, "WATCH-EXIT=0");
}

/* The integer after "key": in the `synctune --json` settings object ranked `rank`; -1 if absent. */
static long long sfield(const char *json, int rank, const char *key) {
  char tag[64];
  snprintf(tag, sizeof tag, "{\"rank\":%d,", rank);
  const char *d = strstr(json, tag);
  if (!d)
    return -1;
  const char *end = strchr(d, '}');
  snprintf(tag, sizeof tag, "\"%s\":", key);
  const char *k = strstr(d, tag);
  if (!k || k > end)
    return -1;
  if (k[strlen(tag)] == 't' || k[strlen(tag)] == 'f') /* true / false */
    return k[strlen(tag)] == 't';
  return strtoll(k + strlen(tag), NULL, 10);
}

TEST(synctune_ranks_a_period_the_chain_cannot_keep_last) {
  /* every reply 700 us late: a 500 us SYNC0 period cannot be kept, 1000 and 1500 us can */
  autd3_test_in_emu_chain("synctune_ranks_a_period_the_chain_cannot_keep_last", 1, "--delay-us 700", false);
  ASSERT_EQ(run("synctune --interface @IF@ --period-min 500 --period-max 1500 --period-step 500 --shift-min 0 "
                "--shift-max 0 --dwell 400ms --warmup 200 --mode idle --json"), 0);
  ASSERT_CONTAINS(g_out, "\"settings\":[");
  ASSERT_EQ(sfield(g_out, 4, "period_us"), -1); /* three settings, no more */
  ASSERT_EQ(sfield(g_out, 3, "period_us"), 500);
  /* the fault is there: the 500 us setting did not open, or ran with stale cycles */
  ASSERT_TRUE(sfield(g_out, 3, "opened") == 0 || sfield(g_out, 3, "stale_cycles") > 0);
  ASSERT_EQ(sfield(g_out, 1, "opened"), 1);
  /* it ran (how well is a benchmark's question: a loaded host loses cycles of a 700 us late chain) */
  ASSERT_EQ(sfield(g_out, 1, "stale_cycles") * 2 < sfield(g_out, 1, "cycles"), 1);
  char want[64];
  snprintf(want, sizeof want, "--cycle-us %lld --shift-us 0\"", sfield(g_out, 1, "period_us"));
  ASSERT_CONTAINS(g_out, want);
  /* what echocat measures per setting: the DC clock's drift, the phase; a drop time or null; no load (idle) */
  ASSERT_EQ(sfield(g_out, 1, "frames_ok"), 0);
  const char *b1 = strstr(g_out, "{\"rank\":1,");
  ASSERT_TRUE(b1 != NULL);
  char best[1024];
  snprintf(best, sizeof best, "%.*s", (int)(strchr(b1, '}') - b1), b1); /* the setting's object (no nesting) */
  ASSERT_CONTAINS(best, "\"dc_drift_ppm\":");
  ASSERT_TRUE(strstr(best, "\"dc_drift_ppm\":null") == NULL);
  ASSERT_CONTAINS(best, "\"first_drop_ms\":");
  ASSERT_CONTAINS(best, "\"frames_per_s\":");
  ASSERT_GE(sfield(g_out, 1, "phase_excursions"), 0);
  /* the usage errors */
  ASSERT_EQ(run("synctune --interface @IF@ --period-min 700 2>/dev/null"), 2);  /* not a multiple of 500 */
  ASSERT_EQ(run("synctune --interface @IF@ --csv --json 2>/dev/null"), 2);
  ASSERT_EQ(run("synctune --link emulator --interface @IF@ 2>/dev/null"), 2); /* no SYNC0 */
  ASSERT_EQ(run("synctune --interface no-such-if0 --period-max 500 --shift-min 0 --shift-max 0 --dwell 50 2>/dev/null"), 5);
  ASSERT_EQ(run("synctune --interface @IF@ --shift-percent 50 2>/dev/null"), 2); /* measure's flag on tune */
  ASSERT_EQ(run("synctune --interface @IF@ --dwell 10x 2>/dev/null"), 2);
  ASSERT_EQ(run("synctune --interface @IF@ --shift-max 200 2>/dev/null"), 2); /* percent of the period: < 200 */
  ASSERT_EQ(run("synctune --interface @IF@ --mode fast 2>/dev/null"), 2);
}

/* `synctune measure` with the reference's flags (--cycle-us, --shift-percent, durations with units), --csv, and
 * --capture: the setting's own pcap file, holding both directions of its bus. */
TEST(synctune_measure_csv_and_capture) {
  autd3_test_in_emu_chain("synctune_measure_csv_and_capture", 1, "", false);
  char dir[] = "/tmp/autd3-stune-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir) != NULL);
  char cmd[512], cap[600];
  snprintf(cmd, sizeof cmd,
           "synctune measure --interface @IF@ --cycle-us 1000 --shift-percent 50 --dwell 300ms --warmup 0.1s "
           "--mode streaming --inflight 4 --capture %s/bus.pcap --csv",
           dir);
  ASSERT_EQ(run(cmd), 0);
  ASSERT_CONTAINS(g_out, "rank,period_us,shift_percent,shift_us,opened,");
  ASSERT_CONTAINS(g_out, "\n1,1000,50,500,1,,");
  const char *row = strstr(g_out, "\n1,1000,50,500,1,,") + 1, *eol = strchr(row, '\n'), *last = eol;
  while (last > row && last[-1] != ',')
    last--;
  ASSERT_GT(strtod(last, NULL), 0.0); /* frames/s of the streaming load */
  ASSERT_CONTAINS(g_out, "# best: autd3-perftest --link echocat");
  ASSERT_CONTAINS(g_out, "--cycle-us 1000 --shift-us 500");
  snprintf(cap, sizeof cap, "%s/bus-1000us-50pct.pcap", dir);
  int sent, back;
  pcap_count(cap, &sent, &back);
  ASSERT_GT(sent, 10);
  ASSERT_GT(back, 10);
  rmdir(dir);
}

/* `watch` through autd3-remote-server (echocat on the chain): the server's
 * devices in OP as ARMT v7 reports them, and the server's --capture file
 * holding both directions of its bus. */
TEST(watch_through_remote_server_and_its_capture) {
  const char *srv = AUTD3_BINARY_DIR "/tools/remote-server/autd3-remote-server";
  if (access(srv, X_OK) != 0)
    SKIP("autd3-remote-server is not built");
  autd3_test_in_emu_chain("watch_through_remote_server_and_its_capture", 2, "", false);
  char path[] = "/tmp/autd3-rcap-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_TRUE(fd >= 0);
  close(fd);
  char cmd[1536];
  snprintf(cmd, sizeof cmd,
           "'%s' --link echocat --interface '%s' --devices 2 --listen 127.0.0.1:18181 --capture '%s' 2>/dev/null & echo $!",
           srv, getenv("AUTD3_TEST_IFNAME"), path);
  FILE *p = popen(cmd, "r");
  ASSERT_TRUE(p != NULL);
  int pid = 0;
  ASSERT_EQ(fscanf(p, "%d", &pid), 1);
  pclose(p);
  int code = 1;
  for (int i = 0; i < 100 && code != 0; i++) { /* bounded wait until the server listens and its link is up */
    usleep(100000);
    code = run("watch --link remote --address 127.0.0.1:18181 --devices 2 --count 3 --interval-ms 100 --json 2>/dev/null");
  }
  kill(pid, SIGTERM); /* the server closes its link (and the capture file) and exits: wait, bounded */
  for (int i = 0; i < 100 && kill(pid, 0) == 0; i++)
    usleep(100000);
  ASSERT_EQ(code, 0);
  ASSERT_CONTAINS(g_out, "\"link\":\"remote\"");
  const char *last = g_out;
  for (const char *q = strstr(g_out, "{\"link\""); q; q = strstr(q + 1, "{\"link\""))
    last = q;
  ASSERT_TRUE(strstr(last, "{\"position\":0,\"state\":\"OP\"") != NULL);
  ASSERT_TRUE(strstr(last, "{\"position\":1,\"state\":\"OP\"") != NULL);
  /* the server's echocat measures phase, and ARMT v7 carries it to the Remote link's statistics */
  ASSERT_CONTAINS(last, "\"link_stats\":{");
  ASSERT_TRUE(strstr(last, "\"phase_excursions\":null") == NULL);
  int sent, back;
  pcap_count(path, &sent, &back);
  ASSERT_GT(sent, 10);
  ASSERT_GT(back, 10);
}

/* `watch --link twincat` against autd3-twincat-emu (an emulated TwinCAT runtime on loopback): both devices in
 * OP as the runtime's state words say, the frames each executed (the client's open sequence), the bus cycling
 * between refreshes, the ADS exchange timed, and what TwinCAT cannot give (phase, ESC counters, DC deviation) null, not zero. */
TEST(watch_twincat_against_the_emulated_runtime) {
  const char *emu = AUTD3_BINARY_DIR "/tools/twincat-emu/autd3-twincat-emu";
  if (access(emu, X_OK) != 0)
    SKIP("autd3-twincat-emu is not built");
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' --devices 2 --listen 127.0.0.1:0 2>/dev/null & echo pid $!", emu);
  FILE *p = popen(cmd, "r");
  ASSERT_TRUE(p != NULL);
  int pid = 0, port = 0;
  char line[256];
  while ((pid == 0 || port == 0) && fgets(line, sizeof line, p)) {
    sscanf(line, "pid %d", &pid);
    sscanf(line, "port %d", &port);
  }
  pclose(p);
  ASSERT_GT(pid, 0);
  ASSERT_GT(port, 0);
  snprintf(cmd, sizeof cmd,
           "watch --link twincat --address 127.0.0.1:%d --ams-net-id 127.0.0.1.1.1 --devices 2 --count 4 --interval-ms 150 "
           "--json",
           port);
  ASSERT_EQ(run("watch --link twincat --address 127.0.0.1 --count 1 2>/dev/null"), 2); /* no port */
  int code = run(cmd);
  kill(pid, SIGTERM);
  ASSERT_EQ(code, 0);
  const char *first = strstr(g_out, "{\"link\":\"twincat\""), *last = first;
  ASSERT_TRUE(first != NULL);
  for (const char *q = strstr(g_out, "{\"link\""); q; q = strstr(q + 1, "{\"link\""))
    last = q;
  ASSERT_TRUE(last != first);
  for (int d = 0; d < 2; d++) {
    char tag[64];
    snprintf(tag, sizeof tag, "{\"position\":%d,\"state\":\"OP\"", d);
    ASSERT_TRUE(strstr(last, tag) != NULL);
    ASSERT_GT(wfield(last, d, "executed"), 0);
  }
  /* the bus kept cycling between the first and the last refresh */
  ASSERT_GT(strtoll(strstr(last, "\"cycles\":") + 9, NULL, 10), strtoll(strstr(first, "\"cycles\":") + 9, NULL, 10));
  ASSERT_CONTAINS(last, "\"phase_excursions\":null");
  ASSERT_CONTAINS(last, "\"esc\":null,\"dc_deviation_ns\":null");
  ASSERT_TRUE(strstr(last, "\"exchanges\":null") == NULL);
}
