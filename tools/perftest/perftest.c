/*
 * autd3-perftest: sends one broadcast XorHash frame over and over through the
 * client and reports throughput and latency, like shinolab/autd3-sdk
 * tools/perftest:
 *
 *   stop-and-wait  per sample: t0; send_checked; rtt = now − t0   (max_inflight 1)
 *   streaming      send while fewer than --inflight are pending; when the
 *                  window is full (or all are sent) wait for the OLDEST and
 *                  record rtt = now − its send time; drain at the end
 *
 * Only successful samples enter the latency statistics; throughput counts
 * successes over the whole elapsed time (fill and drain included).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/autd3.h"
#include "link_flags.h"
#include "numopt.h"
#include "perftest.h"
#include "tool_os.h"

static uint64_t now_ns(void) { return tool_now_ns(); }

/* ---- command line ------------------------------------------------------------------------------ */

typedef struct cli {
  const char *link;
  size_t devices;
  uint64_t count;       /* 0 = use duration */
  uint64_t duration_ns; /* 0 = use count */
  bool streaming;
  uint32_t inflight;
  uint32_t cycle_us;
  int32_t shift_us;
  bool shift_set;
  uint64_t warmup;
  uint32_t data_len;
  uint32_t sleep_ms;
  const char *csv, *json, *plot;
  uint32_t timeout_cycles, max_resync_rounds;
  bool low_latency;
  int rt_priority, rt_core;
  const char *interface, *timing, *address, *twincat_server, *ams_net_id, *client_ams_net_id;
  int twincat_port;
  const char *capture;      /* EtherCAT links: --capture FILE.pcap */
  uint64_t emu_power_cycle; /* emulator: power-cycle the last device after this many sends; 0 = never */
  uint32_t remote_protocol; /* 0 = the link's default (newest) */
  uint32_t protocol;        /* autd3_protocol_t (--protocol) */
  const char *firmware;     /* emulator: --firmware new|v12|mixed; NULL = what --protocol implies */
} cli_t;

static void usage(FILE *f) {
  fprintf(f,
          "usage: autd3-perftest (--count N | --duration D) [options]\n"
          "\n"
          "Benchmark a libautd3 link: one broadcast XorHash frame, sent repeatedly through the client.\n"
          "The summary goes to stdout (same layout as the AUTD3 SDK's perftest); progress, firmware\n"
          "versions and warnings go to stderr.\n"
          "\n"
          "  --link KIND            emulator (default), echocat, soem, ethercrab, twincat, remote\n"
          "  --devices N            devices on the link (default 1)\n"
          "  --count N              number of sends\n"
          "  --duration D           run time: 10s, 500ms, 2m (a bare number is seconds)\n"
          "  --mode M               stop-and-wait (default) or streaming\n"
          "  --inflight N           streaming window, 1..127 (default 127)\n"
          "  --cycle-us US          bus cycle: emulator cycle, EtherCAT SYNC0 period and send cycle,\n"
          "                         TwinCAT task cycle (default 1000)\n"
          "  --shift-us US          EtherCAT SYNC0 shift (default 0)\n"
          "  --warmup N             drop the first N samples from the statistics (default 0)\n"
          "  --data-len N           XorHash data bytes, 0..620 (default 620)\n"
          "  --sleep-ms N           device-side sleep per command (default 0)\n"
          "  --csv FILE             every sample: index,rtt_ns,status (ok, dev:0xNN, timeout, link)\n"
          "  --json FILE            the summary as JSON\n"
          "  --plot FILE.svg        latency histogram and per-sample timeline\n"
          "  --timeout-cycles N     client timeout_cycles (default 10)\n"
          "  --max-resync-rounds N  client max_resync_rounds (default 8)\n"
          "  --low-latency          ask the firmware for low-latency (inline) processing\n"
          "  --rt-priority P        SCHED_FIFO priority of the client's bus thread, 1..99\n"
          "  --rt-core C            pin the client's bus thread to CPU C\n"
          "  --protocol P           devices' protocol: new (default), v12 (firmware v10-v12, the legacy\n"
          "                         client: stop-and-wait, frame = a Gain write of zero drives, 502 B)\n"
          "                         or auto (probe at open)\n"
          "link options:\n"
          "  --interface NAME       EtherCAT links: adapter (default auto)\n"
          "  --capture FILE.pcap    EtherCAT links: every frame, both directions, into a pcap file (Linux)\n"
          "  --timing MODEL         emulator: default, pessimistic, ideal or\n"
          "                         take=sync0|arrival,fifo=NS,ll=NS,publish=sync0|now\n"
          "  --address HOST:PORT    remote: server address (default 127.0.0.1:8080); \"auto\": the first\n"
          "                         server found by mDNS / DNS-SD within 2 s (autd3_remote_discover)\n"
          "  --remote-protocol V    remote: ARMT version 3 or 7 (default: the newest, 7)\n"
          "  --twincat-server IP    twincat: remote TwinCAT host (default: local router)\n"
          "  --twincat-port PORT    twincat: ADS TCP port (default 48898)\n"
          "  --ams-net-id ID        twincat: AMS Net ID of the runtime\n"
          "  --client-ams-net-id ID twincat: our AMS Net ID\n"
          "  --emu-power-cycle N    emulator: power-cycle the last device after N sends (fault test)\n"
          "  --firmware F           emulator: new, v12 or mixed (default: v12 with --protocol v12, else new)\n"
          "\n"
          "exit status:\n"
          "  0  every send completed (timeouts and device error codes are counted, not fatal)\n"
          "  1  the client could not be opened or set up, or an output file could not be written\n"
          "  2  bad command line\n"
          "  3  at least one send ended in a link error (a link failure, a closed client, a device\n"
          "     reset, an unknown outcome, another master: the \"link errors\" line of the summary)\n");
}

