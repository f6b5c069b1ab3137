/*
 * autd3-emu: serves a chain of emulated AUTD3 EtherCAT devices on a network
 * interface (raw socket through src/nic/nic.h), so that unmodified EtherCAT
 * masters (SOEM/pysoem, EtherCrab, echocat) can drive it. See docs/emulator.md.
 *
 *   autd3-emu --interface veth1 --devices 2 [--control /tmp/emu.sock] ...
 *
 * One thread: poll(nic, control socket) → process each frame through the
 * chain → send the reply now, or at its due time when the wire model or a
 * reply delay is on. Clean shutdown on SIGINT/SIGTERM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "autd3/error.h"
#include "emulation/ethercat/emu.h"
#include "nic/capture.h"
#include "nic/nic.h"
#include "platform/platform.h"
#include "numopt.h"
#include "nic/rx_clock.h"

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

/* ---- delayed replies (wire model, "delay US") ---- */
#define QLEN 256
typedef struct {
  uint64_t due;
  size_t len;
  uint8_t buf[AUTD3_NIC_MAX_FRAME];
} pending_t;
static pending_t g_q[QLEN];
static unsigned g_qhead, g_qlen;

/* ---- pcap capture (--capture): the shared writer of src/nic/capture.c ---- */
static autd3_capture_t g_cap;
static void cap_write(const uint8_t *f, size_t len) { autd3__capture_write(&g_cap, f, len, autd3__realtime_ns()); }

/* Send every queued reply that is due by now. Called between received frames
 * too: a reply is due at its model time whatever the master sends meanwhile
 * (a burst of frames must not hold back the replies of earlier ones). */
static void send_due(autd3_nic_t *nic) {
  uint64_t now = autd3__now_ns();
  while (g_qlen && g_q[g_qhead].due <= now) {
    cap_write(g_q[g_qhead].buf, g_q[g_qhead].len);
    autd3__nic_send(nic, g_q[g_qhead].buf, g_q[g_qhead].len);
    g_qhead = (g_qhead + 1) % QLEN;
    g_qlen--;
  }
}

static void usage(FILE *o) {
  fprintf(o,
          "usage: autd3-emu --interface NAME [options]\n"
          "  --interface, -i NAME   network interface (raw socket; needs CAP_NET_RAW)\n"
          "  --devices, -n N        devices in the chain, 1..128 (default 2)\n"
          "  --fw-version A.B.C     firmware version the devices report (CPU and FPGA; default 0.9.0)\n"
          "  --timing SPEC          default|pessimistic|ideal|take=sync0|arrival,fifo=NS,ll=NS,publish=sync0|now\n"
          "  --firmware F           new (default), v12 (firmware v12.1.0, msg_id protocol) or mixed (odd devices v12)\n"
          "  --drift-ppm X          oscillator error of each device, up to +-X ppm (default 0)\n"
          "  --hop-ns N             forwarding delay per device (default 600)\n"
          "  --wire                 100 Mbit/s wire model: frames queue on the wire, device k gets a frame after\n"
          "                         its serialisation + k hops, the reply after 2 x N hops (docs/emulator.md)\n"
          "  --mailbox              declare the ESI's mailbox (SM0/SM1) and serve CoE SDO uploads\n"
          "  --no-strict-op         allow SAFE-OP -> OP before the first output image\n"
          "  --dc-required          refuse SAFE-OP unless SYNC0 is active with a 500 us multiple\n"
          "  --sm-watchdog-ms N     power-on SM watchdog time, 0..6553 ms, 0 = off (default 100, as an ESC)\n"
          "  --drop P / --corrupt P fraction of frames not answered / answered with one bit flipped\n"
          "  --delay-us N           delay every reply by N us\n"
          "  --silence              answer nothing (until 'silence 0')\n"
          "  --unplug K             devices K.. are unplugged at start\n"
          "  --vendor HEX --name S  identity override for device --override-device K (default 0)\n"
          "  --control PATH         UNIX stream control socket (commands: docs/emulator.md)\n"
          "  --capture FILE         write every received frame and reply to a pcap file\n"
          "  --seed N               seed for power-on times, drift and fault draws\n"
          "  --exit-with-parent     stop (SIGTERM) when the parent process dies (autd3-netns)\n"
          "  -v, --verbose          print AL state changes\n");
}

