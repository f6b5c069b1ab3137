/*
 * The `autd3` command's chain subcommands, adapters and doctor (tools/autd3, docs/tools.md; watch and
 * synctune: test_autd3_live.c) against an emulated chain
 * whose faults are known: autd3-emu on a veth pair in a private network
 * namespace (tests/harness/emu_chain.h), ESC error counters injected over its
 * control socket (docs/emulator.md "Error counters"). Each case checks the
 * fault or state first (the emulator's own read-back), then what the tool
 * reports, and the exit codes of docs/tools.md. No timing is asserted.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_harness.h"
#include "emulation/ethercat/emu.h"
#include "harness/emu_chain.h"
#include "harness/netns.h"
#include "harness/emuctl.h"
#include "harness/foreign_master.h"
#include "harness/test.h"
#include "nic/master_guard.h"

TEST(help_and_usage_exit_codes) {
  ASSERT_EQ(run("help"), 0);
  static const char *subs[] = {"adapters", "scan", "sii", "reg", "doctor", "watch", "synctune"};
  for (int i = 0; i < 7; i++) {
    ASSERT_CONTAINS(g_out, subs[i]);
  }
  for (int i = 0; i < 7; i++) {
    char a[64];
    snprintf(a, sizeof a, "%s --help", subs[i]);
    ASSERT_EQ(run(a), 0);
    ASSERT_CONTAINS(g_out, "usage: autd3 ");
    snprintf(a, sizeof a, "help %s", subs[i]);
    ASSERT_EQ(run(a), 0);
    ASSERT_CONTAINS(g_out, "usage: autd3 ");
  }
  ASSERT_EQ(run("no-such-subcommand 2>/dev/null"), 2);
  ASSERT_EQ(run("2>/dev/null"), 2);
  ASSERT_EQ(run("scan 2>/dev/null"), 2);                     /* --interface missing */
  ASSERT_EQ(run("scan --interface 2>/dev/null"), 2);         /* value missing */
  ASSERT_EQ(run("sii --interface x 2>/dev/null"), 2);        /* --position missing */
  ASSERT_EQ(run("sii --interface x --position 200 2>/dev/null"), 2);
  ASSERT_EQ(run("reg read --interface x 0x130 2>/dev/null"), 2);            /* no address mode */
  ASSERT_EQ(run("reg write --interface x --position 0 0x10 1 2>/dev/null"), 2); /* no --yes-write */
  ASSERT_EQ(run("reg write --interface x --position 0 0x10 0x10000 --yes-write 2>/dev/null"), 2); /* too wide */
  ASSERT_EQ(run("doctor --wake-cycles -1 2>/dev/null"), 2);
}

TEST(scan_without_device_or_interface) {
  autd3_test_in_emu_chain("scan_without_device_or_interface", 1, NULL, true);
  ASSERT_EQ(run("scan --interface @IF@ 2>/dev/null"), 6); /* nothing answers on the veth */
  ASSERT_EQ(run("scan --interface no-such-if0 2>/dev/null"), 5);
}

