/* The network layer's OS calls on Winsock 2 (net/os.h; the loops over them
 * are common.c), the counterpart of posix.c.
 *
 * Sockets travel as `int` through net.h: Windows socket handles are kernel
 * handles, small in practice and documented as safe to truncate to 32 bits
 * (handles are 32-bit significant even in 64-bit processes, for
 * interoperability), so INVALID_SOCKET maps to -1. */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <winsock2.h>
#include <ws2tcpip.h>
#include <afunix.h>
#include <windows.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "net/net.h"
#include "net/os.h"
#include "platform/platform.h"

#define S(fd) ((SOCKET)(uintptr_t)(unsigned)(fd))

static int to_int(SOCKET s) { return s == INVALID_SOCKET ? -1 : (int)(unsigned)(uintptr_t)s; }

/* WSAStartup once per process (never undone: sockets may outlive any one
 * user of this layer, and process exit releases it). */
static INIT_ONCE wsa_once = INIT_ONCE_STATIC_INIT;
static int wsa_err;

static BOOL CALLBACK wsa_init(PINIT_ONCE o, PVOID p, PVOID *c) {
  (void)o;
  (void)p;
  (void)c;
  WSADATA d;
  wsa_err = WSAStartup(MAKEWORD(2, 2), &d);
  return TRUE;
}

static autd3_err_t wsa_ready(void) {
  InitOnceExecuteOnce(&wsa_once, wsa_init, NULL, NULL);
  if (wsa_err != 0) return autd3_set_error(AUTD3_E_IO, "Winsock 2.2 unavailable (WSAStartup error %d)", wsa_err);
  return AUTD3_OK;
}

static const char *wsa_text(int e, char *buf, size_t cap) {
  DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, (DWORD)e, 0, buf, (DWORD)cap, NULL);
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == '.')) buf[--n] = 0;
  if (n == 0) snprintf(buf, cap, "Winsock error %d", e);
  return buf;
}

autd3_net_os_class_t autd3__net_os_class(int e) {
  if (e == WSAECONNRESET || e == WSAECONNABORTED || e == WSAENOTCONN || e == WSAESHUTDOWN) return AUTD3_NET_OS_PEER_GONE;
  if (e == WSAECONNREFUSED) return AUTD3_NET_OS_REFUSED;
  return AUTD3_NET_OS_OTHER;
}

const char *autd3__net_os_text(int e, char *buf, size_t cap) { return wsa_text(e, buf, cap); }

static void set_nonblock(SOCKET s) {
  u_long on = 1;
  (void)ioctlsocket(s, FIONBIO, &on);
}

static void tune(SOCKET s) {
  int one = 1;
  (void)setsockopt(s, IPPROTO_TCP, TCP_NODELAY, (const char *)&one, sizeof one);
  set_nonblock(s);
}

/* WSA_FLAG_NO_HANDLE_INHERIT: the close-on-exec of Windows. */
static SOCKET new_socket(int family, int type, int protocol) {
  return WSASocketW(family, type, protocol, NULL, 0, WSA_FLAG_OVERLAPPED | WSA_FLAG_NO_HANDLE_INHERIT);
}

bool autd3__net_os_peer_numeric(int fd, char *host, size_t host_cap, char *serv, size_t serv_cap) {
  struct sockaddr_storage ss;
  int sl = (int)sizeof ss;
  return getpeername(S(fd), (struct sockaddr *)&ss, &sl) == 0 &&
         getnameinfo((struct sockaddr *)&ss, (socklen_t)sl, host, (DWORD)host_cap, serv, (DWORD)serv_cap, NI_NUMERICHOST | NI_NUMERICSERV) == 0;
}

