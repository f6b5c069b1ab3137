/*
 * autd3-emu-bench: how fast the emulator processes frames, and how much CPU
 * autd3-emu uses at 1 kHz. Numbers for docs/emulator.md.
 *
 *   autd3-emu-bench [--devices N ...] [--cycles C]
 *       in-process: SOEM's cyclic frames for an N-device chain in OP
 *       (LRD+FRMW, then LWR segments of 2 devices), time of
 *       autd3_emu_process per frame and per cycle (median, p99) vs the
 *       cycle's wire time at 100 Mbit/s.
 *   autd3-netns --devices N -- autd3-emu-bench --cpu SECONDS --devices N
 *       over the veth: send those frames at 1 kHz for SECONDS, then report
 *       autd3-emu's CPU time (from /proc/$AUTD3_EMU_PID) per second.
 * Timing model: the default (autd3_timing_model_default), drift 0.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emulation/ethercat/emu.h"
#include "nic/nic.h"
#include "platform/platform.h"
#include "numopt.h"

#define TOOL "autd3-emu-bench"

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static uint64_t g_now;
static void emit(void *ctx, uint8_t *f, size_t len) { autd3_emu_process(ctx, f, len, g_now += 100000); }

#define MAXF 70
static uint8_t g_fr[MAXF][AUTD3_EMU_SCRIPT_FRAME];
static size_t g_len[MAXF];

static double wire_ns(size_t len) { return (double)AUTD3_EMU_WIRE_NS(len); } /* preamble, FCS, IFG */

static int inprocess(uint16_t n, int cycles) {
  autd3_emu_config_t cfg = autd3_emu_config_default();
  cfg.devices = n;
  autd3_emu_t *emu;
  g_now = autd3__now_ns();
  if (autd3_emu_create(&cfg, g_now, &emu) != AUTD3_OK) return 1;
  autd3_emu_script_op(n, emit, emu);
  size_t k = autd3_emu_script_cycle(n, g_fr, g_len, MAXF);
  uint64_t *per_cycle = calloc((size_t)cycles, sizeof *per_cycle);
  uint64_t *small = calloc((size_t)cycles, sizeof *small);
  uint64_t *big = calloc((size_t)cycles * k, sizeof *big);
  size_t nbig = 0;
  static uint8_t work[MAXF][AUTD3_EMU_SCRIPT_FRAME];
  double wire = 0;
  for (size_t j = 0; j < k; j++) wire += wire_ns(g_len[j]);
  for (int c = 0; c < cycles; c++) {
    for (size_t j = 0; j < k; j++) {
      memcpy(work[j], g_fr[j], g_len[j]);
      work[j][16 + 10] = (uint8_t)c; /* a new output image every cycle: device 0 seq */
    }
    uint64_t sum = 0;
    for (size_t j = 0; j < k; j++) {
      uint64_t t0 = autd3__now_ns();
      autd3_emu_process(emu, work[j], g_len[j], t0);
      uint64_t d = autd3__now_ns() - t0;
      sum += d;
      if (j == 0) small[c] = d;
      else big[nbig++] = d;
    }
    per_cycle[c] = sum;
  }
  unsigned ops = 0;
  for (uint16_t i = 0; i < n; i++) ops += autd3_esc_al_state(&emu->esc[i]) == 8;
  qsort(per_cycle, (size_t)cycles, sizeof *per_cycle, cmp_u64);
  qsort(small, (size_t)cycles, sizeof *small, cmp_u64);
  qsort(big, nbig, sizeof *big, cmp_u64);
  printf("devices %u (%u in OP), %zu frames/cycle, %d cycles, timing model default\n", (unsigned)n, ops, k, cycles);
  printf("  LRD+FRMW frame (%zu B): median %.2f us, p99 %.2f us\n", g_len[0], small[cycles / 2] / 1e3,
         small[cycles * 99 / 100] / 1e3);
  if (nbig)
    printf("  LWR frame (%zu B):      median %.2f us, p99 %.2f us; wire time %.2f us\n", g_len[1], big[nbig / 2] / 1e3,
           big[nbig * 99 / 100] / 1e3, wire_ns(g_len[1]) / 1e3);
  printf("  per cycle: median %.2f us, p99 %.2f us; wire time at 100 Mbit/s %.2f us (+ 2 x %u x %u ns ring) -> ratio %.3f\n",
         per_cycle[cycles / 2] / 1e3, per_cycle[cycles * 99 / 100] / 1e3, wire / 1e3, (unsigned)n, cfg.hop_ns,
         (double)per_cycle[cycles / 2] / wire);
  free(per_cycle);
  free(small);
  free(big);
  autd3_emu_destroy(emu);
  return ops == n ? 0 : 1;
}

