/* mDNS / DNS-SD codec (see mdns.h). Message layout: RFC 1035 section 4; mDNS specifics (cache-flush bit, TTLs,
 * legacy unicast id): RFC 6762 sections 6, 10, 18; service records (PTR -> SRV + TXT): RFC 6763 section 4-6. */
#include "net/mdns.h"

#include <string.h>

#define CLASS_IN 1u
#define CACHE_FLUSH 0x8000u /* RFC 6762 10.2: on unique records (SRV, TXT, A) */
#define MAX_JUMPS 32

typedef struct w {
  uint8_t *p;
  size_t cap, at;
  bool ok;
} w_t;

static void w_bytes(w_t *w, const void *b, size_t n) {
  if (!w->ok || w->cap - w->at < n) {
    w->ok = false;
    return;
  }
  memcpy(w->p + w->at, b, n);
  w->at += n;
}
static void w_u8(w_t *w, uint8_t v) { w_bytes(w, &v, 1); }
static void w_u16(w_t *w, uint16_t v) {
  uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
  w_bytes(w, b, 2);
}
static void w_u32(w_t *w, uint32_t v) {
  uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
  w_bytes(w, b, 4);
}
/* A dotted name as labels (no compression: messages are small). An empty label or one over 63 bytes fails. */
static void w_name(w_t *w, const char *name) {
  const char *s = name;
  while (*s) {
    const char *dot = strchr(s, '.');
    size_t n = dot ? (size_t)(dot - s) : strlen(s);
    if (n == 0 || n > 63) {
      w->ok = false;
      return;
    }
    w_u8(w, (uint8_t)n);
    w_bytes(w, s, n);
    s += n;
    if (*s == '.') s++;
  }
  w_u8(w, 0);
}
static void w_name2(w_t *w, const char *label, const char *rest) { /* "label" + "." + rest; the label may hold dots */
  size_t n = strlen(label);
  if (n == 0 || n > 63) {
    w->ok = false;
    return;
  }
  w_u8(w, (uint8_t)n);
  w_bytes(w, label, n);
  w_name(w, rest);
}
/* Record header; returns where rdlength goes (filled by w_end). */
static size_t w_rr(w_t *w, uint16_t type, uint16_t cls, uint32_t ttl) {
  w_u16(w, type);
  w_u16(w, cls);
  w_u32(w, ttl);
  size_t at = w->at;
  w_u16(w, 0);
  return at;
}
static void w_end(w_t *w, size_t len_at) {
  if (!w->ok) return;
  size_t n = w->at - len_at - 2;
  w->p[len_at] = (uint8_t)(n >> 8);
  w->p[len_at + 1] = (uint8_t)n;
}

size_t autd3__mdns_build_query(uint8_t *out, size_t cap, uint16_t id, const char *name, uint16_t type) {
  w_t w = {out, cap, 0, true};
  w_u16(&w, id);
  w_u16(&w, 0);      /* flags: standard query */
  w_u16(&w, 1);      /* one question */
  w_u16(&w, 0), w_u16(&w, 0), w_u16(&w, 0);
  w_name(&w, name);
  w_u16(&w, type);
  w_u16(&w, CLASS_IN);
  return w.ok ? w.at : 0;
}

size_t autd3__mdns_build_response(uint8_t *out, size_t cap, uint16_t id, const mdns_service_t *s) {
  w_t w = {out, cap, 0, true};
  w_u16(&w, id);
  w_u16(&w, 0x8400); /* response, authoritative */
  w_u16(&w, 0);
  w_u16(&w, (uint16_t)(3 + s->naddr));
  w_u16(&w, 0), w_u16(&w, 0);
  /* PTR service -> instance.service */
  w_name(&w, s->service);
  size_t l = w_rr(&w, MDNS_TYPE_PTR, CLASS_IN, s->ttl);
  w_name2(&w, s->instance, s->service);
  w_end(&w, l);
  /* SRV instance.service -> priority 0, weight 0, port, host */
  w_name2(&w, s->instance, s->service);
  l = w_rr(&w, MDNS_TYPE_SRV, CLASS_IN | CACHE_FLUSH, s->ttl);
  w_u16(&w, 0), w_u16(&w, 0), w_u16(&w, s->port);
  w_name(&w, s->host);
  w_end(&w, l);
  /* TXT instance.service -> the strings (an empty TXT is one zero byte, RFC 6763 6.1) */
  w_name2(&w, s->instance, s->service);
  l = w_rr(&w, MDNS_TYPE_TXT, CLASS_IN | CACHE_FLUSH, s->ttl);
  if (s->ntxt == 0) w_u8(&w, 0);
  for (size_t i = 0; i < s->ntxt; i++) {
    size_t n = strlen(s->txt[i]);
    if (n > 255) n = 255;
    w_u8(&w, (uint8_t)n);
    w_bytes(&w, s->txt[i], n);
  }
  w_end(&w, l);
  for (size_t i = 0; i < s->naddr; i++) {
    w_name(&w, s->host);
    l = w_rr(&w, MDNS_TYPE_A, CLASS_IN | CACHE_FLUSH, s->ttl);
    w_bytes(&w, s->addr[i], 4);
    w_end(&w, l);
  }
  return w.ok ? w.at : 0;
}

