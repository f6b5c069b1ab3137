/*
 * autd3 synctune: sweep the SYNC0 period x shift grid on an EtherCAT link and rank the settings by how well
 * the bus kept up (docs/tools.md "synctune"). The flags mean what the reference SDK's synctune
 * (autd3-sdk tools/synctune) makes them mean: `tune` over the grid (--period-* in us, --shift-* in percent of
 * the period), `measure` one setting (--cycle-us, --shift-percent), durations with units (--dwell 30s
 * --warmup 5s --poll-interval 100ms). Each setting is measured by synctune_run.c; the best is printed as
 * the autd3-perftest command that uses it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "numopt.h"
#include "synctune.h"

#define MAX_SETTINGS 4096
#define MS 1000000ull

void help_synctune(FILE *o) {
  fprintf(o,
          "usage: " TOOL " synctune [tune] --interface IF [--link echocat|soem|ethercrab] [--devices N]\n"
          "                      [--period-min US] [--period-max US] [--period-step US]\n"
          "                      [--shift-min PCT] [--shift-max PCT] [--shift-step PCT]\n"
          "                      [--dwell D] [--warmup D] [--poll-interval D] [--mode M] [--inflight N]\n"
          "                      [--capture FILE.pcap] [--csv | --json]\n"
          "       " TOOL " synctune measure --interface IF [--cycle-us US] [--shift-percent PCT] [same options]\n\n"
          "For every SYNC0 period (us, multiples of 500; default 500..2000 step 500) and shift (percent of\n"
          "the period; default 0..75 step 25) opens a client for N devices (default 1), waits --warmup\n"
          "(default 500ms), then for --dwell (default 2s) sends frames (--mode stop-and-wait (default),\n"
          "streaming with --inflight N (default 16), or idle) and every --poll-interval (default 50ms)\n"
          "checks the states: OP retention, degraded checks, recoveries, stale and lost cycles, phase\n"
          "excursions, DC drift (ppm), time to the first drop, frames/s. Durations take a unit (ns, us, ms,\n"
          "s, m, h; a bare number is ms). --capture writes one pcap file per setting (FILE-<P>us-<S>pct.pcap).\n"
          "Prints the settings best first and the autd3-perftest command of the best.\n"
          "Exit: 0; 2 bad command line; 4, 5, 7 as for every link; 6 when no setting opened.\n");
}

/* The options with a duration value (a bare number is ms). */
static bool own_duration(tune_opts_t *t, const char *a, const char *v, bool *known) {
  struct {
    const char *name;
    uint64_t *dst, lo, hi;
  } d[] = {{"--dwell", &t->dwell_ns, 50 * MS, 3600000 * MS},
           {"--warmup", &t->warmup_ns, 0, 3600000 * MS},
           {"--poll-interval", &t->poll_ns, 10 * MS, 60000 * MS}};
  for (size_t k = 0; k < sizeof d / sizeof d[0]; k++) {
    if (strcmp(a, d[k].name) != 0)
      continue;
    *known = true;
    char err[200];
    if (autd3_numopt_duration_ns(a, v, MS, d[k].lo, d[k].hi, d[k].dst, err, sizeof err))
      return true;
    fprintf(stderr, TOOL " synctune: %s\n", err);
    return false;
  }
  *known = false;
  return true;
}

