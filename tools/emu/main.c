/*
 * autd3-emu: a chain of emulated AUTD3 EtherCAT devices served on a network
 * interface, for unmodified EtherCAT masters (docs/emulator.md).
 *
 *   autd3-emu --interface veth1 --devices 2 [--control /tmp/emu.sock] ...
 *
 * Only the command line is parsed here; the serving loop, the control socket
 * and its commands are the library's (src/emulation/ethercat/server.h).
 * Clean shutdown on SIGINT/SIGTERM.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/error.h"
#include "emulation/ethercat/server.h"
#include "numopt.h"
#include "tool_os.h"

static autd3_emu_server_t *g_server;
static void on_signal(int sig) {
  (void)sig;
  if (g_server) autd3_emu_server_stop(g_server); /* one write to a pipe: async-signal-safe */
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
  autd3_emu_server_config_t s; /* what the library serves */
  const char *vendor, *name;
  int override_dev;
} args_t;

/* Parse the command line into *a: -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, args_t *a) {
  *a = (args_t){.s = autd3_emu_server_config_default()};
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
      case 'i': a->s.ifname = optarg; break;
      case 'n': a->s.chain.devices = (uint16_t)opt_u("--devices", optarg, 1, AUTD3_EMU_MAX_DEVICES); break;
      case O_FW: a->s.chain.version = parse_fw(optarg); break;
      case O_FIRMWARE: {
        autd3_emu_firmware_t fw;
        if (autd3_emu_firmware_parse(optarg, &fw) != AUTD3_OK) {
          fprintf(stderr, "autd3-emu: --firmware: %s\n", autd3_last_error());
          return 2;
        }
        a->s.chain.firmware = fw;
        break;
      }
      case O_TIMING:
        if (autd3_timing_model_parse(optarg, &a->s.chain.timing) != AUTD3_OK) {
          fprintf(stderr, "autd3-emu: --timing %s: %s\n", optarg, autd3_last_error());
          return 2;
        }
        break;
      case O_DRIFT: a->s.chain.drift_ppm = autd3_numopt_f64_or_exit(TOOL, "--drift-ppm", optarg, 0, 1000); break;
      /* a real ESC forwards in well under 1 µs; 1 ms per hop is already absurd */
      case O_HOP: a->s.chain.hop_ns = (uint32_t)opt_u("--hop-ns", optarg, 0, 1000000); break;
      case O_WIRE: a->s.chain.wire = true; break;
      case O_NOSTRICT: a->s.chain.strict_op = false; break;
      case O_MAILBOX: a->s.chain.mailbox = true; break;
      /* 0x0420 is a u16 in 100 µs units (0x0400's default divider) */
      case O_WD: a->s.chain.sm_watchdog_100us = (uint16_t)(opt_u("--sm-watchdog-ms", optarg, 0, 6553) * 10); break;
      case O_DCREQ: a->s.chain.dc_required = true; break;
      case O_DROP: a->s.drop = autd3_numopt_f64_or_exit(TOOL, "--drop", optarg, 0, 1); break;
      case O_CORRUPT: a->s.corrupt = autd3_numopt_f64_or_exit(TOOL, "--corrupt", optarg, 0, 1); break;
      case O_DELAY: a->s.delay_us = (uint32_t)opt_u("--delay-us", optarg, 0, 10000000); break; /* as the control command */
      case O_SILENCE: a->s.silence = true; break;
      case O_UNPLUG: a->s.unplug = (int)opt_u("--unplug", optarg, 0, AUTD3_EMU_MAX_DEVICES); break;
      case O_VENDOR: a->vendor = optarg; break;
      case O_NAME:
        if (strlen(optarg) >= sizeof a->s.chain.override_name) { /* an SII string holds what the master will compare */
          fprintf(stderr, TOOL ": --name '%s': at most %u characters\n", optarg, (unsigned)sizeof a->s.chain.override_name - 1);
          return 2;
        }
        a->name = optarg;
        break;
      case O_OVDEV: a->override_dev = (int)opt_u("--override-device", optarg, 0, AUTD3_EMU_MAX_DEVICES - 1); break;
      case O_CONTROL: a->s.control_path = optarg; break;
      case O_CAPTURE: a->s.capture_path = optarg; break;
      case O_SEED: a->s.chain.seed = opt_u("--seed", optarg, 0, UINT64_MAX); break;
      case O_PARENT:
        /* autd3-netns may be killed hard; an orphaned emulator would keep the namespace alive */
        if (!tool_exit_with_parent()) return 1;
        break;
      case 'v': a->s.verbose++; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (!a->s.ifname || optind != argc) {
    usage(stderr);
    return 2;
  }
  if (a->vendor || a->name) {
    a->s.chain.override_index = a->override_dev;
    a->s.chain.override_vendor = a->vendor ? (uint32_t)opt_u("--vendor", a->vendor, 0, UINT32_MAX) : AUTD3_EMU_VENDOR;
    snprintf(a->s.chain.override_name, sizeof a->s.chain.override_name, "%s", a->name ? a->name : "AUTD");
  }
  return -1;
}

int main(int argc, char **argv) {
  args_t a;
  int prc = parse_args(argc, argv, &a);
  if (prc >= 0) return prc;
  autd3_emu_server_t *s;
  if (autd3_emu_server_create(&a.s, &s) != AUTD3_OK) {
    fprintf(stderr, "%s\n", autd3_last_error()); /* the message names autd3-emu */
    return 2;
  }
  autd3_err_t err = autd3_emu_server_attach(s);
  if (err != AUTD3_OK) {
    fprintf(stderr, "autd3-emu: %s\n", autd3_last_error());
    autd3_emu_server_free(s);
    return err == AUTD3_E_INVALID_OPTION ? 2 : 1;
  }
  g_server = s;
  tool_on_stop_signals(on_signal);
  err = autd3_emu_server_run(s);
  if (err != AUTD3_OK) fprintf(stderr, "autd3-emu: %s\n", autd3_last_error());
  g_server = NULL;
  autd3_emu_server_free(s);
  return err == AUTD3_OK ? 0 : 1;
}
