/* Raw NIC front end: back-end choice, the calls of nic.h, adapter listing. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "autd3/link_driver.h"
#include "nic/nic_impl.h"

/* The checks every open starts with: the name is usable and the adapter exists. */
static autd3_err_t check_ifname(const char *ifname, autd3_nic_t **out) {
  if (!ifname || !*ifname || !out)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "nic: interface name is empty");
  *out = NULL;
  if (strlen(ifname) >= IF_NAMESIZE)
    return autd3_set_error(AUTD3_E_NO_INTERFACE, "nic: interface name \"%s\" is too long", ifname);
  if (if_nametoindex(ifname) == 0)
    return autd3_set_error(AUTD3_E_NO_INTERFACE, "nic: no network interface \"%s\"", ifname);
  return AUTD3_OK;
}

autd3_err_t autd3__nic_open(const char *ifname, autd3_nic_backend_t backend, autd3_nic_t **out) {
  autd3_err_t e = check_ifname(ifname, out);
  if (e != AUTD3_OK)
    return e;
  switch (backend) {
  case AUTD3_NIC_AUTO:
#ifdef __linux__
  case AUTD3_NIC_AF_PACKET:
    return autd3__nic_open_afpacket(ifname, out);
#else
    return autd3__nic_open_pcap(ifname, out);
  case AUTD3_NIC_AF_PACKET:
    return autd3_set_error(AUTD3_E_NOT_BUILT, "nic: AF_PACKET exists on Linux only");
#endif
  case AUTD3_NIC_PCAP:
    return autd3__nic_open_pcap(ifname, out);
  }
  return autd3_set_error(AUTD3_E_INVALID_OPTION, "nic: unknown back end %d", (int)backend);
}

autd3_err_t autd3__nic_open_tap(const char *ifname, autd3_nic_t **out) {
  autd3_err_t e = check_ifname(ifname, out);
  if (e != AUTD3_OK)
    return e;
#ifdef __linux__
  return autd3__nic_open_afpacket_tap(ifname, out);
#else
  return autd3_set_error(AUTD3_E_NOT_BUILT, "nic %s: a capture tap needs Linux AF_PACKET", ifname);
#endif
}

autd3_err_t autd3__nic_send(autd3_nic_t *nic, const uint8_t *frame, size_t len) {
  if (len < 14 || len > AUTD3_NIC_MAX_FRAME)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "nic %s: frame length %zu outside 14..%d", nic->ifname, len,
                           AUTD3_NIC_MAX_FRAME);
  return nic->ops->send(nic, frame, len);
}

autd3_err_t autd3__nic_recv(autd3_nic_t *nic, uint8_t *buf, size_t cap, size_t *len, uint64_t deadline_ns) {
  nic->rx_ns = 0;
  return nic->ops->recv(nic, buf, cap, len, deadline_ns);
}

uint64_t autd3__nic_rx_ns(const autd3_nic_t *nic) { return nic->rx_ns; }

void autd3__nic_mac(const autd3_nic_t *nic, uint8_t mac[6]) { memcpy(mac, nic->mac, 6); }
int autd3__nic_fd(const autd3_nic_t *nic) { return nic->ops->fd(nic); }
uint64_t autd3__nic_ignored(const autd3_nic_t *nic) { return nic->ignored; }
const char *autd3__nic_io_path(const autd3_nic_t *nic) { return nic->io_path ? nic->io_path : "unknown"; }

void autd3__nic_close(autd3_nic_t *nic) {
  if (nic)
    nic->ops->close(nic);
}

#ifndef AUTD3_HAVE_PCAP
autd3_err_t autd3__nic_open_pcap(const char *ifname, autd3_nic_t **out) {
  (void)out;
  return autd3_set_error(AUTD3_E_NOT_BUILT, "nic %s: libautd3 was built without libpcap (install libpcap-dev and rebuild)",
                         ifname);
}
#endif

void autd3__nic_os_mac(const char *ifname, uint8_t mac[6]) {
  memset(mac, 0, 6);
#ifdef SIOCGIFHWADDR
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  if (s < 0)
    return;
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  strncpy(ifr.ifr_name, ifname, IF_NAMESIZE - 1);
  if (ioctl(s, SIOCGIFHWADDR, &ifr) == 0)
    memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
  close(s);
#else
  (void)ifname;
#endif
}

autd3_err_t autd3__nic_list(char (*names)[32], size_t cap, size_t *count) {
  *count = 0;
  struct if_nameindex *list = if_nameindex();
  if (!list)
    return autd3_set_error(AUTD3_E_IO, "nic: cannot list interfaces: %s", strerror(errno));
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  for (struct if_nameindex *p = list; p->if_index != 0 && p->if_name; p++) {
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strncpy(ifr.ifr_name, p->if_name, IF_NAMESIZE - 1);
    if (s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
      if (!(ifr.ifr_flags & IFF_UP) || (ifr.ifr_flags & IFF_LOOPBACK))
        continue;
    }
    if (*count < cap && strlen(p->if_name) < 32)
      strcpy(names[(*count)++], p->if_name);
  }
  if (s >= 0)
    close(s);
  if_freenameindex(list);
  return AUTD3_OK;
}
