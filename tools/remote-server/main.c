/*
 * autd3-remote-server: serves any libautd3 link to one Remote-link client at a
 * time over TCP (ARMT v7 and v3; see docs/remote.md and include/autd3/remote_server.h).
 * The link flags are the same as autd3-perftest's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/remote_server.h"
#include "link_flags.h"
#include "numopt.h"
#include "tool_os.h"

static autd3_remote_server_t *g_server;

static void on_signal(int sig) {
  (void)sig;
  autd3_remote_server_stop(g_server); /* async-signal-safe: one write() to a pipe */
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: autd3-remote-server [options]\n"
          "\n"
          "Serve a libautd3 link to one Remote-link client at a time, over the ARMT protocol in both\n"
          "published versions, each client answered in its own: v7 (autd3-rs-link-remote 0.5-0.9 /\n"
          "PyPI autd3-link-remote 0.8-0.9, and libautd3's Remote link by default) and v3\n"
          "(autd3-rs-link-remote 0.1-0.4 / PyPI autd3-link-remote 0.2). Logs to stderr, with each\n"
          "session's per-stage timings and CPU per bus cycle at its end; SIGINT / SIGTERM stop it cleanly.\n"
          "An appliance runs it as a service with --listen 0.0.0.0:PORT --advertise and the link flags\n"
          "(docs/remote.md \"The appliance\": a systemd unit with capabilities instead of root).\n"
          "\n"
          "  --listen ADDR          host:port or [v6]:port to listen on (default 127.0.0.1:8080;\n"
          "                         use 0.0.0.0:8080 to accept other machines; port 0 = any)\n"
          "  --advertise            announce the server by mDNS / DNS-SD (_autd3._tcp.local., TXT wire, sdk) so\n"
          "                         clients find it (autd3-perftest --address auto); off by default\n"
          "  --advertise-instance NAME  the instance name to announce (default autd3-HOSTNAME-PORT)\n"
          "  --devices N            open the link now with N devices and keep it cycling between\n"
          "                         clients; clients must send N devices. Default: open the link\n"
          "                         when a client connects, with its geometry's device count\n"
          "  --handshake-timeout-ms MS  hello + geometry must arrive within MS (default 10000)\n"
          "  --stall-timeout-ms MS  a started request must complete within MS (default 5000)\n"
          "  --idle-timeout-ms MS   a session that sent nothing for MS yields to the next client that\n"
          "                         completes a handshake (default 10000)\n"
          "  --max-connections N    connections at once, the session plus handshakes; more are refused\n"
          "                         at once (default 8, 2..256)\n"
          "  --log-lines-per-s N    log rate limit, bursts of 10 s worth (default 10; 0 = no limit)\n"
          "  --pickup-percent P     links without wait_next_cycle (SOEM): with no request pending, wait up\n"
          "                         to P%% of a cycle after the last one for one (taken at once when it\n"
          "                         comes) before the next cycle (default 50; 0 = never wait). The other\n"
          "                         links say themselves how late a request may come\n"
          "  --min-period-us US     shortest bus cycle for links that do not pace themselves (default 250)\n"
          "  --rt-priority P        the bus thread's SCHED_FIFO priority, 1..99 (default: none). Needs\n"
          "                         CAP_SYS_NICE (or an RLIMIT_RTPRIO); refused = the link does not open\n"
          "  --rt-cpu CPU           pin the bus thread to CPU (default: none)\n"
          "link options (as autd3-perftest):\n"
          "  --link KIND            emulator (default), echocat, soem, ethercrab, twincat, remote\n"
          "  --cycle-us US          bus cycle: emulator cycle, EtherCAT SYNC0 period, TwinCAT task cycle (default 1000)\n"
          "  --shift-us US          EtherCAT SYNC0 shift (default 0)\n"
          "  --interface NAME       EtherCAT links: adapter (default auto)\n"
          "  --capture FILE.pcap    EtherCAT links: every bus frame, both directions (the file is\n"
          "                         rewritten each time the server opens the link)\n"
          "  --timing MODEL         emulator: default, pessimistic, ideal or take=..,fifo=..,ll=..,publish=..\n"
          "  --address HOST:PORT    remote: the next server (chaining)\n"
          "  --twincat-server IP    twincat: remote TwinCAT host (default: local router)\n"
          "  --twincat-port PORT    twincat: ADS TCP port (default 48898)\n"
          "  --ams-net-id ID        twincat: AMS Net ID of the runtime\n"
          "  --client-ams-net-id ID twincat: our AMS Net ID\n");
}