/* The options with a number value. */
static bool own_number(tune_opts_t *t, const char *a, const char *v, bool *known) {
  struct {
    const char *name;
    uint64_t *dst, lo, hi;
  } u[] = {{"--devices", &t->devices, 1, AUTD3_MAX_DEVICES},     {"--period-min", &t->period_min, 500, 1000000},
           {"--period-max", &t->period_max, 500, 1000000},       {"--period-step", &t->period_step, 500, 1000000},
           {"--cycle-us", &t->cycle_us, 500, 1000000},           {"--inflight", &t->inflight, 1, AUTD3_MAX_INFLIGHT}};
  struct {
    const char *name;
    int64_t *dst, lo, hi;
  } s[] = {{"--shift-min", &t->shift_min, -99, 199}, {"--shift-max", &t->shift_max, -99, 199},
           {"--shift-step", &t->shift_step, 1, 300}, {"--shift-percent", &t->shift_percent, -99, 199}};
  *known = true;
  for (size_t k = 0; k < sizeof u / sizeof u[0]; k++)
    if (strcmp(a, u[k].name) == 0)
      return cli_u64("synctune", a, v, u[k].lo, u[k].hi, u[k].dst);
  for (size_t k = 0; k < sizeof s / sizeof s[0]; k++) {
    if (strcmp(a, s[k].name) != 0)
      continue;
    char err[160];
    t->shift_percent_set = t->shift_percent_set || s[k].dst == &t->shift_percent;
    if (autd3_numopt_i64(a, v, s[k].lo, s[k].hi, s[k].dst, err, sizeof err))
      return true;
    fprintf(stderr, TOOL " synctune: %s (percent of the period)\n", err);
    return false;
  }
  *known = false;
  return true;
}

static int own(void *ctx, int argc, char **argv, int i) {
  tune_opts_t *t = ctx;
  const char *a = argv[i];
  if (i == 1 && (!strcmp(a, "tune") || !strcmp(a, "measure"))) {
    t->measure = !strcmp(a, "measure");
    return 1;
  }
  if (!strcmp(a, "--csv")) {
    t->csv = true;
    return 1;
  }
  if (strncmp(a, "--", 2) != 0)
    return 0;
  const char *v = cli_value("synctune", argc, argv, i);
  if (!v)
    return -1;
  bool known = false;
  if (!own_duration(t, a, v, &known) || (!known && !own_number(t, a, v, &known)))
    return -1;
  if (known)
    return 2;
  if (!strcmp(a, "--link")) {
    t->link = v;
    return 2;
  }
  if (!strcmp(a, "--mode")) {
    static const char *modes[] = {"idle", "stop-and-wait", "streaming"};
    for (int m = 0; m < 3; m++)
      if (!strcmp(v, modes[m])) {
        t->mode = (tune_mode_t)m;
        return 2;
      }
    fprintf(stderr, TOOL " synctune: --mode '%s': expected idle, stop-and-wait or streaming\n", v);
    return -1;
  }
  return 0;
}

/* The link kind, the interface and the grid: EXIT_OK or EXIT_USAGE (message printed). */
static int validate(tune_opts_t *t, const cli_opts_t *o) {
  autd3_link_kind_t kind;
  if (autd3_link_kind_parse(t->link, &kind) != AUTD3_OK) {
    fprintf(stderr, TOOL " synctune: --link: %s\n", autd3_last_error());
    return EXIT_USAGE;
  }
  if (kind != AUTD3_LINK_ECHOCAT && kind != AUTD3_LINK_SOEM && kind != AUTD3_LINK_ETHERCRAB) {
    fprintf(stderr, TOOL " synctune: --link %s has no SYNC0 to tune (echocat, soem or ethercrab)\n", t->link);
    return EXIT_USAGE;
  }
  if (!o->interface) {
    fprintf(stderr, TOOL " synctune: --interface IF is required (`" TOOL " adapters` lists them)\n");
    return EXIT_USAGE;
  }
  if (o->json && t->csv) {
    fprintf(stderr, TOOL " synctune: --csv and --json exclude each other\n");
    return EXIT_USAGE;
  }
  if (!t->measure && (t->cycle_us || t->shift_percent_set)) {
    fprintf(stderr, TOOL " synctune: --cycle-us and --shift-percent are `synctune measure`'s (tune takes the grid)\n");
    return EXIT_USAGE;
  }
  if (t->measure) { /* one setting: the grid of one */
    t->period_min = t->period_max = t->cycle_us ? t->cycle_us : 1000;
    t->shift_min = t->shift_max = t->shift_percent;
  }
  if (t->period_min > t->period_max || t->shift_min > t->shift_max || t->period_min % 500 || t->period_step % 500) {
    fprintf(stderr, TOOL " synctune: the period range must be min <= max in multiples of 500 us, and shift min <= max\n");
    return EXIT_USAGE;
  }
  uint64_t np = (t->period_max - t->period_min) / t->period_step + 1;
  uint64_t ns = (uint64_t)((t->shift_max - t->shift_min) / t->shift_step) + 1;
  if (np * ns > MAX_SETTINGS) {
    fprintf(stderr, TOOL " synctune: %" PRIu64 " settings; at most %d (widen the steps)\n", np * ns, MAX_SETTINGS);
    return EXIT_USAGE;
  }
  t->interface = o->interface;
  t->capture = o->capture;
  return EXIT_OK;
}

