/*
 * autd3 synctune: one setting (docs/tools.md "synctune"). Open a client with the setting's SYNC0 period and
 * shift (bring-up, DC alignment, OP), let it run the warm-up, then for the dwell: the load (none, stop-and-wait
 * or streaming XorHash frames, as autd3-perftest sends them) on a thread, and every poll interval a state check
 * and a look at the link statistics. A *drop* is a lost cycle, a check with a device out of OP, or a frame that
 * failed; the first one's time from the start of the dwell is kept. Public API only.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "link_flags.h"
#include "synctune.h"
#include "tool_os.h"

int64_t tune_shift_ns(const tune_result_t *r) { return (int64_t)r->period_us * 1000 * r->shift_percent / 100; }

/* The load during the dwell. */
typedef struct load {
  tool_thread_t th;
  autd3_client_t *cl;
  tune_mode_t mode;
  uint32_t inflight;
  atomic_bool stop;
  _Atomic uint64_t ok, failed;
  _Atomic uint64_t first_fail_ns; /* monotonic time of the first failed frame, 0 = none */
} load_t;

static void count(load_t *ld, autd3_err_t e) {
  if (e == AUTD3_OK) {
    atomic_fetch_add(&ld->ok, 1);
    return;
  }
  atomic_fetch_add(&ld->failed, 1);
  uint64_t zero = 0;
  atomic_compare_exchange_strong(&ld->first_fail_ns, &zero, tool_now_ns());
}

static void *load_main(void *arg) {
  load_t *ld = arg;
  autd3_frame_t f;
  if (autd3_frame_xor_hash_bench(&f, 0, AUTD3_XOR_HASH_MAX_DATA) != AUTD3_OK)
    return NULL;
  autd3_request_t *win[AUTD3_MAX_INFLIGHT];
  uint32_t head = 0, len = 0;
  while (!atomic_load(&ld->stop) || len > 0) {
    if (ld->mode == TUNE_STOP_AND_WAIT) {
      autd3_response_t r;
      count(ld, autd3_client_send_checked(ld->cl, &f, &r));
      continue;
    }
    if (!atomic_load(&ld->stop) && len < ld->inflight) { /* streaming: keep the window full, then wait for the oldest */
      autd3_err_t e = autd3_client_send(ld->cl, &f, &win[(head + len) % AUTD3_MAX_INFLIGHT]);
      if (e == AUTD3_OK) {
        len++;
        continue;
      }
      count(ld, e);
      if (e == AUTD3_E_CLOSED || e == AUTD3_E_LINK)
        atomic_store(&ld->stop, true);
      if (len == 0)
        continue;
    }
    autd3_response_t r;
    autd3_err_t e = autd3_request_wait(win[head], &r);
    count(ld, e == AUTD3_OK || e == AUTD3_E_DEVICE ? autd3_response_check(&r, NULL, NULL) : e);
    head = (head + 1) % AUTD3_MAX_INFLIGHT;
    len--;
  }
  return NULL;
}

/* The capture file of one setting: FILE.pcap -> FILE-<period>us-<shift>pct.pcap (each setting opens its link). */
static const char *capture_name(const tune_opts_t *t, const tune_result_t *r, char *buf, size_t cap) {
  if (t->capture == NULL)
    return NULL;
  const char *dot = strrchr(t->capture, '.'), *slash = strrchr(t->capture, '/');
  size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - t->capture) : strlen(t->capture);
  snprintf(buf, cap, "%.*s-%uus-%dpct%s", (int)stem, t->capture, (unsigned)r->period_us, (int)r->shift_percent,
           t->capture + stem);
  return buf;
}

static bool all_op(const autd3_link_status_t *st) {
  for (uint16_t d = 0; d < st->num_devices; d++)
    if (st->state[d] != AUTD3_DEVICE_OP)
      return false;
  return st->num_devices > 0;
}

