/*
 * Optional mailbox + CoE of an emulated AUTD3 (autd3-emu --mailbox), the
 * ESI-faithful variant (docs/emulator.md "Mailbox"): SM0 at 0x1000 and SM1 at
 * 0x1400 (128 bytes each), and the CoE services the AUTD3 ESI declares
 * (<CoE SdoInfo="true" SegmentedSdo="true" CompleteAccess="true"/>):
 *  - SDO upload: expedited, normal, segmented, complete access;
 *  - SDO Information: object list, object description, entry description, so
 *    that a master browsing the dictionary (SOEM's slaveinfo -sdo, pysoem's
 *    `od`) gets an answer to every request instead of waiting out a timeout;
 *  - downloads are refused with an abort: the AUTD3's PDOs are fixed.
 * Numbers: ETG.1000.4 (mailbox header, mailbox error codes), ETG.1000.6
 * (CoE: SDO, SDO Information, abort codes, object access bits) and CiA 301
 * (data types, object codes, the 0x1000-0x1FFF objects).
 *
 * Called by esc.c when the master wrote SM0's last byte; the response is
 * placed in SM1 and marked full. No allocation, bounded loops.
 */
#include <string.h>

#include "emulation/ethercat/emu.h"

#define MBX_OUT 0x1000
#define MBX_IN 0x1400
#define MBX_LEN 128
#define MBX_HDR 6

/* Mailbox types (ETG.1000.4) */
enum { MBX_ERR = 0x00, MBX_COE = 0x03 };
/* Mailbox error reply details (ETG.1000.4 Table "Mailbox error reply") */
enum {
  MBXERR_UNSUPPORTED_PROTOCOL = 0x0002,
  MBXERR_SERVICE_NOT_SUPPORTED = 0x0004,
  MBXERR_SIZE_TOO_SHORT = 0x0006,
  MBXERR_INVALID_SIZE = 0x0008
};
/* CoE services (number 9 bits | service << 12) and SDO Information opcodes (ETG.1000.6) */
enum { COE_SDO_REQ = 2, COE_SDO_RES = 3, COE_SDO_INFO = 8 };
enum { INFO_ODLIST_REQ = 1, INFO_ODLIST_RES, INFO_OD_REQ, INFO_OD_RES, INFO_OE_REQ, INFO_OE_RES, INFO_ERROR };
/* SDO abort codes (ETG.1000.6) */
#define ABORT_TOGGLE 0x05030000u
#define ABORT_COMMAND 0x05040001u
#define ABORT_UNSUPPORTED_ACCESS 0x06010000u
#define ABORT_READ_ONLY 0x06010002u
#define ABORT_NO_OBJECT 0x06020000u
#define ABORT_NO_SUBINDEX 0x06090011u
#define ABORT_VALUE_RANGE 0x06090030u
/* Object codes and basic data types (CiA 301) */
enum { OBJ_VAR = 7, OBJ_ARRAY = 8, OBJ_RECORD = 9 };
enum { DT_UNSIGNED8 = 0x0005, DT_UNSIGNED16 = 0x0006, DT_UNSIGNED32 = 0x0007, DT_STRING = 0x0009,
       DT_PDO_MAPPING = 0x0021, DT_IDENTITY = 0x0023 };
/* Object access (ETG.1000.6 entry description): readable in PRE-OP, SAFE-OP, OP; PDO mappable */
#define ACC_RO 0x0007u
#define ACC_RXPDO 0x0040u
#define ACC_TXPDO 0x0080u

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v); put16(p + 2, (uint16_t)(v >> 16)); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

/* ---- the object dictionary ---- */

/* SII string n (1-based) of the Strings category, which sii.c places first. */
static const uint8_t *sii_string(const uint8_t *sii, unsigned n, uint8_t *len) {
  const uint8_t *s = sii + 0x80 + 4 + 1;
  for (unsigned i = 1; i < n; i++) s += 1 + s[0];
  *len = s[0];
  return s + 1;
}

/*
 * The objects, in index order (the order of the SDO Information object list).
 * The communication area is what the AUTD3 ESI lists (0x1000, 0x1008, 0x1009,
 * 0x100A, 0x1018, 0x1C00) plus the fixed PDO mapping and assignment a master
 * reads to size the process data (0x1600, 0x1601, 0x1A00, 0x1C12, 0x1C13),
 * which the ESI gives as RxPdo/TxPdo elements; then the mapped objects
 * themselves (0x6000 input, 0x7000/0x7001 outputs). For ARRAY objects dtype is
 * the element type, for RECORDs the structure type.
 */