typedef struct {
  autd3_emu_t *emu;
  uint32_t delay_us;
  int nic_fd;
  emu_rx_clock_t rx_clock; /* when each frame arrived (the wire model's start) */
} ctx_t;

/* Time-driven work (the SM watchdog above all) may run at time t only once every
 * frame that arrived before t has been processed: read t first, then check that
 * the NIC queue is empty. Otherwise a stall of this process (CI load) would let
 * the watchdog expire although the master's frames were waiting in the socket;
 * a real ESC sees each frame when it arrives. Returns false (try again after the
 * queued frames) if frames are waiting. */
static bool tick_if_drained(autd3_emu_t *emu, int nic_fd) {
  uint64_t t = autd3__now_ns();
  struct pollfd p = {.fd = nic_fd, .events = POLLIN};
  if (poll(&p, 1, 0) != 0) return false;
  autd3_emu_tick(emu, t);
  return true;
}

/* A whole decimal number in [0, max], or -1 (the shared option parser). */
static long index_arg(const char *s, long max) {
  char err[128];
  uint64_t v;
  return autd3_numopt_u64("", s, 0, (uint64_t)max, &v, err, sizeof err) ? (long)v : -1;
}

/* "log K": drain up to LOG_BATCH entries of device K's execution log into one line,
 *   ok log K dropped D more 0|1 n N INDEX:BOOT:SEQ:CMD:RESULT:TAG ...
 * (INDEX, BOOT, D decimal; SEQ, CMD, RESULT two hex digits; TAG eight hex digits).
 * "more 1" = entries remain: ask again. Events due by now run first, when no
 * frame is queued (see tick_if_drained). */
#define LOG_BATCH 512 /* 512 x <= 28 bytes fits the 33 000-byte reply */
static void log_reply(autd3_emu_t *emu, int nic_fd, uint16_t k, char *reply, size_t cap) {
  static autd3_exec_entry_t ent[LOG_BATCH];
  tick_if_drained(emu, nic_fd);
  uint64_t dropped = 0;
  autd3_exec_log_t *lg = &emu->esc[k].fw.log;
  size_t cnt = autd3_exec_log_drain(lg, ent, LOG_BATCH, &dropped);
  bool more = atomic_load(&lg->head) != atomic_load(&lg->tail);
  int w = snprintf(reply, cap, "ok log %u dropped %llu more %d n %zu", (unsigned)k, (unsigned long long)dropped,
                   more ? 1 : 0, cnt);
  size_t len = w > 0 ? (size_t)w : 0;
  for (size_t i = 0; i < cnt && len < cap; i++) {
    w = snprintf(reply + len, cap - len, " %u:%u:%02x:%02x:%02x:%08x", (unsigned)ent[i].index, (unsigned)ent[i].boot,
                 ent[i].seq, ent[i].cmd, ent[i].result, (unsigned)ent[i].tag);
    if (w < 0) break;
    len += (size_t)w;
  }
}

/* "errors K KIND [P] N": N errors of KIND (crc, phy, fwd, lost-link with a
 * port P 0..3; pu, pdi without) into device K's ESC error counters;
 * "errors K" reads them back (docs/emulator.md "Error counters"). */
