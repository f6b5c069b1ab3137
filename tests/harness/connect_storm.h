/*
 * The connect-storm case of the servers that hold up (the Remote server, the
 * emulated TwinCAT runtime): hundreds of connections that connect and leave at
 * once, each of which would log two lines, must leave a log within the rate
 * limit's bound (burst + rate × elapsed; net/log_limit.h), report the count of
 * held-back lines, and not keep a legitimate client out. Test-only.
 */
#ifndef AUTD3_TESTS_HARNESS_CONNECT_STORM_H
#define AUTD3_TESTS_HARNESS_CONNECT_STORM_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/raw_tcp.h"
#include "harness/test.h"
#include "platform/platform.h"

#define CONNECT_STORM_LINES_PER_S 2u /* the server's log_lines_per_s in the case: bursts of 20 */
#define CONNECT_STORM_BURST 20

typedef struct {
  atomic_int lines, held;
} connect_storm_log_t;

/* The server's log sink: counts the lines and the "not logged: rate limit" reports (AUTD3_TEST_VERBOSE prints them). */
static inline void connect_storm_log(void *ctx, const char *line) {
  connect_storm_log_t *c = ctx;
  atomic_fetch_add(&c->lines, 1);
  if (strstr(line, "not logged: rate limit")) atomic_fetch_add(&c->held, 1);
  if (getenv("AUTD3_TEST_VERBOSE")) fprintf(stderr, "[server] %s\n", line);
}

typedef struct {
  /* Start the server with this log sink and CONNECT_STORM_LINES_PER_S; returns its port. */
  uint16_t (*start)(void *ctx, void (*log)(void *, const char *), void *log_ctx);
  void (*gets_in)(void *ctx); /* a legitimate client gets in and is served (asserts) */
  void (*stop)(void *ctx);
  void *ctx;
} connect_storm_server_t;

static inline void connect_storm_log_bounded(const connect_storm_server_t *s) {
  connect_storm_log_t lc;
  atomic_init(&lc.lines, 0);
  atomic_init(&lc.held, 0);
  uint64_t t0 = autd3__now_ns();
  uint16_t port = s->start(s->ctx, connect_storm_log, &lc);
  const int storm = 400; /* each would log its arrival and its leaving: 800 lines unlimited */
  for (int i = 0; i < storm; i++) close(raw_connect(port));
  usleep(700000); /* the bucket refills, so the client's lines get out with the held-back count */
  s->gets_in(s->ctx);
  s->stop(s->ctx);
  double elapsed = (double)(autd3__now_ns() - t0) / 1e9;
  int lines = atomic_load(&lc.lines);
  fprintf(stderr, "%d connections in %.2f s: %d log lines\n", storm, elapsed, lines);
  /* The bucket's bound (burst + rate x elapsed), which is far below one line per connection. */
  ASSERT_LE(lines, CONNECT_STORM_BURST + (int)(CONNECT_STORM_LINES_PER_S * elapsed) + 2);
  ASSERT_LT(lines, storm);
  ASSERT_GE(atomic_load(&lc.held), 1); /* the count of held-back lines is reported */
}

#endif
