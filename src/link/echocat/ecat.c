/* EtherCAT frame codec and DC arithmetic (see ecat.h). */
#include "link/echocat/ecat.h"

#include <string.h>

void autd3__ecat_frame_init(ecat_frame_t *f, const uint8_t mac[6], uint8_t idx) {
  memset(f->buf, 0xff, 6); /* masters send to broadcast; slaves ignore the destination (ETG.1000.4 frame structure) */
  memcpy(f->buf + 6, mac, 6);
  f->buf[12] = 0x88, f->buf[13] = 0xA4;
  f->buf[14] = f->buf[15] = 0;
  f->len = ECAT_ETH_HDR + ECAT_HDR;
  f->last = 0;
  f->ndg = 0;
  f->idx = idx;
}

uint16_t autd3__ecat_frame_room(const ecat_frame_t *f) {
  int room = ECAT_ETH_HDR + ECAT_HDR + ECAT_MAX_PAYLOAD - f->len - ECAT_DG_OVERHEAD;
  return room > 0 ? (uint16_t)room : 0;
}

uint16_t autd3__ecat_dg_add(ecat_frame_t *f, uint8_t cmd, uint16_t adp, uint16_t ado, const void *data, uint16_t len) {
  if (len > 0x7FF || len > autd3__ecat_frame_room(f))
    return 0;
  uint8_t *h = f->buf + f->len;
  if (f->last)
    f->buf[f->last + 7] |= 0x80; /* M bit of the previous datagram: "more follow" (ETG.1000.4 datagram header) */
  h[0] = cmd;
  h[1] = f->idx;
  ecat_put16(h + 2, adp);
  ecat_put16(h + 4, ado);
  ecat_put16(h + 6, len);
  ecat_put16(h + 8, 0);
  if (data)
    memcpy(h + ECAT_DG_HDR, data, len);
  else
    memset(h + ECAT_DG_HDR, 0, len);
  ecat_put16(h + ECAT_DG_HDR + len, 0);
  f->last = f->len;
  f->len = (uint16_t)(f->len + ECAT_DG_OVERHEAD + len);
  f->ndg++;
  return (uint16_t)(f->last + ECAT_DG_HDR);
}

size_t autd3__ecat_frame_finish(ecat_frame_t *f) {
  uint16_t dlen = (uint16_t)(f->len - ECAT_ETH_HDR - ECAT_HDR);
  ecat_put16(f->buf + ECAT_ETH_HDR, (uint16_t)(0x1000 | dlen)); /* type 1 = EtherCAT commands (ETG.1000.4 frame header) */
  size_t wire = f->len;
  if (wire < ECAT_MIN_FRAME) {
    memset(f->buf + wire, 0, ECAT_MIN_FRAME - wire);
    wire = ECAT_MIN_FRAME;
  }
  return wire;
}

int autd3__ecat_parse(const uint8_t *frame, size_t len, ecat_dg_t *dgs, int max) {
  if (len < ECAT_ETH_HDR + ECAT_HDR + ECAT_DG_OVERHEAD)
    return -1;
  if (((frame[12] << 8) | frame[13]) != AUTD3_ETHERTYPE_ECAT) /* big-endian, unlike EtherCAT fields */
    return -1;
  uint16_t h = ecat_get16(frame + ECAT_ETH_HDR);
  size_t dlen = h & 0x7FF;
  if ((h >> 12) != 1 || ECAT_ETH_HDR + ECAT_HDR + dlen > len)
    return -1;
  size_t off = ECAT_ETH_HDR + ECAT_HDR, end = off + dlen;
  int n = 0;
  for (;;) {
    if (off + ECAT_DG_OVERHEAD > end)
      return -1;
    const uint8_t *d = frame + off;
    uint16_t lf = ecat_get16(d + 6);
    uint16_t dl = lf & 0x7FF;
    if (off + ECAT_DG_OVERHEAD + dl > end)
      return -1;
    if (n < max) {
      dgs[n].cmd = d[0];
      dgs[n].idx = d[1];
      dgs[n].adp = ecat_get16(d + 2);
      dgs[n].ado = ecat_get16(d + 4);
      dgs[n].len = dl;
      dgs[n].off = (uint16_t)(off + ECAT_DG_HDR);
      dgs[n].wkc = ecat_get16(d + ECAT_DG_HDR + dl);
    }
    n++;
    off += ECAT_DG_OVERHEAD + dl;
    if (!(lf & 0x8000))
      break;
    if (n > 255)
      return -1;
  }
  return n;
}

bool autd3__ecat_reply_matches(const ecat_frame_t *sent, size_t sent_len, const uint8_t *reply, size_t len, ecat_dg_t *dgs) {
  if (len != sent_len || sent->ndg == 0)
    return false;
  int n = autd3__ecat_parse(reply, len, dgs, sent->ndg);
  if (n != sent->ndg)
    return false;
  /* Walk the sent chain alongside: cmd, idx and length must be unchanged (slaves only touch ADP, data, WKC). */
  size_t off = ECAT_ETH_HDR + ECAT_HDR;
  for (int i = 0; i < n; i++) {
    const uint8_t *d = sent->buf + off;
    uint16_t dl = ecat_get16(d + 6) & 0x7FF;
    if (dgs[i].cmd != d[0] || dgs[i].idx != d[1] || dgs[i].len != dl)
      return false;
    off += ECAT_DG_OVERHEAD + dl;
  }
  return true;
}

uint16_t autd3__ecat_inputs_valid(uint16_t n, uint16_t lrd_wkc, const uint8_t *al, const uint16_t *al_wkc, bool *valid) {
  uint16_t answering = 0, ok = 0;
  for (uint16_t d = 0; d < n; d++) {
    uint8_t st = al[d] & 0x0F;
    bool pd = al_wkc[d] == 1 && (st == AL_SAFEOP || st == AL_OP);
    answering = (uint16_t)(answering + pd);
    valid[d] = pd && st == AL_OP;
    ok = (uint16_t)(ok + valid[d]);
  }
  if (lrd_wkc != answering) {
    memset(valid, 0, n);
    ok = 0;
  }
  return ok;
}
