/*
 * The libpcap calls the pcap back end (nic_pcap.c) makes, as one table, filled
 * from the libpcap loaded at run time (pcap_load.h: libpcap on Linux and
 * macOS, Npcap's wpcap.dll on Windows). The declarations are libpcap's stable
 * ABI (pcap/pcap.h), spelled here because the MinGW and MSVC toolchains and
 * Zig's macOS SDK have no pcap.h; tests/nic/pcap_abi.c checks them against it.
 */
#ifndef AUTD3_NIC_PCAP_API_H
#define AUTD3_NIC_PCAP_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autd3/error.h"

#define AUTD3_PCAP_ERRBUF_SIZE 256        /* PCAP_ERRBUF_SIZE */
#define AUTD3_PCAP_ERROR_NO_SUCH_DEVICE (-5)
#define AUTD3_PCAP_ERROR_PERM_DENIED (-8)
#define AUTD3_PCAP_ERROR_PROMISC_PERM_DENIED (-11)
#define AUTD3_PCAP_D_IN 1                 /* pcap_direction_t PCAP_D_IN */
#define AUTD3_PCAP_NETMASK_UNKNOWN 0xffffffffu

typedef struct autd3__pcap autd3__pcap_t; /* pcap_t, opaque */

/* struct pcap_pkthdr: a struct timeval, then caplen and len. `long` gives the
 * timeval's layout on every target: two 4-byte longs on Windows (Winsock's
 * timeval), 8-byte ones on LP64 Linux; on macOS tv_usec is an int followed by
 * padding, the same offsets (pcap_posix.c checks the timeval). */
typedef struct autd3__pcap_pkthdr {
  long tv_sec, tv_usec;
  uint32_t caplen; /* bytes captured */
  uint32_t len;    /* bytes on the wire */
} autd3__pcap_pkthdr_t;

/* struct bpf_program */
typedef struct autd3__bpf_program {
  unsigned int bf_len;
  void *bf_insns;
} autd3__bpf_program_t;

/* pcap_if_t: one adapter of pcap_findalldevs(). */
typedef struct autd3__pcap_if {
  struct autd3__pcap_if *next;
  char *name;        /* Npcap: "\Device\NPF_{GUID}" */
  char *description; /* Npcap: the adapter's description; wine: the Linux interface name */
  void *addresses;
  uint32_t flags;
} autd3__pcap_if_t;

typedef struct autd3__pcap_api {
  autd3__pcap_t *(*create)(const char *source, char *errbuf);
  int (*set_snaplen)(autd3__pcap_t *p, int snaplen);
  int (*set_promisc)(autd3__pcap_t *p, int promisc);
  int (*set_timeout)(autd3__pcap_t *p, int to_ms);
  int (*set_immediate_mode)(autd3__pcap_t *p, int on); /* NULL: not offered (wine 8, WinPcap) */
  int (*activate)(autd3__pcap_t *p);
  int (*setdirection)(autd3__pcap_t *p, int dir); /* NULL: not offered (wine stubs it) */
  int (*compile)(autd3__pcap_t *p, autd3__bpf_program_t *fp, const char *str, int optimize, uint32_t netmask);
  int (*setfilter)(autd3__pcap_t *p, autd3__bpf_program_t *fp);
  void (*freecode)(autd3__bpf_program_t *fp);
  int (*setnonblock)(autd3__pcap_t *p, int nonblock, char *errbuf);
  int (*sendpacket)(autd3__pcap_t *p, const uint8_t *buf, int size); /* 0 = sent */
  int (*next_ex)(autd3__pcap_t *p, autd3__pcap_pkthdr_t **h, const uint8_t **data);
  char *(*geterr)(autd3__pcap_t *p);
  const char *(*statustostr)(int error);
  void (*close)(autd3__pcap_t *p);
  int (*findalldevs)(autd3__pcap_if_t **alldevs, char *errbuf);
  void (*freealldevs)(autd3__pcap_if_t *alldevs);
  const char *(*lib_version)(void);
  /* Not libpcap's: the platform's way to wait until `p` may have a frame,
   * at most `ns` (poll() on the selectable descriptor; Npcap's read event;
   * short sleeps where neither exists). AUTD3_E_IO with a message naming
   * `ifname` only when the wait itself failed; early returns are fine. */
  autd3_err_t (*wait)(autd3__pcap_t *p, const char *ifname, uint64_t ns);
  /* A pollable descriptor for nic.h's autd3__nic_fd, or -1. */
  int (*selectable_fd)(autd3__pcap_t *p);
} autd3__pcap_api_t;

/* The table of this process: libpcap loaded once (pcap_load.h; the error
 * says what to install when it cannot be loaded). */
autd3_err_t autd3__pcap_api(const autd3__pcap_api_t **out);

#endif