TEST(scan_shows_injected_counters_and_resets_them) {
  autd3_test_in_emu_chain("scan_shows_injected_counters_and_resets_them", 3, "", false);
  char r[4096];
  ctl("errors 1 crc 0 5", r, sizeof r);
  ctl("errors 2 lost-link 1 2", r, sizeof r);
  ctl("errors 0 pu 3", r, sizeof r);
  ctl("errors 0 pdi 4", r, sizeof r);
  ctl("errors 0 phy 1 9", r, sizeof r);
  ctl("errors 1", r, sizeof r);
  ASSERT_CONTAINS(r, "ok errors 1 05"); /* the fault is in the chain: device 1's 0x0300 = 5 */
  ASSERT_EQ(run("scan --interface @IF@ --json"), 0);
  ASSERT_EQ(jfield(g_out, 0, -1, "count") , -1); /* (count is outside the devices) */
  ASSERT_CONTAINS(g_out, "\"count\":3");
  for (int k = 0; k < 3; k++) {
    ASSERT_EQ(jfield(g_out, k, -1, "vendor"), AUTD3_EMU_VENDOR);
    ASSERT_EQ(jfield(g_out, k, -1, "product"), AUTD3_EMU_PRODUCT);
    ASSERT_EQ(jfield(g_out, k, -1, "revision"), AUTD3_EMU_REVISION);
    ASSERT_EQ(jfield(g_out, k, -1, "serial"), k + 1);
    ASSERT_EQ(jfield(g_out, k, -1, "station"), 0); /* nothing assigned: the scan leaves the chain as it is */
  }
  ASSERT_CONTAINS(g_out, "\"name\":\"AUTD\"");
  ASSERT_CONTAINS(g_out, "\"state\":\"INIT\"");
  ASSERT_EQ(jfield(g_out, 1, 0, "crc_errors"), 5);
  ASSERT_EQ(jfield(g_out, 2, 0, "forwarded_errors"), 5);
  ASSERT_EQ(jfield(g_out, 1, 1, "forwarded_errors"), 5);
  ASSERT_EQ(jfield(g_out, 0, 1, "forwarded_errors"), 5);
  ASSERT_EQ(jfield(g_out, 2, 1, "lost_links"), 2);
  ASSERT_EQ(jfield(g_out, 0, 1, "phy_errors"), 9);
  ASSERT_EQ(jfield(g_out, 0, -1, "processing_unit_errors"), 3);
  ASSERT_EQ(jfield(g_out, 0, -1, "pdi_errors"), 4);
  /* DL status: device 2 is the end of the line (port 1 closed, no link) */
  ASSERT_EQ(jfield(g_out, 2, -1, "dl_status") & 0x0F00, 0x0600);
  ASSERT_CONTAINS(g_out, "\"dc\":{\"delay_ns\":");
  /* the text form says the same */
  ASSERT_EQ(run("scan --interface @IF@"), 0);
  ASSERT_CONTAINS(g_out, "3 devices");
  ASSERT_CONTAINS(g_out, "port 0: CRC 5 PHY 0 forwarded 0 lost link 0");
  ASSERT_CONTAINS(g_out, "processing unit 3, PDI 4");
  /* --reset-counters: the emulator's registers are zero afterwards, and the next scan shows it */
  ASSERT_EQ(run("scan --interface @IF@ --reset-counters --json"), 0);
  ASSERT_CONTAINS(g_out, "\"counters_reset\":true");
  ASSERT_EQ(jfield(g_out, 1, 0, "crc_errors"), 5); /* what was read before the reset */
  for (int k = 0; k < 3; k++) {
    char q[32];
    snprintf(q, sizeof q, "errors %d", k);
    ctl(q, r, sizeof r);
    ASSERT_CONTAINS(r, "0000000000000000000000000000000000000000");
  }
  ASSERT_EQ(run("scan --interface @IF@ --json"), 0);
  for (int k = 0; k < 3; k++)
    for (int p = 0; p < 2; p++) {
      ASSERT_EQ(jfield(g_out, k, p, "crc_errors"), 0);
      ASSERT_EQ(jfield(g_out, k, p, "forwarded_errors"), 0);
      ASSERT_EQ(jfield(g_out, k, p, "lost_links"), 0);
    }
  /* the scan changed no state: the devices are still in INIT with no station address */
  ctl("al 1", r, sizeof r);
  ASSERT_CONTAINS(r, "ok 0x01 code 0x0000");
}

/* The EtherCAT frames the emulator has answered so far ("replied" of its status line). */
static unsigned long long replied_frames(void) {
  char r[4096];
  ctl("status", r, sizeof r);
  const char *p = strstr(r, " replied ");
  ASSERT_TRUE(p != NULL);
  return strtoull(p + 9, NULL, 10);
}

/* A device that stops answering during a scan: the scan says so (exit 6, "answered": false and what was not
 * read as null), never zeros as if the device had read them. The emulator mutes device 1 after a given number
 * of frames (`mute 1 after N`), so the mute lands at known points of the scan's frame sequence, swept over its
 * second half (where the per-device reads are), whatever the host's timing. */
