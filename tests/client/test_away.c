/*
 * A device away (docs/reliability.md "Stale inputs: a device away" and "A
 * fault costs only its device"), over testlink (client_fixture.h), which
 * reports per-device validity and can make one device's inputs stale while it
 * takes no frame (cut off) or takes them (its answers alone lost), freeze it
 * or power-cycle it without evidence. Stale budget: timeout_cycles 4 x
 * max_resync_rounds 2 = 8 cycles. The device model's own counters prove what
 * each device executed.
 */
#include <stdio.h>

#include "client/client_fixture.h"

enum { BUDGET_TIMEOUT = 4, BUDGET_ROUNDS = 2, BUDGET = BUDGET_TIMEOUT * BUDGET_ROUNDS };

static autd3_client_t *open_n(size_t n) {
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.timeout_cycles = BUDGET_TIMEOUT;
  cfg.max_resync_rounds = BUDGET_ROUNDS;
  return fx_open_testlink(n, &cfg);
}

static uint64_t executed(uint16_t d) { return fx_tl_last->devs[d].counters.executed; }
static uint64_t resets_run(uint16_t d) { return fx_tl_last->devs[d].counters.resets; }

/* Stream n frames, at most 8 in flight; before frame `at`, `fault` runs.
 * Per device: how many each outcome. */
typedef struct {
  size_t executed[4], not_executed[4], unknown[4];
  size_t failed;
  char timeout_msg[256]; /* the first TIMEOUT's message */
} tally_t;

static void stream(autd3_client_t *c, size_t n, size_t at, void (*fault)(void), tally_t *t) {
  enum { W = 8 };
  autd3_request_t *win[W];
  size_t head = 0, len = 0;
  size_t nd = autd3_client_num_devices(c);
  autd3_frame_t f;
  ASSERT_OK(autd3_frame_xor_hash(&f, 0, (const uint8_t[]){1, 2, 1, 2}, 4));
  for (size_t i = 0; i <= n; i++) {
    if (len == W || (i == n && len > 0)) {
      while (len > 0 && (len == W || i == n)) {
        autd3_response_t r;
        autd3_err_t e = autd3_request_wait_for(win[head], 10000, &r);
        ASSERT_TRUE(e != AUTD3_E_PENDING && e != AUTD3_E_INVALID_HANDLE);
        if (e != AUTD3_OK) {
          t->failed++;
          if (e == AUTD3_E_TIMEOUT && !t->timeout_msg[0]) snprintf(t->timeout_msg, sizeof t->timeout_msg, "%s", autd3_last_error());
          ASSERT_TRUE(e == AUTD3_E_OUTCOME_UNKNOWN || e == AUTD3_E_TIMEOUT || e == AUTD3_E_DEVICE_RESET);
        }
        for (size_t d = 0; d < nd && d < 4; d++) {
          t->executed[d] += r.outcome[d] == AUTD3_OUTCOME_EXECUTED;
          t->not_executed[d] += r.outcome[d] == AUTD3_OUTCOME_NOT_EXECUTED;
          t->unknown[d] += r.outcome[d] == AUTD3_OUTCOME_UNKNOWN;
          ASSERT_TRUE(r.outcome[d] != AUTD3_OUTCOME_NONE);
        }
        head = (head + 1) % W;
        len--;
        if (i < n) break;
      }
    }
    if (i == n) break;
    if (i == at && fault) fault();
    ASSERT_OK(autd3_client_send(c, &f, &win[(head + len) % W]));
    len++;
  }
}

/* Wait (bounded) until the link has run `k` more cycles. */
static void cycles(uint64_t k) {
  uint64_t until = atomic_load(&fx_tl.cycles) + k;
  for (int i = 0; i < 100000 && atomic_load(&fx_tl.cycles) < until; i++) autd3__sleep_ns(50000);
}

/* End device d's outage and wait (bounded) until the link ran 3 cycles more. */
static void outage_over(uint16_t d) {
  atomic_store(&fx_tl.away_left[d], 0);
  cycles(3);
}