static uint64_t proc_cpu_ns(const char *pid) {
  char p[64], buf[1024];
  snprintf(p, sizeof p, "/proc/%s/stat", pid);
  FILE *f = fopen(p, "r");
  if (!f) return 0;
  size_t r = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[r] = 0;
  char *s = strrchr(buf, ')');
  unsigned long ut = 0, st = 0;
  if (!s || sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) return 0;
  return (uint64_t)(ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

typedef struct {
  autd3_nic_t *nic;
  int lost;
} wire_ctx_t;

static void xfer(wire_ctx_t *w, uint8_t *f, size_t len) {
  uint8_t buf[AUTD3_NIC_MAX_FRAME];
  size_t got;
  if (autd3__nic_send(w->nic, f, len < 60 ? 60 : len) != AUTD3_OK) { w->lost++; return; }
  if (autd3__nic_recv(w->nic, buf, sizeof buf, &got, autd3__now_ns() + 20000000ull) != AUTD3_OK) w->lost++;
}
static void emit_wire(void *ctx, uint8_t *f, size_t len) { xfer(ctx, f, len); }

static int cpu(uint16_t n, double seconds) {
  const char *ifn = getenv("AUTD3_TEST_IFNAME"), *pid = getenv("AUTD3_EMU_PID");
  if (!ifn || !pid) {
    fprintf(stderr, "autd3-emu-bench --cpu: run inside autd3-netns (AUTD3_TEST_IFNAME, AUTD3_EMU_PID)\n");
    return 2;
  }
  wire_ctx_t w = {0};
  if (autd3__nic_open(ifn, AUTD3_NIC_AUTO, &w.nic) != AUTD3_OK) {
    fprintf(stderr, "autd3-emu-bench: %s\n", autd3_last_error());
    return 1;
  }
  autd3_emu_script_op(n, emit_wire, &w);
  size_t k = autd3_emu_script_cycle(n, g_fr, g_len, MAXF);
  int cycles = (int)(seconds * 1000);
  uint64_t c0 = proc_cpu_ns(pid), t0 = autd3__now_ns(), next = t0;
  w.lost = 0;
  for (int c = 0; c < cycles; c++) {
    next += 1000000;
    autd3__sleep_until_ns(next, 0);
    for (size_t j = 0; j < k; j++) {
      g_fr[j][16 + 10] = (uint8_t)c;
      uint8_t f[AUTD3_EMU_SCRIPT_FRAME];
      memcpy(f, g_fr[j], g_len[j]);
      xfer(&w, f, g_len[j]);
    }
  }
  uint64_t c1 = proc_cpu_ns(pid), t1 = autd3__now_ns();
  printf("devices %u: %d cycles at 1 kHz (%zu frames each) in %.2f s, %d without reply; autd3-emu CPU %.1f ms/s = %.2f %% of a core\n",
         (unsigned)n, cycles, k, (t1 - t0) / 1e9, w.lost, (double)(c1 - c0) / 1e6 / ((t1 - t0) / 1e9),
         (double)(c1 - c0) / (double)(t1 - t0) * 100.0);
  autd3__nic_close(w.nic);
  return 0;
}

int main(int argc, char **argv) {
  uint16_t devs[8];
  int nd = 0, cycles = 20000;
  double cpu_s = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--devices") && i + 1 < argc && nd < 8) {
      devs[nd++] = (uint16_t)autd3_numopt_u64_or_exit(TOOL, "--devices", argv[++i], 1, AUTD3_EMU_MAX_DEVICES);
    } else if (!strcmp(argv[i], "--cycles") && i + 1 < argc) {
      cycles = (int)autd3_numopt_u64_or_exit(TOOL, "--cycles", argv[++i], 100, 100000000);
    } else if (!strcmp(argv[i], "--cpu") && i + 1 < argc) {
      cpu_s = autd3_numopt_f64_or_exit(TOOL, "--cpu", argv[++i], 0.001, 86400);
    } else {
      fprintf(stderr, "usage: autd3-emu-bench [--devices N]... [--cycles C] [--cpu SECONDS]\n");
      return 2;
    }
  }
  if (nd == 0) {
    devs[nd++] = 2;
    devs[nd++] = 32;
  }
  int rc = 0;
  for (int i = 0; i < nd; i++) rc |= cpu_s > 0 ? cpu(devs[i], cpu_s) : inprocess(devs[i], cycles);
  return rc;
}
