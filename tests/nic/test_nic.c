/* Raw NIC layer (src/nic): both back ends over a veth pair in a private
 * network namespace (`unshare -rn`), plus the error paths. */
#include <errno.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autd3/error.h"
#include "harness/test.h"
#include "harness/netns.h"
#include "nic/nic.h"
#include "nic/pcap_load.h"
#include "platform/platform.h"

static void reexec(const char *flags, const char *name) { autd3_test_reexec_unshare(flags, name); }

static void veth(const char *name) { autd3_test_netns_veth(name, "h4a", "h4b"); }

/* The adapter's MAC asked the other way (SIOCGIFHWADDR; the NIC layer reads
 * getifaddrs()). */
static void ioctl_mac(const char *ifname, uint8_t mac[6]) {
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_TRUE(s >= 0);
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
  ASSERT_EQ(ioctl(s, SIOCGIFHWADDR, &ifr), 0);
  ASSERT_EQ(close(s), 0);
  memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
}

static size_t ecat_frame(uint8_t *f, size_t len, uint8_t tag) {
  memset(f, 0, len);
  memset(f, 0xff, 6);                       /* broadcast, as EtherCAT masters send */
  f[6] = 0x02;                              /* locally administered source */
  f[11] = tag;
  f[12] = 0x88, f[13] = 0xA4;
  for (size_t i = 14; i < len; i++)
    f[i] = (uint8_t)(i * 7 + tag);
  return len;
}

static void roundtrip(autd3_nic_backend_t ba, autd3_nic_backend_t bb) {
  autd3_nic_t *a, *b;
  ASSERT_OK(autd3__nic_open("h4a", ba, &a));
  ASSERT_OK(autd3__nic_open("h4b", bb, &b));
  uint8_t f[AUTD3_NIC_MAX_FRAME], r[AUTD3_NIC_MAX_FRAME];
  size_t len;
  const size_t sizes[] = {60, 1514, 14 + 2 + 628 * 2};
  for (int k = 0; k < 3; k++) {
    ecat_frame(f, sizes[k], (uint8_t)k);
    ASSERT_OK(autd3__nic_send(a, f, sizes[k]));
    ASSERT_OK(autd3__nic_recv(b, r, sizeof r, &len, autd3__now_ns() + 2000000000ull));
    ASSERT_EQ(len, sizes[k]);
    ASSERT_MEMEQ(r, f, len);
    /* the sender never reads its own frame back */
    ASSERT_ERR(autd3__nic_recv(a, r, sizeof r, &len, 0), AUTD3_E_TIMEOUT);
    ASSERT_OK(autd3__nic_send(b, f, sizes[k]));
    ASSERT_OK(autd3__nic_recv(a, r, sizeof r, &len, autd3__now_ns() + 2000000000ull));
    ASSERT_MEMEQ(r, f, len);
  }
  /* A non-EtherCAT frame never comes out of recv. */
  ecat_frame(f, 60, 9);
  f[12] = 0x08, f[13] = 0x00;
  ASSERT_OK(autd3__nic_send(a, f, 60));
  ASSERT_ERR(autd3__nic_recv(b, r, sizeof r, &len, autd3__now_ns() + 20000000ull), AUTD3_E_TIMEOUT);
  /* Too small a buffer: the frame is dropped and counted, not truncated. */
  ecat_frame(f, 200, 3);
  ASSERT_OK(autd3__nic_send(a, f, 200));
  ASSERT_ERR(autd3__nic_recv(b, r, 100, &len, autd3__now_ns() + 200000000ull), AUTD3_E_TIMEOUT);
  ASSERT_GE(autd3__nic_ignored(b), 1);
  ASSERT_ERR(autd3__nic_send(a, f, 10), AUTD3_E_INVALID_ARGUMENT);
  uint8_t mac[6], want[6];
  autd3__nic_mac(a, mac);
  ioctl_mac("h4a", want);
  ASSERT_MEMEQ(mac, want, 6);
  ASSERT_GE(autd3__nic_fd(a), 0);
  autd3__nic_close(a);
  autd3__nic_close(b);
}

