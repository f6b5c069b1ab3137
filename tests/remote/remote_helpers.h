/* Shared helpers of the Remote tests: an in-process server on a thread, raw TCP clients, fake servers. */
#ifndef AUTD3_TESTS_REMOTE_HELPERS_H
#define AUTD3_TESTS_REMOTE_HELPERS_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "autd3/link.h"
#include "autd3/remote_server.h"
#include "harness/test.h"

/* Connect a blocking TCP socket to 127.0.0.1:port with 10 s receive/send timeouts (a bound, not a timing check). */
static inline int raw_connect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_TRUE(fd >= 0);
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
  uint8_t b[256];
  for (;;) {
    ssize_t r = recv(fd, b, sizeof b, 0);
    if (r == 0) return true;
    if (r < 0) return errno == ECONNRESET;
  }
}

static inline uint16_t free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, (struct sockaddr *)&a, sizeof a);
  socklen_t l = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &l);
  close(fd);
  return ntohs(a.sin_port);
}

/* ---- in-process server on a thread ---- */

typedef struct srv {
  autd3_remote_server_t *s;
  pthread_t th;
  uint16_t port;
  char addr[32];
} srv_t;

static inline void quiet_log(void *ctx, const char *line) {
  (void)ctx;
  if (getenv("AUTD3_TEST_VERBOSE")) fprintf(stderr, "[server] %s\n", line);
}

static void *srv_main(void *arg) {
  srv_t *v = arg;
  autd3_err_t err = autd3_remote_server_run(v->s);
  if (err != AUTD3_OK) fprintf(stderr, "server run: %s\n", autd3_last_error());
  return NULL;
}

static inline void srv_start_opt(srv_t *v, autd3_remote_server_option_t o) {
  o.listen = "127.0.0.1:0";
  o.log = quiet_log;
  ASSERT_OK(autd3_remote_server_create(&o, &v->s));
  v->port = autd3_remote_server_port(v->s);
  snprintf(v->addr, sizeof v->addr, "127.0.0.1:%u", v->port);
  pthread_create(&v->th, NULL, srv_main, v);
}

static inline void srv_stop(srv_t *v) {
  autd3_remote_server_stop(v->s);
  pthread_join(v->th, NULL);
  autd3_remote_server_destroy(v->s);
}

static inline autd3_remote_server_stats_t srv_stats(srv_t *v) {
  autd3_remote_server_stats_t st;
  autd3_remote_server_stats(v->s, &st);
  return st;
}

#endif
