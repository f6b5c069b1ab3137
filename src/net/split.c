/* "host:port" / "[v6]:port" parsing, and connecting by name or by address
 * on the back end's resolve + connect_resolved (net.h): portable, shared by
 * the POSIX and the Windows socket layers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "net/net.h"

autd3_err_t autd3__net_split(const char *addr, char *host, size_t host_cap, char *port, size_t port_cap, const char *what) {
  if (addr == NULL || *addr == 0) return autd3_set_error(AUTD3_E_INVALID_OPTION, "%s: empty address (expected host:port)", what);
  const char *h = addr, *colon;
  size_t hl;
  if (addr[0] == '[') { /* [v6]:port */
    const char *close_br = strchr(addr, ']');
    if (close_br == NULL || close_br[1] != ':')
      return autd3_set_error(AUTD3_E_INVALID_OPTION, "%s: \"%s\": expected [IPv6]:port", what, addr);
    h = addr + 1;
    hl = (size_t)(close_br - h);
    colon = close_br + 1;
  } else {
    colon = strrchr(addr, ':');
    if (colon == NULL)
      return autd3_set_error(AUTD3_E_INVALID_OPTION, "%s: \"%s\" has no port (expected host:port)", what, addr);
    if (strchr(addr, ':') != colon)
      return autd3_set_error(AUTD3_E_INVALID_OPTION, "%s: \"%s\": write an IPv6 address in brackets, e.g. [::1]:8080", what, addr);
    hl = (size_t)(colon - addr);
  }
  const char *p = colon + 1;
  char *end = NULL;
  long pv = strtol(p, &end, 10);
  if (*p == 0 || *end != 0 || pv < 0 || pv > 65535)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "%s: \"%s\": port must be 0..65535", what, addr);
  if (hl == 0 || hl >= host_cap) return autd3_set_error(AUTD3_E_INVALID_OPTION, "%s: \"%s\": empty or too long host", what, addr);
  memcpy(host, h, hl);
  host[hl] = 0;
  snprintf(port, port_cap, "%ld", pv);
  return AUTD3_OK;
}

autd3_err_t autd3__net_connect(const char *host, uint16_t port, uint32_t timeout_ms, const char *who, const char *refused_hint,
                               int *out) {
  autd3_net_addrs_t addrs;
  autd3_err_t err = autd3__net_resolve(host, port, who, &addrs);
  if (err != AUTD3_OK) return err;
  return autd3__net_connect_resolved(&addrs, timeout_ms, who, refused_hint, out);
}

autd3_err_t autd3__net_connect_addr(const char *addr, uint32_t timeout_ms, const char *who, const char *refused_hint, int *out) {
  char host[AUTD3_NET_HOST_MAX], port[8];
  char what[64];
  snprintf(what, sizeof what, "%s address", who);
  autd3_err_t err = autd3__net_split(addr, host, sizeof host, port, sizeof port, what);
  if (err) return err;
  return autd3__net_connect(host, (uint16_t)atoi(port), timeout_ms, who, refused_hint, out);
}