/* IPv4, or IPv4-mapped IPv6. */
static bool ipv4_of(const struct sockaddr_storage *ss, uint8_t out[4]) {
  if (ss->ss_family == AF_INET) {
    memcpy(out, &((const struct sockaddr_in *)ss)->sin_addr, 4);
    return true;
  }
  if (ss->ss_family == AF_INET6) {
    const uint8_t *a = ((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr;
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(a, mapped, 12) == 0) {
      memcpy(out, a + 12, 4);
      return true;
    }
  }
  return false;
}

bool autd3__net_local_ipv4(int fd, uint8_t out[4]) {
  struct sockaddr_storage ss;
  int sl = (int)sizeof ss;
  return getsockname(S(fd), (struct sockaddr *)&ss, &sl) == 0 && ipv4_of(&ss, out);
}

bool autd3__net_peer_ipv4(int fd, uint8_t out[4]) {
  struct sockaddr_storage ss;
  int sl = (int)sizeof ss;
  return getpeername(S(fd), (struct sockaddr *)&ss, &sl) == 0 && ipv4_of(&ss, out);
}

void autd3__net_close(int fd) {
  if (fd >= 0) closesocket(S(fd));
}

void autd3__net_shutdown_write(int fd) { (void)shutdown(S(fd), SD_SEND); }

/* select(), not WSAPoll: WSAPoll does not report a failed non-blocking
 * connect on Windows before 10 2004; select() does, in the except set. */
autd3_err_t autd3__net_wait(int fd, bool writable, uint64_t deadline_ns) {
  for (;;) {
    int ms = autd3__net_ms_left(deadline_ns);
    if (ms == 0) return autd3_set_error(AUTD3_E_TIMEOUT, "timed out");
    fd_set rs, ws, es;
    FD_ZERO(&rs);
    FD_ZERO(&ws);
    FD_ZERO(&es);
    if (writable) FD_SET(S(fd), &ws);
    else FD_SET(S(fd), &rs);
    FD_SET(S(fd), &es);
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    int r = select(0, &rs, &ws, &es, ms < 0 ? NULL : &tv);
    if (r > 0) return AUTD3_OK;
    if (r == 0) continue; /* re-check the deadline */
    return autd3__net_err(WSAGetLastError(), "select");
  }
}

bool autd3__net_readable(int fd) {
  if (fd < 0) return false;
  fd_set rs;
  FD_ZERO(&rs);
  FD_SET(S(fd), &rs);
  struct timeval tv = {0, 0};
  return select(0, &rs, NULL, NULL, &tv) > 0;
}

bool autd3__net_os_resolve(const char *host, const char *port, bool passive, autd3_net_addrs_t *out, char *why, size_t why_cap) {
  if (wsa_ready() != AUTD3_OK) {
    snprintf(why, why_cap, "%s", autd3_last_error());
    return false;
  }
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  int gr = getaddrinfo(host, port, &hints, &res);
  if (gr != 0) {
    wsa_text(gr, why, why_cap);
    return false;
  }
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) autd3__net_addrs_add(out, ai->ai_family, ai->ai_addr, (size_t)ai->ai_addrlen);
  freeaddrinfo(res);
  return true;
}

int autd3__net_os_connect(const autd3_net_addrs_t *addrs, size_t i, int *fd, int *err) {
  if (wsa_ready() != AUTD3_OK) {
    *err = wsa_err;
    return -1;
  }
  SOCKET s = new_socket(addrs->a[i].family, SOCK_STREAM, IPPROTO_TCP);
  if (s == INVALID_SOCKET) {
    *err = WSAGetLastError();
    return -1;
  }
  tune(s);
  const struct sockaddr *sa = (const struct sockaddr *)(const void *)addrs->a[i].storage;
  if (connect(s, sa, (int)addrs->a[i].len) == 0) {
    *fd = to_int(s);
    return 1;
  }
  int e = WSAGetLastError();
  if (e == WSAEWOULDBLOCK) { /* in progress (EINPROGRESS elsewhere) */
    *fd = to_int(s);
    return 0;
  }
  *err = e;
  closesocket(s);
  return -1;
}

int autd3__net_os_connect_result(int fd) {
  int so = 0, sl = (int)sizeof so;
  if (getsockopt(S(fd), SOL_SOCKET, SO_ERROR, (char *)&so, &sl) != 0) return WSAGetLastError();
  return so;
}

