/*
 * Unit tests of the ESC model and the chain (src/emulation/ethercat): every command group,
 * WKC edge cases, FMMU logical addressing (split frames, partial overlap,
 * several FMMUs, bit granularity), the SII image, AL transitions, DC
 * registers and the clock loop, the SM watchdog, faults and hostile frames.
 * All in-process with a simulated time base: no timing is asserted.
 */
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "harness/test.h"

static uint64_t g_now = 1000000000ull;

#define chain(n) emu_chain((n), g_now)

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v); put16(p + 2, (uint16_t)(v >> 16)); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)get16(p) | ((uint32_t)get16(p + 2) << 16); }

static uint16_t wr16(autd3_emu_t *e, uint8_t cmd, uint16_t adp, uint16_t ado, uint16_t v) {
  uint8_t b[2];
  put16(b, v);
  return dg(e, &g_now, cmd, adp, ado, b, 2);
}
static uint16_t rd16(autd3_emu_t *e, uint8_t cmd, uint16_t adp, uint16_t ado, uint16_t *v) {
  uint8_t b[2] = {0, 0};
  uint16_t w = dg(e, &g_now, cmd, adp, ado, b, 2);
  *v = get16(b);
  return w;
}

static uint16_t addr(int i) { return (uint16_t)(0x1001 + i); }

/* SM2/SM3 and FMMU0/1 as SOEM programs them for an AUTD3 (SOEM v2.0.0 src/ec_config.c ecx_config_map_group). */
static void map_device(autd3_emu_t *e, int i, int n) {
  uint8_t sm[8];
  put16(sm, 0x1800); put16(sm + 2, 626); sm[4] = 0x64; sm[5] = 0; sm[6] = 1; sm[7] = 0;
  ASSERT_EQ(dg(e, &g_now, FPWR, addr(i), 0x0810, sm, 8), 1);
  put16(sm, 0x1F80); put16(sm + 2, 2); sm[4] = 0x20;
  ASSERT_EQ(dg(e, &g_now, FPWR, addr(i), 0x0818, sm, 8), 1);
  uint8_t f[16] = {0};
  put32(f, (uint32_t)(626 * i)); put16(f + 4, 626); f[7] = 7; put16(f + 8, 0x1800); f[11] = 2; f[12] = 1;
  ASSERT_EQ(dg(e, &g_now, FPWR, addr(i), 0x0600, f, 16), 1);
  put32(f, (uint32_t)(626 * n + 2 * i)); put16(f + 4, 2); put16(f + 8, 0x1F80); f[11] = 1;
  ASSERT_EQ(dg(e, &g_now, FPWR, addr(i), 0x0610, f, 16), 1);
}

static void addresses(autd3_emu_t *e, int n) {
  for (int i = 0; i < n; i++) ASSERT_EQ(wr16(e, APWR, (uint16_t)(0 - i), 0x0010, addr(i)), 1);
}

/* Station addresses, PRE-OP, SM/FMMU, SAFE-OP, one LWR of outputs, OP. */
static void bring_to_op(autd3_emu_t *e, int n) {
  addresses(e, n);
  ASSERT_EQ(wr16(e, BWR, 0, 0x0120, 0x12), n);
  for (int i = 0; i < n; i++) map_device(e, i, n);
  ASSERT_EQ(wr16(e, BWR, 0, 0x0120, 0x04), n);
  uint16_t st;
  ASSERT_EQ(rd16(e, BRD, 0, 0x0130, &st), n);
  ASSERT_EQ(st, 0x04);
  static uint8_t out[626 * 2];
  memset(out, 0, sizeof out);
  for (int i = 0; i < n; i += 2)
    ASSERT_EQ(dg(e, &g_now, LWR, (uint16_t)(626 * i), 0, out, (uint16_t)(626 * (n - i >= 2 ? 2 : 1))), n - i >= 2 ? 2 : 1);
  ASSERT_EQ(wr16(e, BWR, 0, 0x0120, 0x08), n);
  ASSERT_EQ(rd16(e, BRD, 0, 0x0130, &st), n);
  ASSERT_EQ(st, 0x08);
}

TEST(position_and_broadcast_wkc) {
  autd3_emu_t *e = chain(3);
  uint16_t v;
  /* APRD: the device that receives ADP 0 answers; every device increments ADP */
  fr_t f;
  fr_init(&f);
  size_t o = fr_add(&f, APRD, 0xFFFF, 0x0000, NULL, 2);
  ASSERT_TRUE(autd3_emu_process(e, f.b, f.len, g_now += 1000));
  ASSERT_EQ(fr_wkc(&f, o), 1);
  ASSERT_EQ(fr_data(&f, o)[0], 0x04);
  ASSERT_EQ(get16(f.b + o + 2), 2); /* 0xFFFF + 3 */
  ASSERT_EQ(f.b[6] & 0x02, 0x02);   /* locally administered source MAC */
  /* BRD counts every device; APRD past the end hits nobody */
  ASSERT_EQ(rd16(e, BRD, 0, 0x0000, &v), 3);
  ASSERT_EQ(rd16(e, APRD, (uint16_t)-3, 0x0000, &v), 0);
  addresses(e, 3);
  ASSERT_EQ(rd16(e, FPRD, addr(2), 0x0010, &v), 1);
  ASSERT_EQ(v, addr(2));
  ASSERT_EQ(rd16(e, FPRD, 0x4242, 0x0010, &v), 0); /* no such station */
  /* RW commands: +1 read +2 write; APRW returns the old value */
  ASSERT_EQ(wr16(e, FPRW, addr(1), 0x0010, 0x2002), 3);
  ASSERT_EQ(rd16(e, FPRD, 0x2002, 0x0010, &v), 1);
  uint8_t b[2];
  put16(b, 0x3003);
  ASSERT_EQ(dg(e, &g_now, APRW, (uint16_t)-1, 0x0010, b, 2), 3);
  ASSERT_EQ(get16(b), 0x2002);
  ASSERT_EQ(wr16(e, BWR, 0, 0x0200, 0x0004), 3);
  ASSERT_EQ(wr16(e, BRW, 0, 0x0200, 0x0000), 9);
  /* read-only register: WKC counts, value stays */
  ASSERT_EQ(wr16(e, FPWR, addr(0), 0x0000, 0xBEEF), 1);
  ASSERT_EQ(rd16(e, FPRD, addr(0), 0x0000, &v), 1);
  ASSERT_EQ(v & 0xFF, 0x04);
  /* NOP: nothing happens */
  ASSERT_EQ(wr16(e, NOP, 0, 0x0010, 0x1234), 0);
  /* station alias only when enabled in DL control (0x0100 bit 24) */
  ASSERT_EQ(rd16(e, FPRD, 0x0000, 0x0010, &v), 0);
  autd3_emu_destroy(e);
}

TEST(broadcast_read_is_or) {
  autd3_emu_t *e = chain(3);
  addresses(e, 3);
  /* device 1 fails INIT→SAFE-OP (error flag), the others stay INIT */
  ASSERT_EQ(wr16(e, FPWR, addr(1), 0x0120, 0x04), 1);
  uint16_t v;
  ASSERT_EQ(rd16(e, BRD, 0, 0x0130, &v), 3);
  ASSERT_EQ(v, 0x11); /* INIT | ERR, ORed over all */
  ASSERT_EQ(rd16(e, FPRD, addr(1), 0x0134, &v), 1);
  ASSERT_EQ(v, 0x0011);
  autd3_emu_destroy(e);
}

TEST(armw_frmw) {
  autd3_emu_t *e = chain(3);
  addresses(e, 3);
  uint8_t b[8] = {0};
  /* FRMW: the reference reads, the others write (compare) */
  ASSERT_EQ(dg(e, &g_now, FRMW, addr(0), 0x0910, b, 8), 3);
  uint64_t t = 0;
  for (int i = 7; i >= 0; i--) t = (t << 8) | b[i];
  ASSERT_GT(t, 0);
  /* ARMW: position 0 reads, everyone increments ADP */
  memset(b, 0, 8);
  fr_t f;
  fr_init(&f);
  size_t o = fr_add(&f, ARMW, 0, 0x0010, b, 2);
  ASSERT_TRUE(autd3_emu_process(e, f.b, f.len, g_now += 1000));
  ASSERT_EQ(fr_wkc(&f, o), 3);
  ASSERT_EQ(fr_u16(&f, o), addr(0));
  ASSERT_EQ(get16(f.b + o + 2), 3);
  /* ... and the others now hold the reader's value (the write went to 0x0010) */
  uint16_t v;
  ASSERT_EQ(rd16(e, APRD, (uint16_t)-2, 0x0010, &v), 1);
  ASSERT_EQ(v, addr(0));
  autd3_emu_destroy(e);
}

