/*
 * The emulated TwinCAT runtime's ADS side (runtime.h): AMS/TCP frames in a
 * connection's receive buffer are answered into its output buffer as the
 * runtime of docs/twincat.md answers them, and device notifications are
 * written there each task cycle. No socket I/O here (server.c does it).
 */
#include <string.h>

#include "autd3/link_driver.h"
#include "emulation/twincat/runtime.h"
#include "platform/platform.h"

/* ---- output queue ---- */
static bool queue(autd3_tcemu_conn_t *c, size_t wcap, const uint8_t *p, size_t n) {
  if (c->wlen + n > wcap) return false;
  memcpy(c->wbuf + c->wlen, p, n);
  c->wlen += n;
  return true;
}

/* Reply to request `h`: swap addresses, set the response flag, queue it.
 * A client that lets its replies pile up beyond the buffer is dropped. */
static void reply(autd3_tcemu_t *e, autd3_tcemu_conn_t *c, const ams_header_t *req, uint32_t ams_error, const void *a, size_t na, const void *b, size_t nb) {
  ams_header_t h = {.target = req->source, .source = req->target, .cmd = req->cmd, .flags = AMS_SF_RESPONSE | AMS_SF_ADS,
                    .error = ams_error, .invoke = req->invoke};
  if (c->wlen + AMS_FRAME_HDR_LEN + na + nb > e->wcap) {
    c->dead = true;
    return;
  }
  c->wlen += autd3__ams_frame_encode(c->wbuf + c->wlen, e->wcap - c->wlen, &h, a, na, b, nb);
}

/* A failed request still gets its command's fixed reply fields, zeroed
 * (Read: result + length 0): Beckhoff AdsLib (inside pyads) ignores a
 * shorter reply and times out with 0x0745. */
static void reply_result(autd3_tcemu_t *e, autd3_tcemu_conn_t *c, const ams_header_t *req, uint32_t result) {
  uint8_t r[24] = {0};
  size_t n = 4;
  if (req->cmd == ADS_CMD_READ || req->cmd == ADS_CMD_READ_WRITE || req->cmd == ADS_CMD_ADD_NOTIFICATION || req->cmd == ADS_CMD_READ_STATE)
    n = 8;
  else if (req->cmd == ADS_CMD_READ_DEVICE_INFO)
    n = 24;
  ads_put_u32(r, result);
  reply(e, c, req, 0, r, n, NULL, 0);
}

/* Locate [offset, offset+len) in the task's images: returns a pointer or
 * sets *err to the ADS code a runtime gives (0x0703 outside, 0x0705 too long). */
static uint8_t *image_at(autd3_tcemu_t *e, uint32_t offset, uint32_t len, bool *is_input, uint32_t *err) {
  struct {
    uint32_t base, size;
    uint8_t *p;
    bool input;
  } img[2] = {{IO_INPUT, e->in_len, e->in_img, true}, {IO_OUTPUT, e->out_len, e->out_img, false}};
  for (int i = 0; i < 2; i++) {
    if (offset >= img[i].base && offset - img[i].base < img[i].size) {
      if ((uint64_t)(offset - img[i].base) + len > img[i].size) {
        *err = ADS_ERR_INVALID_SIZE;
        return NULL;
      }
      *is_input = img[i].input;
      return img[i].p + (offset - img[i].base);
    }
  }
  *err = ADS_ERR_INVALID_OFFSET;
  return NULL;
}

static void device_info(autd3_tcemu_t *e, autd3_tcemu_conn_t *c, const ams_header_t *h, const char *name) {
  uint8_t r[24] = {0};
  r[4] = 3, r[5] = 1;    /* TwinCAT 3.1 */
  ads_put_u16(r + 6, 4026); /* build 4026, the reference tool's default */
  memcpy(r + 8, name, strlen(name) < 16 ? strlen(name) : 16);
  reply(e, c, h, 0, r, 24, NULL, 0);
}