bool autd3__net_os_listen(const autd3_net_addrs_t *addrs, size_t i, int *fd, uint16_t *port, int *err) {
  SOCKET s = new_socket(addrs->a[i].family, SOCK_STREAM, IPPROTO_TCP);
  if (s == INVALID_SOCKET) {
    *err = WSAGetLastError();
    return false;
  }
  /* Not SO_REUSEADDR: on Windows it lets another socket steal a bound
   * port. SO_EXCLUSIVEADDRUSE is the safe default. */
  int one = 1;
  (void)setsockopt(s, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, (const char *)&one, sizeof one);
  const struct sockaddr *sa = (const struct sockaddr *)(const void *)addrs->a[i].storage;
  if (bind(s, sa, (int)addrs->a[i].len) != 0 || listen(s, SOMAXCONN) != 0) {
    *err = WSAGetLastError();
    closesocket(s);
    return false;
  }
  struct sockaddr_storage ss;
  int sl = (int)sizeof ss;
  *port = 0;
  if (getsockname(s, (struct sockaddr *)&ss, &sl) == 0)
    *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
  set_nonblock(s);
  *fd = to_int(s);
  return true;
}

/* AF_UNIX stream sockets exist since Windows 10 1803 (afunix.h). */
int autd3__net_os_listen_local(const char *path, int *fd, int *err) {
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof sa.sun_path) return 1;
  memcpy(sa.sun_path, path, strlen(path) + 1);
  if (wsa_ready() != AUTD3_OK) {
    *err = WSANOTINITIALISED;
    return -1;
  }
  SOCKET s = new_socket(AF_UNIX, SOCK_STREAM, 0);
  if (s == INVALID_SOCKET || bind(s, (const struct sockaddr *)&sa, (int)sizeof sa) != 0 || listen(s, 4) != 0) {
    *err = WSAGetLastError();
    if (s != INVALID_SOCKET) closesocket(s);
    return -1;
  }
  set_nonblock(s);
  *fd = to_int(s);
  return 0;
}

int autd3__net_accept(int listen_fd, char *peer, size_t peer_cap) {
  SOCKET s = accept(S(listen_fd), NULL, NULL);
  if (s == INVALID_SOCKET) return -1;
  (void)SetHandleInformation((HANDLE)s, HANDLE_FLAG_INHERIT, 0);
  tune(s);
  int fd = to_int(s);
  if (peer) autd3__net_peer_name(fd, peer, peer_cap);
  return fd;
}

void autd3__net_cap_send_buffer(int fd, int bytes) {
  (void)setsockopt(S(fd), SOL_SOCKET, SO_SNDBUF, (const char *)&bytes, sizeof bytes);
}

/* Winsock sends never raise a signal (no SIGPIPE to suppress), nor fail with EINTR. */
long autd3__net_os_recv(int fd, void *buf, size_t len, int *err) {
  int r = recv(S(fd), buf, len > INT_MAX ? INT_MAX : (int)len, 0);
  if (r > 0) return (long)r;
  if (r == 0) return AUTD3_NET_EOF;
  int e = WSAGetLastError();
  if (e == WSAEWOULDBLOCK) return 0;
  *err = e;
  return AUTD3_NET_FAILED;
}

long autd3__net_os_send(int fd, const void *a, size_t alen, const void *b, size_t blen, int *err) {
  WSABUF v[2] = {{(ULONG)(alen > INT_MAX ? INT_MAX : alen), (char *)(uintptr_t)a},
                 {(ULONG)(blen > INT_MAX ? INT_MAX : blen), (char *)(uintptr_t)b}};
  DWORD n = 0;
  if (WSASend(S(fd), v, blen ? 2 : 1, &n, 0, NULL, NULL) == 0) return (long)n;
  int e = WSAGetLastError();
  if (e == WSAEWOULDBLOCK) return 0;
  *err = e;
  return -1;
}

