#include "numopt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Digits of `s` (base 10 or 16) into *v; false on an empty string, a
 * non-digit or a value above UINT64_MAX. */
static bool digits(const char *s, unsigned base, uint64_t *v) {
  uint64_t r = 0;
  if (!*s) return false;
  for (; *s; s++) {
    unsigned d;
    if (*s >= '0' && *s <= '9') d = (unsigned)(*s - '0');
    else if (base == 16 && *s >= 'a' && *s <= 'f') d = (unsigned)(*s - 'a' + 10);
    else if (base == 16 && *s >= 'A' && *s <= 'F') d = (unsigned)(*s - 'A' + 10);
    else return false;
    if (r > (UINT64_MAX - d) / base) return false;
    r = r * base + d;
  }
  *v = r;
  return true;
}

bool autd3_numopt_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out, char *err, size_t cap) {
  uint64_t v;
  bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  if (!digits(hex ? s + 2 : s, hex ? 16 : 10, &v) || v < lo || v > hi) {
    snprintf(err, cap, "%s '%s': expected an integer in %" PRIu64 "..%" PRIu64, opt, s, lo, hi);
    return false;
  }
  *out = v;
  return true;
}

bool autd3_numopt_i64(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out, char *err, size_t cap) {
  bool neg = s[0] == '-';
  uint64_t m;
  int64_t v = 0;
  bool ok = digits(neg ? s + 1 : s, 10, &m);
  if (ok && neg) { /* -(2^63) is the one magnitude that does not fit INT64_MAX */
    ok = m <= (uint64_t)INT64_MAX + 1u;
    v = m == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)m;
  } else if (ok) {
    ok = m <= (uint64_t)INT64_MAX;
    v = (int64_t)m;
  }
  if (!ok || v < lo || v > hi) {
    snprintf(err, cap, "%s '%s': expected an integer in %" PRId64 "..%" PRId64, opt, s, lo, hi);
    return false;
  }
  *out = v;
  return true;
}

bool autd3_numopt_f64(const char *opt, const char *s, double lo, double hi, double *out, char *err, size_t cap) {
  /* strtod alone would take " 1", "inf", "nan" and "0x1p3" */
  bool ok = (s[0] >= '0' && s[0] <= '9') || s[0] == '.' || s[0] == '-';
  for (const char *p = s; ok && *p; p++)
    ok = (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '+' || *p == 'e' || *p == 'E';
  char *end = NULL;
  double v = 0;
  if (ok) {
    errno = 0;
    v = strtod(s, &end);
    ok = errno == 0 && end != s && *end == 0 && v >= lo && v <= hi; /* false for NaN, too */
  }
  if (!ok) {
    snprintf(err, cap, "%s '%s': expected a number in %g..%g", opt, s, lo, hi);
    return false;
  }
  *out = v;
  return true;
}

bool autd3_numopt_duration_ns(const char *opt, const char *s, uint64_t bare_unit_ns, uint64_t lo_ns, uint64_t hi_ns,
                              uint64_t *out_ns, char *err, size_t cap) {
  static const struct {
    const char *name;
    double ns;
  } units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"min", 60e9}, {"h", 3600e9}};
  size_t len = strlen(s), u = len;
  while (u > 0 && s[u - 1] >= 'a' && s[u - 1] <= 'z' && s[u - 1] != 'e') u--;
  char num[64];
  double mul = (double)bare_unit_ns;
  bool ok = u > 0 && u < sizeof num;
  if (ok && s[u] != 0) {
    ok = false;
    for (size_t k = 0; k < sizeof units / sizeof units[0]; k++)
      if (strcmp(s + u, units[k].name) == 0) ok = true, mul = units[k].ns;
  }
  ok = ok && mul > 0;
  double v = 0;
  if (ok) {
    memcpy(num, s, u);
    num[u] = 0;
    char e2[8];
    ok = autd3_numopt_f64(opt, num, 0, 1e300, &v, e2, sizeof e2) && v * mul >= (double)lo_ns && v * mul <= (double)hi_ns;
  }
  if (!ok) {
    snprintf(err, cap, "%s '%s': expected a duration %s (ns, us, ms, s, m, h) in %.9g..%.9g s", opt, s,
             bare_unit_ns ? "with or without a unit" : "with a unit", (double)lo_ns / 1e9, (double)hi_ns / 1e9);
    return false;
  }
  *out_ns = (uint64_t)(v * mul + 0.5);
  return true;
}

static void fail(const char *tool, const char *msg) {
  fprintf(stderr, "%s: %s\n", tool, msg);
  exit(2);
}

uint64_t autd3_numopt_u64_or_exit(const char *tool, const char *opt, const char *s, uint64_t lo, uint64_t hi) {
  char err[256];
  uint64_t v = 0;
  if (!autd3_numopt_u64(opt, s, lo, hi, &v, err, sizeof err)) fail(tool, err);
  return v;
}

int64_t autd3_numopt_i64_or_exit(const char *tool, const char *opt, const char *s, int64_t lo, int64_t hi) {
  char err[256];
  int64_t v = 0;
  if (!autd3_numopt_i64(opt, s, lo, hi, &v, err, sizeof err)) fail(tool, err);
  return v;
}

double autd3_numopt_f64_or_exit(const char *tool, const char *opt, const char *s, double lo, double hi) {
  char err[256];
  double v = 0;
  if (!autd3_numopt_f64(opt, s, lo, hi, &v, err, sizeof err)) fail(tool, err);
  return v;
}

uint64_t autd3_numopt_duration_ns_or_exit(const char *tool, const char *opt, const char *s, uint64_t bare_unit_ns,
                                          uint64_t lo_ns, uint64_t hi_ns) {
  char err[256];
  uint64_t v = 0;
  if (!autd3_numopt_duration_ns(opt, s, bare_unit_ns, lo_ns, hi_ns, &v, err, sizeof err)) fail(tool, err);
  return v;
}