static void errors_cmd(autd3_emu_t *emu, const char *line, char *reply, size_t cap) {
  static const struct { const char *name; autd3_emu_err_kind_t kind; bool port; } kinds[] = {
      {"crc", AUTD3_EMU_ERR_CRC, true}, {"phy", AUTD3_EMU_ERR_PHY, true},      {"fwd", AUTD3_EMU_ERR_FWD, true},
      {"pu", AUTD3_EMU_ERR_PU, false},  {"pdi", AUTD3_EMU_ERR_PDI, false},     {"lost-link", AUTD3_EMU_ERR_LOST_LINK, true}};
  char dev[24] = "", kind[24] = "", a1[24] = "", a2[24] = "";
  int n = sscanf(line, "%*s %23s %23s %23s %23s", dev, kind, a1, a2);
  long k = n >= 1 ? index_arg(dev, emu->cfg.devices - 1) : -1;
  if (k < 0) {
    snprintf(reply, cap, "err errors: device 0..%u, then crc|phy|fwd|lost-link P N or pu|pdi N", (unsigned)emu->cfg.devices - 1);
    return;
  }
  if (n == 1) { /* read back: the 20 bytes 0x0300-0x0313 in hex */
    const uint8_t *m = emu->esc[k].mem + 0x0300;
    int w = snprintf(reply, cap, "ok errors %ld ", k);
    for (int i = 0; i < 0x14 && w > 0 && (size_t)w + 3 < cap; i++) w += snprintf(reply + w, cap - (size_t)w, "%02x", m[i]);
    return;
  }
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    if (strcmp(kind, kinds[i].name)) continue;
    long port = 0, cnt = -1;
    if (kinds[i].port) {
      port = n == 4 ? index_arg(a1, 3) : -1;
      cnt = n == 4 ? index_arg(a2, 255) : -1;
    } else {
      cnt = n == 3 ? index_arg(a1, 255) : -1;
    }
    if (port < 0 || cnt < 0) {
      snprintf(reply, cap, "err errors %ld %s: %s", k, kind, kinds[i].port ? "port 0..3 then count 0..255" : "count 0..255");
      return;
    }
    autd3_emu_inject_errors(emu, (uint16_t)k, kinds[i].kind, (uint8_t)port, (uint32_t)cnt);
    snprintf(reply, cap, "ok errors %ld %s %ld %ld", k, kind, port, cnt);
    return;
  }
  snprintf(reply, cap, "err errors %ld %s: kinds crc, phy, fwd, lost-link (with a port), pu, pdi", k, kind);
}