static double share(uint64_t part, uint64_t whole) { return whole ? (double)part / (double)whole : 1.0; }

/* Best first: opened; then the most OP retention, fewest recoveries, then the smallest shares of lost cycles,
 * stale cycles, phase excursions (of the cycles run, so periods compare) and failed frames; ties go to the
 * shorter period (faster updates), then the smaller |shift|. */
static int cmp(const void *pa, const void *pb) {
  const tune_result_t *x = pa, *y = pb;
  if ((x->open_err == AUTD3_OK) != (y->open_err == AUTD3_OK))
    return x->open_err == AUTD3_OK ? -1 : 1;
  if (x->open_err == AUTD3_OK) {
    /* all_op/checks descending: compare cross products */
    uint64_t lx = x->all_op * (y->checks ? y->checks : 1), ly = y->all_op * (x->checks ? x->checks : 1);
    if (lx != ly)
      return lx > ly ? -1 : 1;
    if (x->recoveries != y->recoveries)
      return x->recoveries < y->recoveries ? -1 : 1;
    const double fx[4] = {share(x->lost, x->cycles), share(x->stale, x->cycles), share(x->phase_excursions, x->cycles),
                          share(x->frames_failed, x->frames_ok + x->frames_failed)};
    const double fy[4] = {share(y->lost, y->cycles), share(y->stale, y->cycles), share(y->phase_excursions, y->cycles),
                          share(y->frames_failed, y->frames_ok + y->frames_failed)};
    for (int k = 0; k < 4; k++)
      if (fx[k] != fy[k])
        return fx[k] < fy[k] ? -1 : 1;
  }
  if (x->period_us != y->period_us)
    return x->period_us < y->period_us ? -1 : 1;
  int32_t ax = abs(x->shift_percent), ay = abs(y->shift_percent);
  return ax == ay ? (x->shift_percent < y->shift_percent ? -1 : 1) : (ax < ay ? -1 : 1);
}

static double frames_per_s(const tune_result_t *r) {
  return r->elapsed_ns ? (double)r->frames_ok / ((double)r->elapsed_ns / 1e9) : 0.0;
}

static void row_json(json_t *j, size_t rank, const tune_result_t *r) {
  const bool ok = r->open_err == AUTD3_OK;
  json_obj(j, NULL);
  json_u64(j, "rank", rank);
  json_u64(j, "period_us", r->period_us);
  json_i64(j, "shift_percent", r->shift_percent);
  json_i64(j, "shift_us", tune_shift_ns(r) / 1000);
  json_bool(j, "opened", ok);
  if (ok)
    json_null(j, "error");
  else
    json_str(j, "error", autd3_err_name(r->open_err));
  json_u64(j, "op_checks", r->checks);
  json_u64(j, "op_checks_all_op", r->all_op);
  json_u64(j, "degraded_checks", r->checks - r->all_op);
  json_u64(j, "recoveries", r->recoveries);
  json_u64(j, "cycles", r->cycles);
  json_u64(j, "stale_cycles", r->stale);
  if (r->measured & AUTD3_LINK_MEASURES_LOST)
    json_u64(j, "lost_cycles", r->lost);
  else
    json_null(j, "lost_cycles");
  bool ph = r->measured & AUTD3_LINK_MEASURES_PHASE, ex = r->exchanges > 0;
  ph ? json_u64(j, "phase_excursions", r->phase_excursions) : json_null(j, "phase_excursions");
  ph ? json_u64(j, "worst_phase_deviation_ns", r->worst_phase_deviation_ns) : json_null(j, "worst_phase_deviation_ns");
  ex ? json_u64(j, "mean_exchange_ns", r->exchange_ns / r->exchanges) : json_null(j, "mean_exchange_ns");
  if (r->drift_known) {
    char b[32];
    snprintf(b, sizeof b, "%.3f", r->dc_drift_ppm);
    json_raw(j, "dc_drift_ppm", b);
  } else {
    json_null(j, "dc_drift_ppm");
  }
  r->first_drop_ns >= 0 ? json_u64(j, "first_drop_ms", (uint64_t)r->first_drop_ns / MS) : json_null(j, "first_drop_ms");
  json_u64(j, "frames_ok", r->frames_ok);
  json_u64(j, "frames_failed", r->frames_failed);
  char b[32];
  snprintf(b, sizeof b, "%.1f", frames_per_s(r));
  json_raw(j, "frames_per_s", b);
  json_end_obj(j);
}

