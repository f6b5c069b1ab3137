/*
 * autd3 doctor: what makes EtherCAT links fail on this host, one check at a
 * time, each pass / warn / fail / skip with the fix (docs/tools.md): raw
 * socket capabilities, the real-time priority limit, the interface (up,
 * another master, the IP stack chattering on it, interrupt coalescing, EEE,
 * flow control), the CPU frequency governor, the bus thread's timer slack,
 * the host's wake-up floor (tools/common/wake_measure.c, autd3-hostcheck's
 * measurement) and the packet-capture library. The exit code is the worst
 * result: 1 a failure, 3 warnings only, 0 otherwise. OS questions go
 * through doctor_os.h.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "cli.h"
#include "doctor_os.h"
#include "nic/master_guard.h"
#include "nic/nic.h"
#include "nic/pcap_api.h"
#include "platform/platform.h"
#include "platform/rt.h"
#include "wake_measure.h"

enum { PASS, WARN, FAIL, SKIP };
static const char *const st_name[] = {"pass", "warn", "fail", "skip"};

typedef struct doc {
  json_t j;
  bool json;
  int worst;
} doc_t;

typedef struct doc_opts {
  uint64_t wake_cycles, listen_ms;
} doc_opts_t;

void help_doctor(FILE *o) {
  fprintf(o, "usage: " TOOL " doctor [--interface IF] [--json] [--wake-cycles N]\n"
             "  Checks this host for what makes EtherCAT links fail and prints the fix for each:\n"
             "  capabilities (CAP_NET_RAW/CAP_NET_ADMIN), RLIMIT_RTPRIO, and with --interface: the\n"
             "  interface is up, no other master on it, its IP stack is quiet (IPv4 address, IPv6),\n"
             "  interrupt coalescing, EEE and flow control (ethtool); then the CPU frequency governor,\n"
             "  the bus thread's timer slack, the host's wake-up floor and the capture library.\n"
             "  --wake-cycles N   1 ms sleeps measured for the wake-up floor, 0..100000 (default 1000, 0 = skip)\n"
             "  --listen-ms MS    how long the ip-stack check listens for the host's own frames on the\n"
             "                    interface, 0..60000 (default 500, 0 = configuration only)\n"
             "  exit: 0 all passed (or skipped), 3 warnings, 1 a check failed\n");
}

static int own(void *ctx, int argc, char **argv, int i) {
  doc_opts_t *d = ctx;
  if (!strcmp(argv[i], "--wake-cycles")) {
    const char *v = cli_value("doctor", argc, argv, i);
    return v && cli_u64("doctor", argv[i], v, 0, 100000, &d->wake_cycles) ? 2 : -1;
  }
  if (!strcmp(argv[i], "--listen-ms")) {
    const char *v = cli_value("doctor", argc, argv, i);
    return v && cli_u64("doctor", argv[i], v, 0, 60000, &d->listen_ms) ? 2 : -1;
  }
  return 0;
}

static void report(doc_t *d, const char *name, int st, const char *detail, const char *fix) {
  if (st != SKIP && st > d->worst)
    d->worst = st;
  if (d->json) {
    json_obj(&d->j, NULL);
    json_str(&d->j, "check", name);
    json_str(&d->j, "status", st_name[st]);
    json_str(&d->j, "detail", detail);
    if (fix && fix[0])
      json_str(&d->j, "fix", fix);
    json_end_obj(&d->j);
  } else {
    static const char *const tag[] = {"PASS", "WARN", "FAIL", "skip"};
    printf("%s  %-15s %s\n", tag[st], name, detail);
    if (fix && fix[0] && st != PASS)
      printf("      %-15s fix: %s\n", "", fix);
  }
}

static void check_caps(doc_t *d) {
  bool raw = false, admin = false, nice = false, root = false;
  char self[1024] = TOOL, fix[1400];
  dos_self_path(self, sizeof self);
  snprintf(fix, sizeof fix,
           "run as root, or grant the program that opens the link (this tool: %s; for Python the interpreter "
           "itself): sudo setcap cap_net_raw,cap_net_admin+ep <program>",
           self);
  if (dos_caps(&raw, &admin, &nice, &root) != 1) {
    report(d, "capabilities", SKIP, "not readable here (Windows: Npcap needs no capability, see `pcap`)", "");
    return;
  }
  /* The effective capabilities decide, not the uid: root in a container or a user namespace may lack them. */
  if (raw && admin)
    report(d, "capabilities", PASS, root ? "CAP_NET_RAW and CAP_NET_ADMIN effective (uid 0)" : "CAP_NET_RAW and CAP_NET_ADMIN effective", "");
  else
    report(d, "capabilities", FAIL,
           raw ? "CAP_NET_ADMIN missing (promiscuous mode, AF_PACKET options)"
               : (admin ? "CAP_NET_RAW missing: raw sockets are refused" : "CAP_NET_RAW and CAP_NET_ADMIN missing: raw sockets are refused"),
           fix);
}

