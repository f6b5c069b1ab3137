/* TCP helpers for the Remote link and server (see sock.h). */
#define _GNU_SOURCE
#include "link/remote/sock.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "autd3/link_driver.h"
#include "platform/platform.h"

autd3_err_t autd3__sock_split(const char *addr, char *host, size_t host_cap, char *port, size_t port_cap, const char *what) {
  if (addr == NULL || *addr == 0) return autd3_set_error(AUTD3_E_INVALID_OPTION, "%s: empty address (expected host:port)", what);
  const char *h = addr, *colon;
  size_t hl;
  if (addr[0] == '[') { /* [v6]:port */
    const char *close = strchr(addr, ']');
    if (close == NULL || close[1] != ':')
      return autd3_set_error(AUTD3_E_INVALID_OPTION, "%s: \"%s\": expected [IPv6]:port", what, addr);
    h = addr + 1;
    hl = (size_t)(close - h);
    colon = close + 1;
  } else {
    colon = strrchr(addr, ':');
    if (colon == NULL)
      return autd3_set_error(AUTD3_E_INVALID_OPTION, "%s: \"%s\" has no port (expected host:port)", what, addr);
    if (strchr(addr, ':') != colon)
      return autd3_set_error(AUTD3_E_INVALID_OPTION, "%s: \"%s\": write an IPv6 address in brackets, e.g. [::1]:8080", what, addr);
    hl = (size_t)(colon - addr);
  }
  const char *p = colon + 1;
  char *end = NULL;
  long pv = strtol(p, &end, 10);
  if (*p == 0 || *end != 0 || pv < 0 || pv > 65535)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "%s: \"%s\": port must be 0..65535", what, addr);
  if (hl == 0 || hl >= host_cap) return autd3_set_error(AUTD3_E_INVALID_OPTION, "%s: \"%s\": empty or too long host", what, addr);
  memcpy(host, h, hl);
  host[hl] = 0;
  snprintf(port, port_cap, "%ld", pv);
  return AUTD3_OK;
}

void autd3__sock_tune(int fd) {
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int fl = fcntl(fd, F_GETFL, 0);
  if (fl >= 0) (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void autd3__sock_peer_name(int fd, char *buf, size_t cap) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char h[INET6_ADDRSTRLEN] = "?", s[8] = "?";
  if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
    (void)getnameinfo((struct sockaddr *)&ss, sl, h, sizeof h, s, sizeof s, NI_NUMERICHOST | NI_NUMERICSERV);
  if (strchr(h, ':')) snprintf(buf, cap, "[%s]:%s", h, s);
  else snprintf(buf, cap, "%s:%s", h, s);
}

/* Milliseconds left until deadline for poll(); -1 = no deadline; 0 = expired. */
static int ms_left(uint64_t deadline_ns) {
  if (deadline_ns == 0) return -1;
  uint64_t now = autd3__now_ns();
  if (now >= deadline_ns) return 0;
  uint64_t ms = (deadline_ns - now + 999999) / 1000000;
  return ms > 1000000 ? 1000000 : (int)ms;
}

static autd3_err_t wait_fd(int fd, short events, uint64_t deadline_ns) {
  for (;;) {
    struct pollfd pfd = {.fd = fd, .events = events};
    int ms = ms_left(deadline_ns);
    if (ms == 0) return autd3_set_error(AUTD3_E_TIMEOUT, "timed out");
    int r = poll(&pfd, 1, ms);
    if (r > 0) return AUTD3_OK;
    if (r == 0) return autd3_set_error(AUTD3_E_TIMEOUT, "timed out");
    if (errno != EINTR) return autd3_set_error(AUTD3_E_IO, "poll: %s", strerror(errno));
  }
}

static autd3_err_t errno_err(int e, const char *op) {
  if (e == ECONNRESET || e == EPIPE || e == ENOTCONN)
    return autd3_set_error(AUTD3_E_PEER_CLOSED, "%s: %s", op, strerror(e));
  return autd3_set_error(AUTD3_E_IO, "%s: %s", op, strerror(e));
}

autd3_err_t autd3__sock_connect(const char *addr, uint32_t timeout_ms, int *out) {
  char host[256], port[8];
  autd3_err_t err = autd3__sock_split(addr, host, sizeof host, port, sizeof port, "remote address");
  if (err) return err;
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int gr = getaddrinfo(host, port, &hints, &res);
  if (gr != 0) return autd3_set_error(AUTD3_E_CONNECT, "remote: cannot resolve \"%s\": %s", host, gai_strerror(gr));
  uint64_t deadline = timeout_ms ? autd3__now_ns() + (uint64_t)timeout_ms * 1000000u : 0;
  int last = 0;
  bool timed_out = false;
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = errno;
      continue;
    }
    autd3__sock_tune(fd);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      freeaddrinfo(res);
      *out = fd;
      return AUTD3_OK;
    }
    if (errno == EINPROGRESS) {
      if (wait_fd(fd, POLLOUT, deadline) == AUTD3_OK) {
        int so = 0;
        socklen_t sl = sizeof so;
        (void)getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl);
        if (so == 0) {
          freeaddrinfo(res);
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
  freeaddrinfo(res);
  if (timed_out && last == 0)
    return autd3_set_error(AUTD3_E_TIMEOUT, "remote: connecting to %s timed out after %u ms", addr, timeout_ms);
  return autd3_set_error(AUTD3_E_CONNECT, "remote: cannot connect to %s: %s%s", addr, strerror(last),
                         last == ECONNREFUSED ? " (is autd3-remote-server running there?)" : "");
}

autd3_err_t autd3__sock_listen(const char *addr, int *out, uint16_t *port_out) {
  char host[256], port[8];
  autd3_err_t err = autd3__sock_split(addr, host, sizeof host, port, sizeof port, "listen address");
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
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = errno;
      continue;
    }
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 16) == 0) {
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

autd3_err_t autd3__sock_write2(int fd, const void *a, size_t alen, const void *b, size_t blen, uint64_t deadline_ns) {
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
    ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        autd3_err_t err = wait_fd(fd, POLLOUT, deadline_ns);
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

autd3_err_t autd3__sock_write_all(int fd, const void *buf, size_t len, uint64_t deadline_ns, size_t *done) {
  size_t off = 0;
  autd3_err_t err = AUTD3_OK;
  while (off < len) {
    ssize_t n = send(fd, (const uint8_t *)buf + off, len - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if ((err = wait_fd(fd, POLLOUT, deadline_ns)) != AUTD3_OK) break;
      continue;
    }
    err = errno_err(errno, "send");
    break;
  }
  if (done) *done = off;
  return err;
}

autd3_err_t autd3__sock_read_all(int fd, void *buf, size_t len, uint64_t deadline_ns, size_t *done) {
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
      if ((err = wait_fd(fd, POLLIN, deadline_ns)) != AUTD3_OK) break;
      continue;
    }
    err = errno_err(errno, "recv");
    break;
  }
  if (done) *done = off;
  return err;
}