TEST(scan_marks_a_device_that_stops_answering) {
  autd3_test_in_emu_chain("scan_marks_a_device_that_stops_answering", 2, "", false);
  if (access(CLI, X_OK) != 0)
    SKIP("%s is not built", CLI);
  char cmd[128], r[256];
  unsigned long long f0 = replied_frames();
  ASSERT_EQ(run("scan --interface @IF@ --json"), 0); /* a clean scan: how many frames one takes */
  unsigned long long frames = replied_frames() - f0;
  ASSERT_GT(frames, 4);
  int hits = 0;
  for (unsigned long long k = frames / 2; k < frames; k += (frames + 7) / 8) {
    snprintf(cmd, sizeof cmd, "mute 1 after %llu", k);
    ctl(cmd, r, sizeof r);
    ASSERT_CONTAINS(r, "ok mute 1 after");
    int code = run("scan --interface @IF@ --json");
    ctl("unmute 1", r, sizeof r);
    fprintf(stderr, "device 1 muted after %llu of a scan's %llu frames: exit %d\n", k, frames, code);
    if (code == 0) { /* the mute came after the reads of device 1: a clean scan of what answered */
      ASSERT_TRUE(strstr(g_out, "\"answered\":false") == NULL);
      continue;
    }
    ASSERT_EQ(code, 6);
    const char *d1 = strstr(g_out, "{\"position\":1,");
    ASSERT_TRUE(d1 != NULL);
    ASSERT_CONTAINS(d1, "\"answered\":false,\"unanswered\":[\"");
    ASSERT_TRUE(strstr(d1, ":null") != NULL); /* what it did not answer is unknown, not 0 */
    if (strstr(d1, "\"AL status\""))
      ASSERT_CONTAINS(d1, "\"al\":null");
    if (strstr(d1, "\"station address\""))
      ASSERT_CONTAINS(d1, "\"station\":null");
    hits++;
  }
  ASSERT_GT(hits, 0); /* the second half of a scan reads device 1: some mute must land inside */
}

TEST(sii_matches_the_emulator_image) {
  autd3_test_in_emu_chain("sii_matches_the_emulator_image", 2, "", false);
  char path[] = "/tmp/autd3-sii-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_TRUE(fd >= 0);
  close(fd);
  char a[256];
  snprintf(a, sizeof a, "sii --interface @IF@ --position 1 --raw %s", path);
  ASSERT_EQ(run(a), 0);
  static uint8_t want[AUTD3_EMU_SII_BYTES], got[AUTD3_EMU_SII_BYTES + 16];
  autd3_sii_build(want, AUTD3_EMU_VENDOR, 2, NULL, false); /* device 1's image: serial 2 */
  FILE *f = fopen(path, "rb");
  ASSERT_TRUE(f != NULL);
  size_t n = fread(got, 1, sizeof got, f);
  fclose(f);
  unlink(path);
  ASSERT_GT(n, 0x80 + 4);
  ASSERT_EQ(got[n - 4], 0xFF); /* ends with the end category (type 0xFFFF and its length word) */
  ASSERT_EQ(got[n - 3], 0xFF);
  ASSERT_MEMEQ(got, want, n);
  /* decoded */
  ASSERT_EQ(run("sii --interface @IF@ --position 1 --json"), 0);
  ASSERT_CONTAINS(g_out, "\"checksum_ok\":true");
  ASSERT_CONTAINS(g_out, "\"vendor\":2217");
  ASSERT_CONTAINS(g_out, "\"serial\":2");
  ASSERT_CONTAINS(g_out, "\"strings\":[\"AUTD\",\"RxPdo0\",\"RxPdo1\",\"TxPdo\"]");
  ASSERT_CONTAINS(g_out, "\"general\":{\"group\":\"AUTD\",\"image\":\"\",\"order\":\"AUTD\",\"name\":\"AUTD\"");
  ASSERT_CONTAINS(g_out, "\"flags\":2");
  ASSERT_CONTAINS(g_out, "{\"start\":6144,\"length\":626,\"control\":100,\"enable\":1,\"type\":\"outputs\"}");
  ASSERT_CONTAINS(g_out, "\"index\":6656,\"name\":\"TxPdo\",\"sm\":3");
  ASSERT_CONTAINS(g_out, "\"index\":5632,\"name\":\"RxPdo0\",\"sm\":2,\"dc_sync\":0,\"flags\":17,\"bits\":3984");
  ASSERT_CONTAINS(g_out, "\"index\":5633,\"name\":\"RxPdo1\",\"sm\":2,\"dc_sync\":0,\"flags\":17,\"bits\":1024");
  ASSERT_EQ(run("sii --interface @IF@ --position 0"), 0);
  ASSERT_CONTAINS(g_out, "checksum        0x");
  ASSERT_CONTAINS(g_out, "(ok,");
  ASSERT_CONTAINS(g_out, "RxPDO           0x1600 \"RxPdo0\" SM2, 249 entries, 3984 bits");
  ASSERT_EQ(run("sii --interface @IF@ --position 2 2>/dev/null"), 6); /* no device there */
}