TEST(several_datagrams_per_frame) {
  autd3_emu_t *e = chain(2);
  addresses(e, 2);
  fr_t f;
  fr_init(&f);
  uint8_t a[2];
  put16(a, 0x5555);
  size_t o1 = fr_add(&f, FPWR, addr(0), 0x0200, a, 2);
  size_t o2 = fr_add(&f, BRD, 0, 0x0200, NULL, 2);
  size_t o3 = fr_add(&f, FPRD, addr(1), 0x0010, NULL, 2);
  size_t len = f.len;
  ASSERT_TRUE(autd3_emu_process(e, f.b, f.len, g_now += 1000));
  ASSERT_EQ(f.len, len);
  ASSERT_EQ(fr_wkc(&f, o1), 1);
  ASSERT_EQ(fr_wkc(&f, o2), 2);
  ASSERT_EQ(fr_u16(&f, o2), 0x5555); /* the earlier datagram's write is visible */
  ASSERT_EQ(fr_wkc(&f, o3), 1);
  ASSERT_EQ(fr_u16(&f, o3), addr(1));
  autd3_emu_destroy(e);
}

TEST(logical_split_frames_and_partial_overlap) {
  autd3_emu_t *e = chain(3);
  bring_to_op(e, 3);
  uint64_t before[3];
  for (int i = 0; i < 3; i++) before[i] = e->esc[i].frames_in;
  /* SOEM splits 3 × 626 bytes at device boundaries: LWR(0, 1252) + LWR(1252, 626) */
  static uint8_t out[626 * 3];
  for (int i = 0; i < 626 * 3; i++) out[i] = (uint8_t)(i * 7);
  ASSERT_EQ(dg(e, &g_now, LWR, 0, 0, out, 1252), 2);
  ASSERT_EQ(dg(e, &g_now, LWR, 1252, 0, out + 1252, 626), 1);
  for (int i = 0; i < 3; i++) {
    ASSERT_MEMEQ(e->esc[i].mem + 0x1800, out + 626 * i, 626);
    ASSERT_EQ(e->esc[i].frames_in, before[i] + 1);
  }
  /* Split inside a device's window: the first part does not complete SM2 */
  out[700] ^= 0xFF;
  ASSERT_EQ(dg(e, &g_now, LWR, 626, 0, out + 626, 100), 1);
  ASSERT_EQ(e->esc[1].frames_in, before[1] + 1);
  ASSERT_EQ(e->esc[1].mem[0x1800 + 74], out[700]);
  ASSERT_EQ(dg(e, &g_now, LWR, 726, 0, out + 726, 526), 1);
  ASSERT_EQ(e->esc[1].frames_in, before[1] + 2); /* last byte written: complete */
  /* A datagram that straddles two devices' windows partially */
  ASSERT_EQ(dg(e, &g_now, LWR, 600, 0, out + 600, 52), 2);
  /* LRD of the inputs: WKC 1 per device */
  uint8_t in[6];
  memset(in, 0xAA, 6);
  ASSERT_EQ(dg(e, &g_now, LRD, 626 * 3, 0, in, 6), 3);
  ASSERT_EQ(in[0], e->esc[0].fw.dev.rx[0]); /* the firmware's published (ack, data) */
  ASSERT_EQ(in[3], e->esc[1].fw.dev.rx[1]);
  /* LRD of a range no read FMMU covers: WKC 0, data untouched */
  memset(in, 0xAA, 6);
  ASSERT_EQ(dg(e, &g_now, LRD, 0, 0, in, 6), 0);
  ASSERT_EQ(in[0], 0xAA);
  /* zero-length datagrams touch no byte: WKC 0 (a fuzz finding: LWR len 0 over a window) */
  ASSERT_EQ(dg(e, &g_now, LWR, 0, 0, NULL, 0), 0);
  ASSERT_EQ(dg(e, &g_now, LRW, 626, 0, NULL, 0), 0);
  ASSERT_EQ(dg(e, &g_now, BRD, 0, 0x0000, NULL, 0), 0);
  /* LWR on inputs: not a write FMMU → 0 */
  ASSERT_EQ(dg(e, &g_now, LWR, 626 * 3, 0, in, 6), 0);
  autd3_emu_destroy(e);
}

TEST(lrw_several_fmmus_in_one_datagram) {
  autd3_emu_t *e = chain(2);
  bring_to_op(e, 2);
  /* One LRW over outputs and inputs of both devices: each device hits its
   * write FMMU (+2) and its read FMMU (+1) → 3 per device. */
  static uint8_t d[626 * 2 + 4];
  memset(d, 0x11, sizeof d);
  ASSERT_EQ(dg(e, &g_now, LRW, 0, 0, d, sizeof d), 6);
  ASSERT_EQ(d[1252], 0xFF); /* inputs replaced: ack 0xFF */
  ASSERT_EQ(d[1254], 0xFF);
  ASSERT_EQ(d[0], 0x11);    /* outputs area unchanged in the reply */
  ASSERT_EQ(e->esc[1].mem[0x1800], 0x11);
  autd3_emu_destroy(e);
}

TEST(fmmu_bit_granular) {
  autd3_emu_t *e = chain(1);
  addresses(e, 1);
  /* plain RAM at 0x1100 (no SM): logical bits 0x10000.2..0x10001.5 → physical 0x1100.4.. */
  uint8_t f[16] = {0};
  put32(f, 0x10000); put16(f + 4, 2); f[6] = 2; f[7] = 5; put16(f + 8, 0x1100); f[10] = 4; f[11] = 3; f[12] = 1;
  ASSERT_EQ(dg(e, &g_now, FPWR, addr(0), 0x0600, f, 16), 1);
  uint8_t d[2] = {0xFF, 0xFF};
  ASSERT_EQ(dg(e, &g_now, LWR, 0x0000, 0x0001, d, 2), 1);
  /* 12 bits (6 + 6) land at physical bit 4 onward: 0x1100 bits 4..7, 0x1101 all */
  ASSERT_EQ(e->esc[0].mem[0x1100], 0xF0);
  ASSERT_EQ(e->esc[0].mem[0x1101], 0xFF);
  ASSERT_EQ(e->esc[0].mem[0x1102], 0x00);
  /* read back: only the mapped bits are replaced */
  e->esc[0].mem[0x1100] = 0x50; /* physical bits 4 and 6 set */
  e->esc[0].mem[0x1101] = 0x00;
  d[0] = d[1] = 0;
  ASSERT_EQ(dg(e, &g_now, LRD, 0x0000, 0x0001, d, 2), 1);
  ASSERT_EQ(d[0], 0x14); /* logical bits 2 and 4 */
  autd3_emu_destroy(e);
}

/* --- SII through the EEPROM interface, parsed back --- */
static void eep_read8(autd3_emu_t *e, uint16_t word, uint8_t out[8]) {
  uint8_t c[6] = {0x00, 0x01};
  put16(c + 2, word);
  ASSERT_EQ(dg(e, &g_now, FPWR, addr(0), 0x0502, c, 6), 1);
  uint16_t st;
  ASSERT_EQ(rd16(e, FPRD, addr(0), 0x0502, &st), 1);
  ASSERT_EQ(st & 0xF800, 0); /* no error, not busy */
  ASSERT_EQ(st & 0x0040, 0x0040);
  ASSERT_EQ(dg(e, &g_now, FPRD, addr(0), 0x0508, out, 8), 1);
}