static void die(const char *fmt, const char *arg) {
  fprintf(stderr, "autd3-remote-server: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  exit(2);
}

/* Numeric options: the tools' shared parser (tools/common/numopt.h). */
static long long num(const char *opt, const char *s, long long lo, long long hi) {
  return (long long)autd3_numopt_i64_or_exit("autd3-remote-server", opt, s, lo, hi);
}

enum { O_LISTEN = 256, O_DEVICES, O_HS, O_STALL, O_IDLE, O_MAXC, O_LOGR, O_PICKUP, O_MINP, O_LINK, O_CYCLE, O_SHIFT, O_IFACE, O_TIMING, O_ADDR, O_TCS, O_TCP, O_AMS, O_CAMS, O_ADV, O_ADVI, O_CAPTURE, O_RTP, O_RTC, O_HELP };

int main(int argc, char **argv) {
  autd3_remote_server_option_t so = autd3_remote_server_option_default();
  const char *link = "emulator", *iface = NULL, *timing = NULL, *addr = NULL, *tcs = NULL, *ams = NULL, *cams = NULL, *capture = NULL;
  long long cycle_us = 1000, shift_us = 0, tcp = -1;
  int shift_set = 0;
  static const struct option opts[] = {
      {"listen", 1, 0, O_LISTEN}, {"devices", 1, 0, O_DEVICES}, {"handshake-timeout-ms", 1, 0, O_HS},
      {"stall-timeout-ms", 1, 0, O_STALL}, {"idle-timeout-ms", 1, 0, O_IDLE}, {"max-connections", 1, 0, O_MAXC},
      {"log-lines-per-s", 1, 0, O_LOGR}, {"pickup-percent", 1, 0, O_PICKUP}, {"min-period-us", 1, 0, O_MINP},
      {"link", 1, 0, O_LINK}, {"cycle-us", 1, 0, O_CYCLE}, {"shift-us", 1, 0, O_SHIFT}, {"interface", 1, 0, O_IFACE},
      {"timing", 1, 0, O_TIMING}, {"address", 1, 0, O_ADDR}, {"twincat-server", 1, 0, O_TCS}, {"twincat-port", 1, 0, O_TCP},
      {"ams-net-id", 1, 0, O_AMS}, {"client-ams-net-id", 1, 0, O_CAMS}, {"advertise", 0, 0, O_ADV},
      {"advertise-instance", 1, 0, O_ADVI}, {"capture", 1, 0, O_CAPTURE}, {"rt-priority", 1, 0, O_RTP},
      {"rt-cpu", 1, 0, O_RTC}, {"help", 0, 0, O_HELP}, {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
      case O_LISTEN: so.listen = optarg; break;
      case O_ADV: so.advertise = 1; break;
      case O_ADVI: so.advertise_instance = optarg; break;
      case O_DEVICES: so.devices = (uint16_t)num("--devices", optarg, 1, AUTD3_MAX_DEVICES); break;
      case O_HS: so.handshake_timeout_ms = (uint32_t)num("--handshake-timeout-ms", optarg, 1, 3600000); break;
      case O_STALL: so.stall_timeout_ms = (uint32_t)num("--stall-timeout-ms", optarg, 1, 3600000); break;
      case O_IDLE: so.idle_timeout_ms = (uint32_t)num("--idle-timeout-ms", optarg, 1, 3600000); break;
      case O_MAXC: so.max_connections = (uint32_t)num("--max-connections", optarg, 2, AUTD3_REMOTE_SERVER_MAX_CONNECTIONS); break;
      case O_LOGR: so.log_lines_per_s = (uint32_t)num("--log-lines-per-s", optarg, 0, 100000); break;
      case O_PICKUP: so.pickup_percent = (uint32_t)num("--pickup-percent", optarg, 0, 90); break;
      case O_RTP: so.rt_priority = (int)num("--rt-priority", optarg, 1, 99); break;
      case O_RTC: so.rt_cpu = (int)num("--rt-cpu", optarg, 0, 4095); break;
      case O_MINP: so.min_period_us = (uint32_t)num("--min-period-us", optarg, 0, 1000000); break;
      case O_LINK: link = optarg; break;
      case O_CYCLE: cycle_us = num("--cycle-us", optarg, 1, 4000000); break;
      case O_SHIFT: shift_us = num("--shift-us", optarg, -4000000, 4000000); shift_set = 1; break;
      case O_IFACE: iface = optarg; break;
      case O_TIMING: timing = optarg; break;
      case O_ADDR: addr = optarg; break;
      case O_TCS: tcs = optarg; break;
      case O_TCP: tcp = num("--twincat-port", optarg, 1, 65535); break;
      case O_AMS: ams = optarg; break;
      case O_CAMS: cams = optarg; break;
      case O_CAPTURE: capture = optarg; break;
      case 'h':
      case O_HELP: usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (optind < argc) die("unexpected argument \"%s\"", argv[optind]);

  autd3_link_kind_t kind;
  if (autd3_link_kind_parse(link, &kind) != AUTD3_OK) die("--link: %s", autd3_last_error());
  /* The same per-link flags as autd3-perftest, built by the same code (tools/common/link_flags.c). */
  const autd3_tool_link_flags_t f = {
      .link = link, .cycle_us = (uint32_t)cycle_us, .shift_us = (int32_t)shift_us, .shift_set = shift_set != 0,
      .interface = iface, .timing = timing, .address = addr, .twincat_server = tcs, .ams_net_id = ams,
      .client_ams_net_id = cams, .twincat_port = (int)tcp, .capture = capture};
  autd3_link_option_t lo;
  char lerr[256];
  if (!autd3_tool_link_option(&f, &lo, lerr, sizeof lerr)) die("%s", lerr);
  so.link = lo;
  if (!autd3_link_kind_available(kind)) { /* fail now rather than refuse every client */
    fprintf(stderr, "autd3-remote-server: the %s link is not built into this server%s\n", link,
            kind == AUTD3_LINK_SOEM ? " (configure with -DAUTD3_LINK_SOEM=ON -DAUTD3_REMOTE_SERVER_WITH_SOEM=ON; GPL-3.0-only)"
            : kind == AUTD3_LINK_ETHERCRAB ? " (configure with -DAUTD3_LINK_ETHERCRAB=ON; needs cargo)"
                                           : "");
    return 2;
  }

  autd3_err_t err = autd3_remote_server_create(&so, &g_server);
  if (err != AUTD3_OK) {
    fprintf(stderr, "autd3-remote-server: %s: %s\n", autd3_err_name(err), autd3_last_error());
    return 1;
  }
  tool_on_stop_signals(on_signal);
  const char *host_end = strrchr(so.listen, ':');
  fprintf(stderr, "autd3-remote-server: listening on %.*s:%u (ARMT v7 and v3), link %s%s\n",
          host_end ? (int)(host_end - so.listen) : (int)strlen(so.listen), so.listen, autd3_remote_server_port(g_server), link,
          so.devices ? "" : " (opened per client)");
  err = autd3_remote_server_run(g_server);
  autd3_remote_server_stats_t st;
  autd3_remote_server_stats(g_server, &st);
  autd3_remote_server_destroy(g_server);
  fprintf(stderr, "autd3-remote-server: stopped (%" PRIu64 " client(s), %" PRIu64 " refused, %" PRIu64 " frame(s), %" PRIu64 " dropped)\n",
          st.clients, st.refused, st.requests, st.dropped);
  if (st.bus_cycles)
    fprintf(stderr, "autd3-remote-server: CPU per bus cycle over the run: bus thread %.2f us, network thread %.2f us (%" PRIu64 " cycles)\n",
            (double)st.bus_cpu_ns / 1000.0 / (double)st.bus_cycles, (double)st.net_cpu_ns / 1000.0 / (double)st.bus_cycles,
            st.bus_cycles);
  if (err != AUTD3_OK) {
    fprintf(stderr, "autd3-remote-server: %s: %s\n", autd3_err_name(err), autd3_last_error());
    return 1;
  }
  return 0;
}
