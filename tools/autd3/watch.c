/*
 * autd3 watch: open a client over any link and show, refreshed in place,
 * what the link and the client see of each device (docs/tools.md "watch").
 * Public API only: the link's statistics (autd3_link_stats), the state
 * checker (autd3_link_check_state, the same look perftest's checker takes),
 * each device's link counters (autd3_link_device_info: stale cycles, and on
 * the EtherCAT links its ESC error counters and DC deviation read from the
 * device) and the client's per-device status (executed frames). What a link
 * cannot observe is shown as "-" / UNKNOWN (JSON null), never a guess.
 *
 * The client keeps the bus cycling with nothing queued, so the array stays
 * as the client's open sequence left it (Clear: silent). watch is a master:
 * an interface another master holds is refused (exit 7), and a Remote
 * server serves one client at a time, so watch cannot look over a running
 * application's shoulder; it shows a bus it drives itself.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/autd3.h"
#include "cli.h"
#include "link_flags.h"
#include "link_view.h"
#include "tool_os.h"

typedef struct watch_opts {
  const char *link, *address, *ams_net_id;
  uint64_t devices, interval_ms, count, cycle_us;
} watch_opts_t;

static volatile sig_atomic_t g_stop;
static void on_sigint(int sig) {
  (void)sig;
  g_stop = 1;
}

void help_watch(FILE *o) {
  fprintf(o,
          "usage: " TOOL " watch [--link KIND] [--interface IF] [--address HOST:PORT] [--ams-net-id ID]\n"
          "                   [--devices N] [--cycle-us US] [--interval-ms MS] [--count K] [--capture FILE.pcap]\n"
          "                   [--json]\n\n"
          "Opens a client over the link (default echocat; emulator, remote, twincat, soem, ethercrab where\n"
          "built) for N devices (default 1) and shows every MS milliseconds (default 500) the link's\n"
          "statistics (cycles, stale and lost cycles, phase excursions, exchange times, recoveries), the\n"
          "client's frames, and per device: EtherCAT state, client state, frames executed and failed, stale\n"
          "cycles, recoveries, resets, DC deviation and ESC error counters (\"-\": the link cannot read it).\n"
          "--address: the Remote server, or the TwinCAT runtime's ADS host:port (with --ams-net-id).\n"
          "On a terminal the view is redrawn in place; otherwise (or with --json, one JSON object per line)\n"
          "each refresh is appended. --count K stops after K refreshes (0 = until Ctrl-C).\n"
          "Exit: 0, or the open's error (docs/tools.md).\n");
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
  const char **strs[3] = {&w->link, &w->address, &w->ams_net_id};
  static const char *names[3] = {"--link", "--address", "--ams-net-id"};
  for (int k = 0; k < 3; k++) {
    if (strcmp(a, names[k]) != 0)
      continue;
    const char *v = cli_value("watch", argc, argv, i);
    if (!v)
      return -1;
    *strs[k] = v;
    return 2;
  }
  return 0;
}

static const char *client_state_name(autd3_client_device_state_t s) {
  switch (s) {
  case AUTD3_CLIENT_DEVICE_READY: return "ready";
  case AUTD3_CLIENT_DEVICE_RECOVERING: return "recovering";
  case AUTD3_CLIENT_DEVICE_FOREIGN: return "foreign";
  case AUTD3_CLIENT_DEVICE_AWAY: return "away";
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
  autd3_link_device_info_t info[AUTD3_MAX_DEVICES];
} snap_t;

static void take(autd3_client_t *cl, uint64_t t0, snap_t *s) {
  memset(s, 0, sizeof *s);
  s->t_s = (double)(tool_now_ns() - t0) / 1e9;
  autd3_link_t *l = autd3_client_link(cl);
  autd3_link_stats(l, &s->ls);
  autd3_client_stats(cl, &s->cs);
  s->st_ok = autd3_link_check_state(l, &s->st) == AUTD3_OK;
  size_t n = autd3_client_num_devices(cl);
  for (size_t d = 0; d < n; d++) {
    autd3_client_device_status(cl, (uint16_t)d, &s->dev[d]);
    autd3_link_device_info(l, (uint16_t)d, &s->info[d]); /* a failed read leaves its bits clear: "-" */
  }
}

static bool has_status(const snap_t *s, uint32_t bit) { return s->st_ok && (s->st.measured & bit); }

static void show_json(const snap_t *s, size_t n, const char *kind) {
  json_t j;
  char b[512];
  json_begin(&j, stdout);
  json_obj(&j, NULL);
  json_str(&j, "link", kind);
  json_u64(&j, "t_ms", (uint64_t)(s->t_s * 1000.0));
  json_u64(&j, "cycles", s->ls.cycles);
  json_u64(&j, "stale_cycles", s->ls.stale_cycles);
  json_u64(&j, "lost_cycles", s->ls.lost_cycles);
  autd3_tool_link_stats_json(&s->ls, b, sizeof b);
  json_raw(&j, "link_stats", b);
  if (has_status(s, AUTD3_LINK_STATUS_RECOVERIES))
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
    json_str(&j, "state", s->st_ok ? autd3_tool_device_state_name(s->st.state[d]) : "UNKNOWN");
    json_u64(&j, "al_state", s->st_ok ? s->st.al_state[d] : 0);
    json_str(&j, "client_state", client_state_name(s->dev[d].state));
    json_u64(&j, "resets", s->dev[d].resets);
    json_u64(&j, "reinits", s->dev[d].reinits);
    json_u64(&j, "executed", s->dev[d].executed);
    json_u64(&j, "not_executed", s->dev[d].not_executed);
    json_u64(&j, "unknown", s->dev[d].unknown);
    if (has_status(s, AUTD3_LINK_STATUS_DEVICE_RECOVERIES))
      json_u64(&j, "recoveries", s->st.device_recoveries[d]);
    else
      json_null(&j, "recoveries");
    autd3_tool_device_info_json(&s->info[d], b, sizeof b);
    json_raw(&j, "link", b);
    json_end_obj(&j);
  }
  json_end_arr(&j);
  json_end_obj(&j);
  json_finish(&j);
}