/* A number or "-" (CSV: empty) for what was not measured. */
static const char *opt_num(bool known, const char *fmt, double v, bool csv, char *buf, size_t cap) {
  if (!known)
    return csv ? "" : "-";
  snprintf(buf, cap, fmt, v);
  return buf;
}

static void row_text(size_t rank, const tune_result_t *r, bool csv) {
  const bool ok = r->open_err == AUTD3_OK;
  const double ret = r->checks ? (double)r->all_op / (double)r->checks : 0.0;
  char lost[24], ph[24], worst[24], drift[24], drop[24];
  bool lk = r->measured & AUTD3_LINK_MEASURES_LOST, pk = r->measured & AUTD3_LINK_MEASURES_PHASE;
  opt_num(ok && lk, "%.0f", (double)r->lost, csv, lost, sizeof lost);
  opt_num(ok && pk, "%.0f", (double)r->phase_excursions, csv, ph, sizeof ph);
  opt_num(ok && pk, "%.1f", (double)r->worst_phase_deviation_ns / 1e3, csv, worst, sizeof worst);
  opt_num(ok && r->drift_known, "%.2f", r->dc_drift_ppm, csv, drift, sizeof drift);
  opt_num(ok && r->first_drop_ns >= 0, "%.0f", (double)r->first_drop_ns / 1e6, csv, drop, sizeof drop);
  if (csv) {
    printf("%zu,%" PRIu32 ",%" PRId32 ",%" PRId64 ",%d,%s,%.4f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%s,%s,%s,%s,%s,%.1f\n",
           rank, r->period_us, r->shift_percent, tune_shift_ns(r) / 1000, ok, ok ? "" : autd3_err_name(r->open_err), ret,
           r->checks - r->all_op, r->recoveries, r->cycles, r->stale, lost, ph, worst, drift, drop, frames_per_s(r));
    return;
  }
  printf("%-4zu %6" PRIu32 " %5" PRId32 "%% %6s %8.1f%% %6" PRIu64 " %6" PRIu64 " %7" PRIu64 " %6s %6s %9s %9s %8s %9.1f  %s\n",
         rank, r->period_us, r->shift_percent, ok ? "yes" : "no", 100.0 * ret, r->checks - r->all_op, r->recoveries, r->stale,
         lost, ph, worst, drift, drop, frames_per_s(r), ok ? "" : autd3_err_name(r->open_err));
}