static void die(const char *fmt, const char *arg) {
  fprintf(stderr, "autd3-perftest: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  exit(2);
}

/* Numeric options: the tools' shared parser (tools/common/numopt.h). */
static uint64_t parse_u64(const char *opt, const char *s, uint64_t max) {
  return autd3_numopt_u64_or_exit("autd3-perftest", opt, s, 0, max);
}

/* --duration NUMBER[UNIT] (tools/common/numopt.h): 1 ns .. 30 days, a bare number in seconds. */
static uint64_t parse_duration(const char *s) {
  return autd3_numopt_duration_ns_or_exit("autd3-perftest", "--duration", s, 1000000000u, 1, 30ull * 86400 * 1000000000u);
}

enum {
  O_LINK = 256, O_DEVICES, O_COUNT, O_DURATION, O_MODE, O_INFLIGHT, O_CYCLE, O_SHIFT, O_WARMUP, O_DATALEN, O_SLEEP, O_CSV,
  O_JSON, O_PLOT, O_TIMEOUT, O_RESYNC, O_LL, O_RTPRIO, O_RTCORE, O_IFACE, O_TIMING, O_ADDR, O_TCSERVER, O_TCPORT, O_AMS,
  O_CAMS, O_HELP, O_EMU_PC, O_RPROTO, O_PROTOCOL, O_FIRMWARE, O_CAPTURE
};

static void parse_cli(int argc, char **argv, cli_t *c) {
  static const struct option opts[] = {
      {"link", 1, 0, O_LINK}, {"devices", 1, 0, O_DEVICES}, {"count", 1, 0, O_COUNT}, {"duration", 1, 0, O_DURATION},
      {"mode", 1, 0, O_MODE}, {"inflight", 1, 0, O_INFLIGHT}, {"cycle-us", 1, 0, O_CYCLE}, {"shift-us", 1, 0, O_SHIFT},
      {"warmup", 1, 0, O_WARMUP}, {"data-len", 1, 0, O_DATALEN}, {"sleep-ms", 1, 0, O_SLEEP}, {"csv", 1, 0, O_CSV},
      {"json", 1, 0, O_JSON}, {"plot", 1, 0, O_PLOT}, {"timeout-cycles", 1, 0, O_TIMEOUT},
      {"max-resync-rounds", 1, 0, O_RESYNC}, {"low-latency", 0, 0, O_LL}, {"rt-priority", 1, 0, O_RTPRIO},
      {"rt-core", 1, 0, O_RTCORE}, {"interface", 1, 0, O_IFACE}, {"timing", 1, 0, O_TIMING}, {"address", 1, 0, O_ADDR},
      {"twincat-server", 1, 0, O_TCSERVER}, {"twincat-port", 1, 0, O_TCPORT}, {"ams-net-id", 1, 0, O_AMS},
      {"client-ams-net-id", 1, 0, O_CAMS}, {"help", 0, 0, O_HELP},
      {"emu-power-cycle", 1, 0, O_EMU_PC}, {"remote-protocol", 1, 0, O_RPROTO}, {"protocol", 1, 0, O_PROTOCOL},
      {"firmware", 1, 0, O_FIRMWARE}, {"capture", 1, 0, O_CAPTURE}, {0, 0, 0, 0}};
  memset(c, 0, sizeof *c);
  c->link = "emulator";
  c->devices = 1;
  c->inflight = AUTD3_MAX_INFLIGHT;
  c->cycle_us = 1000;
  c->data_len = AUTD3_XOR_HASH_MAX_DATA;
  c->timeout_cycles = 10;
  c->max_resync_rounds = 8;
  c->rt_core = -1;
  c->twincat_port = -1;
  bool have_count = false, have_duration = false;
  int o;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
      case O_LINK: c->link = optarg; break;
      case O_DEVICES: c->devices = parse_u64("--devices", optarg, AUTD3_MAX_DEVICES); break;
      case O_COUNT: c->count = parse_u64("--count", optarg, UINT64_MAX); have_count = true; break;
      case O_DURATION: c->duration_ns = parse_duration(optarg); have_duration = true; break;
      case O_MODE:
        if (strcmp(optarg, "streaming") == 0) c->streaming = true;
        else if (strcmp(optarg, "stop-and-wait") == 0) c->streaming = false;
        else die("--mode: \"%s\": expected stop-and-wait or streaming", optarg);
        break;
      case O_INFLIGHT: c->inflight = (uint32_t)parse_u64("--inflight", optarg, UINT32_MAX); break;
      case O_CYCLE: c->cycle_us = (uint32_t)parse_u64("--cycle-us", optarg, 4000000); break;
      case O_SHIFT:
        c->shift_us = (int32_t)autd3_numopt_i64_or_exit("autd3-perftest", "--shift-us", optarg, -4000000, 4000000);
        c->shift_set = true;
        break;
      case O_WARMUP: c->warmup = parse_u64("--warmup", optarg, UINT64_MAX); break;
      case O_DATALEN: c->data_len = (uint32_t)parse_u64("--data-len", optarg, AUTD3_XOR_HASH_MAX_DATA); break;
      case O_SLEEP: c->sleep_ms = (uint32_t)parse_u64("--sleep-ms", optarg, 65535); break;
      case O_CSV: c->csv = optarg; break;
      case O_JSON: c->json = optarg; break;
      case O_PLOT: c->plot = optarg; break;
      case O_TIMEOUT: c->timeout_cycles = (uint32_t)parse_u64("--timeout-cycles", optarg, UINT32_MAX); break;
      case O_RESYNC: c->max_resync_rounds = (uint32_t)parse_u64("--max-resync-rounds", optarg, UINT32_MAX); break;
      case O_LL: c->low_latency = true; break;
      case O_RTPRIO: c->rt_priority = (int)parse_u64("--rt-priority", optarg, 99); break;
      case O_RTCORE: c->rt_core = (int)parse_u64("--rt-core", optarg, 4095); break;
      case O_IFACE: c->interface = optarg; break;
      case O_CAPTURE: c->capture = optarg; break;
      case O_TIMING: c->timing = optarg; break;
      case O_ADDR: c->address = optarg; break;
      case O_TCSERVER: c->twincat_server = optarg; break;
      case O_TCPORT: c->twincat_port = (int)parse_u64("--twincat-port", optarg, 65535); break;
      case O_AMS: c->ams_net_id = optarg; break;
      case O_CAMS: c->client_ams_net_id = optarg; break;
      case O_EMU_PC: c->emu_power_cycle = parse_u64("--emu-power-cycle", optarg, UINT64_MAX); break;
      case O_RPROTO: c->remote_protocol = (uint32_t)parse_u64("--remote-protocol", optarg, 7); break;
      case O_PROTOCOL:
        if (strcmp(optarg, "new") == 0) c->protocol = AUTD3_PROTOCOL_NEW;
        else if (strcmp(optarg, "v12") == 0) c->protocol = AUTD3_PROTOCOL_V12;
        else if (strcmp(optarg, "auto") == 0) c->protocol = AUTD3_PROTOCOL_AUTO;
        else die("--protocol: \"%s\": expected new, v12 or auto", optarg);
        break;
      case O_FIRMWARE: c->firmware = optarg; break;
      case O_HELP: usage(stdout); exit(0);
      default: usage(stderr); exit(2);
    }
  }
  if (optind < argc) die("unexpected argument \"%s\"", argv[optind]);
  if (have_count == have_duration) die("%sexactly one of --count and --duration is required", "");
  if (have_count && c->count == 0) die("%s--count must be > 0", "");
  if (c->devices == 0) die("%s--devices must be 1..128", "");
  if (c->streaming && (c->inflight < 1 || c->inflight > AUTD3_MAX_INFLIGHT)) die("%s--inflight must be in 1..127", "");
  if (c->cycle_us == 0) die("%s--cycle-us must be > 0", "");
}