TEST(sii_parses_back) {
  autd3_emu_t *e = chain(1);
  addresses(e, 1);
  static uint8_t img[4096];
  for (uint16_t w = 0; w < 2048; w += 4) eep_read8(e, w, img + w * 2);
  ASSERT_EQ(autd3_sii_crc(img), img[14]);
  ASSERT_EQ(get32(img + 0x10), 0x8A9);
  ASSERT_EQ(get32(img + 0x14), 1);
  ASSERT_EQ(get32(img + 0x18), 1);
  ASSERT_EQ(get16(img + 0x30), 0); /* no mailbox */
  /* walk the categories */
  size_t off = 0x80;
  char name[32] = {0};
  int sm_ok = 0, rx_bits = 0, tx_bits = 0, general = 0;
  for (int guard = 0; guard < 32 && off + 4 <= sizeof img; guard++) {
    uint16_t type = get16(img + off), words = get16(img + off + 2);
    if (type == 0xFFFF) break;
    const uint8_t *d = img + off + 4;
    if (type == 10) {
      memcpy(name, d + 2, d[1]);
    } else if (type == 30) {
      general = d[3] == 1 && (d[11] & 0x02);
    } else if (type == 41) {
      sm_ok = get16(d + 16) == 0x1800 && get16(d + 18) == 626 && d[20] == 0x64 && get16(d + 24) == 0x1F80 &&
              get16(d + 26) == 2 && d[28] == 0x20;
    } else if (type == 50 || type == 51) {
      size_t p = 0;
      while (p + 8 <= (size_t)words * 2) {
        int ne = d[p + 2];
        for (int k = 0; k < ne; k++) *(type == 51 ? &rx_bits : &tx_bits) += d[p + 8 + k * 8 + 5];
        p += 8 + (size_t)ne * 8;
      }
    }
    off += 4 + (size_t)words * 2;
  }
  ASSERT_STREQ(name, "AUTD");
  ASSERT_TRUE(general);
  ASSERT_TRUE(sm_ok);
  ASSERT_EQ(rx_bits, 626 * 8);
  ASSERT_EQ(tx_bits, 16);
  ASSERT_LT(off, 4096); /* fits SOEM's SII cache */
  /* reading beyond the image gives 0xFF; writes need write enable */
  uint8_t d[8];
  eep_read8(e, 0x7FFF, d);
  ASSERT_EQ(d[0], 0xFF);
  uint8_t c[6] = {0x00, 0x02, 0x08, 0x00, 0, 0};
  ASSERT_EQ(dg(e, &g_now, FPWR, addr(0), 0x0502, c, 6), 1);
  uint16_t st;
  rd16(e, FPRD, addr(0), 0x0502, &st);
  ASSERT_EQ(st & 0x4000, 0x4000);
  /* the size word and the ESC's address width agree: 32 Kbit, 2 address bytes (0x0502 bit 7) */
  ASSERT_EQ(get16(img + 0x3E * 2), 0x001F);
  ASSERT_EQ(st & 0x0080, 0x0080);
  autd3_emu_destroy(e);
}

/* --mailbox: the ESI's 2 KiB EEPROM (16 Kbit, 1 address byte), the RxPDO list
 * behind CoE because it does not fit, everything else below 2 KiB. */
TEST(sii_mailbox_is_2kib) {
  autd3_emu_config_t c = autd3_emu_config_default();
  c.devices = 1;
  c.mailbox = true;
  autd3_emu_t *e;
  ASSERT_OK(autd3_emu_create(&c, g_now, &e));
  addresses(e, 1);
  static uint8_t img[4096];
  for (uint16_t w = 0; w < 2048; w += 4) eep_read8(e, w, img + w * 2);
  ASSERT_EQ(get16(img + 0x3E * 2), 0x000F);
  uint16_t st;
  rd16(e, FPRD, addr(0), 0x0502, &st);
  ASSERT_EQ(st & 0x0080, 0); /* ≤ 16 Kbit: one address byte */
  size_t off = 0x80;
  int rx = 0, tx = 0, end = 0;
  for (int guard = 0; guard < 32 && off + 4 <= 2048; guard++) {
    uint16_t type = get16(img + off), words = get16(img + off + 2);
    if (type == 0xFFFF) {
      end = 1;
      break;
    }
    rx += type == 51;
    tx += type == 50;
    off += 4 + (size_t)words * 2;
  }
  ASSERT_TRUE(end);
  ASSERT_EQ(rx, 0);
  ASSERT_EQ(tx, 1);
  for (size_t i = 2048; i < sizeof img; i++) ASSERT_EQ(img[i], 0xFF); /* beyond the declared size */
  /* a write beyond the declared size is not acknowledged */
  uint8_t w[6] = {0x01, 0x02, 0x00, 0x04, 0, 0}; /* write enable, write word 0x400 (byte 2048) */
  ASSERT_EQ(dg(e, &g_now, FPWR, addr(0), 0x0502, w, 6), 1);
  rd16(e, FPRD, addr(0), 0x0502, &st);
  ASSERT_EQ(st & 0x2000, 0x2000);
  autd3_emu_destroy(e);
}

/* Registers an ESC loads from the SII or resets to non-zero values. */
TEST(power_on_register_values) {
  autd3_emu_t *e = chain(2);
  addresses(e, 2);
  uint16_t v;
  ASSERT_EQ(rd16(e, FPRD, addr(0), 0x0102, &v), 1);
  ASSERT_EQ(v & 0xFF, 0x07); /* DL control: RX FIFO size 7 */
  ASSERT_EQ(rd16(e, FPRD, addr(0), 0x0140, &v), 1);
  ASSERT_EQ(v, 0x3E80);      /* SII word 0 */
  ASSERT_EQ(rd16(e, FPRD, addr(0), 0x0150, &v), 1);
  ASSERT_EQ(v, 0xAA00);      /* SII word 1 */
  ASSERT_EQ(rd16(e, FPRD, addr(0), 0x0152, &v), 1);
  ASSERT_EQ(v, 0x0001);      /* SII word 3 */
  /* DL status: enhanced link detection (0x0141 = 0x3E) is bit 2 */
  ASSERT_EQ(rd16(e, FPRD, addr(0), 0x0110, &v), 1);
  ASSERT_EQ(v, 0x5A37);
  ASSERT_EQ(rd16(e, FPRD, addr(1), 0x0110, &v), 1);
  ASSERT_EQ(v, 0x5617);
  autd3_emu_destroy(e);
}

TEST(identity_override) {
  autd3_emu_config_t c = autd3_emu_config_default();
  c.devices = 2;
  c.override_index = 1;
  c.override_vendor = 0x2;
  strcpy(c.override_name, "EK1100");
  autd3_emu_t *e;
  ASSERT_OK(autd3_emu_create(&c, g_now, &e));
  ASSERT_EQ(get32(e->esc[0].sii + 0x10), 0x8A9);
  ASSERT_EQ(get32(e->esc[1].sii + 0x10), 0x2);
  ASSERT_EQ(memcmp(e->esc[1].sii + 0x80 + 4 + 2, "EK1100", 6), 0);
  autd3_emu_destroy(e);
  c.override_index = 5;
  ASSERT_ERR(autd3_emu_create(&c, g_now, &e), AUTD3_E_INVALID_OPTION);
  c.devices = 0;
  ASSERT_ERR(autd3_emu_create(&c, g_now, &e), AUTD3_E_DEVICE_COUNT_RANGE);
}

TEST(al_transitions) {
  autd3_emu_t *e = chain(1);
  addresses(e, 1);
  uint16_t v;
  /* INIT → OP refused: INIT+ERR, 0x0011 */
  ASSERT_EQ(wr16(e, FPWR, addr(0), 0x0120, 0x08), 1);
  rd16(e, FPRD, addr(0), 0x0130, &v);
  ASSERT_EQ(v, 0x11);
  rd16(e, FPRD, addr(0), 0x0134, &v);
  ASSERT_EQ(v, 0x0011);
  /* without acknowledge a request is ignored while the error is set */
  wr16(e, FPWR, addr(0), 0x0120, 0x02);
  rd16(e, FPRD, addr(0), 0x0130, &v);
  ASSERT_EQ(v, 0x11);
  /* acknowledge + PRE-OP */
  wr16(e, FPWR, addr(0), 0x0120, 0x12);
  rd16(e, FPRD, addr(0), 0x0130, &v);
  ASSERT_EQ(v, 0x02);
  rd16(e, FPRD, addr(0), 0x0134, &v);
  ASSERT_EQ(v, 0);
  /* PRE-OP → SAFE-OP without SM2: 0x001D; with SM2 but no SM3: 0x001E */
  wr16(e, FPWR, addr(0), 0x0120, 0x04);
  rd16(e, FPRD, addr(0), 0x0130, &v);
  ASSERT_EQ(v, 0x12);
  rd16(e, FPRD, addr(0), 0x0134, &v);
  ASSERT_EQ(v, 0x001D);
  map_device(e, 0, 1);
  uint8_t off[8] = {0};
  ASSERT_EQ(dg(e, &g_now, FPWR, addr(0), 0x0818, off, 8), 1); /* SM3 disabled again */
  wr16(e, FPWR, addr(0), 0x0120, 0x14);
  rd16(e, FPRD, addr(0), 0x0134, &v);
  ASSERT_EQ(v, 0x001E);
  map_device(e, 0, 1);
  /* process data is refused (no WKC) before SAFE-OP: the SMs are PDI-deactivated */
  uint8_t in[2];
  ASSERT_EQ(dg(e, &g_now, LRD, 626, 0, in, 2), 0);
  wr16(e, FPWR, addr(0), 0x0120, 0x14);
  rd16(e, FPRD, addr(0), 0x0130, &v);
  ASSERT_EQ(v, 0x04);
  ASSERT_EQ(dg(e, &g_now, LRD, 626, 0, in, 2), 1);
  /* SAFE-OP → OP before any output image: refused with 0x0019 (strict) */
  wr16(e, FPWR, addr(0), 0x0120, 0x08);
  rd16(e, FPRD, addr(0), 0x0130, &v);
  ASSERT_EQ(v, 0x14);
  rd16(e, FPRD, addr(0), 0x0134, &v);
  ASSERT_EQ(v, 0x0019);
  static uint8_t out[626];
  ASSERT_EQ(dg(e, &g_now, LWR, 0, 0, out, 626), 1);
  wr16(e, FPWR, addr(0), 0x0120, 0x18);
  rd16(e, FPRD, addr(0), 0x0130, &v);
  ASSERT_EQ(v, 0x08);
  /* unknown state: 0x0012; BOOT: not supported 0x0013 from INIT */
  wr16(e, FPWR, addr(0), 0x0120, 0x07);
  rd16(e, FPRD, addr(0), 0x0134, &v);
  ASSERT_EQ(v, 0x0012);
  wr16(e, FPWR, addr(0), 0x0120, 0x01); /* INIT is always allowed */
  rd16(e, FPRD, addr(0), 0x0130, &v);
  ASSERT_EQ(v, 0x01);
  wr16(e, FPWR, addr(0), 0x0120, 0x03);
  rd16(e, FPRD, addr(0), 0x0134, &v);
  ASSERT_EQ(v, 0x0013);
  autd3_emu_destroy(e);
}

