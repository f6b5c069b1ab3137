/*
 * The services table for out-of-tree links (link_driver.h
 * autd3_link_services()), the shared pacer's lateness policy, and the one
 * owner of the bus thread's RT policy. No network, no timing asserted: only
 * the order of points against the monotonic clock and the counters.
 */
#include <string.h>
#ifdef __linux__
#  include <sys/prctl.h>
#endif

#include "autd3/link_driver.h"
#include "harness/test.h"
#include "platform/rt.h"

TEST(services_versions) {
  const autd3_link_services_t *s = autd3_link_services(AUTD3_LINK_SERVICES_VERSION);
  ASSERT_TRUE(s != NULL);
  ASSERT_EQ(s->version, AUTD3_LINK_SERVICES_VERSION);
  ASSERT_EQ(s->size, sizeof *s);
  /* every member of version 1 is there */
  const void *fns[] = {(const void *)s->set_error,         (const void *)s->now_ns,
                       (const void *)s->realtime_ns,       (const void *)s->sleep_until_ns,
                       (const void *)s->sleep_ns,          (const void *)s->pacer_init,
                       (const void *)s->pacer_anchor,      (const void *)s->pacer_wait,
                       (const void *)s->thread_start,      (const void *)s->thread_join,
                       (const void *)s->thread_set_rt,     (const void *)s->nic_open,
                       (const void *)s->nic_send,          (const void *)s->nic_recv,
                       (const void *)s->nic_mac,           (const void *)s->nic_close,
                       (const void *)s->nic_list,          (const void *)s->tap_start,
                       (const void *)s->tap_foreign,       (const void *)s->tap_frames,
                       (const void *)s->tap_stop,          (const void *)s->master_guard_take,
                       (const void *)s->master_guard_release, (const void *)s->mac_format,
                       (const void *)s->foreign_master_error,
                       (const void *)s->ecat_is_autd,      (const void *)s->ecat_check_identity,
                       (const void *)s->ecat_recovery_create, (const void *)s->ecat_recovery_check,
                       (const void *)s->ecat_recovery_free, (const void *)s->autd3__ecat_dc_offset,
                       (const void *)s->autd3__ecat_dc_rebase_offset, (const void *)s->autd3__ecat_dc_sync0_restart};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
    ASSERT_TRUE(fns[i] != NULL);
  /* a newer link than this library, or version 0: NULL and a message naming both */
  ASSERT_TRUE(autd3_link_services(AUTD3_LINK_SERVICES_VERSION + 1) == NULL);
  char want[64];
  snprintf(want, sizeof want, "services version %u, this libautd3 offers 1..%u", AUTD3_LINK_SERVICES_VERSION + 1,
           AUTD3_LINK_SERVICES_VERSION);
  ASSERT_CONTAINS(autd3_last_error(), want);
  ASSERT_TRUE(autd3_link_services(0) == NULL);
  /* the members are libautd3's own: the identity check gives the shared message */
  ASSERT_ERR(s->ecat_check_identity("x", "eth9", 3, 1, 2, "NOPE"), AUTD3_E_NOT_AUTD);
  ASSERT_CONTAINS(autd3_last_error(), "x: device at position 3 on interface eth9");
  ASSERT_TRUE(s->ecat_is_autd(0x8A9, 1, "AUTD"));
  ASSERT_ERR(s->set_error(AUTD3_E_LINK, "via the table %d", 7), AUTD3_E_LINK);
  ASSERT_STREQ(autd3_last_error(), "via the table 7");
}

static void *count_up(void *arg) {
  *(int *)arg += 1;
  return NULL;
}

TEST(services_thread) {
  const autd3_link_services_t *s = autd3_link_services(AUTD3_LINK_SERVICES_VERSION);
  int v = 0;
  autd3_link_thread_t t;
  ASSERT_OK(s->thread_start(&t, count_up, &v, "svc-test"));
  s->thread_join(&t);
  ASSERT_EQ(v, 1);
}

/* Unanchored: the point is now, and the grid starts there. */
TEST(pacer_unanchored_runs_at_once) {
  const autd3_link_services_t *s = autd3_link_services(AUTD3_LINK_SERVICES_VERSION);
  autd3_link_pacer_t p;
  s->pacer_init(&p, 1000000, 0);
  uint64_t before = s->now_ns();
  uint64_t t = s->pacer_wait(&p);
  ASSERT_LE(before, t);
  ASSERT_LE(t, s->now_ns());
  ASSERT_EQ(p.next_ns, t + 1000000);
  ASSERT_EQ(atomic_load(&p.late), 0);
  ASSERT_EQ(atomic_load(&p.skipped), 0);
}

/* A point ahead: the wait returns that point, not before it, and the grid advances by one period. */
TEST(pacer_sleeps_to_the_point) {
  const autd3_link_services_t *s = autd3_link_services(AUTD3_LINK_SERVICES_VERSION);
  autd3_link_pacer_t p;
  s->pacer_init(&p, 1000000, 0);
  uint64_t at = s->now_ns() + 2000000;
  s->pacer_anchor(&p, at);
  ASSERT_EQ(s->pacer_wait(&p), at);
  ASSERT_LE(at, s->now_ns());
  ASSERT_EQ(p.next_ns, at + 1000000);
  ASSERT_EQ(atomic_load(&p.skipped), 0);
}

/* Five and a half periods late: the missed points are skipped (no burst),
 * the exchange takes the latest point not after now, on the same grid, and
 * counts as late. */
TEST(pacer_late_caller_skips_missed_points) {
  const autd3_link_services_t *s = autd3_link_services(AUTD3_LINK_SERVICES_VERSION);
  autd3_link_pacer_t p;
  const uint64_t period = 1000000;
  s->pacer_init(&p, period, 0);
  uint64_t anchor = s->now_ns() - 5 * period - period / 2;
  s->pacer_anchor(&p, anchor);
  uint64_t t = s->pacer_wait(&p);
  uint64_t after = s->now_ns();
  ASSERT_EQ((t - anchor) % period, 0);            /* on the grid */
  ASSERT_LE(t, after);                            /* not after now */
  ASSERT_GE(atomic_load(&p.skipped), 5);
  ASSERT_EQ(atomic_load(&p.skipped), (t - anchor) / period);
  ASSERT_EQ(atomic_load(&p.late), 1);
  ASSERT_GE(atomic_load(&p.max_late_ns), 5 * period + period / 2); /* against the point it was due at */
  ASSERT_EQ(p.next_ns, t + period);
}

/* The bus thread's one RT owner always asks for exact wake-ups. */
TEST(bus_thread_policy_sets_timer_slack) {
#ifdef __linux__
  ASSERT_TRUE(prctl(PR_SET_TIMERSLACK, 50000UL, 0, 0, 0) == 0);
  ASSERT_OK(autd3__bus_thread_policy(0, -1));
  ASSERT_EQ(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), 1);
#else
  SKIP("timer slack is Linux-only");
#endif
}

/* echocat has no thread of its own without a capture: its cycle runs on the
 * caller's thread, whose RT policy is the client's, so the ethercat option's
 * RT fields are refused before any I/O, naming the client's fields. */
TEST(echocat_rt_option_without_a_link_thread_refused) {
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(1, NULL, &g));
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_ECHOCAT);
  autd3_link_option_ethercat(&o)->interface = "autd3-no-such-if";
  autd3_link_option_ethercat(&o)->rt_priority = 10;
  autd3_link_t *l = NULL;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "autd3_client_config_t.rt_priority");
  ASSERT_TRUE(l == NULL);
  autd3_geometry_free(g);
}