static autd3_client_device_status_t status(autd3_client_t *c, uint16_t d) {
  autd3_client_device_status_t st;
  ASSERT_OK(autd3_client_device_status(c, d, &st));
  return st;
}

/* A checked frame, retried (bounded) until it succeeds: the device is back in the stream. */
static void until_ok(autd3_client_t *c) {
  autd3_frame_t f = autd3_frame_simple(AUTD3_CMD_NOP);
  autd3_err_t e = AUTD3_E_TIMEOUT;
  for (int i = 0; i < 200 && e != AUTD3_OK; i++) e = autd3_client_send_checked(c, &f, NULL);
  ASSERT_OK(e);
}

/* An outage lasts until the test ends it (outage_over): however slowly a
 * loaded host streams, the device is still away when the test looks. */
#define FOREVER 0x40000000u

static void cut_off_dev1(void) { atomic_store(&fx_tl.away_left[1], FOREVER); }

/* Two devices; 60 frames with `fault` at the 10th; device 1 is AWAY then, and
 * back (its outage over). *executed0 / *resets0: device 1's counters before. */
static autd3_client_t *away_and_back(void (*fault)(void), tally_t *t, uint64_t *executed0, uint64_t *resets0) {
  autd3_client_t *c = open_n(2);
  *executed0 = executed(1);
  *resets0 = resets_run(1);
  stream(c, 60, 10, fault, t);
  ASSERT_EQ(status(c, 1).state, AUTD3_CLIENT_DEVICE_AWAY);
  outage_over(1);
  return c;
}

/* Device 1 of 3 cut off for 200 frames (many budgets): 0 and 2 lose nothing;
 * 1 goes AWAY, is not re-established, runs exactly what it was reported to,
 * and rejoins. */
TEST(cut_off_device_costs_the_others_nothing) {
  enum { N = 300 };
  autd3_client_t *c = open_n(3);
  uint64_t ex0[3], rs0[3];
  for (uint16_t d = 0; d < 3; d++) ex0[d] = executed(d), rs0[d] = resets_run(d);
  tally_t t = {0};
  stream(c, N, 100, cut_off_dev1, &t);
  fprintf(stderr, "device 1: executed %zu, not %zu, unknown %zu\n", t.executed[1], t.not_executed[1], t.unknown[1]);
  for (uint16_t d = 0; d < 3; d += 2) {
    ASSERT_EQ(t.executed[d], N);
    ASSERT_EQ(executed(d) - ex0[d], N);
    ASSERT_EQ(status(c, d).resets, 0);
    ASSERT_EQ(status(c, d).aways, 0);
  }
  ASSERT_GE(t.unknown[1] + t.not_executed[1], 1);
  ASSERT_GE(t.not_executed[1], 1); /* staged while it was away: not sent to it */
  autd3_client_device_status_t st = status(c, 1);
  ASSERT_EQ(st.aways, 1);
  autd3_link_device_info_t info;
  ASSERT_OK(autd3_link_device_info(autd3_client_link(c), 1, &info));
  ASSERT_GE(info.stale_cycles, BUDGET);
  ASSERT_EQ(st.resets, 0);
  /* it ran exactly the frames reported EXECUTED (it received nothing while cut off) */
  ASSERT_EQ(executed(1) - ex0[1], t.executed[1]);
  outage_over(1);
  until_ok(c);
  ASSERT_EQ(status(c, 1).state, AUTD3_CLIENT_DEVICE_READY);
  ASSERT_EQ(status(c, 1).resets, 0);
  ASSERT_EQ(resets_run(1), rs0[1]); /* never a Reset: its state kept */
  ASSERT_CLOSE_OK(c);
}

/* A checked NOP succeeds; device 1 was never reset (client and device agree), and the client closes. */
static void nop_then_close_kept(autd3_client_t *c, uint64_t resets0) {
  autd3_frame_t f = autd3_frame_simple(AUTD3_CMD_NOP);
  ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
  ASSERT_EQ(status(c, 1).resets, 0);
  ASSERT_EQ(resets_run(1), resets0);
  ASSERT_CLOSE_OK(c);
}