TEST(reg_read_write_round_trip) {
  autd3_test_in_emu_chain("reg_read_write_round_trip", 3, "", false);
  ASSERT_EQ(run("reg read --interface @IF@ --broadcast 0x0000 --json"), 0);
  ASSERT_CONTAINS(g_out, "\"wkc\":3"); /* three devices answered the BRD */
  ASSERT_EQ(run("reg write --interface @IF@ --position 2 0x0010 0x1234 2>/dev/null"), 2); /* refused without --yes-write */
  ASSERT_EQ(run("reg read --interface @IF@ --position 2 0x0010 --json"), 0);
  ASSERT_CONTAINS(g_out, "\"value\":0}"); /* unchanged */
  ASSERT_EQ(run("reg write --interface @IF@ --position 2 0x0010 0x1234 --yes-write --json"), 0);
  ASSERT_CONTAINS(g_out, "\"wkc\":1");
  ASSERT_EQ(run("reg read --interface @IF@ --station 0x1234 0x0010 --json"), 0);
  ASSERT_CONTAINS(g_out, "\"bytes\":\"3412\",\"value\":4660");
  ASSERT_EQ(run("reg read --interface @IF@ --station 0x1234 0x0130 --size 6"), 0);
  ASSERT_CONTAINS(g_out, "0x0130: 01 00 00 00 00 00");
  ASSERT_EQ(run("reg read --interface @IF@ --station 0x4321 0x0010 2>/dev/null"), 6); /* nobody has it: wkc 0 */
  /* a request through AL control shows in AL status */
  ASSERT_EQ(run("reg write --interface @IF@ --position 0 0x0120 2 --yes-write"), 0);
  char r[256];
  ctl("al 0", r, sizeof r);
  ASSERT_CONTAINS(r, "ok 0x02");
}


TEST(capture_holds_both_directions) {
  autd3_test_in_emu_chain("capture_holds_both_directions", 2, "", false);
  char path[] = "/tmp/autd3-cap-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_TRUE(fd >= 0);
  close(fd);
  char a[256];
  snprintf(a, sizeof a, "scan --interface @IF@ --capture %s", path);
  ASSERT_EQ(run(a), 0);
  int sent, back;
  pcap_count(path, &sent, &back);
  ASSERT_GT(sent, 5); /* the master's own frames, which bypass the qdisc without the fix */
  ASSERT_GT(back, 5);
  ASSERT_LE(back, sent);
}

/* The same capture through the echocat link's capture_path (autd3-perftest --capture). */
TEST(perftest_capture_holds_both_directions) {
  const char *pt = AUTD3_BINARY_DIR "/tools/perftest/autd3-perftest";
  if (access(pt, X_OK) != 0)
    SKIP("autd3-perftest is not built");
  autd3_test_in_emu_chain("perftest_capture_holds_both_directions", 2, "", false);
  char path[] = "/tmp/autd3-cap-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_TRUE(fd >= 0);
  close(fd);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' --link echocat --interface '%s' --devices 2 --count 50 --mode stop-and-wait --capture '%s' >/dev/null",
           pt, getenv("AUTD3_TEST_IFNAME"), path);
  int st = system(cmd);
  ASSERT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : 128, 0);
  int sent, back;
  pcap_count(path, &sent, &back);
  ASSERT_GT(sent, 50); /* echocat's requests are in the file, not only the replies */
  ASSERT_GT(back, 50);
}

