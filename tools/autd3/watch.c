/*
 * autd3 watch: open a client over any link and show, refreshed in place,
 * what the link and the client see of each device (docs/tools.md "watch").
 * Public API only: the link's statistics (autd3_link_stats), the state
 * checker (autd3_link_check_state, the same look perftest's checker takes)
 * and the client's per-device status. Over the Remote link the numbers are
 * the server's link's, as ARMT v7 carries them (docs/remote.md); a link that
 * cannot observe a device's state shows UNKNOWN, never a guess.
 *
 * The client keeps the bus cycling with nothing queued, so the array stays
 * as the client's open sequence left it (Clear: silent). A second master is
 * refused as by every link (exit 7): watch a running application's bus
 * through its Remote server instead.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "autd3/autd3.h"
#include "cli.h"
#include "link_flags.h"
#include "tool_os.h"

typedef struct watch_opts {
  const char *link, *address;
  uint64_t devices, interval_ms, count, cycle_us;
} watch_opts_t;

static volatile sig_atomic_t g_stop;
static void on_sigint(int sig) {
  (void)sig;
  g_stop = 1;
}

void help_watch(FILE *o) {
  fprintf(o,
          "usage: " TOOL " watch [--link KIND] [--interface IF] [--address HOST:PORT] [--devices N]\n"
          "                   [--cycle-us US] [--interval-ms MS] [--count K] [--capture FILE.pcap] [--json]\n\n"
          "Opens a client over the link (default echocat; emulator, remote, twincat, soem, ethercrab where\n"
          "built) for N devices (default 1) and shows every MS milliseconds (default 500) the link's cycles,\n"
          "stale and lost cycles and recoveries, the client's frames and re-establishments, and per device\n"
          "the EtherCAT state, the client's state and the resets. On a terminal the view is redrawn in\n"
          "place; otherwise (or with --json, one JSON object per line) each refresh is appended.\n"
          "--count K stops after K refreshes (0 = until Ctrl-C). Exit: 0, or the open's error (docs/tools.md).\n");
}

static int own(void *ctx, int argc, char **argv, int i) {
  watch_opts_t *w = ctx;
  const char *a = argv[i];
  struct {
    const char *name;
    uint64_t *dst, lo, hi;
  } nums[] = {{"--devices", &w->devices, 1, AUTD3_MAX_DEVICES},
              {"--interval-ms", &w->interval_ms, 10, 3600000},
              {"--count", &w->count, 0, UINT32_MAX},
              {"--cycle-us", &w->cycle_us, 0, 1000000}};
  for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
    if (strcmp(a, nums[k].name) != 0)
      continue;
    const char *v = cli_value("watch", argc, argv, i);
    if (!v || !cli_u64("watch", a, v, nums[k].lo, nums[k].hi, nums[k].dst))
      return -1;
    return 2;
  }
  if (!strcmp(a, "--link") || !strcmp(a, "--address")) {
    const char *v = cli_value("watch", argc, argv, i);
    if (!v)
      return -1;
    *(!strcmp(a, "--link") ? &w->link : &w->address) = v;
    return 2;
  }
  return 0;
}

static const char *dev_state_name(uint8_t s) {
  switch (s) {
  case AUTD3_DEVICE_OP: return "OP";
  case AUTD3_DEVICE_SAFE_OP: return "SAFE-OP";
  case AUTD3_DEVICE_SAFE_OP_ERROR: return "SAFE-OP+ERR";
  case AUTD3_DEVICE_LOST: return "LOST";
  case AUTD3_DEVICE_OTHER: return "OTHER";
  default: return "UNKNOWN";
  }
}

static const char *client_state_name(autd3_client_device_state_t s) {
  switch (s) {
  case AUTD3_CLIENT_DEVICE_READY: return "ready";
  case AUTD3_CLIENT_DEVICE_RECOVERING: return "recovering";
  case AUTD3_CLIENT_DEVICE_FOREIGN: return "foreign";
  default: return "?";
  }
}

typedef struct snap {
  double t_s;
  autd3_link_stats_t ls;
  autd3_client_stats_t cs;
  autd3_link_status_t st;
  bool st_ok;
  autd3_client_device_status_t dev[AUTD3_MAX_DEVICES];
} snap_t;

static void take(autd3_client_t *cl, uint64_t t0, snap_t *s) {
  memset(s, 0, sizeof *s);
  s->t_s = (double)(tool_now_ns() - t0) / 1e9;
  autd3_link_t *l = autd3_client_link(cl);
  autd3_link_stats(l, &s->ls);
  autd3_client_stats(cl, &s->cs);
  s->st_ok = autd3_link_check_state(l, &s->st) == AUTD3_OK;
  size_t n = autd3_client_num_devices(cl);
  for (size_t d = 0; d < n; d++)
    autd3_client_device_status(cl, (uint16_t)d, &s->dev[d]);
}

static void show_json(const snap_t *s, size_t n, const char *kind) {
  json_t j;
  json_begin(&j, stdout);
  json_obj(&j, NULL);
  json_str(&j, "link", kind);
  json_u64(&j, "t_ms", (uint64_t)(s->t_s * 1000.0));
  json_u64(&j, "cycles", s->ls.cycles);
  json_u64(&j, "stale_cycles", s->ls.stale_cycles);
  json_u64(&j, "lost_cycles", s->ls.lost_cycles);
  if (s->st_ok)
    json_u64(&j, "recoveries", s->st.recoveries);
  else
    json_null(&j, "recoveries");
  json_u64(&j, "sent", s->cs.sent);
  json_u64(&j, "completed", s->cs.completed);
  json_u64(&j, "failed", s->cs.failed);
  json_u64(&j, "device_resets", s->cs.device_resets);
  json_u64(&j, "reinits", s->cs.reinits);
  json_arr(&j, "devices");
  for (size_t d = 0; d < n; d++) {
    json_obj(&j, NULL);
    json_u64(&j, "position", d);
    json_str(&j, "state", s->st_ok ? dev_state_name(s->st.state[d]) : "UNKNOWN");
    json_u64(&j, "al_state", s->st_ok ? s->st.al_state[d] : 0);
    json_str(&j, "client_state", client_state_name(s->dev[d].state));
    json_u64(&j, "resets", s->dev[d].resets);
    json_u64(&j, "reinits", s->dev[d].reinits);
    json_end_obj(&j);
  }
  json_end_arr(&j);
  json_end_obj(&j);
  json_finish(&j);
}

static void show_text(const snap_t *s, size_t n, const char *kind, bool redraw) {
  if (redraw)
    fputs("\x1b[H\x1b[2J", stdout); /* cursor home, clear screen (ECMA-48 CUP, ED) */
  printf(TOOL " watch: %s link, %zu device(s), %.1f s   (Ctrl-C quits)\n", kind, n, s->t_s);
  printf("link    cycles %" PRIu64 "  stale %" PRIu64 "  lost %" PRIu64 "  recoveries ", s->ls.cycles, s->ls.stale_cycles,
         s->ls.lost_cycles);
  if (s->st_ok)
    printf("%" PRIu64 "\n", s->st.recoveries);
  else
    printf("? (%s)\n", autd3_last_error());
  printf("client  frames sent %" PRIu64 "  completed %" PRIu64 "  failed %" PRIu64 "  device resets %" PRIu64
         "  re-established %" PRIu64 "\n",
         s->cs.sent, s->cs.completed, s->cs.failed, s->cs.device_resets, s->cs.reinits);
  printf("%-4s %-12s %-11s %7s %8s\n", "dev", "state", "client", "resets", "reinits");
  for (size_t d = 0; d < n; d++)
    printf("%-4zu %-12s %-11s %7" PRIu32 " %8" PRIu32 "\n", d, s->st_ok ? dev_state_name(s->st.state[d]) : "UNKNOWN",
           client_state_name(s->dev[d].state), s->dev[d].resets, s->dev[d].reinits);
  if (!redraw)
    putchar('\n');
  fflush(stdout);
}

