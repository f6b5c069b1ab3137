/* The network layer on POSIX sockets (see net.h). Linux uses its atomic
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
#include <unistd.h>

#include "autd3/link_driver.h"
#include "net/net.h"
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

void autd3__net_peer_name(int fd, char *buf, size_t cap) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char h[INET6_ADDRSTRLEN] = "?", s[8] = "?";
  if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
    (void)getnameinfo((struct sockaddr *)&ss, sl, h, sizeof h, s, sizeof s, NI_NUMERICHOST | NI_NUMERICSERV);
  if (strchr(h, ':')) snprintf(buf, cap, "[%s]:%s", h, s);
  else snprintf(buf, cap, "%s:%s", h, s);
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

/* Milliseconds left until deadline for poll(); -1 = no deadline; 0 = expired. */
static int ms_left(uint64_t deadline_ns) {
  if (deadline_ns == 0) return -1;
  uint64_t now = autd3__now_ns();
  if (now >= deadline_ns) return 0;
  uint64_t ms = (deadline_ns - now + 999999) / 1000000;
  return ms > 1000000 ? 1000000 : (int)ms;
}

autd3_err_t autd3__net_wait(int fd, bool writable, uint64_t deadline_ns) {
  for (;;) {
    struct pollfd pfd = {.fd = fd, .events = writable ? POLLOUT : POLLIN};
    int ms = ms_left(deadline_ns);
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

static autd3_err_t errno_err(int e, const char *op) {
  if (e == ECONNRESET || e == EPIPE || e == ENOTCONN)
    return autd3_set_error(AUTD3_E_PEER_CLOSED, "%s: %s", op, strerror(e));
  return autd3_set_error(AUTD3_E_IO, "%s: %s", op, strerror(e));
}

autd3_err_t autd3__net_resolve(const char *host, uint16_t port, const char *who, autd3_net_addrs_t *out) {
  memset(out, 0, sizeof *out);
  if (strlen(host) >= sizeof out->host) return autd3_set_error(AUTD3_E_INVALID_OPTION, "%s: host \"%.40s...\" is too long", who, host);
  snprintf(out->host, sizeof out->host, "%s", host);
  out->port = port;
  char ps[8];
  snprintf(ps, sizeof ps, "%u", port);
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int gr = getaddrinfo(host, ps, &hints, &res);
  if (gr != 0) return autd3_set_error(AUTD3_E_CONNECT, "%s: cannot resolve \"%s\": %s", who, host, gai_strerror(gr));
  for (struct addrinfo *ai = res; ai && out->n < AUTD3_NET_ADDRS_MAX; ai = ai->ai_next) {
    if (ai->ai_addrlen > sizeof out->a[0].storage) continue;
    out->a[out->n].family = ai->ai_family;
    out->a[out->n].len = (uint32_t)ai->ai_addrlen;
    memcpy(out->a[out->n].storage, ai->ai_addr, ai->ai_addrlen);
    out->n++;
  }
  freeaddrinfo(res);
  if (out->n == 0) return autd3_set_error(AUTD3_E_CONNECT, "%s: \"%s\" resolved to no usable address", who, host);
  return AUTD3_OK;
}

autd3_err_t autd3__net_connect_resolved(const autd3_net_addrs_t *addrs, uint32_t timeout_ms, const char *who, const char *refused_hint,
                                        int *out) {
  const char *host = addrs->host;
  const uint16_t port = addrs->port;
  const bool v6 = strchr(host, ':') != NULL;
  uint64_t deadline = timeout_ms ? autd3__now_ns() + (uint64_t)timeout_ms * 1000000u : 0;
  int last = 0;
  bool timed_out = false;
  for (size_t i = 0; i < addrs->n; i++) {
    int fd = new_socket(addrs->a[i].family, SOCK_STREAM, 0);
    if (fd < 0) {
      last = errno;
      continue;
    }
    tune(fd);
    const struct sockaddr *sa = (const struct sockaddr *)(const void *)addrs->a[i].storage;
    if (connect(fd, sa, (socklen_t)addrs->a[i].len) == 0) {
      *out = fd;
      return AUTD3_OK;
    }
    if (errno == EINPROGRESS) {
      if (autd3__net_wait(fd, true, deadline) == AUTD3_OK) {
        int so = 0;
        socklen_t sl = sizeof so;
        (void)getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl);
        if (so == 0) {
          *out = fd;
          return AUTD3_OK;
        }
        last = so;
      } else {
        timed_out = true;
      }
    } else {
      last = errno;
    }
    close(fd);
  }
  if (timed_out && last == 0)
    return autd3_set_error(AUTD3_E_TIMEOUT, "%s: connecting to %s%s%s:%u timed out after %u ms", who, v6 ? "[" : "", host,
                           v6 ? "]" : "", port, timeout_ms);
  return autd3_set_error(AUTD3_E_CONNECT, "%s: cannot connect to %s%s%s:%u: %s%s", who, v6 ? "[" : "", host, v6 ? "]" : "", port,
                         strerror(last), last == ECONNREFUSED && refused_hint ? refused_hint : "");
}

autd3_err_t autd3__net_listen(const char *addr, int *out, uint16_t *port_out) {
  char host[AUTD3_NET_HOST_MAX], port[8];
  autd3_err_t err = autd3__net_split(addr, host, sizeof host, port, sizeof port, "listen address");
  if (err) return err;
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  int gr = getaddrinfo(host, port, &hints, &res);
  if (gr != 0) return autd3_set_error(AUTD3_E_INVALID_OPTION, "listen address: cannot resolve \"%s\": %s", host, gai_strerror(gr));
  int last = 0;
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
    int fd = new_socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) {
      last = errno;
      continue;
    }
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) {
      struct sockaddr_storage ss;
      socklen_t sl = sizeof ss;
      uint16_t p = 0;
      if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        p = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
      int fl = fcntl(fd, F_GETFL, 0);
      if (fl >= 0) (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
      freeaddrinfo(res);
      *out = fd;
      if (port_out) *port_out = p;
      return AUTD3_OK;
    }
    last = errno;
    close(fd);
  }
  freeaddrinfo(res);
  return autd3_set_error(AUTD3_E_CONNECT, "cannot listen on %s: %s", addr, strerror(last));
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

