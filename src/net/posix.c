/* The network layer's OS calls on POSIX sockets (net/os.h; the loops over
 * them are common.c) and what is POSIX-only (waits, poll, the wake pipe,
 * mDNS sockets). Linux uses its atomic
 * flags (SOCK_CLOEXEC, accept4, pipe2, MSG_NOSIGNAL); other POSIX systems
 * (macOS, the BSDs) get the same effect with fcntl() and SO_NOSIGPIPE. The
 * generic path is type-checked on Linux (test_platform_darwin.net_type_check). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "autd3/link_driver.h"
#include "net/net.h"
#include "net/os.h"
#include "platform/platform.h"

#ifdef __linux__
#define SEND_FLAGS MSG_NOSIGNAL
#define SOCK_FLAGS SOCK_CLOEXEC
#else
#define SEND_FLAGS 0 /* SO_NOSIGPIPE instead, see no_sigpipe() */
#define SOCK_FLAGS 0 /* FD_CLOEXEC instead, see set_cloexec() */
#endif

/* Writing to a closed connection must return EPIPE, not kill the process. */
static void no_sigpipe(int fd) {
#if !defined(__linux__) && defined(SO_NOSIGPIPE)
  int one = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#else
  (void)fd; /* Linux: MSG_NOSIGNAL on every send */
#endif
}

static void set_cloexec(int fd) {
#ifndef __linux__
  int fl = fcntl(fd, F_GETFD, 0);
  if (fl >= 0) (void)fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
#else
  (void)fd; /* atomic flags at creation */
#endif
}

static int new_socket(int family, int type, int protocol) {
  int fd = socket(family, type | SOCK_FLAGS, protocol);
  if (fd >= 0) {
    set_cloexec(fd);
    no_sigpipe(fd);
  }
  return fd;
}

static void tune(int fd) {
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int fl = fcntl(fd, F_GETFL, 0);
  if (fl >= 0) (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

bool autd3__net_os_peer_numeric(int fd, char *host, size_t host_cap, char *serv, size_t serv_cap) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  return getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 &&
         getnameinfo((struct sockaddr *)&ss, sl, host, (socklen_t)host_cap, serv, (socklen_t)serv_cap, NI_NUMERICHOST | NI_NUMERICSERV) == 0;
}

static bool ipv4_of(const struct sockaddr_storage *sp, uint8_t out[4]);

bool autd3__net_local_ipv4(int fd, uint8_t out[4]) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  return getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 && ipv4_of(&ss, out);
}

bool autd3__net_peer_ipv4(int fd, uint8_t out[4]) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  return getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 && ipv4_of(&ss, out);
}

/* IPv4, or IPv4-mapped IPv6. */
static bool ipv4_of(const struct sockaddr_storage *sp, uint8_t out[4]) {
  struct sockaddr_storage ss = *sp;
  if (ss.ss_family == AF_INET) {
    memcpy(out, &((struct sockaddr_in *)&ss)->sin_addr.s_addr, 4);
    return true;
  }
  if (ss.ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)&ss)->sin6_addr)) {
    memcpy(out, ((struct sockaddr_in6 *)&ss)->sin6_addr.s6_addr + 12, 4);
    return true;
  }
  return false;
}

void autd3__net_close(int fd) {
  if (fd >= 0) close(fd);
}

void autd3__net_shutdown_write(int fd) { (void)shutdown(fd, SHUT_WR); }

autd3_err_t autd3__net_wait(int fd, bool writable, uint64_t deadline_ns) {
  for (;;) {
    struct pollfd pfd = {.fd = fd, .events = writable ? POLLOUT : POLLIN};
    int ms = autd3__net_ms_left(deadline_ns);
    if (ms == 0) return autd3_set_error(AUTD3_E_TIMEOUT, "timed out");
    int r = poll(&pfd, 1, ms);
    if (r > 0) return AUTD3_OK;
    if (r == 0) continue; /* re-check the deadline (poll rounds) */
    if (errno != EINTR) return autd3_set_error(AUTD3_E_IO, "poll: %s", strerror(errno));
  }
}

