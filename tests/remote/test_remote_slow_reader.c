/*
 * The Remote server's send-progress timeout (docs/remote.md "Limits"): a
 * client that streams requests and never reads a reply is dropped once it has
 * run ahead of its replies for stall_timeout_ms, whatever the kernels buffer
 * (before: not within 60 s, its own receive buffer absorbing 65 000 replies);
 * one that streams slowly (never ahead of the bus) and never reads is dropped
 * once its replies fill its receive buffer and the server's fixed send buffer
 * and stay untaken for stall_timeout_ms; a client that reads its replies is
 * never dropped, and one gets the bus once the other is gone. In-process
 * server on loopback, over the in-process emulator link. The drop is proven
 * by the server's own reason (its log line) and counter; the wait for it is
 * bounded by stall_timeout_ms plus a margin for a loaded host (BOUND_MS), not
 * timed.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "link/remote/armt.h"
#include "platform/platform.h"
#include "remote_helpers.h"

#define DEVICES 2
#define STALL_MS 300u
/* stall_timeout_ms + what a loaded host may add: far below the minutes a kernel buffer used to absorb */
#define BOUND_MS (STALL_MS + 5000u)

/* The server's log lines (its reasons), kept for the test to look for. */
static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_log[16384];

static void keep_log(void *ctx, const char *line) {
  (void)ctx;
  pthread_mutex_lock(&g_log_lock);
  size_t l = strlen(g_log);
  snprintf(g_log + l, sizeof g_log - l, "%s\n", line);
  pthread_mutex_unlock(&g_log_lock);
  if (getenv("AUTD3_TEST_VERBOSE")) fprintf(stderr, "[server] %s\n", line);
}

static bool logged(const char *what) {
  pthread_mutex_lock(&g_log_lock);
  bool found = strstr(g_log, what) != NULL;
  pthread_mutex_unlock(&g_log_lock);
  return found;
}

static autd3_remote_server_option_t options(void) {
  autd3_remote_server_option_t o = autd3_remote_server_option_default();
  o.link = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  o.link.u.emulator.cycle_ns = 250000;
  o.stall_timeout_ms = STALL_MS;
  o.idle_timeout_ms = 300;
  o.log = keep_log;
  return o;
}

static autd3_err_t open_remote(const char *addr, autd3_link_t **out) {
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_REMOTE);
  o.u.remote.protocol = AUTD3_REMOTE_PROTOCOL_V3;
  o.u.remote.address = addr;
  o.u.remote.timeout_ms = 5000;
  autd3_geometry_t *g = geom(DEVICES);
  autd3_err_t err = autd3_link_open(&o, g, out);
  autd3_geometry_free(g);
  return err;
}

/* A v7 session by hand (its replies carry 50 bytes of bus facts besides the inputs, so a client's buffers fill
 * with fewer of them): hello both ways, the geometry, the session reply (code 0, u16 device count). */
static int raw_session7(uint16_t port, int rcvbuf) {
  static uint8_t b[DEVICES * (4 + 249 * 24) + 16];
  int fd = raw_connect_rcvbuf(port, rcvbuf);
  size_t len = autd3__armt_encode_hello7("0.9.0", b, sizeof b);
  autd3_geometry_t *g = geom(DEVICES);
  len += autd3__armt_encode_geometry(g, b + len, sizeof b - len);
  autd3_geometry_free(g);
  raw_send(fd, b, len);
  uint8_t h[ARMT7_HELLO_MAX];
  ASSERT_EQ(raw_recv(fd, h, 6), 6);
  ASSERT_EQ(h[4], ARMT_VERSION_7);
  if (h[5]) ASSERT_EQ(raw_recv(fd, h + 6, h[5]), h[5]);
  uint8_t r[3];
  ASSERT_EQ(raw_recv(fd, r, 3), 3);
  ASSERT_EQ(r[0], ARMT7_SESSION_OK);
  ASSERT_EQ(r[1] | r[2] << 8, DEVICES);
  return fd;
}

/* Cycles through the link, reading every reply (what a well-behaved client does). */
static void cycles(autd3_link_t *l, int n) {
  static uint8_t tx[DEVICES * AUTD3_TX_FRAME_BYTES], rx[DEVICES * 2];
  for (int i = 0; i < n; i++) {
    for (size_t d = 0; d < DEVICES; d++) autd3_tx_encode(tx + d * AUTD3_TX_FRAME_BYTES, 0, AUTD3_CMD_NOP, NULL, 0);
    bool valid;
    ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
  }
}

/* Stream requests on `fd` (non-blocking), one every `gap_us` (0: as fast as the socket takes them), never
 * reading, until the server hangs up or BOUND_MS. Returns whether it did; *ms = how long it took. */
