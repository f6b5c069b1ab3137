/* The public API's contract beyond single functions: the layout a C++
 * translation unit sees (tests/api/layout.cpp), and the link-driver helpers
 * every link relies on (link_driver.h). */
#include <stdalign.h>
#include <stddef.h>
#include <string.h>

#include "autd3/autd3.h"
#include "autd3/link_driver.h"
#include "autd3/remote_server.h"
#include "core/error_context.h"
#include "harness/test.h"

#if AUTD3_TEST_HAVE_CXX
void autd3_test_layout_cxx(size_t out[16]);
#endif

TEST(cxx_layout_matches_c) {
#if AUTD3_TEST_HAVE_CXX
  size_t cxx[16];
  autd3_test_layout_cxx(cxx);
  ASSERT_EQ(cxx[0], sizeof(struct autd3_link));
  ASSERT_EQ(cxx[1], alignof(struct autd3_link));
  ASSERT_EQ(cxx[2], offsetof(struct autd3_link, cycles));
  ASSERT_EQ(cxx[3], offsetof(struct autd3_link, lost_cycles));
  ASSERT_EQ(cxx[4], offsetof(struct autd3_link, device_resets));
  ASSERT_EQ(cxx[5], offsetof(struct autd3_link, device_resets_any));
  ASSERT_EQ(cxx[6], sizeof(autd3_link_option_t));
  ASSERT_EQ(cxx[7], sizeof(autd3_link_status_t));
  ASSERT_EQ(cxx[8], AUTD3_LINK_OPTION_SIZE(autd3_echocat_option_t));
  ASSERT_EQ(cxx[9], sizeof(autd3_client_config_t));
  ASSERT_EQ(cxx[10], sizeof(autd3_remote_server_option_t));
  ASSERT_EQ(cxx[11], sizeof(autd3_remote_server_option_t));
  ASSERT_EQ(cxx[12], offsetof(struct autd3_link, header_size_));
  ASSERT_EQ(cxx[13], offsetof(struct autd3_link, measured));
  ASSERT_EQ(cxx[14], offsetof(struct autd3_link, device_stale));
  ASSERT_EQ(cxx[15], offsetof(struct autd3_link, device_recoveries_));
#else
  SKIP("no C++ compiler found at configure time");
#endif
}

/* A minimal link: cycles answer valid, lost or stale as told, no state checker. */
typedef struct fake_link {
  struct autd3_link hdr;
  int next; /* 0 valid, 1 stale, 2 lost */
} fake_link_t;

static autd3_err_t fake_cycle(struct autd3_link *l, const uint8_t *tx, uint8_t *rx, bool *rx_valid) {
  (void)tx;
  fake_link_t *f = (fake_link_t *)l;
  memset(rx, 0, (size_t)l->num_devices * AUTD3_RX_FRAME_BYTES);
  *rx_valid = f->next == 0;
  autd3_link_count_cycle(l, *rx_valid, f->next == 2);
  return AUTD3_OK;
}
static void fake_close(struct autd3_link *l) { (void)l; }
static const autd3_link_vtable_t fake_vt = {.cycle = fake_cycle, .check_state = NULL, .close = fake_close};

/* A link that cannot observe its devices reports UNKNOWN, never OP: the
 * zero-filled status a checker-less link returns must not read as healthy. */
TEST(no_state_checker_reports_unknown) {
  fake_link_t f;
  autd3_link_init(&f.hdr, &fake_vt, AUTD3_LINK_REMOTE, 3);
  autd3_link_status_t st;
  memset(&st, 0xAB, sizeof st);
  ASSERT_OK(autd3_link_check_state(&f.hdr, &st));
  ASSERT_EQ(st.num_devices, 3);
  for (int d = 0; d < 3; d++) {
    ASSERT_EQ(st.state[d], AUTD3_DEVICE_UNKNOWN);
    ASSERT_NE(st.state[d], AUTD3_DEVICE_OP);
  }
  ASSERT_EQ(st.recoveries, 0);
}

/* autd3_link_count_cycle(): a lost cycle is also stale; the counts add up.
 * (Every link reports through it, so this is checked here once, not per link.) */
TEST(count_cycle_lost_is_stale) {
  fake_link_t f;
  autd3_link_init(&f.hdr, &fake_vt, AUTD3_LINK_REMOTE, 2);
  uint8_t tx[2 * AUTD3_TX_FRAME_BYTES] = {0}, rx[2 * AUTD3_RX_FRAME_BYTES];
  bool valid;
  const int pattern[] = {0, 1, 2, 0, 2, 1, 0};
  for (size_t i = 0; i < sizeof pattern / sizeof pattern[0]; i++) {
    f.next = pattern[i];
    ASSERT_OK(autd3_link_cycle(&f.hdr, tx, rx, &valid));
    ASSERT_EQ(valid, pattern[i] == 0);
  }
  autd3_link_stats_t s;
  autd3_link_stats(&f.hdr, &s);
  ASSERT_EQ(s.cycles, 7);
  ASSERT_EQ(s.stale_cycles, 4);
  ASSERT_EQ(s.lost_cycles, 2);
}

