/* The pcap back end's table (pcap_api.h) from the libpcap linked in (Linux,
 * macOS). Waits with poll() on the selectable descriptor. */
#define _GNU_SOURCE
#include <errno.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "autd3/link_driver.h"
#include "nic/pcap_api.h"
#include "platform/platform.h"

/* The table's declarations are pcap.h's ABI: check what nic_pcap.c reads. */
_Static_assert(offsetof(struct pcap_pkthdr, caplen) == offsetof(autd3__pcap_pkthdr_t, caplen), "pcap_pkthdr layout");
_Static_assert(offsetof(struct pcap_pkthdr, len) == offsetof(autd3__pcap_pkthdr_t, len), "pcap_pkthdr layout");
_Static_assert(sizeof(struct bpf_program) == sizeof(autd3__bpf_program_t), "bpf_program layout");
_Static_assert(offsetof(pcap_if_t, description) == offsetof(autd3__pcap_if_t, description), "pcap_if_t layout");
_Static_assert(PCAP_ERRBUF_SIZE == AUTD3_PCAP_ERRBUF_SIZE && PCAP_D_IN == AUTD3_PCAP_D_IN &&
                   PCAP_ERROR_NO_SUCH_DEVICE == AUTD3_PCAP_ERROR_NO_SUCH_DEVICE &&
                   PCAP_ERROR_PERM_DENIED == AUTD3_PCAP_ERROR_PERM_DENIED &&
                   PCAP_ERROR_PROMISC_PERM_DENIED == AUTD3_PCAP_ERROR_PROMISC_PERM_DENIED,
               "pcap constants");

/* Thin wrappers where pcap.h's types differ from the table's (opaque handle,
 * u_char, bpf_u_int32, enums): the compiler checks each call. */
#define P(x) ((pcap_t *)(x))
static autd3__pcap_t *w_create(const char *s, char *eb) { return (autd3__pcap_t *)pcap_create(s, eb); }
static int w_snaplen(autd3__pcap_t *p, int v) { return pcap_set_snaplen(P(p), v); }
static int w_promisc(autd3__pcap_t *p, int v) { return pcap_set_promisc(P(p), v); }
static int w_timeout(autd3__pcap_t *p, int v) { return pcap_set_timeout(P(p), v); }
static int w_immediate(autd3__pcap_t *p, int v) { return pcap_set_immediate_mode(P(p), v); }
static int w_activate(autd3__pcap_t *p) { return pcap_activate(P(p)); }
static int w_direction(autd3__pcap_t *p, int d) { return pcap_setdirection(P(p), (pcap_direction_t)d); }
static int w_compile(autd3__pcap_t *p, autd3__bpf_program_t *fp, const char *s, int o, uint32_t m) {
  return pcap_compile(P(p), (struct bpf_program *)fp, s, o, m);
}
static int w_setfilter(autd3__pcap_t *p, autd3__bpf_program_t *fp) { return pcap_setfilter(P(p), (struct bpf_program *)fp); }
static void w_freecode(autd3__bpf_program_t *fp) { pcap_freecode((struct bpf_program *)fp); }
static int w_nonblock(autd3__pcap_t *p, int v, char *eb) { return pcap_setnonblock(P(p), v, eb); }
/* pcap_inject, not pcap_sendpacket: the same on Linux, but it says how much went. */
static int w_send(autd3__pcap_t *p, const uint8_t *b, int n) { return pcap_inject(P(p), b, (size_t)n) == n ? 0 : -1; }
static int w_next(autd3__pcap_t *p, autd3__pcap_pkthdr_t **h, const uint8_t **d) {
  return pcap_next_ex(P(p), (struct pcap_pkthdr **)h, d);
}
static char *w_geterr(autd3__pcap_t *p) { return pcap_geterr(P(p)); }
static void w_close(autd3__pcap_t *p) { pcap_close(P(p)); }
static int w_findall(autd3__pcap_if_t **all, char *eb) { return pcap_findalldevs((pcap_if_t **)all, eb); }
static void w_freeall(autd3__pcap_if_t *all) { pcap_freealldevs((pcap_if_t *)all); }
static int w_fd(autd3__pcap_t *p) { return pcap_get_selectable_fd(P(p)); }

static autd3_err_t w_wait(autd3__pcap_t *p, const char *ifname, uint64_t ns) {
  int fd = pcap_get_selectable_fd(P(p));
  if (fd < 0) { /* no descriptor: short sleeps */
    autd3__sleep_ns(ns < 50000 ? ns : 50000);
    return AUTD3_OK;
  }
  struct pollfd pf = {.fd = fd, .events = POLLIN};
#ifdef __linux__
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  int r = ppoll(&pf, 1, &ts, NULL);
#else /* macOS/BSD: no ppoll; millisecond poll, rounded up */
  int r = poll(&pf, 1, (int)((ns + 999999u) / 1000000u));
#endif
  if (r < 0 && errno != EINTR)
    return autd3_set_error(AUTD3_E_IO, "nic %s (pcap): poll failed: %s", ifname, strerror(errno));
  return AUTD3_OK;
}

static const autd3__pcap_api_t linked = {
    .create = w_create, .set_snaplen = w_snaplen, .set_promisc = w_promisc, .set_timeout = w_timeout,
    .set_immediate_mode = w_immediate, .activate = w_activate, .setdirection = w_direction, .compile = w_compile,
    .setfilter = w_setfilter, .freecode = w_freecode, .setnonblock = w_nonblock, .sendpacket = w_send,
    .next_ex = w_next, .geterr = w_geterr, .statustostr = pcap_statustostr, .close = w_close,
    .findalldevs = w_findall, .freealldevs = w_freeall, .lib_version = pcap_lib_version, .wait = w_wait,
    .selectable_fd = w_fd};

autd3_err_t autd3__pcap_api(const autd3__pcap_api_t **out) {
  *out = &linked;
  return AUTD3_OK;
}
