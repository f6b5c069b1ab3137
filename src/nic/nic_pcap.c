/*
 * libpcap back end of nic.h: the route to macOS and Windows (Npcap); also
 * works (and is tested) on Linux.
 *
 * Immediate mode (no buffering delay), promiscuous, a BPF filter for
 * EtherType 0x88A4, and PCAP_D_IN so our own transmissions are not read back;
 * the same checks are repeated per frame because not every platform honours
 * the direction. Non-blocking; waiting is done with poll() on the selectable
 * descriptor (where the platform has one), else by short sleeps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autd3/link_driver.h"
#include "nic/nic_impl.h"
#include "platform/platform.h"

typedef struct pc {
  autd3_nic_t base;
  pcap_t *p;
  int fd;
  bool check_src; /* the direction filter is unsupported: drop frames with our source MAC */
} pc_t;

static autd3_err_t pc_send(autd3_nic_t *nic, const uint8_t *frame, size_t len) {
  pc_t *c = (pc_t *)nic;
  if (pcap_inject(c->p, frame, len) != (int)len)
    return autd3_set_error(AUTD3_E_IO, "nic %s (pcap): send of %zu bytes failed: %s", nic->ifname, len,
                           pcap_geterr(c->p));
  return AUTD3_OK;
}

static autd3_err_t pc_recv(autd3_nic_t *nic, uint8_t *buf, size_t cap, size_t *len, uint64_t deadline_ns) {
  pc_t *c = (pc_t *)nic;
  for (;;) {
    struct pcap_pkthdr *h;
    const u_char *data;
    int r = pcap_next_ex(c->p, &h, &data);
    if (r == 1) {
      if (h->caplen != h->len || h->caplen > cap || h->caplen < 14 ||
          ((data[12] << 8) | data[13]) != AUTD3_ETHERTYPE_ECAT || (c->check_src && memcmp(data + 6, nic->mac, 6) == 0)) {
        nic->ignored++; /* truncated, foreign, or sent by us unchanged */
        continue;
      }
      memcpy(buf, data, h->caplen);
      *len = h->caplen;
      return AUTD3_OK;
    }
    if (r < 0)
      return autd3_set_error(AUTD3_E_IO, "nic %s (pcap): receive failed: %s", nic->ifname, pcap_geterr(c->p));
    uint64_t now = autd3__now_ns();
    if (deadline_ns == 0 || now >= deadline_ns)
      return AUTD3_E_TIMEOUT;
    uint64_t rem = deadline_ns - now;
    if (c->fd >= 0) {
      struct pollfd p = {.fd = c->fd, .events = POLLIN};
#ifdef __linux__
      struct timespec ts = {(time_t)(rem / 1000000000u), (long)(rem % 1000000000u)};
      int pr = ppoll(&p, 1, &ts, NULL);
#else /* macOS/BSD: no ppoll; millisecond poll, rounded up */
      int pr = poll(&p, 1, (int)((rem + 999999u) / 1000000u));
#endif
      if (pr < 0 && errno != EINTR)
        return autd3_set_error(AUTD3_E_IO, "nic %s (pcap): poll failed: %s", nic->ifname, strerror(errno));
    } else {
      autd3__sleep_ns(rem < 50000 ? rem : 50000);
    }
  }
}

static int pc_fd(const autd3_nic_t *nic) { return ((const pc_t *)nic)->fd; }

static void pc_close(autd3_nic_t *nic) {
  pc_t *c = (pc_t *)nic;
  pcap_close(c->p);
  free(c);
}

static const autd3_nic_ops_t pc_ops = {pc_send, pc_recv, pc_fd, pc_close};

autd3_err_t autd3__nic_open_pcap(const char *ifname, autd3_nic_t **out) {
  char eb[PCAP_ERRBUF_SIZE] = "";
  pcap_t *p = pcap_create(ifname, eb);
  if (!p)
    return autd3_set_error(AUTD3_E_NO_INTERFACE, "nic %s (pcap): %s", ifname, eb);
  pcap_set_snaplen(p, AUTD3_NIC_MAX_FRAME);
  pcap_set_promisc(p, 1);
  pcap_set_immediate_mode(p, 1);
  pcap_set_timeout(p, 1);
  int r = pcap_activate(p);
  if (r < 0) {
    autd3_err_t e;
    if (r == PCAP_ERROR_PERM_DENIED || r == PCAP_ERROR_PROMISC_PERM_DENIED)
      e = autd3_set_error(AUTD3_E_PERMISSION,
                          "nic %s (pcap): capturing needs CAP_NET_RAW and CAP_NET_ADMIN: run as root, or grant them "
                          "once with `sudo setcap cap_net_raw,cap_net_admin+ep <your program>` (%s)",
                          ifname, pcap_geterr(p));
    else if (r == PCAP_ERROR_NO_SUCH_DEVICE)
      e = autd3_set_error(AUTD3_E_NO_INTERFACE, "nic: no network interface \"%s\" (pcap)", ifname);
    else
      e = autd3_set_error(AUTD3_E_IO, "nic %s (pcap): activate failed: %s", ifname, pcap_statustostr(r));
    pcap_close(p);
    return e;
  }
  bool check_src = pcap_setdirection(p, PCAP_D_IN) != 0;
  struct bpf_program prog;
  if (pcap_compile(p, &prog, "ether proto 0x88a4", 1, PCAP_NETMASK_UNKNOWN) == 0) {
    (void)pcap_setfilter(p, &prog);
    pcap_freecode(&prog);
  }
  if (pcap_setnonblock(p, 1, eb) < 0) {
    autd3_err_t e = autd3_set_error(AUTD3_E_IO, "nic %s (pcap): %s", ifname, eb);
    pcap_close(p);
    return e;
  }
  pc_t *c = calloc(1, sizeof *c);
  if (!c) {
    pcap_close(p);
    return autd3_set_error(AUTD3_E_NOMEM, "nic %s: out of memory", ifname);
  }
  c->base.ops = &pc_ops;
  c->base.io_path = "libpcap";
  c->p = p;
  c->fd = pcap_get_selectable_fd(p);
  c->check_src = check_src;
  snprintf(c->base.ifname, sizeof c->base.ifname, "%s", ifname);
  autd3__nic_os_mac(ifname, c->base.mac);
  *out = &c->base;
  return AUTD3_OK;
}