/* ---- parsing ---- */

static uint16_t g16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t g32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* Read the (possibly compressed) name at *at into out (dotted); *at moves past it in the message. Pointers must point
 * backwards (so no loop can form), and at most MAX_JUMPS are followed. Label bytes outside printable ASCII, and
 * dots inside labels, become '?' so that a name cannot masquerade as another. */
static bool read_name(const uint8_t *pkt, size_t len, size_t *at, char *out) {
  size_t i = *at, o = 0, end = 0;
  int jumps = 0;
  bool jumped = false;
  for (;;) {
    if (i >= len) return false;
    uint8_t c = pkt[i];
    if ((c & 0xC0) == 0xC0) {
      if (i + 1 >= len || ++jumps > MAX_JUMPS) return false;
      size_t to = (size_t)(c & 0x3F) << 8 | pkt[i + 1];
      if (to >= i) return false; /* forward or self: refuse */
      if (!jumped) end = i + 2;
      jumped = true;
      i = to;
      continue;
    }
    if (c & 0xC0) return false; /* 0x40 / 0x80: reserved label types */
    if (c == 0) {
      if (!jumped) end = i + 1;
      break;
    }
    if (i + 1 + c > len) return false;
    if (o + (o ? 1u : 0u) + c >= MDNS_NAME_MAX) return false;
    if (o) out[o++] = '.';
    for (size_t k = 0; k < c; k++) {
      uint8_t ch = pkt[i + 1 + k];
      out[o++] = (ch > 0x20 && ch < 0x7F && ch != '.') ? (char)ch : '?';
    }
    i += 1 + (size_t)c;
  }
  out[o] = 0;
  *at = end;
  return true;
}

bool autd3__mdns_parse(const uint8_t *pkt, size_t len, void (*fn)(void *ctx, const mdns_record_t *r), void *ctx) {
  if (len < 12) return false;
  size_t counts[4] = {g16(pkt + 4), g16(pkt + 6), g16(pkt + 8), g16(pkt + 10)};
  size_t at = 12;
  mdns_record_t r;
  for (int sec = 0; sec < 4; sec++) {
    for (size_t k = 0; k < counts[sec]; k++) {
      memset(&r, 0, sizeof r);
      r.is_question = sec == 0;
      if (!read_name(pkt, len, &at, r.name)) return false;
      if (sec == 0) {
        if (len - at < 4) return false;
        r.type = g16(pkt + at);
        at += 4;
        fn(ctx, &r);
        continue;
      }
      if (len - at < 10) return false;
      r.type = g16(pkt + at);
      r.ttl = g32(pkt + at + 4);
      size_t rdlen = g16(pkt + at + 8);
      at += 10;
      if (len - at < rdlen) return false;
      size_t rd = at, rd_end = at + rdlen;
      bool ok = true;
      switch (r.type) {
        case MDNS_TYPE_PTR: ok = read_name(pkt, rd_end, &rd, r.target); break;
        case MDNS_TYPE_SRV:
          ok = rdlen >= 7;
          if (ok) {
            r.port = g16(pkt + rd + 4);
            rd += 6;
            ok = read_name(pkt, rd_end, &rd, r.target);
          }
          break;
        case MDNS_TYPE_A:
          ok = rdlen == 4;
          if (ok) memcpy(r.a, pkt + rd, 4);
          break;
        case MDNS_TYPE_TXT:
          r.txt = pkt + rd;
          r.txt_len = rdlen;
          break;
        default: break; /* other types are skipped */
      }
      if (!ok) return false;
      at = rd_end;
      fn(ctx, &r);
    }
  }
  return true;
}

static char lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }

bool autd3__mdns_name_eq(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (lower(*a) != lower(*b)) return false;
  return *a == *b;
}

bool autd3__mdns_txt_get(const uint8_t *txt, size_t len, const char *key, char *out, size_t cap) {
  size_t kl = strlen(key), i = 0;
  while (i < len) {
    size_t n = txt[i++];
    if (n > len - i) return false;
    const uint8_t *s = txt + i;
    i += n;
    if (n < kl || (n > kl && s[kl] != '=')) continue;
    bool same = true;
    for (size_t k = 0; k < kl && same; k++) same = lower((char)s[k]) == lower(key[k]);
    if (!same) continue;
    size_t vl = n > kl ? n - kl - 1 : 0, o = 0;
    if (cap == 0) return true;
    for (size_t k = 0; k < vl && o + 1 < cap; k++) {
      uint8_t ch = s[kl + 1 + k];
      out[o++] = (ch >= 0x20 && ch < 0x7F) ? (char)ch : '?';
    }
    out[o] = 0;
    return true;
  }
  return false;
}
