/*
 * Statistics and output of autd3-perftest. The stdout summary reproduces
 * shinolab/autd3-sdk tools/perftest/src/report.rs print_summary() line for
 * line (labels, padding, units), so numbers can be compared with the link
 * documentation page directly. What this tool adds is printed after it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "link_view.h"
#include "perftest.h"

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Nearest rank: index ⌈p·n/100⌉ − 1, clamped (stats.rs nearest_rank_idx). */
static size_t nearest_rank(size_t n, unsigned p) {
  size_t raw = (p * n + 99) / 100;
  size_t i = raw > 0 ? raw - 1 : 0;
  return i < n ? i : n - 1;
}

void pt_summarize(const pt_sample_t *s, size_t n, uint64_t elapsed_ns, uint64_t stale, uint64_t lost, pt_summary_t *out) {
  memset(out, 0, sizeof *out);
  out->elapsed_ns = elapsed_ns;
  out->stale_cycles = stale;
  out->lost_cycles = lost;
  uint64_t *ok = malloc((n ? n : 1) * sizeof *ok);
  if (ok == NULL) {
    fprintf(stderr, "perftest: out of memory\n");
    exit(1);
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    switch (s[i].status) {
      case PT_OK: ok[k++] = s[i].rtt_ns; break;
      case PT_DEVICE:
        out->device_errors++;
        out->device_error_counts[s[i].code]++;
        break;
      case PT_TIMEOUT: out->timeouts++; break;
      default: out->link_errors++; break;
    }
  }
  out->success = k;
  if (k > 0) {
    qsort(ok, k, sizeof *ok, cmp_u64);
    /* Mean in integer ns, as the reference (sum / n, truncated). */
    uint64_t sum = 0; /* 10^6 samples of 10 s still fit in 64 bits */
    for (size_t i = 0; i < k; i++) sum += ok[i];
    out->latency.mean = (uint64_t)(sum / k);
    out->latency.p50 = ok[nearest_rank(k, 50)];
    out->latency.p95 = ok[nearest_rank(k, 95)];
    out->latency.p99 = ok[nearest_rank(k, 99)];
    out->latency.min = ok[0];
    out->latency.max = ok[k - 1];
  }
  free(ok);
  double secs = (double)elapsed_ns / 1e9;
  if (secs > 0) {
    out->cmd_per_sec = (double)k / secs;
    /* One tx frame (626 B) per command, not × devices: the documented
     * 997 cmd/s ↔ 624 000 B/s relation (the SDK's Link documentation page; docs/echocat.md). */
    out->byte_per_sec = (double)(k * 626u) / secs;
  }
}

void pt_format_duration(uint64_t ns, char *buf, size_t cap) {
  if (ns < 1000)
    snprintf(buf, cap, "%" PRIu64 " ns", ns);
  else if (ns < 1000000)
    snprintf(buf, cap, "%.3f us", (double)ns / 1e3);
  else if (ns < 1000000000)
    snprintf(buf, cap, "%.3f ms", (double)ns / 1e6);
  else
    snprintf(buf, cap, "%.3f s", (double)ns / 1e9);
}

static const char *dur(uint64_t ns, char *buf) {
  pt_format_duration(ns, buf, 32);
  return buf;
}

void pt_print_summary(FILE *f, const pt_summary_t *s) {
  char b[32];
  uint64_t total = s->success + s->timeouts + s->link_errors + s->device_errors;
  fprintf(f, "=== perftest summary ===\n");
  fprintf(f, "elapsed         : %s\n", dur(s->elapsed_ns, b));
  fprintf(f, "total sends     : %" PRIu64 "\n", total);
  fprintf(f, "  success       : %" PRIu64 "\n", s->success);
  fprintf(f, "  timeouts      : %" PRIu64 "\n", s->timeouts);
  fprintf(f, "  link errors   : %" PRIu64 "\n", s->link_errors);
  if (s->device_errors == 0) {
    fprintf(f, "  device errors : 0\n");
  } else {
    fprintf(f, "  device errors :\n");
    for (int code = 0; code < 256; code++)
      if (s->device_error_counts[code]) fprintf(f, "    code 0x%02x : %" PRIu64 "\n", code, s->device_error_counts[code]);
  }
  fprintf(f, "  stale cycles  : %" PRIu64 "\n", s->stale_cycles);
  fprintf(f, "  lost cycles   : %" PRIu64 "\n", s->lost_cycles);
  fprintf(f, "\n");
  fprintf(f, "throughput      :\n");
  fprintf(f, "  cmd / sec     : %12.2f\n", s->cmd_per_sec);
  fprintf(f, "  byte / sec    : %12.2f\n", s->byte_per_sec);
  fprintf(f, "\n");
  fprintf(f, "latency (successful samples):\n");
  fprintf(f, "  mean          : %s\n", dur(s->latency.mean, b));
  fprintf(f, "  p50           : %s\n", dur(s->latency.p50, b));
  fprintf(f, "  p95           : %s\n", dur(s->latency.p95, b));
  fprintf(f, "  p99           : %s\n", dur(s->latency.p99, b));
  fprintf(f, "  min           : %s\n", dur(s->latency.min, b));
  fprintf(f, "  max           : %s\n", dur(s->latency.max, b));
}