bool autd3__net_readable(int fd) {
  struct pollfd pf = {.fd = fd, .events = POLLIN};
  return fd >= 0 && poll(&pf, 1, 0) > 0;
}

autd3_net_os_class_t autd3__net_os_class(int e) {
  if (e == ECONNRESET || e == EPIPE || e == ENOTCONN) return AUTD3_NET_OS_PEER_GONE;
  if (e == ECONNREFUSED) return AUTD3_NET_OS_REFUSED;
  return AUTD3_NET_OS_OTHER;
}

const char *autd3__net_os_text(int e, char *buf, size_t cap) {
  snprintf(buf, cap, "%s", strerror(e));
  return buf;
}

bool autd3__net_os_resolve(const char *host, const char *port, bool passive, autd3_net_addrs_t *out, char *why, size_t why_cap) {
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  int gr = getaddrinfo(host, port, &hints, &res);
  if (gr != 0) {
    snprintf(why, why_cap, "%s", gai_strerror(gr));
    return false;
  }
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) autd3__net_addrs_add(out, ai->ai_family, ai->ai_addr, (size_t)ai->ai_addrlen);
  freeaddrinfo(res);
  return true;
}

int autd3__net_os_connect(const autd3_net_addrs_t *addrs, size_t i, int *fd, int *err) {
  int s = new_socket(addrs->a[i].family, SOCK_STREAM, 0);
  if (s < 0) {
    *err = errno;
    return -1;
  }
  tune(s);
  const struct sockaddr *sa = (const struct sockaddr *)(const void *)addrs->a[i].storage;
  if (connect(s, sa, (socklen_t)addrs->a[i].len) == 0) {
    *fd = s;
    return 1;
  }
  if (errno == EINPROGRESS) {
    *fd = s;
    return 0;
  }
  *err = errno;
  close(s);
  return -1;
}

int autd3__net_os_connect_result(int fd) {
  int so = 0;
  socklen_t sl = sizeof so;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) != 0) return errno;
  return so;
}

bool autd3__net_os_listen(const autd3_net_addrs_t *addrs, size_t i, int *fd, uint16_t *port, int *err) {
  int s = new_socket(addrs->a[i].family, SOCK_STREAM, 0);
  if (s < 0) {
    *err = errno;
    return false;
  }
  int one = 1;
  (void)setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const struct sockaddr *sa = (const struct sockaddr *)(const void *)addrs->a[i].storage;
  if (bind(s, sa, (socklen_t)addrs->a[i].len) != 0 || listen(s, SOMAXCONN) != 0) {
    *err = errno;
    close(s);
    return false;
  }
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  *port = 0;
  if (getsockname(s, (struct sockaddr *)&ss, &sl) == 0)
    *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
  int fl = fcntl(s, F_GETFL, 0);
  if (fl >= 0) (void)fcntl(s, F_SETFL, fl | O_NONBLOCK);
  *fd = s;
  return true;
}

int autd3__net_os_listen_local(const char *path, int *fd, int *err) {
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof sa.sun_path) return 1;
  memcpy(sa.sun_path, path, strlen(path) + 1);
  int s = new_socket(AF_UNIX, SOCK_STREAM, 0);
  if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(s, 4) != 0) {
    *err = errno;
    if (s >= 0) close(s);
    return -1;
  }
  int fl = fcntl(s, F_GETFL, 0);
  if (fl >= 0) (void)fcntl(s, F_SETFL, fl | O_NONBLOCK);
  *fd = s;
  return 0;
}

int autd3__net_accept(int listen_fd, char *peer, size_t peer_cap) {
  int fd;
#ifdef __linux__
  do fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return -1;
#else
  do fd = accept(listen_fd, NULL, NULL);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return -1;
  set_cloexec(fd);
  no_sigpipe(fd);
#endif
  tune(fd); /* non-blocking (again, on Linux) and TCP_NODELAY */
  if (peer) autd3__net_peer_name(fd, peer, peer_cap);
  return fd;
}