TEST(afpacket_roundtrip) {
  veth("afpacket_roundtrip");
  roundtrip(AUTD3_NIC_AF_PACKET, AUTD3_NIC_AUTO);
}

TEST(pcap_roundtrip) {
  veth("pcap_roundtrip");
  autd3_nic_t *n;
  autd3_err_t e = autd3__nic_open("h4a", AUTD3_NIC_PCAP, &n);
  if (e == AUTD3_E_NOT_BUILT)
    SKIP("no libpcap back end or no libpcap to load: %s", autd3_last_error());
  ASSERT_OK(e);
  autd3__nic_close(n);
  roundtrip(AUTD3_NIC_PCAP, AUTD3_NIC_PCAP);
  roundtrip(AUTD3_NIC_PCAP, AUTD3_NIC_AF_PACKET);
}

/* libpcap is loaded at run time (src/nic/pcap_load.c, the same code on
 * macOS): a library that is not there, or is no libpcap, says what to do. */
TEST(pcap_missing_library) {
  const autd3__pcap_api_t *p = NULL;
  ASSERT_ERR(autd3__pcap_load("libautd3-no-such-pcap.so", &p), AUTD3_E_NOT_BUILT);
  ASSERT_CONTAINS(autd3_last_error(), "libautd3-no-such-pcap.so");
  ASSERT_CONTAINS(autd3_last_error(), "install libpcap");
  ASSERT_TRUE(p == NULL);
  ASSERT_ERR(autd3__pcap_load("libm.so.6", &p), AUTD3_E_NOT_BUILT);
  ASSERT_CONTAINS(autd3_last_error(), "lacks the libpcap API");
  ASSERT_TRUE(p == NULL);
}

TEST(list_adapters) {
  veth("list_adapters");
  char names[16][32];
  size_t n = 0;
  ASSERT_OK(autd3__nic_list(names, 16, &n));
  int seen = 0;
  for (size_t i = 0; i < n; i++) {
    ASSERT_TRUE(strcmp(names[i], "lo") != 0);
    seen += !strcmp(names[i], "h4a") + !strcmp(names[i], "h4b");
  }
  ASSERT_EQ(seen, 2);
  ASSERT_OK(autd3__nic_list(names, 1, &n));
  ASSERT_EQ(n, 1);
  /* the heap listing echocat uses (names of any length; Windows' are ~50 bytes), with a description (Linux: the
   * driver, the MAC, the carrier); a pair left down is not in it, and is in autd3__nic_names_all's */
  ASSERT_EQ(system("ip link add h4c type veth peer name h4d"), 0);
  autd3_nic_names_t l;
  ASSERT_OK(autd3__nic_names(&l));
  seen = 0;
  for (size_t i = 0; i < l.count; i++) {
    ASSERT_TRUE(strcmp(l.name[i], "lo") != 0);
    ASSERT_TRUE(strcmp(l.name[i], "h4c") != 0);
    ASSERT_FALSE(l.down[i]);
    if (!strcmp(l.name[i], "h4a") || !strcmp(l.name[i], "h4b")) {
      char want[32];
      snprintf(want, sizeof want, "%sMAC ", autd3_test_veth_desc_prefix(l.name[i]));
      ASSERT_EQ(strncmp(l.desc[i], want, strlen(want)), 0);
      seen++;
    }
  }
  ASSERT_EQ(seen, 2);
  autd3__nic_names_free(&l);
  ASSERT_EQ(l.count, 0);
  autd3__nic_names_free(&l); /* twice is fine */
  ASSERT_OK(autd3__nic_names_all(&l));
  seen = 0;
  for (size_t i = 0; i < l.count; i++)
    if (!strcmp(l.name[i], "h4c")) {
      ASSERT_TRUE(l.down[i]);
      ASSERT_CONTAINS(l.desc[i], "no carrier");
      seen++;
    }
  ASSERT_EQ(seen, 1);
  autd3__nic_names_free(&l);
}