void pt_print_extra(FILE *f, const pt_summary_t *s, const pt_context_t *ctx, const char *diagnostics) {
  double cyc = (double)ctx->cycle_us * 1e3;
  fprintf(f, "\n");
  fprintf(f, "latency in cycles (cycle = %u us):\n", ctx->cycle_us);
  fprintf(f, "  mean          : %.3f\n", (double)s->latency.mean / cyc);
  fprintf(f, "  p50           : %.3f\n", (double)s->latency.p50 / cyc);
  fprintf(f, "  p99           : %.3f\n", (double)s->latency.p99 / cyc);
  fprintf(f, "\n");
  fprintf(f, "bus thread      :\n");
  fprintf(f, "  cpu           : %.2f %% of one core\n", ctx->bus_cpu_percent);
  fprintf(f, "  cycles        : %" PRIu64 "\n", ctx->bus_cycles);
  fprintf(f, "  resyncs       : %" PRIu64 "\n", ctx->resyncs);
  fprintf(f, "  resets        : %" PRIu64 "\n", ctx->resets);
  fprintf(f, "  retransmits   : %" PRIu64 "\n", ctx->retransmits);
  pt_print_link(f, ctx);
  if (diagnostics && diagnostics[0]) {
    fprintf(f, "\nlink diagnostics (%s):\n", ctx->link);
    /* One "name : value" per line; indent them like the rest. */
    const char *p = diagnostics;
    while (*p) {
      const char *e = strchr(p, '\n');
      size_t len = e ? (size_t)(e - p) : strlen(p);
      if (len) fprintf(f, "  %.*s\n", (int)len, p);
      p += len + (e ? 1 : 0);
    }
  }
}

void pt_print_link(FILE *f, const pt_context_t *ctx) {
  if (ctx->link_stats == NULL)
    return;
  fprintf(f, "\nlink statistics (%s, since open):\n", ctx->link);
  autd3_tool_link_stats_text(f, ctx->link_stats, "  ");
  fprintf(f, "\nstate checks    : %" PRIu64 " (%" PRIu64 " with a device not in OP)", ctx->checks, ctx->checks_not_all_op);
  if (ctx->status && (ctx->status->measured & AUTD3_LINK_STATUS_RECOVERIES))
    fprintf(f, ", recoveries %" PRIu64 "\n", ctx->status->recoveries);
  else
    fprintf(f, ", recoveries not measured\n");
  if (ctx->check_error)
    fprintf(f, "  stopped       : %s\n", ctx->check_error);
  fprintf(f, "  %-4s %-12s %10s %12s  %s\n", "dev", "state", "recoveries", "stale", "ESC errors (KIND@PORT=N)");
  bool starred = false;
  for (size_t d = 0; d < ctx->devices; d++) {
    const autd3_link_status_t *st = ctx->status;
    char rec[24] = "-", esc[128] = "-", stale[24] = "-";
    if (st && (st->measured & AUTD3_LINK_STATUS_DEVICE_RECOVERIES))
      snprintf(rec, sizeof rec, "%" PRIu32, st->device_recoveries[d]);
    if (ctx->dev_info) {
      const bool own = ctx->dev_info[d].measured & AUTD3_LINK_MEASURES_DEVICE_STALE;
      snprintf(stale, sizeof stale, "%" PRIu64 "%s", ctx->dev_info[d].stale_cycles, own ? "" : "*");
      starred = starred || !own;
      autd3_tool_device_counters_text(&ctx->dev_info[d], esc, sizeof esc);
    }
    fprintf(f, "  %-4zu %-12s %10s %12s  %s\n", d, st ? autd3_tool_device_state_name(st->state[d]) : "UNKNOWN", rec, stale,
            esc);
  }
  if (starred) /* the footnote of a '*' only where one is shown */
    fprintf(f, "  (* the link cannot tell whose inputs were stale: every stale cycle counts for every device)\n");
}