/* Cut off: on its return it has not run the frame its tx image kept, so it
 * rejoins only after its ack stood still for the budget: its tx image stays
 * as it was for at least that many cycles after its return (the testlink
 * records when each device's image changes), and the frames staged while it
 * was away were not sent to it (NOT_EXECUTED, TIMEOUT, "away"). */
TEST(cut_off_device_rejoins_after_the_quiet_budget) {
  autd3_client_t *c = open_n(2);
  uint64_t rs0 = resets_run(1);
  tally_t t = {0};
  stream(c, 60, 10, cut_off_dev1, &t);
  ASSERT_EQ(status(c, 1).state, AUTD3_CLIENT_DEVICE_AWAY);
  ASSERT_GE(t.not_executed[1], 1);
  ASSERT_CONTAINS(t.timeout_msg, "device 1:");
  ASSERT_CONTAINS(t.timeout_msg, "away");
  uint64_t back = atomic_load(&fx_tl.cycles); /* its inputs are valid from the next cycle on */
  outage_over(1);
  until_ok(c);
  ASSERT_EQ(status(c, 1).state, AUTD3_CLIENT_DEVICE_READY);
  uint64_t changed = atomic_load(&fx_tl.tx_changed_at[1]);
  fprintf(stderr, "device 1 back at cycle %llu, its image first changed at %llu\n", (unsigned long long)back,
          (unsigned long long)changed);
  ASSERT_GE(changed, back + BUDGET);
  nop_then_close_kept(c, rs0);
}

static void answers_lost_dev1(void) {
  atomic_store(&fx_tl.away_takes[1], true);
  atomic_store(&fx_tl.away_left[1], FOREVER);
}

/* Its answers alone lost: it ran the frame its tx image kept, so it rejoins
 * at its first valid cycle; the frames in flight at the budget are UNKNOWN
 * (it did run them), none is run twice. */
TEST(device_whose_answers_were_lost_rejoins_at_once) {
  uint64_t ex0, rs0;
  tally_t t = {0};
  autd3_client_t *c = away_and_back(answers_lost_dev1, &t, &ex0, &rs0);
  ASSERT_EQ(status(c, 1).state, AUTD3_CLIENT_DEVICE_READY);
  /* it ran what was reported EXECUTED, all the UNKNOWN ones (it took every frame sent to it), and the NOP */
  uint64_t before = executed(1);
  nop_then_close_kept(c, rs0);
  ASSERT_GE(t.unknown[1], 1);
  ASSERT_EQ(before - ex0, t.executed[1] + t.unknown[1]);
}

static void reboot_while_away_dev1(void) {
  atomic_store(&fx_tl.away_left[1], FOREVER);
  atomic_store(&fx_tl.reboot[1], true);
}

/* A reboot while away (no link evidence: the ack 0xFF tells): that device,
 * and it alone, is re-established. */
TEST(device_rebooted_while_away_is_reestablished_alone) {
  autd3_client_t *c = open_n(2);
  tally_t t = {0};
  stream(c, 60, 10, reboot_while_away_dev1, &t);
  outage_over(1);
  until_ok(c);
  fx_wait_device_ready(c, 1, 1);
  ASSERT_EQ(status(c, 0).resets, 0);
  ASSERT_EQ(t.executed[0], 60);
  ASSERT_CLOSE_OK(c);
}

static void chain_cut_off(void) {
  atomic_store(&fx_tl.away_left[0], FOREVER);
  atomic_store(&fx_tl.away_left[1], FOREVER);
}

/* Every device stale: every one goes AWAY, requests complete (sent to nobody,
 * NOT_EXECUTED), nobody is re-established, all rejoin. */
TEST(whole_chain_away_completes_requests_and_rejoins) {
  autd3_client_t *c = open_n(2);
  uint64_t ex0[2] = {executed(0), executed(1)};
  tally_t t = {0};
  stream(c, 200, 10, chain_cut_off, &t);
  for (uint16_t d = 0; d < 2; d++) {
    ASSERT_GE(t.not_executed[d], 1);
    ASSERT_EQ(executed(d) - ex0[d], t.executed[d]);
  }
  outage_over(0);
  outage_over(1);
  until_ok(c);
  for (uint16_t d = 0; d < 2; d++) {
    ASSERT_EQ(status(c, d).resets, 0);
    ASSERT_EQ(status(c, d).aways, 1);
  }
  ASSERT_CLOSE_OK(c);
}

