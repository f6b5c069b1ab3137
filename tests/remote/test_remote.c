/*
 * The Remote link against the in-process server (and fake servers): the wire
 * in both directions, every client-side error, and hostile clients. The
 * server wraps a test "echo" link registered in place of the emulator, so the
 * bytes are deterministic: rx of device d = (tx[d][0], tx[d][1]).
 */
#include <stdatomic.h>

#include "autd3/link_driver.h"
#include "link/remote/armt.h"
#include "platform/platform.h"
#include "harness/connect_storm.h"
#include "remote_helpers.h"

/* ---- the echo link (a test double, as the reference's loopback.rs EchoLink) ---- */

typedef struct echo {
  struct autd3_link base;
  uint64_t next;
} echo_t;
static atomic_bool echo_fail_open;

static autd3_err_t echo_cycle(struct autd3_link *l, const uint8_t *tx, uint8_t *rx, bool *valid) {
  echo_t *e = (echo_t *)l;
  autd3__sleep_until_ns(e->next, 0); /* paced like a bus: 200 us grid */
  e->next += 200000;
  uint64_t now = autd3__now_ns();
  if (e->next < now) e->next = now + 200000;
  *valid = true;
  for (size_t d = 0; d < l->num_devices; d++) {
    const uint8_t *t = tx + d * AUTD3_TX_FRAME_BYTES;
    rx[2 * d] = t[0];
    rx[2 * d + 1] = t[1];
    if (t[1] == 0xEE) *valid = false;                                            /* cmd 0xEE: stale inputs */
    if (t[1] == 0xDD) return autd3_set_error(AUTD3_E_LINK, "echo: injected failure"); /* cmd 0xDD: link dies */
  }
  autd3_link_count_cycle(l, *valid, false);
  return AUTD3_OK;
}
static void echo_close(struct autd3_link *l) { free(l); }
static const autd3_link_vtable_t echo_vt = {.cycle = echo_cycle, .close = echo_close};
static autd3_err_t echo_open(const autd3_link_option_t *o, const autd3_geometry_t *g, struct autd3_link **out) {
  (void)o;
  if (atomic_load(&echo_fail_open)) return autd3_set_error(AUTD3_E_NO_DEVICE, "echo: no device on the bus");
  echo_t *e = calloc(1, sizeof *e);
  autd3_link_init(&e->base, &echo_vt, AUTD3_LINK_EMULATOR, (uint16_t)autd3_geometry_num_devices(g));
  e->next = autd3__now_ns();
  *out = &e->base;
  return AUTD3_OK;
}

static void use_echo(void) { ASSERT_OK(autd3_link_register(AUTD3_LINK_EMULATOR, echo_open)); }

static void start(srv_t *v, uint16_t devices) {
  use_echo();
  autd3_remote_server_option_t o = autd3_remote_server_option_default();
  o.devices = devices;
  srv_start_opt(v, o);
}

/* Protocol of open_remote: 0 = the default (newest, v7); the fake servers below speak v3. */
static uint32_t g_protocol;

/* Open a Remote link for n devices at addr with g_protocol and the given pipelining. */
static autd3_err_t open_remote_mode(const char *addr, size_t n, uint32_t timeout_ms, autd3_remote_pipeline_t pipeline,
                                    autd3_link_t **out) {
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_REMOTE);
  o.u.remote.protocol = g_protocol;
  o.u.remote.pipeline = pipeline;
  o.u.remote.address = addr;
  o.u.remote.timeout_ms = timeout_ms;
  autd3_geometry_t *g = geom(n);
  autd3_err_t err = autd3_link_open(&o, g, out);
  autd3_geometry_free(g);
  return err;
}

/* Without pipelining: exact per-call echoes (AUTO and ON have their own tests). */
static autd3_err_t open_remote(const char *addr, size_t n, uint32_t timeout_ms, autd3_link_t **out) {
  return open_remote_mode(addr, n, timeout_ms, AUTD3_REMOTE_PIPELINE_OFF, out);
}

/* One cycle with tx[d] = (seq, cmd) and check the echo. */
static void cycle_echo(autd3_link_t *l, size_t n, uint8_t seq, uint8_t cmd, bool want_valid) {
  static uint8_t tx[AUTD3_MAX_DEVICES * AUTD3_TX_FRAME_BYTES], rx[AUTD3_MAX_DEVICES * 2];
  for (size_t d = 0; d < n; d++) autd3_tx_encode(tx + d * AUTD3_TX_FRAME_BYTES, (uint8_t)(seq + d), cmd, NULL, 0);
  bool valid = !want_valid;
  ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
  ASSERT_EQ(valid, want_valid);
  for (size_t d = 0; d < n; d++) {
    ASSERT_EQ(rx[2 * d], (uint8_t)(seq + d));
    ASSERT_EQ(rx[2 * d + 1], cmd);
  }
}

static size_t frame_req(uint8_t *b, size_t n, uint8_t seq, uint8_t cmd) {
  b[0] = 0x01;
  for (size_t d = 0; d < n; d++) autd3_tx_encode(b + 1 + d * AUTD3_TX_FRAME_BYTES, (uint8_t)(seq + d), cmd, NULL, 0);
  return 1 + n * AUTD3_TX_FRAME_BYTES;
}

/* ================= wire format, server side ================= */

/* Server -> client bytes: u16 N after the geometry; u8 rx_valid + N x 2 per request; nothing after 0x02. */
TEST(server_reply_bytes) {
  srv_t v;
  start(&v, 0);
  int fd = raw_session(v.port, 2);
  static uint8_t req[1 + 2 * 626];
  raw_send(fd, req, frame_req(req, 2, 0x10, 0x04));
  uint8_t r[5];
  ASSERT_EQ(raw_recv(fd, r, 5), 5);
  static const uint8_t want[] = {0x01, 0x10, 0x04, 0x11, 0x04};
  ASSERT_MEMEQ(r, want, 5);
  raw_send(fd, req, frame_req(req, 2, 0x20, 0xEE)); /* stale inputs -> rx_valid byte 0 */
  ASSERT_EQ(raw_recv(fd, r, 5), 5);
  static const uint8_t want2[] = {0x00, 0x20, 0xEE, 0x21, 0xEE};
  ASSERT_MEMEQ(r, want2, 5);
  uint8_t close_tag = 0x02;
  raw_send(fd, &close_tag, 1);
  ASSERT_TRUE(raw_closed(fd));
  close(fd);
  srv_stop(&v);
}

/* v7 by hand, as autd3-rs-link-remote 0.9.0's client does it: hello both ways, geometry, session reply 00 + u16 N,
 * per request the 50-byte header (rx_valid, DC time, recovering, 5 counters) + N state bytes + N x 2 rx. */
static int raw_session7(uint16_t port, size_t n, uint8_t *code, char *text, size_t text_cap) {
  static uint8_t b[AUTD3_MAX_DEVICES * (4 + 249 * 24) + 16];
  int fd = raw_connect(port);
  static const uint8_t h7[] = {'A', 'R', 'M', 'T', 7, 5, '0', '.', '9', '.', '0'};
  raw_send(fd, h7, sizeof h7);
  uint8_t head[6];
  ASSERT_EQ(raw_recv(fd, head, 6), 6);
  ASSERT_MEMEQ(head, "ARMT\x07", 5);
  char sdk[256];
  ASSERT_EQ(raw_recv(fd, sdk, head[5]), head[5]);
  sdk[head[5]] = 0;
  ASSERT_CONTAINS(sdk, "libautd3");
  autd3_geometry_t *g = geom(n);
  size_t len = autd3__armt_encode_geometry(g, b, sizeof b);
  autd3_geometry_free(g);
  raw_send(fd, b, len);
  uint8_t r[3];
  ASSERT_EQ(raw_recv(fd, r, 3), 3);
  *code = r[0];
  if (r[0] == 0) {
    ASSERT_EQ(r[1] | r[2] << 8, n);
  } else {
    size_t tl = (size_t)(r[1] | r[2] << 8);
    ASSERT_TRUE(tl < text_cap);
    ASSERT_EQ(raw_recv(fd, text, tl), tl);
    text[tl] = 0;
  }
  return fd;
}