int cmd_watch(int argc, char **argv) {
  cli_opts_t o;
  watch_opts_t w = {.link = "echocat", .devices = 1, .interval_ms = 500, .cycle_us = 1000};
  if (!cli_parse("watch", argc, argv, &o, own, &w))
    return EXIT_USAGE;
  if (o.help) {
    help_watch(stdout);
    return EXIT_OK;
  }
  autd3_link_kind_t kind;
  if (autd3_link_kind_parse(w.link, &kind) != AUTD3_OK) {
    fprintf(stderr, TOOL " watch: --link: %s\n", autd3_last_error());
    return EXIT_USAGE;
  }
  if ((kind == AUTD3_LINK_ECHOCAT || kind == AUTD3_LINK_SOEM || kind == AUTD3_LINK_ETHERCRAB) && !o.interface) {
    fprintf(stderr, TOOL " watch: --interface IF is required with --link %s (`" TOOL " adapters` lists them)\n", w.link);
    return EXIT_USAGE;
  }
  const autd3_tool_link_flags_t f = {.link = w.link, .cycle_us = (uint32_t)w.cycle_us, .interface = o.interface,
                                     .address = w.address, .twincat_port = -1, .capture = o.capture};
  autd3_link_option_t lo;
  char err[256];
  if (!autd3_tool_link_option(&f, &lo, err, sizeof err)) {
    fprintf(stderr, TOOL " watch: %s\n", err);
    return EXIT_USAGE;
  }
  autd3_client_t *cl = NULL;
  autd3_err_t e = cli_client_open(&lo, w.devices, &cl);
  if (e != AUTD3_OK)
    return cli_fail("watch", e);
  tool_on_sigint(on_sigint);
  const bool redraw = !o.json && tool_isatty_stdout();
  const size_t n = autd3_client_num_devices(cl);
  const uint64_t t0 = tool_now_ns();
  for (uint64_t k = 0; !g_stop && (w.count == 0 || k < w.count); k++) {
    if (k > 0)
      for (uint64_t slept = 0; slept < w.interval_ms && !g_stop; slept += 10)
        tool_sleep_ms(10);
    snap_t s;
    take(cl, t0, &s);
    if (o.json)
      show_json(&s, n, w.link);
    else
      show_text(&s, n, w.link, redraw);
  }
  e = autd3_client_close(cl);
  if (e != AUTD3_OK)
    return cli_fail("watch", e);
  return EXIT_OK;
}