/* SOEM (GPL-3.0-only) and EtherCrab (Rust) live in their own shared
 * libraries exporting autd3_link_<kind>_register() (link_driver.h). This
 * tool links only libautd3.so, so it loads the one asked for at run time and
 * calls that function explicitly (not relying on a load-time constructor);
 * the binary itself contains no GPL code. */
static void load_link_library(autd3_link_kind_t kind) {
  if (autd3_link_kind_available(kind)) return;
  const char *lib = kind == AUTD3_LINK_SOEM ? "autd3-link-soem" : kind == AUTD3_LINK_ETHERCRAB ? "autd3-link-ethercrab" : NULL;
  const char *sym = kind == AUTD3_LINK_SOEM ? "autd3_link_soem_register" : "autd3_link_ethercrab_register";
  if (lib == NULL) return;
  char why[512];
  void (*reg)(void) = tool_dl_fn(lib, sym, why, sizeof why);
  if (reg) reg();
  else fprintf(stderr, "note: %s\n", why);
}

/* Build the link option from the command line (tools/common/link_flags.c,
 * shared with autd3-remote-server): flags of another link are refused. */
static autd3_link_option_t build_link_option(const cli_t *c, autd3_timing_model_t *timing) {
  autd3_link_kind_t kind;
  if (autd3_link_kind_parse(c->link, &kind) != AUTD3_OK) die("--link: %s", autd3_last_error());
  load_link_library(kind);
  const autd3_tool_link_flags_t f = {
      .link = c->link, .cycle_us = c->cycle_us, .shift_us = c->shift_us, .shift_set = c->shift_set,
      .interface = c->interface, .timing = c->timing, .address = c->address, .twincat_server = c->twincat_server,
      .ams_net_id = c->ams_net_id, .client_ams_net_id = c->client_ams_net_id, .twincat_port = c->twincat_port,
      .capture = c->capture};
  autd3_link_option_t o;
  char err[256];
  if (!autd3_tool_link_option(&f, &o, err, sizeof err)) die("%s", err);
  if (kind == AUTD3_LINK_EMULATOR) *timing = o.u.emulator.timing;
  if (kind != AUTD3_LINK_EMULATOR && c->emu_power_cycle) die("--emu-power-cycle: only for --link emulator, not %s", c->link);
  if (kind != AUTD3_LINK_EMULATOR && c->firmware) die("--firmware: only for --link emulator, not %s", c->link);
  if (kind == AUTD3_LINK_EMULATOR) {
    autd3_emu_firmware_t fw = c->protocol == AUTD3_PROTOCOL_V12 ? AUTD3_EMU_FIRMWARE_V12 : AUTD3_EMU_FIRMWARE_NEW;
    if (c->firmware && autd3_emu_firmware_parse(c->firmware, &fw) != AUTD3_OK) die("--firmware: %s", autd3_last_error());
    o.u.emulator.firmware = fw;
  }
  if (kind == AUTD3_LINK_REMOTE) {
    o.u.remote.protocol = c->remote_protocol; /* the link range-checks it */
    if (c->address && strcmp(c->address, "auto") == 0) {
      static autd3_remote_found_t found[16];
      size_t n = 0;
      if (autd3_remote_discover(2000, found, 16, &n) != AUTD3_OK) die("--address auto: %s", autd3_last_error());
      for (size_t i = 0; i < n; i++)
        fprintf(stderr, "found %s at %s (wire %u, %s)%s\n", found[i].instance, found[i].address, found[i].wire,
                found[i].sdk[0] ? found[i].sdk : "sdk ?", i == 0 ? " <- using it" : "");
      o.u.remote.address = found[0].address;
    }
  }
  return o;
}