/* One control command; reply is written without the trailing newline. */
static void control(ctx_t *c, char *line, char *reply, size_t cap) {
  char *nl = strpbrk(line, "\r\n");
  if (nl) *nl = 0;
  char cmd[32] = {0};
  char arg[64] = {0};
  int n = sscanf(line, "%31s %63s", cmd, arg);
  autd3_emu_t *emu = c->emu;
  uint64_t now = autd3__now_ns();
  if (n < 1) {
    snprintf(reply, cap, "err empty command");
  } else if (!strcmp(cmd, "status")) {
    static char buf[32768];
    tick_if_drained(emu, c->nic_fd); /* else: as of the last tick (frames are queued) */
    size_t len = autd3_emu_status(emu, buf, sizeof buf);
    while (len > 0 && buf[len - 1] == '\n') buf[--len] = 0;
    for (size_t i = 0; i < len; i++)
      if (buf[i] == '\n') buf[i] = ';';
    snprintf(reply, cap, "ok %s", buf);
  } else if (!strcmp(cmd, "unplug") && n == 2) {
    long k = index_arg(arg, emu->cfg.devices);
    if (k < 0) snprintf(reply, cap, "err unplug %s: devices 0..%u", arg, (unsigned)emu->cfg.devices);
    else {
      autd3_emu_unplug(emu, (uint16_t)k);
      snprintf(reply, cap, "ok present %ld", k);
    }
  } else if (!strcmp(cmd, "replug")) {
    autd3_emu_replug(emu);
    snprintf(reply, cap, "ok present %u", (unsigned)emu->cfg.devices);
  } else if (!strcmp(cmd, "power-cycle") && n == 2) {
    long k = index_arg(arg, emu->cfg.devices - 1);
    if (k < 0) snprintf(reply, cap, "err power-cycle %s: devices 0..%u", arg, (unsigned)emu->cfg.devices - 1);
    else {
      autd3_emu_power_cycle(emu, (uint16_t)k, now);
      snprintf(reply, cap, "ok device %ld in INIT", k);
    }
  } else if ((!strcmp(cmd, "drop") || !strcmp(cmd, "corrupt")) && n == 2) {
    char err[128];
    double p = 0;
    if (!autd3_numopt_f64(cmd, arg, 0, 1, &p, err, sizeof err)) snprintf(reply, cap, "err %s %s: fraction 0..1", cmd, arg);
    else {
      if (cmd[0] == 'd') emu->faults.drop = p;
      else emu->faults.corrupt = p;
      snprintf(reply, cap, "ok %s %g", cmd, p);
    }
  } else if (!strcmp(cmd, "delay") && n == 2) {
    long us = index_arg(arg, 10000000);
    if (us < 0) snprintf(reply, cap, "err delay %s: 0..10000000 us", arg);
    else {
      c->delay_us = (uint32_t)us;
      snprintf(reply, cap, "ok delay %ld", us);
    }
  } else if (!strcmp(cmd, "silence") && n == 2 && (arg[0] == '0' || arg[0] == '1') && !arg[1]) {
    emu->faults.silence = arg[0] == '1';
    snprintf(reply, cap, "ok silence %c", arg[0]);
  } else if ((!strcmp(cmd, "mute") || !strcmp(cmd, "unmute")) && n == 2) {
    long k = index_arg(arg, emu->cfg.devices - 1);
    if (k < 0) snprintf(reply, cap, "err %s %s: devices 0..%u", cmd, arg, (unsigned)emu->cfg.devices - 1);
    else {
      emu->faults.mute[k] = cmd[0] == 'm';
      snprintf(reply, cap, "ok %s %ld", cmd, k);
    }
  } else if (!strcmp(cmd, "al") && n == 2) {
    long k = index_arg(arg, emu->cfg.devices - 1);
    if (k < 0) snprintf(reply, cap, "err al %s: devices 0..%u", arg, (unsigned)emu->cfg.devices - 1);
    else {
      tick_if_drained(emu, c->nic_fd); /* watchdog state as of now (or the last tick, if frames are queued) */
      const uint8_t *m = emu->esc[k].mem;
      snprintf(reply, cap, "ok 0x%02x code 0x%04x", m[0x130], (unsigned)(m[0x134] | (m[0x135] << 8)));
    }
  } else if (!strcmp(cmd, "log") && n == 2) {
    long k = index_arg(arg, emu->cfg.devices - 1);
    if (k < 0) snprintf(reply, cap, "err log %s: devices 0..%u", arg, (unsigned)emu->cfg.devices - 1);
    else log_reply(emu, c->nic_fd, (uint16_t)k, reply, cap);
  } else if (!strcmp(cmd, "output") && n == 2) {
    long k = index_arg(arg, emu->cfg.devices - 1);
    if (k < 0) snprintf(reply, cap, "err output %s: devices 0..%u", arg, (unsigned)emu->cfg.devices - 1);
    else {
      tick_if_drained(emu, c->nic_fd); /* as of now (or the last tick, if frames are queued) */
      autd3_output_state_t st;
      autd3_fw_dev_output_state(&emu->esc[k].fw, &st);
      int len = snprintf(reply, cap,
                         "ok dev %ld pattern bank %u type %u size %u div %u rep %u pending %u mod bank %u size %u div %u rep %u "
                         "pending %u sample %u silencer flag %u rate %u %u steps %u %u fpga 0x%02x error 0x%02x drives ",
                         k, st.pattern_bank, st.pattern_emission_type, (unsigned)st.pattern_size, st.pattern_divider, st.pattern_rep,
                         st.transition_pending, st.modulation_bank, (unsigned)st.modulation_size, st.modulation_divider,
                         st.modulation_rep, st.modulation_transition_pending, st.modulation, st.silencer_flag,
                         st.silencer_update_rate_intensity, st.silencer_update_rate_phase, st.silencer_completion_steps_intensity,
                         st.silencer_completion_steps_phase, st.fpga_state, st.error_detail);
      /* then per transducer "PPII" (phase, intensity) in hex */
      for (int t = 0; t < AUTD3_OUTPUT_TRANSDUCERS && len > 0 && (size_t)len + 5 < cap; t++)
        len += snprintf(reply + len, cap - (size_t)len, "%02x%02x", st.phase[t], st.intensity[t]);
    }
  } else if (!strcmp(cmd, "errors")) {
    errors_cmd(emu, line, reply, cap);
  } else if (!strcmp(cmd, "ping")) {
    snprintf(reply, cap, "ok autd3-emu %u devices", (unsigned)emu->cfg.devices);
  } else if (!strcmp(cmd, "rx-clock")) {
    snprintf(reply, cap, "ok rx-clock kernel %llu read %llu", (unsigned long long)c->rx_clock.kernel,
             (unsigned long long)c->rx_clock.read);
  } else {
    snprintf(reply, cap, "err unknown command '%s' (status, unplug K, replug, power-cycle K, drop P, corrupt P, delay US, silence 1|0, mute K, unmute K, al K, log K, output K, errors K KIND [P] N, ping, rx-clock)", line);
  }
}

