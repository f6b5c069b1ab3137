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
void autd3_test_layout_cxx(size_t out[12]);
#endif

TEST(cxx_layout_matches_c) {
#if AUTD3_TEST_HAVE_CXX
  size_t cxx[12];
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