static void read_state(autd3_tcemu_t *e, autd3_tcemu_conn_t *c, const ams_header_t *h) {
  uint8_t r[8] = {0};
  ads_put_u16(r + 4, ADS_STATE_RUN);
  reply(e, c, h, 0, r, 8, NULL, 0);
}

static void serve_task(autd3_tcemu_t *e, autd3_tcemu_conn_t *c, const ams_header_t *h, const uint8_t *d) {
  uint32_t n = h->length, err = 0;
  bool in = false;
  switch (h->cmd) {
    case ADS_CMD_READ_DEVICE_INFO: device_info(e, c, h, "Task 1"); return;
    case ADS_CMD_READ_STATE: read_state(e, c, h); return;
    case ADS_CMD_READ: {
      if (n < 12) return reply_result(e, c, h, ADS_ERR_INVALID_SIZE);
      uint32_t ig = ads_get_u32(d), io = ads_get_u32(d + 4), len = ads_get_u32(d + 8);
      if (ig != IG_AUTD) return reply_result(e, c, h, ADS_ERR_INVALID_GRP);
      const uint8_t *p = image_at(e, io, len, &in, &err);
      if (!p) return reply_result(e, c, h, err);
      uint8_t r[8];
      ads_put_u32(r, 0);
      ads_put_u32(r + 4, len);
      return reply(e, c, h, 0, r, 8, p, len);
    }
    case ADS_CMD_WRITE: {
      if (n < 12) return reply_result(e, c, h, ADS_ERR_INVALID_SIZE);
      uint32_t ig = ads_get_u32(d), io = ads_get_u32(d + 4), len = ads_get_u32(d + 8);
      if ((uint64_t)len + 12 != n) return reply_result(e, c, h, ADS_ERR_INVALID_SIZE);
      if (ig != IG_AUTD) return reply_result(e, c, h, ADS_ERR_INVALID_GRP);
      uint8_t *p = image_at(e, io, len, &in, &err);
      if (!p) return reply_result(e, c, h, err);
      if (in) return reply_result(e, c, h, ADS_ERR_INVALID_ACCESS); /* inputs come from the devices */
      memcpy(p, d + 12, len);
      return reply_result(e, c, h, 0);
    }
    case ADS_CMD_ADD_NOTIFICATION: {
      if (n < 40) return reply_result(e, c, h, ADS_ERR_INVALID_SIZE);
      uint32_t ig = ads_get_u32(d), io = ads_get_u32(d + 4), len = ads_get_u32(d + 8), mode = ads_get_u32(d + 12);
      if (ig != IG_AUTD) return reply_result(e, c, h, ADS_ERR_INVALID_GRP);
      if (!image_at(e, io, len, &in, &err)) return reply_result(e, c, h, err);
      if (mode < ADS_TRANS_SERVER_CYCLE || mode > ADS_TRANS_SERVER_ON_CHANGE2) return reply_result(e, c, h, 0x0713);
      if (len == 0) return reply_result(e, c, h, ADS_ERR_INVALID_SIZE);
      for (int i = 0; i < AUTD3_TCEMU_MAX_NOTIF; i++) {
        autd3_tcemu_notif_t *nt = &c->notif[i];
        if (nt->used) continue;
        uint8_t *snap = nt->last;
        *nt = (autd3_tcemu_notif_t){.used = true, .handle = e->next_handle++, .offset = io, .len = len, .mode = mode,
                        .cycle_100ns = ads_get_u32(d + 20), .last = snap};
        if (e->next_handle == 0) e->next_handle = 1;
        uint8_t r[8];
        ads_put_u32(r, 0);
        ads_put_u32(r + 4, nt->handle);
        return reply(e, c, h, 0, r, 8, NULL, 0);
      }
      return reply_result(e, c, h, 0x0716); /* no further notification handle */
    }
    case ADS_CMD_DEL_NOTIFICATION: {
      if (n < 4) return reply_result(e, c, h, ADS_ERR_INVALID_SIZE);
      uint32_t handle = ads_get_u32(d);
      for (int i = 0; i < AUTD3_TCEMU_MAX_NOTIF; i++)
        if (c->notif[i].used && c->notif[i].handle == handle) {
          c->notif[i].used = false;
          return reply_result(e, c, h, 0);
        }
      return reply_result(e, c, h, ADS_ERR_INVALID_NOTIF_HANDLE);
    }
    default: return reply_result(e, c, h, ADS_ERR_SRV_NOT_SUPP); /* ReadWrite, WriteControl, ... */
  }
}

