/* The OS-independent half of the network layer (net.h): partial send and
 * receive loops against a deadline, connect and listen over every resolved
 * address, and the mapping of socket errors to autd3 errors. Compiled for
 * every OS; it stands only on the back end's calls (net/os.h: posix.c,
 * win.c), so it includes no OS header. */
#include <stdio.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "net/net.h"
#include "net/os.h"
#include "platform/platform.h"

int autd3__net_ms_left(uint64_t deadline_ns) {
  if (deadline_ns == 0) return -1;
  uint64_t now = autd3__now_ns();
  if (now >= deadline_ns) return 0;
  uint64_t ms = (deadline_ns - now + 999999) / 1000000;
  return ms > 1000000 ? 1000000 : (int)ms;
}

autd3_err_t autd3__net_err(int e, const char *op) {
  char t[160];
  autd3__net_os_text(e, t, sizeof t);
  if (autd3__net_os_class(e) == AUTD3_NET_OS_PEER_GONE) return autd3_set_error(AUTD3_E_PEER_CLOSED, "%s: %s", op, t);
  return autd3_set_error(AUTD3_E_IO, "%s: %s", op, t);
}

void autd3__net_peer_name(int fd, char *buf, size_t cap) {
  char h[64] = "?", s[8] = "?"; /* 64 > INET6_ADDRSTRLEN */
  if (!autd3__net_os_peer_numeric(fd, h, sizeof h, s, sizeof s)) {
    snprintf(h, sizeof h, "?");
    snprintf(s, sizeof s, "?");
  }
  if (strchr(h, ':')) snprintf(buf, cap, "[%s]:%s", h, s);
  else snprintf(buf, cap, "%s:%s", h, s);
}

void autd3__net_addrs_add(autd3_net_addrs_t *out, int family, const void *addr, size_t len) {
  if (out->n >= AUTD3_NET_ADDRS_MAX || len > sizeof out->a[0].storage) return;
  out->a[out->n].family = family;
  out->a[out->n].len = (uint32_t)len;
  memcpy(out->a[out->n].storage, addr, len);
  out->n++;
}

autd3_err_t autd3__net_resolve(const char *host, uint16_t port, const char *who, autd3_net_addrs_t *out) {
  memset(out, 0, sizeof *out);
  if (strlen(host) >= sizeof out->host) return autd3_set_error(AUTD3_E_INVALID_OPTION, "%s: host \"%.40s...\" is too long", who, host);
  snprintf(out->host, sizeof out->host, "%s", host);
  out->port = port;
  char ps[8], why[160];
  snprintf(ps, sizeof ps, "%u", port);
  if (!autd3__net_os_resolve(host, ps, false, out, why, sizeof why))
    return autd3_set_error(AUTD3_E_CONNECT, "%s: cannot resolve \"%s\": %s", who, host, why);
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
    int fd = -1, e = 0;
    int r = autd3__net_os_connect(addrs, i, &fd, &e);
    if (r < 0) {
      last = e;
      continue;
    }
    if (r == 0) { /* in progress: writable once connected or failed */
      if (autd3__net_wait(fd, true, deadline) == AUTD3_OK) {
        last = autd3__net_os_connect_result(fd);
        r = last == 0;
      } else {
        timed_out = true;
      }
    }
    if (r == 1) {
      *out = fd;
      return AUTD3_OK;
    }
    autd3__net_close(fd);
  }
  if (timed_out && last == 0)
    return autd3_set_error(AUTD3_E_TIMEOUT, "%s: connecting to %s%s%s:%u timed out after %u ms", who, v6 ? "[" : "", host,
                           v6 ? "]" : "", port, timeout_ms);
  char t[160];
  return autd3_set_error(AUTD3_E_CONNECT, "%s: cannot connect to %s%s%s:%u: %s%s", who, v6 ? "[" : "", host, v6 ? "]" : "", port,
                         autd3__net_os_text(last, t, sizeof t),
                         autd3__net_os_class(last) == AUTD3_NET_OS_REFUSED && refused_hint ? refused_hint : "");
}

autd3_err_t autd3__net_listen(const char *addr, int *out, uint16_t *port_out) {
  char host[AUTD3_NET_HOST_MAX], port[8], t[160];
  autd3_err_t err = autd3__net_split(addr, host, sizeof host, port, sizeof port, "listen address");
  if (err) return err;
  autd3_net_addrs_t addrs;
  memset(&addrs, 0, sizeof addrs);
  if (!autd3__net_os_resolve(host, port, true, &addrs, t, sizeof t))
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "listen address: cannot resolve \"%s\": %s", host, t);
  int last = 0;
  for (size_t i = 0; i < addrs.n; i++) {
    int fd = -1;
    uint16_t p = 0;
    if (autd3__net_os_listen(&addrs, i, &fd, &p, &last)) {
      *out = fd;
      if (port_out) *port_out = p;
      return AUTD3_OK;
    }
  }
  return autd3_set_error(AUTD3_E_CONNECT, "cannot listen on %s: %s", addr, autd3__net_os_text(last, t, sizeof t));
}

