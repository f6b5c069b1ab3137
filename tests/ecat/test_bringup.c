/* The shared EtherCAT bring-up's OP wait (src/ecat/bringup.h), driven through
 * a fake bus in memory: each fake device has an AL state and status code and
 * follows AL control as its behaviour says; one exchange is one cycle of a
 * fake clock (1 ms). No network, no timing: the driver's clock is injected. */
#include <string.h>

#include "autd3/autd3.h"
#include "autd3/link_driver.h"
#include "ecat/bringup.h"
#include "ecat/regs.h"
#include "harness/test.h"

#define N 3
#define MS 1000000ull

typedef enum { DEV_OK, DEV_REFUSES, DEV_MISSES_FIRST_REQUEST } behaviour_t;

typedef struct fake {
  uint64_t now;          /* the fake clock */
  uint32_t cycles;       /* exchanges run */
  uint32_t request_at;   /* the cycle count when OP was requested (0: not yet) */
  uint32_t requests;     /* request_op calls */
  uint32_t reads;        /* read_states calls */
  uint32_t acks[N], op_writes[N];
  uint8_t al[N];
  uint16_t code[N];
  behaviour_t how[N];
  bool missed[N];             /* DEV_MISSES_FIRST_REQUEST: the first one is gone */
  bool learn;                 /* wkc_ok = it came back (a link that learns the counter) */
  bool flap;                  /* in OP, the counter changes every cycle */
  uint32_t lose_cycle;        /* this cycle's frame is lost (0: none) */
  uint32_t fail_cycle;        /* this cycle's exchange fails (0: none) */
  uint32_t confirm_lies;      /* state reads that still find device 0 in SAFE-OP */
  uint32_t low_until;         /* before this cycle, the counter is one short (every device still in OP) */
} fake_t;

static fake_t F;

static void fake_up(void) {
  memset(&F, 0, sizeof F);
  F.now = 5000 * MS;
  for (int k = 0; k < N; k++)
    F.al[k] = AL_SAFEOP;
}

static void to_op(int k) {
  switch (F.how[k]) {
  case DEV_REFUSES: /* e.g. its outputs' configuration is not what it expects */
    F.al[k] = AL_SAFEOP | AL_ERROR, F.code[k] = 0x001D;
    break;
  case DEV_MISSES_FIRST_REQUEST:
    if (!F.missed[k]) {
      F.missed[k] = true;
      break;
    }
    F.al[k] = AL_OP;
    break;
  case DEV_OK:
    F.al[k] = AL_OP;
    break;
  }
}

static autd3_err_t f_exchange(void *c, autd3_link_ecat_cycle_t *out) {
  (void)c;
  F.cycles++;
  F.now += MS;
  if (F.cycles == F.fail_cycle)
    return autd3_set_error(AUTD3_E_LINK, "fake: the socket went away");
  uint16_t wkc = 0;
  bool all_op = true;
  for (int k = 0; k < N; k++) {
    wkc = (uint16_t)(wkc + ((F.al[k] & 0x0F) == AL_OP ? 3 : 1)); /* outputs count only in OP */
    all_op &= F.al[k] == AL_OP;
  }
  if (F.flap && all_op)
    wkc = (uint16_t)(wkc - (F.cycles & 1));
  if (F.cycles < F.low_until)
    wkc--;
  out->lost = F.cycles == F.lose_cycle;
  out->wkc = out->lost ? 0 : wkc;
  out->wkc_ok = !out->lost && (F.learn || wkc == 3 * N);
  out->all_op = !out->lost && all_op;
  return AUTD3_OK;
}

static autd3_err_t f_request_op(void *c) {
  (void)c;
  F.requests++;
  F.request_at = F.cycles;
  for (int k = 0; k < N; k++)
    to_op(k);
  return AUTD3_OK;
}

static autd3_err_t f_read_states(void *c, uint16_t *al, uint16_t *code, bool *answered) {
  (void)c;
  F.reads++;
  for (int k = 0; k < N; k++)
    al[k] = F.al[k], code[k] = F.code[k], answered[k] = true;
  if (F.confirm_lies > 0) {
    F.confirm_lies--;
    al[0] = AL_SAFEOP;
  }
  return AUTD3_OK;
}

static autd3_err_t f_write_control(void *c, uint16_t dev, uint16_t v) {
  (void)c;
  if (v == (AL_SAFEOP | AL_ACK)) {
    F.acks[dev]++;
    F.al[dev] = AL_SAFEOP, F.code[dev] = 0;
  } else if (v == AL_OP) {
    F.op_writes[dev]++;
    to_op(dev);
  }
  return AUTD3_OK;
}

static uint64_t f_now(void *c) {
  (void)c;
  return F.now;
}

static const autd3_link_ecat_bringup_ops_t ops = {NULL, f_exchange, f_request_op, f_read_states, f_write_control};