/* The ranked table (text, CSV or JSON) and the perftest command of the best. */
static void report(const tune_opts_t *t, bool json, const tune_result_t *res, size_t n, const char *best) {
  json_t j;
  static const char *modes[] = {"idle", "stop-and-wait", "streaming"};
  if (json) {
    json_begin(&j, stdout);
    json_obj(&j, NULL);
    json_str(&j, "interface", t->interface);
    json_str(&j, "link", t->link);
    json_u64(&j, "devices", t->devices);
    json_str(&j, "mode", modes[t->mode]);
    json_u64(&j, "dwell_ms", t->dwell_ns / MS);
    json_u64(&j, "warmup_ms", t->warmup_ns / MS);
    json_arr(&j, "settings");
  } else if (t->csv) {
    printf("rank,period_us,shift_percent,shift_us,opened,error,op_retention,degraded_checks,recoveries,cycles,"
           "stale_cycles,lost_cycles,phase_excursions,worst_phase_deviation_us,dc_drift_ppm,first_drop_ms,frames_per_s\n");
  } else {
    printf("%-4s %6s %6s %6s %9s %6s %6s %7s %6s %6s %9s %9s %8s %9s  %s\n", "rank", "period", "shift", "opened", "op_retain",
           "degr", "recov", "stale", "lost", "ph_exc", "ph_wst_us", "drift_ppm", "drop_ms", "frames/s", "note");
  }
  for (size_t i = 0; i < n; i++) {
    if (json)
      row_json(&j, i + 1, &res[i]);
    else
      row_text(i + 1, &res[i], t->csv);
  }
  if (json) {
    json_end_arr(&j);
    best[0] ? json_str(&j, "perftest", best) : json_null(&j, "perftest");
    json_end_obj(&j);
    json_finish(&j);
  } else if (best[0]) {
    printf("%sbest: %s\n", t->csv ? "# " : "\n", best);
  }
}

int cmd_synctune(int argc, char **argv) {
  cli_opts_t o;
  tune_opts_t t = {.link = "echocat", .devices = 1, .inflight = 16, .dwell_ns = 2000 * MS, .warmup_ns = 500 * MS,
                   .poll_ns = 50 * MS, .period_min = 500, .period_max = 2000, .period_step = 500, .shift_min = 0,
                   .shift_max = 75, .shift_step = 25, .mode = TUNE_STOP_AND_WAIT};
  if (!cli_parse("synctune", argc, argv, &o, own, &t))
    return EXIT_USAGE;
  if (o.help) {
    help_synctune(stdout);
    return EXIT_OK;
  }
  int rc = validate(&t, &o);
  if (rc != EXIT_OK)
    return rc;
  static tune_result_t res[MAX_SETTINGS];
  size_t n = 0;
  for (uint64_t p = t.period_min; p <= t.period_max; p += t.period_step)
    for (int64_t s = t.shift_min; s <= t.shift_max; s += t.shift_step) {
      tune_result_t *r = &res[n++];
      memset(r, 0, sizeof *r);
      r->period_us = (uint32_t)p;
      r->shift_percent = (int32_t)s;
      r->first_drop_ns = -1;
      if (!o.json && !t.csv)
        fprintf(stderr, "period %" PRIu32 " us, shift %" PRId32 " %% ...\n", r->period_us, r->shift_percent);
      tune_run_one(&t, r);
      if (r->open_err == AUTD3_E_PERMISSION || r->open_err == AUTD3_E_NO_INTERFACE || r->open_err == AUTD3_E_SECOND_MASTER) {
        fprintf(stderr, TOOL " synctune: %s (%s)\n", r->why, autd3_err_name(r->open_err));
        return cli_exit_for(r->open_err); /* no other setting can do better */
      }
    }
  qsort(res, n, sizeof res[0], cmp);
  const bool any = n > 0 && res[0].open_err == AUTD3_OK;
  char best[512] = "";
  if (any)
    snprintf(best, sizeof best,
             "autd3-perftest --link %s --interface %s --devices %" PRIu64 " --cycle-us %" PRIu32 " --shift-us %" PRId64,
             t.link, t.interface, t.devices, res[0].period_us, tune_shift_ns(&res[0]) / 1000);
  report(&t, o.json, res, n, best);
  if (!any) {
    fprintf(stderr, TOOL " synctune: no setting opened (first error: %s)\n", n ? res[0].why : "none");
    return EXIT_NO_DEVICE;
  }
  return EXIT_OK;
}
