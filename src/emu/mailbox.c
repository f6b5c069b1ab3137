/*
 * Optional mailbox + CoE of an emulated AUTD3 (autd3-emu --mailbox), for the
 * ESI-faithful variant (shared/reference/ethercat-for-autd3.md §9): SM0 at
 * 0x1000 and SM1 at 0x1400 (128 bytes each), CoE SDO upload (expedited,
 * normal, segmented, complete access) of the objects a master reads to learn
 * the PDO mapping; everything else is answered with an SDO abort or a
 * mailbox error. Downloads are refused: the AUTD3's PDOs are fixed.
 *
 * Called by esc.c when the master wrote SM0's last byte; the response is
 * placed in SM1 and marked full.
 */
#include <string.h>

#include "emu/emu.h"

#define MBX_OUT 0x1000
#define MBX_IN 0x1400
#define MBX_LEN 128

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v); put16(p + 2, (uint16_t)(v >> 16)); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

/* The object dictionary: value of (index, sub) into out (≤ 4 bytes, or a
 * string); returns its size, 0 = no such subindex, -1 = no such object. */
static int od_entry(const autd3_esc_t *e, uint16_t index, uint8_t sub, uint8_t *out) {
  const uint8_t *sii = e->sii;
  switch (index) {
    case 0x1000: if (sub) return 0; put32(out, 5001); return 4; /* device type: profile 5001 */
    case 0x1008: { /* device name: SII string 1 */
      if (sub) return 0;
      const uint8_t *s = sii + 0x80 + 4 + 1;
      memcpy(out, s + 1, s[0]);
      return s[0];
    }
    case 0x1018:
      if (sub == 0) { out[0] = 4; return 1; }
      if (sub > 4) return 0;
      memcpy(out, sii + 0x10 + (sub - 1) * 4, 4); /* vendor, product, revision, serial from the SII */
      return 4;
    case 0x1C00: /* SM communication types: mailbox out, mailbox in, outputs, inputs */
      if (sub == 0) { out[0] = 4; return 1; }
      if (sub > 4) return 0;
      out[0] = sub;
      return 1;
    case 0x1C12: /* SM2 PDO assignment */
      if (sub == 0) { out[0] = 2; return 1; }
      if (sub > 2) return 0;
      put16(out, (uint16_t)(0x1600 + sub - 1));
      return 2;
    case 0x1C13: /* SM3 PDO assignment */
      if (sub == 0) { out[0] = 1; return 1; }
      if (sub > 1) return 0;
      put16(out, 0x1A00);
      return 2;
    case 0x1600: case 0x1601: case 0x1A00: { /* PDO mappings: 16-bit entries */
      uint8_t n = index == 0x1600 ? 249 : index == 0x1601 ? 64 : 1;
      if (sub == 0) { out[0] = n; return 1; }
      if (sub > n) return 0;
      uint16_t obj = index == 0x1600 ? 0x7000 : index == 0x1601 ? 0x7001 : 0x6000;
      put32(out, (uint32_t)obj << 16 | (uint32_t)sub << 8 | 16);
      return 4;
    }
    default: return -1;
  }
}

/* Serialise (index, sub) or, with complete access, subindex 0 (as u8 + pad)
 * and all subindices. Returns the size, or an abort code (negative). */
static int32_t od_read(const autd3_esc_t *e, uint16_t index, uint8_t sub, bool ca, uint8_t *buf, size_t cap) {
  uint8_t v[64];
  int n = od_entry(e, index, ca ? 0 : sub, v);
  if (n < 0) return -1;                     /* object does not exist */
  if (n == 0) return -2;                    /* subindex does not exist */
  if (!ca) {
    memcpy(buf, v, (size_t)n);
    return n;
  }
  if (sub > 1) return -3;                   /* complete access starts at 0 or 1 */
  size_t len = 0;
  if (sub == 0) {
    buf[len++] = v[0];
    buf[len++] = 0; /* subindex 0 travels as 16 bits in complete access */
  }
  uint8_t count = v[0];
  if (index == 0x1000 || index == 0x1008) return -3;
  for (unsigned s = 1; s <= count; s++) {
    int m = od_entry(e, index, (uint8_t)s, v);
    if (m <= 0 || len + (size_t)m > cap) return -3;
    memcpy(buf + len, v, (size_t)m);
    len += (size_t)m;
  }
  return (int32_t)len;
}

/* Place a response (after the 6-byte mailbox header) in SM1 and mark it full. */
static void respond(autd3_esc_t *e, uint8_t type, const uint8_t *body, uint16_t len) {
  uint8_t *r = e->mem + MBX_IN;
  memset(r, 0, MBX_LEN);
  put16(r, len);
  e->mbx_counter = (uint8_t)(e->mbx_counter % 7 + 1); /* 1..7 */
  r[5] = (uint8_t)(type | (e->mbx_counter << 4));
  memcpy(r + 6, body, len);
  e->mbx_in_full = true;
}

