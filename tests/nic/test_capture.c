/* Capture files (src/nic/capture.h): the pcap writer, read back byte by byte,
 * and the passive tap over a veth pair in a private network namespace. */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "autd3/error.h"
#include "harness/netns.h"
#include "harness/test.h"
#include "nic/capture.h"
#include "nic/nic.h"
#include "platform/platform.h"

static uint32_t get32(const uint8_t *p) { return (uint32_t)(p[0] | (p[1] << 8) | (p[2] << 16) | ((uint32_t)p[3] << 24)); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static size_t ecat_frame(uint8_t *f, size_t len, uint8_t tag) {
  memset(f, 0, len);
  memset(f, 0xff, 6);
  f[6] = 0x02;
  f[11] = tag;
  f[12] = 0x88, f[13] = 0xA4;
  for (size_t i = 14; i < len; i++)
    f[i] = (uint8_t)(i * 7 + tag);
  return len;
}

static size_t slurp(const char *path, uint8_t *buf, size_t cap) {
  FILE *fp = fopen(path, "rb");
  ASSERT_TRUE(fp != NULL);
  size_t n = fread(buf, 1, cap, fp);
  fclose(fp);
  return n;
}

static void temp_path(char *path) {
  int fd = mkstemp(path);
  ASSERT_TRUE(fd >= 0);
  close(fd);
}

static void check_header(const uint8_t *b) {
  ASSERT_EQ(get32(b), 0xa1b23c4du); /* nanosecond pcap, little-endian */
  ASSERT_EQ(get16(b + 4), 2);
  ASSERT_EQ(get16(b + 6), 4);
  ASSERT_EQ(get32(b + 8), 0);
  ASSERT_EQ(get32(b + 12), 0);
  ASSERT_GE(get32(b + 16), 2048);
  ASSERT_EQ(get32(b + 20), 1); /* LINKTYPE_ETHERNET */
}

TEST(writer_three_frames) {
  char path[] = "/tmp/autd3-capture-test-XXXXXX";
  temp_path(path);
  autd3_capture_t c;
  ASSERT_OK(autd3__capture_open(&c, path));
  static uint8_t f[3][1514];
  const size_t len[3] = {60, 1514, 1270};
  const uint64_t t[3] = {1700000000123456789ull, 1700000001000000000ull, 1700000001999999999ull};
  for (int k = 0; k < 3; k++) {
    ecat_frame(f[k], len[k], (uint8_t)k);
    autd3__capture_write(&c, f[k], len[k], t[k]);
  }
  ASSERT_EQ(atomic_load(&c.frames), 3);
  autd3__capture_close(&c);
  autd3__capture_close(&c); /* twice is fine */
  autd3__capture_write(&c, f[0], len[0], t[0]); /* closed: no-op */
  static uint8_t b[8192];
  size_t n = slurp(path, b, sizeof b);
  unlink(path);
  ASSERT_EQ(n, 24 + 3 * 16 + len[0] + len[1] + len[2]);
  check_header(b);
  size_t off = 24;
  for (int k = 0; k < 3; k++) {
    ASSERT_EQ(get32(b + off), (uint32_t)(t[k] / 1000000000ull));
    ASSERT_EQ(get32(b + off + 4), (uint32_t)(t[k] % 1000000000ull));
    ASSERT_EQ(get32(b + off + 8), len[k]);  /* captured */
    ASSERT_EQ(get32(b + off + 12), len[k]); /* on the wire */
    ASSERT_MEMEQ(b + off + 16, f[k], len[k]);
    off += 16 + len[k];
  }
}

TEST(writer_errors) {
  autd3_capture_t c;
  ASSERT_ERR(autd3__capture_open(&c, "/nonexistent-dir/x.pcap"), AUTD3_E_IO);
  ASSERT_CONTAINS(autd3_last_error(), "/nonexistent-dir/x.pcap");
  ASSERT_TRUE(c.f == NULL);
  ASSERT_ERR(autd3__capture_open(&c, NULL), AUTD3_E_INVALID_ARGUMENT);
  autd3__capture_close(&c);
  autd3_capture_tap_t *tap = (autd3_capture_tap_t *)&tap;
  ASSERT_ERR(autd3__capture_tap_start("h4-nonexistent", "/tmp/x.pcap", &tap), AUTD3_E_NO_INTERFACE);
  ASSERT_CONTAINS(autd3_last_error(), "h4-nonexistent");
  ASSERT_TRUE(tap == NULL);
  ASSERT_EQ(autd3__capture_tap_frames(NULL), 0);
  autd3__capture_tap_stop(NULL);
}

/* This test case in a private namespace with a veth pair c4a<->c4b. */
static void veth(const char *name) { autd3_test_netns_veth(name, "c4a", "c4b"); }

/* A plain packet socket on `ifname`, as SOEM and EtherCrab send with. (The
 * NIC layer's own sockets bypass the qdisc, and so the kernel's taps: echocat
 * writes its frames itself.) */
static int plain_socket(const char *ifname) {
  int fd = socket(AF_PACKET, SOCK_RAW, htons(0x88A4));
  ASSERT_TRUE(fd >= 0);
  struct sockaddr_ll sll;
  memset(&sll, 0, sizeof sll);
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(0x88A4);
  sll.sll_ifindex = (int)if_nametoindex(ifname);
  ASSERT_EQ(bind(fd, (struct sockaddr *)&sll, sizeof sll), 0);
  return fd;
}

/* The tap on c4a records, in order, what a link sends on c4a (outgoing) and
 * what comes back from c4b (incoming); nothing that is not EtherCAT; and the
 * frames still queued when it is stopped. */
TEST(tap_both_directions) {
  veth("tap_both_directions");
  char path[] = "/tmp/autd3-capture-tap-XXXXXX";
  temp_path(path);
  autd3_capture_tap_t *tap = NULL;
  ASSERT_OK(autd3__capture_tap_start("c4a", path, &tap));
  int a = plain_socket("c4a");
  autd3_nic_t *b;
  ASSERT_OK(autd3__nic_open("c4b", AUTD3_NIC_AF_PACKET, &b));
  static uint8_t f[6][AUTD3_NIC_MAX_FRAME];
  const size_t len[3] = {60, 1514, 300};
  uint8_t r[AUTD3_NIC_MAX_FRAME];
  size_t rl;
  for (int k = 0; k < 3; k++) {
    ecat_frame(f[2 * k], len[k], (uint8_t)(2 * k));         /* "request" from c4a */
    ecat_frame(f[2 * k + 1], len[k], (uint8_t)(2 * k + 1)); /* "reply" from c4b */
    ASSERT_EQ(send(a, f[2 * k], len[k], 0), (ssize_t)len[k]);
    ASSERT_OK(autd3__nic_recv(b, r, sizeof r, &rl, autd3__now_ns() + 2000000000ull));
    ASSERT_OK(autd3__nic_send(b, f[2 * k + 1], len[k]));
    ASSERT_EQ(recv(a, r, sizeof r, 0), (ssize_t)len[k]);
    if (k == 0) { /* not EtherCAT: never in the file */
      uint8_t ip[60];
      ecat_frame(ip, 60, 9);
      ip[12] = 0x08, ip[13] = 0x00;
      ASSERT_EQ(send(a, ip, 60, 0), 60);
    }
  }
  close(a);
  autd3__nic_close(b);
  /* No wait: stop itself must write the frames the kernel already queued. */
  autd3__capture_tap_stop(tap);
  static uint8_t buf[16384];
  size_t n = slurp(path, buf, sizeof buf);
  unlink(path);
  check_header(buf);
  size_t off = 24;
  int k = 0;
  uint64_t prev = 0;
  for (; off + 16 <= n && k < 6; k++) {
    size_t l = get32(buf + off + 8);
    ASSERT_EQ(l, len[k / 2]);
    ASSERT_EQ(get32(buf + off + 12), l);
    uint64_t ts = get32(buf + off) * 1000000000ull + get32(buf + off + 4);
    ASSERT_GE(ts, prev);
    prev = ts;
    ASSERT_MEMEQ(buf + off + 16, f[k], l);
    off += 16 + l;
  }
  ASSERT_EQ(k, 6);
  ASSERT_EQ(off, n);
}

/* A tap on an adapter that goes down and up again keeps running, and stop still returns. */
TEST(tap_interface_down) {
  veth("tap_interface_down");
  char path[] = "/tmp/autd3-capture-down-XXXXXX";
  temp_path(path);
  autd3_capture_tap_t *tap = NULL;
  ASSERT_OK(autd3__capture_tap_start("c4a", path, &tap));
  ASSERT_EQ(system("ip link set c4a down"), 0);
  autd3__sleep_ns(50000000);
  ASSERT_EQ(system("ip link set c4a up"), 0);
  autd3_nic_t *b;
  ASSERT_OK(autd3__nic_open("c4b", AUTD3_NIC_AF_PACKET, &b));
  uint8_t f[60];
  ecat_frame(f, 60, 1);
  /* the veth may take a moment to carry frames again: send until the tap saw one (bounded) */
  for (int i = 0; i < 200 && autd3__capture_tap_frames(tap) == 0; i++) {
    ASSERT_OK(autd3__nic_send(b, f, 60));
    autd3__sleep_ns(10000000);
  }
  ASSERT_GE(autd3__capture_tap_frames(tap), 1);
  autd3__nic_close(b);
  autd3__capture_tap_stop(tap);
  unlink(path);
}