#define MAX_CLIENTS 8
typedef struct {
  int fd;
  size_t len;
  char buf[512];
} client_t;

#define TOOL "autd3-emu"
/* Every numeric option goes through the shared parser (tools/common/numopt.h):
 * whole argument, inside the option's range, or exit 2 with a message. */
static uint64_t opt_u(const char *opt, const char *s, uint64_t lo, uint64_t hi) {
  return autd3_numopt_u64_or_exit(TOOL, opt, s, lo, hi);
}

/* --fw-version A.B.C, each part 0..255. */
static autd3_fw_version_t parse_fw(const char *s) {
  char part[3][16];
  const char *p = s;
  for (int i = 0; i < 3; i++) {
    size_t n = 0;
    while (*p && *p != '.' && n < sizeof part[i] - 1) part[i][n++] = *p++;
    part[i][n] = 0;
    if ((i < 2 && *p != '.') || (i == 2 && *p)) {
      fprintf(stderr, TOOL ": --fw-version '%s': expected A.B.C, each 0..255\n", s);
      exit(2);
    }
    if (i < 2) p++;
  }
  uint8_t a = (uint8_t)opt_u("--fw-version", part[0], 0, 255), b = (uint8_t)opt_u("--fw-version", part[1], 0, 255),
          d = (uint8_t)opt_u("--fw-version", part[2], 0, 255);
  return (autd3_fw_version_t){a, b, d, a, b, d};
}

/* The command line. */
typedef struct args {
  autd3_emu_config_t cfg;
  const char *ifname, *control_path, *capture, *vendor, *name;
  int override_dev, verbose;
  long unplug;
  double drop, corrupt;
  bool silence;
  uint32_t delay_us;
} args_t;