TEST(dc_latch_offset_sync0) {
  autd3_emu_t *e = chain(3);
  addresses(e, 3);
  uint8_t z[4] = {0};
  ASSERT_EQ(dg(e, &g_now, BWR, 0, 0x0900, z, 4), 3);
  uint8_t rt[3][16];
  uint64_t pu[3];
  for (int i = 0; i < 3; i++) {
    ASSERT_EQ(dg(e, &g_now, FPRD, addr(i), 0x0900, rt[i], 16), 1);
    uint8_t b[8];
    ASSERT_EQ(dg(e, &g_now, FPRD, addr(i), 0x0918, b, 8), 1);
    pu[i] = 0;
    for (int k = 7; k >= 0; k--) pu[i] = (pu[i] << 8) | b[k];
    ASSERT_EQ((uint32_t)pu[i], get32(rt[i]));
  }
  /* SOEM's line-topology delay: ((B-A)_{k-1} - (B-A)_k)/2 = one hop (600 ns), ppm 0 */
  int64_t d0 = (int64_t)get32(rt[0] + 4) - get32(rt[0]);
  int64_t d1 = (int64_t)get32(rt[1] + 4) - get32(rt[1]);
  ASSERT_EQ((d0 - d1) / 2, 600);
  ASSERT_EQ(get32(rt[2] + 4), 0); /* the last device's port 1 is closed: not latched */
  /* offset: system time = local + offset */
  uint64_t master = 800000000000000000ull;
  for (int i = 0; i < 3; i++) {
    uint8_t b[8];
    uint64_t off = master - pu[i];
    for (int k = 0; k < 8; k++) b[k] = (uint8_t)(off >> (8 * k));
    ASSERT_EQ(dg(e, &g_now, FPWR, addr(i), 0x0920, b, 8), 1);
  }
  uint8_t b[8];
  ASSERT_EQ(dg(e, &g_now, FPRD, addr(1), 0x0910, b, 8), 1);
  uint64_t sys = 0;
  for (int k = 7; k >= 0; k--) sys = (sys << 8) | b[k];
  ASSERT_GT(sys, master);
  /* SYNC0: start in the past → next pulse, on the start + k·cycle grid */
  uint64_t start = sys - 5000000;
  for (int k = 0; k < 8; k++) b[k] = (uint8_t)(start >> (8 * k));
  ASSERT_EQ(dg(e, &g_now, FPWR, addr(1), 0x0990, b, 8), 1);
  uint8_t cyc[4];
  put32(cyc, 1000000);
  ASSERT_EQ(dg(e, &g_now, FPWR, addr(1), 0x09A0, cyc, 4), 1);
  uint8_t act = 3;
  ASSERT_EQ(dg(e, &g_now, FPWR, addr(1), 0x0981, &act, 1), 1);
  ASSERT_EQ(dg(e, &g_now, FPRD, addr(1), 0x0990, b, 8), 1);
  uint64_t next = 0;
  for (int k = 7; k >= 0; k--) next = (next << 8) | b[k];
  ASSERT_GE(next, sys);
  ASSERT_EQ((next - start) % 1000000, 0);
  ASSERT_TRUE(e->esc[1].sync0_on);
  ASSERT_EQ(e->esc[1].fw.dev.sync0_period_ns, 1000000);
  uint8_t st;
  ASSERT_EQ(dg(e, &g_now, FPRD, addr(1), 0x0984, &st, 1), 1);
  ASSERT_EQ(st, 3);
  autd3_emu_destroy(e);
}

/* The clock model: drifting oscillators diverge without compensation and the
 * FRMW compare loop brings 0x092C below 100 ns. */
TEST(dc_drift_converges) {
  autd3_emu_config_t c = autd3_emu_config_default();
  c.devices = 4;
  c.drift_ppm = 100;
  autd3_emu_t *e;
  ASSERT_OK(autd3_emu_create(&c, g_now, &e));
  addresses(e, 4);
  ASSERT_NE(e->esc[1].ppb, e->esc[2].ppb);
  /* align offsets to the reference once (as ecx_configdc does, delay = hop·i) */
  uint8_t z[4] = {0};
  dg(e, &g_now, BWR, 0, 0x0900, z, 4);
  uint64_t ref = 0;
  for (int i = 0; i < 4; i++) {
    uint8_t b[8];
    dg(e, &g_now, FPRD, addr(i), 0x0918, b, 8);
    uint64_t t = 0;
    for (int k = 7; k >= 0; k--) t = (t << 8) | b[k];
    if (i == 0) ref = t;
    uint64_t off = ref + 600u * (uint64_t)i - t;
    for (int k = 0; k < 8; k++) b[k] = (uint8_t)(off >> (8 * k));
    dg(e, &g_now, FPWR, addr(i), 0x0920, b, 8);
    uint8_t dl[4];
    put32(dl, 600u * (uint32_t)i);
    dg(e, &g_now, FPWR, addr(i), 0x0928, dl, 4);
  }
  wr16(e, BWR, 0, 0x0930, 0x1000);
  /* 1 s without compensation: up to 200 ppm apart → many µs */
  g_now += 1000000000ull;
  uint8_t b[8] = {0};
  dg(e, &g_now, FRMW, addr(0), 0x0910, b, 8);
  uint32_t first = 0;
  for (int i = 1; i < 4; i++) {
    uint8_t d[4];
    dg(e, &g_now, FPRD, addr(i), 0x092C, d, 4);
    uint32_t m = get32(d) & 0x7FFFFFFF;
    if (m > first) first = m;
  }
  ASSERT_GT(first, 2000);
  /* 1 kHz FRMW for 2 s of simulated time */
  for (int k = 0; k < 2000; k++) {
    memset(b, 0, 8);
    dg(e, &g_now, FRMW, addr(0), 0x0910, b, 8);
    g_now += 900000;
  }
  for (int i = 1; i < 4; i++) {
    uint8_t d[4];
    dg(e, &g_now, FPRD, addr(i), 0x092C, d, 4);
    ASSERT_LT(get32(d) & 0x7FFFFFFF, 100);
  }
  /* a write of the speed counter start resets the filter */
  wr16(e, BWR, 0, 0x0930, 0x1000);
  uint8_t d[4];
  dg(e, &g_now, FPRD, addr(1), 0x092C, d, 4);
  ASSERT_EQ(get32(d), 0);
  autd3_emu_destroy(e);
}

TEST(sm_watchdog) {
  autd3_emu_t *e = chain(2);
  bring_to_op(e, 2);
  uint16_t v;
  ASSERT_EQ(rd16(e, FPRD, addr(0), 0x0440, &v), 1);
  ASSERT_EQ(v & 1, 1);
  /* outputs refreshed for device 0 only, for 300 ms of simulated time */
  static uint8_t out[626];
  for (int k = 0; k < 30; k++) {
    dg(e, &g_now, LWR, 0, 0, out, 626);
    g_now += 10000000;
    autd3_emu_tick(e, g_now);
  }
  rd16(e, FPRD, addr(0), 0x0130, &v);
  ASSERT_EQ(v, 0x08);
  rd16(e, FPRD, addr(1), 0x0130, &v);
  ASSERT_EQ(v, 0x14);
  rd16(e, FPRD, addr(1), 0x0134, &v);
  ASSERT_EQ(v, 0x001B);
  rd16(e, FPRD, addr(1), 0x0440, &v);
  ASSERT_EQ(v & 1, 0);
  autd3_emu_destroy(e);
}