/* The JSON members of the link: "link_stats", "state_checks" and "devices" (one line each). */
static void json_link(FILE *f, const pt_context_t *ctx) {
  char b[512];
  autd3_tool_link_stats_json(ctx->link_stats, b, sizeof b);
  fprintf(f, "  \"link_stats\": %s,\n", b);
  const autd3_link_status_t *st = ctx->status;
  fprintf(f, "  \"state_checks\": {\"checks\": %" PRIu64 ", \"not_all_op\": %" PRIu64, ctx->checks, ctx->checks_not_all_op);
  if (st && (st->measured & AUTD3_LINK_STATUS_RECOVERIES))
    fprintf(f, ", \"recoveries\": %" PRIu64 "},\n", st->recoveries);
  else
    fprintf(f, ", \"recoveries\": null},\n");
  fprintf(f, "  \"device_states\": [");
  for (size_t d = 0; d < ctx->devices; d++) {
    fprintf(f, "%s{\"position\": %zu, \"state\": \"%s\", \"al_state\": %u, \"recoveries\": ", d ? ", " : "", d,
            st ? autd3_tool_device_state_name(st->state[d]) : "UNKNOWN", st ? st->al_state[d] : 0);
    if (st && (st->measured & AUTD3_LINK_STATUS_DEVICE_RECOVERIES))
      fprintf(f, "%" PRIu32, st->device_recoveries[d]);
    else
      fprintf(f, "null");
    if (ctx->dev_info) {
      autd3_tool_device_info_json(&ctx->dev_info[d], b, sizeof b);
      fprintf(f, ", \"link\": %s}", b);
    } else {
      fprintf(f, ", \"link\": null}");
    }
  }
  fprintf(f, "],\n");
}

static const char *status_str(const pt_sample_t *s, char *buf) {
  switch (s->status) {
    case PT_OK: return "ok";
    case PT_DEVICE: snprintf(buf, 16, "dev:0x%02x", s->code); return buf;
    case PT_TIMEOUT: return "timeout";
    default: return "link";
  }
}

int pt_write_csv(const char *path, const pt_sample_t *s, size_t n) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  char b[16];
  fprintf(f, "index,rtt_ns,status\n");
  for (size_t i = 0; i < n; i++) fprintf(f, "%" PRIu64 ",%" PRIu64 ",%s\n", s[i].index, s[i].rtt_ns, status_str(&s[i], b));
  return fclose(f) == 0 ? 0 : -1;
}

int pt_write_json(const char *path, const pt_summary_t *s, const pt_context_t *ctx) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  double cyc = (double)ctx->cycle_us * 1e3;
  fprintf(f, "{\n");
  fprintf(f, "  \"link\": \"%s\",\n  \"mode\": \"%s\",\n  \"devices\": %zu,\n  \"cycle_us\": %u,\n  \"inflight\": %u,\n", ctx->link,
          ctx->mode, ctx->devices, ctx->cycle_us, ctx->inflight);
  if (ctx->timing) fprintf(f, "  \"timing_model\": \"%s\",\n", ctx->timing);
  fprintf(f, "  \"warmup\": %" PRIu64 ",\n", ctx->warmup);
  fprintf(f, "  \"elapsed_ns\": %" PRIu64 ",\n", s->elapsed_ns);
  fprintf(f, "  \"total_sends\": %" PRIu64 ",\n", s->success + s->timeouts + s->link_errors + s->device_errors);
  fprintf(f, "  \"success\": %" PRIu64 ",\n  \"timeouts\": %" PRIu64 ",\n  \"link_errors\": %" PRIu64 ",\n", s->success,
          s->timeouts, s->link_errors);
  fprintf(f, "  \"device_errors\": {");
  const char *sep = "";
  for (int code = 0; code < 256; code++) {
    if (s->device_error_counts[code]) {
      fprintf(f, "%s\"0x%02x\": %" PRIu64, sep, code, s->device_error_counts[code]);
      sep = ", ";
    }
  }
  fprintf(f, "},\n");
  fprintf(f, "  \"stale_cycles\": %" PRIu64 ",\n  \"lost_cycles\": %" PRIu64 ",\n", s->stale_cycles, s->lost_cycles);
  if (ctx->link_stats)
    json_link(f, ctx);
  fprintf(f, "  \"throughput\": {\"cmd_per_sec\": %.2f, \"byte_per_sec\": %.2f},\n", s->cmd_per_sec, s->byte_per_sec);
  fprintf(f,
          "  \"latency_ns\": {\"mean\": %" PRIu64 ", \"p50\": %" PRIu64 ", \"p95\": %" PRIu64 ", \"p99\": %" PRIu64
          ", \"min\": %" PRIu64 ", \"max\": %" PRIu64 "},\n",
          s->latency.mean, s->latency.p50, s->latency.p95, s->latency.p99, s->latency.min, s->latency.max);
  fprintf(f, "  \"latency_cycles\": {\"mean\": %.3f, \"p50\": %.3f, \"p99\": %.3f},\n", (double)s->latency.mean / cyc,
          (double)s->latency.p50 / cyc, (double)s->latency.p99 / cyc);
  fprintf(f, "  \"bus_thread\": {\"cpu_percent\": %.3f, \"cycles\": %" PRIu64 ", \"resyncs\": %" PRIu64 ", \"resets\": %" PRIu64
          ", \"retransmits\": %" PRIu64 "}\n",
          ctx->bus_cpu_percent, ctx->bus_cycles, ctx->resyncs, ctx->resets, ctx->retransmits);
  fprintf(f, "}\n");
  return fclose(f) == 0 ? 0 : -1;
}