autd3_err_t autd3__net_listen_local(const char *path, int *out) {
  char t[160];
  int fd = -1, e = 0;
  (void)remove(path); /* a stale socket file of an earlier run */
  int r = autd3__net_os_listen_local(path, &fd, &e);
  if (r > 0) return autd3_set_error(AUTD3_E_INVALID_OPTION, "local socket %s: path too long", path);
  if (r < 0) return autd3_set_error(AUTD3_E_IO, "local socket %s: %s", path, autd3__net_os_text(e, t, sizeof t));
  *out = fd;
  return AUTD3_OK;
}

void autd3__net_close_local(int fd, const char *path) {
  if (fd < 0) return;
  autd3__net_close(fd);
  (void)remove(path);
}

int autd3__net_poll(autd3_net_poll_t *p, size_t n, int timeout_ms) {
  return autd3__net_poll_ns(p, n, timeout_ms < 0 ? -1 : (int64_t)timeout_ms * 1000000);
}

long autd3__net_recv(int fd, void *buf, size_t len) {
  int e = 0;
  return autd3__net_os_recv(fd, buf, len, &e);
}

long autd3__net_send(int fd, const void *buf, size_t len) {
  int e = 0;
  long w = autd3__net_os_send(fd, buf, len, NULL, 0, &e);
  return w < 0 ? AUTD3_NET_FAILED : w;
}

/* a then b, whole, before the deadline; *done = bytes of both sent. */
static autd3_err_t send_all(int fd, const void *a, size_t alen, const void *b, size_t blen, uint64_t deadline_ns, size_t *done) {
  const uint8_t *p[2] = {a, b};
  size_t left[2] = {alen, blen}, off = 0;
  int idx = 0;
  autd3_err_t err = AUTD3_OK;
  while (idx < 2) {
    if (left[idx] == 0) {
      idx++;
      continue;
    }
    int e = 0;
    long n = autd3__net_os_send(fd, p[idx], left[idx], idx == 0 ? p[1] : NULL, idx == 0 ? left[1] : 0, &e);
    if (n < 0) {
      err = autd3__net_err(e, "send");
      break;
    }
    if (n == 0) {
      if ((err = autd3__net_wait(fd, true, deadline_ns)) != AUTD3_OK) break;
      continue;
    }
    off += (size_t)n;
    for (size_t moved = (size_t)n; idx < 2 && moved > 0;) { /* advance over what went, possibly into b */
      size_t k = moved < left[idx] ? moved : left[idx];
      p[idx] += k;
      left[idx] -= k;
      moved -= k;
      if (left[idx] == 0) idx++;
    }
  }
  if (done) *done = off;
  return err;
}

autd3_err_t autd3__net_write2(int fd, const void *a, size_t alen, const void *b, size_t blen, uint64_t deadline_ns) {
  return send_all(fd, a, alen, b, blen, deadline_ns, NULL);
}

autd3_err_t autd3__net_write_all(int fd, const void *buf, size_t len, uint64_t deadline_ns, size_t *done) {
  return send_all(fd, buf, len, NULL, 0, deadline_ns, done);
}

autd3_err_t autd3__net_read_all(int fd, void *buf, size_t len, uint64_t deadline_ns, size_t *done) {
  size_t off = 0;
  autd3_err_t err = AUTD3_OK;
  while (off < len) {
    int e = 0;
    long n = autd3__net_os_recv(fd, (uint8_t *)buf + off, len - off, &e);
    if (n > 0) {
      off += (size_t)n;
    } else if (n == 0) {
      if ((err = autd3__net_wait(fd, false, deadline_ns)) != AUTD3_OK) break;
    } else if (n == AUTD3_NET_EOF) {
      err = autd3_set_error(AUTD3_E_PEER_CLOSED, "connection closed by the peer");
      break;
    } else {
      err = autd3__net_err(e, "recv");
      break;
    }
  }
  if (done) *done = off;
  return err;
}

/* mDNS send (net.h): to one address, or to the mDNS group out of every
 * IPv4 interface that is up (a responder answers on each link it is on). */
autd3_err_t autd3__net_udp_send4(int fd, const void *buf, size_t len, const uint8_t ip[4], uint16_t port) {
  int err = 0;
  if (ip) {
    if (autd3__net_os_udp_sendto(fd, buf, len, ip, port, &err) < 0) return autd3__net_err(err, "mDNS: sendto");
    return AUTD3_OK;
  }
  static const uint8_t group[4] = {224, 0, 0, 251};
  uint8_t addrs[16][4];
  size_t n = autd3__net_ipv4_addrs(addrs, 16);
  bool sent = false;
  for (size_t i = 0; i < n; i++) {
    if (!autd3__net_os_mcast_if(fd, addrs[i])) continue;
    if (autd3__net_os_udp_sendto(fd, buf, len, group, 5353, &err) >= 0) sent = true;
  }
  if (n == 0) { /* only loopback (e.g. a private namespace): the routing table picks */
    (void)autd3__net_os_mcast_if(fd, NULL);
    if (autd3__net_os_udp_sendto(fd, buf, len, group, 5353, &err) >= 0) sent = true;
  }
  if (!sent) return autd3__net_err(err, "mDNS: cannot send to 224.0.0.251");
  return AUTD3_OK;
}
