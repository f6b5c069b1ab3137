/*
 * autd3-eo-soak: the exactly-once harness (exactly_once.h) for a duration,
 * over echocat against autd3-emu. Run by scripts/soak.sh inside autd3-netns
 * ($AUTD3_TEST_IFNAME, $AUTD3_EMU_CONTROL). Schedule (docs/reliability.md):
 * frame loss P from the start; every U s (first at U/2) device 1 is unplugged
 * for 200 ms and re-plugged; every C s (first at 50 s, so a 60-s run has one)
 * a power cycle, alternating device 1 and device 0 (the DC reference).
 *
 *   autd3-eo-soak --interface IF [--seconds 3600] [--loss 0.01]
 *                 [--unplug-every 30] [--power-cycle-every 120] [--devices 2]
 *
 * Prints the per-device summary and a markdown table row; exit 0 when every
 * device is exact, 1 otherwise, 2 for usage/open errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/autd3.h"
#include "harness/emuctl.h"
#include "reliability/exactly_once.h"

typedef struct {
  double loss;
  uint64_t unplug_ns, cycle_ns;
  uint64_t next_unplug, replug_at, next_cycle;
  unsigned cycles_done, unplugs_done;
  uint16_t devices;
} soak_t;

static void ctl(const char *cmd) {
  char r[256];
  if (autd3_emuctl(cmd, r, sizeof r) != 0) fprintf(stderr, "autd3-eo-soak: %s: %s\n", cmd, r);
}

static void schedule(void *vs, size_t i, uint64_t el) {
  soak_t *s = vs;
  if (i == 0 && s->loss > 0) {
    char cmd[64];
    snprintf(cmd, sizeof cmd, "drop %g", s->loss);
    ctl(cmd);
  }
  if (s->unplug_ns && el >= s->next_unplug && s->replug_at == 0) {
    ctl(s->devices > 1 ? "unplug 1" : "unplug 0");
    s->replug_at = el + 200000000ull;
    s->next_unplug += s->unplug_ns;
    s->unplugs_done++;
  }
  if (s->replug_at && el >= s->replug_at) {
    ctl("replug");
    s->replug_at = 0;
  }
  if (s->cycle_ns && el >= s->next_cycle) {
    char cmd[32];
    snprintf(cmd, sizeof cmd, "power-cycle %u", s->devices > 1 ? (s->cycles_done % 2 == 0 ? 1u : 0u) : 0u);
    ctl(cmd);
    s->next_cycle += s->cycle_ns;
    s->cycles_done++;
  }
}

int main(int argc, char **argv) {
  const char *ifname = getenv("AUTD3_TEST_IFNAME");
  double seconds = 3600, loss = 0.01, unplug = 30, cyc = 120;
  unsigned devices = 2;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "autd3-eo-soak: %s needs a value\n", a);
      return 2;
    }
    i++;
    if (!strcmp(a, "--interface")) ifname = v;
    else if (!strcmp(a, "--seconds")) seconds = atof(v);
    else if (!strcmp(a, "--loss")) loss = atof(v);
    else if (!strcmp(a, "--unplug-every")) unplug = atof(v);
    else if (!strcmp(a, "--power-cycle-every")) cyc = atof(v);
    else if (!strcmp(a, "--devices")) devices = (unsigned)atoi(v);
    else {
      fprintf(stderr, "autd3-eo-soak: unknown option %s\n", a);
      return 2;
    }
  }
  if (!ifname || seconds <= 0 || loss < 0 || loss > 1 || devices < 1 || devices > 128) {
    fprintf(stderr, "usage: autd3-eo-soak --interface IF [--seconds S] [--loss P] [--unplug-every S] "
                    "[--power-cycle-every S] [--devices N]\n");
    return 2;
  }
  autd3_geometry_t *g = NULL;
  if (autd3_geometry_create(devices, NULL, &g) != AUTD3_OK) return 2;
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_ECHOCAT);
  autd3_link_option_ethercat(&o)->interface = ifname;
  autd3_client_t *c = NULL;
  if (autd3_client_open(g, &o, NULL, &c) != AUTD3_OK) {
    fprintf(stderr, "autd3-eo-soak: open: %s\n", autd3_last_error());
    return 2;
  }
  soak_t s = {.loss = loss, .unplug_ns = (uint64_t)(unplug * 1e9), .cycle_ns = (uint64_t)(cyc * 1e9),
              .devices = (uint16_t)devices};
  s.next_unplug = s.unplug_ns / 2;
  s.next_cycle = 50000000000ull < s.cycle_ns ? 50000000000ull : s.cycle_ns;
  eo_config_t cfg = {.duration_ns = (uint64_t)(seconds * 1e9), .wait_ms = 20000, .drain = eo_drain_emuctl,
                     .fault = schedule, .fault_ctx = &s, .name = "soak"};
  eo_result_t res;
  eo_run(c, &cfg, &res);
  ctl("drop 0");
  autd3_err_t close_err = autd3_client_close(c);
  if (close_err != AUTD3_OK) fprintf(stderr, "soak: close: %s: %s\n", autd3_err_name(close_err), autd3_last_error());
  eo_finish(&cfg, &res);
  eo_print(&cfg, &res);
  printf("\n| seconds | loss | unplugs | power cycles | sent | completed | DEVICE_RESET | OUTCOME_UNKNOWN | other errors |");
  for (unsigned d = 0; d < devices; d++) printf(" dev %u executed / doubles / unaccounted |", d);
  printf("\n|---|---|---|---|---|---|---|---|---|");
  for (unsigned d = 0; d < devices; d++) printf("---|");
  printf("\n| %.0f | %g | %u | %u | %llu | %llu | %llu | %llu | %llu |", seconds, loss, s.unplugs_done, s.cycles_done,
         (unsigned long long)res.sent, (unsigned long long)res.completed_ok, (unsigned long long)res.err_device_reset,
         (unsigned long long)res.err_outcome_unknown,
         (unsigned long long)(res.err_timeout + res.err_link + res.err_closed + res.err_other + res.send_errors +
                              res.wait_hung));
  for (unsigned d = 0; d < devices; d++)
    printf(" %llu / %llu / %llu |", (unsigned long long)res.dev[d].executed_log, (unsigned long long)res.dev[d].doubles,
           (unsigned long long)res.dev[d].unaccounted);
  printf("\n");
  char why[256];
  bool ok = eo_ok(&res, why, sizeof why);
  printf("soak: %s%s\n", ok ? "EXACT" : "NOT EXACT: ", ok ? "" : why);
  autd3_geometry_free(g);
  return ok && close_err == AUTD3_OK ? 0 : 1;
}