TEST(no_interface) {
  autd3_nic_t *n = (autd3_nic_t *)&n;
  ASSERT_ERR(autd3__nic_open("h4-nonexistent", AUTD3_NIC_AUTO, &n), AUTD3_E_NO_INTERFACE);
  ASSERT_CONTAINS(autd3_last_error(), "h4-nonexistent");
  ASSERT_TRUE(n == NULL);
  ASSERT_ERR(autd3__nic_open("h4-nonexistent", AUTD3_NIC_PCAP, &n), AUTD3_E_NO_INTERFACE);
  ASSERT_ERR(autd3__nic_open("", AUTD3_NIC_AUTO, &n), AUTD3_E_INVALID_ARGUMENT);
  char *os = (char *)&os;
  ASSERT_ERR(autd3__nic_resolve("h4-nonexistent", &os), AUTD3_E_NO_INTERFACE);
  ASSERT_TRUE(os == NULL);
  ASSERT_ERR(autd3__nic_resolve("an-interface-name-longer-than-IFNAMSIZ", &os), AUTD3_E_NO_INTERFACE);
  ASSERT_CONTAINS(autd3_last_error(), "too long");
  ASSERT_OK(autd3__nic_resolve("lo", &os));
  ASSERT_STREQ(os, "lo");
  free(os);
}

/* In a fresh user namespace without a uid mapping the process has no
 * capability over the host's network namespace: the open must say which
 * capabilities are missing and how to grant them. */
TEST(permission_message) {
  reexec("-U", "permission_message");
  autd3_nic_t *n;
  ASSERT_ERR(autd3__nic_open("lo", AUTD3_NIC_AF_PACKET, &n), AUTD3_E_PERMISSION);
  ASSERT_CONTAINS(autd3_last_error(), "CAP_NET_RAW");
  ASSERT_CONTAINS(autd3_last_error(), "CAP_NET_ADMIN");
  ASSERT_CONTAINS(autd3_last_error(), "setcap");
  autd3_err_t e = autd3__nic_open("lo", AUTD3_NIC_PCAP, &n);
  if (e != AUTD3_E_NOT_BUILT) {
    ASSERT_ERR(e, AUTD3_E_PERMISSION);
    ASSERT_CONTAINS(autd3_last_error(), "CAP_NET_RAW");
  }
}

/* The checks for a master library that opens the adapter itself (SOEM):
 * the adapter's OS name, or the reason it cannot be used, named. */
