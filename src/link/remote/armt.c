/*
 * ARMT v3 codec (see armt.h). Byte layouts follow shinolab/autd3-sdk
 * crates/autd3-rs-link-remote/src/wire.rs (encode_geometry / read_geometry)
 * and link.rs / server.rs (hello = magic then one version byte, u16 reply).
 */
#include "link/remote/armt.h"

#include <stdio.h>
#include <string.h>

enum { S_HELLO, S_COUNT, S_TCOUNT, S_SKIP, S_TAG, S_FRAME, S_CLOSED, S_ERROR };

static void put_u16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_f32(uint8_t *p, float f) {
  uint32_t v;
  memcpy(&v, &f, 4);
  put_u32(p, v);
}
static uint32_t get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

size_t armt__hello_bytes(const autd3_geometry_t *g) {
  size_t n = autd3_geometry_num_devices(g), total = ARMT_HELLO_BYTES + 4;
  for (size_t d = 0; d < n; d++) total += 4 + autd3_geometry_num_transducers(g, d) * ARMT_TRANSDUCER_BYTES;
  return total;
}

size_t armt__encode_hello(const autd3_geometry_t *g, uint8_t *out, size_t cap) {
  size_t need = armt__hello_bytes(g);
  if (out == NULL || cap < need) return 0;
  memcpy(out, ARMT_MAGIC, 4);
  out[4] = (uint8_t)ARMT_VERSION;
  size_t n = autd3_geometry_num_devices(g), at = ARMT_HELLO_BYTES;
  put_u32(out + at, (uint32_t)n);
  at += 4;
  for (size_t d = 0; d < n; d++) {
    size_t t = autd3_geometry_num_transducers(g, d);
    put_u32(out + at, (uint32_t)t);
    at += 4;
    for (size_t i = 0; i < t; i++) {
      float pos[3] = {0}, dir[3] = {0};
      (void)autd3_geometry_transducer(g, d, i, pos, dir);
      /* Order per transducer: position x,y,z then direction x,y,z (wire.rs: pos.iter().chain(dir.iter())). */
      for (int k = 0; k < 3; k++) put_f32(out + at + 4 * (size_t)k, pos[k]);
      for (int k = 0; k < 3; k++) put_f32(out + at + 12 + 4 * (size_t)k, dir[k]);
      at += ARMT_TRANSDUCER_BYTES;
    }
  }
  return at;
}

size_t armt__encode_refusal(uint8_t *out, size_t cap, uint8_t reason, const char *text) {
  size_t len = text ? strlen(text) : 0;
  if (len > ARMT_REFUSAL_TEXT_MAX) len = ARMT_REFUSAL_TEXT_MAX;
  if (cap < 5 + len) return 0;
  put_u16(out, 0);
  out[2] = reason;
  put_u16(out + 3, (uint16_t)len);
  if (len) memcpy(out + 5, text, len);
  return 5 + len;
}

void armt__parser_init(armt_parser_t *p, uint32_t max_devices) {
  memset(p, 0, sizeof *p);
  p->state = S_HELLO;
  p->max_devices = max_devices;
}

void armt__parser_set_frame(armt_parser_t *p, uint8_t *dst) { p->frame = dst; }

bool armt__parser_mid_message(const armt_parser_t *p) {
  return p->state == S_HELLO || p->state == S_COUNT || p->state == S_TCOUNT || p->state == S_SKIP || p->state == S_FRAME;
}

static size_t fail(armt_parser_t *p, armt_err_kind_t kind, size_t used, armt_event_t *ev) {
  p->state = S_ERROR;
  p->err_kind = kind;
  *ev = ARMT_EV_ERROR;
  return used;
}

/* Collect `want` bytes of a fixed-size field into p->head; true when complete. */
static bool collect(armt_parser_t *p, uint32_t want, const uint8_t *buf, size_t len, size_t *i) {
  while (p->have < want && *i < len) p->head[p->have++] = buf[(*i)++];
  return p->have == want;
}

/* A device's transducers are read: go to the next device; true when the geometry is complete. */
static bool end_of_device(armt_parser_t *p) {
  if (++p->dev < p->num_devices) {
    p->state = S_TCOUNT;
    return false;
  }
  p->state = S_TAG;
  return true;
}