static void abort_sdo(autd3_esc_t *e, uint16_t index, uint8_t sub, uint32_t code) {
  uint8_t b[10];
  put16(b, 2u << 12); /* an abort travels with the SDO *request* service (2), as SOEM expects */
  b[2] = 0x80;
  put16(b + 3, index);
  b[5] = sub;
  put32(b + 6, code);
  respond(e, 3, b, 10);
}

void autd3_esc_mailbox(autd3_esc_t *e) {
  const uint8_t *q = e->mem + MBX_OUT;
  uint16_t len = get16(q);
  uint8_t type = q[5] & 0x0F;
  if (autd3_esc_al_state(e) == ESC_AL_INIT) return; /* no mailbox service in INIT */
  if (type != 3) { /* only CoE: mailbox error "unsupported protocol" */
    uint8_t b[4];
    put16(b, 0x01); /* service: mailbox error */
    put16(b + 2, 0x0002);
    respond(e, 0, b, 4);
    return;
  }
  if (len < 10 || len > MBX_LEN - 6) {
    uint8_t b[4];
    put16(b, 0x01);
    put16(b + 2, len < 10 ? 0x0007 : 0x0008); /* size too short / too long */
    respond(e, 0, b, 4);
    return;
  }
  const uint8_t *c = q + 6;
  uint8_t service = (uint8_t)(c[1] >> 4);
  uint8_t cmd = c[2];
  uint16_t index = get16(c + 3);
  uint8_t sub = c[5];
  if (service != 2) { /* SDO information etc.: not served */
    uint8_t b[4];
    put16(b, 0x01);
    put16(b + 2, 0x0003); /* invalid command */
    respond(e, 0, b, 4);
    return;
  }
  uint8_t ccs = cmd >> 5;
  if (ccs == 2) { /* initiate upload */
    bool ca = (cmd & 0x10) != 0;
    int32_t n = od_read(e, index, sub, ca, e->sdo_buf, sizeof e->sdo_buf);
    if (n < 0) {
      abort_sdo(e, index, sub, n == -1 ? 0x06020000u : n == -2 ? 0x06090011u : 0x06010000u);
      return;
    }
    uint8_t b[MBX_LEN];
    put16(b, 3u << 12); /* SDO response */
    put16(b + 3, index);
    b[5] = sub;
    if (n <= 4 && !ca) { /* expedited */
      b[2] = (uint8_t)(0x43 | ((4 - n) << 2));
      memset(b + 6, 0, 4);
      memcpy(b + 6, e->sdo_buf, (size_t)n);
      respond(e, 3, b, 10);
      return;
    }
    b[2] = (uint8_t)(0x41 | (ca ? 0x10 : 0));
    put32(b + 6, (uint32_t)n);
    uint16_t first = (uint16_t)((uint32_t)n < MBX_LEN - 16 ? (uint32_t)n : MBX_LEN - 16);
    memcpy(b + 10, e->sdo_buf, first);
    e->sdo_len = (uint16_t)n;
    e->sdo_pos = first;
    e->sdo_toggle = 0;
    respond(e, 3, b, (uint16_t)(10 + first));
    return;
  }
  if (ccs == 3) { /* upload segment */
    uint8_t toggle = cmd & 0x10;
    if (e->sdo_pos >= e->sdo_len || toggle != e->sdo_toggle) {
      abort_sdo(e, index, sub, toggle != e->sdo_toggle ? 0x05030000u : 0x05040001u);
      return;
    }
    uint8_t b[MBX_LEN];
    put16(b, 3u << 12);
    uint16_t room = MBX_LEN - 6 - 3, left = (uint16_t)(e->sdo_len - e->sdo_pos);
    uint16_t n = left < room ? left : room;
    bool last = n == left;
    memset(b + 3, 0, 7);
    memcpy(b + 3, e->sdo_buf + e->sdo_pos, n);
    e->sdo_pos = (uint16_t)(e->sdo_pos + n);
    b[2] = (uint8_t)(toggle | (last ? 1 : 0) | (n < 7 ? (7 - n) << 1 : 0));
    e->sdo_toggle ^= 0x10;
    respond(e, 3, b, (uint16_t)(3 + (n < 7 ? 7 : n)));
    return;
  }
  if (ccs == 1) { /* download: the AUTD3's objects are read-only (fixed PDOs) */
    abort_sdo(e, index, sub, 0x06010002u);
    return;
  }
  abort_sdo(e, index, sub, 0x05040001u); /* command specifier not valid */
}
