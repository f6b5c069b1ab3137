/* The POSIX part of the pcap back end's run-time libpcap (pcap_load.h):
 * which library to load on Linux and macOS, and waiting for a frame with
 * poll() on libpcap's selectable descriptor. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "autd3/link_driver.h"
#include "nic/pcap_load.h"

/* pcap_api.h spells struct pcap_pkthdr with a struct timeval in front:
 * checked here against this OS's struct timeval (tests/nic/pcap_abi.c checks
 * the rest against pcap.h). */
_Static_assert(sizeof(struct timeval) == offsetof(autd3__pcap_pkthdr_t, caplen), "pcap_pkthdr starts with a timeval");

/* pcap_get_selectable_fd: every libpcap on Linux and macOS has it. */
static int (*get_fd)(autd3__pcap_t *p);

bool autd3__pcap_os_library(size_t i, char *out, size_t cap) {
#ifdef __APPLE__
  /* macOS ships libpcap (in the dyld shared cache: found by this path even
   * though no file is there); a Homebrew or MacPorts one by its plain name. */
  static const char *const libs[] = {"/usr/lib/libpcap.A.dylib", "libpcap.dylib"};
#else
  /* Upstream's soname, then Debian's and Ubuntu's (libpcap0.8), then the
   * development link. */
  static const char *const libs[] = {"libpcap.so.1", "libpcap.so.0.8", "libpcap.so"};
#endif
  if (i >= sizeof libs / sizeof libs[0])
    return false;
  snprintf(out, cap, "%s", libs[i]);
  return true;
}

const char *autd3__pcap_os_hint(void) {
#ifdef __APPLE__
  return "macOS ships libpcap in /usr/lib; is this process sandboxed?";
#else
  return "install libpcap (Debian/Ubuntu: apt-get install libpcap0.8; Fedora: dnf install libpcap), "
         "or use the AF_PACKET back end";
#endif
}

const char *autd3__pcap_os_permission_hint(void) {
#ifdef __APPLE__
  return "read and write access to /dev/bpf*: run as root, or give your user the access_bpf group "
         "(Wireshark's ChmodBPF installs it)";
#else
  return "CAP_NET_RAW and CAP_NET_ADMIN: run as root, or grant them once with "
         "`sudo setcap cap_net_raw,cap_net_admin+ep <your program>`";
#endif
}

static int posix_fd(autd3__pcap_t *p) { return get_fd ? get_fd(p) : -1; }

static autd3_err_t posix_wait(autd3__pcap_t *p, const char *ifname, uint64_t ns) {
  int fd = posix_fd(p);
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

void autd3__pcap_os_complete(autd3__dl_t *dl, autd3__pcap_api_t *t) {
  autd3__dl_fn_t f;
  if ((f = autd3__dl_fn(dl, "pcap_get_selectable_fd")) != NULL) memcpy(&get_fd, &f, sizeof f);
  if ((f = autd3__dl_fn(dl, "pcap_set_immediate_mode")) != NULL) memcpy(&t->set_immediate_mode, &f, sizeof f);
  if ((f = autd3__dl_fn(dl, "pcap_setdirection")) != NULL) memcpy(&t->setdirection, &f, sizeof f);
  t->wait = posix_wait;
  t->selectable_fd = posix_fd;
}
