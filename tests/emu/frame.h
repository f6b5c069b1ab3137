/*
 * A tiny EtherCAT frame builder for the emulator's unit tests: build a frame
 * of datagrams, run it through an in-process chain, read data and WKCs back.
 */
#ifndef AUTD3_TESTS_EMU_FRAME_H
#define AUTD3_TESTS_EMU_FRAME_H

#include <stdint.h>
#include <string.h>

#include "emulation/ethercat/emu.h"
#include "harness/test.h"

enum { NOP, APRD, APWR, APRW, FPRD, FPWR, FPRW, BRD, BWR, BRW, LRD, LWR, LRW, ARMW, FRMW };

typedef struct {
  uint8_t b[1600];
  size_t len;
  size_t last; /* offset of the last datagram, 0 = none */
} fr_t;

static inline void fr_init(fr_t *f) {
  memset(f, 0, sizeof *f);
  memset(f->b, 0xFF, 6);                      /* broadcast */
  memset(f->b + 6, 0x01, 6);                  /* SOEM's source MAC */
  f->b[12] = 0x88;
  f->b[13] = 0xA4;
  f->len = 16;
}

/* Append a datagram; returns its offset (header at off, data at off+10). */
static inline size_t fr_add(fr_t *f, uint8_t cmd, uint16_t adp, uint16_t ado, const void *data, uint16_t len) {
  size_t off = f->len;
  if (f->last) f->b[f->last + 7] |= 0x80; /* M: more datagrams follow */
  uint8_t *h = f->b + off;
  h[0] = cmd;
  h[1] = (uint8_t)(off & 0xFF);
  h[2] = (uint8_t)adp;
  h[3] = (uint8_t)(adp >> 8);
  h[4] = (uint8_t)ado;
  h[5] = (uint8_t)(ado >> 8);
  h[6] = (uint8_t)len;
  h[7] = (uint8_t)((len >> 8) & 0x07);
  h[8] = h[9] = 0;
  if (data) memcpy(h + 10, data, len);
  else memset(h + 10, 0, len);
  h[10 + len] = h[11 + len] = 0;
  f->len += 12u + len;
  f->last = off;
  uint16_t el = (uint16_t)(f->len - 16);
  f->b[14] = (uint8_t)el;
  f->b[15] = (uint8_t)(0x10 | ((el >> 8) & 0x07));
  return off;
}

static inline uint16_t fr_wkc(const fr_t *f, size_t off) {
  uint16_t len = (uint16_t)((f->b[off + 6] | (f->b[off + 7] << 8)) & 0x7FF);
  return (uint16_t)(f->b[off + 10 + len] | (f->b[off + 11 + len] << 8));
}
static inline uint8_t *fr_data(fr_t *f, size_t off) { return f->b + off + 10; }
static inline uint16_t fr_u16(fr_t *f, size_t off) { return (uint16_t)(fr_data(f, off)[0] | (fr_data(f, off)[1] << 8)); }
static inline uint32_t fr_u32(fr_t *f, size_t off) {
  uint8_t *d = fr_data(f, off);
  return (uint32_t)d[0] | ((uint32_t)d[1] << 8) | ((uint32_t)d[2] << 16) | ((uint32_t)d[3] << 24);
}
static inline uint64_t fr_u64(fr_t *f, size_t off) {
  uint8_t *d = fr_data(f, off);
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | d[i];
  return v;
}

/* One-datagram helpers returning the WKC; data in/out through buf. */
static inline uint16_t dg(autd3_emu_t *emu, uint64_t *now, uint8_t cmd, uint16_t adp, uint16_t ado, void *buf,
                          uint16_t len) {
  fr_t f;
  fr_init(&f);
  size_t off = fr_add(&f, cmd, adp, ado, buf, len);
  *now += 100000; /* 100 µs between frames */
  if (!autd3_emu_process(emu, f.b, f.len, *now)) return 0xFFFF;
  if (buf) memcpy(buf, fr_data(&f, off), len);
  return fr_wkc(&f, off);
}

/* A chain of n devices with the default configuration, created at time now. */
static inline autd3_emu_t *emu_chain(uint16_t n, uint64_t now) {
  autd3_emu_config_t c = autd3_emu_config_default();
  c.devices = n;
  autd3_emu_t *emu = NULL;
  ASSERT_OK(autd3_emu_create(&c, now, &emu));
  return emu;
}

#endif