/* ---- background state check (every 100 ms, as the reference's spawn_state_check) ---------- */

typedef struct checker {
  tool_thread_t th;
  autd3_link_t *link;
  atomic_bool stop;
  uint64_t checks, not_all_op, recoveries;
  autd3_link_status_t last; /* the last check's result (read after the join) */
  autd3_err_t err;
  char msg[256];
} checker_t;

static void *checker_main(void *arg) {
  checker_t *k = arg;
  while (!atomic_load(&k->stop)) {
    autd3_link_status_t st;
    autd3_err_t e = autd3_link_check_state(k->link, &st);
    if (e != AUTD3_OK) {
      k->err = e;
      snprintf(k->msg, sizeof k->msg, "%s", autd3_last_error());
      break;
    }
    k->checks++;
    k->last = st;
    for (int d = 0; d < st.num_devices; d++) {
      /* UNKNOWN: the link cannot observe states (Remote); not a problem it saw */
      if (st.state[d] != AUTD3_DEVICE_OP && st.state[d] != AUTD3_DEVICE_UNKNOWN) {
        k->not_all_op++;
        break;
      }
    }
    k->recoveries = st.recoveries;
    for (int i = 0; i < 10 && !atomic_load(&k->stop); i++) tool_sleep_ms(10); /* 100 ms, stoppable */
  }
  return NULL;
}