typedef struct {
  uint16_t index;
  uint8_t code;
  uint8_t subs; /* highest subindex (ARRAY/RECORD) */
  uint16_t dtype;
  uint16_t access; /* of subindices >= 1 (VAR: of subindex 0) */
  const char *name;
} od_obj_t;

static const od_obj_t OD[] = {
    {0x1000, OBJ_VAR, 0, DT_UNSIGNED32, ACC_RO, "Device type"},
    {0x1008, OBJ_VAR, 0, DT_STRING, ACC_RO, "Device name"},
    {0x1009, OBJ_VAR, 0, DT_STRING, ACC_RO, "Hardware version"},
    {0x100A, OBJ_VAR, 0, DT_STRING, ACC_RO, "Software version"},
    {0x1018, OBJ_RECORD, 4, DT_IDENTITY, ACC_RO, "Identity"},
    {0x1600, OBJ_RECORD, 249, DT_PDO_MAPPING, ACC_RO, "RxPdo0"},
    {0x1601, OBJ_RECORD, 64, DT_PDO_MAPPING, ACC_RO, "RxPdo1"},
    {0x1A00, OBJ_RECORD, 1, DT_PDO_MAPPING, ACC_RO, "TxPdo"},
    {0x1C00, OBJ_ARRAY, 4, DT_UNSIGNED8, ACC_RO, "Sync manager type"},
    {0x1C12, OBJ_ARRAY, 2, DT_UNSIGNED16, ACC_RO, "RxPDO assign"},
    {0x1C13, OBJ_ARRAY, 1, DT_UNSIGNED16, ACC_RO, "TxPDO assign"},
    {0x6000, OBJ_ARRAY, 1, DT_UNSIGNED16, ACC_RO | ACC_TXPDO, "Inputs"},
    {0x7000, OBJ_ARRAY, 249, DT_UNSIGNED16, ACC_RO | ACC_RXPDO, "Outputs 0"},
    {0x7001, OBJ_ARRAY, 64, DT_UNSIGNED16, ACC_RO | ACC_RXPDO, "Outputs 1"},
};
#define OD_COUNT (sizeof OD / sizeof OD[0])

static const od_obj_t *od_find(uint16_t index) {
  for (size_t i = 0; i < OD_COUNT; i++)
    if (OD[i].index == index) return &OD[i];
  return NULL;
}

/* The value of (index, sub) into out (≤ 4 bytes, or a string of ≤ 31);
 * returns its size, 0 = no such subindex, -1 = no such object. */
static int od_entry(const autd3_esc_t *e, uint16_t index, uint8_t sub, uint8_t *out) {
  const od_obj_t *o = od_find(index);
  if (!o) return -1;
  if (o->code == OBJ_VAR ? sub != 0 : sub > o->subs) return 0;
  if (o->code != OBJ_VAR && sub == 0) {
    out[0] = o->subs;
    return 1;
  }
  const uint8_t *m = e->mem;
  switch (index) {
    case 0x1000: put32(out, 5001); return 4; /* device type: profile 5001 (modular device) */
    case 0x1008: { /* device name: SII string 1, what SOEM shows as the name */
      uint8_t n;
      const uint8_t *s = sii_string(e->sii, 1, &n);
      memcpy(out, s, n);
      return n;
    }
    /* the AUTD3 ESI's values: the ESC IP core and the slave stack version */
    case 0x1009: memcpy(out, "JSL-ESC.1", 9); return 9;
    case 0x100A: memcpy(out, "5.11", 4); return 4;
    case 0x1018: memcpy(out, e->sii + 0x10 + (sub - 1) * 4, 4); return 4; /* vendor, product, revision, serial */
    case 0x1C00: out[0] = sub; return 1; /* mailbox out, mailbox in, outputs, inputs */
    case 0x1C12: put16(out, (uint16_t)(0x1600 + sub - 1)); return 2;
    case 0x1C13: put16(out, 0x1A00); return 2;
    case 0x1600: case 0x1601: case 0x1A00: { /* 16-bit entries */
      uint16_t obj = index == 0x1600 ? 0x7000 : index == 0x1601 ? 0x7001 : 0x6000;
      put32(out, (uint32_t)obj << 16 | (uint32_t)sub << 8 | 16);
      return 4;
    }
    /* the mapped objects read what the process data last held */
    case 0x6000: memcpy(out, m + AUTD3_EMU_SM3_START, 2); return 2;
    case 0x7000: memcpy(out, m + AUTD3_EMU_SM2_START + (sub - 1) * 2, 2); return 2;
    case 0x7001: memcpy(out, m + AUTD3_EMU_SM2_START + 249 * 2 + (sub - 1) * 2, 2); return 2;
    default: return -1;
  }
}

