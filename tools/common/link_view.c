/* What the tools show of a link: see link_view.h. */
#include "link_view.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>

const char *autd3_tool_device_state_name(uint8_t state) {
  switch (state) {
  case AUTD3_DEVICE_OP: return "OP";
  case AUTD3_DEVICE_SAFE_OP: return "SAFE-OP";
  case AUTD3_DEVICE_SAFE_OP_ERROR: return "SAFE-OP+ERR";
  case AUTD3_DEVICE_LOST: return "LOST";
  case AUTD3_DEVICE_OTHER: return "OTHER";
  default: return "UNKNOWN";
  }
}

uint64_t autd3_tool_mean_exchange_ns(const autd3_link_stats_t *s) {
  return s->exchanges ? s->exchange_ns_total / s->exchanges : 0;
}

static bool has(const autd3_link_stats_t *s, uint32_t bit) { return (s->measured & bit) != 0; }

void autd3_tool_link_stats_text(FILE *f, const autd3_link_stats_t *s, const char *indent) {
  fprintf(f, "%scycles           : %" PRIu64 "\n", indent, s->cycles);
  fprintf(f, "%sstale cycles     : %" PRIu64 "\n", indent, s->stale_cycles);
  if (has(s, AUTD3_LINK_MEASURES_LOST))
    fprintf(f, "%slost cycles      : %" PRIu64 "\n", indent, s->lost_cycles);
  else
    fprintf(f, "%slost cycles      : not measured\n", indent);
  if (has(s, AUTD3_LINK_MEASURES_PHASE))
    fprintf(f, "%sphase excursions : %" PRIu64 " (worst deviation %.1f us)\n", indent, s->phase_excursions,
            (double)s->worst_phase_deviation_ns / 1e3);
  else
    fprintf(f, "%sphase excursions : not measured\n", indent);
  if (has(s, AUTD3_LINK_MEASURES_EXCHANGE))
    fprintf(f, "%sexchanges        : %" PRIu64 " (mean %.1f us, worst %.1f us)\n", indent, s->exchanges,
            (double)autd3_tool_mean_exchange_ns(s) / 1e3, (double)s->worst_exchange_ns / 1e3);
  else
    fprintf(f, "%sexchanges        : not measured\n", indent);
}

/* Appending printf into buf: the length so far, never past cap - 1. */
typedef struct out {
  char *buf;
  size_t cap, len;
} out_t;

static void put(out_t *o, const char *fmt, ...) {
  if (o->cap == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
  va_end(ap);
  if (k > 0)
    o->len = o->len + (size_t)k < o->cap ? o->len + (size_t)k : o->cap - 1;
}

/* "name":value, or "name":null when not measured; `sep` before it. */
static void put_u64(out_t *o, const char *sep, const char *name, bool known, uint64_t v) {
  if (known)
    put(o, "%s\"%s\":%" PRIu64, sep, name, v);
  else
    put(o, "%s\"%s\":null", sep, name);
}

size_t autd3_tool_link_stats_json(const autd3_link_stats_t *s, char *buf, size_t cap) {
  out_t o = {buf, cap, 0};
  if (cap)
    buf[0] = 0;
  bool lost = has(s, AUTD3_LINK_MEASURES_LOST), ph = has(s, AUTD3_LINK_MEASURES_PHASE),
       ex = has(s, AUTD3_LINK_MEASURES_EXCHANGE);
  put_u64(&o, "{", "cycles", true, s->cycles);
  put_u64(&o, ",", "stale_cycles", true, s->stale_cycles);
  put_u64(&o, ",", "lost_cycles", lost, s->lost_cycles);
  put_u64(&o, ",", "phase_excursions", ph, s->phase_excursions);
  put_u64(&o, ",", "worst_phase_deviation_ns", ph, s->worst_phase_deviation_ns);
  put_u64(&o, ",", "exchanges", ex, s->exchanges);
  put_u64(&o, ",", "mean_exchange_ns", ex, autd3_tool_mean_exchange_ns(s));
  put_u64(&o, ",", "worst_exchange_ns", ex, s->worst_exchange_ns);
  put(&o, "}");
  return o.len;
}

static void put_ports(out_t *o, const char *name, const uint8_t v[4]) {
  put(o, ",\"%s\":[%u,%u,%u,%u]", name, v[0], v[1], v[2], v[3]);
}

size_t autd3_tool_device_info_json(const autd3_link_device_info_t *d, char *buf, size_t cap) {
  out_t o = {buf, cap, 0};
  if (cap)
    buf[0] = 0;
  put(&o, "{\"stale_cycles\":%" PRIu64 ",\"resets\":%" PRIu32, d->stale_cycles, d->resets);
  if (d->measured & AUTD3_LINK_MEASURES_ESC_COUNTERS) {
    put(&o, ",\"esc\":{\"processing_unit_errors\":%u,\"pdi_errors\":%u", d->processing_unit_errors, d->pdi_errors);
    put_ports(&o, "crc_errors", d->crc_errors);
    put_ports(&o, "phy_errors", d->phy_errors);
    put_ports(&o, "forwarded_errors", d->forwarded_errors);
    put_ports(&o, "lost_links", d->lost_links);
    put(&o, "}");
  } else {
    put(&o, ",\"esc\":null");
  }
  if (d->measured & AUTD3_LINK_MEASURES_DC)
    put(&o, ",\"dc_deviation_ns\":%" PRId32 "}", d->dc_deviation_ns);
  else
    put(&o, ",\"dc_deviation_ns\":null}");
  return o.len;
}

void autd3_tool_device_counters_text(const autd3_link_device_info_t *d, char *buf, size_t cap) {
  out_t o = {buf, cap, 0};
  if (cap)
    buf[0] = 0;
  if (!(d->measured & AUTD3_LINK_MEASURES_ESC_COUNTERS)) {
    put(&o, "-");
    return;
  }
  /* the non-zero ones only, as KIND@PORT=N: what to look at stands out */
  const uint8_t *g[4] = {d->crc_errors, d->phy_errors, d->forwarded_errors, d->lost_links};
  static const char *names[4] = {"crc", "phy", "fwd", "lost"};
  for (int k = 0; k < 4; k++)
    for (int p = 0; p < 4; p++)
      if (g[k][p])
        put(&o, "%s%s@%d=%u", o.len ? " " : "", names[k], p, g[k][p]);
  if (d->processing_unit_errors)
    put(&o, "%spu=%u", o.len ? " " : "", d->processing_unit_errors);
  if (d->pdi_errors)
    put(&o, "%spdi=%u", o.len ? " " : "", d->pdi_errors);
  if (o.len == 0)
    put(&o, "none");
}