TEST(server_reply_bytes_v7) {
  srv_t v;
  start(&v, 0);
  uint8_t code = 0xFF;
  char text[600];
  int fd = raw_session7(v.port, 2, &code, text, sizeof text);
  ASSERT_EQ(code, 0);
  static uint8_t req[1 + 2 * 626];
  raw_send(fd, req, frame_req(req, 2, 0x10, 0x04));
  uint8_t r[ARMT7_REPLY_HEADER_BYTES + 2 + 4];
  ASSERT_EQ(raw_recv(fd, r, sizeof r), sizeof r);
  armt7_status_t st;
  autd3__armt_decode_reply7_header(r, &st);
  ASSERT_TRUE(st.rx_valid);
  ASSERT_EQ(st.dc_time_ns, 0); /* unknown */
  ASSERT_EQ(r[50], ARMT7_DEV_OP);
  ASSERT_EQ(r[51], ARMT7_DEV_OP);
  static const uint8_t want[] = {0x10, 0x04, 0x11, 0x04};
  ASSERT_MEMEQ(r + 52, want, 4);
  raw_send(fd, req, frame_req(req, 2, 0x20, 0xEE)); /* stale inputs -> rx_valid 0 */
  ASSERT_EQ(raw_recv(fd, r, sizeof r), sizeof r);
  ASSERT_EQ(r[0], 0);
  static const uint8_t want2[] = {0x20, 0xEE, 0x21, 0xEE};
  ASSERT_MEMEQ(r + 52, want2, 4);
  uint8_t close_tag = 0x02;
  raw_send(fd, &close_tag, 1);
  ASSERT_TRUE(raw_closed(fd));
  close(fd);
  /* a shared bus of 2 refuses a 1-device geometry with code 2 and the reference's text */
  srv_stop(&v);
  start(&v, 2);
  fd = raw_session7(v.port, 1, &code, text, sizeof text);
  ASSERT_EQ(code, ARMT7_SESSION_DEVICE_COUNT);
  ASSERT_CONTAINS(text, "the bus has 2");
  ASSERT_TRUE(raw_closed(fd));
  close(fd);
  /* a busy server refuses a v7 client in v7 (bus unavailable + text) */
  int a = raw_session7(v.port, 2, &code, text, sizeof text);
  ASSERT_EQ(code, 0);
  fd = raw_session7(v.port, 2, &code, text, sizeof text);
  ASSERT_EQ(code, ARMT7_SESSION_BUS_UNAVAILABLE);
  ASSERT_CONTAINS(text, "server busy");
  close(fd);
  close(a);
  srv_stop(&v);
}

/* v7 hostile input: counts out of range after the hellos get session code 4 with the reason, then the server
 * closes; a v7 hello cut short holds nothing; the server keeps serving. */
TEST(hostile_v7_geometry) {
  srv_t v;
  start(&v, 0);
  static const uint8_t h7[] = {'A', 'R', 'M', 'T', 7, 5, '0', '.', '9', '.', '0'};
  static const uint8_t big[] = {0xFF, 0xFF, 0xFF, 0xFF};
  int fd = raw_connect(v.port);
  raw_send(fd, h7, sizeof h7);
  uint8_t r[600];
  ASSERT_EQ(raw_recv(fd, r, 6), 6);
  ASSERT_EQ(raw_recv(fd, r + 6, r[5]), r[5]);
  raw_send(fd, big, sizeof big);
  ASSERT_EQ(raw_recv(fd, r, 3), 3);
  ASSERT_EQ(r[0], ARMT7_SESSION_INTERNAL);
  size_t tl = (size_t)(r[1] | r[2] << 8);
  ASSERT_EQ(raw_recv(fd, r, tl), tl);
  r[tl] = 0;
  ASSERT_CONTAINS((const char *)r, "device count");
  ASSERT_TRUE(raw_closed(fd));
  close(fd);
  fd = raw_connect(v.port);
  raw_send(fd, h7, 7); /* "ARMT" 07 05 "0": the rest never comes */
  close(fd);
  autd3_link_t *l = NULL;
  ASSERT_OK(open_remote(v.addr, 1, 2000, &l));
  cycle_echo(l, 1, 3, AUTD3_CMD_NOP, true);
  autd3_link_close(l);
  srv_stop(&v);
}

/* ================= the link end to end ================= */

TEST(link_roundtrip_and_reconnect) {
  srv_t v;
  start(&v, 0);
  for (int round = 0; round < 3; round++) { /* a new client is accepted after one leaves */
    autd3_link_t *l = NULL;
    ASSERT_OK(open_remote(v.addr, 3, 2000, &l));
    ASSERT_EQ(autd3_link_num_devices(l), 3);
    ASSERT_EQ(autd3_link_kind(l), AUTD3_LINK_REMOTE);
    for (int i = 0; i < 20; i++) cycle_echo(l, 3, (uint8_t)(i * 3), AUTD3_CMD_NOP, true);
    cycle_echo(l, 3, 7, 0xEE, false);
    for (int i = 0; i < 20; i++) { /* the bus loop's order: wait, stage, cycle (the wait is timing only) */
      ASSERT_OK(autd3_link_wait_next_cycle(l));
      cycle_echo(l, 3, (uint8_t)(100 + i), AUTD3_CMD_NOP, true);
    }
    autd3_link_stats_t st;
    autd3_link_stats(l, &st);
    ASSERT_EQ(st.cycles, 41);
    ASSERT_EQ(st.stale_cycles, 1);
    autd3_link_close(l);
  }
  autd3_remote_server_stats_t st = srv_stats(&v);
  ASSERT_EQ(st.requests, 123);
  ASSERT_EQ(st.refused, 0);
  srv_stop(&v);
}

TEST(shared_bus_devices_mode) {
  srv_t v;
  start(&v, 2);
  autd3_link_t *l = NULL;
  ASSERT_OK(open_remote(v.addr, 2, 2000, &l));
  cycle_echo(l, 2, 1, AUTD3_CMD_NOP, true);
  autd3_link_close(l);
  ASSERT_OK(open_remote(v.addr, 2, 2000, &l));
  cycle_echo(l, 2, 9, AUTD3_CMD_CLEAR, true);
  autd3_link_close(l);
  srv_stop(&v);
}

/* ================= client-side errors ================= */

TEST(error_connection_refused) {
  char addr[32];
  snprintf(addr, sizeof addr, "127.0.0.1:%u", free_port());
  autd3_link_t *l = NULL;
  ASSERT_ERR(open_remote(addr, 1, 1000, &l), AUTD3_E_CONNECT);
  ASSERT_CONTAINS(autd3_last_error(), addr);
  ASSERT_ERR(open_remote("no-such-host.invalid:8080", 1, 1000, &l), AUTD3_E_CONNECT);
  ASSERT_CONTAINS(autd3_last_error(), "resolve");
}

