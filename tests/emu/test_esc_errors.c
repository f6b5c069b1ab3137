/*
 * The ESC error counters of the emulator (src/emulation/ethercat/errors.c, esc.c): what an
 * injected fault records where (the damaged port, the forwarded counters of
 * the devices the marked frame passes), saturation at 0xFF, the lost-link
 * counts of unplug / power-cycle, and the write-to-clear groups of a real
 * ESC (any RX error counter write clears 0x0300-0x030B; 0x030C and 0x030D
 * on their own; any lost-link write clears 0x0310-0x0313).
 */
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "harness/test.h"

static uint64_t g_now = 1000000000ull;

#define chain(n) emu_chain((n), g_now)

/* The 20 counter bytes of device k, read over the wire (APRD). */
static void counters(autd3_emu_t *e, uint16_t k, uint8_t out[0x14]) {
  memset(out, 0xEE, 0x14);
  ASSERT_EQ(dg(e, &g_now, APRD, (uint16_t)(0u - k), 0x0300, out, 0x14), 1);
}

TEST(crc_marks_the_downstream_path) {
  autd3_emu_t *e = chain(3);
  uint8_t c[3][0x14];
  for (int k = 0; k < 3; k++) {
    counters(e, (uint16_t)k, c[k]);
    for (int i = 0; i < 0x14; i++) ASSERT_EQ(c[k][i], 0); /* power-on: all zero */
  }
  ASSERT_OK(autd3_emu_inject_errors(e, 1, AUTD3_EMU_ERR_CRC, 0, 5));
  for (int k = 0; k < 3; k++) counters(e, (uint16_t)k, c[k]);
  ASSERT_EQ(c[1][0x00], 5);  /* device 1 port 0: invalid frames */
  ASSERT_EQ(c[2][0x08], 5);  /* device 2 received the marked frame on port 0 */
  ASSERT_EQ(c[1][0x09], 5);  /* and on the way back devices 1 and 0 on port 1 */
  ASSERT_EQ(c[0][0x09], 5);
  ASSERT_EQ(c[0][0x08], 0);  /* device 0 saw it before the damage */
  ASSERT_EQ(c[2][0x09], 0);  /* the last device loops back internally: nothing enters its port 1 */
  ASSERT_EQ(c[1][0x08], 0);  /* the damaging port counts an invalid frame, not a forwarded one */
  /* damage on the way back at device 1 (its port 1) passes device 0 only */
  ASSERT_OK(autd3_emu_inject_errors(e, 1, AUTD3_EMU_ERR_CRC, 1, 2));
  for (int k = 0; k < 3; k++) counters(e, (uint16_t)k, c[k]);
  ASSERT_EQ(c[1][0x02], 2);
  ASSERT_EQ(c[0][0x09], 7);
  ASSERT_EQ(c[1][0x09], 5);
  autd3_emu_destroy(e);
}

TEST(each_kind_has_its_register_and_saturates) {
  autd3_emu_t *e = chain(2);
  ASSERT_OK(autd3_emu_inject_errors(e, 0, AUTD3_EMU_ERR_PHY, 1, 3));
  ASSERT_OK(autd3_emu_inject_errors(e, 0, AUTD3_EMU_ERR_FWD, 1, 4));
  ASSERT_OK(autd3_emu_inject_errors(e, 0, AUTD3_EMU_ERR_PU, 0, 6));
  ASSERT_OK(autd3_emu_inject_errors(e, 0, AUTD3_EMU_ERR_PDI, 0, 7));
  ASSERT_OK(autd3_emu_inject_errors(e, 0, AUTD3_EMU_ERR_LOST_LINK, 1, 200));
  ASSERT_OK(autd3_emu_inject_errors(e, 0, AUTD3_EMU_ERR_LOST_LINK, 1, 200));
  uint8_t c[0x14];
  counters(e, 0, c);
  ASSERT_EQ(c[0x03], 3);
  ASSERT_EQ(c[0x09], 4);
  ASSERT_EQ(c[0x0C], 6);
  ASSERT_EQ(c[0x0D], 7);
  ASSERT_EQ(c[0x11], 0xFF); /* stops at 0xFF */
  ASSERT_ERR(autd3_emu_inject_errors(e, 2, AUTD3_EMU_ERR_PU, 0, 1), AUTD3_E_INVALID_OPTION);
  ASSERT_ERR(autd3_emu_inject_errors(e, 0, AUTD3_EMU_ERR_CRC, 4, 1), AUTD3_E_INVALID_OPTION);
  autd3_emu_destroy(e);
}

