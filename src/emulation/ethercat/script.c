/*
 * Canned master traffic for the emulator's own fuzz target, benchmark and
 * tests: the frames SOEM (as used by the AUTD3 link) sends to take a chain to
 * OP and in every cycle (SOEM v2.0.0 ethercatconfig.c / ethercatdc.c as the AUTD3 SOEM link drives them),
 * reduced to what the emulator needs: station addresses, SM2/SM3, FMMU0/1,
 * SAFE-OP, one output image, OP; cyclic LRD(inputs)+FRMW then LWR segments
 * of at most two devices (1252 bytes).
 */
#include <string.h>

#include "emulation/ethercat/emu.h"

static size_t frame1(uint8_t *f, uint8_t cmd, uint16_t adp, uint16_t ado, const uint8_t *d, uint16_t len) {
  memset(f, 0xFF, 6);
  memset(f + 6, 0x01, 6); /* SOEM's source MAC */
  f[12] = 0x88;
  f[13] = 0xA4;
  uint16_t el = (uint16_t)(12 + len);
  f[14] = (uint8_t)el;
  f[15] = (uint8_t)(0x10 | (el >> 8));
  uint8_t *h = f + 16;
  memset(h, 0, 12u + len);
  h[0] = cmd;
  h[2] = (uint8_t)adp;
  h[3] = (uint8_t)(adp >> 8);
  h[4] = (uint8_t)ado;
  h[5] = (uint8_t)(ado >> 8);
  h[6] = (uint8_t)len;
  h[7] = (uint8_t)(len >> 8);
  if (d) memcpy(h + 10, d, len);
  return 28u + len;
}

void autd3_emu_script_op(uint16_t n, autd3_emu_emit_fn emit, void *ctx) {
  uint8_t f[AUTD3_EMU_SCRIPT_FRAME];
  for (uint16_t i = 0; i < n; i++) {
    uint16_t a = (uint16_t)(0x1001 + i);
    uint8_t v[2] = {(uint8_t)a, (uint8_t)(a >> 8)};
    emit(ctx, f, frame1(f, 2 /* APWR */, (uint16_t)(0 - i), 0x0010, v, 2));
    uint8_t sm2[8] = {0x00, 0x18, 0x72, 0x02, 0x64, 0, 1, 0}, sm3[8] = {0x80, 0x1F, 2, 0, 0x20, 0, 1, 0};
    emit(ctx, f, frame1(f, 5 /* FPWR */, a, 0x0810, sm2, 8));
    emit(ctx, f, frame1(f, 5, a, 0x0818, sm3, 8));
    uint32_t lo = 626u * i, li = 626u * n + 2u * i;
    uint8_t f0[16] = {(uint8_t)lo, (uint8_t)(lo >> 8), (uint8_t)(lo >> 16), 0, 0x72, 0x02, 0, 7, 0x00, 0x18, 0, 2, 1};
    uint8_t f1[16] = {(uint8_t)li, (uint8_t)(li >> 8), (uint8_t)(li >> 16), 0, 2, 0, 0, 7, 0x80, 0x1F, 0, 1, 1};
    emit(ctx, f, frame1(f, 5, a, 0x0600, f0, 16));
    emit(ctx, f, frame1(f, 5, a, 0x0610, f1, 16));
  }
  uint8_t st[2] = {0x12, 0};
  emit(ctx, f, frame1(f, 8 /* BWR */, 0, 0x0120, st, 2));
  st[0] = 0x04;
  emit(ctx, f, frame1(f, 8, 0, 0x0120, st, 2));
  for (uint16_t i = 0; i < n; i++) {
    uint32_t lo = 626u * i;
    emit(ctx, f, frame1(f, 11 /* LWR */, (uint16_t)lo, (uint16_t)(lo >> 16), NULL, 626));
  }
  st[0] = 0x08;
  emit(ctx, f, frame1(f, 8, 0, 0x0120, st, 2));
}

size_t autd3_emu_script_cycle(uint16_t n, uint8_t (*frames)[AUTD3_EMU_SCRIPT_FRAME], size_t *lens, size_t max) {
  if (max == 0) return 0;
  /* frame A: LRD of all inputs + FRMW of the reference's system time */
  uint8_t *f = frames[0];
  uint32_t li = 626u * n;
  size_t len = frame1(f, 10 /* LRD */, (uint16_t)li, (uint16_t)(li >> 16), NULL, (uint16_t)(2u * n));
  f[16 + 7] |= 0x80;
  uint8_t *h = f + len;
  memset(h, 0, 20);
  h[0] = 14; /* FRMW */
  h[2] = 0x01;
  h[3] = 0x10; /* station 0x1001 */
  h[4] = 0x10;
  h[5] = 0x09; /* 0x0910 */
  h[6] = 8;
  len += 20;
  f[14] = (uint8_t)(len - 16);
  f[15] = (uint8_t)(0x10 | ((len - 16) >> 8));
  lens[0] = len;
  size_t k = 1;
  for (uint16_t i = 0; i < n && k < max; i += 2, k++) {
    uint16_t cnt = (uint16_t)(n - i >= 2 ? 2 : 1);
    uint32_t lo = 626u * i;
    lens[k] = frame1(frames[k], 11, (uint16_t)lo, (uint16_t)(lo >> 16), NULL, (uint16_t)(626u * cnt));
  }
  return k;
}
