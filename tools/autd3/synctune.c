/*
 * autd3 synctune: sweep the SYNC0 period x shift grid on an EtherCAT link
 * and rank the settings by how well the bus kept up (docs/tools.md
 * "synctune"). For each setting: open a client (bring-up, DC alignment,
 * OP), let it run --warmup ms, then watch it for --dwell ms: the share of
 * state checks with every device in OP, the recoveries, the stale and lost
 * cycles (autd3_link_stats, autd3_link_check_state: public API only). The
 * best setting is printed as the autd3-perftest command that uses it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/autd3.h"
#include "cli.h"
#include "link_flags.h"
#include "numopt.h"
#include "tool_os.h"

#define MAX_SETTINGS 4096

typedef struct tune_opts {
  const char *link;
  uint64_t devices, dwell_ms, warmup_ms;
  uint64_t period_min, period_max, period_step; /* us */
  int64_t shift_min, shift_max, shift_step;     /* us */
  bool csv;
} tune_opts_t;

typedef struct result {
  uint32_t period_us;
  int32_t shift_us;
  autd3_err_t open_err;
  char why[160];
  uint64_t checks, all_op, recoveries, cycles, stale, lost;
} result_t;

void help_synctune(FILE *o) {
  fprintf(o,
          "usage: " TOOL " synctune --interface IF [--link echocat|soem|ethercrab] [--devices N]\n"
          "                      [--period-min US] [--period-max US] [--period-step US]\n"
          "                      [--shift-min US] [--shift-max US] [--shift-step US]\n"
          "                      [--dwell MS] [--warmup MS] [--csv | --json]\n\n"
          "For every SYNC0 period (multiples of 500 us; default 500..2000 step 500) and shift (default\n"
          "-200..200 step 100 us) opens a client for N devices (default 1), waits --warmup ms (default\n"
          "500), then measures for --dwell ms (default 2000): OP retention (the share of state checks\n"
          "every 50 ms with all devices in OP), recoveries, stale and lost cycles. Prints the settings\n"
          "best first and the autd3-perftest command of the best. Exit: 0; 6 when no setting opened.\n");
}

static int own(void *ctx, int argc, char **argv, int i) {
  tune_opts_t *t = ctx;
  const char *a = argv[i];
  if (!strcmp(a, "--csv")) {
    t->csv = true;
    return 1;
  }
  struct {
    const char *name;
    uint64_t *dst, lo, hi;
  } u[] = {{"--devices", &t->devices, 1, AUTD3_MAX_DEVICES},  {"--dwell", &t->dwell_ms, 50, 3600000},
           {"--warmup", &t->warmup_ms, 0, 3600000},           {"--period-min", &t->period_min, 500, 1000000},
           {"--period-max", &t->period_max, 500, 1000000},    {"--period-step", &t->period_step, 500, 1000000}};
  for (size_t k = 0; k < sizeof u / sizeof u[0]; k++) {
    if (strcmp(a, u[k].name) != 0)
      continue;
    const char *v = cli_value("synctune", argc, argv, i);
    if (!v || !cli_u64("synctune", a, v, u[k].lo, u[k].hi, u[k].dst))
      return -1;
    return 2;
  }
  struct {
    const char *name;
    int64_t *dst, lo, hi;
  } s[] = {{"--shift-min", &t->shift_min, -1000000, 1000000},
           {"--shift-max", &t->shift_max, -1000000, 1000000},
           {"--shift-step", &t->shift_step, 1, 1000000}};
  for (size_t k = 0; k < sizeof s / sizeof s[0]; k++) {
    if (strcmp(a, s[k].name) != 0)
      continue;
    const char *v = cli_value("synctune", argc, argv, i);
    char err[160];
    if (!v)
      return -1;
    if (!autd3_numopt_i64(a, v, s[k].lo, s[k].hi, s[k].dst, err, sizeof err)) {
      fprintf(stderr, TOOL " synctune: %s\n", err);
      return -1;
    }
    return 2;
  }
  if (!strcmp(a, "--link")) {
    const char *v = cli_value("synctune", argc, argv, i);
    if (!v)
      return -1;
    t->link = v;
    return 2;
  }
  return 0;
}

static bool all_op(const autd3_link_status_t *st) {
  for (uint16_t d = 0; d < st->num_devices; d++)
    if (st->state[d] != AUTD3_DEVICE_OP)
      return false;
  return st->num_devices > 0;
}

