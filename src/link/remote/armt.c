/*
 * ARMT v3 + v7 codec (see armt.h). Byte layouts follow shinolab/autd3-sdk
 * crates/autd3-rs-link-remote/src/wire.rs (encode_geometry / read_geometry;
 * v7: encode_hello / read_hello, encode_session_ok / _reject,
 * encode_reply_header, encode_device_state; crate 0.9.0) and link.rs /
 * server.rs (v3 hello = magic then one version byte, u16 reply).
 */
#include "link/remote/armt.h"

#include "autd3/link.h"

#include <stdio.h>
#include <string.h>

enum { S_HELLO, S_SDKLEN, S_SDK, S_COUNT, S_TCOUNT, S_SKIP, S_TAG, S_FRAME, S_CLOSED, S_ERROR };

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
static void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static uint32_t get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

size_t autd3__armt_geometry_bytes(const autd3_geometry_t *g) {
  size_t n = autd3_geometry_num_devices(g), total = 4;
  for (size_t d = 0; d < n; d++) total += 4 + autd3_geometry_num_transducers(g, d) * ARMT_TRANSDUCER_BYTES;
  return total;
}

size_t autd3__armt_encode_geometry(const autd3_geometry_t *g, uint8_t *out, size_t cap) {
  size_t need = autd3__armt_geometry_bytes(g);
  if (out == NULL || cap < need) return 0;
  size_t n = autd3_geometry_num_devices(g), at = 0;
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

size_t autd3__armt_hello_bytes(const autd3_geometry_t *g) { return ARMT_HELLO_BYTES + autd3__armt_geometry_bytes(g); }

size_t autd3__armt_encode_hello(const autd3_geometry_t *g, uint8_t *out, size_t cap) {
  size_t need = autd3__armt_hello_bytes(g);
  if (out == NULL || cap < need) return 0;
  memcpy(out, ARMT_MAGIC, 4);
  out[4] = (uint8_t)ARMT_VERSION;
  return ARMT_HELLO_BYTES + autd3__armt_encode_geometry(g, out + ARMT_HELLO_BYTES, cap - ARMT_HELLO_BYTES);
}

size_t autd3__armt_encode_hello7(const char *sdk, uint8_t *out, size_t cap) {
  size_t len = sdk ? strlen(sdk) : 0;
  if (len > ARMT7_SDK_MAX) len = ARMT7_SDK_MAX; /* wire.rs: a u8 length */
  if (out == NULL || cap < 6 + len) return 0;
  memcpy(out, ARMT_MAGIC, 4);
  out[4] = (uint8_t)ARMT_VERSION_7;
  out[5] = (uint8_t)len;
  if (len) memcpy(out + 6, sdk, len);
  return 6 + len;
}

size_t autd3__armt_encode_session7(uint8_t *out, size_t cap, uint8_t code, uint16_t n, const char *text) {
  if (code == ARMT7_SESSION_OK) {
    if (cap < 3) return 0;
    out[0] = 0;
    put_u16(out + 1, n);
    return 3;
  }
  size_t len = text ? strlen(text) : 0;
  if (len > ARMT_REFUSAL_TEXT_MAX) len = ARMT_REFUSAL_TEXT_MAX;
  if (cap < 3 + len) return 0;
  out[0] = code;
  put_u16(out + 1, (uint16_t)len);
  if (len) memcpy(out + 3, text, len);
  return 3 + len;
}

void autd3__armt_encode_reply7_header(uint8_t out[ARMT7_REPLY_HEADER_BYTES], const armt7_status_t *st) {
  out[0] = st->rx_valid ? 1 : 0;
  put_u64(out + 1, st->dc_time_ns);
  out[9] = st->recovering ? 1 : 0;
  const uint64_t c[5] = {st->recoveries, st->stale_cycles, st->lost_cycles, st->phase_excursions, st->worst_phase_deviation_ns};
  for (int i = 0; i < 5; i++) put_u64(out + 10 + 8 * i, c[i]);
}

void autd3__armt_decode_reply7_header(const uint8_t in[ARMT7_REPLY_HEADER_BYTES], armt7_status_t *st) {
  st->rx_valid = in[0] != 0; /* link.rs: buf[0] != 0 */
  st->dc_time_ns = get_u64(in + 1);
  st->recovering = in[9] != 0;
  st->recoveries = get_u64(in + 10);
  st->stale_cycles = get_u64(in + 18);
  st->lost_cycles = get_u64(in + 26);
  st->phase_excursions = get_u64(in + 34);
  st->worst_phase_deviation_ns = get_u64(in + 42);
}

uint8_t autd3__armt_encode_device_state7(uint8_t state, uint8_t al_bits) {
  switch (state) {
    case AUTD3_DEVICE_OP: return ARMT7_DEV_OP;
    case AUTD3_DEVICE_SAFE_OP: return ARMT7_DEV_SAFE_OP;
    case AUTD3_DEVICE_SAFE_OP_ERROR: return ARMT7_DEV_SAFE_OP_ERROR;
    case AUTD3_DEVICE_LOST: return ARMT7_DEV_LOST;
    default: return (uint8_t)(ARMT7_DEV_OTHER_TAG | (al_bits & ARMT7_DEV_OTHER_MASK));
  }
}

uint8_t autd3__armt_decode_device_state7(uint8_t byte, uint8_t *al_bits) {
  *al_bits = 0;
  switch (byte) {
    case ARMT7_DEV_OP: return AUTD3_DEVICE_OP;
    case ARMT7_DEV_SAFE_OP: return AUTD3_DEVICE_SAFE_OP;
    case ARMT7_DEV_SAFE_OP_ERROR: return AUTD3_DEVICE_SAFE_OP_ERROR;
    case ARMT7_DEV_LOST: return AUTD3_DEVICE_LOST;
    default: /* wire.rs decode_device_state: anything else is Other(bits & 0x1f), never a healthy state */
      *al_bits = (uint8_t)(byte & ARMT7_DEV_OTHER_MASK);
      return AUTD3_DEVICE_OTHER;
  }
}

size_t autd3__armt_encode_refusal(uint8_t *out, size_t cap, uint8_t reason, const char *text) {
  size_t len = text ? strlen(text) : 0;
  if (len > ARMT_REFUSAL_TEXT_MAX) len = ARMT_REFUSAL_TEXT_MAX;
  if (cap < 5 + len) return 0;
  put_u16(out, 0);
  out[2] = reason;
  put_u16(out + 3, (uint16_t)len);
  if (len) memcpy(out + 5, text, len);
  return 5 + len;
}

void autd3__armt_parser_init(armt_parser_t *p, uint32_t max_devices) {
  memset(p, 0, sizeof *p);
  p->state = S_HELLO;
  p->max_devices = max_devices;
}

void autd3__armt_parser_set_frame(armt_parser_t *p, uint8_t *dst) { p->frame = dst; }

bool autd3__armt_parser_mid_message(const armt_parser_t *p) {
  return p->state == S_HELLO || p->state == S_SDKLEN || p->state == S_SDK || p->state == S_COUNT || p->state == S_TCOUNT || p->state == S_SKIP || p->state == S_FRAME;
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

size_t autd3__armt_parser_feed(armt_parser_t *p, const uint8_t *buf, size_t len, armt_event_t *ev) {
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
        if (p->peer_version == ARMT_VERSION) {
          p->state = S_COUNT;
          break;
        }
        if (p->peer_version < 4) {
          snprintf(p->error, sizeof p->error, "ARMT protocol version %u is not supported (this server speaks 3 and 7)",
                   p->peer_version);
          return fail(p, ARMT_ERR_VERSION, i, ev);
        }
        /* Versions from 4 on open with "ARMT" ver len sdk (wire.rs read_hello): read it whole, so that a peer of
         * another version still gets our hello and reports the mismatch itself. */
        p->state = S_SDKLEN;
        break;
      case S_SDKLEN:
      case S_SDK: {
        if (p->state == S_SDKLEN) {
          p->sdk_len = buf[i++];
          p->have = 0;
          p->state = S_SDK;
        }
        while (p->have < p->sdk_len && i < len) {
          uint8_t c = buf[i++];
          if (p->have < sizeof p->peer_sdk - 1) p->peer_sdk[p->have] = (c >= 0x20 && c < 0x7F) ? (char)c : '?';
          p->have++;
        }
        if (p->have < p->sdk_len) break;
        p->peer_sdk[p->have < sizeof p->peer_sdk - 1 ? p->have : sizeof p->peer_sdk - 1] = 0;
        p->have = 0;
        if (p->peer_version != ARMT_VERSION_7) {
          snprintf(p->error, sizeof p->error, "ARMT version %u (autd3-sdk %.40s) not supported (this server speaks 3 and 7)",
                   p->peer_version, p->peer_sdk);
          return fail(p, ARMT_ERR_VERSION, i, ev);
        }
        p->state = S_COUNT;
        *ev = ARMT_EV_HELLO;
        return i;
      }
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