int autd3__net_poll_ns(autd3_net_poll_t *p, size_t n, int64_t timeout_ns) {
  int timeout_ms = timeout_ns < 0 ? -1 : timeout_ns > 1000000000000ll ? 1000000 : (int)((timeout_ns + 999999) / 1000000);
  WSAPOLLFD stack[64], *pf = stack;
  if (n > sizeof stack / sizeof stack[0]) {
    pf = malloc(n * sizeof *pf); /* servers with many connections: not on a bus thread's path */
    if (pf == NULL) {
      autd3_set_error(AUTD3_E_NOMEM, "poll: out of memory");
      return -1;
    }
  }
  for (size_t i = 0; i < n; i++) {
    pf[i].fd = S(p[i].fd);
    pf[i].events = (short)(((p[i].events & AUTD3_NET_IN) ? POLLRDNORM : 0) | ((p[i].events & AUTD3_NET_OUT) ? POLLWRNORM : 0));
    pf[i].revents = 0;
  }
  int r = WSAPoll(pf, (ULONG)n, timeout_ms);
  if (r < 0) autd3__net_err(WSAGetLastError(), "poll");
  for (size_t i = 0; i < n; i++) {
    short re = r > 0 ? pf[i].revents : 0;
    p[i].revents = ((re & (POLLRDNORM | POLLHUP | POLLERR | POLLNVAL)) ? AUTD3_NET_IN : 0) | ((re & POLLWRNORM) ? AUTD3_NET_OUT : 0);
  }
  if (pf != stack) free(pf);
  return r;
}

/* No pipes in WSAPoll: a UDP socket connected to itself on loopback wakes
 * the loop (one datagram per poke; a console control handler runs on its
 * own thread, so send() is allowed there). */
autd3_err_t autd3__net_wake_open(autd3_net_wake_t *wk) {
  wk->r = wk->w = -1;
  autd3_err_t err = wsa_ready();
  if (err != AUTD3_OK) return err;
  SOCKET s = new_socket(AF_INET, SOCK_DGRAM, IPPROTO_UDP);
  if (s == INVALID_SOCKET) return autd3__net_err(WSAGetLastError(), "wake socket");
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int al = (int)sizeof a;
  if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(s, (struct sockaddr *)&a, &al) != 0 ||
      connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
    err = autd3__net_err(WSAGetLastError(), "wake socket");
    closesocket(s);
    return err;
  }
  set_nonblock(s);
  wk->r = wk->w = to_int(s);
  return AUTD3_OK;
}

void autd3__net_wake_poke(const autd3_net_wake_t *wk) { (void)send(S(wk->w), "x", 1, 0); /* full: a wake-up is pending anyway */ }

void autd3__net_wake_drain(const autd3_net_wake_t *wk) {
  char b[64];
  while (recv(S(wk->r), b, sizeof b, 0) > 0) {
  }
}

void autd3__net_wake_close(autd3_net_wake_t *wk) {
  if (wk->r >= 0) closesocket(S(wk->r));
  wk->r = wk->w = -1;
}

/* ---------------- UDP for mDNS ---------------- */

#include <iphlpapi.h>

size_t autd3__net_ipv4_addrs(uint8_t (*out)[4], size_t cap) {
  ULONG size = 16384;
  IP_ADAPTER_ADDRESSES *list = NULL;
  ULONG r = ERROR_BUFFER_OVERFLOW;
  for (int tries = 0; tries < 3 && r == ERROR_BUFFER_OVERFLOW; tries++) {
    free(list);
    if ((list = malloc(size)) == NULL) return 0;
    r = GetAdaptersAddresses(AF_INET, GAA_FLAG_SKIP_ANYCAST | GAA_FLAG_SKIP_MULTICAST | GAA_FLAG_SKIP_DNS_SERVER, NULL, list,
                             &size);
  }
  size_t n = 0;
  for (IP_ADAPTER_ADDRESSES *a = r == NO_ERROR ? list : NULL; a != NULL && n < cap; a = a->Next) {
    if (a->OperStatus != IfOperStatusUp || a->IfType == IF_TYPE_SOFTWARE_LOOPBACK || (a->Flags & IP_ADAPTER_NO_MULTICAST))
      continue;
    for (IP_ADAPTER_UNICAST_ADDRESS *u = a->FirstUnicastAddress; u != NULL && n < cap; u = u->Next)
      if (u->Address.lpSockaddr != NULL && u->Address.lpSockaddr->sa_family == AF_INET)
        memcpy(out[n++], &((struct sockaddr_in *)(void *)u->Address.lpSockaddr)->sin_addr, 4);
  }
  free(list);
  return n;
}

void autd3__net_hostname(char *buf, size_t cap) {
  char h[256] = "";
  if (wsa_ready() != AUTD3_OK || gethostname(h, sizeof h - 1) != 0 || h[0] == 0) snprintf(h, sizeof h, "autd3");
  char *dot = strchr(h, '.');
  if (dot) *dot = 0;
  snprintf(buf, cap, "%s", h);
}

