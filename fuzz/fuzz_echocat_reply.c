/*
 * Fuzz target for echocat's receive path (src/link/echocat/ecat.c): whatever
 * arrives on the wire is parsed and matched against the frame echocat sent.
 * The reply is copied into a heap buffer of exactly its length so that
 * AddressSanitizer catches any read past it.
 *
 * Input: byte 0 selects one of the frames echocat sends (bring-up broadcast,
 * per-slave reads, the cyclic output and read frames), the rest is the
 * received frame. Seeds in fuzz/corpus/echocat_reply/ are those frames as
 * answered by autd3-emu.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "link/echocat/ecat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t build(ecat_frame_t *f, uint8_t which) {
  static const uint8_t mac[6] = {0x02, 1, 2, 3, 4, 5};
  autd3__ecat_frame_init(f, mac, (uint8_t)(which * 37));
  switch (which % 4) {
  case 0: /* count + reset */
    autd3__ecat_dg_add(f, ECAT_BWR, 0, REG_ALCTL, NULL, 2);
    autd3__ecat_dg_add(f, ECAT_BRD, 0, REG_TYPE, NULL, 2);
    break;
  case 1: /* per-slave EEPROM status + data */
    for (int k = 0; k < 5; k++)
      autd3__ecat_dg_add(f, ECAT_FPRD, (uint16_t)(0x1001 + k), REG_EEPCTL, NULL, 14);
    break;
  case 2: /* outputs of two devices */
    autd3__ecat_dg_add(f, ECAT_LWR, 0, 0, NULL, 1252);
    break;
  default: /* the read frame */
    autd3__ecat_dg_add(f, ECAT_FRMW, 0x1001, REG_DCSYS, NULL, 8);
    autd3__ecat_dg_add(f, ECAT_LRD, 1252, 0, NULL, 4);
    autd3__ecat_dg_add(f, ECAT_BRD, 0, REG_ALSTAT, NULL, 2);
    break;
  }
  return autd3__ecat_frame_finish(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  static ecat_frame_t f;
  size_t wire = build(&f, data[0]);
  size_t len = size - 1;
  uint8_t *rx = malloc(len ? len : 1);
  if (!rx)
    return 0;
  memcpy(rx, data + 1, len);
  ecat_dg_t dg[64];
  int n = autd3__ecat_parse(rx, len, dg, 64);
  if (n > 0) {
    int m = n < 64 ? n : 64;
    for (int i = 0; i < m; i++) /* every reported datagram lies inside the frame */
      if ((size_t)dg[i].off + dg[i].len + 2 > len)
        abort();
  }
  if (autd3__ecat_reply_matches(&f, wire, rx, len, dg)) {
    for (int i = 0; i < f.ndg; i++)
      if ((size_t)dg[i].off + dg[i].len + 2 > len)
        abort();
  }
  free(rx);
  return 0;
}