/* The statistics the links report samples of (link_driver.h autd3_link_report_*): link.c counts them once for
 * every link. Exchanges: count, total, worst; phase: the window decides an excursion, both ways, and the worst
 * |deviation| is kept; counts from elsewhere (Remote) add up with a lost cycle also stale. */
TEST(reported_samples_are_counted) {
  fake_link_t f;
  autd3_link_init(&f.hdr, &fake_vt, AUTD3_LINK_REMOTE, 2);
  autd3_link_stats_t s;
  autd3_link_stats(&f.hdr, &s);
  ASSERT_EQ(s.measured, AUTD3_LINK_MEASURES_STALE); /* nothing declared: only stale is known */
  autd3_link_report_exchange(&f.hdr, 100);
  autd3_link_report_exchange(&f.hdr, 300);
  autd3_link_report_phase(&f.hdr, 10, 50, 100);   /* inside */
  autd3_link_report_phase(&f.hdr, -50, 50, 100);  /* exactly `early` before: still inside */
  autd3_link_report_phase(&f.hdr, -51, 50, 100);  /* one ns more: the interval before */
  autd3_link_report_phase(&f.hdr, 100, 50, 100);  /* at the next edge: the interval after */
  autd3_link_report_phase(&f.hdr, -700, 1000, 1000);
  autd3_link_add_counts(&f.hdr, 3, 1, 2, 650);
  autd3_link_add_counts(&f.hdr, 0, 2, 0, 5); /* lost without stale: still stale */
  autd3_link_stats(&f.hdr, &s);
  ASSERT_EQ(s.measured, AUTD3_LINK_MEASURES_STALE | AUTD3_LINK_MEASURES_EXCHANGE | AUTD3_LINK_MEASURES_PHASE);
  ASSERT_EQ(s.exchanges, 2);
  ASSERT_EQ(s.exchange_ns_total, 400);
  ASSERT_EQ(s.worst_exchange_ns, 300);
  ASSERT_EQ(s.phase_excursions, 2 + 2);
  ASSERT_EQ(s.worst_phase_deviation_ns, 700);
  ASSERT_EQ(s.stale_cycles, 3 + 2);
  ASSERT_EQ(s.lost_cycles, 1 + 2);
  autd3_link_set_measured(&f.hdr, AUTD3_LINK_MEASURES_LOST);
  autd3_link_stats(&f.hdr, &s);
  ASSERT_NE(s.measured & AUTD3_LINK_MEASURES_LOST, 0);
  ASSERT_EQ(s.measured & AUTD3_LINK_MEASURES_DC_TIME, 0);
  autd3_link_report_dc_time(&f.hdr, 1000, 5000);
  autd3_link_report_dc_time(&f.hdr, 2000, 6001); /* the last pair, as one */
  autd3_link_stats(&f.hdr, &s);
  ASSERT_NE(s.measured & AUTD3_LINK_MEASURES_DC_TIME, 0);
  ASSERT_EQ(s.dc_sample_host_ns, 2000);
  ASSERT_EQ(s.dc_sample_time_ns, 6001);
}

/* Per device: the stale count follows the validity the link reports (or the cycle's, when it reports none),
 * and the recoveries are derived from consecutive state checks. */
typedef struct dev_link {
  struct autd3_link hdr;
  bool valid[4];
  uint8_t state[4];
} dev_link_t;
static autd3_err_t dev_cycle(struct autd3_link *l, const uint8_t *tx, uint8_t *rx, bool *rx_valid) {
  (void)tx;
  dev_link_t *f = (dev_link_t *)l;
  memset(rx, 0, (size_t)l->num_devices * AUTD3_RX_FRAME_BYTES);
  *rx_valid = f->valid[0] && f->valid[1] && f->valid[2];
  autd3_link_report_inputs(l, f->valid);
  autd3_link_count_cycle(l, *rx_valid, false);
  return AUTD3_OK;
}
static autd3_err_t dev_check(struct autd3_link *l, autd3_link_status_t *out) {
  dev_link_t *f = (dev_link_t *)l;
  memcpy(out->state, f->state, l->num_devices);
  out->measured = AUTD3_LINK_STATUS_STATES;
  return AUTD3_OK;
}
static const autd3_link_vtable_t dev_vt = {.cycle = dev_cycle, .check_state = dev_check, .close = fake_close};