long autd3__net_recv(int fd, void *buf, size_t len) {
  for (;;) {
    ssize_t r = recv(fd, buf, len, 0);
    if (r > 0) return (long)r;
    if (r == 0) return AUTD3_NET_EOF;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : AUTD3_NET_FAILED;
  }
}

long autd3__net_send(int fd, const void *buf, size_t len) {
  for (;;) {
    ssize_t w = send(fd, buf, len, SEND_FLAGS);
    if (w >= 0) return (long)w;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : AUTD3_NET_FAILED;
  }
}

autd3_err_t autd3__net_write2(int fd, const void *a, size_t alen, const void *b, size_t blen, uint64_t deadline_ns) {
  struct iovec iov[2] = {{(void *)a, alen}, {(void *)b, blen}};
  int idx = 0;
  while (idx < 2) {
    if (iov[idx].iov_len == 0) {
      idx++;
      continue;
    }
    struct msghdr mh;
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = iov + idx;
    mh.msg_iovlen = (size_t)(2 - idx);
    ssize_t n = sendmsg(fd, &mh, SEND_FLAGS);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        autd3_err_t err = autd3__net_wait(fd, true, deadline_ns);
        if (err) return err;
        continue;
      }
      return errno_err(errno, "send");
    }
    size_t left = (size_t)n;
    while (idx < 2 && left >= iov[idx].iov_len) {
      left -= iov[idx].iov_len;
      iov[idx].iov_len = 0;
      idx++;
    }
    if (idx < 2) {
      iov[idx].iov_base = (uint8_t *)iov[idx].iov_base + left;
      iov[idx].iov_len -= left;
    }
  }
  return AUTD3_OK;
}

autd3_err_t autd3__net_write_all(int fd, const void *buf, size_t len, uint64_t deadline_ns, size_t *done) {
  size_t off = 0;
  autd3_err_t err = AUTD3_OK;
  while (off < len) {
    ssize_t n = send(fd, (const uint8_t *)buf + off, len - off, SEND_FLAGS);
    if (n > 0) {
      off += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if ((err = autd3__net_wait(fd, true, deadline_ns)) != AUTD3_OK) break;
      continue;
    }
    err = errno_err(errno, "send");
    break;
  }
  if (done) *done = off;
  return err;
}

autd3_err_t autd3__net_read_all(int fd, void *buf, size_t len, uint64_t deadline_ns, size_t *done) {
  size_t off = 0;
  autd3_err_t err = AUTD3_OK;
  while (off < len) {
    ssize_t n = recv(fd, (uint8_t *)buf + off, len - off, 0);
    if (n > 0) {
      off += (size_t)n;
      continue;
    }
    if (n == 0) {
      err = autd3_set_error(AUTD3_E_PEER_CLOSED, "connection closed by the peer");
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if ((err = autd3__net_wait(fd, false, deadline_ns)) != AUTD3_OK) break;
      continue;
    }
    err = errno_err(errno, "recv");
    break;
  }
  if (done) *done = off;
  return err;
}

int autd3__net_poll(autd3_net_poll_t *p, size_t n, int timeout_ms) {
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
  int r = poll(pf, (nfds_t)n, timeout_ms);
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

autd3_err_t autd3__net_udp_send4(int fd, const void *buf, size_t len, const uint8_t ip[4], uint16_t port) {
  struct sockaddr_in a = {.sin_family = AF_INET};
  if (ip) {
    memcpy(&a.sin_addr, ip, 4);
    a.sin_port = htons(port);
    if (sendto(fd, buf, len, 0, (struct sockaddr *)&a, sizeof a) < 0)
      return autd3_set_error(AUTD3_E_IO, "mDNS: sendto: %s", strerror(errno));
    return AUTD3_OK;
  }
  inet_pton(AF_INET, "224.0.0.251", &a.sin_addr);
  a.sin_port = htons(5353);
  uint8_t addrs[16][4];
  size_t n = autd3__net_ipv4_addrs(addrs, 16);
  bool sent = false;
  int err = 0;
  for (size_t i = 0; i < n; i++) {
    struct in_addr ifa;
    memcpy(&ifa, addrs[i], 4);
    if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &ifa, sizeof ifa) != 0) continue;
    if (sendto(fd, buf, len, 0, (struct sockaddr *)&a, sizeof a) >= 0) sent = true;
    else err = errno;
  }
  if (n == 0) { /* only loopback (e.g. a private namespace): the routing table picks */
    struct in_addr any = {.s_addr = htonl(INADDR_ANY)};
    (void)setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &any, sizeof any);
    if (sendto(fd, buf, len, 0, (struct sockaddr *)&a, sizeof a) >= 0) sent = true;
    else err = errno;
  }
  if (!sent) return autd3_set_error(AUTD3_E_IO, "mDNS: cannot send to 224.0.0.251: %s", strerror(err));
  return AUTD3_OK;
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