/* Serialise (index, sub) or, with complete access, subindex 0 (as u8 + pad)
 * and all subindices. Returns the size, or an SDO abort code as -(code). */
static int64_t od_read(const autd3_esc_t *e, uint16_t index, uint8_t sub, bool ca, uint8_t *buf, size_t cap) {
  uint8_t v[64];
  int n = od_entry(e, index, ca ? 0 : sub, v);
  if (n < 0) return -(int64_t)ABORT_NO_OBJECT;
  if (n == 0) return -(int64_t)ABORT_NO_SUBINDEX;
  if (!ca) {
    memcpy(buf, v, (size_t)n);
    return n;
  }
  /* complete access: of ARRAY/RECORD objects, starting at subindex 0 or 1 */
  if (sub > 1 || od_find(index)->code == OBJ_VAR) return -(int64_t)ABORT_UNSUPPORTED_ACCESS;
  size_t len = 0;
  if (sub == 0) {
    buf[len++] = v[0];
    buf[len++] = 0; /* subindex 0 travels as 16 bits in complete access */
  }
  uint8_t count = v[0];
  for (unsigned s = 1; s <= count; s++) {
    int m = od_entry(e, index, (uint8_t)s, v);
    if (m <= 0 || len + (size_t)m > cap) return -(int64_t)ABORT_UNSUPPORTED_ACCESS;
    memcpy(buf + len, v, (size_t)m);
    len += (size_t)m;
  }
  return (int64_t)len;
}

/* ---- responses ---- */

/* Place a response (after the 6-byte mailbox header) in SM1 and mark it full. */
static void respond(autd3_esc_t *e, uint8_t type, const uint8_t *body, uint16_t len) {
  uint8_t *r = e->mem + MBX_IN;
  memset(r, 0, MBX_LEN);
  put16(r, len);
  e->mbx_counter = (uint8_t)(e->mbx_counter % 7 + 1); /* 1..7 */
  r[5] = (uint8_t)(type | (e->mbx_counter << 4));
  memcpy(r + MBX_HDR, body, len);
  e->mbx_in_full = true;
}

static void mailbox_error(autd3_esc_t *e, uint16_t detail) {
  uint8_t b[4];
  put16(b, 0x01); /* service: mailbox error reply */
  put16(b + 2, detail);
  respond(e, MBX_ERR, b, 4);
}

static void abort_sdo(autd3_esc_t *e, uint16_t index, uint8_t sub, uint32_t code) {
  uint8_t b[10];
  put16(b, COE_SDO_REQ << 12); /* an abort travels with the SDO *request* service (2), as SOEM expects */
  b[2] = 0x80;
  put16(b + 3, index);
  b[5] = sub;
  put32(b + 6, code);
  respond(e, MBX_COE, b, 10);
}

/* ---- SDO Information (ETG.1000.6): one request, one unfragmented response ---- */

static void info_error(autd3_esc_t *e, uint32_t code) {
  uint8_t b[10] = {0};
  put16(b, COE_SDO_INFO << 12);
  b[2] = INFO_ERROR;
  put32(b + 6, code);
  respond(e, MBX_COE, b, 10);
}

/* Start an SDO Information response: CoE header, opcode, reserved, fragments left = 0. */
static size_t info_begin(uint8_t *b, uint8_t opcode) {
  memset(b, 0, 6);
  put16(b, COE_SDO_INFO << 12);
  b[2] = opcode;
  return 6;
}

/* Does object o belong to object list `type` (1 all, 2 RxPDO-, 3 TxPDO-mappable,
 * 4 stored for device replacement, 5 startup parameters: none here)? */
static bool in_list(const od_obj_t *o, uint16_t type) {
  return type == 1 || (type == 2 && (o->access & ACC_RXPDO)) || (type == 3 && (o->access & ACC_TXPDO));
}

static void info_odlist(autd3_esc_t *e, uint16_t type) {
  uint8_t b[MBX_LEN - MBX_HDR];
  size_t n = info_begin(b, INFO_ODLIST_RES);
  put16(b + n, type);
  n += 2;
  if (type == 0) { /* the number of objects in each of the five lists */
    for (uint16_t t = 1; t <= 5; t++, n += 2) {
      uint16_t c = 0;
      for (size_t i = 0; i < OD_COUNT; i++) c = (uint16_t)(c + in_list(&OD[i], t));
      put16(b + n, c);
    }
  } else if (type <= 5) {
    /* the whole dictionary fits one response (14 objects, room for 57), so
     * "fragments left" stays 0 */
    for (size_t i = 0; i < OD_COUNT; i++)
      if (in_list(&OD[i], type)) {
        put16(b + n, OD[i].index);
        n += 2;
      }
  } else {
    info_error(e, ABORT_VALUE_RANGE);
    return;
  }
  respond(e, MBX_COE, b, (uint16_t)n);
}