TEST(error_bad_address) {
  autd3_link_t *l = NULL;
  ASSERT_ERR(open_remote("127.0.0.1", 1, 0, &l), AUTD3_E_INVALID_OPTION);
  ASSERT_ERR(open_remote("::1:8080", 1, 0, &l), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "[::1]:8080");
  ASSERT_ERR(open_remote("127.0.0.1:99999", 1, 0, &l), AUTD3_E_INVALID_OPTION);
  ASSERT_ERR(open_remote("", 1, 0, &l), AUTD3_E_INVALID_OPTION);
}

TEST(ipv6_and_names) {
  srv_t v;
  use_echo();
  autd3_remote_server_option_t o = autd3_remote_server_option_default();
  o.listen = "[::1]:0";
  o.log = quiet_log;
  if (autd3_remote_server_create(&o, &v.s) != AUTD3_OK) SKIP("no IPv6 loopback here: %s", autd3_last_error());
  v.port = autd3_remote_server_port(v.s);
  pthread_create(&v.th, NULL, srv_main, &v);
  char addr[64];
  snprintf(addr, sizeof addr, "[::1]:%u", v.port);
  autd3_link_t *l = NULL;
  ASSERT_OK(open_remote(addr, 1, 2000, &l));
  cycle_echo(l, 1, 5, AUTD3_CMD_NOP, true);
  autd3_link_close(l);
  snprintf(addr, sizeof addr, "localhost:%u", v.port); /* resolves to ::1 (or 127.0.0.1 first, then ::1) */
  if (open_remote(addr, 1, 2000, &l) == AUTD3_OK) {
    cycle_echo(l, 1, 6, AUTD3_CMD_NOP, true);
    autd3_link_close(l);
  }
  srv_stop(&v);
}

/* ---- fake servers ---- */

typedef struct fake {
  int lfd;
  uint16_t port;
  char addr[32];
  pthread_t th;
  const uint8_t *reply; /* sent after the hello + geometry arrived */
  size_t reply_len;
  int after; /* 0: close; 1: read one frame then close; 2: keep silent until the client leaves; 3: capture */
  uint8_t hello[5 + 4 + 4 + 249 * 24], req[1 + 626], tail[8]; /* 3: what the client sent */
  size_t tail_len;
} fake_t;

static void *fake_main(void *arg) {
  fake_t *f = arg;
  int fd = accept(f->lfd, NULL, NULL);
  if (fd < 0) return NULL;
  static uint8_t junk[1 << 16];
  size_t want = 5 + 4 + (4 + 249 * 24); /* one device */
  raw_recv(fd, junk, want);
  if (f->reply_len) raw_send(fd, f->reply, f->reply_len);
  if (f->after == 1) raw_recv(fd, junk, 1 + 626);
  if (f->after == 2) raw_closed(fd);
  if (f->after == 3) { /* hello already read into junk: keep it; one frame, a reply, then whatever comes */
    memcpy(f->hello, junk, sizeof f->hello);
    raw_recv(fd, f->req, sizeof f->req);
    static const uint8_t rep[] = {0x01, 0xAB, 0xCD};
    raw_send(fd, rep, sizeof rep);
    f->tail_len = raw_recv(fd, f->tail, sizeof f->tail);
  }
  close(fd);
  return NULL;
}

static void fake_start(fake_t *f, const void *reply, size_t len, int after) {
  f->lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(f->lfd, (struct sockaddr *)&a, sizeof a);
  listen(f->lfd, 1);
  socklen_t sl = sizeof a;
  getsockname(f->lfd, (struct sockaddr *)&a, &sl);
  f->port = ntohs(a.sin_port);
  snprintf(f->addr, sizeof f->addr, "127.0.0.1:%u", f->port);
  f->reply = reply;
  f->reply_len = len;
  f->after = after;
  pthread_create(&f->th, NULL, fake_main, f);
}

static void fake_stop(fake_t *f) {
  pthread_join(f->th, NULL);
  close(f->lfd);
}

static autd3_err_t open_against(const void *reply, size_t len, int after, uint32_t timeout_ms, autd3_link_t **l) {
  fake_t f;
  fake_start(&f, reply, len, after);
  g_protocol = 3; /* the fake servers speak v3 */
  autd3_err_t err = open_remote(f.addr, 1, timeout_ms, l);
  g_protocol = 0;
  if (err == AUTD3_OK && after == 2) return err; /* the caller drives the silent server */
  fake_stop(&f);
  return err;
}

/* Client -> server bytes of the link: the hello + geometry, 01 + tx per cycle, 02 on close (nothing else). */
TEST(link_request_bytes) {
  static const uint8_t ok1[] = {1, 0};
  fake_t f;
  fake_start(&f, ok1, 2, 3);
  autd3_link_t *l = NULL;
  g_protocol = 3;
  ASSERT_OK(open_remote(f.addr, 1, 2000, &l));
  uint8_t tx[626], rx[2];
  for (int i = 0; i < 626; i++) tx[i] = (uint8_t)(i * 7);
  bool valid = false;
  ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
  ASSERT_TRUE(valid);
  ASSERT_EQ(rx[0], 0xAB);
  ASSERT_EQ(rx[1], 0xCD);
  autd3_link_close(l);
  fake_stop(&f);
  static const uint8_t head[] = {'A', 'R', 'M', 'T', 3, 1, 0, 0, 0, 249, 0, 0, 0};
  ASSERT_MEMEQ(f.hello, head, sizeof head);
  ASSERT_EQ(f.req[0], 0x01);
  ASSERT_MEMEQ(f.req + 1, tx, 626);
  ASSERT_EQ(f.tail_len, 1);
  ASSERT_EQ(f.tail[0], 0x02);
}

/* A scripted v7 server: reads the client's hello, sends `script` (its hello + session reply), then, if `frames`,
 * reads the geometry and answers that many requests with `reply`; then waits for the client to leave. One device. */
typedef struct fake7 {
  int lfd;
  char addr[32];
  pthread_t th;
  const uint8_t *script, *reply;
  size_t script_len, reply_len;
  int frames;
  size_t reply_stride; /* 0: every request gets `reply`; else request i gets reply + i * stride */
} fake7_t;

static void *fake7_main(void *arg) {
  fake7_t *f = arg;
  int fd = accept(f->lfd, NULL, NULL);
  if (fd < 0) return NULL;
  static uint8_t junk[1 << 16];
  uint8_t h[6];
  if (raw_recv(fd, h, 6) == 6) raw_recv(fd, junk, h[5]);
  if (f->script_len == 0 && f->frames == 0) { /* a v3-only server (0.1-0.4) drops a v7 hello without a word */
    close(fd);
    return NULL;
  }
  if (f->script_len) raw_send(fd, f->script, f->script_len); /* the session reply may go ahead of the geometry */
  if (f->frames) raw_recv(fd, junk, 4 + 4 + 249 * 24);        /* geometry of one device */
  for (int i = 0; i < f->frames; i++) {
    if (raw_recv(fd, junk, 1 + 626) != 1 + 626) break;
    raw_send(fd, f->reply + (size_t)i * f->reply_stride, f->reply_len);
  }
  raw_closed(fd);
  close(fd);
  return NULL;
}

/* Open a v7 link (1 device) against a scripted server that answers the hello with `hello` and the geometry with
 * `session`. Returns the open result; an open link is closed and the fake joined. */