static void handle_frame(autd3_tcemu_t *e, autd3_tcemu_conn_t *c, uint16_t tcmd, const uint8_t *f, size_t len) {
  if (tcmd == AMS_TCP_PORT_CONNECT) {
    /* A local router hands out a port and tells its NetId (ads-rs Source::Request). */
    uint8_t r[8];
    memcpy(r, e->cfg.netid.b, 6);
    ads_put_u16(r + 6, e->next_router_port++);
    if (e->next_router_port < 30000) e->next_router_port = 30000;
    size_t k = autd3__ams_router_encode(e->scratch, sizeof e->scratch, AMS_TCP_PORT_CONNECT, r, 8);
    if (!queue(c, e->wcap, e->scratch, k)) c->dead = true;
    return;
  }
  if (tcmd == AMS_TCP_GET_LOCAL_NETID) {
    size_t k = autd3__ams_router_encode(e->scratch, sizeof e->scratch, AMS_TCP_GET_LOCAL_NETID, e->cfg.netid.b, 6);
    if (!queue(c, e->wcap, e->scratch, k)) c->dead = true;
    return;
  }
  if (tcmd != AMS_TCP_ADS) return; /* port close, router notes: nothing to answer */
  ams_header_t h;
  const uint8_t *d;
  if (autd3__ams_frame_decode(f, len, &h, &d) != AUTD3_OK) {
    c->dead = true; /* lengths disagree: the stream cannot be trusted any more */
    return;
  }
  if (h.flags & AMS_SF_RESPONSE) return; /* we never send requests */
  c->peer = h.source;
  c->have_peer = true;
  if (!autd3__ams_netid_eq(&h.target.netid, &e->cfg.netid)) return reply(e, c, &h, ADS_ERR_TARGET_MACHINE_NOT_FOUND, NULL, 0, NULL, 0);
  if (h.target.port == TASK_PORT) return serve_task(e, c, &h, d);
  if (h.target.port == SYSTEM_PORT) {
    if (h.cmd == ADS_CMD_READ_STATE) return read_state(e, c, &h);
    if (h.cmd == ADS_CMD_READ_DEVICE_INFO) return device_info(e, c, &h, "TwinCAT System");
    return reply_result(e, c, &h, ADS_ERR_SRV_NOT_SUPP);
  }
  reply(e, c, &h, ADS_ERR_TARGET_PORT_NOT_FOUND, NULL, 0, NULL, 0);
}