/* AWAY holding the frame it is due to run (it missed only that one), then it
 * answers but runs nothing: renumbering could make that frame pass for a new
 * one, so after the quiet budget it is given up on (re-established). */
TEST(away_device_that_answers_but_runs_nothing_is_given_up) {
  autd3_client_t *c = open_n(2);
  autd3_frame_t f = autd3_frame_simple(AUTD3_CMD_NOP);
  ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
  atomic_store(&fx_tl.frozen[1], true);
  atomic_store(&fx_tl.away_left[1], FOREVER);
  autd3_response_t r;
  ASSERT_ERR(autd3_client_send_checked(c, &f, &r), AUTD3_E_OUTCOME_UNKNOWN);
  ASSERT_EQ(r.outcome[0], AUTD3_OUTCOME_EXECUTED);
  ASSERT_EQ(r.outcome[1], AUTD3_OUTCOME_UNKNOWN);
  ASSERT_EQ(status(c, 1).state, AUTD3_CLIENT_DEVICE_AWAY);
  outage_over(1);
  cycles(2 * BUDGET);
  autd3_client_device_status_t st = status(c, 1);
  ASSERT_EQ(st.resets, 1);
  ASSERT_EQ(st.state, AUTD3_CLIENT_DEVICE_RECOVERING);
  atomic_store(&fx_tl.frozen[1], false);
  fx_wait_device_ready(c, 1, 1);
  ASSERT_OK(autd3_client_send_checked(c, &f, NULL));
  ASSERT_CLOSE_OK(c);
}

/* autd3_link_cycle_devices() over a link that reports per device (testlink):
 * a device's validity next to the cycle's; without a report, every device as
 * rx_valid says; a report outside such a call does nothing. */
TEST(cycle_devices_reports_validity_per_device) {
  autd3_geometry_t *g = fx_geometry(3);
  autd3_link_option_t o = fx_testlink_option();
  autd3_link_t *l = NULL;
  ASSERT_OK(autd3_link_open(&o, g, &l));
  autd3_geometry_free(g);
  static uint8_t tx[3 * AUTD3_TX_FRAME_BYTES], rx[3 * AUTD3_RX_FRAME_BYTES];
  bool valid = false, dev[3] = {false, false, false};
  ASSERT_OK(autd3_link_cycle_devices(l, tx, rx, &valid, dev));
  ASSERT_TRUE(valid && dev[0] && dev[1] && dev[2]);
  atomic_store(&fx_tl.away_left[1], 1); /* device 1's inputs stale, reported so */
  ASSERT_OK(autd3_link_cycle_devices(l, tx, rx, &valid, dev));
  ASSERT_TRUE(!valid && dev[0] && !dev[1] && dev[2]);
  fx_tl.stale_left = 1; /* the whole cycle stale, no report: every device as rx_valid */
  ASSERT_OK(autd3_link_cycle_devices(l, tx, rx, &valid, dev));
  ASSERT_TRUE(!valid && !dev[0] && !dev[1] && !dev[2]);
  ASSERT_OK(autd3_link_cycle_devices(l, tx, rx, &valid, dev));
  ASSERT_TRUE(valid && dev[0] && dev[1] && dev[2]);
  const bool none[3] = {false, false, false};
  autd3_link_report_inputs(l, none); /* outside a cycle_devices call: nothing */
  bool plain = false;
  ASSERT_OK(autd3_link_cycle(l, tx, rx, &plain)); /* the plain cycle ignores a report */
  ASSERT_TRUE(plain);
  ASSERT_OK(autd3_link_cycle_devices(l, tx, rx, &valid, dev));
  ASSERT_TRUE(valid && dev[0] && dev[1] && dev[2]);
  autd3_link_close(l);
}
