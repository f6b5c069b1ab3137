/*
 * The --plot SVG, drawn here without a plotting library: on top a histogram
 * of the successful latencies, below a timeline of every sample's latency
 * against its index. The timeline draws one min–max bar per pixel column, so
 * 100 000 samples stay a small file; failed samples are red ticks at the top.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "perftest.h"

#define W 960
#define H 720
#define ML 80 /* left margin */
#define MR 30
#define PW (W - ML - MR)
#define HIST_TOP 60
#define HIST_H 250
#define TL_TOP 400
#define TL_H 250
#define BINS 80

/* A "nice" tick step (1, 2, 5 × 10^k) for a range. */
static double nice_step(double range, int ticks) {
  double raw = range / ticks;
  double p = pow(10, floor(log10(raw)));
  double m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void axis_y(FILE *f, int top, int h, double lo, double hi, const char *unit) {
  double st = nice_step(hi - lo, 5);
  for (double v = ceil(lo / st) * st; v <= hi + 1e-9; v += st) {
    double y = top + h - (v - lo) / (hi - lo) * h;
    fprintf(f, "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#ddd'/>\n", ML, y, ML + PW, y);
    fprintf(f, "<text x='%d' y='%.1f' text-anchor='end' font-size='11'>%g%s</text>\n", ML - 6, y + 4, v, unit);
  }
}

static void axis_x(FILE *f, int top, int h, double lo, double hi, const char *unit) {
  double st = nice_step(hi - lo, 8);
  for (double v = ceil(lo / st) * st; v <= hi + 1e-9; v += st) {
    double x = ML + (v - lo) / (hi - lo) * PW;
    fprintf(f, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#ddd'/>\n", x, top, x, top + h);
    fprintf(f, "<text x='%.1f' y='%d' text-anchor='middle' font-size='11'>%g%s</text>\n", x, top + h + 16, v, unit);
  }
}

int pt_write_svg(const char *path, const pt_sample_t *s, size_t n, const pt_summary_t *sum, const pt_context_t *ctx) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-family='sans-serif'>\n", W, H);
  fprintf(f, "<rect width='100%%' height='100%%' fill='white'/>\n");
  fprintf(f, "<text x='%d' y='20' font-size='15' font-weight='bold'>autd3-perftest: %s, %zu device(s), %s, cycle %u us</text>\n",
          ML, ctx->link, ctx->devices, ctx->mode, ctx->cycle_us);
  fprintf(f, "<text x='%d' y='36' font-size='12'>%" PRIu64 " ok, %" PRIu64 " timeouts, %" PRIu64 " link errors, %" PRIu64
          " device errors; p50 %.3f ms, p99 %.3f ms, max %.3f ms%s%s</text>\n",
          ML, sum->success, sum->timeouts, sum->link_errors, sum->device_errors, sum->latency.p50 / 1e6, sum->latency.p99 / 1e6,
          sum->latency.max / 1e6, ctx->timing ? "; timing " : "", ctx->timing ? ctx->timing : "");

  /* ---- histogram (ms) ---- */
  /* Range min..max, but a few far outliers would squash the body into one
   * bar: then cut at twice the p99 distance and say how many are beyond. */
  double lo = sum->latency.min / 1e6, hi = sum->latency.max / 1e6;
  double cut = lo + 2 * (sum->latency.p99 / 1e6 - lo);
  if (hi > cut && cut > lo) hi = cut;
  if (sum->success == 0) lo = 0, hi = 1;
  if (hi - lo < 1e-3) lo -= 0.05, hi += 0.05;
  uint64_t bins[BINS] = {0}, peak = 1, beyond = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i].status != PT_OK) continue;
    double v = s[i].rtt_ns / 1e6;
    if (v > hi) {
      beyond++;
      continue;
    }
    int b = (int)((v - lo) / (hi - lo) * BINS);
    if (b < 0) b = 0;
    if (b >= BINS) b = BINS - 1;
    if (++bins[b] > peak) peak = bins[b];
  }
  fprintf(f, "<text x='%d' y='%d' font-size='13'>latency histogram (successful samples)", ML, HIST_TOP - 6);
  if (beyond) fprintf(f, "; %" PRIu64 " beyond %.3f ms not shown", beyond, hi);
  fprintf(f, "</text>\n");
  axis_x(f, HIST_TOP, HIST_H, lo, hi, " ms");
  /* y axis as counts */
  axis_y(f, HIST_TOP, HIST_H, 0, (double)peak, "");
  double bw = (double)PW / BINS;
  for (int b = 0; b < BINS; b++) {
    if (!bins[b]) continue;
    double h = (double)bins[b] / peak * HIST_H;
    fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='#4878d0'/>\n", ML + b * bw, HIST_TOP + HIST_H - h,
            bw > 1.5 ? bw - 1 : bw, h);
  }
  fprintf(f, "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#333'/>\n", ML, HIST_TOP, PW, HIST_H);

  /* ---- timeline: latency (ms) per sample index ---- */
  double tlo = 0, thi = hi;
  for (size_t i = 0; i < n; i++)
    if (s[i].rtt_ns / 1e6 > thi) thi = s[i].rtt_ns / 1e6;
  thi *= 1.05;
  if (thi <= 0) thi = 1;
  fprintf(f, "<text x='%d' y='%d' font-size='13'>latency per sample (index →; red: failed)</text>\n", ML, TL_TOP - 6);
  axis_y(f, TL_TOP, TL_H, tlo, thi, " ms");
  double nmax = n > 1 ? (double)(n - 1) : 1;
  axis_x(f, TL_TOP, TL_H, 0, nmax, "");
  fprintf(f, "<path stroke='#4878d0' stroke-width='1' fill='none' d='");
  for (int col = 0; col < PW; col++) {
    /* Samples [col·n/PW, (col+1)·n/PW) fall into this pixel column (none when n < PW and the column sits between two). */
    double cmin = INFINITY, cmax = -INFINITY;
    size_t i = (size_t)((double)col / PW * n), end = (size_t)((double)(col + 1) / PW * n);
    if (end > n) end = n;
    for (; i < end; i++) {
      if (s[i].status != PT_OK) continue;
      double v = s[i].rtt_ns / 1e6;
      if (v < cmin) cmin = v;
      if (v > cmax) cmax = v;
    }
    if (cmin > cmax) continue;
    double y1 = TL_TOP + TL_H - (cmin - tlo) / (thi - tlo) * TL_H;
    double y2 = TL_TOP + TL_H - (cmax - tlo) / (thi - tlo) * TL_H;
    if (y1 - y2 < 1) y2 = y1 - 1; /* at least one pixel tall */
    fprintf(f, "M%d.5 %.1fV%.1f", ML + col, y1, y2);
  }
  fprintf(f, "'/>\n");
  int last_col = -1; /* one tick per pixel column at most */
  for (size_t k = 0; k < n; k++) {
    if (s[k].status == PT_OK) continue;
    double x = ML + (double)k / nmax * PW;
    if ((int)x == last_col) continue;
    last_col = (int)x;
    fprintf(f, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#d03030'/>\n", x, TL_TOP, x, TL_TOP + 8);
  }
  fprintf(f, "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#333'/>\n", ML, TL_TOP, PW, TL_H);
  fprintf(f, "<text x='%d' y='%d' font-size='12' text-anchor='middle'>sample index</text>\n", ML + PW / 2, TL_TOP + TL_H + 34);
  fprintf(f, "</svg>\n");
  return fclose(f) == 0 ? 0 : -1;
}