/* What the dwell measured, from the statistics at its start (a) and end (b). */
static void dwell_deltas(const autd3_link_stats_t *a, const autd3_link_stats_t *b, tune_result_t *r) {
  r->measured = b->measured;
  r->cycles = b->cycles - a->cycles;
  r->stale = b->stale_cycles - a->stale_cycles;
  r->lost = b->lost_cycles - a->lost_cycles;
  r->phase_excursions = b->phase_excursions - a->phase_excursions;
  r->worst_phase_deviation_ns = b->worst_phase_deviation_ns;
  r->exchanges = b->exchanges - a->exchanges;
  r->exchange_ns = b->exchange_ns_total - a->exchange_ns_total;
  uint64_t host = b->dc_sample_host_ns - a->dc_sample_host_ns;
  r->drift_known = (b->measured & AUTD3_LINK_MEASURES_DC_TIME) && a->dc_sample_host_ns && host > 0;
  if (r->drift_known)
    r->dc_drift_ppm =
        ((double)(int64_t)(b->dc_sample_time_ns - a->dc_sample_time_ns) - (double)host) / (double)host * 1e6;
}

/* The dwell: the load on its thread, a state check and a look at the statistics every poll interval. */
static void dwell(const tune_opts_t *t, autd3_client_t *cl, tune_result_t *r) {
  autd3_link_t *l = autd3_client_link(cl);
  autd3_link_stats_t a, b;
  autd3_link_status_t st;
  uint64_t rec0 = autd3_link_check_state(l, &st) == AUTD3_OK ? st.recoveries : 0, rec1 = rec0;
  autd3_link_stats(l, &a);
  static load_t ld;
  memset(&ld, 0, sizeof ld);
  ld.cl = cl;
  ld.mode = t->mode;
  ld.inflight = (uint32_t)t->inflight;
  const uint64_t t0 = tool_now_ns(), end = t0 + t->dwell_ns;
  bool loaded = t->mode != TUNE_IDLE && tool_thread_start(&ld.th, load_main, &ld);
  uint64_t lost_seen = a.lost_cycles;
  r->first_drop_ns = -1;
  do {
    uint64_t next = tool_now_ns() + t->poll_ns;
    while (tool_now_ns() < next && tool_now_ns() < end)
      tool_sleep_ms(t->poll_ns < 10000000u ? (uint32_t)(t->poll_ns / 1000000u) + 1 : 10);
    bool ok = autd3_link_check_state(l, &st) == AUTD3_OK; /* a failed check is not one that saw OP */
    bool op = ok && all_op(&st);
    r->checks++;
    r->all_op += op;
    if (ok)
      rec1 = st.recoveries;
    autd3_link_stats(l, &b);
    uint64_t ff = atomic_load(&ld.first_fail_ns);
    if (r->first_drop_ns < 0 && (!op || b.lost_cycles != lost_seen || ff != 0))
      r->first_drop_ns = (int64_t)((ff != 0 && ff < tool_now_ns() ? ff : tool_now_ns()) - t0);
    lost_seen = b.lost_cycles;
  } while (tool_now_ns() < end);
  autd3_link_stats(l, &b);
  r->elapsed_ns = tool_now_ns() - t0;
  atomic_store(&ld.stop, true);
  if (loaded)
    tool_thread_join(&ld.th);
  r->recoveries = rec1 - rec0;
  r->frames_ok = atomic_load(&ld.ok);
  r->frames_failed = atomic_load(&ld.failed);
  dwell_deltas(&a, &b, r);
}

void tune_run_one(const tune_opts_t *t, tune_result_t *r) {
  char cap[1024];
  autd3_tool_link_flags_t f = {.link = t->link, .cycle_us = r->period_us, .interface = t->interface, .twincat_port = -1,
                               .capture = capture_name(t, r, cap, sizeof cap)};
  autd3_link_option_t lo;
  if (!autd3_tool_link_option(&f, &lo, r->why, sizeof r->why)) {
    r->open_err = AUTD3_E_INVALID_OPTION;
    return;
  }
  autd3_link_option_ethercat(&lo)->sync0_shift_ns = (int32_t)tune_shift_ns(r);
  autd3_client_t *cl = NULL;
  r->open_err = cli_client_open(&lo, t->devices, &cl);
  if (r->open_err != AUTD3_OK) {
    snprintf(r->why, sizeof r->why, "%s", autd3_last_error());
    return;
  }
  for (uint64_t w = 0; w < t->warmup_ns; w += 10000000u)
    tool_sleep_ms(10);
  dwell(t, cl, r);
  autd3_err_t e = autd3_client_close(cl);
  if (e != AUTD3_OK && r->why[0] == 0)
    snprintf(r->why, sizeof r->why, "close: %s", autd3_last_error());
}