/* Parse every whole frame in the receive buffer. */
void autd3__tcemu_process_input(autd3_tcemu_t *e, autd3_tcemu_conn_t *c) {
  size_t pos = 0;
  while (!c->dead) {
    if (c->skip > 0) {
      size_t k = c->skip < c->rlen - pos ? c->skip : c->rlen - pos;
      pos += k;
      c->skip -= k;
      if (c->skip > 0) break;
    }
    uint16_t tcmd;
    size_t flen;
    int r = autd3__ams_frame_peek(c->rbuf + pos, c->rlen - pos, e->rcap, &tcmd, &flen);
    if (r == 0) break;
    if (r < 0) {
      /* Too long for any legitimate request: answer 0x0705 from its header
       * (when it is a consistent ADS request) and discard its bytes. */
      if (c->rlen - pos < AMS_FRAME_HDR_LEN) break;
      ams_header_t h;
      uint32_t body = ads_get_u32(c->rbuf + pos + 2);
      autd3__ams_header_peek(c->rbuf + pos, c->rlen - pos, &h);
      if (tcmd == AMS_TCP_ADS) {
        if ((uint64_t)h.length + AMS_HDR_LEN != body) {
          c->dead = true;
          break;
        }
        if (!(h.flags & AMS_SF_RESPONSE)) reply_result(e, c, &h, ADS_ERR_INVALID_SIZE);
      }
      c->skip = (size_t)body + AMS_TCP_HDR_LEN;
      continue;
    }
    handle_frame(e, c, tcmd, c->rbuf + pos, flen);
    pos += flen;
    c->framed = true;
    c->since_ns = autd3__now_ns();
  }
  memmove(c->rbuf, c->rbuf + pos, c->rlen - pos);
  c->rlen -= pos;
}

/* One notification frame per connection carrying every due sample. */
void autd3__tcemu_notify(autd3_tcemu_t *e, autd3_tcemu_conn_t *c, uint64_t cycle, uint64_t filetime) {
  if (!c->have_peer) return;
  size_t hdr = AMS_FRAME_HDR_LEN, pos = hdr + 4 + 4 + 8 + 4;
  uint32_t samples = 0;
  for (int i = 0; i < AUTD3_TCEMU_MAX_NOTIF; i++) {
    autd3_tcemu_notif_t *nt = &c->notif[i];
    if (!nt->used) continue;
    bool in;
    uint32_t err;
    const uint8_t *p = image_at(e, nt->offset, nt->len, &in, &err);
    if (!p) continue;
    bool on_change = nt->mode == ADS_TRANS_SERVER_ON_CHANGE || nt->mode == ADS_TRANS_SERVER_ON_CHANGE2;
    uint64_t period = nt->cycle_100ns ? ((uint64_t)nt->cycle_100ns * 100 + e->task_ns - 1) / e->task_ns : 1;
    if (nt->sent_once && cycle - nt->last_cycle < period) continue;
    if (on_change && nt->sent_once && memcmp(nt->last, p, nt->len) == 0) continue;
    if (c->wlen + pos + 8 + nt->len > e->wcap) break; /* client is not reading: skip, never block */
    uint8_t *w = c->wbuf + c->wlen;
    ads_put_u32(w + pos, nt->handle);
    ads_put_u32(w + pos + 4, nt->len);
    memcpy(w + pos + 8, p, nt->len);
    memcpy(nt->last, p, nt->len);
    pos += 8 + nt->len;
    nt->last_cycle = cycle;
    nt->sent_once = true;
    samples++;
  }
  if (samples == 0) return;
  uint8_t *w = c->wbuf + c->wlen;
  ams_header_t h = {.target = c->peer, .source = {.netid = e->cfg.netid, .port = TASK_PORT}, .cmd = ADS_CMD_NOTIFICATION,
                    .flags = AMS_SF_ADS, .invoke = 0};
  size_t data = pos - hdr;
  ads_put_u32(w + hdr, (uint32_t)(data - 4));
  ads_put_u32(w + hdr + 4, 1); /* one stamp */
  ads_put_u64(w + hdr + 8, filetime);
  ads_put_u32(w + hdr + 16, samples);
  /* header last: autd3__ams_frame_encode with no parts only writes the 38 bytes */
  uint8_t hb[AMS_FRAME_HDR_LEN];
  autd3__ams_frame_encode(hb, sizeof hb, &h, NULL, 0, NULL, 0);
  ads_put_u32(hb + 2, (uint32_t)(AMS_HDR_LEN + data));
  ads_put_u32(hb + AMS_TCP_HDR_LEN + 20, (uint32_t)data);
  memcpy(w, hb, hdr);
  c->wlen += pos;
}
