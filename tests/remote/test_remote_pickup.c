/*
 * The remote server's pickup (src/remote_server/bus.c, docs/remote.md "Bus thread and pacing"): after a wrapped
 * link's wait_next_cycle that reported a stage deadline (autd3_link_report_stage_deadline), the bus thread waits for
 * the next request until that deadline and takes it the moment it is published, instead of repeating the last tx;
 * past the deadline it cycles without one. And the bus thread's RT policy: refused = the link does not open.
 * The wrapped link is a scripted double registered in place of the emulator, which counts the cycles that
 * repeated a tx. Nothing here measures time: the windows are seconds (a bound) or the outcome is a count.
 */
#include <stdatomic.h>

#include "autd3/link_driver.h"
#include "harness/netns.h"
#include "platform/platform.h"
#include "remote_helpers.h"

/* ---- the scripted link: wait_next_cycle reports now + window as its stage deadline (window 0: none) ---- */

static _Atomic uint64_t window_ns;
static atomic_uint cycles, repeats, waits;

typedef struct pk {
  struct autd3_link base;
  uint8_t last[2];
  bool any;
} pk_t;

static autd3_err_t pk_wait(struct autd3_link *l) {
  atomic_fetch_add(&waits, 1);
  uint64_t w = atomic_load(&window_ns);
  if (w) autd3_link_report_stage_deadline(l, autd3__now_ns() + w);
  else autd3__sleep_ns(1000000); /* paced like a 1 ms bus, staging at once */
  return AUTD3_OK;
}

static autd3_err_t pk_cycle(struct autd3_link *l, const uint8_t *tx, uint8_t *rx, bool *valid) {
  pk_t *p = (pk_t *)l;
  if (p->any && tx[0] == p->last[0] && tx[1] == p->last[1]) atomic_fetch_add(&repeats, 1);
  p->last[0] = tx[0];
  p->last[1] = tx[1];
  p->any = true;
  atomic_fetch_add(&cycles, 1);
  for (size_t d = 0; d < l->num_devices; d++) {
    rx[2 * d] = tx[d * AUTD3_TX_FRAME_BYTES];
    rx[2 * d + 1] = tx[d * AUTD3_TX_FRAME_BYTES + 1];
  }
  *valid = true;
  autd3_link_count_cycle(l, true, false);
  return AUTD3_OK;
}

static void pk_close(struct autd3_link *l) { free(l); }
static const autd3_link_vtable_t pk_vt = {.cycle = pk_cycle, .close = pk_close, .wait_next_cycle = pk_wait};

static autd3_err_t pk_open(const autd3_link_option_t *o, const autd3_geometry_t *g, struct autd3_link **out) {
  (void)o;
  pk_t *p = calloc(1, sizeof *p);
  if (p == NULL) return AUTD3_E_NOMEM;
  autd3_link_init(&p->base, &pk_vt, AUTD3_LINK_EMULATOR, (uint16_t)autd3_geometry_num_devices(g));
  *out = &p->base;
  return AUTD3_OK;
}

static void start(srv_t *v, uint64_t window) {
  atomic_store(&window_ns, window);
  atomic_store(&cycles, 0);
  atomic_store(&repeats, 0);
  atomic_store(&waits, 0);
  ASSERT_OK(autd3_link_register(AUTD3_LINK_EMULATOR, pk_open));
  autd3_remote_server_option_t o = autd3_remote_server_option_default();
  o.devices = 1;
  srv_start_opt(v, o);
}

static autd3_link_t *open_remote(const srv_t *v) {
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_REMOTE);
  o.u.remote.address = v->addr;
  o.u.remote.pipeline = AUTD3_REMOTE_PIPELINE_OFF; /* one request per call, each answered before the next */
  o.u.remote.timeout_ms = 10000;
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(1, NULL, &g));
  autd3_link_t *l = NULL;
  ASSERT_OK(autd3_link_open(&o, g, &l));
  autd3_geometry_free(g);
  return l;
}

/* One request with tx = (seq, 0x00); its reply must echo it. */
static void request(autd3_link_t *l, uint8_t seq) {
  static uint8_t tx[AUTD3_TX_FRAME_BYTES], rx[2];
  autd3_tx_encode(tx, seq, AUTD3_CMD_NOP, NULL, 0);
  bool valid = false;
  ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
  ASSERT_TRUE(valid);
  ASSERT_EQ(rx[0], seq);
}

/* A window of 10 s: the bus thread waits for each request and carries it in the cycle it was waiting for, so the link
 * runs exactly one cycle per request and never repeats a tx (the bus thread stages at once after every wait
 * otherwise: ~1000 repeats per second). */
TEST(request_taken_during_the_stage_window) {
  srv_t v;
  start(&v, 10000000000ull);
  autd3_link_t *l = open_remote(&v);
  for (int i = 1; i <= 20; i++) {
    autd3__sleep_ns(20000000); /* the bus thread is waiting meanwhile */
    request(l, (uint8_t)i);
  }
  autd3_link_close(l);
  autd3_remote_server_stats_t st = srv_stats(&v);
  srv_stop(&v);
  ASSERT_EQ(atomic_load(&repeats), 0);
  ASSERT_EQ(atomic_load(&cycles), 20);
  ASSERT_EQ(st.bus_cycles, 20);
  ASSERT_EQ(st.requests, 20);
  ASSERT_GE(atomic_load(&waits), 20);
}