void autd3__net_cap_send_buffer(int fd, int bytes) {
  (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes); /* Linux doubles it (bookkeeping) */
}

long autd3__net_os_recv(int fd, void *buf, size_t len, int *err) {
  for (;;) {
    ssize_t r = recv(fd, buf, len, 0);
    if (r > 0) return (long)r;
    if (r == 0) return AUTD3_NET_EOF;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    *err = errno;
    return AUTD3_NET_FAILED;
  }
}

long autd3__net_os_send(int fd, const void *a, size_t alen, const void *b, size_t blen, int *err) {
  struct iovec iov[2] = {{(void *)(uintptr_t)a, alen}, {(void *)(uintptr_t)b, blen}};
  struct msghdr mh;
  memset(&mh, 0, sizeof mh);
  mh.msg_iov = iov;
  mh.msg_iovlen = blen ? 2 : 1;
  for (;;) {
    ssize_t w = sendmsg(fd, &mh, SEND_FLAGS);
    if (w >= 0) return (long)w;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    *err = errno;
    return -1;
  }
}

int autd3__net_poll_ns(autd3_net_poll_t *p, size_t n, int64_t timeout_ns) {
  struct pollfd stack[64], *pf = stack;
  if (n > sizeof stack / sizeof stack[0]) {
    pf = malloc(n * sizeof *pf); /* servers with many connections: not on a bus thread's path */
    if (pf == NULL) {
      autd3_set_error(AUTD3_E_NOMEM, "poll: out of memory");
      return -1;
    }
  }
  for (size_t i = 0; i < n; i++)
    pf[i] = (struct pollfd){.fd = p[i].fd, .events = (short)(((p[i].events & AUTD3_NET_IN) ? POLLIN : 0) |
                                                           ((p[i].events & AUTD3_NET_OUT) ? POLLOUT : 0))};
#ifdef __linux__
  struct timespec ts = {(time_t)(timeout_ns / 1000000000), (long)(timeout_ns % 1000000000)};
  int r = ppoll(pf, (nfds_t)n, timeout_ns < 0 ? NULL : &ts, NULL);
#else
  int ms = timeout_ns < 0 ? -1 : timeout_ns > 1000000000000ll ? 1000000 : (int)((timeout_ns + 999999) / 1000000);
  int r = poll(pf, (nfds_t)n, ms);
#endif
  if (r < 0 && errno == EINTR) r = 0; /* a signal: the caller's loop looks again */
  if (r < 0) autd3_set_error(AUTD3_E_IO, "poll: %s", strerror(errno));
  for (size_t i = 0; i < n; i++) {
    short re = r > 0 ? pf[i].revents : 0;
    p[i].revents = ((re & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) ? AUTD3_NET_IN : 0) | ((re & POLLOUT) ? AUTD3_NET_OUT : 0);
  }
  if (pf != stack) free(pf);
  return r;
}

autd3_err_t autd3__net_wake_open(autd3_net_wake_t *wk) {
  int fds[2];
  wk->r = wk->w = -1;
#ifdef __linux__
  if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return autd3_set_error(AUTD3_E_IO, "pipe: %s", strerror(errno));
#else
  if (pipe(fds) != 0) return autd3_set_error(AUTD3_E_IO, "pipe: %s", strerror(errno));
  for (int i = 0; i < 2; i++) {
    set_cloexec(fds[i]);
    int fl = fcntl(fds[i], F_GETFL, 0);
    if (fl >= 0) (void)fcntl(fds[i], F_SETFL, fl | O_NONBLOCK);
  }
#endif
  wk->r = fds[0];
  wk->w = fds[1];
  return AUTD3_OK;
}