/* autd3-emu --sm-watchdog-ms: the power-on value of 0x0420; 0 disables the watchdog
 * (tests whose subject is not the watchdog must not fail because the host stalled). */
TEST(sm_watchdog_power_on_value) {
  for (int off = 0; off < 2; off++) {
    autd3_emu_config_t c = autd3_emu_config_default();
    ASSERT_EQ(c.sm_watchdog_100us, 1000); /* an ESC's 100 ms */
    c.devices = 1;
    c.sm_watchdog_100us = off ? 0 : 20000; /* off, or 2 s */
    autd3_emu_t *e;
    ASSERT_OK(autd3_emu_create(&c, g_now, &e));
    bring_to_op(e, 1);
    uint16_t v;
    ASSERT_EQ(rd16(e, FPRD, addr(0), 0x0420, &v), 1);
    ASSERT_EQ(v, off ? 0 : 20000);
    g_now += 1500000000ull; /* 1.5 s without outputs: below 2 s */
    autd3_emu_tick(e, g_now);
    rd16(e, FPRD, addr(0), 0x0130, &v);
    ASSERT_EQ(v, 0x08);
    g_now += 1000000000ull; /* 2.5 s: expired unless off */
    autd3_emu_tick(e, g_now);
    rd16(e, FPRD, addr(0), 0x0130, &v);
    ASSERT_EQ(v, off ? 0x08 : 0x14);
    autd3_emu_destroy(e);
  }
}

TEST(firmware_acks_in_op) {
  autd3_emu_config_t c = autd3_emu_config_default();
  c.devices = 2;
  c.timing = autd3_timing_model_ideal();
  autd3_emu_t *e;
  ASSERT_OK(autd3_emu_create(&c, g_now, &e));
  bring_to_op(e, 2);
  static uint8_t out[626 * 2];
  memset(out, 0, sizeof out);
  out[1] = out[626 + 1] = AUTD3_CMD_RESET;
  dg(e, &g_now, LWR, 0, 0, out, sizeof out);
  for (uint8_t seq = 0; seq < 5; seq++) {
    out[0] = out[626] = seq;
    out[1] = out[626 + 1] = AUTD3_CMD_NOP;
    ASSERT_EQ(dg(e, &g_now, LWR, 0, 0, out, sizeof out), 2);
    uint8_t in[4];
    ASSERT_EQ(dg(e, &g_now, LRD, 1252, 0, in, 4), 2);
    ASSERT_EQ(in[0], seq); /* ack */
    ASSERT_EQ(in[1], 0);   /* data */
    ASSERT_EQ(in[2], seq);
  }
  ASSERT_EQ(e->esc[0].fw.dev.counters.executed, 5);
  autd3_emu_destroy(e);
}

TEST(unplug_replug_power_cycle) {
  autd3_emu_t *e = chain(3);
  bring_to_op(e, 3);
  uint16_t v;
  ASSERT_OK(autd3_emu_unplug(e, 1));
  ASSERT_EQ(rd16(e, BRD, 0, 0x0130, &v), 1);
  ASSERT_EQ(rd16(e, FPRD, addr(2), 0x0130, &v), 0); /* unplugged: unreadable */
  ASSERT_EQ(rd16(e, FPRD, addr(0), 0x0110, &v), 1);
  ASSERT_EQ(v, 0x5617); /* device 0 is now the end of the line */
  uint8_t in[6];
  ASSERT_EQ(dg(e, &g_now, LRD, 626 * 3, 0, in, 6), 1);
  autd3_emu_replug(e);
  ASSERT_EQ(rd16(e, BRD, 0, 0x0130, &v), 3);
  ASSERT_OK(autd3_emu_power_cycle(e, 1, g_now));
  ASSERT_EQ(rd16(e, FPRD, addr(1), 0x0130, &v), 0); /* station address lost */
  ASSERT_EQ(rd16(e, APRD, (uint16_t)-1, 0x0130, &v), 1);
  ASSERT_EQ(v, 0x01); /* back in INIT */
  ASSERT_ERR(autd3_emu_power_cycle(e, 3, g_now), AUTD3_E_INVALID_OPTION);
  ASSERT_ERR(autd3_emu_unplug(e, 4), AUTD3_E_INVALID_OPTION);
  ASSERT_OK(autd3_emu_unplug(e, 0));
  ASSERT_EQ(rd16(e, BRD, 0, 0x0130, &v), 0xFFFF); /* no device: no reply */
  autd3_emu_destroy(e);
}

TEST(drop_corrupt_silence) {
  autd3_emu_t *e = chain(1);
  uint16_t v;
  e->faults.drop = 1.0;
  ASSERT_EQ(rd16(e, BRD, 0, 0x0000, &v), 0xFFFF);
  e->faults.drop = 0;
  e->faults.silence = true;
  ASSERT_EQ(rd16(e, BRD, 0, 0x0000, &v), 0xFFFF);
  e->faults.silence = false;
  e->faults.corrupt = 1.0;
  int differ = 0;
  for (int k = 0; k < 20; k++) {
    fr_t f;
    fr_init(&f);
    size_t o = fr_add(&f, BRD, 0, 0x0000, NULL, 2);
    ASSERT_TRUE(autd3_emu_process(e, f.b, f.len, g_now += 1000));
    if (fr_wkc(&f, o) != 1 || fr_u16(&f, o) != 0x0104 || f.b[16 + 2] != 1 || f.b[14] != 14) differ++;
  }
  ASSERT_EQ(e->corrupted, 20);
  ASSERT_GT(differ, 0);
  autd3_emu_destroy(e);
}

TEST(hostile_frames) {
  autd3_emu_t *e = chain(2);
  addresses(e, 2);
  uint8_t buf[3000];
  /* truncated Ethernet, foreign EtherType: ignored */
  memset(buf, 0, sizeof buf);
  ASSERT_FALSE(autd3_emu_process(e, buf, 10, g_now += 1000));
  buf[12] = 0x08;
  ASSERT_FALSE(autd3_emu_process(e, buf, 60, g_now += 1000));
  /* a write to the station address whose length field runs past the frame:
   * returned unchanged (but for the MAC bit), not applied */
  fr_t f;
  fr_init(&f);
  uint8_t a[2] = {0x34, 0x12};
  fr_add(&f, BWR, 0, 0x0010, a, 2);
  uint8_t copy[1600];
  f.b[14] = 0xFF; /* EtherCAT length 0x7FF > frame */
  memcpy(copy, f.b, f.len);
  ASSERT_TRUE(autd3_emu_process(e, f.b, f.len, g_now += 1000));
  ASSERT_MEMEQ(f.b + 12, copy + 12, f.len - 12);
  fr_init(&f);
  fr_add(&f, BWR, 0, 0x0010, a, 2);
  f.b[16 + 6] = 200; /* datagram length beyond the frame */
  memcpy(copy, f.b, f.len);
  ASSERT_TRUE(autd3_emu_process(e, f.b, f.len, g_now += 1000));
  ASSERT_MEMEQ(f.b + 12, copy + 12, f.len - 12);
  uint16_t v;
  ASSERT_EQ(rd16(e, FPRD, addr(0), 0x0010, &v), 1);
  ASSERT_EQ(v, addr(0));
  /* "more" flag on the last datagram: chain runs off the end → malformed */
  fr_init(&f);
  fr_add(&f, BWR, 0, 0x0010, a, 2);
  f.b[16 + 7] |= 0x80;
  ASSERT_TRUE(autd3_emu_process(e, f.b, f.len, g_now += 1000));
  ASSERT_EQ(rd16(e, FPRD, addr(1), 0x0010, &v), 1);
  /* EtherCAT type other than 1 (mailbox gateway, 5): passed unchanged */
  fr_init(&f);
  fr_add(&f, BWR, 0, 0x0010, a, 2);
  f.b[15] = (uint8_t)((f.b[15] & 0x0F) | 0x50);
  memcpy(copy, f.b, f.len);
  ASSERT_TRUE(autd3_emu_process(e, f.b, f.len, g_now += 1000));
  ASSERT_MEMEQ(f.b + 12, copy + 12, f.len - 12);
  /* only the 2-byte header */
  fr_init(&f);
  ASSERT_TRUE(autd3_emu_process(e, f.b, 15, g_now += 1000));
  /* short unpadded frame (SOEM does not pad): processed at its length */
  fr_init(&f);
  size_t o = fr_add(&f, BRD, 0, 0x0000, NULL, 2);
  ASSERT_LT(f.len, 60);
  ASSERT_TRUE(autd3_emu_process(e, f.b, f.len, g_now += 1000));
  ASSERT_EQ(fr_wkc(&f, o), 2);
  /* padded frame: padding kept, datagrams processed */
  fr_init(&f);
  o = fr_add(&f, BRD, 0, 0x0000, NULL, 2);
  memset(f.b + f.len, 0xEE, 60 - f.len);
  ASSERT_TRUE(autd3_emu_process(e, f.b, 60, g_now += 1000));
  ASSERT_EQ(fr_wkc(&f, o), 2);
  ASSERT_EQ(f.b[59], 0xEE);
  /* oversized frame (jumbo, 3000 bytes) of random bytes with a valid header */
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(i * 131 + 7);
  buf[12] = 0x88;
  buf[13] = 0xA4;
  (void)autd3_emu_process(e, buf, sizeof buf, g_now += 1000);
  /* a datagram addressing the top of the address space wraps nothing */
  uint8_t big[64] = {0}; /* sent as FPRD/FPWR data: must be initialised */
  ASSERT_EQ(dg(e, &g_now, FPRD, addr(0), 0xFFF0, big, 64), 1);
  ASSERT_EQ(dg(e, &g_now, FPWR, addr(0), 0xFFF0, big, 64), 1);
  autd3_emu_destroy(e);
}

