/*
 * Npcap (or WinPcap) on Windows, loaded at run time: libautd3 starts on a
 * machine without it, and opening or listing an adapter then says what to
 * install. The few libpcap declarations needed are spelled here (the MinGW
 * toolchain has no pcap.h; their layout is libpcap's stable ABI, pcap/pcap.h).
 *
 * Npcap installs wpcap.dll in System32\Npcap (its own mode) and, when
 * installed "in WinPcap API-compatible Mode", also in System32; we try the
 * former first (Npcap's guide for applications), then the plain name.
 * Npcap-only calls (pcap_setmintocopy, pcap_sendqueue_*, ...) are not loaded:
 * wine's wpcap.dll exports some of them as stubs that abort when called.
 */
#ifndef AUTD3_NIC_WPCAP_H
#define AUTD3_NIC_WPCAP_H

#include <stddef.h>
#include <stdint.h>

#include "autd3/error.h"

#define AUTD3_WPCAP_ERRBUF_SIZE 256 /* PCAP_ERRBUF_SIZE */

/* pcap_if_t (pcap/pcap.h): one adapter of pcap_findalldevs(). */
typedef struct autd3__pcap_if {
  struct autd3__pcap_if *next;
  char *name;        /* "\Device\NPF_{GUID}" */
  char *description; /* Npcap: the adapter's description; wine: the Linux interface name */
  void *addresses;
  uint32_t flags;
} autd3__pcap_if_t;

typedef struct autd3__wpcap {
  int (*findalldevs)(autd3__pcap_if_t **alldevs, char *errbuf);
  void (*freealldevs)(autd3__pcap_if_t *alldevs);
  const char *(*lib_version)(void);
} autd3__wpcap_t;

/* Load wpcap.dll once (thread-safe) and return its table. Error:
 * AUTD3_E_NOT_BUILT naming Npcap and its WinPcap API-compatible mode. `dll`
 * overrides the library tried (tests; NULL = Npcap's, then wpcap.dll). */
autd3_err_t autd3__wpcap_load(const char *dll, const autd3__wpcap_t **out);

/* Adapters as (name, description) pairs, at most `cap`; `name_cap` and
 * `desc_cap` bytes each (longer ones are skipped, not cut: a cut name would
 * open nothing). */
autd3_err_t autd3__wpcap_list(char *names, size_t name_cap, char *descs, size_t desc_cap, size_t cap, size_t *count);

#endif
