/*
 * The Remote server's send-progress timeout (docs/remote.md "Limits"): a
 * client that streams requests and never reads a reply is dropped once it has
 * run ahead of its replies for stall_timeout_ms, whatever the kernels buffer
 * (before: not within 60 s, its own receive buffer absorbing 65 000 replies);
 * a client that reads its replies is never dropped, and one gets the bus once
 * the other is gone. In-process server on loopback, over the in-process
 * emulator link. Timing is reported, and bounded only to prove "dropped at all".
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>

#include "autd3/link_driver.h"
#include "link/remote/armt.h"
#include "platform/platform.h"
#include "remote_helpers.h"

#define DEVICES 2
#define BOUND_MS 60000u

static autd3_remote_server_option_t options(void) {
  autd3_remote_server_option_t o = autd3_remote_server_option_default();
  o.link = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  o.link.u.emulator.cycle_ns = 250000;
  o.stall_timeout_ms = 300;
  o.idle_timeout_ms = 300;
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

/* Cycles through the link, reading every reply (what a well-behaved client does). */
static void cycles(autd3_link_t *l, int n) {
  static uint8_t tx[DEVICES * AUTD3_TX_FRAME_BYTES], rx[DEVICES * 2];
  for (int i = 0; i < n; i++) {
    for (size_t d = 0; d < DEVICES; d++) autd3_tx_encode(tx + d * AUTD3_TX_FRAME_BYTES, 0, AUTD3_CMD_NOP, NULL, 0);
    bool valid;
    ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
  }
}

TEST(client_that_never_reads_is_dropped) {
  srv_t v;
  srv_start_opt(&v, options());
  int bad = raw_session(v.port, DEVICES);
  ASSERT_EQ(fcntl(bad, F_SETFL, fcntl(bad, F_GETFL, 0) | O_NONBLOCK), 0);
  static uint8_t req[1 + DEVICES * AUTD3_TX_FRAME_BYTES];
  req[0] = 0x01; /* a frame request; the payload (all-zero frames) does not matter */
  uint64_t t0 = autd3__now_ns(), sent = 0;
  size_t off = 0;
  bool gone = false;
  /* Stream requests, never read: until the server hangs up on us (or the bound). */
  while (!gone && autd3__now_ns() - t0 < (uint64_t)BOUND_MS * 1000000u) {
    ssize_t w = send(bad, req + off, sizeof req - off, MSG_NOSIGNAL);
    if (w > 0) {
      off += (size_t)w;
      if (off == sizeof req) off = 0, sent++;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      usleep(1000);
    } else {
      gone = true; /* EPIPE / ECONNRESET: the server closed the connection */
    }
    if (srv_stats(&v).dropped >= 1) gone = true;
  }
  double ms = (double)(autd3__now_ns() - t0) / 1e6;
  autd3_remote_server_stats_t st = srv_stats(&v);
  fprintf(stderr, "a client that never reads was dropped after %.0f ms (%llu requests sent, %llu answered; "
          "stall_timeout_ms %u)\n", ms, (unsigned long long)sent, (unsigned long long)st.requests, options().stall_timeout_ms);
  ASSERT_TRUE(gone);
  /* The fault happened: it was served for a while (requests answered) and then dropped by the server. */
  ASSERT_GE(st.requests, 1);
  for (int i = 0; i < 1000 && srv_stats(&v).dropped < 1; i++) usleep(10000);
  ASSERT_EQ(srv_stats(&v).dropped, 1);
  ASSERT_TRUE(raw_closed(bad));
  close(bad);
  /* A well-behaved client gets the bus and is served. */
  autd3_link_t *good = NULL;
  autd3_err_t e = AUTD3_E_BUSY;
  for (int i = 0; i < 500 && e == AUTD3_E_BUSY; i++) {
    e = open_remote(v.addr, &good);
    if (e == AUTD3_E_BUSY) usleep(20000);
  }
  ASSERT_OK(e);
  cycles(good, 200);
  autd3_link_close(good);
  ASSERT_EQ(srv_stats(&v).dropped, 1);
  srv_stop(&v);
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