static size_t fake7_stride;             /* per-request replies (fake7_t.reply_stride) for the next open_fake7 */
static autd3_link_stats_t fake7_stats; /* the link's statistics before open_fake7 closed it */
static autd3_err_t open_fake7(const uint8_t *hello, size_t hl, const uint8_t *session, size_t sl, int frames, const uint8_t *reply,
                              size_t rl, autd3_link_status_t *st) {
  static uint8_t script[1024];
  if (hl) memcpy(script, hello, hl);
  if (sl) memcpy(script + hl, session, sl);
  fake7_t f = {.script = script, .script_len = hl + sl, .reply = reply, .reply_len = rl, .frames = frames,
               .reply_stride = fake7_stride};
  f.lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(f.lfd, (struct sockaddr *)&a, sizeof a);
  listen(f.lfd, 1);
  socklen_t al = sizeof a;
  getsockname(f.lfd, (struct sockaddr *)&a, &al);
  snprintf(f.addr, sizeof f.addr, "127.0.0.1:%u", ntohs(a.sin_port));
  pthread_create(&f.th, NULL, fake7_main, &f);
  autd3_link_t *l = NULL;
  autd3_err_t err = open_remote(f.addr, 1, 2000, &l);
  if (err == AUTD3_OK) {
    static uint8_t tx[626];
    uint8_t rx[2];
    bool valid;
    for (int i = 0; i < frames; i++) ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
    if (st) ASSERT_OK(autd3_link_check_state(l, st));
    autd3_link_stats(l, &fake7_stats);
    autd3_link_close(l);
  }
  pthread_join(f.th, NULL);
  close(f.lfd);
  return err;
}

TEST(v7_link_session_replies_and_states) {
  static const uint8_t h7[] = {'A', 'R', 'M', 'T', 7, 5, '0', '.', '9', '.', '0'};
  /* reject codes -> errors (error.rs RejectKind), the detail text carried */
  static const uint8_t closed[] = {0x01, 4, 0, 'n', 'o', 'p', 'e'};
  ASSERT_ERR(open_fake7(h7, sizeof h7, closed, sizeof closed, 0, NULL, 0, NULL), AUTD3_E_REMOTE);
  ASSERT_CONTAINS(autd3_last_error(), "the bus is closed, code 1): nope");
  static const uint8_t count[] = {0x02, 14, 0, 't', 'h', 'e', ' ', 'b', 'u', 's', ' ', 'h', 'a', 's', ' ', '2', ';'};
  ASSERT_ERR(open_fake7(h7, sizeof h7, count, sizeof count, 0, NULL, 0, NULL), AUTD3_E_DEVICE_COUNT_MISMATCH);
  static const uint8_t busy[] = {0x03, 11, 0, 's', 'e', 'r', 'v', 'e', 'r', ' ', 'b', 'u', 's', 'y'};
  ASSERT_ERR(open_fake7(h7, sizeof h7, busy, sizeof busy, 0, NULL, 0, NULL), AUTD3_E_BUSY);
  static const uint8_t odd[] = {0x33, 0, 0};
  ASSERT_ERR(open_fake7(h7, sizeof h7, odd, sizeof odd, 0, NULL, 0, NULL), AUTD3_E_REMOTE);
  ASSERT_CONTAINS(autd3_last_error(), "unknown reason, code 51");
  static const uint8_t two[] = {0x00, 2, 0};
  ASSERT_ERR(open_fake7(h7, sizeof h7, two, sizeof two, 0, NULL, 0, NULL), AUTD3_E_DEVICE_COUNT_MISMATCH);
  /* a server hello of another version; none at all (a v3-only server drops a v7 hello); not ARMT */
  static const uint8_t h3[] = {'A', 'R', 'M', 'T', 3, 0};
  ASSERT_ERR(open_fake7(h3, sizeof h3, NULL, 0, 0, NULL, 0, NULL), AUTD3_E_VERSION);
  ASSERT_CONTAINS(autd3_last_error(), "protocol = 3");
  ASSERT_ERR(open_fake7(NULL, 0, NULL, 0, 0, NULL, 0, NULL), AUTD3_E_VERSION);
  ASSERT_CONTAINS(autd3_last_error(), "may speak only v3");
  static const uint8_t http[] = {'H', 'T', 'T', 'P', '/', '1'};
  ASSERT_ERR(open_fake7(http, sizeof http, NULL, 0, 0, NULL, 0, NULL), AUTD3_E_VERSION);
  ASSERT_CONTAINS(autd3_last_error(), "not an ARMT server");
  /* a session: the reply's device state reaches check_state (LOST), rx_valid and rx as sent */
  static const uint8_t ok[] = {0x00, 1, 0};
  uint8_t rep[ARMT7_REPLY_HEADER_BYTES + 1 + 2] = {0};
  armt7_status_t hs = {.rx_valid = true, .recoveries = 4};
  autd3__armt_encode_reply7_header(rep, &hs);
  rep[ARMT7_REPLY_HEADER_BYTES] = ARMT7_DEV_LOST;
  autd3_link_status_t st;
  ASSERT_OK(open_fake7(h7, sizeof h7, ok, sizeof ok, 2, rep, sizeof rep, &st));
  ASSERT_EQ(st.state[0], AUTD3_DEVICE_LOST);
  ASSERT_EQ(st.recoveries, 4);
}

/* v7 carries the server link's counters: each exchange is stale as its reply says, and lost when, stale, its
 * reply shows the server's link lost cycles since the previous reply; the phase excursions are what the replies
 * counted since the first (a counter that went back, the server reopened its link, counts from zero); the worst
 * phase deviation is kept and says the server measures phase; the exchanges are the client's own. */
TEST(v7_link_carries_server_counts) {
  static const uint8_t h7[] = {'A', 'R', 'M', 'T', 7, 5, '0', '.', '9', '.', '0'};
  static const uint8_t ok[] = {0x00, 1, 0};
  enum { R = ARMT7_REPLY_HEADER_BYTES + 1 + 2 };
  static uint8_t rep[4 * R];
  const armt7_status_t hs[4] = {
      {.rx_valid = true, .stale_cycles = 5, .lost_cycles = 1},
      {.rx_valid = false, .stale_cycles = 8, .lost_cycles = 2, .phase_excursions = 1, .worst_phase_deviation_ns = 3000},
      {.rx_valid = true, .stale_cycles = 2, .lost_cycles = 0, .worst_phase_deviation_ns = 100}, /* reopened */
      {.rx_valid = true, .stale_cycles = 2, .lost_cycles = 0, .worst_phase_deviation_ns = 100}};
  for (int i = 0; i < 4; i++) {
    autd3__armt_encode_reply7_header(rep + i * R, &hs[i]);
    rep[i * R + ARMT7_REPLY_HEADER_BYTES] = ARMT7_DEV_OP;
  }
  fake7_stride = R;
  ASSERT_OK(open_fake7(h7, sizeof h7, ok, sizeof ok, 4, rep, R, NULL));
  fake7_stride = 0;
  autd3_link_stats_t s = fake7_stats;
  ASSERT_EQ(s.cycles, 4);
  ASSERT_EQ(s.stale_cycles, 1); /* the one reply with rx_valid 0 */
  ASSERT_EQ(s.lost_cycles, 1);  /* ... which also shows a lost cycle on the server's link */
  ASSERT_EQ(s.phase_excursions, 1);
  ASSERT_EQ(s.worst_phase_deviation_ns, 3000);
  ASSERT_EQ(s.measured & (AUTD3_LINK_MEASURES_LOST | AUTD3_LINK_MEASURES_PHASE | AUTD3_LINK_MEASURES_EXCHANGE),
            AUTD3_LINK_MEASURES_LOST | AUTD3_LINK_MEASURES_PHASE | AUTD3_LINK_MEASURES_EXCHANGE);
  ASSERT_GT(s.exchanges, 0);
  /* a server whose link measures no phase (all zero) leaves phase "not measured" */
  static uint8_t flat[R];
  armt7_status_t z = {.rx_valid = true};
  autd3__armt_encode_reply7_header(flat, &z);
  flat[ARMT7_REPLY_HEADER_BYTES] = ARMT7_DEV_OP;
  ASSERT_OK(open_fake7(h7, sizeof h7, ok, sizeof ok, 3, flat, R, NULL));
  ASSERT_EQ(fake7_stats.measured & AUTD3_LINK_MEASURES_PHASE, 0);
  ASSERT_EQ(fake7_stats.stale_cycles, 0);
}