/* ---- the run --------------------------------------------------------------------------------- */

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

typedef struct samples {
  pt_sample_t *v;
  size_t n, cap;
} samples_t;

static void push_sample(samples_t *s, uint64_t rtt, uint8_t status, uint8_t code) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 4096;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    if (s->v == NULL) die("%sout of memory for samples", "");
  }
  s->v[s->n] = (pt_sample_t){.index = s->n, .rtt_ns = rtt, .status = status, .code = code};
  s->n++;
}

typedef struct progress {
  uint64_t completed, ok, timeouts, link_errors, device_errors;
  uint64_t last_render;
  bool rendered;
} progress_t;

static void progress_observe(progress_t *p, const cli_t *c, uint8_t status, uint64_t start) {
  p->completed++;
  if (status == PT_OK) p->ok++;
  else if (status == PT_TIMEOUT) p->timeouts++;
  else if (status == PT_DEVICE) p->device_errors++;
  else p->link_errors++;
  uint64_t now = now_ns();
  if (p->rendered && now - p->last_render < 1000000000u) return;
  p->last_render = now;
  p->rendered = true;
  double el = (double)(now - start) / 1e9;
  if (c->count)
    fprintf(stderr, "\r[%8" PRIu64 "/%" PRIu64 "] ", p->completed, c->count);
  else
    fprintf(stderr, "\r[%6.1f/%.1fs] ", el, (double)c->duration_ns / 1e9);
  fprintf(stderr, "ok=%" PRIu64 " timeout=%" PRIu64 " dev_err=%" PRIu64 " link_err=%" PRIu64 "    ", p->ok, p->timeouts,
          p->device_errors, p->link_errors);
  fflush(stderr);
}

/* Classify a finished request. A LINK/CLOSED error means the bus thread is gone. */
static bool v12_run; /* protocol v12: device errors come as AUTD3_E_DEVICE, the data byte is a value */
static uint8_t classify(autd3_err_t e, const autd3_response_t *r, uint8_t *code, bool *fatal) {
  *code = 0;
  if (v12_run && (e == AUTD3_OK || e == AUTD3_E_DEVICE)) return e == AUTD3_OK ? PT_OK : PT_DEVICE;
  if (e == AUTD3_OK || e == AUTD3_E_DEVICE) {
    int dev;
    if (autd3_response_check(r, &dev, code) == AUTD3_OK) return PT_OK;
    return PT_DEVICE;
  }
  if (e == AUTD3_E_TIMEOUT) return PT_TIMEOUT;
  fprintf(stderr, "\nlink error: %s: %s\n", autd3_err_name(e), autd3_last_error());
  if (e == AUTD3_E_LINK || e == AUTD3_E_CLOSED) *fatal = true;
  return PT_LINK;
}

/* --emu-power-cycle: fault injection before send number `issued`. */
static void maybe_power_cycle(autd3_client_t *cl, const cli_t *c, uint64_t issued) {
  if (c->emu_power_cycle == 0 || issued != c->emu_power_cycle) return;
  uint16_t dev = (uint16_t)(autd3_client_num_devices(cl) - 1);
  if (autd3_emulator_power_cycle(autd3_client_link(cl), dev) != AUTD3_OK)
    fprintf(stderr, "\nwarning: power-cycle of device %u failed: %s\n", (unsigned)dev, autd3_last_error());
  else
    fprintf(stderr, "\npower-cycled device %u after %" PRIu64 " sends\n", (unsigned)dev, issued);
}

static bool more_to_send(const cli_t *c, uint64_t issued, uint64_t start) {
  if (interrupted) return false;
  if (c->count) return issued < c->count;
  return now_ns() - start < c->duration_ns;
}