TEST(adapters_marks_the_one_in_use) {
  autd3_test_in_emu_chain("adapters_marks_the_one_in_use", 1, "", false);
  const char *ifn = getenv("AUTD3_TEST_IFNAME");
  ASSERT_EQ(run("adapters --json"), 0);
  char want[128];
  snprintf(want, sizeof want, "{\"name\":\"%s\",\"up\":true,\"description\":", ifn);
  ASSERT_CONTAINS(g_out, want);
  const char *me = strstr(g_out, want);
  const char *free_ = strstr(me, "\"ethercat\":\"free\"");
  ASSERT_TRUE(free_ != NULL && free_ < strchr(me, '}')); /* the emulator sends nothing by itself */
  /* another master holds the interface (the lock every EtherCAT link takes) */
  autd3_master_guard_t *g = NULL;
  ASSERT_OK(autd3__master_guard_take(ifn, AUTD3_NIC_AUTO, "test", &g));
  ASSERT_EQ(run("adapters --json"), 0);
  me = strstr(g_out, want);
  ASSERT_TRUE(me != NULL);
  const char *close_ = strchr(me, '}');
  const char *inuse = strstr(me, "\"ethercat\":\"in use\"");
  ASSERT_TRUE(inuse != NULL && inuse < close_);
  ASSERT_EQ(run("scan --interface @IF@ 2>/dev/null"), 7); /* and the chain subcommands refuse it */
  autd3__master_guard_release(g);
  ASSERT_EQ(run("adapters --no-probe"), 0);
  ASSERT_CONTAINS(g_out, "not probed");
}

/* Every adapter, down ones included, with a description (Linux: driver, MAC, carrier); and an adapter on which
 * another master's EtherCAT frames pass during the 20 ms listen, without that master holding our lock, is
 * "in use", naming the foreign source. */
TEST(adapters_lists_down_ones_and_hears_a_foreign_master) {
  autd3_test_in_emu_chain("adapters_lists_down_ones_and_hears_a_foreign_master", 1, "", false);
  const char *ifn = getenv("AUTD3_TEST_IFNAME");
  ASSERT_EQ(system("ip link add autd3t0 type veth peer name autd3t1"), 0);
  ASSERT_EQ(run("adapters --json"), 0);
  char want[160];
  snprintf(want, sizeof want, "{\"name\":\"autd3t0\",\"up\":false,\"description\":\"%sMAC ",
           autd3_test_veth_desc_prefix("autd3t0"));
  ASSERT_CONTAINS(g_out, want);
  ASSERT_CONTAINS(g_out, "no carrier\",\"ethercat\":\"down\"}");
  snprintf(want, sizeof want, "{\"name\":\"%s\",\"up\":true,\"description\":\"%sMAC ", ifn,
           autd3_test_veth_desc_prefix(ifn));
  ASSERT_CONTAINS(g_out, want);
  const char *me = strstr(g_out, want);
  const char *st = strstr(me, "\"ethercat\":\"free\"");
  ASSERT_TRUE(st != NULL && st < strchr(me, '}')); /* nobody on it yet */
  autd3_test_foreign_t f;
  autd3_test_foreign_start(&f);
  int rc = run("adapters --json");
  autd3_test_foreign_stop(&f);
  ASSERT_EQ(rc, 0);
  me = strstr(g_out, want);
  ASSERT_TRUE(me != NULL);
  const char *end = strchr(me, '}');
  st = strstr(me, "\"ethercat\":\"in use\"");
  ASSERT_TRUE(st != NULL && st < end);
  const char *mac = strstr(me, AUTD3_TEST_FOREIGN_MAC);
  ASSERT_TRUE(mac != NULL && mac < end);
  ASSERT_EQ(run("adapters"), 0); /* the text form: name, state, status, description */
  snprintf(want, sizeof want, "autd3t0              down down       %sMAC ", autd3_test_veth_desc_prefix("autd3t0"));
  ASSERT_CONTAINS(g_out, want);
}

