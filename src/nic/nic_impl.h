/* Private to src/nic: the back-end table behind nic.h. Each back end embeds
 * `autd3_nic_t` as the first member of its own handle. */
#ifndef AUTD3_NIC_NIC_IMPL_H
#define AUTD3_NIC_NIC_IMPL_H

#include <stdatomic.h>

#include "nic/nic.h"

typedef struct autd3_nic_ops {
  autd3_err_t (*send)(autd3_nic_t *nic, const uint8_t *frame, size_t len);
  autd3_err_t (*recv)(autd3_nic_t *nic, uint8_t *buf, size_t cap, size_t *len, uint64_t deadline_ns);
  int (*fd)(const autd3_nic_t *nic);
  void (*close)(autd3_nic_t *nic);
  /* optional (NULL: sends are visible already): let the adapter's taps see this handle's sends */
  void (*sends_to_taps)(autd3_nic_t *nic);
} autd3_nic_ops_t;

struct autd3_nic {
  const autd3_nic_ops_t *ops;
  uint8_t mac[6];
  _Atomic uint64_t ignored; /* written by the owning thread, read by anyone (diagnostics) */
  const char *io_path;      /* static text for autd3__nic_io_path() */
  uint64_t rx_ns;           /* autd3__nic_rx_ns(): set by the back end on every frame returned, 0 = unknown */
  char *ifname;             /* the OS name the adapter was opened by; set and freed by nic.c */
};

/* Back-end open functions; `ifname` is the OS name (autd3__nic_os_resolve). */
autd3_err_t autd3__nic_open_afpacket(const char *ifname, autd3_nic_t **out);
autd3_err_t autd3__nic_open_pcap(const char *ifname, autd3_nic_t **out);
/* Tap mode (see autd3__nic_open_tap): AF_PACKET on Linux, libpcap elsewhere. */
autd3_err_t autd3__nic_open_afpacket_tap(const char *ifname, autd3_nic_t **out);
autd3_err_t autd3__nic_open_pcap_tap(const char *ifname, autd3_nic_t **out);

/* ---- the OS's adapters (nic_os_posix.c; wpcap.c on Windows) ---- */
/* The OS name of the adapter the user named (allocated; free()), or
 * NO_INTERFACE with a message (ambiguous names list their candidates). */
autd3_err_t autd3__nic_os_resolve(const char *user, char **os_name);
/* Adapter MAC via the OS (zeros if unknown). */
void autd3__nic_os_mac(const char *os_name, uint8_t mac[6]);
/* Adapters that are up (and those that are down with `include_down`), loopback excluded: see autd3__nic_names. */
autd3_err_t autd3__nic_os_list(autd3_nic_names_t *out, bool include_down);
/* autd3__nic_probe's checks of an existing adapter (OS name): PERMISSION, NO_DEVICE (down). */
autd3_err_t autd3__nic_os_probe(const char *os_name, const char *who, bool promiscuous);
/* Append copies of `name` and `desc` (NULL = "") to `l`: NOMEM with a message. */
autd3_err_t autd3__nic_names_add(autd3_nic_names_t *l, const char *name, const char *desc, bool down);

#endif
