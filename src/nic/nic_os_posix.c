/* The OS's adapters on Linux (and other POSIX systems with if_nameindex):
 * names, MAC (SIOCGIFHWADDR where it exists), listing (nic_impl.h). */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "autd3/link_driver.h"
#include "nic/nic_impl.h"

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

void autd3__nic_os_mac(const char *os_name, uint8_t mac[6]) {
  memset(mac, 0, 6);
#ifdef SIOCGIFHWADDR
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  if (s < 0)
    return;
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  strncpy(ifr.ifr_name, os_name, IF_NAMESIZE - 1);
  if (ioctl(s, SIOCGIFHWADDR, &ifr) == 0)
    memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
  close(s);
#else
  (void)os_name;
#endif
}

autd3_err_t autd3__nic_os_list(autd3_nic_names_t *out) {
  struct if_nameindex *list = if_nameindex();
  if (!list)
    return autd3_set_error(AUTD3_E_IO, "nic: cannot list interfaces: %s", strerror(errno));
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  autd3_err_t e = AUTD3_OK;
  for (struct if_nameindex *p = list; e == AUTD3_OK && p->if_index != 0 && p->if_name; p++) {
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strncpy(ifr.ifr_name, p->if_name, IF_NAMESIZE - 1);
    if (s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
      if (!(ifr.ifr_flags & IFF_UP) || (ifr.ifr_flags & IFF_LOOPBACK))
        continue;
    }
    e = autd3__nic_names_add(out, p->if_name, NULL);
  }
  if (s >= 0)
    close(s);
  if_freenameindex(list);
  return e;
}