static void run_stop_and_wait(autd3_client_t *cl, const cli_t *c, const autd3_frame_t *f, samples_t *s, uint64_t *elapsed) {
  progress_t p = {0};
  bool fatal = false;
  uint64_t start = now_ns();
  while (!fatal && more_to_send(c, s->n, start)) {
    autd3_response_t r;
    memset(&r, 0, sizeof r);
    maybe_power_cycle(cl, c, s->n);
    uint64_t t0 = now_ns();
    autd3_err_t e = autd3_client_send_checked(cl, f, &r);
    uint64_t rtt = now_ns() - t0;
    uint8_t code;
    uint8_t st = classify(e, &r, &code, &fatal);
    push_sample(s, rtt, st, code);
    progress_observe(&p, c, st, start);
  }
  *elapsed = now_ns() - start;
  if (p.rendered) fprintf(stderr, "\n");
}

static void run_streaming(autd3_client_t *cl, const cli_t *c, const autd3_frame_t *f, samples_t *s, uint64_t *elapsed) {
  struct {
    autd3_request_t *req;
    uint64_t sent_at;
  } win[AUTD3_MAX_INFLIGHT];
  size_t head = 0, len = 0;
  uint64_t issued = 0;
  progress_t p = {0};
  bool fatal = false;
  uint64_t start = now_ns();
  for (;;) {
    if (!fatal && len < c->inflight && more_to_send(c, issued, start)) {
      size_t at = (head + len) % AUTD3_MAX_INFLIGHT;
      maybe_power_cycle(cl, c, issued);
      win[at].sent_at = now_ns();
      autd3_err_t e = autd3_client_send(cl, f, &win[at].req);
      if (e != AUTD3_OK) {
        uint8_t code;
        push_sample(s, now_ns() - win[at].sent_at, classify(e, NULL, &code, &fatal), 0);
        fatal = true; /* a send that cannot be queued: stop issuing, drain the rest */
        continue;
      }
      len++;
      issued++;
      continue;
    }
    if (len == 0) break;
    autd3_response_t r;
    memset(&r, 0, sizeof r);
    autd3_err_t e = autd3_request_wait(win[head].req, &r);
    uint64_t rtt = now_ns() - win[head].sent_at;
    head = (head + 1) % AUTD3_MAX_INFLIGHT;
    len--;
    uint8_t code;
    uint8_t st = classify(e, &r, &code, &fatal);
    push_sample(s, rtt, st, code);
    progress_observe(&p, c, st, start);
  }
  *elapsed = now_ns() - start;
  if (p.rendered) fprintf(stderr, "\n");
}

/* ---- open, run, report ---------------------------------------------------------------------- */

/* Geometry, client configuration and open; prints the device count and the firmware versions. */
static autd3_client_t *open_client(const cli_t *c, const autd3_link_option_t *lo, uint32_t *max_inflight) {
  autd3_geometry_t *g = NULL;
  if (autd3_geometry_create(c->devices, NULL, &g) != AUTD3_OK) die("geometry: %s", autd3_last_error());
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.max_inflight = c->streaming ? c->inflight : 1;
  cfg.timeout_cycles = c->timeout_cycles;
  cfg.max_resync_rounds = c->max_resync_rounds;
  cfg.low_latency = c->low_latency;
  cfg.rt_priority = c->rt_priority;
  cfg.rt_cpu = c->rt_core;
  cfg.protocol = c->protocol;
  if (autd3_client_config_validate(&cfg) != AUTD3_OK) die("%s", autd3_last_error());
  *max_inflight = cfg.max_inflight;
  autd3_client_t *cl = NULL;
  autd3_err_t e = autd3_client_open(g, lo, &cfg, &cl);
  autd3_geometry_free(g);
  if (e != AUTD3_OK) {
    fprintf(stderr, "autd3-perftest: client open over %s failed: %s: %s\n", c->link, autd3_err_name(e), autd3_last_error());
    return NULL;
  }
  size_t n = autd3_client_num_devices(cl);
  fprintf(stderr, "devices: %zu\n", n);
  autd3_fw_version_t *fw = calloc(n, sizeof *fw);
  if (fw == NULL) die("%sout of memory", "");
  e = autd3_client_read_firmware_version(cl, fw);
  if (e != AUTD3_OK) {
    fprintf(stderr, "autd3-perftest: reading firmware version: %s: %s\n", autd3_err_name(e), autd3_last_error());
    free(fw);
    autd3_client_close(cl);
    return NULL;
  }
  for (size_t i = 0; i < n; i++)
    fprintf(stderr, "device[%zu] firmware version: cpu v%u.%u.%u, fpga v%u.%u.%u\n", i, fw[i].cpu_major, fw[i].cpu_minor,
            fw[i].cpu_patch, fw[i].fpga_major, fw[i].fpga_minor, fw[i].fpga_patch);
  free(fw);
  return cl;
}

