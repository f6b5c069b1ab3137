/*
 * Run a test case in a network namespace of its own: the case re-executes
 * itself under `unshare <flags>` (-rn: a user + network namespace, so raw
 * sockets work without real root and nothing touches the host's network),
 * then, inside, optionally creates a veth pair. One helper for every test
 * that needs it (NIC, capture, SOEM, EtherCrab); the EtherCAT scenarios that
 * also need the emulator use tests/harness/emu_chain.h (autd3-netns).
 */
#ifndef AUTD3_TEST_HARNESS_NETNS_H
#define AUTD3_TEST_HARNESS_NETNS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/test.h"

#if defined(__linux__)
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#endif

/* Re-run test case `name` under `unshare flags`; returns in the child only. */
static inline void autd3_test_reexec_unshare(const char *flags, const char *name) {
  if (getenv("AUTD3_TEST_NETNS_INNER")) return;
  setenv("AUTD3_TEST_NETNS_INNER", "1", 1);
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) SKIP("cannot read /proc/self/exe");
  self[n] = 0;
  execlp("unshare", "unshare", flags, self, name, (char *)NULL);
  SKIP("unshare not available: %s", strerror(errno));
}

/* Create the veth pair a <-> b (and bring both ends up if `up`). */
static inline void autd3_test_veth(const char *a, const char *b, int up) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "ip link add %s type veth peer name %s", a, b);
  if (system(cmd) != 0) SKIP("cannot create a veth pair in the private namespace (ip/veth missing)");
  snprintf(cmd, sizeof cmd, "ip link set %s up && ip link set %s up", a, b);
  if (up && system(cmd) != 0) SKIP("cannot bring the veth pair up");
}

/* Both: a private namespace with the veth pair a <-> b up. */
static inline void autd3_test_netns_veth(const char *name, const char *a, const char *b) {
  autd3_test_reexec_unshare("-rn", name);
  autd3_test_veth(a, b, 1);
}

/* What an adapter description starts with for a veth end (src/nic/nic_os_posix.c): "driver veth, "
 * where the host answers ETHTOOL_GDRVINFO, "" where it does not (qemu-user does not carry the
 * ioctl), asked the way the library asks so that the expectation follows the host, not the test. */
static inline const char *autd3_test_veth_desc_prefix(const char *ifname) {
#if defined(__linux__)
  struct ethtool_drvinfo di;
  struct ifreq ifr;
  memset(&di, 0, sizeof di);
  memset(&ifr, 0, sizeof ifr);
  di.cmd = ETHTOOL_GDRVINFO;
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
  ifr.ifr_data = (char *)&di;
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  int ok = s >= 0 && ioctl(s, SIOCETHTOOL, &ifr) == 0 && di.driver[0];
  if (s >= 0) close(s);
  return ok ? "driver veth, " : "";
#else
  (void)ifname;
  return "";
#endif
}

#endif