/* Parse the command line into *a: -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, args_t *a) {
  *a = (args_t){.cfg = autd3_emu_config_default(), .unplug = -1};
  enum { O_FW = 256, O_TIMING, O_DRIFT, O_HOP, O_WIRE, O_NOSTRICT, O_DCREQ, O_DROP, O_CORRUPT, O_DELAY, O_SILENCE,
         O_UNPLUG, O_VENDOR, O_NAME, O_OVDEV, O_CONTROL, O_CAPTURE, O_SEED, O_PARENT, O_MAILBOX, O_WD, O_FIRMWARE };
  static const struct option opts[] = {
      {"interface", required_argument, 0, 'i'}, {"devices", required_argument, 0, 'n'},
      {"fw-version", required_argument, 0, O_FW}, {"timing", required_argument, 0, O_TIMING},
      {"firmware", required_argument, 0, O_FIRMWARE},
      {"drift-ppm", required_argument, 0, O_DRIFT}, {"hop-ns", required_argument, 0, O_HOP},
      {"wire", no_argument, 0, O_WIRE}, {"no-strict-op", no_argument, 0, O_NOSTRICT},
      {"dc-required", no_argument, 0, O_DCREQ}, {"drop", required_argument, 0, O_DROP},
      {"corrupt", required_argument, 0, O_CORRUPT}, {"delay-us", required_argument, 0, O_DELAY},
      {"silence", no_argument, 0, O_SILENCE}, {"unplug", required_argument, 0, O_UNPLUG},
      {"vendor", required_argument, 0, O_VENDOR}, {"name", required_argument, 0, O_NAME},
      {"override-device", required_argument, 0, O_OVDEV}, {"control", required_argument, 0, O_CONTROL},
      {"capture", required_argument, 0, O_CAPTURE}, {"seed", required_argument, 0, O_SEED}, {"exit-with-parent", no_argument, 0, O_PARENT}, {"mailbox", no_argument, 0, O_MAILBOX},
      {"sm-watchdog-ms", required_argument, 0, O_WD},
      {"verbose", no_argument, 0, 'v'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "i:n:vh", opts, NULL)) != -1) {
    switch (o) {
      case 'i': a->ifname = optarg; break;
      case 'n': a->cfg.devices = (uint16_t)opt_u("--devices", optarg, 1, AUTD3_EMU_MAX_DEVICES); break;
      case O_FW: a->cfg.version = parse_fw(optarg); break;
      case O_FIRMWARE: {
        autd3_emu_firmware_t fw;
        if (autd3_emu_firmware_parse(optarg, &fw) != AUTD3_OK) {
          fprintf(stderr, "autd3-emu: --firmware: %s\n", autd3_last_error());
          return 2;
        }
        a->cfg.firmware = fw;
        break;
      }
      case O_TIMING:
        if (autd3_timing_model_parse(optarg, &a->cfg.timing) != AUTD3_OK) {
          fprintf(stderr, "autd3-emu: --timing %s: %s\n", optarg, autd3_last_error());
          return 2;
        }
        break;
      case O_DRIFT: a->cfg.drift_ppm = autd3_numopt_f64_or_exit(TOOL, "--drift-ppm", optarg, 0, 1000); break;
      /* a real ESC forwards in well under 1 µs; 1 ms per hop is already absurd */
      case O_HOP: a->cfg.hop_ns = (uint32_t)opt_u("--hop-ns", optarg, 0, 1000000); break;
      case O_WIRE: a->cfg.wire = true; break;
      case O_NOSTRICT: a->cfg.strict_op = false; break;
      case O_MAILBOX: a->cfg.mailbox = true; break;
      /* 0x0420 is a u16 in 100 µs units (0x0400's default divider) */
      case O_WD: a->cfg.sm_watchdog_100us = (uint16_t)(opt_u("--sm-watchdog-ms", optarg, 0, 6553) * 10); break;
      case O_DCREQ: a->cfg.dc_required = true; break;
      case O_DROP: a->drop = autd3_numopt_f64_or_exit(TOOL, "--drop", optarg, 0, 1); break;
      case O_CORRUPT: a->corrupt = autd3_numopt_f64_or_exit(TOOL, "--corrupt", optarg, 0, 1); break;
      case O_DELAY: a->delay_us = (uint32_t)opt_u("--delay-us", optarg, 0, 10000000); break; /* as the control command */
      case O_SILENCE: a->silence = true; break;
      case O_UNPLUG: a->unplug = (long)opt_u("--unplug", optarg, 0, AUTD3_EMU_MAX_DEVICES); break;
      case O_VENDOR: a->vendor = optarg; break;
      case O_NAME:
        if (strlen(optarg) >= sizeof a->cfg.override_name) { /* an SII string holds what the master will compare */
          fprintf(stderr, TOOL ": --name '%s': at most %u characters\n", optarg, (unsigned)sizeof a->cfg.override_name - 1);
          return 2;
        }
        a->name = optarg;
        break;
      case O_OVDEV: a->override_dev = (int)opt_u("--override-device", optarg, 0, AUTD3_EMU_MAX_DEVICES - 1); break;
      case O_CONTROL: a->control_path = optarg; break;
      case O_CAPTURE: a->capture = optarg; break;
      case O_SEED: a->cfg.seed = opt_u("--seed", optarg, 0, UINT64_MAX); break;
      case O_PARENT:
        /* autd3-netns may be killed hard; an orphaned emulator would keep the namespace alive */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() == 1) return 1;
        break;
      case 'v': a->verbose++; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (!a->ifname || optind != argc) {
    usage(stderr);
    return 2;
  }
  if (a->vendor || a->name) {
    a->cfg.override_index = a->override_dev;
    a->cfg.override_vendor = a->vendor ? (uint32_t)opt_u("--vendor", a->vendor, 0, UINT32_MAX) : AUTD3_EMU_VENDOR;
    snprintf(a->cfg.override_name, sizeof a->cfg.override_name, "%s", a->name ? a->name : "AUTD");
  }
  return -1;
}

