/* Shared helpers of the Remote tests: an in-process server on a thread, raw TCP clients (harness/raw_tcp.h), fake servers. */
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
#include "link/remote/armt.h"
#include "harness/raw_tcp.h"
#include "harness/test.h"

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

/* ---- ARMT by hand ---- */

static inline autd3_geometry_t *geom(size_t n) {
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(n, NULL, &g));
  return g;
}

/* The v3 hello (magic, version, geometry of n devices) into b; returns its length. */
static inline size_t hello(uint8_t *b, size_t cap, size_t n) {
  autd3_geometry_t *g = geom(n);
  size_t len = autd3__armt_encode_hello(g, b, cap);
  autd3_geometry_free(g);
  return len;
}

/* A v3 handshake by hand: returns a connected raw socket in session with n devices (the server answered the u16
 * device count). */
static inline int raw_session(uint16_t port, size_t n) {
  static uint8_t b[AUTD3_MAX_DEVICES * (4 + 249 * 24) + 16];
  int fd = raw_connect(port);
  raw_send(fd, b, hello(b, sizeof b, n));
  uint8_t r[2];
  ASSERT_EQ(raw_recv(fd, r, 2), 2);
  ASSERT_EQ(r[0] | r[1] << 8, n);
  return fd;
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

/* Start a server with option `o` on 127.0.0.1, any free port; its log goes to quiet_log unless `o` names a sink. */
static inline void srv_start_opt(srv_t *v, autd3_remote_server_option_t o) {
  o.listen = "127.0.0.1:0";
  if (o.log == NULL) o.log = quiet_log;
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
