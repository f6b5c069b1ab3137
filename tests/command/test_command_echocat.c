/*
 * The output state through the network emulator: a client on echocat over a
 * veth pair (autd3-netns, autd3-emu) sends a focus; the emulator's control
 * command `output K` shows each device's drives, which must be the helper's;
 * after close every transducer is at intensity 0.
 */
#include <stdlib.h>
#include <string.h>

#include "autd3/autd3.h"
#include "harness/emu_chain.h"
#include "harness/emuctl.h"
#include "harness/test.h"

static char g_reply[8192];

/* `output dev` → the 249 drives from its reply. */
static void read_output(uint16_t dev, autd3_drive_t out[AUTD3_NUM_TRANSDUCERS]) {
  char cmd[32];
  snprintf(cmd, sizeof cmd, "output %u", (unsigned)dev);
  int rc = autd3_emuctl(cmd, g_reply, sizeof g_reply);
  if (rc != 0) TEST_FAIL_("emuctl '%s': %s", cmd, g_reply);
  const char *d = strstr(g_reply, "drives ");
  ASSERT_TRUE(d != NULL);
  d += strlen("drives ");
  ASSERT_EQ(strlen(d), 4 * AUTD3_NUM_TRANSDUCERS);
  for (int t = 0; t < AUTD3_NUM_TRANSDUCERS; t++) {
    unsigned p = 0, i = 0;
    ASSERT_EQ(sscanf(d + 4 * t, "%2x%2x", &p, &i), 2);
    out[t].phase = (uint8_t)p;
    out[t].intensity = (uint8_t)i;
  }
  ASSERT_CONTAINS(g_reply, "error 0x00");
}

TEST(focus_then_close_over_echocat) {
  in_netns_kind(AUTD3_LINK_ECHOCAT, "focus_then_close_over_echocat", 2, NULL, false);
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, NULL, &g));
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_ECHOCAT);
  autd3_link_option_ethercat(&o)->interface = getenv("AUTD3_TEST_IFNAME");
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, NULL, &c));

  autd3_gain_t focus = autd3_gain_focus(180.0f, 60.0f, 120.0f);
  autd3_frame_buffer_t *buf = calloc(1, sizeof *buf);
  autd3_frame_t fr;
  ASSERT_OK(autd3_gain_frame(&focus, g, buf, &fr));
  ASSERT_OK(autd3_client_send_checked(c, &fr, NULL));
  for (uint16_t dev = 0; dev < 2; dev++) {
    autd3_drive_t got[AUTD3_NUM_TRANSDUCERS], want[AUTD3_NUM_TRANSDUCERS];
    read_output(dev, got);
    ASSERT_OK(autd3_gain_calc(&focus, g, dev, want));
    for (int t = 0; t < AUTD3_NUM_TRANSDUCERS; t++) {
      ASSERT_EQ(got[t].phase, want[t].phase);
      ASSERT_EQ(got[t].intensity, 255);
    }
  }
  ASSERT_ERR(autd3_emuctl("output 2", g_reply, sizeof g_reply), 1);

  ASSERT_OK(autd3_client_close(c));
  for (uint16_t dev = 0; dev < 2; dev++) {
    autd3_drive_t got[AUTD3_NUM_TRANSDUCERS];
    read_output(dev, got);
    for (int t = 0; t < AUTD3_NUM_TRANSDUCERS; t++) ASSERT_EQ(got[t].intensity, 0);
  }
  free(buf);
  autd3_geometry_free(g);
}