static void run_one(const tune_opts_t *t, const char *ifname, result_t *r) {
  const autd3_tool_link_flags_t f = {.link = t->link, .cycle_us = r->period_us, .shift_us = r->shift_us,
                                     .shift_set = true, .interface = ifname, .twincat_port = -1};
  autd3_link_option_t lo;
  if (!autd3_tool_link_option(&f, &lo, r->why, sizeof r->why)) {
    r->open_err = AUTD3_E_INVALID_OPTION;
    return;
  }
  autd3_client_t *cl = NULL;
  r->open_err = cli_client_open(&lo, t->devices, &cl);
  if (r->open_err != AUTD3_OK) {
    snprintf(r->why, sizeof r->why, "%s", autd3_last_error());
    return;
  }
  autd3_link_t *l = autd3_client_link(cl);
  tool_sleep_ms((uint32_t)t->warmup_ms);
  autd3_link_stats_t a, b;
  autd3_link_status_t st;
  autd3_link_stats(l, &a);
  uint64_t rec0 = autd3_link_check_state(l, &st) == AUTD3_OK ? st.recoveries : 0, rec1 = rec0;
  const uint64_t end = tool_now_ns() + t->dwell_ms * 1000000ull;
  do {
    tool_sleep_ms(50);
    if (autd3_link_check_state(l, &st) == AUTD3_OK) {
      r->checks++;
      r->all_op += all_op(&st);
      rec1 = st.recoveries;
    } else {
      r->checks++; /* a failed check is not a check that saw OP */
    }
  } while (tool_now_ns() < end);
  autd3_link_stats(l, &b);
  r->recoveries = rec1 - rec0;
  r->cycles = b.cycles - a.cycles;
  r->stale = b.stale_cycles - a.stale_cycles;
  r->lost = b.lost_cycles - a.lost_cycles;
  autd3_err_t e = autd3_client_close(cl);
  if (e != AUTD3_OK && r->why[0] == 0)
    snprintf(r->why, sizeof r->why, "close: %s", autd3_last_error());
}

/* Best first: opened; then the most OP retention, fewest recoveries, lost,
 * stale cycles (as shares of the cycles run, so periods compare); ties go
 * to the shorter period (faster updates), then the smaller |shift|. */
static int cmp(const void *pa, const void *pb) {
  const result_t *x = pa, *y = pb;
  if ((x->open_err == AUTD3_OK) != (y->open_err == AUTD3_OK))
    return x->open_err == AUTD3_OK ? -1 : 1;
  if (x->open_err == AUTD3_OK) {
    /* all_op/checks descending: compare cross products */
    uint64_t lx = x->all_op * (y->checks ? y->checks : 1), ly = y->all_op * (x->checks ? x->checks : 1);
    if (lx != ly)
      return lx > ly ? -1 : 1;
    if (x->recoveries != y->recoveries)
      return x->recoveries < y->recoveries ? -1 : 1;
    double fx = x->cycles ? (double)x->lost / (double)x->cycles : 1.0, fy = y->cycles ? (double)y->lost / (double)y->cycles : 1.0;
    if (fx != fy)
      return fx < fy ? -1 : 1;
    fx = x->cycles ? (double)x->stale / (double)x->cycles : 1.0;
    fy = y->cycles ? (double)y->stale / (double)y->cycles : 1.0;
    if (fx != fy)
      return fx < fy ? -1 : 1;
  }
  if (x->period_us != y->period_us)
    return x->period_us < y->period_us ? -1 : 1;
  int32_t ax = abs(x->shift_us), ay = abs(y->shift_us);
  return ax == ay ? (x->shift_us < y->shift_us ? -1 : 1) : (ax < ay ? -1 : 1);
}