autd3_err_t autd3__net_mdns_open(int *out) {
  autd3_err_t e = wsa_ready();
  if (e != AUTD3_OK) return e;
  SOCKET s = new_socket(AF_INET, SOCK_DGRAM, IPPROTO_UDP);
  if (s == INVALID_SOCKET) return autd3__net_err(WSAGetLastError(), "mDNS: socket");
  /* Shared with other responders on the host (Windows' own mDNS service):
   * SO_REUSEADDR is the only sharing Windows has for UDP multicast. */
  BOOL one = TRUE;
  DWORD ttl = 255, loop = 1;
  (void)setsockopt(s, SOL_SOCKET, SO_REUSEADDR, (const char *)&one, sizeof one);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons(5353);
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(s, (struct sockaddr *)&a, sizeof a) != 0) {
    e = autd3__net_err(WSAGetLastError(), "mDNS: cannot bind UDP port 5353");
    closesocket(s);
    return e;
  }
  (void)setsockopt(s, IPPROTO_IP, IP_MULTICAST_TTL, (const char *)&ttl, sizeof ttl);
  (void)setsockopt(s, IPPROTO_IP, IP_MULTICAST_LOOP, (const char *)&loop, sizeof loop);
  struct ip_mreq m;
  inet_pton(AF_INET, "224.0.0.251", &m.imr_multiaddr);
  m.imr_interface.s_addr = htonl(INADDR_ANY);
  bool joined = setsockopt(s, IPPROTO_IP, IP_ADD_MEMBERSHIP, (const char *)&m, sizeof m) == 0;
  int join_err = joined ? 0 : WSAGetLastError();
  uint8_t addrs[16][4];
  size_t n = autd3__net_ipv4_addrs(addrs, 16);
  for (size_t i = 0; i < n; i++) { /* the default one may be among them already */
    memcpy(&m.imr_interface, addrs[i], 4);
    if (setsockopt(s, IPPROTO_IP, IP_ADD_MEMBERSHIP, (const char *)&m, sizeof m) == 0 || WSAGetLastError() == WSAEADDRINUSE)
      joined = true;
  }
  if (!joined) {
    e = autd3__net_err(join_err, "mDNS: cannot join 224.0.0.251 (no multicast route?)");
    closesocket(s);
    return e;
  }
  set_nonblock(s);
  *out = to_int(s);
  return AUTD3_OK;
}

long autd3__net_os_udp_sendto(int fd, const void *buf, size_t len, const uint8_t ip[4], uint16_t port, int *err) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  memcpy(&a.sin_addr, ip, 4);
  int r = sendto(S(fd), (const char *)buf, (int)len, 0, (struct sockaddr *)&a, sizeof a);
  if (r == SOCKET_ERROR) *err = WSAGetLastError();
  return r == SOCKET_ERROR ? -1 : (long)r;
}

bool autd3__net_os_mcast_if(int fd, const uint8_t ip[4]) {
  struct in_addr ifa;
  ifa.s_addr = htonl(INADDR_ANY);
  if (ip) memcpy(&ifa, ip, 4);
  return setsockopt(S(fd), IPPROTO_IP, IP_MULTICAST_IF, (const char *)&ifa, sizeof ifa) == 0;
}

long autd3__net_udp_recv4(int fd, void *buf, size_t cap, uint8_t ip[4], uint16_t *port) {
  struct sockaddr_in a;
  int al = (int)sizeof a;
  int r = recvfrom(S(fd), (char *)buf, (int)(cap > INT_MAX ? INT_MAX : cap), 0, (struct sockaddr *)&a, &al);
  if (r == SOCKET_ERROR) {
    int e = WSAGetLastError();
    /* WSAECONNRESET: an earlier send drew an ICMP port unreachable; not this socket's failure */
    return (e == WSAEWOULDBLOCK || e == WSAEINTR || e == WSAECONNRESET || e == WSAEMSGSIZE) ? 0 : -1;
  }
  if (r == 0) return 0;
  memcpy(ip, &a.sin_addr, 4);
  *port = ntohs(a.sin_port);
  return (long)r;
}