size_t armt__parser_feed(armt_parser_t *p, const uint8_t *buf, size_t len, armt_event_t *ev) {
  size_t i = 0;
  *ev = ARMT_EV_NONE;
  while (i < len) {
    switch (p->state) {
      case S_HELLO:
        if (!collect(p, ARMT_HELLO_BYTES, buf, len, &i)) break;
        p->have = 0;
        if (memcmp(p->head, ARMT_MAGIC, 4) != 0) {
          snprintf(p->error, sizeof p->error, "bad magic %02x %02x %02x %02x (expected \"ARMT\")", p->head[0], p->head[1],
                   p->head[2], p->head[3]);
          return fail(p, ARMT_ERR_MAGIC, i, ev);
        }
        p->peer_version = p->head[4];
        if (p->peer_version != ARMT_VERSION) {
          snprintf(p->error, sizeof p->error, "ARMT protocol version %u is not supported (this server speaks %u)",
                   p->peer_version, ARMT_VERSION);
          return fail(p, ARMT_ERR_VERSION, i, ev);
        }
        p->state = S_COUNT;
        break;
      case S_COUNT:
        if (!collect(p, 4, buf, len, &i)) break;
        p->have = 0;
        p->num_devices = get_u32(p->head);
        /* Validate before anything is sized from it (reference: no cap in v3; 1024 in v7). */
        if (p->num_devices == 0 || p->num_devices > p->max_devices) {
          snprintf(p->error, sizeof p->error, "geometry device count %u out of range (1..%u)", p->num_devices, p->max_devices);
          return fail(p, ARMT_ERR_DEVICE_COUNT, i, ev);
        }
        p->frame_bytes = (size_t)p->num_devices * AUTD3_TX_FRAME_BYTES;
        p->dev = 0;
        p->min_transducers = UINT32_MAX;
        p->max_transducers = 0;
        p->state = S_TCOUNT;
        break;
      case S_TCOUNT: {
        if (!collect(p, 4, buf, len, &i)) break;
        p->have = 0;
        uint32_t t = get_u32(p->head);
        if (t > ARMT_MAX_TRANSDUCERS) {
          snprintf(p->error, sizeof p->error, "device %u: transducer count %u exceeds %u", p->dev, t, ARMT_MAX_TRANSDUCERS);
          return fail(p, ARMT_ERR_TRANSDUCERS, i, ev);
        }
        if (t < p->min_transducers) p->min_transducers = t;
        if (t > p->max_transducers) p->max_transducers = t;
        p->skip = (uint64_t)t * ARMT_TRANSDUCER_BYTES;
        p->state = S_SKIP;
        if (p->skip == 0 && end_of_device(p)) {
          *ev = ARMT_EV_GEOMETRY;
          return i;
        }
        break;
      }
      case S_SKIP: {
        /* Transducer records are not needed: the wrapped link takes only the device count. */
        size_t n = len - i;
        if ((uint64_t)n > p->skip) n = (size_t)p->skip;
        p->skip -= n;
        i += n;
        if (p->skip != 0 || !end_of_device(p)) break;
        *ev = ARMT_EV_GEOMETRY;
        return i;
      }
      case S_TAG: {
        uint8_t tag = buf[i++];
        if (tag == ARMT_TAG_FRAME) {
          p->state = S_FRAME;
          p->have = 0;
          break;
        }
        if (tag == ARMT_TAG_CLOSE) {
          p->state = S_CLOSED;
          *ev = ARMT_EV_CLOSE;
          return i;
        }
        snprintf(p->error, sizeof p->error, "unexpected message tag 0x%02x", tag);
        return fail(p, ARMT_ERR_TAG, i, ev);
      }
      case S_FRAME: {
        size_t n = len - i, left = p->frame_bytes - p->have;
        if (n > left) n = left;
        if (p->frame) memcpy(p->frame + p->have, buf + i, n);
        p->have += (uint32_t)n;
        i += n;
        if (p->have < p->frame_bytes) break;
        p->have = 0;
        p->state = S_TAG;
        *ev = ARMT_EV_FRAME;
        return i;
      }
      case S_CLOSED:
        snprintf(p->error, sizeof p->error, "data after the close message");
        return fail(p, ARMT_ERR_AFTER_CLOSE, i, ev);
      default: /* S_ERROR: swallow nothing, keep reporting */
        *ev = ARMT_EV_ERROR;
        return 0;
    }
  }
  return i;
}