void autd3__net_wake_poke(const autd3_net_wake_t *wk) {
  if (write(wk->w, "x", 1) < 0) { /* pipe full: a wake-up is pending anyway */
  }
}

void autd3__net_wake_drain(const autd3_net_wake_t *wk) {
  char b[64];
  while (read(wk->r, b, sizeof b) > 0) {
  }
}

void autd3__net_wake_close(autd3_net_wake_t *wk) {
  if (wk->r >= 0) close(wk->r);
  if (wk->w >= 0) close(wk->w);
  wk->r = wk->w = -1;
}

/* ---------------- UDP for mDNS ---------------- */

size_t autd3__net_ipv4_addrs(uint8_t (*out)[4], size_t cap) {
  struct ifaddrs *list = NULL;
  size_t n = 0;
  if (getifaddrs(&list) != 0) return 0;
  for (struct ifaddrs *i = list; i && n < cap; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_MULTICAST)) continue;
    memcpy(out[n++], &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, 4);
  }
  freeifaddrs(list);
  return n;
}

void autd3__net_hostname(char *buf, size_t cap) {
  char h[256] = "";
  if (gethostname(h, sizeof h - 1) != 0 || h[0] == 0) snprintf(h, sizeof h, "autd3");
  char *dot = strchr(h, '.');
  if (dot) *dot = 0;
  snprintf(buf, cap, "%s", h);
}

autd3_err_t autd3__net_mdns_open(int *out) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return autd3_set_error(AUTD3_E_IO, "mDNS: socket: %s", strerror(errno));
  int one = 1;
  unsigned char ttl = 255, loop = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
#ifdef SO_REUSEPORT
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
#endif
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(5353)};
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    autd3_err_t e = autd3_set_error(AUTD3_E_IO, "mDNS: cannot bind UDP port 5353: %s", strerror(errno));
    close(fd);
    return e;
  }
  (void)setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl);
  (void)setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop);
  struct ip_mreq m;
  inet_pton(AF_INET, "224.0.0.251", &m.imr_multiaddr);
  m.imr_interface.s_addr = htonl(INADDR_ANY);
  bool joined = setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) == 0;
  int join_errno = errno;
  uint8_t addrs[16][4];
  size_t n = autd3__net_ipv4_addrs(addrs, 16);
  for (size_t i = 0; i < n; i++) { /* the default one may be among them already: EADDRINUSE is fine */
    memcpy(&m.imr_interface, addrs[i], 4);
    if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) == 0 || errno == EADDRINUSE) joined = true;
  }
  if (!joined) {
    autd3_err_t e = autd3_set_error(AUTD3_E_IO, "mDNS: cannot join 224.0.0.251 (no multicast route?): %s", strerror(join_errno));
    close(fd);
    return e;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  *out = fd;
  return AUTD3_OK;
}

long autd3__net_os_udp_sendto(int fd, const void *buf, size_t len, const uint8_t ip[4], uint16_t port, int *err) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  memcpy(&a.sin_addr, ip, 4);
  ssize_t r = sendto(fd, buf, len, 0, (struct sockaddr *)&a, sizeof a);
  if (r < 0) *err = errno;
  return (long)r;
}

bool autd3__net_os_mcast_if(int fd, const uint8_t ip[4]) {
  struct in_addr ifa = {.s_addr = htonl(INADDR_ANY)};
  if (ip) memcpy(&ifa, ip, 4);
  return setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &ifa, sizeof ifa) == 0;
}

long autd3__net_udp_recv4(int fd, void *buf, size_t cap, uint8_t ip[4], uint16_t *port) {
  struct sockaddr_in a;
  socklen_t al = sizeof a;
  ssize_t r = recvfrom(fd, buf, cap, 0, (struct sockaddr *)&a, &al);
  if (r < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
  if (r == 0) return 0; /* an empty datagram: nothing to parse */
  memcpy(ip, &a.sin_addr, 4);
  *port = ntohs(a.sin_port);
  return (long)r;
}