static void emit_frame(void *ctx, uint8_t *frame, size_t len) {
  ASSERT_TRUE(autd3_emu_process(ctx, frame, len, g_now += 100000));
}

/* The canned SOEM traffic (used by the fuzz target and the benchmark) really
 * reaches OP, and one cycle gives SOEM's expected WKC: LRD n + LWR 2·n... per segment. */
TEST(script_op_and_cycle) {
  for (uint16_t n = 1; n <= 5; n += 2) {
    autd3_emu_t *e = chain(n);
    autd3_emu_script_op(n, emit_frame, e);
    for (uint16_t i = 0; i < n; i++) ASSERT_EQ(autd3_esc_al_state(&e->esc[i]), 8);
    static uint8_t fr[8][AUTD3_EMU_SCRIPT_FRAME];
    size_t lens[8];
    size_t k = autd3_emu_script_cycle(n, fr, lens, 8);
    ASSERT_EQ(k, 1u + (n + 1u) / 2u);
    unsigned wkc = 0;
    for (size_t j = 0; j < k; j++) {
      ASSERT_TRUE(autd3_emu_process(e, fr[j], lens[j], g_now += 10000));
      uint16_t l = (uint16_t)((fr[j][16 + 6] | (fr[j][16 + 7] << 8)) & 0x7FF);
      wkc += (unsigned)(fr[j][16 + 10 + l] | (fr[j][16 + 11 + l] << 8)) * (j == 0 ? 1u : 2u);
      if (j == 0) { /* FRMW: every device */
        size_t o2 = 16 + 12 + l;
        ASSERT_EQ(fr[j][o2 + 10 + 8] | (fr[j][o2 + 11 + 8] << 8), n);
      }
    }
    ASSERT_EQ(wkc, 3u * n); /* SOEM's expected WKC: inputs n + 2 × outputs n */
    autd3_emu_destroy(e);
  }
}

/* The largest chain: 128 devices reach OP and one SOEM cycle (65 frames) gives WKC 384. */
TEST(chain_of_128) {
  autd3_emu_t *e = chain(128);
  autd3_emu_script_op(128, emit_frame, e);
  static uint8_t fr[70][AUTD3_EMU_SCRIPT_FRAME];
  size_t lens[70];
  size_t k = autd3_emu_script_cycle(128, fr, lens, 70);
  ASSERT_EQ(k, 65);
  unsigned wkc = 0;
  for (size_t j = 0; j < k; j++) {
    ASSERT_TRUE(autd3_emu_process(e, fr[j], lens[j], g_now += 10000));
    uint16_t l = (uint16_t)((fr[j][16 + 6] | (fr[j][16 + 7] << 8)) & 0x7FF);
    wkc += (unsigned)(fr[j][16 + 10 + l] | (fr[j][16 + 11 + l] << 8)) * (j == 0 ? 1u : 2u);
  }
  ASSERT_EQ(wkc, 3u * 128);
  uint16_t v;
  ASSERT_EQ(rd16(e, BRD, 0, 0x0130, &v), 128);
  ASSERT_EQ(v, 0x08);
  ASSERT_EQ(rd16(e, APRD, (uint16_t)-127, 0x0010, &v), 1);
  ASSERT_EQ(v, 0x1001 + 127);
  autd3_emu_destroy(e);
}

/* --mailbox: SM0/SM1 mailbox semantics and CoE SDO upload through raw frames. */
static uint16_t mbx_request(autd3_emu_t *e, uint8_t type, uint8_t cmd, uint16_t index, uint8_t sub) {
  uint8_t q[128] = {0};
  put16(q, 10);
  q[5] = (uint8_t)(type | (1 << 4));
  put16(q + 6, 2u << 12); /* SDO request */
  q[8] = cmd;
  put16(q + 9, index);
  q[11] = sub;
  return dg(e, &g_now, FPWR, addr(0), 0x1000, q, 128);
}

TEST(mailbox_coe) {
  autd3_emu_config_t c = autd3_emu_config_default();
  c.devices = 1;
  c.mailbox = true;
  autd3_emu_t *e;
  ASSERT_OK(autd3_emu_create(&c, g_now, &e));
  addresses(e, 1);
  ASSERT_EQ(get16(e->esc[0].sii + 0x18 * 2), 0x1000); /* the SII declares the mailbox */
  ASSERT_EQ(get16(e->esc[0].sii + 0x1C * 2), 0x0004); /* CoE */
  uint16_t v;
  /* INIT → PRE-OP without mailbox SMs: 0x0016 */
  wr16(e, FPWR, addr(0), 0x0120, 0x02);
  rd16(e, FPRD, addr(0), 0x0134, &v);
  ASSERT_EQ(v, 0x0016);
  uint8_t sm[16] = {0x00, 0x10, 0x80, 0x00, 0x26, 0, 1, 0, 0x00, 0x14, 0x80, 0x00, 0x22, 0, 1, 0};
  ASSERT_EQ(dg(e, &g_now, FPWR, addr(0), 0x0800, sm, 16), 1);
  wr16(e, FPWR, addr(0), 0x0120, 0x12);
  rd16(e, FPRD, addr(0), 0x0130, &v);
  ASSERT_EQ(v, 0x02);
  uint8_t r[128];
  /* the read mailbox is empty: FPRD gets no WKC; status bit 3 clear */
  ASSERT_EQ(dg(e, &g_now, FPRD, addr(0), 0x1400, r, 128), 0);
  uint8_t st = 0xFF;
  ASSERT_EQ(dg(e, &g_now, FPRD, addr(0), 0x080D, &st, 1), 1);
  ASSERT_EQ(st & 0x08, 0);
  /* expedited upload of 0x1018:01 */
  ASSERT_EQ(mbx_request(e, 3, 0x40, 0x1018, 1), 1);
  ASSERT_EQ(dg(e, &g_now, FPRD, addr(0), 0x080D, &st, 1), 1);
  ASSERT_EQ(st & 0x08, 0x08);
  ASSERT_EQ(dg(e, &g_now, FPRD, addr(0), 0x1400, r, 128), 1);
  ASSERT_EQ(r[5] & 0x0F, 3);
  ASSERT_EQ(get16(r + 6) >> 12, 3);
  ASSERT_EQ(r[8], 0x43);
  ASSERT_EQ(get32(r + 12), 0x8A9);
  ASSERT_EQ(dg(e, &g_now, FPRD, addr(0), 0x1400, r, 128), 0); /* read once: empty again */
  /* complete access of 0x1600: normal response + segments, reassembled */
  static uint8_t all[1100];
  size_t got = 0;
  ASSERT_EQ(mbx_request(e, 3, 0x50, 0x1600, 0), 1);
  ASSERT_EQ(dg(e, &g_now, FPRD, addr(0), 0x1400, r, 128), 1);
  ASSERT_EQ(r[8], 0x51);
  uint32_t total = get32(r + 12);
  ASSERT_EQ(total, 998);
  got = get16(r) - 10u;
  memcpy(all, r + 16, got);
  uint8_t toggle = 0;
  for (int k = 0; k < 20 && got < total; k++) {
    ASSERT_EQ(mbx_request(e, 3, (uint8_t)(0x60 | toggle), 0x1600, 0), 1);
    ASSERT_EQ(dg(e, &g_now, FPRD, addr(0), 0x1400, r, 128), 1);
    ASSERT_EQ(r[8] & 0xE0, 0);
    ASSERT_EQ(r[8] & 0x10, toggle);
    size_t n = get16(r) - 3u;
    if (r[8] & 1) n -= n == 7 ? (size_t)((r[8] >> 1) & 7) : 0;
    memcpy(all + got, r + 9, n);
    got += n;
    toggle ^= 0x10;
    if (r[8] & 1) break;
  }
  ASSERT_EQ(got, 998);
  ASSERT_EQ(all[0], 249);
  ASSERT_EQ(get32(all + 2), 0x70000110);
  ASSERT_EQ(get32(all + 994), 0x7000F910);
  /* a missing object: abort 0x06020000 with the SDO request service */
  ASSERT_EQ(mbx_request(e, 3, 0x40, 0x2000, 0), 1);
  ASSERT_EQ(dg(e, &g_now, FPRD, addr(0), 0x1400, r, 128), 1);
  ASSERT_EQ(r[8], 0x80);
  ASSERT_EQ(get16(r + 6) >> 12, 2);
  ASSERT_EQ(get32(r + 12), 0x06020000);
  /* a protocol other than CoE: mailbox error 0x0002 */
  ASSERT_EQ(mbx_request(e, 4, 0, 0, 0), 1);
  ASSERT_EQ(dg(e, &g_now, FPRD, addr(0), 0x1400, r, 128), 1);
  ASSERT_EQ(r[5] & 0x0F, 0);
  ASSERT_EQ(get16(r + 8), 0x0002);
  autd3_emu_destroy(e);
}