/* The frame every sample sends: XorHash, or for protocol v12 a Gain write. */
static void make_frame(autd3_client_t *cl, const cli_t *c, autd3_frame_t *frame) {
  v12_run = autd3_client_protocol(cl) == AUTD3_PROTOCOL_V12;
  if (v12_run) {
    /* Firmware v12 has no XorHash: the frame is what an application sends
     * most, a Gain write (tag 0x30, segment 0, flag UPDATE, 249 drives) of
     * zero drives, 502 bytes (crate autd3-firmware-emulator 38.1.0 gain.rs). */
    static uint8_t gain[4 + 2 * AUTD3_NUM_TRANSDUCERS] = {AUTD3_V12_TAG_GAIN, 0, 1, 0};
    if (autd3_v12_frame(frame, gain, sizeof gain, NULL, 0) != AUTD3_OK) die("v12 Gain frame: %s", autd3_last_error());
    fprintf(stderr, "protocol: v12 (legacy client, stop-and-wait per frame; frame: Gain, %zu B)\n", sizeof gain);
  } else if (autd3_frame_xor_hash_bench(frame, (uint16_t)c->sleep_ms, c->data_len) != AUTD3_OK) {
    die("XorHash frame: %s", autd3_last_error());
  }
}

/* What the link says at the end of the run, read before the client closes. */
typedef struct link_end {
  autd3_link_stats_t stats;
  autd3_link_device_info_t info[AUTD3_MAX_DEVICES];
  bool info_ok;
  char diag[4096];
} link_end_t;

static void read_link_end(autd3_client_t *cl, link_end_t *le) {
  autd3_link_t *l = autd3_client_link(cl);
  autd3_link_stats(l, &le->stats);
  autd3_link_diagnostics(l, le->diag, sizeof le->diag);
  le->info_ok = true;
  for (size_t d = 0; d < autd3_client_num_devices(cl) && le->info_ok; d++)
    le->info_ok = autd3_link_device_info(l, (uint16_t)d, &le->info[d]) == AUTD3_OK;
}

/* Stop the state checker and say on stderr what it and the client saw. */
static void stop_checker(checker_t *chk, const autd3_client_stats_t *st0, const autd3_client_stats_t *st1) {
  atomic_store(&chk->stop, true);
  tool_thread_join(&chk->th);
  if (chk->err != AUTD3_OK) fprintf(stderr, "state check stopped: %s: %s\n", autd3_err_name(chk->err), chk->msg);
  fprintf(stderr, "state checks: %" PRIu64 " (%" PRIu64 " with a device not in OP), recoveries: %" PRIu64 "\n", chk->checks,
          chk->not_all_op, chk->recoveries);
  if (st1->device_resets != st0->device_resets || st1->unknown_outcomes != st0->unknown_outcomes ||
      st1->second_master != st0->second_master || st1->device_timeouts != st0->device_timeouts)
    fprintf(stderr,
            "client: device resets %" PRIu64 ", re-establishments %" PRIu64 ", unknown outcomes %" PRIu64
            ", second master %" PRIu64 ", devices timed out %" PRIu64 "\n",
            st1->device_resets - st0->device_resets, st1->reinits - st0->reinits, st1->unknown_outcomes - st0->unknown_outcomes,
            st1->second_master - st0->second_master, st1->device_timeouts - st0->device_timeouts);
}

/* --csv, --json, --plot; 1 if one could not be written. */
static int write_outputs(const cli_t *c, const samples_t *s, size_t drop, const pt_summary_t *sum, const pt_context_t *ctx) {
  int rc = 0;
  if (c->csv) {
    if (pt_write_csv(c->csv, s->v, s->n) != 0) {
      fprintf(stderr, "warning: failed to write CSV to %s: %s\n", c->csv, strerror(errno));
      rc = 1;
    } else {
      printf("\nCSV written: %s\n", c->csv);
    }
  }
  if (c->json) {
    if (pt_write_json(c->json, sum, ctx) != 0) {
      fprintf(stderr, "warning: failed to write JSON to %s: %s\n", c->json, strerror(errno));
      rc = 1;
    } else {
      printf("JSON written: %s\n", c->json);
    }
  }
  if (c->plot) {
    if (pt_write_svg(c->plot, s->v + drop, s->n - drop, sum, ctx) != 0) {
      fprintf(stderr, "warning: failed to write SVG to %s: %s\n", c->plot, strerror(errno));
      rc = 1;
    } else {
      printf("plot written: %s\n", c->plot);
    }
  }
  return rc;
}