/* Answer the frames waiting on the interface (a bounded batch), logging AL status changes when verbose. */
static void serve_frames(ctx_t *c, autd3_nic_t *nic, uint16_t devices, int verbose, uint8_t *prev_state) {
  static uint8_t buf[AUTD3_NIC_MAX_FRAME + 64];
  autd3_emu_t *emu = c->emu;
    for (int k = 0; k < 64; k++) { /* bounded batch, then serve the rest */
      size_t len;
      send_due(nic);
      if (autd3__nic_recv(nic, buf, AUTD3_NIC_MAX_FRAME, &len, 0) != AUTD3_OK) break;
      /* The devices see the frame from when it reached the interface, not
       * from when this process got to read it (rx_clock.h). */
      uint64_t t = emu_rx_clock_arrival(&c->rx_clock, autd3__nic_rx_ns(nic));
      cap_write(buf, len);
      if (g_qlen == QLEN) { /* no room for the reply: lost before it reaches the devices */
        emu->dropped++;
        continue;
      }
      if (!autd3_emu_process(emu, buf, len, t)) continue;
      /* the wire model's ring time (emu->reply_ns; t without it), then "delay US" */
      uint64_t due = emu->reply_ns + (uint64_t)c->delay_us * 1000u;
      if (due <= autd3__now_ns() && g_qlen == 0) {
        cap_write(buf, len);
        if (autd3__nic_send(nic, buf, len) != AUTD3_OK && verbose) fprintf(stderr, "autd3-emu: %s\n", autd3_last_error());
      } else {
        pending_t *q = &g_q[(g_qhead + g_qlen) % QLEN];
        q->due = due;
        q->len = len;
        memcpy(q->buf, buf, len);
        g_qlen++;
      }
    }
    if (verbose) {
      for (uint16_t i = 0; i < devices; i++) {
        uint8_t st = emu->esc[i].mem[0x130];
        if (st != prev_state[i]) {
          fprintf(stderr, "autd3-emu: device %u AL status 0x%02x code 0x%04x\n", (unsigned)i, st,
                  (unsigned)(emu->esc[i].mem[0x134] | (emu->esc[i].mem[0x135] << 8)));
          prev_state[i] = st;
        }
      }
    }
}