static bool stream_unread(srv_t *v, int fd, unsigned gap_us, double *ms, uint64_t *sent) {
  ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK), 0);
  static uint8_t req[1 + DEVICES * AUTD3_TX_FRAME_BYTES];
  req[0] = 0x01; /* a frame request; the payload (all-zero frames) does not matter */
  uint64_t t0 = autd3__now_ns();
  size_t off = 0;
  bool gone = false;
  *sent = 0;
  while (!gone && autd3__now_ns() - t0 < (uint64_t)BOUND_MS * 1000000u) {
    ssize_t w = send(fd, req + off, sizeof req - off, MSG_NOSIGNAL);
    if (w > 0) {
      off += (size_t)w;
      if (off == sizeof req) off = 0, (*sent)++;
      if (off == 0 && gap_us) usleep(gap_us);
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      usleep(1000);
    } else {
      gone = true; /* EPIPE / ECONNRESET: the server closed the connection */
    }
    if (srv_stats(v).dropped >= 1) gone = true;
  }
  *ms = (double)(autd3__now_ns() - t0) / 1e6;
  return gone;
}

/* After a drop: the count is 1, the socket is closed, and a well-behaved client gets the bus and is served. */
static void then_good_client(srv_t *v, int bad) {
  for (int i = 0; i < 1000 && srv_stats(v).dropped < 1; i++) usleep(10000);
  ASSERT_EQ(srv_stats(v).dropped, 1);
  ASSERT_TRUE(raw_closed(bad));
  close(bad);
  autd3_link_t *good = NULL;
  autd3_err_t e = AUTD3_E_BUSY;
  for (int i = 0; i < 500 && e == AUTD3_E_BUSY; i++) {
    e = open_remote(v->addr, &good);
    if (e == AUTD3_E_BUSY) usleep(20000);
  }
  ASSERT_OK(e);
  cycles(good, 200);
  autd3_link_close(good);
  ASSERT_EQ(srv_stats(v).dropped, 1);
}

/* A client on a raw session (v7 with a small receive buffer, or v3) streams one request every gap_us and never
 * reads: dropped within BOUND_MS, for `reason` (the server's own log line), and the bus is free for the next. */
static void unread_case(const char *who, bool v7_small_buffer, unsigned gap_us, const char *reason) {
  srv_t v;
  srv_start_opt(&v, options());
  int bad = v7_small_buffer ? raw_session7(v.port, 4096) : raw_session(v.port, DEVICES);
  double ms;
  uint64_t sent;
  bool gone = stream_unread(&v, bad, gap_us, &ms, &sent);
  autd3_remote_server_stats_t st = srv_stats(&v);
  fprintf(stderr, "%s was dropped after %.0f ms (%llu requests sent, %llu answered; stall_timeout_ms %u)\n", who, ms,
          (unsigned long long)sent, (unsigned long long)st.requests, STALL_MS);
  if (!gone) TEST_FAIL_("not dropped within %u ms (stall_timeout_ms %u + margin)", BOUND_MS, STALL_MS);
  /* The fault happened: it was served for a while (requests answered), then dropped by the server, for the reason
   * the case is about (not the idle rule or a parse error). */
  ASSERT_GE(st.requests, 1);
  then_good_client(&v, bad);
  if (!logged(reason)) TEST_FAIL_("the server's reason is not \"%s\":\n%s", reason, g_log);
  srv_stop(&v);
}

TEST(client_that_never_reads_is_dropped) {
  unread_case("a client that never reads", false, 0, "it kept sending requests ahead of its replies");
}

/* One request every 2 ms (the bus answers each within a cycle: never ahead) and never a read, with a small receive
 * buffer (v7: 56-byte replies): once its buffer and the server's fixed send buffer are full (some 900 replies), the
 * replies stay untaken and it is dropped stall_timeout_ms later. (A client with a large receive buffer takes
 * correspondingly longer: the server cannot tell a reply buffered by the peer's kernel from one read; it bounds
 * what it holds itself.) */
TEST(slow_client_that_never_reads_is_dropped) {
  unread_case("a slow client that never reads", true, 2000, "it has not taken its replies for");
}

/* A client that reads its replies loses nothing to the rule or to the fixed
 * send buffer: a long pipelined stream with the same short stall timeout is
 * never dropped. */
TEST(client_that_reads_is_never_dropped) {
  srv_t v;
  srv_start_opt(&v, options());
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_REMOTE);
  o.u.remote.address = v.addr;
  o.u.remote.timeout_ms = 5000;
  o.u.remote.pipeline = AUTD3_REMOTE_PIPELINE_ON;
  autd3_geometry_t *g = geom(DEVICES);
  autd3_link_t *l = NULL;
  ASSERT_OK(autd3_link_open(&o, g, &l));
  autd3_geometry_free(g);
  cycles(l, 3000);
  autd3_link_close(l);
  autd3_remote_server_stats_t st = srv_stats(&v);
  ASSERT_GE(st.requests, 2900);
  ASSERT_EQ(st.dropped, 0);
  srv_stop(&v);
}