int main(int argc, char **argv) {
  cli_t c;
  parse_cli(argc, argv, &c);
  autd3_timing_model_t timing = autd3_timing_model_default();
  autd3_link_option_t lo = build_link_option(&c, &timing);
  bool emulator = lo.kind == AUTD3_LINK_EMULATOR;
  char timing_desc[128] = "";
  if (emulator) {
    snprintf(timing_desc, sizeof timing_desc, "%s(take=%s,fifo=%u,ll=%u,publish=%s)", c.timing ? c.timing : "default",
             timing.take_on_sync0 ? "sync0" : "arrival", timing.fifo_latency_ns, timing.ll_latency_ns,
             timing.publish_on_sync0 ? "sync0" : "now");
    fprintf(stderr, "timing model: %s\n", timing_desc);
  }
  uint32_t max_inflight = 1;
  autd3_client_t *cl = open_client(&c, &lo, &max_inflight);
  if (cl == NULL) return 1;
  size_t n = autd3_client_num_devices(cl);

  checker_t chk;
  memset(&chk, 0, sizeof chk);
  chk.link = autd3_client_link(cl);
  atomic_init(&chk.stop, false);
  if (!tool_thread_start(&chk.th, checker_main, &chk)) die("%scannot start the state-check thread", "");
  tool_on_sigint(on_sigint);
  autd3_frame_t frame;
  make_frame(cl, &c, &frame);

  samples_t s = {0};
  if (c.count) {
    s.cap = c.count;
    s.v = malloc(s.cap * sizeof *s.v);
    if (s.v == NULL) die("%sout of memory for samples", "");
  }
  autd3_client_stats_t st0, st1;
  autd3_client_stats(cl, &st0);
  uint64_t elapsed = 0;
  if (c.streaming)
    run_streaming(cl, &c, &frame, &s, &elapsed);
  else
    run_stop_and_wait(cl, &c, &frame, &s, &elapsed);
  if (interrupted) fprintf(stderr, "interrupted: stopping after %zu samples\n", s.n);
  autd3_client_stats(cl, &st1);
  static link_end_t le;
  read_link_end(cl, &le);
  stop_checker(&chk, &st0, &st1);
  autd3_client_close(cl);

  size_t drop = c.warmup < s.n ? (size_t)c.warmup : s.n;
  pt_summary_t sum;
  pt_summarize(s.v + drop, s.n - drop, elapsed, le.stats.stale_cycles, le.stats.lost_cycles, &sum);
  pt_context_t ctx = {
      .link = c.link,
      .mode = v12_run ? (c.streaming ? "streaming/v12" : "stop-and-wait/v12") : c.streaming ? "streaming" : "stop-and-wait",
      .timing = emulator ? timing_desc : NULL,
      .devices = n,
      .cycle_us = c.cycle_us,
      .inflight = max_inflight,
      .warmup = c.warmup,
      .bus_cpu_percent = elapsed ? (double)(st1.bus_cpu_ns - st0.bus_cpu_ns) / (double)elapsed * 100.0 : 0,
      .bus_cycles = st1.bus_cycles - st0.bus_cycles,
      .resyncs = st1.resyncs - st0.resyncs,
      .resets = st1.resets - st0.resets,
      .retransmits = st1.retransmits - st0.retransmits,
      .link_stats = &le.stats,
      .checks = chk.checks,
      .checks_not_all_op = chk.not_all_op,
      .status = chk.checks ? &chk.last : NULL,
      .check_error = chk.err != AUTD3_OK ? chk.msg : NULL,
      .dev_info = le.info_ok ? le.info : NULL,
  };
  pt_print_summary(stdout, &sum);
  pt_print_extra(stdout, &sum, &ctx, le.diag);
  int rc = write_outputs(&c, &s, drop, &sum, &ctx);
  /* A run with link errors is not a clean measurement: say so in the exit
   * status, so scripts (scripts/bench.sh, CI) cannot mistake it for one.
   * Counted over every sample, warm-up included. */
  uint64_t link_errors = 0;
  for (size_t i = 0; i < s.n; i++) link_errors += s.v[i].status == PT_LINK;
  free(s.v);
  if (link_errors > 0) {
    fprintf(stderr, "autd3-perftest: %" PRIu64 " send(s) ended in a link error: exit status 3\n", link_errors);
    return 3;
  }
  return rc;
}