TEST(doctor_check_list_and_exit_code) {
  autd3_test_in_emu_chain("doctor_check_list_and_exit_code", 1, "", false);
  int rc = run("doctor --interface @IF@ --json --wake-cycles 20");
  static const char *checks[] = {"capabilities", "rt-priority", "interface", "second-master", "ip-stack", "coalescing",
                                 "eee", "flow-control", "cpu-governor", "timer-slack", "wake-up-floor", "pcap"};
  for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
    char c[64];
    snprintf(c, sizeof c, "{\"check\":\"%s\",\"status\":\"", checks[i]);
    ASSERT_CONTAINS(g_out, c);
  }
  /* the namespace's root has every capability: that check passes */
  ASSERT_CONTAINS(g_out, "{\"check\":\"capabilities\",\"status\":\"pass\"");
  ASSERT_CONTAINS(g_out, "{\"check\":\"second-master\",\"status\":\"pass\"");
  ASSERT_CONTAINS(g_out, "{\"check\":\"interface\",\"status\":\"pass\",\"detail\":\"autd3m0 is up, carrier\"");
  /* the exit code is the worst result */
  if (strstr(g_out, "\"status\":\"fail\"")) {
    ASSERT_EQ(rc, 1);
    ASSERT_CONTAINS(g_out, "\"result\":\"fail\"");
  } else if (strstr(g_out, "\"status\":\"warn\"")) {
    ASSERT_EQ(rc, 3);
    ASSERT_CONTAINS(g_out, "\"result\":\"warn\"");
  } else {
    ASSERT_EQ(rc, 0);
    ASSERT_CONTAINS(g_out, "\"result\":\"pass\"");
  }
  /* a missing interface is a failure with its fix */
  ASSERT_EQ(run("doctor --interface no-such-if0 --wake-cycles 0"), 1);
  ASSERT_CONTAINS(g_out, "FAIL  interface");
  ASSERT_CONTAINS(g_out, "fix: ");
  ASSERT_CONTAINS(g_out, "result: fail");
  /* the interface taken down: that check fails, naming the fix */
  char cmd[256];
  snprintf(cmd, sizeof cmd, "ip link set %s down", getenv("AUTD3_TEST_IFNAME"));
  ASSERT_EQ(system(cmd), 0);
  ASSERT_EQ(run("doctor --interface @IF@ --wake-cycles 0"), 1);
  ASSERT_CONTAINS(g_out, "FAIL  interface       ");
  ASSERT_CONTAINS(g_out, "is down");
  ASSERT_CONTAINS(g_out, "fix: sudo ip link set ");
}


/* uid 0 is not enough: in the namespace the test is root, but with CAP_NET_RAW / CAP_NET_ADMIN dropped from
 * the bounding set (setpriv) the capabilities check fails and names the setcap fix; the raw-socket checks say
 * they could not run. */
TEST(doctor_flags_missing_capabilities) {
  if (system("command -v setpriv >/dev/null 2>&1") != 0)
    SKIP("setpriv (util-linux) is not installed");
  autd3_test_in_emu_chain("doctor_flags_missing_capabilities", 1, "", false);
  char args[256];
  snprintf(args, sizeof args, "doctor --interface '%s' --json --wake-cycles 0 --listen-ms 100", getenv("AUTD3_TEST_IFNAME"));
  run_under("", args); /* the namespace's root, every capability: the baseline */
  ASSERT_CONTAINS(g_out, "{\"check\":\"capabilities\",\"status\":\"pass\"");
  ASSERT_EQ(run_under("setpriv --bounding-set -net_raw,-net_admin --", args), 1);
  ASSERT_CONTAINS(g_out, "{\"check\":\"capabilities\",\"status\":\"fail\",\"detail\":\"CAP_NET_RAW and CAP_NET_ADMIN missing");
  ASSERT_CONTAINS(g_out, "sudo setcap cap_net_raw,cap_net_admin+ep <program>");
  ASSERT_CONTAINS(g_out, "{\"check\":\"second-master\",\"status\":\"skip\",\"detail\":\"not checked: ");
  ASSERT_CONTAINS(g_out, "\"result\":\"fail\"");
  ASSERT_EQ(run_under("setpriv --bounding-set -net_admin --", args), 1);
  ASSERT_CONTAINS(g_out, "{\"check\":\"capabilities\",\"status\":\"fail\",\"detail\":\"CAP_NET_ADMIN missing");
}

/* The IP stack on the EtherCAT interface: quiet (IPv6 off, no address) passes; with an IPv4 address, and the
 * host sending ARP requests on the line while doctor listens, it warns, naming both and the fix. */