/* The control socket: accept a client, read command lines, answer each (control()). */
static void serve_control(ctx_t *c, int lfd, const struct pollfd *p, int np, client_t *cl, const int *cidx) {
    if (p[1].revents & POLLIN) {
      int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) {
        int slot = -1;
        for (int i = 0; i < MAX_CLIENTS; i++)
          if (cl[i].fd < 0) { slot = i; break; }
        if (slot < 0) close(fd);
        else { cl[slot].fd = fd; cl[slot].len = 0; }
      }
    }
    for (int j = 2; j < np; j++) {
      if (!(p[j].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      client_t *k = &cl[cidx[j - 2]];
      ssize_t got = read(k->fd, k->buf + k->len, sizeof k->buf - 1 - k->len);
      if (got <= 0) {
        close(k->fd);
        k->fd = -1;
        continue;
      }
      k->len += (size_t)got;
      k->buf[k->len] = 0;
      char *nl;
      while ((nl = memchr(k->buf, '\n', k->len)) != NULL) {
        *nl = 0;
        static char reply[33000];
        control(c, k->buf, reply, sizeof reply - 2);
        size_t rl = strlen(reply);
        reply[rl++] = '\n';
        if (write(k->fd, reply, rl) < 0) { /* client gone; closed on next read */ }
        size_t used = (size_t)(nl - k->buf) + 1;
        memmove(k->buf, nl + 1, k->len - used);
        k->len -= used;
      }
      if (k->len >= sizeof k->buf - 1) { /* a line too long: drop it */
        k->len = 0;
      }
    }
}

int main(int argc, char **argv) {
  args_t a;
  int prc = parse_args(argc, argv, &a);
  if (prc >= 0) return prc;
  autd3_emu_config_t cfg = a.cfg;
  const char *ifname = a.ifname, *control_path = a.control_path, *capture = a.capture;
  int verbose = a.verbose;
  ctx_t c = {.delay_us = a.delay_us};
  autd3_emu_t *emu;
  if (autd3_emu_create(&cfg, autd3__now_ns(), &emu) != AUTD3_OK) {
    fprintf(stderr, "%s\n", autd3_last_error()); /* the message names autd3-emu */
    return 2;
  }
  c.emu = emu;
  /* replies are due at sub-microsecond model times: a 50 us default timer slack would add up to 50 us to each */
  if (cfg.wire) prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  emu->faults.drop = a.drop;
  emu->faults.corrupt = a.corrupt;
  emu->faults.silence = a.silence;
  if (a.unplug >= 0 && autd3_emu_unplug(emu, (uint16_t)a.unplug) != AUTD3_OK) {
    fprintf(stderr, "%s\n", autd3_last_error());
    autd3_emu_destroy(emu);
    return 2;
  }

  int rc = 0, lfd = -1;
  autd3_nic_t *nic = NULL;
  if (autd3__nic_open(ifname, AUTD3_NIC_AUTO, &nic) != AUTD3_OK) {
    fprintf(stderr, "autd3-emu: %s\n", autd3_last_error());
    rc = 1;
    goto out;
  }
  c.nic_fd = autd3__nic_fd(nic);
  emu_rx_clock_init(&c.rx_clock, c.nic_fd); /* before the master's first frame: it must carry a stamp */
  if (capture && autd3__capture_open(&g_cap, capture) != AUTD3_OK) {
    fprintf(stderr, "autd3-emu: --capture: %s\n", autd3_last_error());
    rc = 1;
    goto out;
  }

  if (control_path) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(control_path) >= sizeof sa.sun_path) {
      fprintf(stderr, "autd3-emu: --control path too long\n");
      rc = 2;
      goto out;
    }
    strcpy(sa.sun_path, control_path);
    unlink(control_path);
    lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 4) != 0) {
      fprintf(stderr, "autd3-emu: control socket %s: %s\n", control_path, strerror(errno));
      rc = 1;
      goto out;
    }
  }

  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  if (verbose)
    fprintf(stderr, "autd3-emu: %u devices on %s%s%s\n", (unsigned)cfg.devices, ifname,
            control_path ? ", control " : "", control_path ? control_path : "");
  client_t cl[MAX_CLIENTS];
  for (int i = 0; i < MAX_CLIENTS; i++) cl[i].fd = -1;
  uint8_t prev_state[AUTD3_EMU_MAX_DEVICES] = {0};
  uint64_t last_tick = 0;

  while (!g_stop) {
    struct pollfd p[2 + MAX_CLIENTS];
    int np = 0;
    p[np++] = (struct pollfd){.fd = autd3__nic_fd(nic), .events = POLLIN};
    if (lfd >= 0) p[np++] = (struct pollfd){.fd = lfd, .events = POLLIN};
    int cidx[MAX_CLIENTS];
    for (int i = 0; i < MAX_CLIENTS; i++)
      if (cl[i].fd >= 0) {
        cidx[np - (lfd >= 0 ? 2 : 1)] = i;
        p[np++] = (struct pollfd){.fd = cl[i].fd, .events = POLLIN};
      }
    uint64_t now = autd3__now_ns();
    uint64_t wait = 1000000; /* tick at least every 1 ms (watchdog, firmware events) */
    if (g_qlen) wait = g_q[g_qhead].due > now ? g_q[g_qhead].due - now : 0;
    struct timespec ts = {(time_t)(wait / 1000000000u), (long)(wait % 1000000000u)};
    int r = ppoll(p, (nfds_t)np, &ts, NULL);
    if (r < 0 && errno != EINTR) break;
    now = autd3__now_ns();
    /* frames */
    if (r > 0 && (p[0].revents & POLLIN)) serve_frames(&c, nic, cfg.devices, verbose, prev_state);
    send_due(nic);
    now = autd3__now_ns();
    if (now - last_tick >= 1000000 && tick_if_drained(emu, c.nic_fd)) last_tick = now;
    /* control socket */
    if (lfd >= 0 && r > 0) serve_control(&c, lfd, p, np, cl, cidx);
  }
  if (verbose) {
    static char st[32768];
    autd3_emu_status(emu, st, sizeof st);
    fprintf(stderr, "autd3-emu: stopping (frames timed by the kernel's receive stamp %llu, by the read %llu)\n%s",
            (unsigned long long)c.rx_clock.kernel, (unsigned long long)c.rx_clock.read, st);
  }
  for (int i = 0; i < MAX_CLIENTS; i++)
    if (cl[i].fd >= 0) close(cl[i].fd);
out:
  if (lfd >= 0) {
    close(lfd);
    unlink(control_path);
  }
  autd3__capture_close(&g_cap);
  if (nic) autd3__nic_close(nic);
  autd3_emu_destroy(emu);
  return rc;
}