/* A chain of one --mailbox device in PRE-OP with SM0/SM1 configured as the SII says. */
static autd3_emu_t *mailbox_chain(void) {
  autd3_emu_config_t c = autd3_emu_config_default();
  c.devices = 1;
  c.mailbox = true;
  autd3_emu_t *e;
  if (autd3_emu_create(&c, g_now, &e) != AUTD3_OK) TEST_FAIL_("create");
  addresses(e, 1);
  uint8_t sm[16] = {0x00, 0x10, 0x80, 0x00, 0x26, 0, 1, 0, 0x00, 0x14, 0x80, 0x00, 0x22, 0, 1, 0};
  ASSERT_EQ(dg(e, &g_now, FPWR, addr(0), 0x0800, sm, 16), 1);
  wr16(e, FPWR, addr(0), 0x0120, 0x02);
  uint16_t v;
  rd16(e, FPRD, addr(0), 0x0130, &v);
  ASSERT_EQ(v, 0x02);
  return e;
}

/* Send a mailbox request of `len` bytes after the header (body: the CoE part),
 * read the response into r; returns false when the read mailbox stayed empty. */
static bool mbx_xfer(autd3_emu_t *e, uint8_t type, const uint8_t *body, uint16_t len, uint8_t r[128]) {
  uint8_t q[128] = {0};
  put16(q, len);
  q[5] = (uint8_t)(type | (1 << 4));
  memcpy(q + 6, body, len <= 122 ? len : 122);
  ASSERT_EQ(dg(e, &g_now, FPWR, addr(0), 0x1000, q, 128), 1);
  return dg(e, &g_now, FPRD, addr(0), 0x1400, r, 128) == 1;
}

static uint16_t mbx_error_of(autd3_emu_t *e, uint8_t type, const uint8_t *body, uint16_t len) {
  uint8_t r[128];
  ASSERT_TRUE(mbx_xfer(e, type, body, len, r));
  ASSERT_EQ(r[5] & 0x0F, 0);  /* mailbox error reply */
  ASSERT_EQ(get16(r + 6), 1); /* its service */
  return get16(r + 8);
}

/* An SDO Information request (ETG.1000.6): opcode, then 2..4 data bytes. */
static uint16_t info_req(uint8_t *b, uint8_t opcode, uint16_t index, uint8_t sub, uint8_t vi, bool oe) {
  memset(b, 0, 12);
  put16(b, 8u << 12);
  b[2] = opcode;
  put16(b + 6, index);
  b[8] = sub;
  b[9] = vi;
  return oe ? 10 : 8;
}

/* Mailbox error codes (ETG.1000.4) and the SDO Information service a device
 * whose ESI says SdoInfo="true" answers; every answer is checked field by
 * field against what SOEM's ecx_readODlist / ecx_readODdescription /
 * ecx_readOEsingle parse. */
TEST(mailbox_errors_and_sdo_info) {
  autd3_emu_t *e = mailbox_chain();
  uint8_t b[128] = {0}, r[128];
  /* sizes: an SDO request shorter than 10 bytes and a CoE part shorter than
   * its header are "size too short" (0x0006), a length beyond the mailbox is
   * "invalid size" (0x0008) */
  put16(b, 2u << 12);
  b[2] = 0x40;
  put16(b + 3, 0x1000);
  ASSERT_EQ(mbx_error_of(e, 3, b, 8), 0x0006);
  ASSERT_EQ(mbx_error_of(e, 3, b, 1), 0x0006);
  ASSERT_EQ(mbx_error_of(e, 3, b, 123), 0x0008);
  /* CoE services other than SDO and SDO Information: "service not supported" */
  put16(b, 1u << 12); /* emergency */
  ASSERT_EQ(mbx_error_of(e, 3, b, 10), 0x0004);
  put16(b, 3u << 12); /* an SDO response sent to the device */
  ASSERT_EQ(mbx_error_of(e, 3, b, 10), 0x0004);
  /* SDO Information requests are 8 bytes (list, object) or 10 (entry) */
  uint16_t n = info_req(b, 1, 0x0001, 0, 0, false); /* object list: all */
  ASSERT_TRUE(mbx_xfer(e, 3, b, n, r));
  ASSERT_EQ(r[5] & 0x0F, 3);
  ASSERT_EQ(get16(r + 6) >> 12, 8);
  ASSERT_EQ(r[8], 2);           /* get OD list response, complete */
  ASSERT_EQ(get16(r + 10), 0);  /* fragments left */
  ASSERT_EQ(get16(r + 12), 1);  /* list type */
  static const uint16_t want[] = {0x1000, 0x1008, 0x1009, 0x100A, 0x1018, 0x1600, 0x1601,
                                  0x1A00, 0x1C00, 0x1C12, 0x1C13, 0x6000, 0x7000, 0x7001};
  size_t nobj = (get16(r) - 8u) / 2;
  ASSERT_EQ(nobj, sizeof want / sizeof want[0]);
  for (size_t i = 0; i < nobj; i++) ASSERT_EQ(get16(r + 14 + i * 2), want[i]);
  n = info_req(b, 1, 0x0000, 0, 0, false); /* the number of objects per list */
  ASSERT_TRUE(mbx_xfer(e, 3, b, n, r));
  ASSERT_EQ(get16(r), 8 + 10);
  ASSERT_EQ(get16(r + 14), nobj);
  ASSERT_EQ(get16(r + 16), 2); /* RxPDO-mappable: 0x7000, 0x7001 */
  ASSERT_EQ(get16(r + 18), 1); /* TxPDO-mappable: 0x6000 */
  n = info_req(b, 1, 0x0003, 0, 0, false);
  ASSERT_TRUE(mbx_xfer(e, 3, b, n, r));
  ASSERT_EQ(get16(r), 8 + 2);
  ASSERT_EQ(get16(r + 14), 0x6000);
  /* object description: index, data type, max subindex, object code, name */
  n = info_req(b, 3, 0x1018, 0, 0, false);
  ASSERT_TRUE(mbx_xfer(e, 3, b, n, r));
  ASSERT_EQ(r[8], 4);
  ASSERT_EQ(get16(r + 12), 0x1018);
  ASSERT_EQ(get16(r + 14), 0x0023); /* IDENTITY */
  ASSERT_EQ(r[16], 4);
  ASSERT_EQ(r[17], 9); /* RECORD */
  ASSERT_EQ(get16(r), 12 + 8);
  ASSERT_MEMEQ(r + 18, "Identity", 8);
  n = info_req(b, 3, 0x7000, 0, 0, false);
  ASSERT_TRUE(mbx_xfer(e, 3, b, n, r));
  ASSERT_EQ(get16(r + 14), 0x0006);
  ASSERT_EQ(r[16], 249);
  ASSERT_EQ(r[17], 8); /* ARRAY */
  /* a missing object: SDO Info error request with the abort code */
  n = info_req(b, 3, 0x2000, 0, 0, false);
  ASSERT_TRUE(mbx_xfer(e, 3, b, n, r));
  ASSERT_EQ(r[8], 7);
  ASSERT_EQ(get32(r + 12), 0x06020000);
  /* entry description: index, sub, value info, data type, bit length, access, name */
  n = info_req(b, 5, 0x1018, 1, 0x07, true);
  ASSERT_TRUE(mbx_xfer(e, 3, b, n, r));
  ASSERT_EQ(r[8], 6);
  ASSERT_EQ(get16(r + 12), 0x1018);
  ASSERT_EQ(r[14], 1);
  ASSERT_EQ(get16(r + 16), 0x0007); /* UNSIGNED32 */
  ASSERT_EQ(get16(r + 18), 32);
  ASSERT_EQ(get16(r + 20), 0x0007); /* read-only in PRE-OP, SAFE-OP, OP */
  ASSERT_EQ(get16(r), 16 + 9);
  ASSERT_MEMEQ(r + 22, "Vendor ID", 9);
  n = info_req(b, 5, 0x1600, 0, 0x07, true);
  ASSERT_TRUE(mbx_xfer(e, 3, b, n, r));
  ASSERT_EQ(get16(r + 16), 0x0005);
  ASSERT_EQ(get16(r + 18), 8);
  n = info_req(b, 5, 0x7000, 249, 0x7F, true);
  ASSERT_TRUE(mbx_xfer(e, 3, b, n, r));
  ASSERT_EQ(r[15] & 0x78, 0); /* no unit/default/min/max follow */
  ASSERT_EQ(get16(r + 16), 0x0006);
  ASSERT_EQ(get16(r + 18), 16);
  ASSERT_EQ(get16(r + 20), 0x0047); /* + RxPDO mappable */
  ASSERT_MEMEQ(r + 22, "SubIndex 249", 12);
  n = info_req(b, 5, 0x1008, 0, 0x07, true);
  ASSERT_TRUE(mbx_xfer(e, 3, b, n, r));
  ASSERT_EQ(get16(r + 16), 0x0009); /* VISIBLE_STRING */
  ASSERT_EQ(get16(r + 18), 32);     /* "AUTD" */
  n = info_req(b, 5, 0x1018, 5, 0x07, true);
  ASSERT_TRUE(mbx_xfer(e, 3, b, n, r));
  ASSERT_EQ(r[8], 7);
  ASSERT_EQ(get32(r + 12), 0x06090011);
  /* an entry description request cut to 8 bytes: size too short */
  n = info_req(b, 5, 0x1018, 1, 0x07, true);
  ASSERT_EQ(mbx_error_of(e, 3, b, 8), 0x0006);
  /* a string longer than 4 bytes: normal (not expedited) upload */
  memset(b, 0, 10);
  put16(b, 2u << 12);
  b[2] = 0x40;
  put16(b + 3, 0x1009);
  ASSERT_TRUE(mbx_xfer(e, 3, b, 10, r));
  ASSERT_EQ(r[8], 0x41);
  ASSERT_EQ(get32(r + 12), 9);
  ASSERT_MEMEQ(r + 16, "JSL-ESC.1", 9);
  /* an abort from the master is not answered */
  b[2] = 0x80;
  ASSERT_FALSE(mbx_xfer(e, 3, b, 10, r));
  /* a download: the objects are read-only (abort 0x06010002) */
  b[2] = 0x23;
  put16(b + 3, 0x1C12);
  ASSERT_TRUE(mbx_xfer(e, 3, b, 10, r));
  ASSERT_EQ(r[8], 0x80);
  ASSERT_EQ(get32(r + 12), 0x06010002);
  autd3_emu_destroy(e);
}