/* The link line: cycles, stale, lost, phase, exchange, recoveries ("-": not measured). */
static void show_link_line(const snap_t *s) {
  const autd3_link_stats_t *l = &s->ls;
  printf("link    cycles %" PRIu64 "  stale %" PRIu64 "  lost ", l->cycles, l->stale_cycles);
  if (l->measured & AUTD3_LINK_MEASURES_LOST)
    printf("%" PRIu64, l->lost_cycles);
  else
    printf("-");
  if (l->measured & AUTD3_LINK_MEASURES_PHASE)
    printf("  phase excursions %" PRIu64 " (worst %.1f us)", l->phase_excursions, (double)l->worst_phase_deviation_ns / 1e3);
  else
    printf("  phase excursions -");
  if (l->measured & AUTD3_LINK_MEASURES_EXCHANGE)
    printf("  exchange %.1f/%.1f us (mean/worst)", (double)autd3_tool_mean_exchange_ns(l) / 1e3,
           (double)l->worst_exchange_ns / 1e3);
  else
    printf("  exchange -");
  if (has_status(s, AUTD3_LINK_STATUS_RECOVERIES))
    printf("  recoveries %" PRIu64 "\n", s->st.recoveries);
  else if (!s->st_ok)
    printf("  recoveries ? (%s)\n", autd3_last_error());
  else
    printf("  recoveries -\n");
}

static void show_text(const snap_t *s, size_t n, const char *kind, bool redraw) {
  if (redraw)
    fputs("\x1b[H\x1b[2J", stdout); /* cursor home, clear screen (ECMA-48 CUP, ED) */
  printf(TOOL " watch: %s link, %zu device(s), %.1f s   (Ctrl-C quits)\n", kind, n, s->t_s);
  show_link_line(s);
  printf("client  frames sent %" PRIu64 "  completed %" PRIu64 "  failed %" PRIu64 "  device resets %" PRIu64
         "  re-established %" PRIu64 "\n",
         s->cs.sent, s->cs.completed, s->cs.failed, s->cs.device_resets, s->cs.reinits);
  printf("%-4s %-12s %-10s %9s %6s %7s %5s %6s %7s %9s  %s\n", "dev", "state", "client", "executed", "failed", "stale",
         "recov", "resets", "reinits", "DC dev ns", "ESC errors");
  for (size_t d = 0; d < n; d++) {
    const autd3_link_device_info_t *in = &s->info[d];
    char rec[16] = "-", dc[16] = "-", esc[160];
    if (has_status(s, AUTD3_LINK_STATUS_DEVICE_RECOVERIES))
      snprintf(rec, sizeof rec, "%" PRIu32, s->st.device_recoveries[d]);
    if (in->measured & AUTD3_LINK_MEASURES_DC)
      snprintf(dc, sizeof dc, "%" PRId32, in->dc_deviation_ns);
    autd3_tool_device_counters_text(in, esc, sizeof esc);
    printf("%-4zu %-12s %-10s %9" PRIu64 " %6" PRIu64 " %6" PRIu64 "%s %5s %6" PRIu32 " %7" PRIu32 " %9s  %s\n", d,
           s->st_ok ? autd3_tool_device_state_name(s->st.state[d]) : "UNKNOWN", client_state_name(s->dev[d].state),
           s->dev[d].executed, s->dev[d].not_executed + s->dev[d].unknown, in->stale_cycles,
           in->measured & AUTD3_LINK_MEASURES_DEVICE_STALE ? " " : "*", rec, s->dev[d].resets, s->dev[d].reinits, dc, esc);
  }
  if (!(s->info[0].measured & AUTD3_LINK_MEASURES_DEVICE_STALE))
    printf("(* the link cannot tell whose inputs were stale: each stale cycle counts for every device)\n");
  if (!redraw)
    putchar('\n');
  fflush(stdout);
}

/* --address for TwinCAT: HOST:PORT (or [V6]:PORT) into the link flags' server and port. */
static bool twincat_address(const char *address, char *host, size_t cap, int *port) {
  const char *c = strrchr(address, ':');
  if (c == NULL || c == address || (size_t)(c - address) >= cap)
    return false;
  char *end = NULL;
  long p = strtol(c + 1, &end, 10);
  if (*end != 0 || p < 1 || p > 65535)
    return false;
  snprintf(host, cap, "%.*s", (int)(c - address), address);
  *port = (int)p;
  return true;
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
  autd3_tool_link_flags_t f = {.link = w.link, .cycle_us = (uint32_t)w.cycle_us, .interface = o.interface,
                               .address = w.address, .twincat_port = -1, .capture = o.capture, .ams_net_id = w.ams_net_id};
  char tc_host[256];
  if (kind == AUTD3_LINK_TWINCAT && w.address) {
    if (!twincat_address(w.address, tc_host, sizeof tc_host, &f.twincat_port)) {
      fprintf(stderr, TOOL " watch: --address \"%s\": expected HOST:PORT (the runtime's ADS port, e.g. 48898)\n", w.address);
      return EXIT_USAGE;
    }
    f.twincat_server = tc_host;
    f.address = NULL;
  }
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
