/* The OS's adapters on Linux (and other POSIX systems with if_nameindex):
 * names, listing, flags and the checks of autd3__nic_probe (nic_impl.h); the
 * MAC is nic_mac_posix.c's. */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#ifdef __linux__
#include <linux/ethtool.h>
#include <linux/sockios.h>
#endif

#include "autd3/link_driver.h"
#include "nic/nic_impl.h"

/* A zeroed ifreq naming `os_name` (resolved names fit: shorter than IF_NAMESIZE). */
static void ifreq_for(struct ifreq *ifr, const char *os_name) {
  memset(ifr, 0, sizeof *ifr);
  strncpy(ifr->ifr_name, os_name, sizeof ifr->ifr_name - 1);
}

autd3_err_t autd3__nic_os_resolve(const char *user, char **os_name) {
  *os_name = NULL;
  size_t n = strlen(user);
  if (n >= IF_NAMESIZE)
    return autd3_set_error(AUTD3_E_NO_INTERFACE, "nic: interface name \"%s\" is too long (at most %d bytes)", user,
                           IF_NAMESIZE - 1);
  if (if_nametoindex(user) == 0)
    return autd3_set_error(AUTD3_E_NO_INTERFACE, "nic: no network interface \"%s\"", user);
  if ((*os_name = malloc(n + 1)) == NULL)
    return autd3_set_error(AUTD3_E_NOMEM, "nic: out of memory");
  memcpy(*os_name, user, n + 1);
  return AUTD3_OK;
}

/* A description of adapter `name`: its driver (Linux: ETHTOOL_GDRVINFO), MAC address and carrier. */
static void describe(int s, const char *name, bool running, char *out, size_t cap) {
  size_t len = 0;
  out[0] = 0;
#ifdef __linux__
  struct ethtool_drvinfo di;
  struct ifreq ifr;
  memset(&di, 0, sizeof di);
  ifreq_for(&ifr, name);
  di.cmd = ETHTOOL_GDRVINFO;
  ifr.ifr_data = (void *)&di;
  if (s >= 0 && ioctl(s, SIOCETHTOOL, &ifr) == 0 && di.driver[0])
    len += (size_t)snprintf(out, cap, "driver %.32s%s%.32s%s", di.driver, di.bus_info[0] ? " (" : "", di.bus_info,
                            di.bus_info[0] ? ")" : "");
#else
  (void)s;
#endif
  uint8_t mac[6];
  autd3__nic_os_mac(name, mac);
  if (len < cap && (mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]))
    len += (size_t)snprintf(out + len, cap - len, "%sMAC %02x:%02x:%02x:%02x:%02x:%02x", len ? ", " : "", mac[0], mac[1], mac[2],
                            mac[3], mac[4], mac[5]);
  if (len < cap)
    snprintf(out + len, cap - len, "%s%s", len ? ", " : "", running ? "carrier" : "no carrier");
}

autd3_err_t autd3__nic_os_list(autd3_nic_names_t *out, bool include_down) {
  struct if_nameindex *list = if_nameindex();
  if (!list)
    return autd3_set_error(AUTD3_E_IO, "nic: cannot list interfaces: %s", strerror(errno));
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  autd3_err_t e = AUTD3_OK;
  for (struct if_nameindex *p = list; e == AUTD3_OK && p->if_index != 0 && p->if_name; p++) {
    struct ifreq ifr;
    ifreq_for(&ifr, p->if_name);
    bool down = false, running = true;
    if (s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
      if (ifr.ifr_flags & IFF_LOOPBACK)
        continue;
      down = !(ifr.ifr_flags & IFF_UP);
      running = (ifr.ifr_flags & IFF_RUNNING) != 0;
      if (down && !include_down)
        continue;
    }
    char desc[160];
    describe(s, p->if_name, running, desc, sizeof desc);
    e = autd3__nic_names_add(out, p->if_name, desc, down);
  }
  if (s >= 0)
    close(s);
  if_freenameindex(list);
  return e;
}

bool autd3__nic_is_loopback(const char *os_name) {
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  if (s < 0)
    return false;
  struct ifreq ifr;
  ifreq_for(&ifr, os_name);
  bool lo = ioctl(s, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_LOOPBACK);
  close(s);
  return lo;
}

/* Linux: the raw socket a master library opens (AF_PACKET, CAP_NET_RAW) and,
 * with `promiscuous`, the flag change SOEM's Linux port makes itself
 * (SIOCSIFFLAGS, CAP_NET_ADMIN; setting the flags the adapter already has is
 * a no-op that still needs it). Elsewhere raw access is the master library's
 * own (BPF through libpcap, which sets promiscuous mode itself), so only the
 * adapter's flags are read. */
#ifdef __linux__
static int probe_socket(const char *os_name, const char *who, autd3_err_t *err) {
  int fd = socket(PF_PACKET, SOCK_RAW, htons(AUTD3_ETHERTYPE_ECAT));
  int e = errno;
  if (fd < 0 && (e == EPERM || e == EACCES))
    *err = autd3_set_error(AUTD3_E_PERMISSION,
                           "%s: raw socket on \"%s\" refused (%s): needs CAP_NET_RAW and CAP_NET_ADMIN (run as root, or "
                           "setcap cap_net_raw,cap_net_admin+ep on the program)",
                           who, os_name, strerror(e));
  else if (fd < 0)
    *err = autd3_set_error(AUTD3_E_IO, "%s: cannot open a raw socket on \"%s\": %s", who, os_name, strerror(e));
  return fd;
}
static bool promiscuous_refused(int fd, struct ifreq *ifr, bool promiscuous) {
  return promiscuous && ioctl(fd, SIOCSIFFLAGS, ifr) != 0 && (errno == EPERM || errno == EACCES);
}
#else
static int probe_socket(const char *os_name, const char *who, autd3_err_t *err) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0)
    *err = autd3_set_error(AUTD3_E_IO, "%s: cannot read the flags of \"%s\": %s", who, os_name, strerror(errno));
  return fd;
}
static bool promiscuous_refused(int fd, struct ifreq *ifr, bool promiscuous) {
  (void)fd, (void)ifr, (void)promiscuous;
  return false;
}
#endif

autd3_err_t autd3__nic_os_probe(const char *os_name, const char *who, bool promiscuous) {
  autd3_err_t err = AUTD3_OK;
  int fd = probe_socket(os_name, who, &err);
  if (fd < 0)
    return err;
  struct ifreq ifr;
  ifreq_for(&ifr, os_name);
  if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
    if (promiscuous_refused(fd, &ifr, promiscuous))
      err = autd3_set_error(AUTD3_E_PERMISSION,
                            "%s: setting promiscuous mode on \"%s\" refused: needs CAP_NET_ADMIN as well as CAP_NET_RAW", who,
                            os_name);
    else if (!(ifr.ifr_flags & IFF_UP))
      err = autd3_set_error(AUTD3_E_NO_DEVICE, "%s: network interface \"%s\" is down (ip link set %s up)", who, os_name,
                            os_name);
  }
  close(fd);
  return err;
}