TEST(per_device_stale_and_recoveries) {
  dev_link_t f;
  memset(&f, 0, sizeof f);
  autd3_link_init(&f.hdr, &dev_vt, AUTD3_LINK_ECHOCAT, 3);
  uint8_t tx[3 * AUTD3_TX_FRAME_BYTES] = {0}, rx[3 * AUTD3_RX_FRAME_BYTES];
  bool valid;
  f.valid[0] = f.valid[2] = true;
  ASSERT_OK(autd3_link_cycle(&f.hdr, tx, rx, &valid)); /* device 1 stale */
  ASSERT_FALSE(valid);
  f.valid[1] = true;
  ASSERT_OK(autd3_link_cycle(&f.hdr, tx, rx, &valid));
  ASSERT_TRUE(valid);
  autd3_link_device_info_t di;
  ASSERT_OK(autd3_link_device_info(&f.hdr, 1, &di));
  ASSERT_EQ(di.stale_cycles, 1);
  ASSERT_EQ(di.measured & (AUTD3_LINK_MEASURES_ESC_COUNTERS | AUTD3_LINK_MEASURES_DC), 0); /* no register access */
  ASSERT_OK(autd3_link_device_info(&f.hdr, 0, &di));
  ASSERT_EQ(di.stale_cycles, 0);
  ASSERT_ERR(autd3_link_device_info(&f.hdr, 3, &di), AUTD3_E_INVALID_ARGUMENT);
  /* states: 0 OP throughout; 2 LOST, OP, SAFE-OP, OP: two recoveries; 1 UNKNOWN in between does not count */
  const uint8_t seq[4][3] = {{AUTD3_DEVICE_OP, AUTD3_DEVICE_OP, AUTD3_DEVICE_LOST},
                             {AUTD3_DEVICE_OP, AUTD3_DEVICE_UNKNOWN, AUTD3_DEVICE_OP},
                             {AUTD3_DEVICE_OP, AUTD3_DEVICE_OP, AUTD3_DEVICE_SAFE_OP},
                             {AUTD3_DEVICE_OP, AUTD3_DEVICE_OP, AUTD3_DEVICE_OP}};
  autd3_link_status_t st;
  for (int k = 0; k < 4; k++) {
    memcpy(f.state, seq[k], 3);
    ASSERT_OK(autd3_link_check_state(&f.hdr, &st));
  }
  ASSERT_NE(st.measured & AUTD3_LINK_STATUS_DEVICE_RECOVERIES, 0);
  ASSERT_EQ(st.device_recoveries[0], 0);
  ASSERT_EQ(st.device_recoveries[1], 0);
  ASSERT_EQ(st.device_recoveries[2], 2);
}

/* A link built against the 0.3.0 header (it calls the exported autd3_link_init, its object ends at
 * device_resets_any): libautd3 never touches a byte past that, and says what it cannot know. */
TEST(old_link_header_is_left_alone) {
  union {
    struct autd3_link hdr;
    uint8_t bytes[sizeof(struct autd3_link)];
  } u;
  memset(&u, 0xA5, sizeof u);
  const size_t old = offsetof(struct autd3_link, device_resets_any) + sizeof(uint32_t);
  (autd3_link_init)(&u.hdr, &fake_vt, AUTD3_LINK_REMOTE, 2);
  autd3_link_set_measured(&u.hdr, AUTD3_LINK_MEASURES_PHASE);
  autd3_link_report_exchange(&u.hdr, 5);
  autd3_link_report_phase(&u.hdr, 5, 1, 1);
  autd3_link_add_counts(&u.hdr, 1, 1, 1, 1);
  autd3_link_report_dc_time(&u.hdr, 1, 1);
  autd3_link_device_info_t di;
  ASSERT_OK(autd3_link_device_info(&u.hdr, 1, &di));
  ASSERT_EQ(di.stale_cycles, 1); /* the link's own: it cannot tell devices apart */
  for (size_t i = old; i < sizeof u.bytes; i++)
    if (u.bytes[i] != 0xA5) TEST_FAIL_("byte %zu past a 0.3.0 header was written", i);
  autd3_link_stats_t s;
  autd3_link_stats(&u.hdr, &s);
  ASSERT_EQ(s.measured, AUTD3_LINK_MEASURES_STALE | AUTD3_LINK_MEASURES_LOST);
  ASSERT_EQ(s.exchanges, 0);
  ASSERT_EQ(s.stale_cycles, 1);
}

/* The state values are ABI (abi/libautd3.abi); UNKNOWN must stay zero. */
TEST(device_state_values) {
  ASSERT_EQ(AUTD3_DEVICE_UNKNOWN, 0);
  ASSERT_NE(AUTD3_DEVICE_OP, 0);
}

/* Context goes in front of the thread's message, in place (the message buffer
 * is the one autd3_last_error() returns), and a long message is cut, never overrun. */
TEST(error_context_prefixes_the_last_error) {
  autd3_set_error(AUTD3_E_IO, "connection refused");
  ASSERT_ERR(autd3__error_context(AUTD3_E_LINK, "opening %s", "eth0"), AUTD3_E_LINK);
  ASSERT_STREQ(autd3_last_error(), "opening eth0: connection refused");
  autd3__error_context(AUTD3_E_LINK, "client open");
  ASSERT_STREQ(autd3_last_error(), "client open: opening eth0: connection refused");
  char big[600];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  autd3_set_error(AUTD3_E_IO, "%s", big);
  autd3__error_context(AUTD3_E_IO, "ctx");
  const char *m = autd3_last_error();
  ASSERT_EQ(strncmp(m, "ctx: xxx", 8), 0);
  ASSERT_EQ(strlen(m), 511);
}