static void info_od(autd3_esc_t *e, uint16_t index) {
  const od_obj_t *o = od_find(index);
  if (!o) {
    info_error(e, ABORT_NO_OBJECT);
    return;
  }
  uint8_t b[MBX_LEN - MBX_HDR];
  size_t n = info_begin(b, INFO_OD_RES);
  put16(b + n, o->index);
  put16(b + n + 2, o->dtype);
  b[n + 4] = o->subs;
  b[n + 5] = o->code;
  n += 6;
  size_t l = strlen(o->name);
  memcpy(b + n, o->name, l);
  respond(e, MBX_COE, b, (uint16_t)(n + l));
}

static void info_oe(autd3_esc_t *e, uint16_t index, uint8_t sub, uint8_t value_info) {
  const od_obj_t *o = od_find(index);
  if (!o) {
    info_error(e, ABORT_NO_OBJECT);
    return;
  }
  if (o->code == OBJ_VAR ? sub != 0 : sub > o->subs) {
    info_error(e, ABORT_NO_SUBINDEX);
    return;
  }
  uint16_t dtype = o->dtype, bits = 0, access = o->access;
  char name[32];
  if (o->code == OBJ_VAR) {
    uint8_t v[64];
    int len = od_entry(e, index, 0, v);
    bits = (uint16_t)(len * 8); /* strings: their current length */
    memcpy(name, o->name, strlen(o->name) + 1);
  } else if (sub == 0) {
    dtype = DT_UNSIGNED8, bits = 8, access = ACC_RO;
    memcpy(name, "SubIndex 000", 13);
  } else {
    if (o->code == OBJ_RECORD) dtype = DT_UNSIGNED32; /* identity fields and PDO mapping entries */
    bits = dtype == DT_UNSIGNED8 ? 8 : dtype == DT_UNSIGNED16 ? 16 : 32;
    static const char *const identity[4] = {"Vendor ID", "Product code", "Revision", "Serial number"};
    if (index == 0x1018) memcpy(name, identity[sub - 1], strlen(identity[sub - 1]) + 1);
    else {
      memcpy(name, "SubIndex 000", 13);
      name[9] = (char)('0' + sub / 100), name[10] = (char)('0' + sub / 10 % 10), name[11] = (char)('0' + sub % 10);
    }
  }
  uint8_t b[MBX_LEN - MBX_HDR];
  size_t n = info_begin(b, INFO_OE_RES);
  put16(b + n, index);
  b[n + 2] = sub;
  /* value info: which optional parts follow (unit, default, min, max, bits 3-6);
   * none are served, so those bits are cleared */
  b[n + 3] = (uint8_t)(value_info & 0x07);
  put16(b + n + 4, dtype);
  put16(b + n + 6, bits);
  put16(b + n + 8, access);
  n += 10;
  size_t l = strlen(name);
  memcpy(b + n, name, l);
  respond(e, MBX_COE, b, (uint16_t)(n + l));
}

/* c: the CoE part (len bytes, len >= 2). */
static void sdo_info(autd3_esc_t *e, const uint8_t *c, uint16_t len) {
  /* minimum lengths: header 6, + list type / index 2, + index, subindex, value info 4 */
  uint8_t opcode = c[2] & 0x7F;
  uint16_t need = opcode == INFO_ODLIST_REQ || opcode == INFO_OD_REQ ? 8 : opcode == INFO_OE_REQ ? 10 : 6;
  if (len < need) {
    mailbox_error(e, MBXERR_SIZE_TOO_SHORT);
    return;
  }
  switch (opcode) {
    case INFO_ODLIST_REQ: info_odlist(e, get16(c + 6)); break;
    case INFO_OD_REQ: info_od(e, get16(c + 6)); break;
    case INFO_OE_REQ: info_oe(e, get16(c + 6), c[8], c[9]); break;
    default: info_error(e, ABORT_COMMAND); break; /* a response or error opcode sent to the device */
  }
}