int cmd_synctune(int argc, char **argv) {
  cli_opts_t o;
  tune_opts_t t = {.link = "echocat", .devices = 1, .dwell_ms = 2000, .warmup_ms = 500, .period_min = 500,
                   .period_max = 2000, .period_step = 500, .shift_min = -200, .shift_max = 200, .shift_step = 100};
  if (!cli_parse("synctune", argc, argv, &o, own, &t))
    return EXIT_USAGE;
  if (o.help) {
    help_synctune(stdout);
    return EXIT_OK;
  }
  autd3_link_kind_t kind;
  if (autd3_link_kind_parse(t.link, &kind) != AUTD3_OK) {
    fprintf(stderr, TOOL " synctune: --link: %s\n", autd3_last_error());
    return EXIT_USAGE;
  }
  if (kind != AUTD3_LINK_ECHOCAT && kind != AUTD3_LINK_SOEM && kind != AUTD3_LINK_ETHERCRAB) {
    fprintf(stderr, TOOL " synctune: --link %s has no SYNC0 to tune (echocat, soem or ethercrab)\n", t.link);
    return EXIT_USAGE;
  }
  if (!o.interface) {
    fprintf(stderr, TOOL " synctune: --interface IF is required (`" TOOL " adapters` lists them)\n");
    return EXIT_USAGE;
  }
  if (o.capture) {
    fprintf(stderr, TOOL " synctune: --capture is not offered here (each setting opens the link anew)\n");
    return EXIT_USAGE;
  }
  if (o.json && t.csv) {
    fprintf(stderr, TOOL " synctune: --csv and --json exclude each other\n");
    return EXIT_USAGE;
  }
  if (t.period_min > t.period_max || t.shift_min > t.shift_max || t.period_min % 500 || t.period_step % 500) {
    fprintf(stderr, TOOL " synctune: the period range must be min <= max in multiples of 500 us, and shift min <= max\n");
    return EXIT_USAGE;
  }
  uint64_t np = (t.period_max - t.period_min) / t.period_step + 1;
  uint64_t ns = (uint64_t)((t.shift_max - t.shift_min) / t.shift_step) + 1;
  if (np * ns > MAX_SETTINGS) {
    fprintf(stderr, TOOL " synctune: %" PRIu64 " settings; at most %d (widen the steps)\n", np * ns, MAX_SETTINGS);
    return EXIT_USAGE;
  }
  static result_t res[MAX_SETTINGS];
  size_t n = 0;
  for (uint64_t p = t.period_min; p <= t.period_max; p += t.period_step)
    for (int64_t s = t.shift_min; s <= t.shift_max; s += t.shift_step) {
      result_t *r = &res[n++];
      memset(r, 0, sizeof *r);
      r->period_us = (uint32_t)p;
      r->shift_us = (int32_t)s;
      if (!o.json && !t.csv)
        fprintf(stderr, "period %" PRIu32 " us, shift %" PRId32 " us ...\n", r->period_us, r->shift_us);
      run_one(&t, o.interface, r);
      if (r->open_err == AUTD3_E_PERMISSION || r->open_err == AUTD3_E_NO_INTERFACE || r->open_err == AUTD3_E_SECOND_MASTER) {
        fprintf(stderr, TOOL " synctune: %s (%s)\n", r->why, autd3_err_name(r->open_err));
        return cli_exit_for(r->open_err); /* no other setting can do better */
      }
    }
  qsort(res, n, sizeof res[0], cmp);
  json_t j;
  if (o.json) {
    json_begin(&j, stdout);
    json_obj(&j, NULL);
    json_str(&j, "interface", o.interface);
    json_str(&j, "link", t.link);
    json_u64(&j, "devices", t.devices);
    json_arr(&j, "settings");
  } else if (t.csv) {
    printf("rank,period_us,shift_us,opened,error,op_retention,recoveries,cycles,stale_cycles,lost_cycles\n");
  } else {
    printf("%-4s %9s %8s %6s %10s %8s %8s %8s  %s\n", "rank", "period_us", "shift_us", "opened", "op_retain", "recover",
           "stale", "lost", "note");
  }
  for (size_t i = 0; i < n; i++) {
    const result_t *r = &res[i];
    const bool ok = r->open_err == AUTD3_OK;
    const double ret = r->checks ? (double)r->all_op / (double)r->checks : 0.0;
    if (o.json) {
      json_obj(&j, NULL);
      json_u64(&j, "rank", i + 1);
      json_u64(&j, "period_us", r->period_us);
      json_i64(&j, "shift_us", r->shift_us);
      json_bool(&j, "opened", ok);
      if (ok)
        json_null(&j, "error");
      else
        json_str(&j, "error", autd3_err_name(r->open_err));
      json_u64(&j, "op_checks", r->checks);
      json_u64(&j, "op_checks_all_op", r->all_op);
      json_u64(&j, "recoveries", r->recoveries);
      json_u64(&j, "cycles", r->cycles);
      json_u64(&j, "stale_cycles", r->stale);
      json_u64(&j, "lost_cycles", r->lost);
      json_end_obj(&j);
    } else if (t.csv) {
      printf("%zu,%" PRIu32 ",%" PRId32 ",%d,%s,%.4f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", i + 1, r->period_us,
             r->shift_us, ok, ok ? "" : autd3_err_name(r->open_err), ret, r->recoveries, r->cycles, r->stale, r->lost);
    } else {
      printf("%-4zu %9" PRIu32 " %8" PRId32 " %6s %9.1f%% %8" PRIu64 " %8" PRIu64 " %8" PRIu64 "  %s\n", i + 1, r->period_us,
             r->shift_us, ok ? "yes" : "no", 100.0 * ret, r->recoveries, r->stale, r->lost,
             ok ? "" : autd3_err_name(r->open_err));
    }
  }
  const bool any = n > 0 && res[0].open_err == AUTD3_OK;
  char best[512] = "";
  if (any)
    snprintf(best, sizeof best, "autd3-perftest --link %s --interface %s --devices %" PRIu64 " --cycle-us %" PRIu32 " --shift-us %" PRId32,
             t.link, o.interface, t.devices, res[0].period_us, res[0].shift_us);
  if (o.json) {
    json_end_arr(&j);
    if (any)
      json_str(&j, "perftest", best);
    else
      json_null(&j, "perftest");
    json_end_obj(&j);
    json_finish(&j);
  }
  if (!any) {
    fprintf(stderr, TOOL " synctune: no setting opened (first error: %s)\n", n ? res[0].why : "none");
    return EXIT_NO_DEVICE;
  }
  if (!o.json)
    printf("%sbest: %s\n", t.csv ? "# " : "\n", best);
  return EXIT_OK;
}