/* --wire (cfg.wire): the 100 Mbit/s line is serial, device k gets a frame after
 * its serialisation and k hops, and the firmware sees that time in its DC time
 * base. Simulated time: asserts computed model times, not wall-clock. */
static autd3_emu_t *wire_chain_in_op(bool wire) {
  autd3_emu_config_t c = autd3_emu_config_default();
  c.devices = 3;
  c.wire = wire;
  autd3_emu_t *e;
  ASSERT_OK(autd3_emu_create(&c, g_now, &e));
  bring_to_op(e, 3);
  for (int k = 0; k < 3; k++) ASSERT_EQ(e->esc[k].ppb, 0); /* drift 0: local = host - power_on */
  return e;
}

TEST(wire_back_to_back_and_hops) {
  autd3_emu_t *e = wire_chain_in_op(true);
  const uint64_t hop = e->cfg.hop_ns;
  static uint8_t out[626 * 2];
  memset(out, 0, sizeof out);
  fr_t a, b;
  fr_init(&a);
  fr_add(&a, LWR, 0, 0, out, 626 * 2); /* devices 0 and 1 */
  fr_init(&b);
  fr_add(&b, LWR, 626 * 2, 0, out, 626); /* device 2 */
  uint64_t t = (g_now += 1000000);      /* the line is idle: both are read from the socket at t */
  uint64_t wa = AUTD3_EMU_WIRE_NS(a.len), wb = AUTD3_EMU_WIRE_NS(b.len);
  ASSERT_EQ(wa, (uint64_t)(a.len + 24) * 80);
  ASSERT_TRUE(autd3_emu_process(e, a.b, a.len, t));
  ASSERT_EQ(e->wire_busy_ns, t + wa);
  ASSERT_EQ(e->reply_ns, t + wa + 2 * 3 * hop); /* round the ring */
  for (int k = 0; k < 3; k++) ASSERT_EQ(e->esc[k].t_frame, t + wa + (uint64_t)k * hop);
  ASSERT_EQ(e->esc[1].last_sm2_ns, t + wa + hop); /* SM2-complete at device 1's arrival */
  ASSERT_EQ(e->esc[1].fw.dev.image_arrival_ns, autd3_esc_local(&e->esc[1], t + wa + hop));
  ASSERT_TRUE(autd3_emu_process(e, b.b, b.len, t));
  /* the second frame queues behind the first: at device 0 after both serialisations */
  ASSERT_EQ(e->esc[0].t_frame, t + wa + wb);
  ASSERT_EQ(e->esc[2].t_frame, t + wa + wb + 2 * hop);
  ASSERT_EQ(e->esc[2].fw.dev.image_arrival_ns, autd3_esc_local(&e->esc[2], t + wa + wb + 2 * hop));
  ASSERT_EQ(e->reply_ns, t + wa + wb + 2 * 3 * hop);
  ASSERT_GE(e->reply_ns, t + wa + 2 * 3 * hop + wb); /* replies do not overlap on the way back */
  /* a frame read once the line is idle again starts at once */
  uint64_t t2 = t + 10000000;
  ASSERT_TRUE(autd3_emu_process(e, a.b, a.len, t2));
  ASSERT_EQ(e->esc[0].t_frame, t2 + wa);
  ASSERT_EQ(e->esc[2].fw.dev.time_reversals, 0);
  /* the transmit ring is finite: a frame that would wait > AUTD3_EMU_WIRE_BACKLOG_NS is lost */
  fr_t big;
  fr_init(&big);
  fr_add(&big, NOP, 0, 0, NULL, 1500 - 28);
  ASSERT_EQ(big.len, 1500);
  uint64_t t3 = t2 + 10000000, w = AUTD3_EMU_WIRE_NS(big.len), dropped = e->dropped;
  unsigned sent = 0;
  while (autd3_emu_process(e, big.b, big.len, t3) && sent < 1000) sent++;
  ASSERT_EQ(sent, (unsigned)(AUTD3_EMU_WIRE_BACKLOG_NS / w) + 1);
  ASSERT_EQ(e->dropped, dropped + 1);
  autd3_emu_destroy(e);
}

/* An image whose frame is read before a SYNC0 edge but, through the wire,
 * arrives just after it is taken one edge later; without the wire model the
 * same frame is taken at that edge. */
TEST(wire_arrival_after_edge_taken_next_edge) {
  for (int wire = 0; wire < 2; wire++) {
    autd3_emu_t *e = wire_chain_in_op(wire);
    autd3_esc_t *d1 = &e->esc[1];
    static uint8_t out[626 * 2];
    memset(out, 0, sizeof out);
    fr_t a;
    fr_init(&a);
    fr_add(&a, LWR, 0, 0, out, 626 * 2);
    uint64_t t = (g_now += 1000000);
    uint64_t arrive = t + AUTD3_EMU_WIRE_NS(a.len) + e->cfg.hop_ns; /* device 1 with the wire */
    uint64_t edge = autd3_esc_local(d1, arrive) - 1;               /* SYNC0 1 ns before that arrival */
    const uint32_t period = 1000000;
    autd3_dev_set_sync0(&d1->fw.dev, edge, period);
    ASSERT_TRUE(autd3_emu_process(e, a.b, a.len, t));
    ASSERT_TRUE(d1->fw.dev.image_pending);
    uint64_t taken_at = wire ? edge + period : edge;
    autd3_emu_tick(e, d1->power_on_ns + taken_at - 1);
    ASSERT_TRUE(d1->fw.dev.image_pending);
    autd3_emu_tick(e, d1->power_on_ns + taken_at);
    ASSERT_FALSE(d1->fw.dev.image_pending);
    ASSERT_EQ(d1->fw.dev.time_reversals, 0);
    autd3_emu_destroy(e);
  }
}