/* ---- SDO (ETG.1000.6): c is the CoE part, len >= 10 ---- */
static void sdo(autd3_esc_t *e, const uint8_t *c) {
  uint8_t cmd = c[2];
  uint16_t index = get16(c + 3);
  uint8_t sub = c[5];
  uint8_t ccs = cmd >> 5;
  if (ccs == 2) { /* initiate upload */
    bool ca = (cmd & 0x10) != 0;
    int64_t n = od_read(e, index, sub, ca, e->sdo_buf, sizeof e->sdo_buf);
    if (n < 0) {
      abort_sdo(e, index, sub, (uint32_t)-n);
      return;
    }
    uint8_t b[MBX_LEN];
    put16(b, COE_SDO_RES << 12);
    put16(b + 3, index);
    b[5] = sub;
    if (n <= 4 && !ca) { /* expedited */
      b[2] = (uint8_t)(0x43 | ((4 - n) << 2));
      memset(b + 6, 0, 4);
      memcpy(b + 6, e->sdo_buf, (size_t)n);
      respond(e, MBX_COE, b, 10);
      return;
    }
    b[2] = (uint8_t)(0x41 | (ca ? 0x10 : 0));
    put32(b + 6, (uint32_t)n);
    uint16_t first = (uint16_t)((uint32_t)n < MBX_LEN - 16 ? (uint32_t)n : MBX_LEN - 16);
    memcpy(b + 10, e->sdo_buf, first);
    e->sdo_len = (uint16_t)n;
    e->sdo_pos = first;
    e->sdo_toggle = 0;
    respond(e, MBX_COE, b, (uint16_t)(10 + first));
    return;
  }
  if (ccs == 3) { /* upload segment */
    uint8_t toggle = cmd & 0x10;
    if (e->sdo_pos >= e->sdo_len || toggle != e->sdo_toggle) {
      abort_sdo(e, index, sub, toggle != e->sdo_toggle ? ABORT_TOGGLE : ABORT_COMMAND);
      return;
    }
    uint8_t b[MBX_LEN];
    put16(b, COE_SDO_RES << 12);
    uint16_t room = MBX_LEN - MBX_HDR - 3, left = (uint16_t)(e->sdo_len - e->sdo_pos);
    uint16_t n = left < room ? left : room;
    bool last = n == left;
    memset(b + 3, 0, 7);
    memcpy(b + 3, e->sdo_buf + e->sdo_pos, n);
    e->sdo_pos = (uint16_t)(e->sdo_pos + n);
    b[2] = (uint8_t)(toggle | (last ? 1 : 0) | (n < 7 ? (7 - n) << 1 : 0));
    e->sdo_toggle ^= 0x10;
    respond(e, MBX_COE, b, (uint16_t)(3 + (n < 7 ? 7 : n)));
    return;
  }
  if (ccs == 4) { /* the master aborts a transfer: forget it, no answer */
    e->sdo_len = e->sdo_pos = 0;
    return;
  }
  if (ccs == 1 || ccs == 0) { /* download: the AUTD3's objects are read-only (fixed PDOs) */
    abort_sdo(e, index, sub, od_find(index) ? ABORT_READ_ONLY : ABORT_NO_OBJECT);
    return;
  }
  abort_sdo(e, index, sub, ABORT_COMMAND); /* command specifier not valid */
}

void autd3_esc_mailbox(autd3_esc_t *e) {
  const uint8_t *q = e->mem + MBX_OUT;
  uint16_t len = get16(q);
  uint8_t type = q[5] & 0x0F;
  if (autd3_esc_al_state(e) == ESC_AL_INIT) return; /* no mailbox service in INIT */
  if (type != MBX_COE) { /* only CoE is served (the ESI's FoE is not declared) */
    mailbox_error(e, MBXERR_UNSUPPORTED_PROTOCOL);
    return;
  }
  if (len > MBX_LEN - MBX_HDR) {
    mailbox_error(e, MBXERR_INVALID_SIZE);
    return;
  }
  const uint8_t *c = q + MBX_HDR;
  /* Each service has its own minimum length (SDO requests 10 bytes, SDO
   * Information requests 8 or 10): a shorter request is "size too short". */
  uint8_t service = len >= 2 ? (uint8_t)(c[1] >> 4) : 0;
  if (len < 2 || (service == COE_SDO_REQ && len < 10)) {
    mailbox_error(e, MBXERR_SIZE_TOO_SHORT);
    return;
  }
  if (service == COE_SDO_REQ) sdo(e, c);
  else if (service == COE_SDO_INFO) sdo_info(e, c, len);
  else mailbox_error(e, MBXERR_SERVICE_NOT_SUPPORTED); /* emergency, PDO services, responses */
}