TEST(doctor_warns_of_a_chattering_ip_stack) {
  autd3_test_in_emu_chain("doctor_warns_of_a_chattering_ip_stack", 1, "", false);
  const char *ifn = getenv("AUTD3_TEST_IFNAME");
  char cmd[512], args[256];
  snprintf(cmd, sizeof cmd, "sysctl -q -w net.ipv6.conf.%s.disable_ipv6=1 && ip addr flush dev %s", ifn, ifn);
  ASSERT_EQ(system(cmd), 0);
  snprintf(args, sizeof args, "doctor --interface '%s' --json --wake-cycles 0 --listen-ms 300", ifn);
  run_under("", args);
  ASSERT_CONTAINS(g_out, "{\"check\":\"ip-stack\",\"status\":\"pass\"");
  snprintf(cmd, sizeof cmd, "ip addr add 10.123.0.1/24 dev %s", ifn);
  ASSERT_EQ(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "'%s' doctor --interface '%s' --json --wake-cycles 0 --listen-ms 1500", CLI, ifn);
  FILE *p = popen(cmd, "r");
  ASSERT_TRUE(p != NULL);
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_TRUE(s >= 0);
  for (int i = 0; i < 30; i++) { /* each new neighbour: an ARP request on the line */
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(9)};
    a.sin_addr.s_addr = htonl(0x0A7B0002u + (uint32_t)i);
    (void)sendto(s, "x", 1, 0, (struct sockaddr *)&a, sizeof a);
    usleep(50000);
  }
  close(s);
  size_t n = fread(g_out, 1, sizeof g_out - 1, p);
  g_out[n] = 0;
  int st = pclose(p);
  fprintf(stderr, "%s\n", g_out);
  ASSERT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : 128, 3); /* a warning, no failure */
  const char *ip = strstr(g_out, "{\"check\":\"ip-stack\",\"status\":\"warn\",\"detail\":\"an IPv4 address; in 1500 ms this host sent ");
  ASSERT_TRUE(ip != NULL);
  ASSERT_TRUE(strtoull(ip + strlen("{\"check\":\"ip-stack\",\"status\":\"warn\",\"detail\":\"an IPv4 address; in 1500 ms this host sent "), NULL, 10) > 0);
  ASSERT_CONTAINS(ip, "(ARP");
  ASSERT_CONTAINS(ip, "sudo ip addr flush dev ");
}

TEST(scan_and_sii_agree_with_pysoem) {
  if (access(AUTD3_PYTHON_EXE, X_OK) != 0)
    SKIP("no Python at %s (make build creates build/.venv with pysoem)", AUTD3_PYTHON_EXE);
  autd3_test_in_emu_chain("scan_and_sii_agree_with_pysoem", 3, "", false);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' '%s/pysoem_crosscheck.py' '%s' 3", AUTD3_PYTHON_EXE, AUTD3_TOOLS_TESTS_DIR, CLI);
  int st = system(cmd);
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  if (code == 77)
    SKIP("pysoem is not installed in %s", AUTD3_PYTHON_EXE);
  ASSERT_EQ(code, 0);
}

/* scan and sii against SOEM's own slaveinfo sample on the same chain (tests/tools/slaveinfo_crosscheck.py):
 * topology and ports, delays, AL state, the SyncManager and FMMU registers SOEM programmed, the SII's SM/FMMU/
 * mailbox/general categories and the PDO map. Skipped by name when slaveinfo is not built. */
TEST(scan_and_sii_agree_with_slaveinfo) {
  if (!AUTD3_SOEM_SLAVEINFO[0] || access(AUTD3_SOEM_SLAVEINFO, X_OK) != 0)
    SKIP("SOEM's slaveinfo is not built (SOEM's samples; or configure with -DAUTD3_SOEM_SLAVEINFO=/path/to/slaveinfo)");
  if (access(AUTD3_PYTHON_EXE, X_OK) != 0)
    SKIP("no Python at %s", AUTD3_PYTHON_EXE);
  autd3_test_in_emu_chain("scan_and_sii_agree_with_slaveinfo", 3, "", false);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' '%s/slaveinfo_crosscheck.py' '%s' '%s' 3", AUTD3_PYTHON_EXE, AUTD3_TOOLS_TESTS_DIR, CLI,
           AUTD3_SOEM_SLAVEINFO);
  int st = system(cmd);
  ASSERT_TRUE(WIFEXITED(st));
  ASSERT_EQ(WEXITSTATUS(st), 0);
}