static void fill(autd3_emu_t *e) {
  ASSERT_OK(autd3_emu_inject_errors(e, 0, AUTD3_EMU_ERR_CRC, 1, 1));
  ASSERT_OK(autd3_emu_inject_errors(e, 0, AUTD3_EMU_ERR_PHY, 0, 2));
  ASSERT_OK(autd3_emu_inject_errors(e, 0, AUTD3_EMU_ERR_FWD, 0, 3));
  ASSERT_OK(autd3_emu_inject_errors(e, 0, AUTD3_EMU_ERR_PU, 0, 4));
  ASSERT_OK(autd3_emu_inject_errors(e, 0, AUTD3_EMU_ERR_PDI, 0, 5));
  ASSERT_OK(autd3_emu_inject_errors(e, 0, AUTD3_EMU_ERR_LOST_LINK, 0, 6));
}

TEST(writes_clear_per_group) {
  autd3_emu_t *e = chain(1);
  uint8_t c[0x14], one = 0x55;
  /* one byte written at 0x0305 (port 2's RX error counter) clears every RX error counter */
  fill(e);
  ASSERT_EQ(dg(e, &g_now, APWR, 0, 0x0305, &one, 1), 1);
  counters(e, 0, c);
  for (int i = 0; i < 0x0C; i++) ASSERT_EQ(c[i], 0);
  ASSERT_EQ(c[0x0C], 4);
  ASSERT_EQ(c[0x0D], 5);
  ASSERT_EQ(c[0x10], 6);
  /* the processing unit counter on its own, the written value is not stored */
  ASSERT_EQ(dg(e, &g_now, APWR, 0, 0x030C, &one, 1), 1);
  counters(e, 0, c);
  ASSERT_EQ(c[0x0C], 0);
  ASSERT_EQ(c[0x0D], 5);
  ASSERT_EQ(dg(e, &g_now, APWR, 0, 0x030D, &one, 1), 1);
  counters(e, 0, c);
  ASSERT_EQ(c[0x0D], 0);
  ASSERT_EQ(c[0x10], 6);
  /* any lost-link counter clears the four */
  ASSERT_EQ(dg(e, &g_now, APWR, 0, 0x0313, &one, 1), 1);
  counters(e, 0, c);
  ASSERT_EQ(c[0x10], 0);
  /* SOEM's reset (BWR of 8 zero bytes at 0x0300) clears the RX group only */
  fill(e);
  uint8_t z[8] = {0};
  ASSERT_EQ(dg(e, &g_now, BWR, 0, 0x0300, z, 8), 1);
  counters(e, 0, c);
  ASSERT_EQ(c[0x02], 0);
  ASSERT_EQ(c[0x08], 0);
  ASSERT_EQ(c[0x0C], 4);
  ASSERT_EQ(c[0x10], 6);
  autd3_emu_destroy(e);
}

TEST(unplug_and_power_cycle_count_lost_links) {
  autd3_emu_t *e = chain(3);
  ASSERT_OK(autd3_emu_unplug(e, 2));
  autd3_emu_replug(e);
  uint8_t c[0x14];
  counters(e, 1, c);
  ASSERT_EQ(c[0x11], 1); /* device 1 lost port 1 */
  counters(e, 2, c);
  ASSERT_EQ(c[0x10], 1); /* device 2 lost port 0 */
  ASSERT_OK(autd3_emu_power_cycle(e, 1, g_now));
  counters(e, 0, c);
  ASSERT_EQ(c[0x11], 1);
  counters(e, 2, c);
  ASSERT_EQ(c[0x10], 2);
  counters(e, 1, c);
  ASSERT_EQ(c[0x11], 0); /* its own counters restart */
  autd3_emu_destroy(e);
}
