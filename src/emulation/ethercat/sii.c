/*
 * The synthesized SII EEPROM image of an emulated AUTD3 (ETG.2010 layout;
 * identity, SMs and PDOs from the AUTD3 ESI, shinolab/autd3-old-monorepo
 * TwinCAT AUTD.xml).
 *
 * Choices (docs/emulator.md "SII image"):
 *  - No mailbox by default (--mailbox declares the ESI's, served by
 *    mailbox.c): words 0x18-0x1C are 0 and the CoE details are 0. The real
 *    ESI declares CoE+FoE, but a declared mailbox must be served (SOEM waits
 *    700 ms per unanswered SDO), and with none SOEM/EtherCrab/pysoem take the
 *    PDO layout from the SII PDO categories, which gives the same 626/2-byte
 *    mapping and the same expected WKC (3 per device).
 *  - EEPROM size: with --mailbox the ESI's 2 KiB (16 Kbit, word 0x3E =
 *    0x0F) and, as on a real device, no RxPDO category: its 313 entries (2.5
 *    KiB) do not fit, so the mapping is only behind CoE (mailbox.c). Without
 *    a mailbox the SII is the masters' only source of the mapping, so the
 *    image declares 32 Kbit (0x1F) and carries the full RxPDO list last,
 *    below SOEM's 4096-byte SII cache; register 0x0502 reports the matching
 *    address width (esc.c).
 *  - SOEM takes the device name from string 1, EtherCrab from the General
 *    category's name index: both point at "AUTD".
 */
#include <string.h>

#include "emulation/ethercat/emu.h"

static void put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
  put16(p, (uint16_t)v);
  put16(p + 2, (uint16_t)(v >> 16));
}

uint8_t autd3_sii_crc(const uint8_t *bytes14) {
  uint8_t crc = 0xFF;
  for (int i = 0; i < 14; i++) {
    crc ^= bytes14[i];
    for (int b = 0; b < 8; b++)
      crc = (uint8_t)((crc & 0x80) ? (crc << 1) ^ 0x07 : crc << 1);
  }
  return crc;
}

/* Start category `type` at byte offset *off; returns the data pointer. The
 * length (in words) is filled by cat_end. */
static uint8_t *cat_begin(uint8_t *sii, size_t *off, uint16_t type) {
  put16(sii + *off, type);
  *off += 4;
  return sii + *off;
}
static void cat_end(uint8_t *sii, size_t *off, size_t data_bytes) {
  if (data_bytes & 1) sii[*off + data_bytes++] = 0; /* categories are whole words */
  put16(sii + *off - 2, (uint16_t)(data_bytes / 2));
  *off += data_bytes;
}

/* One PDO: header (index, entries, SM, dc, name, flags) + entries. */
static size_t pdo(uint8_t *p, uint16_t index, uint8_t sm, uint8_t name, uint16_t entry_index, uint16_t n) {
  put16(p, index);
  p[2] = (uint8_t)n;
  p[3] = sm;
  p[4] = 0;
  p[5] = name;
  put16(p + 6, 0x0011); /* mandatory + fixed, as the ESI's RxPdo/TxPdo Fixed="1" Mandatory="1" */
  uint8_t *e = p + 8;
  for (uint16_t i = 0; i < n; i++, e += 8) {
    put16(e, entry_index);
    e[2] = (uint8_t)(i + 1);
    e[3] = 0;
    e[4] = 0x06; /* UNSIGNED16 */
    e[5] = 16;
    put16(e + 6, 0);
  }
  return 8 + (size_t)n * 8;
}

