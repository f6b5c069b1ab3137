/*
 * Raw TCP clients of the tests' in-process servers (the Remote server, the
 * emulated TwinCAT runtime) on loopback: blocking sockets whose every wait is
 * bounded by 10 s receive/send timeouts (a bound, not a timing check).
 * POSIX sockets; test-only.
 */
#ifndef AUTD3_TESTS_HARNESS_RAW_TCP_H
#define AUTD3_TESTS_HARNESS_RAW_TCP_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness/test.h"

/* Connect to 127.0.0.1:port; rcvbuf > 0 fixes the receive buffer first (small: the kernels stop taking bytes soon
 * when nobody reads). */
static inline int raw_connect_rcvbuf(uint16_t port, int rcvbuf) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_TRUE(fd >= 0);
  if (rcvbuf > 0) ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf), 0);
  struct timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) TEST_FAIL_("connect to %u: %s", port, strerror(errno));
  return fd;
}

static inline int raw_connect(uint16_t port) { return raw_connect_rcvbuf(port, 0); }

static inline void raw_send(int fd, const void *b, size_t n) {
  size_t off = 0;
  while (off < n) {
    ssize_t w = send(fd, (const uint8_t *)b + off, n - off, MSG_NOSIGNAL);
    if (w <= 0) TEST_FAIL_("send: %s", strerror(errno));
    off += (size_t)w;
  }
}

/* Read exactly n bytes; returns the count read before EOF/error/timeout. */
static inline size_t raw_recv(int fd, void *b, size_t n) {
  size_t off = 0;
  while (off < n) {
    ssize_t r = recv(fd, (uint8_t *)b + off, n - off, 0);
    if (r <= 0) break;
    off += (size_t)r;
  }
  return off;
}

/* True if the peer closed the connection (EOF or reset) within the 10 s receive bound. */
static inline bool raw_closed(int fd) {
  uint8_t b[512];
  for (;;) {
    ssize_t r = recv(fd, b, sizeof b, 0);
    if (r == 0) return true;
    if (r < 0) return errno == ECONNRESET;
  }
}

/* Connect, send `msg`, expect exactly `rn` reply bytes (into `reply`) and then the server's close. */
static inline void raw_answered_then_closed(uint16_t port, const void *msg, size_t n, uint8_t *reply, size_t rn) {
  int fd = raw_connect(port);
  raw_send(fd, msg, n);
  ASSERT_EQ(raw_recv(fd, reply, rn), rn);
  ASSERT_TRUE(raw_closed(fd));
  close(fd);
}

#endif