static autd3_err_t run(uint32_t warmup, uint32_t timeout_ms, uint16_t *wkc) {
  const autd3_link_ecat_bringup_config_t cfg = {sizeof cfg, N, warmup, timeout_ms, "fake", "fake0"};
  return autd3__ecat_bringup_run_at(&ops, &cfg, wkc, f_now, NULL);
}

TEST(warm_up_then_op_after_stable_cycles) {
  fake_up();
  uint16_t wkc = 0;
  ASSERT_OK(run(10, 1000, &wkc));
  ASSERT_EQ(F.requests, 1);
  ASSERT_EQ(F.request_at, 11); /* after the warm-up's 10 cycles, with the 11th */
  ASSERT_EQ(F.cycles, 11 + AUTD3__ECAT_OP_STABLE_CYCLES);
  ASSERT_EQ(F.reads, 1); /* the confirming state read, nothing else */
  ASSERT_EQ(wkc, 3 * N);
  for (int k = 0; k < N; k++)
    ASSERT_EQ(F.acks[k] + F.op_writes[k], 0);
}

TEST(no_warm_up_requests_op_after_the_first_cycle) {
  fake_up();
  uint16_t wkc = 0;
  ASSERT_OK(run(0, 1000, &wkc));
  ASSERT_EQ(F.request_at, 1);
}

/* Every device in OP, but the counter never holds still: not OP. */
TEST(never_stable_times_out_naming_the_counter) {
  fake_up();
  F.learn = true;
  F.flap = true;
  uint16_t wkc = 0;
  ASSERT_ERR(run(10, 50, &wkc), AUTD3_E_STATE_TIMEOUT);
  const char *m = autd3_last_error();
  ASSERT_CONTAINS(m, "fake fake0");
  ASSERT_CONTAINS(m, "op_wait_timeout_ms = 50");
  ASSERT_CONTAINS(m, "every device reads OP");
  ASSERT_CONTAINS(m, "not stable");
  /* the timeout runs from the OP request, not from the warm-up */
  uint64_t waited = (uint64_t)(F.cycles - F.request_at) * MS;
  ASSERT_GT(waited, 50 * MS);
  ASSERT_LE(waited, 51 * MS);
  ASSERT_EQ(wkc, 0); /* untouched on failure */
}

/* A device that refuses OP: its error is acknowledged every 100 ms while no
 * cycle is good, and the failure names it with its AL status code. */
TEST(device_refusing_op_is_named_with_its_al_status_code) {
  fake_up();
  F.how[1] = DEV_REFUSES;
  uint16_t wkc = 0;
  ASSERT_ERR(run(10, 1000, &wkc), AUTD3_E_STATE_TIMEOUT);
  const char *m = autd3_last_error();
  ASSERT_CONTAINS(m, "device 1 SAFE-OP+ERROR, AL status code 0x001d (invalid output configuration)");
  ASSERT_TRUE(strstr(m, "device 0") == NULL); /* the devices in OP are not listed */
  ASSERT_TRUE(strstr(m, "device 2") == NULL);
  /* the fault happened and was acted on: acknowledged, OP asked again, once per 100 ms */
  ASSERT_GE(F.acks[1], 4);
  ASSERT_LE(F.acks[1], 5);
  ASSERT_GE(F.op_writes[1], 4);
  ASSERT_EQ(F.acks[0] + F.op_writes[0], 0);
}

/* A device that missed the OP request gets it again after 100 ms and the wait succeeds. */
TEST(missed_request_is_repeated_after_100_ms) {
  fake_up();
  F.how[2] = DEV_MISSES_FIRST_REQUEST;
  uint16_t wkc = 0;
  ASSERT_OK(run(10, 1000, &wkc));
  ASSERT_TRUE(F.missed[2]);
  ASSERT_EQ(F.op_writes[2], 1);
  ASSERT_EQ(F.op_writes[0], 0);
  ASSERT_EQ(F.cycles, 11 + 100 + AUTD3__ECAT_OP_STABLE_CYCLES);
}

/* A lost cycle in the middle of a stable run starts the count again. */
TEST(lost_cycle_restarts_the_count) {
  fake_up();
  F.lose_cycle = 11 + 3;
  uint16_t wkc = 0;
  ASSERT_OK(run(10, 1000, &wkc));
  ASSERT_EQ(F.cycles, 11 + 3 + AUTD3__ECAT_OP_STABLE_CYCLES);
}

/* The cycles looked good but a state read finds a device not in OP: count again. */
TEST(unconfirmed_op_counts_again) {
  fake_up();
  F.confirm_lies = 1;
  uint16_t wkc = 0;
  ASSERT_OK(run(10, 1000, &wkc));
  ASSERT_EQ(F.reads, 2);
  ASSERT_EQ(F.cycles, 11 + 2 * AUTD3__ECAT_OP_STABLE_CYCLES);
}