/* The link's protocol option is range-checked. */
TEST(error_bad_protocol_option) {
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_REMOTE);
  o.u.remote.protocol = 5;
  autd3_geometry_t *g = geom(1);
  autd3_link_t *l = NULL;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "protocol = 5");
  autd3_geometry_free(g);
}

TEST(error_version_legacy_v1_server) {
  /* autd3 v38's RemoteServer answers a non-HELLO first byte with 0xFF, u32 length, text. */
  static const char text[] = "Handshake is required before sending commands";
  uint8_t r[64] = {0xFF, (uint8_t)(sizeof text - 1), 0, 0, 0};
  memcpy(r + 5, text, sizeof text - 1);
  autd3_link_t *l = NULL;
  ASSERT_ERR(open_against(r, 5 + sizeof text - 1, 0, 2000, &l), AUTD3_E_VERSION);
  ASSERT_CONTAINS(autd3_last_error(), "AUTD3REMOTE v1");
  ASSERT_CONTAINS(autd3_last_error(), text);
}

TEST(error_version_v7_server) {
  /* A v3 link against autd3-rs-link-remote >= 0.5, which answers with its own hello: "ARMT" 07 len "0.9.0". */
  static const uint8_t r[] = {'A', 'R', 'M', 'T', 7, 5, '0', '.', '9', '.', '0'};
  autd3_link_t *l = NULL;
  ASSERT_ERR(open_against(r, sizeof r, 0, 2000, &l), AUTD3_E_VERSION);
  ASSERT_CONTAINS(autd3_last_error(), "ARMT v7 (autd3-sdk 0.9.0)");
}

TEST(error_version_refused_by_our_server) {
  static const uint8_t r[] = {0, 0, 0x10, 4, 0, 'v', 'e', 'r', '!'};
  autd3_link_t *l = NULL;
  ASSERT_ERR(open_against(r, sizeof r, 0, 2000, &l), AUTD3_E_VERSION);
  ASSERT_CONTAINS(autd3_last_error(), "ver!");
  /* and the real server refuses a version-2 hello that way */
  srv_t v;
  start(&v, 0);
  static const uint8_t h[] = {'A', 'R', 'M', 'T', 2, 1, 0, 0, 0};
  uint8_t b[5];
  raw_answered_then_closed(v.port, h, sizeof h, b, 5);
  ASSERT_EQ(b[0] | b[1], 0);
  ASSERT_EQ(b[2], 0x10);
  srv_stop(&v);
}

TEST(error_server_closes_during_handshake) {
  /* What the reference RemoteServer does on a wrong magic/version: drop the connection. */
  autd3_link_t *l = NULL;
  ASSERT_ERR(open_against(NULL, 0, 0, 2000, &l), AUTD3_E_PEER_CLOSED);
  ASSERT_CONTAINS(autd3_last_error(), "handshake");
}

TEST(error_device_count_mismatch) {
  srv_t v;
  start(&v, 2);
  autd3_link_t *l = NULL;
  ASSERT_ERR(open_remote(v.addr, 3, 2000, &l), AUTD3_E_DEVICE_COUNT_MISMATCH); /* v7: session code 2 */
  ASSERT_CONTAINS(autd3_last_error(), "geometry has 3 device(s) but the bus has 2");
  g_protocol = 3;
  ASSERT_ERR(open_remote(v.addr, 3, 2000, &l), AUTD3_E_DEVICE_COUNT_MISMATCH); /* v3: the server's count */
  g_protocol = 0;
  ASSERT_CONTAINS(autd3_last_error(), "drives 2 device(s) but the geometry has 3");
  ASSERT_OK(open_remote(v.addr, 2, 2000, &l)); /* the server is still fine */
  cycle_echo(l, 2, 3, AUTD3_CMD_NOP, true);
  autd3_link_close(l);
  srv_stop(&v);
  /* a fixed-count reference server answers its own count: same error */
  static const uint8_t r[] = {4, 0};
  ASSERT_ERR(open_against(r, 2, 0, 2000, &l), AUTD3_E_DEVICE_COUNT_MISMATCH);
}

TEST(error_remote_link_open_fails) {
  srv_t v;
  start(&v, 0);
  atomic_store(&echo_fail_open, true);
  autd3_link_t *l = NULL;
  ASSERT_ERR(open_remote(v.addr, 1, 2000, &l), AUTD3_E_REMOTE);
  ASSERT_CONTAINS(autd3_last_error(), "echo: no device on the bus");
  atomic_store(&echo_fail_open, false);
  ASSERT_OK(open_remote(v.addr, 1, 2000, &l));
  autd3_link_close(l);
  srv_stop(&v);
  /* a bare 0 (no reason) is a server error too */
  static const uint8_t r[] = {0, 0};
  ASSERT_ERR(open_against(r, 2, 0, 2000, &l), AUTD3_E_REMOTE);
}

TEST(error_timeout) {
  autd3_link_t *l = NULL;
  ASSERT_ERR(open_against(NULL, 0, 2, 200, &l), AUTD3_E_TIMEOUT); /* never answers the handshake */
  ASSERT_CONTAINS(autd3_last_error(), "200 ms");
  static const uint8_t ok1[] = {1, 0};
  fake_t f;
  fake_start(&f, ok1, 2, 2); /* answers the handshake, then never a frame */
  g_protocol = 3;
  ASSERT_OK(open_remote(f.addr, 1, 200, &l));
  g_protocol = 0;
  uint8_t tx[626] = {0}, rx[2];
  bool valid;
  ASSERT_ERR(autd3_link_cycle(l, tx, rx, &valid), AUTD3_E_TIMEOUT);
  ASSERT_ERR(autd3_link_cycle(l, tx, rx, &valid), AUTD3_E_TIMEOUT); /* stays failed */
  autd3_link_close(l);
  fake_stop(&f);
}

TEST(error_peer_closed_mid_exchange) {
  static const uint8_t ok1[] = {1, 0};
  fake_t f;
  fake_start(&f, ok1, 2, 1); /* reads one frame, then closes without a reply */
  autd3_link_t *l = NULL;
  g_protocol = 3;
  ASSERT_OK(open_remote(f.addr, 1, 2000, &l));
  g_protocol = 0;
  uint8_t tx[626] = {0}, rx[2];
  bool valid;
  ASSERT_ERR(autd3_link_cycle(l, tx, rx, &valid), AUTD3_E_PEER_CLOSED);
  ASSERT_CONTAINS(autd3_last_error(), "closed the connection");
  autd3_link_close(l);
  fake_stop(&f);
  /* our server drops the client when its wrapped link fails */
  srv_t v;
  start(&v, 0);
  ASSERT_OK(open_remote(v.addr, 1, 2000, &l));
  cycle_echo(l, 1, 1, AUTD3_CMD_NOP, true);
  uint8_t bad[626] = {0};
  bad[1] = 0xDD;
  ASSERT_ERR(autd3_link_cycle(l, bad, rx, &valid), AUTD3_E_PEER_CLOSED);
  autd3_link_close(l);
  ASSERT_OK(open_remote(v.addr, 1, 2000, &l)); /* and serves the next one */
  cycle_echo(l, 1, 2, AUTD3_CMD_NOP, true);
  autd3_link_close(l);
  srv_stop(&v);
}