static void check_rtprio(doc_t *d) {
  bool raw, admin, nice = false, root = false;
  uint64_t soft = 0;
  int r = dos_rtprio(&soft);
  dos_caps(&raw, &admin, &nice, &root);
  char det[160];
  if (r != 1) {
    report(d, "rt-priority", SKIP, "RLIMIT_RTPRIO not readable here", "");
  } else if (nice || soft >= 99) { /* CAP_SYS_NICE, not the uid: root in a user namespace may lack it */
    snprintf(det, sizeof det, "SCHED_FIFO allowed (%s)", nice ? (root ? "CAP_SYS_NICE, uid 0" : "CAP_SYS_NICE") : "RLIMIT_RTPRIO unlimited");
    if (!nice && soft != UINT64_MAX)
      snprintf(det, sizeof det, "SCHED_FIFO up to priority %" PRIu64 " (RLIMIT_RTPRIO)", soft);
    report(d, "rt-priority", PASS, det, "");
  } else {
    snprintf(det, sizeof det,
             "RLIMIT_RTPRIO %" PRIu64 ": rt_priority above it is refused (PERMISSION), the bus thread runs SCHED_OTHER",
             soft);
    report(d, "rt-priority", WARN, det,
           "add `<user> - rtprio 99` to /etc/security/limits.conf (log in again), or `sudo setcap cap_sys_nice+ep <program>`");
  }
}

/* The IP stack on the EtherCAT interface: its configuration (an IPv4 address, IPv6 on) and, for `listen_ms`, the
 * frames this host actually sends there that are not EtherCAT (ARP, DHCP, mDNS, IPv6 router solicitations, MLD). */
static void check_ip_stack(doc_t *d, const char *ifname, uint64_t listen_ms) {
  char det[900], fix[400], kinds[128] = "", why[128] = "";
  int v4 = 0;
  bool v6 = false, autoconf = false, ra = false;
  int r4 = dos_if_ipv4(ifname, &v4), r6 = dos_if_ipv6(ifname, &v6, &autoconf, &ra);
  uint64_t sent = 0, got = 0;
  int rl = listen_ms ? dos_foreign_frames(ifname, (uint32_t)listen_ms, &sent, &got, kinds, sizeof kinds, why, sizeof why) : 0;
  if (r4 != 1 && r6 != 1 && rl != 1) {
    report(d, "ip-stack", SKIP, "not readable here", "");
    return;
  }
  size_t l = 0;
  det[0] = 0;
  if (v4 > 0 || v6)
    l += (size_t)snprintf(det, sizeof det, "%s%s%s%s", v4 > 0 ? "an IPv4 address" : "", v4 > 0 && v6 ? ", " : "",
                          v6 ? "IPv6 on" : "", v6 && (autoconf || ra) ? " (autoconf / router advertisements)" : "");
  if (rl == 1 && l < sizeof det)
    l += (size_t)snprintf(det + l, sizeof det - l, "%sin %" PRIu64 " ms this host sent %" PRIu64 " and received %" PRIu64
                                                    " frames that are not EtherCAT%s%s%s",
                          l ? "; " : "", listen_ms, sent, got, kinds[0] ? " (" : "", kinds, kinds[0] ? ")" : "");
  else if (listen_ms && l < sizeof det)
    l += (size_t)snprintf(det + l, sizeof det - l, "%snot listened (%s)", l ? "; " : "", why[0] ? why : "not here");
  if (v4 == 0 && !v6 && sent == 0) {
    if (l < sizeof det)
      snprintf(det + l, sizeof det - l, "%sno IPv4 address, IPv6 off: the IP stack stays quiet on this interface", l ? "; " : "");
    report(d, "ip-stack", PASS, det, "");
    return;
  }
  if (l < sizeof det)
    snprintf(det + l, sizeof det - l, ": the IP stack talks on the EtherCAT line (ARP, DHCP, mDNS, IPv6 router "
                                      "solicitations, MLD, DAD), frames the first device must forward");
  snprintf(fix, sizeof fix, "%s%s%s", v4 > 0 ? "sudo ip addr flush dev " : "", v4 > 0 ? ifname : "", v4 > 0 ? "; " : "");
  size_t f = strlen(fix);
  snprintf(fix + f, sizeof fix - f, "sudo sysctl -w net.ipv6.conf.%s.disable_ipv6=1 (and tell NetworkManager to leave it: "
                                    "nmcli device set %s managed no)",
           ifname, ifname);
  report(d, "ip-stack", WARN, det, fix);
}