/* A link that learns its counter: a changed counter starts the count from that cycle. */
TEST(learned_counter_must_hold_for_the_stable_cycles) {
  fake_up();
  F.learn = true;
  F.low_until = 11 + 4; /* three good cycles with one counter, then another */
  uint16_t wkc = 0;
  ASSERT_OK(run(10, 1000, &wkc));
  ASSERT_EQ(wkc, 3 * N);
  ASSERT_EQ(F.cycles, 11 + 3 + AUTD3__ECAT_OP_STABLE_CYCLES);
}

TEST(cycle_error_ends_the_wait_with_it) {
  fake_up();
  F.fail_cycle = 4;
  uint16_t wkc = 0;
  ASSERT_ERR(run(10, 1000, &wkc), AUTD3_E_LINK);
  ASSERT_CONTAINS(autd3_last_error(), "socket went away");
  ASSERT_EQ(F.requests, 0);
}

TEST(step_function_rules) {
  autd3__ecat_opwait_t w;
  autd3__ecat_opwait_init(&w, 2, 100);
  const autd3_link_ecat_cycle_t good = {9, true, false, true}, lost = {0, false, true, false};
  ASSERT_EQ(autd3__ecat_opwait_step(&w, &good, 1 * MS), AUTD3__OPW_CYCLE);
  ASSERT_EQ(autd3__ecat_opwait_step(&w, &good, 2 * MS), AUTD3__OPW_CYCLE);
  ASSERT_EQ(autd3__ecat_opwait_step(&w, &good, 3 * MS), AUTD3__OPW_REQUEST_OP);
  /* no good cycle for 100 ms: a nudge, then the next one 100 ms later */
  for (uint64_t t = 4; t < 103; t++)
    ASSERT_EQ(autd3__ecat_opwait_step(&w, &lost, t * MS), AUTD3__OPW_CYCLE);
  ASSERT_EQ(autd3__ecat_opwait_step(&w, &lost, 103 * MS), AUTD3__OPW_NUDGE);
  ASSERT_EQ(autd3__ecat_opwait_step(&w, &lost, 104 * MS), AUTD3__OPW_TIMEOUT); /* > 100 ms after the request */
  /* good cycles are not nudged, and the fifth confirms */
  autd3__ecat_opwait_init(&w, 0, 1000);
  ASSERT_EQ(autd3__ecat_opwait_step(&w, &good, 0), AUTD3__OPW_REQUEST_OP);
  for (int i = 1; i < 5; i++)
    ASSERT_EQ(autd3__ecat_opwait_step(&w, &good, (uint64_t)i * 100 * MS), AUTD3__OPW_CYCLE);
  ASSERT_EQ(autd3__ecat_opwait_step(&w, &good, 500 * MS), AUTD3__OPW_CONFIRM);
  ASSERT_EQ(w.wkc, 9);
  autd3__ecat_opwait_unconfirmed(&w);
  ASSERT_EQ(w.good, 0);
}

TEST(al_names_and_codes) {
  ASSERT_STREQ(autd3__ecat_al_name(AL_SAFEOP | AL_ERROR), "SAFE-OP");
  ASSERT_STREQ(autd3__ecat_al_name(0), "NONE");
  ASSERT_STREQ(autd3__ecat_al_code_text(0x001B), "sync manager watchdog");
  ASSERT_STREQ(autd3__ecat_al_code_text(0x7777), "");
}

TEST(bad_arguments_are_refused_with_a_message) {
  fake_up();
  uint16_t wkc = 0;
  autd3_link_ecat_bringup_config_t cfg = {sizeof cfg, N, 10, 1000, "fake", "fake0"};
  autd3_link_ecat_bringup_ops_t no_request = ops;
  no_request.request_op = NULL;
  ASSERT_ERR(autd3__ecat_bringup_run(&no_request, &cfg, &wkc), AUTD3_E_INVALID_ARGUMENT);
  cfg.size = 4;
  ASSERT_ERR(autd3__ecat_bringup_run(&ops, &cfg, &wkc), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_CONTAINS(autd3_last_error(), "config.size");
  cfg.size = sizeof cfg;
  cfg.devices = 0;
  ASSERT_ERR(autd3__ecat_bringup_run(&ops, &cfg, &wkc), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_EQ(F.cycles, 0);
}

TEST(services_offer_the_bring_up_from_version_3) {
  const autd3_link_services_t *s = autd3_link_services(3);
  ASSERT_TRUE(s != NULL);
  ASSERT_GE(s->version, 3);
  ASSERT_TRUE(s->ecat_bringup == autd3__ecat_bringup_run);
  ASSERT_TRUE(s->nic_probe != NULL && s->nic_is_loopback != NULL);
  ASSERT_TRUE(autd3_link_services(2) == s);
}
