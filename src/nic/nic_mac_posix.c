/* An adapter's MAC on Linux and macOS (nic_impl.h autd3__nic_os_mac), from
 * getifaddrs(): the adapter's link-level entry (Linux AF_PACKET, BSD and
 * macOS AF_LINK) carries its hardware address. */
#define _DEFAULT_SOURCE
#include <ifaddrs.h>
#include <string.h>
#include <sys/socket.h>
#ifdef __linux__
#include <netpacket/packet.h>
#else
#include <net/if_dl.h>
#endif

#include "nic/nic_impl.h"

/* The 6-byte hardware address of a link-level entry, or false. */
static bool link_mac(const struct ifaddrs *a, uint8_t mac[6]) {
  if (a->ifa_addr == NULL)
    return false;
#ifdef __linux__
  const struct sockaddr_ll *l = (const struct sockaddr_ll *)(const void *)a->ifa_addr;
  if (a->ifa_addr->sa_family != AF_PACKET || l->sll_halen != 6)
    return false;
  memcpy(mac, l->sll_addr, 6);
#else
  struct sockaddr_dl *l = (struct sockaddr_dl *)(void *)a->ifa_addr;
  if (a->ifa_addr->sa_family != AF_LINK || l->sdl_alen != 6)
    return false;
  memcpy(mac, LLADDR(l), 6);
#endif
  return true;
}

void autd3__nic_os_mac(const char *os_name, uint8_t mac[6]) {
  memset(mac, 0, 6);
  struct ifaddrs *all;
  if (getifaddrs(&all) != 0)
    return;
  for (struct ifaddrs *a = all; a != NULL; a = a->ifa_next)
    if (a->ifa_name != NULL && strcmp(a->ifa_name, os_name) == 0 && link_mac(a, mac))
      break;
  freeifaddrs(all);
}