static void check_interface(doc_t *d, const char *ifname, uint64_t listen_ms) {
  char det[700], fix[400];
  bool up = false, carrier = false;
  int r = dos_if_up(ifname, &up, &carrier);
  if (r == 1 && !up) {
    snprintf(det, sizeof det, "%s is down", ifname);
    snprintf(fix, sizeof fix, "sudo ip link set %s up", ifname);
    report(d, "interface", FAIL, det, fix);
  } else if (r == 1) {
    snprintf(det, sizeof det, "%s is up, %s", ifname, carrier ? "carrier" : "no carrier (cable, or the first device is off)");
    report(d, "interface", carrier ? PASS : WARN, det, carrier ? "" : "check the cable and the first device's power");
  } else {
    char *os = NULL;
    autd3_err_t e = autd3__nic_resolve(ifname, &os);
    free(os);
    snprintf(det, sizeof det, "%s", e == AUTD3_OK ? "the adapter exists (state not readable here)" : autd3_last_error());
    report(d, "interface", e == AUTD3_OK ? PASS : FAIL, det, e == AUTD3_OK ? "" : "`" TOOL " adapters` lists the names");
  }
  autd3_master_guard_t *g = NULL;
  autd3_err_t e = autd3__master_guard_take(ifname, AUTD3_NIC_AUTO, TOOL, &g);
  autd3__master_guard_release(g);
  if (e == AUTD3_OK)
    report(d, "second-master", PASS, "no other master holds the interface or sent EtherCAT frames in 20 ms", "");
  else if (e == AUTD3_E_SECOND_MASTER)
    report(d, "second-master", FAIL, autd3_last_error(), "stop the other master (the message names its pid or MAC)");
  else {
    snprintf(det, sizeof det, "not checked: %s", autd3_last_error());
    report(d, "second-master", e == AUTD3_E_PERMISSION ? SKIP : FAIL, det, "");
  }
  check_ip_stack(d, ifname, listen_ms);
  char why[128] = "";
  uint32_t us = 0, frames = 0;
  r = dos_coalesce(ifname, &us, &frames, why, sizeof why);
  if (r != 1) {
    snprintf(det, sizeof det, "not readable (%s)", why[0] ? why : "not here");
    report(d, "coalescing", SKIP, det, "");
  } else {
    snprintf(det, sizeof det, "rx-usecs %" PRIu32 ", rx-frames %" PRIu32 "%s", us, frames,
             us > 0 ? ": each reply waits up to rx-usecs in the NIC before the host sees it" : "");
    snprintf(fix, sizeof fix, "sudo ethtool -C %s rx-usecs 0 rx-frames 1", ifname);
    report(d, "coalescing", us > 0 ? WARN : PASS, det, fix);
  }
  bool eee = false;
  r = dos_eee(ifname, &eee, why, sizeof why);
  if (r != 1) {
    snprintf(det, sizeof det, "not readable (%s)", why[0] ? why : "not here");
    report(d, "eee", SKIP, det, "");
  } else {
    snprintf(fix, sizeof fix, "sudo ethtool --set-eee %s eee off", ifname);
    report(d, "eee", eee ? WARN : PASS,
           eee ? "Energy-Efficient Ethernet active: the link sleeps between frames and wakes late" : "EEE off", fix);
  }
  bool prx = false, ptx = false;
  r = dos_pause(ifname, &prx, &ptx, why, sizeof why);
  if (r != 1) {
    snprintf(det, sizeof det, "not readable (%s)", why[0] ? why : "not here");
    report(d, "flow-control", SKIP, det, "");
  } else {
    snprintf(det, sizeof det, "pause frames rx %s, tx %s%s", prx ? "on" : "off", ptx ? "on" : "off",
             prx || ptx ? ": the NIC may hold frames back on a pause request" : "");
    snprintf(fix, sizeof fix, "sudo ethtool -A %s autoneg off rx off tx off", ifname);
    report(d, "flow-control", prx || ptx ? WARN : PASS, det, fix);
  }
}

