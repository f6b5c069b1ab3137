/* Raw NIC front end: back-end choice, the calls of nic.h, adapter lists.
 * Portable: the OS's adapters are nic_os_posix.c's or wpcap.c's. */
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "nic/nic_impl.h"

autd3_err_t autd3__nic_resolve(const char *ifname, char **os_name) {
  *os_name = NULL;
  if (!ifname || !*ifname)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "nic: interface name is empty");
  return autd3__nic_os_resolve(ifname, os_name);
}

autd3_err_t autd3__nic_probe(const char *ifname, const char *who, bool promiscuous, char *os_name, size_t cap) {
  if (os_name == NULL || cap == 0)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "nic: no place for the adapter's name");
  os_name[0] = 0;
  char *name = NULL;
  autd3_err_t e = autd3__nic_resolve(ifname, &name);
  if (e != AUTD3_OK)
    return e;
  size_t len = strlen(name);
  if (len >= cap)
    e = autd3_set_error(AUTD3_E_NO_INTERFACE, "%s: the adapter's name \"%s\" is longer than %zu bytes", who ? who : "nic", name,
                        cap - 1);
  else if ((e = autd3__nic_os_probe(name, who ? who : "nic", promiscuous)) == AUTD3_OK)
    memcpy(os_name, name, len + 1);
  free(name);
  return e;
}

static autd3_err_t open_with(const char *ifname, autd3_err_t (*fn)(const char *, autd3_nic_t **), autd3_nic_t **out) {
  if (!out)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "nic: no place for the handle");
  *out = NULL;
  char *os_name = NULL;
  autd3_err_t e = autd3__nic_resolve(ifname, &os_name);
  if (e != AUTD3_OK)
    return e;
  if ((e = fn(os_name, out)) != AUTD3_OK) {
    free(os_name);
    return e;
  }
  (*out)->ifname = os_name;
  return AUTD3_OK;
}

#ifdef __linux__
#define AUTO_OPEN autd3__nic_open_afpacket
#else
#define AUTO_OPEN autd3__nic_open_pcap
static autd3_err_t no_afpacket(const char *ifname, autd3_nic_t **out) {
  (void)ifname, (void)out;
  return autd3_set_error(AUTD3_E_NOT_BUILT, "nic: AF_PACKET exists on Linux only");
}
#define autd3__nic_open_afpacket no_afpacket
#endif

autd3_err_t autd3__nic_open(const char *ifname, autd3_nic_backend_t backend, autd3_nic_t **out) {
  switch (backend) {
  case AUTD3_NIC_AUTO:
    return open_with(ifname, AUTO_OPEN, out);
  case AUTD3_NIC_AF_PACKET:
    return open_with(ifname, autd3__nic_open_afpacket, out);
  case AUTD3_NIC_PCAP:
    return open_with(ifname, autd3__nic_open_pcap, out);
  }
  return autd3_set_error(AUTD3_E_INVALID_OPTION, "nic: unknown back end %d", (int)backend);
}

#ifdef __linux__
#define TAP_OPEN autd3__nic_open_afpacket_tap
#else
#define TAP_OPEN autd3__nic_open_pcap_tap
#endif
autd3_err_t autd3__nic_open_tap(const char *ifname, autd3_nic_t **out) { return open_with(ifname, TAP_OPEN, out); }

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

void autd3__nic_sends_to_taps(autd3_nic_t *nic) {
  if (nic && nic->ops->sends_to_taps)
    nic->ops->sends_to_taps(nic);
}

void autd3__nic_close(autd3_nic_t *nic) {
  if (!nic)
    return;
  char *name = nic->ifname;
  nic->ops->close(nic);
  free(name);
}

#ifndef AUTD3_HAVE_PCAP
autd3_err_t autd3__nic_open_pcap(const char *ifname, autd3_nic_t **out) {
  (void)out;
  return autd3_set_error(AUTD3_E_NOT_BUILT, "nic %s: libautd3 was built without its libpcap back end (AUTD3_WITH_PCAP=OFF)",
                         ifname);
}
autd3_err_t autd3__nic_open_pcap_tap(const char *ifname, autd3_nic_t **out) { return autd3__nic_open_pcap(ifname, out); }
#endif

autd3_err_t autd3__nic_names(autd3_nic_names_t *out) {
  memset(out, 0, sizeof *out);
  return autd3__nic_os_list(out, false);
}

autd3_err_t autd3__nic_names_all(autd3_nic_names_t *out) {
  memset(out, 0, sizeof *out);
  return autd3__nic_os_list(out, true);
}

static char *dup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

autd3_err_t autd3__nic_names_add(autd3_nic_names_t *l, const char *name, const char *desc, bool down) {
  char **nn = realloc(l->name, (l->count + 1) * sizeof *nn);
  if (nn)
    l->name = nn;
  char **dd = realloc(l->desc, (l->count + 1) * sizeof *dd);
  if (dd)
    l->desc = dd;
  bool *dn = realloc(l->down, (l->count + 1) * sizeof *dn);
  if (dn)
    l->down = dn;
  char *n = dup(name), *d = dup(desc ? desc : "");
  if (!nn || !dd || !dn || !n || !d) {
    free(n);
    free(d);
    return autd3_set_error(AUTD3_E_NOMEM, "nic: out of memory listing adapters");
  }
  l->name[l->count] = n;
  l->desc[l->count] = d;
  l->down[l->count] = down;
  l->count++;
  return AUTD3_OK;
}

void autd3__nic_names_free(autd3_nic_names_t *l) {
  if (!l)
    return;
  for (size_t i = 0; i < l->count; i++) {
    free(l->name[i]);
    free(l->desc[i]);
  }
  free(l->name);
  free(l->desc);
  free(l->down);
  memset(l, 0, sizeof *l);
}

autd3_err_t autd3__nic_list(char (*names)[32], size_t cap, size_t *count) {
  *count = 0;
  autd3_nic_names_t l;
  autd3_err_t e = autd3__nic_names(&l);
  for (size_t i = 0; e == AUTD3_OK && i < l.count && *count < cap; i++)
    if (strlen(l.name[i]) < 32)
      strcpy(names[(*count)++], l.name[i]);
  autd3__nic_names_free(&l);
  return e;
}
