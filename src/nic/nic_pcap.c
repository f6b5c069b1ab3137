/*
 * libpcap back end of nic.h: the route to Windows (Npcap's wpcap.dll loaded
 * at run time) and macOS; also works (and is tested) on Linux. The libpcap
 * calls come through one table (pcap_api.h), filled from the libpcap loaded at
 * run time (pcap_load.c).
 *
 * Immediate mode where offered (no buffering delay), promiscuous, a BPF
 * filter for EtherType 0x88A4, and PCAP_D_IN where offered so our own
 * transmissions are not read back; the checks are repeated per frame because
 * not every platform honours them. Without a direction filter (wine's
 * wpcap.dll stubs it) a frame whose source MAC is the one this handle last
 * sent from, or the adapter's, is ours coming back: dropped. EtherCAT
 * devices set bit 0x02 of the source MAC in the frames they return, so their
 * replies never match. Non-blocking; the table's wait() blocks until a frame
 * may be there or the deadline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "nic/nic_impl.h"
#include "nic/pcap_load.h"
#include "platform/platform.h"

typedef struct pc {
  autd3_nic_t base;
  const autd3__pcap_api_t *api;
  autd3__pcap_t *p;
  bool check_src;     /* no direction filter: drop frames from our own source MACs */
  bool sent_any;
  uint8_t sent_src[6]; /* source MAC of the last frame sent */
} pc_t;

static autd3_err_t pc_send(autd3_nic_t *nic, const uint8_t *frame, size_t len) {
  pc_t *c = (pc_t *)nic;
  if (c->check_src && (!c->sent_any || memcmp(c->sent_src, frame + 6, 6) != 0)) {
    memcpy(c->sent_src, frame + 6, 6);
    c->sent_any = true;
  }
  if (c->api->sendpacket(c->p, frame, (int)len) != 0)
    return autd3_set_error(AUTD3_E_IO, "nic %s (pcap): send of %zu bytes failed: %s", nic->ifname, len,
                           c->api->geterr(c->p));
  return AUTD3_OK;
}

static bool ours(const pc_t *c, const uint8_t *data) {
  return c->check_src && (memcmp(data + 6, c->base.mac, 6) == 0 || (c->sent_any && memcmp(data + 6, c->sent_src, 6) == 0));
}

static autd3_err_t pc_recv(autd3_nic_t *nic, uint8_t *buf, size_t cap, size_t *len, uint64_t deadline_ns) {
  pc_t *c = (pc_t *)nic;
  for (;;) {
    autd3__pcap_pkthdr_t *h;
    const uint8_t *data;
    int r = c->api->next_ex(c->p, &h, &data);
    if (r == 1) {
      if (h->caplen != h->len || h->caplen > cap || h->caplen < 14 ||
          ((data[12] << 8) | data[13]) != AUTD3_ETHERTYPE_ECAT || ours(c, data)) {
        nic->ignored++; /* truncated, foreign, or sent by us unchanged */
        continue;
      }
      memcpy(buf, data, h->caplen);
      *len = h->caplen;
      return AUTD3_OK;
    }
    if (r < 0)
      return autd3_set_error(AUTD3_E_IO, "nic %s (pcap): receive failed: %s", nic->ifname, c->api->geterr(c->p));
    uint64_t now = autd3__now_ns();
    if (deadline_ns == 0 || now >= deadline_ns)
      return AUTD3_E_TIMEOUT;
    autd3_err_t e = c->api->wait(c->p, nic->ifname, deadline_ns - now);
    if (e != AUTD3_OK)
      return e;
  }
}

static int pc_fd(const autd3_nic_t *nic) {
  const pc_t *c = (const pc_t *)nic;
  return c->api->selectable_fd(c->p);
}

static void pc_close(autd3_nic_t *nic) {
  pc_t *c = (pc_t *)nic;
  c->api->close(c->p);
  free(c);
}

static const autd3_nic_ops_t pc_ops = {pc_send, pc_recv, pc_fd, pc_close, NULL};

/* `tap`: both directions, frames this process sends on other handles too
 * (nic.h autd3__nic_open_tap); libpcap sees those unless told otherwise. */
static autd3_err_t pc_open(const char *ifname, bool tap, autd3_nic_t **out) {
  const autd3__pcap_api_t *api;
  autd3_err_t e = autd3__pcap_api(&api);
  if (e != AUTD3_OK)
    return e;
  char eb[AUTD3_PCAP_ERRBUF_SIZE] = "";
  autd3__pcap_t *p = api->create(ifname, eb);
  if (!p)
    return autd3_set_error(AUTD3_E_NO_INTERFACE, "nic %s (pcap): %s", ifname, eb);
  api->set_snaplen(p, AUTD3_NIC_MAX_FRAME);
  api->set_promisc(p, 1);
  if (api->set_immediate_mode)
    api->set_immediate_mode(p, 1);
  /* 1 ms: without immediate mode (wine 8) frames wait this long in the
   * capture buffer; 0 would mean "wait forever" to some platforms. */
  api->set_timeout(p, 1);
  int r = api->activate(p);
  if (r < 0) {
    if (r == AUTD3_PCAP_ERROR_PERM_DENIED || r == AUTD3_PCAP_ERROR_PROMISC_PERM_DENIED)
      e = autd3_set_error(AUTD3_E_PERMISSION, "nic %s (pcap): capturing needs %s (%s)", ifname,
                          autd3__pcap_os_permission_hint(), api->geterr(p));
    else if (r == AUTD3_PCAP_ERROR_NO_SUCH_DEVICE)
      e = autd3_set_error(AUTD3_E_NO_INTERFACE, "nic: no network interface \"%s\" (pcap)", ifname);
    else
      e = autd3_set_error(AUTD3_E_IO, "nic %s (pcap): activate failed: %s (%s)", ifname, api->statustostr(r),
                          api->geterr(p));
    api->close(p);
    return e;
  }
  bool check_src = !tap && (api->setdirection == NULL || api->setdirection(p, AUTD3_PCAP_D_IN) != 0);
  autd3__bpf_program_t prog;
  if (api->compile(p, &prog, "ether proto 0x88a4", 1, AUTD3_PCAP_NETMASK_UNKNOWN) == 0) {
    (void)api->setfilter(p, &prog);
    api->freecode(&prog);
  }
  if (api->setnonblock(p, 1, eb) < 0) {
    e = autd3_set_error(AUTD3_E_IO, "nic %s (pcap): %s", ifname, eb);
    api->close(p);
    return e;
  }
  pc_t *c = calloc(1, sizeof *c);
  if (!c) {
    api->close(p);
    return autd3_set_error(AUTD3_E_NOMEM, "nic %s: out of memory", ifname);
  }
  c->base.ops = &pc_ops;
  c->api = api;
  c->base.io_path = tap ? "libpcap (tap)" : "libpcap";
  c->p = p;
  c->check_src = check_src;
  autd3__nic_os_mac(ifname, c->base.mac);
  *out = &c->base;
  return AUTD3_OK;
}

autd3_err_t autd3__nic_open_pcap(const char *ifname, autd3_nic_t **out) { return pc_open(ifname, false, out); }
autd3_err_t autd3__nic_open_pcap_tap(const char *ifname, autd3_nic_t **out) { return pc_open(ifname, true, out); }