#ifdef _WIN32
/* Npcap on Windows: wpcap.dll loads, and from where. libautd3 loads Npcap's own System32\Npcap\wpcap.dll
 * first; SOEM, pysoem and the reference SDK's SOEM link load plain wpcap.dll, which Npcap puts in System32 only
 * in its "WinPcap API-compatible Mode" (without it they fail to start, 0xc0000135). */
static void check_npcap(doc_t *d, bool loads) {
  bool own = false, compat = false;
  char sys[260] = "System32", det[700];
  const char *fix = "(re)install Npcap (https://npcap.com) with \"Install Npcap in WinPcap API-compatible Mode\" checked";
  int r = dos_npcap_files(&own, &compat, sys, sizeof sys);
  if (!loads) {
    snprintf(det, sizeof det, "%s%s", autd3_last_error(),
             r == 1 && (own || compat) ? " (a wpcap.dll is installed but does not load)" : "");
    report(d, "pcap", FAIL, det, fix);
  } else if (r == 1 && compat) {
    snprintf(det, sizeof det, "wpcap.dll loads; WinPcap API-compatible mode (%s\\wpcap.dll present%s)", sys,
             own ? ", and Npcap's own in Npcap\\" : "");
    report(d, "pcap", PASS, det, "");
  } else if (r == 1 && own) {
    snprintf(det, sizeof det,
             "Npcap without its WinPcap API-compatible mode (%s\\Npcap\\wpcap.dll only): libautd3 finds it, programs "
             "that load plain wpcap.dll (SOEM, pysoem, the reference SDK's SOEM link) fail to start (0xc0000135)",
             sys);
    report(d, "pcap", WARN, det, fix);
  } else {
    report(d, "pcap", PASS, "wpcap.dll loads from the program's directory or PATH (not an Npcap installation)", "");
  }
}
#endif

static void *slack_thread(void *arg) {
  uint64_t *out = arg;
  if (autd3__bus_thread_policy(0, -1) != AUTD3_OK || dos_timer_slack(out) != 1)
    *out = UINT64_MAX;
  return NULL;
}