TEST(second_client_is_refused_busy) {
  srv_t v;
  start(&v, 0);
  autd3_link_t *a = NULL, *b = NULL;
  ASSERT_OK(open_remote(v.addr, 1, 2000, &a));
  ASSERT_ERR(open_remote(v.addr, 1, 2000, &b), AUTD3_E_BUSY);
  ASSERT_CONTAINS(autd3_last_error(), "one client at a time");
  cycle_echo(a, 1, 4, AUTD3_CMD_NOP, true); /* the first is unaffected */
  autd3_link_close(a);
  ASSERT_OK(open_remote(v.addr, 1, 2000, &b));
  autd3_link_close(b);
  srv_stop(&v);
}

/* ================= hostile clients (the server must survive and keep serving) ================= */

static void still_serves(srv_t *v) {
  autd3_link_t *l = NULL;
  ASSERT_OK(open_remote(v->addr, 2, 5000, &l));
  cycle_echo(l, 2, 0x42, AUTD3_CMD_NOP, true);
  autd3_link_close(l);
}

/* Wait (bounded) until the server's counters satisfy cond; the server thread updates them after its own I/O. */
#define WAIT_STATS(v, st, cond)                                     \
  do {                                                              \
    for (int w_ = 0; w_ < 1000; w_++) {                             \
      st = srv_stats(v);                                            \
      if (cond) break;                                              \
      usleep(10000);                                                \
    }                                                               \
    if (!(cond)) TEST_FAIL_("server counters never met %s", #cond); \
  } while (0)

TEST(hostile_empty_and_truncated) {
  srv_t v;
  use_echo();
  autd3_remote_server_option_t o = autd3_remote_server_option_default();
  o.max_connections = 64; /* the counts below must not depend on how fast the server reads EOFs */
  srv_start_opt(&v, o);
  for (int i = 0; i < 3; i++) close(raw_connect(v.port)); /* connect, say nothing, leave */
  static uint8_t b[16384];
  size_t n = hello(b, sizeof b, 2);
  size_t cuts[] = {1, 4, 5, 8, 9, 12, 100, n - 1};
  const size_t ncuts = sizeof cuts / sizeof cuts[0];
  for (size_t i = 0; i < ncuts; i++) {
    int fd = raw_connect(v.port);
    raw_send(fd, b, cuts[i]);
    close(fd);
  }
  autd3_remote_server_stats_t st;
  /* Every truncated hello counts as dropped, none became a session and none was refused. */
  WAIT_STATS(&v, st, st.dropped == ncuts);
  ASSERT_EQ(st.clients, 0);
  ASSERT_EQ(st.refused, 0);
  int fd = raw_session(v.port, 2); /* truncated frame */
  static uint8_t req[1 + 2 * 626];
  raw_send(fd, req, frame_req(req, 2, 1, 4) - 100);
  close(fd);
  WAIT_STATS(&v, st, st.dropped == ncuts + 1);
  ASSERT_EQ(st.clients, 1);
  ASSERT_EQ(st.requests, 0);
  still_serves(&v);
  st = srv_stats(&v);
  ASSERT_EQ(st.clients, 2);
  ASSERT_EQ(st.requests, 1);
  srv_stop(&v);
}

/* ---- servers hold up: timeouts, connection limit, rate-limited log ---- */

/* Keep opening a Remote link until it gets in (the server answers BUSY meanwhile); bounded by `bound_ms`.
 * Returns the time it took in ms (reported, never asserted beyond the bound). */
static double get_in(srv_t *v, uint32_t bound_ms, autd3_link_t **l) {
  uint64_t t0 = autd3__now_ns();
  for (;;) {
    autd3_err_t e = open_remote(v->addr, 1, 2000, l);
    double ms = (double)(autd3__now_ns() - t0) / 1e6;
    if (e == AUTD3_OK) return ms;
    if (e != AUTD3_E_BUSY) TEST_FAIL_("open: %s: %s", autd3_err_name(e), autd3_last_error());
    if (ms > bound_ms) TEST_FAIL_("still refused after %.0f ms (bound %u ms)", ms, bound_ms);
    usleep(20000);
  }
}

TEST(hold_up_silent_session_yields) {
  use_echo();
  srv_t v;
  autd3_remote_server_option_t o = autd3_remote_server_option_default();
  o.idle_timeout_ms = 300;
  srv_start_opt(&v, o);
  int hostile = raw_session(v.port, 1); /* completes the handshake, then says nothing */
  autd3_link_t *l = NULL;
  double ms = get_in(&v, 3 * o.idle_timeout_ms + 10000, &l);
  fprintf(stderr, "legitimate client got in %.0f ms after a silent session started (idle_timeout_ms %u)\n", ms, o.idle_timeout_ms);
  cycle_echo(l, 1, 7, AUTD3_CMD_NOP, true);
  ASSERT_TRUE(raw_closed(hostile)); /* the idle session was ended */
  close(hostile);
  autd3_link_close(l);
  ASSERT_EQ(srv_stats(&v).dropped, 1);
  srv_stop(&v);
}

TEST(hold_up_busy_session_is_not_preempted) {
  use_echo();
  srv_t v;
  autd3_remote_server_option_t o = autd3_remote_server_option_default();
  o.idle_timeout_ms = 3600000; /* never idle within the test */
  srv_start_opt(&v, o);
  autd3_link_t *a = NULL, *b = NULL;
  ASSERT_OK(open_remote(v.addr, 1, 2000, &a));
  ASSERT_ERR(open_remote(v.addr, 1, 2000, &b), AUTD3_E_BUSY);
  cycle_echo(a, 1, 8, AUTD3_CMD_NOP, true);
  autd3_link_close(a);
  srv_stop(&v);
}

TEST(hold_up_slow_hello_delays_nobody) {
  use_echo();
  srv_t v;
  autd3_remote_server_option_t o = autd3_remote_server_option_default();
  o.handshake_timeout_ms = 3600000; /* the slow client is never timed out during the test */
  srv_start_opt(&v, o);
  static uint8_t b[16384];
  size_t n = hello(b, sizeof b, 1);
  int slow[3];
  for (int i = 0; i < 3; i++) {
    slow[i] = raw_connect(v.port);
    raw_send(slow[i], b, 1 + (size_t)i * 3); /* a few bytes of the hello, then one byte now and then */
  }
  autd3_link_t *l = NULL;
  ASSERT_OK(open_remote(v.addr, 1, 5000, &l)); /* at once: a handshake in progress holds no session */
  raw_send(slow[0], b + 1, 1);
  cycle_echo(l, 1, 9, AUTD3_CMD_NOP, true);
  /* A slow client that completes its hello while the session is busy is refused with BUSY. */
  raw_send(slow[1], b + 4, n - 4);
  uint8_t r[8];
  ASSERT_EQ(raw_recv(slow[1], r, 5), 5);
  ASSERT_EQ(r[2], ARMT_REFUSE_BUSY);
  ASSERT_TRUE(raw_closed(slow[1]));
  autd3_link_close(l);
  for (int i = 0; i < 3; i++) close(slow[i]);
  srv_stop(&v);
}

TEST(hold_up_idle_connections_limit) {
  use_echo();
  srv_t v;
  autd3_remote_server_option_t o = autd3_remote_server_option_default();
  o.max_connections = 4;
  o.handshake_timeout_ms = 300;
  srv_start_opt(&v, o);
  int idle[4];
  for (int i = 0; i < 4; i++) idle[i] = raw_connect(v.port); /* connect, say nothing */
  /* Beyond the limit: refused at once (BUSY), not left in the backlog. A tiny race: the server may not have
   * accepted all four yet, so wait until it has (bounded). */
  autd3_remote_server_stats_t st;
  bool refused = false;
  for (int k = 0; k < 500 && !refused; k++) {
    int fd = raw_connect(v.port);
    uint8_t r[8];
    size_t got = raw_recv(fd, r, 5);
    refused = got == 5 && r[2] == ARMT_REFUSE_BUSY;
    close(fd);
  }
  ASSERT_TRUE(refused);
  st = srv_stats(&v);
  ASSERT_GE(st.refused, 1);
  autd3_link_t *l = NULL;
  double ms = get_in(&v, 3 * o.handshake_timeout_ms + 10000, &l);
  fprintf(stderr, "legitimate client got in %.0f ms after %d idle connections filled the table (handshake_timeout_ms %u)\n", ms,
          4, o.handshake_timeout_ms);
  cycle_echo(l, 1, 10, AUTD3_CMD_NOP, true);
  autd3_link_close(l);
  for (int i = 0; i < 4; i++) {
    ASSERT_TRUE(raw_closed(idle[i]));
    close(idle[i]);
  }
  srv_stop(&v);
}

static uint16_t storm_start(void *ctx, void (*log)(void *, const char *), void *log_ctx) {
  srv_t *v = ctx;
  use_echo();
  autd3_remote_server_option_t o = autd3_remote_server_option_default();
  o.log = log;
  o.log_ctx = log_ctx;
  o.log_lines_per_s = CONNECT_STORM_LINES_PER_S;
  srv_start_opt(v, o);
  return v->port;
}

static void storm_gets_in(void *ctx) { still_serves(ctx); }
static void storm_stop(void *ctx) { srv_stop(ctx); }

TEST(hold_up_connect_storm_log_bounded) {
  srv_t v;
  connect_storm_server_t s = {storm_start, storm_gets_in, storm_stop, &v};
  connect_storm_log_bounded(&s);
}

TEST(hold_up_options_range_checked) {
  use_echo();
  autd3_remote_server_t *s = NULL;
  struct {
    const char *field;
    autd3_remote_server_option_t o;
  } bad[6];
  for (int i = 0; i < 6; i++) {
    bad[i].o = autd3_remote_server_option_default();
    bad[i].o.listen = "127.0.0.1:0";
  }
  bad[0].field = "idle_timeout_ms", bad[0].o.idle_timeout_ms = 0;
  bad[1].field = "max_connections", bad[1].o.max_connections = 1; /* the session alone: nobody could take over */
  bad[2].field = "max_connections", bad[2].o.max_connections = AUTD3_REMOTE_SERVER_MAX_CONNECTIONS + 1;
  bad[3].field = "log_lines_per_s", bad[3].o.log_lines_per_s = 100001;
  bad[4].field = "handshake_timeout_ms", bad[4].o.handshake_timeout_ms = 3600001;
  bad[5].field = "stall_timeout_ms", bad[5].o.stall_timeout_ms = 0;
  for (int i = 0; i < 6; i++) {
    ASSERT_ERR(autd3_remote_server_create(&bad[i].o, &s), AUTD3_E_INVALID_OPTION);
    ASSERT_CONTAINS(autd3_last_error(), bad[i].field);
    ASSERT_TRUE(s == NULL);
  }
  autd3_remote_server_option_t ok = autd3_remote_server_option_default();
  ok.listen = "127.0.0.1:0";
  ok.max_connections = AUTD3_REMOTE_SERVER_MAX_CONNECTIONS;
  ok.log_lines_per_s = 0;
  ASSERT_OK(autd3_remote_server_create(&ok, &s));
  autd3_remote_server_destroy(s);
}

TEST(hostile_oversized_counts) {
  srv_t v;
  start(&v, 0);
  static const uint8_t big_dev[] = {'A', 'R', 'M', 'T', 3, 0xFF, 0xFF, 0xFF, 0xFF};
  static const uint8_t big_tr[] = {'A', 'R', 'M', 'T', 3, 1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF};
  static const uint8_t zero_dev[] = {'A', 'R', 'M', 'T', 3, 0, 0, 0, 0};
  const uint8_t *m[] = {big_dev, big_tr, zero_dev};
  size_t ml[] = {sizeof big_dev, sizeof big_tr, sizeof zero_dev};
  for (int i = 0; i < 3; i++) {
    uint8_t r[3];
    raw_answered_then_closed(v.port, m[i], ml[i], r, 3);
    ASSERT_EQ(r[0] | r[1], 0);
    ASSERT_EQ(r[2], 0x12); /* geometry refused */
  }
  ASSERT_EQ(srv_stats(&v).refused, 3);
  still_serves(&v);
  srv_stop(&v);
}

TEST(hostile_desync_tag) {
  srv_t v;
  start(&v, 0);
  int fd = raw_session(v.port, 2);
  uint8_t junk[8] = {0x7F, 1, 2, 3};
  raw_send(fd, junk, sizeof junk);
  ASSERT_TRUE(raw_closed(fd)); /* reference: UnexpectedTag ends the connection */
  close(fd);
  ASSERT_EQ(srv_stats(&v).dropped, 1);
  still_serves(&v);
  srv_stop(&v);
}

TEST(hostile_pipelined_requests) {
  srv_t v;
  start(&v, 0);
  int fd = raw_session(v.port, 2);
  static uint8_t reqs[4 * (1 + 2 * 626)];
  size_t off = 0;
  for (int i = 0; i < 4; i++) off += frame_req(reqs + off, 2, (uint8_t)(0x30 + 2 * i), (uint8_t)(0x40 + i));
  raw_send(fd, reqs, off); /* four requests in one write: four replies, in order, one exchange each */
  for (int i = 0; i < 4; i++) {
    uint8_t r[5];
    ASSERT_EQ(raw_recv(fd, r, 5), 5);
    ASSERT_EQ(r[0], 1);
    ASSERT_EQ(r[1], 0x30 + 2 * i);
    ASSERT_EQ(r[2], 0x40 + i);
    ASSERT_EQ(r[3], 0x31 + 2 * i);
  }
  close(fd);
  ASSERT_EQ(srv_stats(&v).requests, 4);
  srv_stop(&v);
}

TEST(hostile_byte_at_a_time) {
  srv_t v;
  start(&v, 0);
  static uint8_t b[16384];
  size_t n = hello(b, sizeof b, 2);
  int fd = raw_connect(v.port);
  for (size_t i = 0; i < n; i++) raw_send(fd, b + i, 1);
  uint8_t r[5];
  ASSERT_EQ(raw_recv(fd, r, 2), 2);
  ASSERT_EQ(r[0], 2);
  static uint8_t req[1 + 2 * 626];
  size_t rn = frame_req(req, 2, 0x55, 0x04);
  for (size_t i = 0; i < rn; i++) raw_send(fd, req + i, 1);
  ASSERT_EQ(raw_recv(fd, r, 5), 5);
  ASSERT_EQ(r[1], 0x55);
  ASSERT_EQ(r[3], 0x56);
  close(fd);
  srv_stop(&v);
}

TEST(hostile_stalled_inputs_time_out) {
  use_echo();
  srv_t v;
  autd3_remote_server_option_t o = autd3_remote_server_option_default();
  o.handshake_timeout_ms = 1000; /* long enough for a loaded CI machine to finish a real handshake */
  o.stall_timeout_ms = 500;
  srv_start_opt(&v, o);
  int a = raw_connect(v.port);
  raw_send(a, "AR", 2); /* stalls in the hello */
  ASSERT_TRUE(raw_closed(a));
  close(a);
  int b = raw_session(v.port, 2);
  static uint8_t req[1 + 2 * 626];
  raw_send(b, req, frame_req(req, 2, 1, 4) / 2); /* stalls in a frame */
  ASSERT_TRUE(raw_closed(b));
  close(b);
  ASSERT_EQ(srv_stats(&v).dropped, 2);
  still_serves(&v);
  srv_stop(&v);
}

TEST(hostile_foreign_protocols) {
  srv_t v;
  start(&v, 0);
  /* autd3 v38 client HELLO: answered in its own error format */
  static const uint8_t v1[] = {0x10, 0x01, 0x00, 'A', 'U', 'T', 'D', '3', 'R', 'E', 'M', 'O', 'T', 'E'};
  uint8_t r[16];
  raw_answered_then_closed(v.port, v1, sizeof v1, r, 5);
  ASSERT_EQ(r[0], 0xFF);
  /* ARMT v6 client (a version we do not speak): answered with our v7 hello, so it reports the mismatch itself */
  static const uint8_t v6[] = {'A', 'R', 'M', 'T', 6, 5, '0', '.', '4', '.', '0'};
  raw_answered_then_closed(v.port, v6, sizeof v6, r, 6);
  ASSERT_MEMEQ(r, "ARMT\x07", 5);
  /* HTTP */
  raw_answered_then_closed(v.port, "GET / HTTP/1.1\r\n\r\n", 18, r, 3);
  ASSERT_EQ(r[2], 0x10);
  /* random garbage */
  uint64_t x = 88172645463325252ull;
  for (int k = 0; k < 20; k++) {
    uint8_t g[300];
    for (size_t i = 0; i < sizeof g; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      g[i] = (uint8_t)x;
    }
    int fd = raw_connect(v.port);
    raw_send(fd, g, 1 + (size_t)(x % sizeof g));
    close(fd);
  }
  still_serves(&v);
  srv_stop(&v);
}

TEST(pipelined_link_returns_the_previous_reply) {
  srv_t v;
  start(&v, 0);
  autd3_link_t *l = NULL;
  ASSERT_OK(open_remote_mode(v.addr, 2, 2000, AUTD3_REMOTE_PIPELINE_ON, &l));
  static uint8_t tx[2 * 626];
  uint8_t rx[4];
  bool valid = true;
  autd3_tx_encode(tx, 1, AUTD3_CMD_NOP, NULL, 0);
  autd3_tx_encode(tx + 626, 2, AUTD3_CMD_NOP, NULL, 0);
  ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
  ASSERT_FALSE(valid); /* primed: no reply yet */
  for (uint8_t k = 2; k < 50; k++) {
    autd3_tx_encode(tx, (uint8_t)(2 * k - 1), AUTD3_CMD_NOP, NULL, 0);
    autd3_tx_encode(tx + 626, (uint8_t)(2 * k), AUTD3_CMD_NOP, NULL, 0);
    ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
    ASSERT_TRUE(valid);
    ASSERT_EQ(rx[0], 2 * (k - 1) - 1); /* the previous call's frame */
    ASSERT_EQ(rx[2], 2 * (k - 1));
  }
  autd3_link_close(l);
  ASSERT_GE(srv_stats(&v).requests, 48); /* the last reply may still be in flight at close */
  srv_stop(&v);
}

/* AUTO switches mode after timing both (which one it keeps depends on timing, so it is not asserted): every
 * reply must still be the echo of this call's or the previous call's frame, with at most two stale cycles. */
TEST(auto_pipeline_keeps_replies_in_order) {
  srv_t v;
  start(&v, 0);
  ASSERT_EQ(autd3_link_option_default(AUTD3_LINK_REMOTE).u.remote.pipeline, AUTD3_REMOTE_PIPELINE_AUTO);
  autd3_link_t *l = NULL;
  ASSERT_OK(open_remote_mode(v.addr, 1, 2000, AUTD3_REMOTE_PIPELINE_AUTO, &l));
  uint8_t tx[626] = {0}, rx[2];
  int stale = 0;
  for (int k = 1; k <= 300; k++) {
    autd3_tx_encode(tx, (uint8_t)k, AUTD3_CMD_NOP, NULL, 0);
    bool valid = false;
    ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
    if (!valid) {
      stale++;
      continue;
    }
    if (rx[0] != (uint8_t)k && rx[0] != (uint8_t)(k - 1)) TEST_FAIL_("call %d got the echo of %u", k, rx[0]);
  }
  ASSERT_LE(stale, 2);
  autd3_link_close(l);
  srv_stop(&v);
}

/* AUTO, once decided, follows the caller: runs of new frames (streaming) are pipelined, a repeated tx ends the run
 * (the request in flight is collected, nothing sent). Whichever mode AUTO picked, every valid reply must echo this
 * call's frame or the previous distinct one, a call that repeats its tx must get the echo of that tx, stale cycles
 * are at most one per run (+2 for AUTO's own switches), and the server never answers more requests than calls. */
TEST(auto_follows_streaming_runs) {
  srv_t v;
  start(&v, 0);
  autd3_link_t *l = NULL;
  ASSERT_OK(open_remote_mode(v.addr, 1, 2000, AUTD3_REMOTE_PIPELINE_AUTO, &l));
  uint8_t tx[626] = {0}, rx[2];
  uint8_t cur = 0, prev = 0;
  int stale = 0, runs = 0, calls = 0;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int k = 0; k < 200; k++) { /* AUTO times both modes first */
    cur = (uint8_t)(cur + 1);
    autd3_tx_encode(tx, cur, AUTD3_CMD_NOP, NULL, 0);
    bool valid = false;
    ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
    calls++;
    if (!valid) stale++;
  }
  prev = (uint8_t)(cur - 1);
  for (int block = 0; block < 60; block++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int fresh = 1 + (int)(x % 6), repeats = block % 3 == 2 ? 0 : 1 + (int)((x >> 8) % 3);
    runs++;
    for (int i = 0; i < fresh + repeats; i++) {
      if (i < fresh) {
        prev = cur;
        cur = (uint8_t)(cur + 1);
        autd3_tx_encode(tx, cur, AUTD3_CMD_NOP, NULL, 0);
      }
      bool valid = false;
      ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
      calls++;
      if (!valid) {
        stale++;
        continue;
      }
      if (i >= fresh && rx[0] != cur) TEST_FAIL_("block %d call %d (repeat of %u) got the echo of %u", block, i, cur, rx[0]);
      if (rx[0] != cur && rx[0] != prev) TEST_FAIL_("block %d call %d (frame %u) got the echo of %u", block, i, cur, rx[0]);
    }
  }
  ASSERT_LE(stale, runs + 2);
  autd3_link_close(l);
  ASSERT_LE(srv_stats(&v).requests, (uint64_t)calls);
  srv_stop(&v);
}

TEST(error_bad_pipeline_option) {
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_REMOTE);
  o.u.remote.pipeline = (autd3_remote_pipeline_t)7;
  autd3_geometry_t *g = geom(1);
  autd3_link_t *l = NULL;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_INVALID_OPTION);
  autd3_geometry_free(g);
}