TEST(probe_for_a_self_opening_master) {
  reexec("-rn", "probe_for_a_self_opening_master");
  autd3_test_veth("h4a", "h4b", 0); /* down */
  char os[64] = "x";
  ASSERT_ERR(autd3__nic_probe("h4-nonexistent", "who", true, os, sizeof os), AUTD3_E_NO_INTERFACE);
  ASSERT_CONTAINS(autd3_last_error(), "h4-nonexistent");
  ASSERT_STREQ(os, "");
  ASSERT_ERR(autd3__nic_probe("h4a", "who", true, os, sizeof os), AUTD3_E_NO_DEVICE);
  ASSERT_CONTAINS(autd3_last_error(), "who: network interface \"h4a\" is down");
  ASSERT_EQ(system("ip link set h4a up && ip link set h4b up"), 0);
  ASSERT_OK(autd3__nic_probe("h4a", "who", true, os, sizeof os));
  ASSERT_STREQ(os, "h4a");
  char small[3];
  ASSERT_ERR(autd3__nic_probe("h4a", "who", false, small, sizeof small), AUTD3_E_NO_INTERFACE);
  ASSERT_CONTAINS(autd3_last_error(), "longer than 2 bytes");
  ASSERT_ERR(autd3__nic_probe("h4a", "who", false, NULL, 0), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_TRUE(autd3__nic_is_loopback("lo"));
  ASSERT_FALSE(autd3__nic_is_loopback("h4a"));
  ASSERT_FALSE(autd3__nic_is_loopback("h4-nonexistent"));
}

/* Without a capability over the adapter (a user namespace, not a network
 * one): PERMISSION naming what grants it. */
TEST(probe_permission_message) {
  reexec("-r", "probe_permission_message");
  char os[64];
  ASSERT_ERR(autd3__nic_probe("lo", "who", true, os, sizeof os), AUTD3_E_PERMISSION);
  ASSERT_CONTAINS(autd3_last_error(), "who: raw socket on \"lo\" refused");
  ASSERT_CONTAINS(autd3_last_error(), "CAP_NET_RAW");
}

/* Frame `i` of a sequence: its number in bytes 14..15. */
static void seq_send(autd3_nic_t *n, unsigned i) {
  uint8_t f[64];
  ecat_frame(f, 60, 1);
  f[14] = (uint8_t)(i >> 8), f[15] = (uint8_t)i;
  ASSERT_OK(autd3__nic_send(n, f, 60));
}

static unsigned seq_recv(autd3_nic_t *n, autd3_err_t *e) {
  uint8_t r[AUTD3_NIC_MAX_FRAME];
  size_t len = 0;
  *e = autd3__nic_recv(n, r, sizeof r, &len, autd3__now_ns() + 2000000000ull);
  return *e == AUTD3_OK && len == 60 ? (unsigned)(r[14] << 8 | r[15]) : ~0u;
}

/* The default AF_PACKET receive path is the PACKET_MMAP ring (256 frames):
 * frames come out complete and in order across many wraps of the ring, one
 * at a time and in batches of most of the ring; a full ring drops the newest
 * frames (as a full socket buffer did), never overwrites unread ones, and
 * works on once read. */
TEST(afpacket_rx_ring) {
  veth("afpacket_rx_ring");
  autd3_nic_t *a, *b;
  ASSERT_OK(autd3__nic_open("h4a", AUTD3_NIC_AF_PACKET, &a));
  ASSERT_OK(autd3__nic_open("h4b", AUTD3_NIC_AF_PACKET, &b));
  /* qemu-user (make test-aarch64 exports QEMU_LD_PREFIX) does not translate PACKET_RX_RING, so the
   * socket takes its fallback there; natively the ring must be in use. */
  if (getenv("QEMU_LD_PREFIX") && !strstr(autd3__nic_io_path(b), "PACKET_MMAP"))
    SKIP("qemu-user cannot set up PACKET_MMAP (fell back to %s); the ring is tested natively", autd3__nic_io_path(b));
  ASSERT_CONTAINS(autd3__nic_io_path(b), "PACKET_MMAP RX ring");
  autd3_err_t e;
  for (unsigned i = 0; i < 1000; i++) {
    seq_send(a, i);
    ASSERT_EQ(seq_recv(b, &e), i);
  }
  for (unsigned batch = 0; batch < 4; batch++) {
    for (unsigned i = 0; i < 200; i++)
      seq_send(a, batch * 200 + i);
    for (unsigned i = 0; i < 200; i++)
      ASSERT_EQ(seq_recv(b, &e), batch * 200 + i);
  }
  /* Overflow: 300 frames into 256 slots while nobody reads. */
  for (unsigned i = 0; i < 300; i++)
    seq_send(a, 5000 + i);
  for (unsigned i = 0; i < 256; i++)
    ASSERT_EQ(seq_recv(b, &e), 5000 + i);
  uint8_t r[AUTD3_NIC_MAX_FRAME];
  size_t len;
  ASSERT_ERR(autd3__nic_recv(b, r, sizeof r, &len, autd3__now_ns() + 20000000ull), AUTD3_E_TIMEOUT);
  seq_send(a, 7);
  ASSERT_EQ(seq_recv(b, &e), 7);
  autd3__nic_close(a);
  autd3__nic_close(b);
  roundtrip(AUTD3_NIC_AF_PACKET, AUTD3_NIC_AF_PACKET);
}

/* AUTD3_NIC_RING=0 forces the plain socket path (the fallback where the ring
 * cannot be set up); it behaves the same. */
TEST(afpacket_recvfrom_fallback) {
  setenv("AUTD3_NIC_RING", "0", 1);
  veth("afpacket_recvfrom_fallback");
  autd3_nic_t *a;
  ASSERT_OK(autd3__nic_open("h4a", AUTD3_NIC_AF_PACKET, &a));
  ASSERT_STREQ(autd3__nic_io_path(a), "AF_PACKET, recvfrom");
  autd3__nic_close(a);
  roundtrip(AUTD3_NIC_AF_PACKET, AUTD3_NIC_AF_PACKET);
}