static void check_host(doc_t *d, uint64_t wake_cycles) {
  char det[400], gov[256];
  if (dos_governors(gov, sizeof gov) != 1)
    report(d, "cpu-governor", SKIP, "no cpufreq here (a VM, or fixed frequency)", "");
  else {
    bool perf = !strcmp(gov, "performance");
    snprintf(det, sizeof det, "scaling governor %s%s", gov, perf ? "" : ": the CPU clocks down between cycles and wakes slowly");
    report(d, "cpu-governor", perf ? PASS : WARN, det, "sudo cpupower frequency-set -g performance");
  }
  uint64_t proc_slack = 0, bus_slack = UINT64_MAX;
  autd3__thread_t th;
  if (dos_timer_slack(&proc_slack) != 1 || autd3__thread_start(&th, slack_thread, &bus_slack, "autd3-slack") != AUTD3_OK) {
    report(d, "timer-slack", SKIP, "not readable here", "");
  } else {
    autd3__thread_join(&th);
    snprintf(det, sizeof det, "process default %" PRIu64 " ns; a bus thread gets %s", proc_slack,
             bus_slack == 1 ? "1 ns (libautd3 sets it, platform/rt.h)" : "no 1 ns slack (refused)");
    report(d, "timer-slack", bus_slack == 1 ? PASS : WARN, det,
           "a bus thread's sleeps end up to the slack late: run the link's cycle on a thread libautd3 starts");
  }
  if (wake_cycles == 0) {
    report(d, "wake-up-floor", SKIP, "--wake-cycles 0", "");
  } else {
    static wake_run_t r;
    memset(&r, 0, sizeof r);
    r.cycle_ns = 1000000u, r.count = wake_cycles, r.rt_core = -1;
    if (!wake_measure(&r) || r.policy_err != AUTD3_OK) {
      report(d, "wake-up-floor", SKIP, "the measuring thread did not run", "");
    } else {
      double p50 = wake_pct_us(&r, 0.5), p99 = wake_pct_us(&r, 0.99);
      bool bad = p99 > 500.0 || r.over[3] * 100u > r.count;
      snprintf(det, sizeof det,
               "1 ms sleeps x %" PRIu64 ": late p50 %.0f us, p99 %.0f us, max %.1f us, %" PRIu64
               " later than a cycle; cpu %.2f %% (autd3-hostcheck measures longer)",
               r.count, p50, p99, (double)r.max_ns / 1e3, r.over[3],
               r.wall_ns ? 100.0 * (double)r.cpu_ns / (double)r.wall_ns : 0.0);
      report(d, "wake-up-floor", bad ? WARN : PASS, det,
             "a loaded or virtual host: give the bus thread a CPU (rt_cpu) and SCHED_FIFO (rt_priority), or a longer cycle");
    }
  }
  const autd3__pcap_api_t *api = NULL;
  autd3_err_t e = autd3__pcap_api(&api);
#ifdef _WIN32
  check_npcap(d, e == AUTD3_OK);
#elif defined(__linux__)
  report(d, "pcap", e == AUTD3_OK ? PASS : SKIP,
         e == AUTD3_OK ? "libpcap available (backend pcap)" : "no libpcap: not needed, the links use AF_PACKET here", "");
#else /* macOS: libpcap is echocat's only way to the adapter */
  report(d, "pcap", e == AUTD3_OK ? PASS : FAIL, e == AUTD3_OK ? "libpcap loads (backend pcap)" : autd3_last_error(),
         "macOS ships libpcap in /usr/lib");
#endif
}

int cmd_doctor(int argc, char **argv) {
  cli_opts_t o;
  doc_opts_t dop = {1000, 500};
  if (!cli_parse("doctor", argc, argv, &o, own, &dop))
    return EXIT_USAGE;
  if (o.help) {
    help_doctor(stdout);
    return EXIT_OK;
  }
  if (o.capture) {
    fprintf(stderr, TOOL " doctor: takes no --capture\n");
    return EXIT_USAGE;
  }
  doc_t d;
  memset(&d, 0, sizeof d);
  d.json = o.json;
  if (d.json) {
    json_begin(&d.j, stdout);
    json_obj(&d.j, NULL);
    if (o.interface)
      json_str(&d.j, "interface", o.interface);
    else
      json_null(&d.j, "interface");
    json_arr(&d.j, "checks");
  }
  check_caps(&d);
  check_rtprio(&d);
  if (o.interface)
    check_interface(&d, o.interface, dop.listen_ms);
  else if (!d.json)
    printf("skip  %-15s no --interface: the interface checks do not run\n", "interface");
  check_host(&d, dop.wake_cycles);
  const char *res = d.worst == FAIL ? "fail" : d.worst == WARN ? "warn" : "pass";
  if (d.json) {
    json_end_arr(&d.j);
    json_str(&d.j, "result", res);
    json_end_obj(&d.j);
    json_finish(&d.j);
  } else {
    printf("result: %s\n", res);
  }
  return d.worst == FAIL ? EXIT_FAIL : d.worst == WARN ? EXIT_WARN : EXIT_OK;
}