/* Two requests `gap_ns` apart through a server whose link reports a stage window of `window` (0: none); the server's
 * stats after the client closed. */
static autd3_remote_server_stats_t two_requests_apart(uint64_t window, uint64_t gap_ns) {
  srv_t v;
  start(&v, window);
  autd3_link_t *l = open_remote(&v);
  request(l, 1);
  autd3__sleep_ns(gap_ns);
  request(l, 2);
  autd3_link_close(l);
  autd3_remote_server_stats_t st = srv_stats(&v);
  srv_stop(&v);
  return st;
}

/* A window of 2 ms and no request for 300 ms: past each deadline the bus thread cycles with the last tx (the bus keeps
 * its cycle between requests), and a request afterwards is still carried and answered. */
TEST(bus_cycles_on_when_the_window_passes) {
  autd3_remote_server_stats_t st = two_requests_apart(2000000, 300000000);
  ASSERT_GT(atomic_load(&repeats), 0);
  ASSERT_EQ(st.requests, 2);
  ASSERT_GT(st.bus_cycles, 2);
}

/* No stage deadline reported: the request is taken when wait_next_cycle returns, and the bus repeats the last tx
 * between requests, as before. */
TEST(no_stage_deadline_stages_at_once) {
  autd3_remote_server_stats_t st = two_requests_apart(0, 100000000);
  ASSERT_GT(atomic_load(&repeats), 0);
  ASSERT_EQ(st.requests, 2);
}

/* The stats' CPU figures move with the bus (the threads sample them every 10 ms). */
TEST(stats_report_cpu_of_both_threads) {
  srv_t v;
  start(&v, 0);
  autd3_link_t *l = open_remote(&v);
  for (int i = 1; i <= 100; i++) request(l, (uint8_t)i);
  autd3_link_close(l);
  autd3__sleep_ns(50000000);
  autd3_remote_server_stats_t st = srv_stats(&v);
  srv_stop(&v);
  ASSERT_GE(st.bus_cycles, 100);
  ASSERT_GT(st.bus_cpu_ns, 0);
  ASSERT_GT(st.net_cpu_ns, 0);
}

/* The bus thread's RT policy is applied once by the one owner; a CPU the OS refuses fails the link's open (here at
 * create, with `devices`), naming the option and the OS's reason. */
/* Create a server of one device with the bus thread's policy (priority, cpu); its error. `why_ok` names what it means
 * that the OS granted the policy after all: the test then skips by that name. */
static autd3_err_t create_with_policy(int priority, int cpu, const char *why_ok) {
  ASSERT_OK(autd3_link_register(AUTD3_LINK_EMULATOR, pk_open));
  autd3_remote_server_option_t o = autd3_remote_server_option_default();
  o.listen = "127.0.0.1:0";
  o.log = quiet_log;
  o.devices = 1;
  o.rt_priority = priority;
  o.rt_cpu = cpu;
  autd3_remote_server_t *s = NULL;
  autd3_err_t err = autd3_remote_server_create(&o, &s);
  if (err == AUTD3_OK) {
    autd3_remote_server_destroy(s);
    SKIP("%s", why_ok);
  }
  return err;
}

TEST(rt_policy_refused_fails_the_open) {
  autd3_err_t err = create_with_policy(0, 1023, "the host has a CPU 1023");
  ASSERT_ERR(err, AUTD3_E_INVALID_ARGUMENT);
  ASSERT_CONTAINS(autd3_last_error(), "remote server bus thread: rt_priority 0 / rt_cpu 1023");
  ASSERT_CONTAINS(autd3_last_error(), "CPU 1023");
  ASSERT_ERR(create_with_policy(0, -2, "rt_cpu -2 accepted"), AUTD3_E_INVALID_OPTION);
  ASSERT_ERR(create_with_policy(100, -1, "rt_priority 100 accepted"), AUTD3_E_INVALID_OPTION);
}

/* Options of the 0.3.0 size (through log_ctx) are still accepted, the new fields taking their defaults; the exported
 * default function returns exactly that layout. */
TEST(option_of_the_0_3_size_is_accepted) {
  ASSERT_OK(autd3_link_register(AUTD3_LINK_EMULATOR, pk_open));
  autd3_remote_server_option_0_3_t old = (autd3_remote_server_option_default)();
  ASSERT_EQ(old.size, sizeof old);
  ASSERT_EQ(old.max_connections, 8);
  old.listen = "127.0.0.1:0";
  old.log = quiet_log;
  autd3_remote_server_t *s = NULL;
  ASSERT_OK(autd3_remote_server_create((const autd3_remote_server_option_t *)(const void *)&old, &s));
  autd3_remote_server_destroy(s);
}

/* SCHED_FIFO without CAP_SYS_NICE (a user namespace: its root has no capability over the host's scheduler, and
 * RLIMIT_RTPRIO is 0): the open fails with PERMISSION and the OS's reason, nothing runs without the asked policy. */
TEST(rt_priority_refused_without_cap_sys_nice) {
  autd3_test_reexec_unshare("-r", "rt_priority_refused_without_cap_sys_nice");
  autd3_err_t err = create_with_policy(80, -1, "the OS granted SCHED_FIFO 80 in a user namespace here (RLIMIT_RTPRIO)");
  ASSERT_ERR(err, AUTD3_E_PERMISSION);
  ASSERT_CONTAINS(autd3_last_error(), "remote server bus thread: rt_priority 80 / rt_cpu -1: cannot set SCHED_FIFO priority 80");
}