void autd3_sii_build(uint8_t *sii, uint32_t vendor, uint32_t serial, const char *name, bool mailbox) {
  memset(sii, 0xFF, AUTD3_EMU_SII_BYTES);
  memset(sii, 0, 128);
  /* Header words 0..6 from the ESI ConfigData 80 3E 00 AA 00 00 01 00. */
  put16(sii + 0, 0x3E80);
  put16(sii + 2, 0xAA00);
  put16(sii + 6, 0x0001);
  sii[14] = autd3_sii_crc(sii);
  sii[15] = 0;
  put32(sii + 0x08 * 2, vendor);
  put32(sii + 0x0A * 2, AUTD3_EMU_PRODUCT);
  put32(sii + 0x0C * 2, AUTD3_EMU_REVISION);
  put32(sii + 0x0E * 2, serial);
  /* 0x14..0x17 bootstrap mailbox and 0x18..0x1C standard mailbox: 0 = none. */
  if (mailbox) { /* ESI: bootstrap and standard mailboxes 0x1000/0x1400, 128 bytes; CoE only (FoE not served) */
    static const uint16_t mb[9] = {0x1000, 0x0080, 0x1400, 0x0080, 0x1000, 0x0080, 0x1400, 0x0080, 0x0004};
    for (int i = 0; i < 9; i++) put16(sii + (0x14 + i) * 2, mb[i]);
  }
  put16(sii + 0x3E * 2, mailbox ? 0x000F : 0x001F); /* size in Kbit − 1: 16 / 32 Kbit */
  put16(sii + 0x3F * 2, 0x0001);

  size_t off = 0x40 * 2;
  /* Strings (10) */
  const char *strs[] = {name ? name : "AUTD", "RxPdo0", "RxPdo1", "TxPdo"};
  uint8_t *d = cat_begin(sii, &off, 10);
  size_t n = 0;
  d[n++] = 4;
  for (int i = 0; i < 4; i++) {
    size_t l = strlen(strs[i]);
    if (l > 31) l = 31;
    d[n++] = (uint8_t)l;
    memcpy(d + n, strs[i], l);
    n += l;
  }
  cat_end(sii, &off, n);
  /* General (30), 32 bytes */
  d = cat_begin(sii, &off, 30);
  memset(d, 0, 32);
  d[0] = 1;     /* group "AUTD" */
  d[2] = 1;     /* order */
  d[3] = 1;     /* name */
  d[5] = mailbox ? 0x23 : 0;                /* CoE details: SDO, SDO info, complete access (ESI, all served) */
  d[11] = (uint8_t)(mailbox ? 0x06 : 0x02); /* "not LRW" (ESI UseLrdLwr="true"), + mailbox data link layer */
  d[14] = 1;    /* group index (compatibility duplicate) */
  put16(d + 16, 0x0011); /* ports 0 and 1: MII (ESI Physics="YY") */
  cat_end(sii, &off, 32);
  /* FMMU (40): outputs, inputs, unused, unused */
  d = cat_begin(sii, &off, 40);
  d[0] = 1;
  d[1] = 2;
  d[2] = mailbox ? 3 : 0xFF; /* mailbox state */
  d[3] = 0xFF;
  cat_end(sii, &off, 4);
  /* SyncManager (41): the ESI's four SMs */
  static const struct { uint16_t start, len; uint8_t ctrl, type; } sms[4] = {
      {0x1000, 128, 0x26, 1}, {0x1400, 128, 0x22, 2},
      {AUTD3_EMU_SM2_START, AUTD3_EMU_SM2_LEN, 0x64, 3}, {AUTD3_EMU_SM3_START, AUTD3_EMU_SM3_LEN, 0x20, 4}};
  d = cat_begin(sii, &off, 41);
  for (int i = 0; i < 4; i++) {
    put16(d + i * 8, sms[i].start);
    put16(d + i * 8 + 2, sms[i].len);
    d[i * 8 + 4] = sms[i].ctrl;
    d[i * 8 + 5] = 0;
    d[i * 8 + 6] = 1;
    d[i * 8 + 7] = sms[i].type;
  }
  cat_end(sii, &off, 32);
  /* TxPDO (50): 0x1A00 → SM3, 0x6000:01 u16 */
  d = cat_begin(sii, &off, 50);
  cat_end(sii, &off, pdo(d, 0x1A00, 3, 4, 0x6000, 1));
  /* RxPDO (51), last (largest): 0x1600 249 × 0x7000:nn, 0x1601 64 × 0x7001:nn → SM2, 626 bytes;
   * with a mailbox it does not fit the 2 KiB EEPROM and CoE serves it instead */
  if (!mailbox) {
    d = cat_begin(sii, &off, 51);
    n = pdo(d, 0x1600, 2, 2, 0x7000, 249);
    n += pdo(d + n, 0x1601, 2, 3, 0x7001, 64);
    cat_end(sii, &off, n);
  }
  put16(sii + off, 0xFFFF); /* end */
  put16(sii + off + 2, 0x0000);
}
