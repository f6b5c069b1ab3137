/*
 * TwinCAT link tests: the AMS/ADS codec against byte vectors captured from an
 * independent client (npm ads-client 2.1.0),
 * ADS error replies of the emulated runtime, timeouts, a dropped TCP
 * connection and reconnect, and the link end to end against the emulated
 * runtime running in a thread of this process. No test asserts timing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "autd3/link.h"
#include "autd3/link_driver.h"
#include "harness/connect_storm.h"
#include "harness/raw_tcp.h"
#include "harness/test.h"
#include "link/twincat/ads.h"
#include "platform/platform.h"
#include "emulation/twincat/twincat_emu.h"

static size_t unhex(const char *s, uint8_t *out) {
  size_t n = 0;
  while (*s) {
    if (*s == ' ' || *s == '|') {
      s++;
      continue;
    }
    unsigned v;
    sscanf(s, "%2x", &v);
    out[n++] = (uint8_t)v;
    s += 2;
  }
  return n;
}

/* ---------------- codec ---------------- */

TEST(codec_write_request_vector) {
  uint8_t want[128], got[128];
  size_t wn = unhex("0000 30000000 | 7f0000010101 2d01 | 0a0000020101 ee7f | 0300 0400 10000000 00000000 00000000 | "
                    "30000403 00000081 04000000 01020304",
                    want);
  ams_header_t h = {.cmd = ADS_CMD_WRITE, .flags = AMS_SF_ADS, .invoke = 0};
  ASSERT_OK(autd3__ams_netid_parse("127.0.0.1.1.1", &h.target.netid));
  h.target.port = 301;
  ASSERT_OK(autd3__ams_netid_parse("10.0.0.2.1.1", &h.source.netid));
  h.source.port = 32750;
  uint8_t p[12], data[4] = {1, 2, 3, 4};
  size_t n = autd3__ams_frame_encode(got, sizeof got, &h, p, autd3__ads_params_rw(p, 0x03040030, 0x81000000, 4), data, 4);
  ASSERT_EQ(n, wn);
  ASSERT_MEMEQ(got, want, wn);
  ASSERT_EQ(autd3__ams_frame_encode(got, 40, &h, p, 12, data, 4), 0); /* does not fit */
}

TEST(codec_read_request_vector) {
  uint8_t want[128], got[128];
  size_t wn = unhex("0000 2c000000 | 7f0000010101 2d01 | 0a0000020101 ee7f | 0200 0400 0c000000 00000000 01000000 | "
                    "30000403 00000080 04000000",
                    want);
  ams_header_t h = {.cmd = ADS_CMD_READ, .flags = AMS_SF_ADS, .invoke = 1};
  autd3__ams_netid_parse("127.0.0.1.1.1", &h.target.netid);
  h.target.port = 301;
  autd3__ams_netid_parse("10.0.0.2.1.1", &h.source.netid);
  h.source.port = 32750;
  uint8_t p[12];
  size_t n = autd3__ams_frame_encode(got, sizeof got, &h, p, autd3__ads_params_rw(p, 0x03040030, 0x80000000, 4), NULL, 0);
  ASSERT_EQ(n, wn);
  ASSERT_MEMEQ(got, want, wn);
}

TEST(codec_replies_decode) {
  uint8_t f[128];
  size_t n = unhex("0000 2c000000 | 0a0000020101 ee7f | 7f0000010101 2d01 | 0200 0500 0c000000 00000000 01000000 | "
                   "00000000 04000000 01020304",
                   f);
  uint16_t tcmd;
  size_t flen;
  ASSERT_EQ(autd3__ams_frame_peek(f, n - 1, 4096, &tcmd, &flen), 0); /* incomplete */
  ASSERT_EQ(autd3__ams_frame_peek(f, n, 4096, &tcmd, &flen), 1);
  ASSERT_EQ(flen, n);
  ASSERT_EQ(autd3__ams_frame_peek(f, n, 20, &tcmd, &flen), AUTD3_E_PROTOCOL); /* longer than allowed */
  ams_header_t h;
  const uint8_t *d;
  ASSERT_OK(autd3__ams_frame_decode(f, n, &h, &d));
  ASSERT_EQ(h.cmd, ADS_CMD_READ);
  ASSERT_EQ(h.flags, 0x0005);
  ASSERT_EQ(h.invoke, 1);
  ASSERT_EQ(h.target.port, 32750);
  ASSERT_EQ(h.source.port, 301);
  uint32_t res, plen;
  const uint8_t *pl;
  ASSERT_OK(autd3__ads_reply_parse(ADS_CMD_READ, d, h.length, &res, &pl, &plen, NULL));
  ASSERT_EQ(res, 0);
  ASSERT_EQ(plen, 4);
  ASSERT_EQ(pl[3], 4);
  /* a length field that lies */
  f[AMS_FRAME_HDR_LEN + 4] = 5;
  ASSERT_ERR(autd3__ads_reply_parse(ADS_CMD_READ, d, h.length, &res, &pl, &plen, NULL), AUTD3_E_PROTOCOL);
  /* AMS/TCP length disagreeing with the AMS data length */
  f[2] = 0x2b;
  ASSERT_ERR(autd3__ams_frame_decode(f, n, &h, &d), AUTD3_E_PROTOCOL);

  uint8_t st[8];
  unhex("00000000 0500 0000", st);
  uint32_t aux;
  ASSERT_OK(autd3__ads_reply_parse(ADS_CMD_READ_STATE, st, 8, &res, NULL, NULL, &aux));
  ASSERT_EQ(aux >> 16, ADS_STATE_RUN);
  ASSERT_ERR(autd3__ads_reply_parse(ADS_CMD_READ_STATE, st, 6, &res, NULL, NULL, &aux), AUTD3_E_PROTOCOL);

  uint8_t di[32];
  ASSERT_EQ(unhex("00000000 03 01 ba0f 46616b65416473 000000000000000000", di), 24);
  ads_device_info_t info;
  ASSERT_OK(autd3__ads_device_info_parse(di, 24, &res, &info));
  ASSERT_EQ(info.major, 3);
  ASSERT_EQ(info.build, 4026);
  ASSERT_STREQ(info.name, "FakeAds");
  /* an error result with nothing after it is a valid reply */
  uint8_t er[4] = {0x05, 0x07, 0, 0};
  ASSERT_OK(autd3__ads_reply_parse(ADS_CMD_READ, er, 4, &res, &pl, &plen, NULL));
  ASSERT_EQ(res, 0x0705);
  ASSERT_CONTAINS(autd3__ads_strerror(0x0705), "size");
  ASSERT_CONTAINS(autd3__ads_strerror(0x0006), "target port not found");
  ASSERT_STREQ(autd3__ads_strerror(0xdead), "unknown ADS error");
}

static int samples_seen;
static uint32_t last_handle, last_size;
static void count_sample(void *ctx, uint64_t ft, uint32_t handle, const uint8_t *data, uint32_t size) {
  (void)ctx, (void)ft, (void)data;
  samples_seen++;
  last_handle = handle;
  last_size = size;
}

TEST(codec_notification_stream) {
  /* length, 1 stamp, FILETIME, 2 samples (handle 7: 2 bytes, handle 9: 0 bytes) */
  uint8_t d[64];
  size_t n = unhex("22000000 01000000 0000000000000000 02000000 07000000 02000000 abcd 09000000 00000000", d);
  ASSERT_EQ(n, 38);
  samples_seen = 0;
  ASSERT_OK(autd3__ads_notification_parse(d, n, count_sample, NULL));
  ASSERT_EQ(samples_seen, 2);
  ASSERT_EQ(last_handle, 9);
  ASSERT_EQ(last_size, 0);
  d[0] = 0x23; /* length beyond the data */
  ASSERT_ERR(autd3__ads_notification_parse(d, n, count_sample, NULL), AUTD3_E_PROTOCOL);
  d[0] = 0x22;
  d[34] = 0x10; /* a sample size beyond the data */
  ASSERT_ERR(autd3__ads_notification_parse(d, n, count_sample, NULL), AUTD3_E_PROTOCOL);
}

TEST(codec_netid) {
  ams_netid_t id;
  char buf[24];
  ASSERT_OK(autd3__ams_netid_parse("172.16.99.2.1.1", &id));
  ASSERT_STREQ(autd3__ams_netid_format(&id, buf, sizeof buf), "172.16.99.2.1.1");
  ASSERT_ERR(autd3__ams_netid_parse("172.16.99.2.1", &id), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3__ams_netid_parse("172.16.99.2.1.1.", &id), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3__ams_netid_parse("256.0.0.1.1.1", &id), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3__ams_netid_parse("a.0.0.1.1.1", &id), AUTD3_E_INVALID_ARGUMENT);
}

/* ---------------- against the emulated runtime ---------------- */

typedef struct {
  autd3_tcemu_t *emu;
  pthread_t th;
} emu_fixture_t;

static void *emu_thread(void *arg) {
  autd3_tcemu_run(arg);
  return NULL;
}

/* The runtime with configuration `cfg` on any free port, in a thread. */
static void emu_start_cfg(emu_fixture_t *f, autd3_tcemu_config_t cfg) {
  cfg.listen_port = 0;
  ASSERT_OK(autd3_tcemu_create(&cfg, &f->emu));
  ASSERT_EQ(pthread_create(&f->th, NULL, emu_thread, f->emu), 0);
}

/* The default runtime with `devices` devices. */
static void emu_start(emu_fixture_t *f, uint16_t devices) {
  autd3_tcemu_config_t cfg = autd3_tcemu_config_default();
  cfg.devices = devices;
  emu_start_cfg(f, cfg);
}

static void emu_stop(emu_fixture_t *f) {
  autd3_tcemu_stop(f->emu);
  pthread_join(f->th, NULL);
  autd3_tcemu_free(f->emu);
}

static ams_addr_t task_addr(void) {
  ams_addr_t t = {.port = 301};
  autd3__ams_netid_parse("127.0.0.1.1.1", &t.netid);
  return t;
}

static void expect_ads(autd3_err_t e, const char *code) {
  ASSERT_ERR(e, AUTD3_E_ADS);
  ASSERT_CONTAINS(autd3_last_error(), code);
}

TEST(emu_ads_error_replies) {
  emu_fixture_t f;
  emu_start(&f, 2);
  ads_client_t c;
  ASSERT_OK(autd3__ads_client_init(&c, 4096, 2000));
  ASSERT_OK(autd3__ads_client_connect(&c, "127.0.0.1", autd3_tcemu_port(f.emu)));
  ams_addr_t t = task_addr();
  uint8_t buf[2048] = {0};
  uint32_t n;
  /* the good paths first */
  ASSERT_OK(autd3__ads_read(&c, &t, 0x03040030, 0x80000000, buf, 2, &n));
  ASSERT_EQ(n, 2);
  ASSERT_EQ(ads_get_u16(buf), 2); /* CfgSlaveCount */
  ASSERT_OK(autd3__ads_write(&c, &t, 0x03040030, 0x81000000, buf, 2 * 626));
  uint16_t as, ds;
  ASSERT_OK(autd3__ads_read_state(&c, &t, &as, &ds));
  ASSERT_EQ(as, ADS_STATE_RUN);
  ads_device_info_t info;
  ASSERT_OK(autd3__ads_read_device_info(&c, &t, &info));
  ASSERT_STREQ(info.name, "Task 1");
  /* the errors a real runtime gives */
  expect_ads(autd3__ads_read(&c, &t, 0x4020, 0, buf, 4, &n), "0x0702");
  expect_ads(autd3__ads_read(&c, &t, 0x03040030, 0x12345678, buf, 4, &n), "0x0703");
  expect_ads(autd3__ads_write(&c, &t, 0x03040030, 0x81000000, buf, 3 * 626), "0x0705");
  expect_ads(autd3__ads_read(&c, &t, 0x03040030, 0x80000000, buf, 2 + 4 * 2 + 1, &n), "0x0705");
  expect_ads(autd3__ads_write(&c, &t, 0x03040030, 0x80000000, buf, 2), "0x0704");
  expect_ads(autd3__ads_read_write(&c, &t, 0x03040030, 0x80000000, buf, 2, buf, 2, &n), "0x0701");
  expect_ads(autd3__ads_del_notification(&c, &t, 12345), "0x0714");
  ams_addr_t bad_port = t;
  bad_port.port = 851; /* no PLC runtime here */
  expect_ads(autd3__ads_read_state(&c, &bad_port, &as, &ds), "0x0006");
  ams_addr_t bad_net = t;
  bad_net.netid.b[0] = 10;
  expect_ads(autd3__ads_read_state(&c, &bad_net, &as, &ds), "0x0007");
  ams_addr_t sys = t;
  sys.port = 10000;
  ASSERT_OK(autd3__ads_read_state(&c, &sys, &as, &ds));
  ASSERT_EQ(as, ADS_STATE_RUN);
  /* the connection survives every error */
  ASSERT_OK(autd3__ads_read(&c, &t, 0x03040030, 0x80000000, buf, 2, &n));
  autd3__ads_client_free(&c);
  emu_stop(&f);
}

static int notified;
static void on_notif(void *ctx, uint32_t handle, const uint8_t *data, uint32_t size) {
  (void)data;
  if (handle == *(uint32_t *)ctx && size == 10) notified++;
}

TEST(emu_notifications) {
  emu_fixture_t f;
  emu_start(&f, 2);
  ads_client_t c;
  ASSERT_OK(autd3__ads_client_init(&c, 4096, 2000));
  ASSERT_OK(autd3__ads_client_connect(&c, "127.0.0.1", autd3_tcemu_port(f.emu)));
  ams_addr_t t = task_addr();
  uint32_t h = 0;
  c.on_notify = on_notif;
  c.notify_ctx = &h;
  expect_ads(autd3__ads_add_notification(&c, &t, 0x03040030, 0x80000000, 10, 1, 0, 10000, &h), "0x0713"); /* client cycle */
  ASSERT_OK(autd3__ads_add_notification(&c, &t, 0x03040030, 0x80000000, 10, ADS_TRANS_SERVER_CYCLE, 0, 10000, &h));
  notified = 0;
  uint64_t deadline = autd3__now_ns() + 5000000000ull;
  while (notified < 5) {
    bool got;
    ads_reply_t r;
    ASSERT_OK(autd3__ads_client_pump(&c, 0, deadline, true, &got, &r));
  }
  ASSERT_OK(autd3__ads_del_notification(&c, &t, h));
  expect_ads(autd3__ads_del_notification(&c, &t, h), "0x0714");
  autd3__ads_client_free(&c);
  emu_stop(&f);
}

static autd3_link_option_t remote_opt(uint16_t port) {
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_TWINCAT);
  o.u.twincat.server_ip = "127.0.0.1";
  o.u.twincat.server_port = port;
  o.u.twincat.server_ams_net_id = "127.0.0.1.1.1";
  return o;
}

/* Drive Reset then Nop frames until every device acks seq 0 (bounded). */
static void drive_until_ack(autd3_link_t *link, size_t n) {
  static uint8_t tx[4 * 626], rx[8];
  memset(tx, 0, sizeof tx);
  for (size_t i = 0; i < n; i++) tx[i * 626 + 1] = 0x00; /* Reset (seq 0) */
  bool valid;
  for (int k = 0; k < 3; k++) ASSERT_OK(autd3_link_cycle(link, tx, rx, &valid));
  for (size_t i = 0; i < n; i++) tx[i * 626 + 0] = 0, tx[i * 626 + 1] = 0x04; /* Nop, seq 0 */
  for (int k = 0; k < 2000; k++) {
    ASSERT_OK(autd3_link_cycle(link, tx, rx, &valid));
    bool all = valid;
    for (size_t i = 0; i < n; i++) all = all && rx[2 * i] == 0 && rx[2 * i + 1] == 0;
    if (all) return;
  }
  TEST_FAIL_("devices never acked seq 0: rx %02x %02x", rx[0], rx[1]);
}

/* Open a link with option `o` for a geometry of `devices` devices. */
static autd3_err_t open_for(const autd3_link_option_t *o, size_t devices, autd3_link_t **out) {
  autd3_geometry_t *g;
  ASSERT_OK(autd3_geometry_create(devices, NULL, &g));
  autd3_err_t e = autd3_link_open(o, g, out);
  autd3_geometry_free(g);
  return e;
}

/* The link tests' shared set-up: the emulated runtime with `devices` devices
 * in a thread, `o` = remote_opt(its port) for the test to change, and
 * tc_open() opening the link with `o`; tc_stop() closes whatever is open. */
typedef struct {
  emu_fixture_t emu;
  autd3_link_option_t o;
  autd3_link_t *link;
} tc_fixture_t;

static void tc_start(tc_fixture_t *t, uint16_t devices) {
  emu_start(&t->emu, devices);
  t->o = remote_opt(autd3_tcemu_port(t->emu.emu));
  t->link = NULL;
}

/* Open the link for `devices` devices with t->o; it must open, and (ack) drive the devices until they ack seq 0. */
static autd3_link_t *tc_open(tc_fixture_t *t, size_t devices, bool ack) {
  ASSERT_OK(open_for(&t->o, devices, &t->link));
  if (ack) drive_until_ack(t->link, devices);
  return t->link;
}

static void tc_stop(tc_fixture_t *t) {
  autd3_link_close(t->link);
  t->link = NULL;
  if (t->emu.emu) emu_stop(&t->emu);
  t->emu.emu = NULL;
}

TEST(link_remote_end_to_end) {
  tc_fixture_t t;
  tc_start(&t, 2);
  autd3_link_t *link = tc_open(&t, 2, true);
  ASSERT_EQ(autd3_link_num_devices(link), 2);
  char diag[512];
  autd3_link_diagnostics(link, diag, sizeof diag);
  ASSERT_CONTAINS(diag, "device notification");
  autd3_link_status_t st;
  ASSERT_OK(autd3_link_check_state(link, &st));
  ASSERT_EQ(st.state[0], AUTD3_DEVICE_OP);
  ASSERT_EQ(st.state[1], AUTD3_DEVICE_OP);
  /* device 1 drops to SAFE-OP + error: the state checker sees it in the state words */
  autd3_tcemu_set_state_word(t.emu.emu, 1, 0x0014);
  static uint8_t tx[2 * 626], rx[4];
  bool valid;
  for (int k = 0; k < 1000; k++) {
    ASSERT_OK(autd3_link_cycle(link, tx, rx, &valid));
    ASSERT_OK(autd3_link_check_state(link, &st));
    if (st.state[1] == AUTD3_DEVICE_SAFE_OP_ERROR) break;
  }
  ASSERT_EQ(st.state[1], AUTD3_DEVICE_SAFE_OP_ERROR);
  ASSERT_EQ(st.state[0], AUTD3_DEVICE_OP);
  autd3_tcemu_set_state_word(t.emu.emu, 1, 0x0008);
  for (int k = 0; k < 1000 && st.state[1] != AUTD3_DEVICE_OP; k++) {
    ASSERT_OK(autd3_link_cycle(link, tx, rx, &valid));
    ASSERT_OK(autd3_link_check_state(link, &st));
  }
  ASSERT_EQ(st.recoveries, 1);
  autd3_link_stats_t s;
  autd3_link_stats(link, &s);
  ASSERT_EQ(s.lost_cycles, 0);
  tc_stop(&t);
}

TEST(link_local_router_mode) {
  tc_fixture_t t;
  tc_start(&t, 1);
  t.o = autd3_link_option_default(AUTD3_LINK_TWINCAT);
  t.o.u.twincat.server_port = autd3_tcemu_port(t.emu.emu); /* local: 127.0.0.1, NetId asked from the router */
  tc_open(&t, 1, true);
  tc_stop(&t);
}

TEST(link_sync_read_fallback) {
  tc_fixture_t t;
  tc_start(&t, 2);
  t.o.u.twincat.no_notification = true;
  autd3_link_t *link = tc_open(&t, 2, true);
  char diag[512];
  autd3_link_diagnostics(link, diag, sizeof diag);
  ASSERT_CONTAINS(diag, "synchronous read");
  tc_stop(&t);
}

TEST(link_device_count_mismatch) {
  tc_fixture_t t;
  tc_start(&t, 2);
  ASSERT_ERR(open_for(&t.o, 3, &t.link), AUTD3_E_DEVICE_COUNT_MISMATCH);
  ASSERT_CONTAINS(autd3_last_error(), "2 AUTD3 slaves");
  ASSERT_TRUE(t.link == NULL);
  tc_stop(&t);
}

TEST(link_wrong_net_id_and_port) {
  tc_fixture_t t;
  tc_start(&t, 1);
  autd3_link_option_t good = t.o;
  t.o.u.twincat.server_ams_net_id = "192.168.0.9.1.1";
  ASSERT_ERR(open_for(&t.o, 1, &t.link), AUTD3_E_ADS);
  ASSERT_CONTAINS(autd3_last_error(), "0x0007");
  t.o = good;
  t.o.u.twincat.ams_port = 350;
  ASSERT_ERR(open_for(&t.o, 1, &t.link), AUTD3_E_ADS);
  ASSERT_CONTAINS(autd3_last_error(), "0x0006");
  t.o = good;
  t.o.u.twincat.server_ams_net_id = "1.2.3";
  ASSERT_ERR(open_for(&t.o, 1, &t.link), AUTD3_E_INVALID_OPTION);
  ASSERT_TRUE(t.link == NULL);
  tc_stop(&t);
}

TEST(link_timeout_silent_server) {
  /* A listener that never answers: the kernel completes the handshake, nobody reads. */
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  ASSERT_EQ(bind(ls, (struct sockaddr *)&sa, sizeof sa), 0);
  ASSERT_EQ(listen(ls, 4), 0);
  socklen_t sl = sizeof sa;
  getsockname(ls, (struct sockaddr *)&sa, &sl);
  autd3_link_option_t o = remote_opt(ntohs(sa.sin_port));
  o.u.twincat.timeout_ms = 200;
  autd3_link_t *link = NULL;
  ASSERT_ERR(open_for(&o, 1, &link), AUTD3_E_TIMEOUT);
  ASSERT_CONTAINS(autd3_last_error(), "no reply to Read");
  /* nobody listening at all */
  close(ls);
  ASSERT_ERR(open_for(&o, 1, &link), AUTD3_E_CONNECT);
}

TEST(link_reconnect_after_drop) {
  tc_fixture_t t;
  tc_start(&t, 2);
  autd3_link_t *link = tc_open(&t, 2, true);
  autd3_tcemu_drop_connections(t.emu.emu);
  static uint8_t tx[2 * 626], rx[4];
  bool valid = true, saw_lost = false;
  int k;
  for (k = 0; k < 5000; k++) {
    ASSERT_OK(autd3_link_cycle(link, tx, rx, &valid));
    if (!valid) saw_lost = true;
    if (saw_lost && valid) break;
  }
  ASSERT_TRUE(saw_lost);
  ASSERT_TRUE(valid);
  autd3_link_stats_t s;
  autd3_link_stats(link, &s);
  ASSERT_GE(s.lost_cycles, 1);
  char diag[512];
  autd3_link_diagnostics(link, diag, sizeof diag);
  ASSERT_CONTAINS(diag, "reconnects : 1");
  ASSERT_CONTAINS(diag, "device notification");
  drive_until_ack(link, 2);
  tc_stop(&t);
}

TEST(link_server_gone_fails_after_timeout) {
  tc_fixture_t t;
  tc_start(&t, 1);
  t.o.u.twincat.timeout_ms = 300;
  autd3_link_t *link = tc_open(&t, 1, true);
  emu_stop(&t.emu); /* the runtime goes away for good */
  t.emu.emu = NULL;
  static uint8_t tx[626], rx[2];
  bool valid;
  autd3_err_t e = AUTD3_OK;
  for (int k = 0; k < 100000 && e == AUTD3_OK; k++) e = autd3_link_cycle(link, tx, rx, &valid);
  ASSERT_ERR(e, AUTD3_E_PEER_CLOSED);
  ASSERT_CONTAINS(autd3_last_error(), "not re-established");
  tc_stop(&t);
}

TEST(link_paced_by_task_cycle) {
  /* Not a timing assertion: each cycle() consumes one notification, and the
   * runtime sends one per task cycle, so cycles cannot outrun task cycles. */
  tc_fixture_t t;
  tc_start(&t, 2);
  autd3_link_t *link = tc_open(&t, 2, false);
  static uint8_t tx[2 * 626], rx[4];
  bool valid;
  uint64_t c0 = autd3_tcemu_cycles(t.emu.emu);
  for (int k = 0; k < 100; k++) ASSERT_OK(autd3_link_cycle(link, tx, rx, &valid));
  uint64_t c1 = autd3_tcemu_cycles(t.emu.emu);
  ASSERT_GE(c1 - c0 + 1, 100);
  tc_stop(&t);
}

TEST(emu_oversized_frame_answered_and_skipped) {
  /* A Write far larger than the task's image (and than the runtime's receive
   * buffer): answered 0x0705 from its header, its bytes skipped, and the
   * connection keeps working. */
  emu_fixture_t f;
  emu_start(&f, 1);
  ads_client_t c;
  static uint8_t big[20000];
  ASSERT_OK(autd3__ads_client_init(&c, sizeof big, 2000));
  ASSERT_OK(autd3__ads_client_connect(&c, "127.0.0.1", autd3_tcemu_port(f.emu)));
  ams_addr_t t = task_addr();
  expect_ads(autd3__ads_write(&c, &t, 0x03040030, 0x81000000, big, sizeof big), "0x0705");
  uint8_t buf[2];
  uint32_t n;
  ASSERT_OK(autd3__ads_read(&c, &t, 0x03040030, 0x80000000, buf, 2, &n));
  ASSERT_EQ(ads_get_u16(buf), 1);
  autd3__ads_client_free(&c);
  emu_stop(&f);
}

/* ---------------- holding up: idle / slow / many connections ---------------- */

/* Open the TwinCAT link until it gets in (the emulator closes a connection it has no place for); bounded.
 * Returns how long it took in ms (reported, not asserted beyond the bound). */
static double link_gets_in(uint16_t port, uint16_t devices, uint32_t bound_ms, autd3_link_t **out) {
  autd3_link_option_t o = remote_opt(port);
  o.u.twincat.timeout_ms = 2000;
  uint64_t t0 = autd3__now_ns();
  for (;;) {
    autd3_err_t e = open_for(&o, devices, out);
    double ms = (double)(autd3__now_ns() - t0) / 1e6;
    if (e == AUTD3_OK) break;
    if (e != AUTD3_E_PEER_CLOSED && e != AUTD3_E_CONNECT)
      TEST_FAIL_("open: %s: %s", autd3_err_name(e), autd3_last_error());
    if (ms > bound_ms) TEST_FAIL_("still locked out after %.0f ms (bound %u ms): %s", ms, bound_ms, autd3_last_error());
    usleep(20000);
  }
  return (double)(autd3__now_ns() - t0) / 1e6;
}

TEST(hold_up_idle_connections_do_not_lock_out) {
  /* As many silent (or slow, never completing a frame) connections as the emulator has places: they are closed
   * after the handshake timeout and the link gets in. */
  emu_fixture_t f;
  autd3_tcemu_config_t cfg = autd3_tcemu_config_default();
  cfg.devices = 1;
  cfg.handshake_timeout_ms = 300;
  cfg.verbose = getenv("AUTD3_TEST_VERBOSE") != NULL;
  emu_start_cfg(&f, cfg);
  int fds[AUTD3_TCEMU_MAX_CONNS];
  for (int i = 0; i < AUTD3_TCEMU_MAX_CONNS; i++) {
    fds[i] = raw_connect(autd3_tcemu_port(f.emu));
    if (i % 2) ASSERT_EQ(send(fds[i], "\0\0\x40", 3, MSG_NOSIGNAL), 3); /* the start of a frame, then nothing */
  }
  autd3_link_t *link;
  double ms = link_gets_in(autd3_tcemu_port(f.emu), 1, 3 * cfg.handshake_timeout_ms + 10000, &link);
  fprintf(stderr, "the link got in %.0f ms after %d silent/slow connections (handshake_timeout_ms %u)\n", ms, AUTD3_TCEMU_MAX_CONNS,
          cfg.handshake_timeout_ms);
  drive_until_ack(link, 1);
  for (int i = 0; i < AUTD3_TCEMU_MAX_CONNS; i++) {
    ASSERT_TRUE(raw_closed(fds[i]));
    close(fds[i]);
  }
  autd3_tcemu_conn_stats_t st;
  autd3_tcemu_conn_stats(f.emu, &st);
  ASSERT_EQ(st.timed_out, AUTD3_TCEMU_MAX_CONNS);
  autd3_link_close(link);
  emu_stop(&f);
}

TEST(hold_up_quiet_clients_give_way) {
  /* Every place taken by clients that made one request and then went quiet: when they have been quiet for the
   * idle timeout, a new connection takes the place of the quietest one; until then, it is refused at once. */
  emu_fixture_t f;
  autd3_tcemu_config_t cfg = autd3_tcemu_config_default();
  cfg.devices = 1;
  cfg.max_conns = 4;
  cfg.idle_timeout_ms = 300;
  emu_start_cfg(&f, cfg);
  ads_client_t c[4];
  ams_addr_t t = task_addr();
  for (int i = 0; i < 4; i++) {
    ASSERT_OK(autd3__ads_client_init(&c[i], 64, 2000));
    ASSERT_OK(autd3__ads_client_connect(&c[i], "127.0.0.1", autd3_tcemu_port(f.emu)));
    uint16_t as, ds;
    ASSERT_OK(autd3__ads_read_state(&c[i], &t, &as, &ds));
  }
  autd3_link_t *link;
  double ms = link_gets_in(autd3_tcemu_port(f.emu), 1, 3 * cfg.idle_timeout_ms + 10000, &link);
  fprintf(stderr, "the link got in %.0f ms after 4 quiet clients took every place (idle_timeout_ms %u)\n", ms, cfg.idle_timeout_ms);
  drive_until_ack(link, 1);
  autd3_tcemu_conn_stats_t st;
  autd3_tcemu_conn_stats(f.emu, &st);
  ASSERT_GE(st.evicted, 1);
  /* the link, which cycles, keeps its place while the others come back */
  int evicted = 0;
  for (int i = 0; i < 4; i++) {
    uint16_t as, ds;
    if (autd3__ads_read_state(&c[i], &t, &as, &ds) != AUTD3_OK) evicted++;
    autd3__ads_client_free(&c[i]);
  }
  ASSERT_GE(evicted, 1);
  drive_until_ack(link, 1);
  autd3_link_close(link);
  emu_stop(&f);
}

typedef struct {
  atomic_int stalled_lines;
} stall_log_t;

static void stall_log(void *ctx, const char *line) {
  if (strstr(line, "has not taken its replies")) atomic_fetch_add(&((stall_log_t *)ctx)->stalled_lines, 1);
}

/* A raw client that subscribes to the whole output image every task cycle (1.3 KB/ms with 2 devices) and then
 * never reads, with a small receive buffer so that the kernels stop taking bytes soon. */
static int subscribe_and_never_read(uint16_t port) {
  int fd = raw_connect_rcvbuf(port, 4096);
  ams_header_t h = {.target = task_addr(), .cmd = ADS_CMD_ADD_NOTIFICATION, .flags = AMS_SF_ADS, .invoke = 1};
  ASSERT_OK(autd3__ams_netid_parse("127.0.0.1.1.2", &h.source.netid));
  h.source.port = 32905;
  uint8_t p[40] = {0}, f[AMS_FRAME_HDR_LEN + 40];
  ads_put_u32(p, 0x03040030);
  ads_put_u32(p + 4, 0x81000000);
  ads_put_u32(p + 8, 2 * 626);
  ads_put_u32(p + 12, ADS_TRANS_SERVER_CYCLE);
  ads_put_u32(p + 20, 10000); /* every 1 ms (100 ns units) */
  size_t n = autd3__ams_frame_encode(f, sizeof f, &h, p, sizeof p, NULL, 0);
  ASSERT_EQ(send(fd, f, n, MSG_NOSIGNAL), (ssize_t)n);
  return fd;
}

TEST(hold_up_client_that_never_reads_is_dropped) {
  /* Send progress: a client whose output the kernel stops taking (it reads nothing) is dropped idle_timeout_ms
   * later, whatever the kernels buffer, and its place is free again. */
  emu_fixture_t f;
  stall_log_t sl;
  atomic_init(&sl.stalled_lines, 0);
  autd3_tcemu_config_t cfg = autd3_tcemu_config_default();
  cfg.devices = 2;
  cfg.idle_timeout_ms = 300;
  cfg.verbose = true;
  cfg.log = stall_log;
  cfg.log_ctx = &sl;
  emu_start_cfg(&f, cfg);
  int fd = subscribe_and_never_read(autd3_tcemu_port(f.emu));
  autd3_tcemu_conn_stats_t st;
  uint64_t t0 = autd3__now_ns();
  do {
    usleep(50000);
    autd3_tcemu_conn_stats(f.emu, &st);
  } while (st.stalled == 0 && autd3__now_ns() - t0 < 20000000000ull);
  /* the fault first: dropped, and for not taking its replies (not a timeout, eviction or overflow) */
  ASSERT_EQ(st.stalled, 1);
  ASSERT_EQ(atomic_load(&sl.stalled_lines), 1);
  ASSERT_EQ(st.timed_out, 0);
  ASSERT_EQ(st.evicted, 0);
  fprintf(stderr, "a client that never reads was dropped %.0f ms after subscribing (idle_timeout_ms %u)\n",
          (double)(autd3__now_ns() - t0) / 1e6, cfg.idle_timeout_ms);
  ASSERT_TRUE(raw_closed(fd));
  close(fd);
  /* the runtime serves the next client */
  autd3_link_t *link;
  link_gets_in(autd3_tcemu_port(f.emu), 2, 10000, &link);
  drive_until_ack(link, 2);
  autd3_link_close(link);
  emu_stop(&f);
}

TEST(hold_up_client_that_reads_is_not_dropped) {
  /* The counterpart: a client that takes its notifications every task cycle keeps its connection for many
   * times idle_timeout_ms. */
  emu_fixture_t f;
  autd3_tcemu_config_t cfg = autd3_tcemu_config_default();
  cfg.devices = 2;
  cfg.idle_timeout_ms = 100;
  emu_start_cfg(&f, cfg);
  ads_client_t c;
  ASSERT_OK(autd3__ads_client_init(&c, 4096, 2000));
  ASSERT_OK(autd3__ads_client_connect(&c, "127.0.0.1", autd3_tcemu_port(f.emu)));
  ams_addr_t t = task_addr();
  uint32_t h = 0;
  ASSERT_OK(autd3__ads_add_notification(&c, &t, 0x03040030, 0x81000000, 2 * 626, ADS_TRANS_SERVER_CYCLE, 0, 10000, &h));
  uint64_t end = autd3__now_ns() + 1500000000ull;
  while (autd3__now_ns() < end) {
    bool got;
    ads_reply_t r;
    autd3_err_t e = autd3__ads_client_pump(&c, 0, autd3__now_ns() + 20000000ull, true, &got, &r);
    if (e != AUTD3_E_TIMEOUT) ASSERT_OK(e); /* a gap of 20 ms on a loaded machine is not the subject */
  }
  uint16_t as, ds;
  ASSERT_OK(autd3__ads_read_state(&c, &t, &as, &ds)); /* still connected */
  autd3_tcemu_conn_stats_t st;
  autd3_tcemu_conn_stats(f.emu, &st);
  ASSERT_EQ(st.stalled, 0);
  ASSERT_EQ(st.accepted, 1);
  autd3__ads_client_free(&c);
  emu_stop(&f);
}

TEST(hold_up_several_clients_are_served) {
  /* A real runtime serves several ADS clients at once; so does the emulator (no invented refusal). */
  emu_fixture_t f;
  emu_start(&f, 1);
  ads_client_t c[3];
  ams_addr_t t = task_addr();
  for (int i = 0; i < 3; i++) {
    ASSERT_OK(autd3__ads_client_init(&c[i], 64, 2000));
    ASSERT_OK(autd3__ads_client_connect(&c[i], "127.0.0.1", autd3_tcemu_port(f.emu)));
  }
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < 3; i++) {
      uint8_t buf[2];
      uint32_t n;
      ASSERT_OK(autd3__ads_read(&c[i], &t, 0x03040030, 0x80000000, buf, 2, &n));
      ASSERT_EQ(ads_get_u16(buf), 1);
    }
  for (int i = 0; i < 3; i++) autd3__ads_client_free(&c[i]);
  emu_stop(&f);
}

static uint16_t storm_start(void *ctx, void (*log)(void *, const char *), void *log_ctx) {
  emu_fixture_t *f = ctx;
  autd3_tcemu_config_t cfg = autd3_tcemu_config_default();
  cfg.devices = 1;
  cfg.verbose = true;
  cfg.log = log;
  cfg.log_ctx = log_ctx;
  cfg.log_lines_per_s = CONNECT_STORM_LINES_PER_S;
  emu_start_cfg(f, cfg);
  return autd3_tcemu_port(f->emu);
}

static void storm_gets_in(void *ctx) {
  emu_fixture_t *f = ctx;
  autd3_link_t *link;
  link_gets_in(autd3_tcemu_port(f->emu), 1, 20000, &link);
  autd3_link_close(link);
}

static void storm_stop(void *ctx) { emu_stop(ctx); }

TEST(hold_up_connect_storm_log_bounded) {
  emu_fixture_t f;
  connect_storm_server_t s = {storm_start, storm_gets_in, storm_stop, &f};
  connect_storm_log_bounded(&s);
}

TEST(hold_up_options_range_checked) {
  autd3_tcemu_t *e = NULL;
  autd3_tcemu_config_t c = autd3_tcemu_config_default();
  c.listen_port = 0;
  c.max_conns = 0;
  ASSERT_ERR(autd3_tcemu_create(&c, &e), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "--max-conns 0");
  c.max_conns = AUTD3_TCEMU_MAX_CONNS_LIMIT + 1;
  ASSERT_ERR(autd3_tcemu_create(&c, &e), AUTD3_E_INVALID_OPTION);
  c = autd3_tcemu_config_default();
  c.listen_port = 0;
  c.handshake_timeout_ms = 0;
  ASSERT_ERR(autd3_tcemu_create(&c, &e), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "--handshake-timeout-ms");
  c = autd3_tcemu_config_default();
  c.listen_port = 0;
  c.idle_timeout_ms = 3600001;
  ASSERT_ERR(autd3_tcemu_create(&c, &e), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "--idle-timeout-ms");
  c = autd3_tcemu_config_default();
  c.listen_port = 0;
  c.log_lines_per_s = 100001;
  ASSERT_ERR(autd3_tcemu_create(&c, &e), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "--log-lines-per-s");
}

TEST(codec_frame_encode_rejects_wrapping_lengths) {
  /* Lengths whose sum wraps around size_t must be refused before anything is copied. */
  uint8_t out[64], a[4] = {0}, b[32] = {0};
  ams_header_t h;
  memset(&h, 0, sizeof h);
  ASSERT_EQ(autd3__ams_frame_encode(out, sizeof out, &h, a, SIZE_MAX - 10, b, 20), 0);
  ASSERT_EQ(autd3__ams_frame_encode(out, sizeof out, &h, a, 20, b, SIZE_MAX - 10), 0);
  ASSERT_EQ(autd3__ams_frame_encode(out, 10, &h, NULL, 0, NULL, 0), 0);
  ASSERT_EQ(autd3__ams_frame_encode(out, sizeof out, &h, a, 4, b, 22), AMS_FRAME_HDR_LEN + 26);
  ASSERT_EQ(autd3__ams_frame_encode(out, sizeof out, &h, a, 4, b, 23), 0);
}

/* ---------------- one network layer: IPv6 and host names ---------------- */

static autd3_err_t open_tc(const char *server_ip, const char *net_id, uint16_t port, autd3_link_t **out) {
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_TWINCAT);
  o.u.twincat.server_ip = server_ip;
  o.u.twincat.server_port = port;
  o.u.twincat.server_ams_net_id = net_id;
  o.u.twincat.timeout_ms = 2000;
  return open_for(&o, 1, out);
}

TEST(link_ipv6_loopback) {
  emu_fixture_t f;
  autd3_tcemu_config_t cfg = autd3_tcemu_config_default();
  cfg.devices = 1;
  cfg.listen_host = "::1";
  cfg.listen_port = 0;
  if (autd3_tcemu_create(&cfg, &f.emu) != AUTD3_OK) SKIP("no IPv6 loopback here: %s", autd3_last_error());
  ASSERT_EQ(pthread_create(&f.th, NULL, emu_thread, f.emu), 0);
  autd3_link_t *link;
  /* ADS over IPv6: the NetId cannot default to "IPv4 + .1.1", so it must be given */
  ASSERT_ERR(open_tc("::1", NULL, autd3_tcemu_port(f.emu), &link), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "server_ams_net_id");
  ASSERT_OK(open_tc("::1", "127.0.0.1.1.1", autd3_tcemu_port(f.emu), &link));
  drive_until_ack(link, 1);
  autd3_link_close(link);
  ASSERT_OK(open_tc("[::1]", "127.0.0.1.1.1", autd3_tcemu_port(f.emu), &link)); /* brackets as in host:port */
  drive_until_ack(link, 1);
  autd3_link_close(link);
  emu_stop(&f);
}

TEST(link_host_name) {
  /* A name: resolved (every address tried); the default NetId is the IPv4 address it reached + ".1.1". */
  emu_fixture_t f;
  emu_start(&f, 1);
  autd3_link_t *link;
  ASSERT_OK(open_tc("localhost", NULL, autd3_tcemu_port(f.emu), &link));
  drive_until_ack(link, 1);
  /* a dropped connection is re-established from the addresses resolved at open (no name lookup in cycle()) */
  autd3_tcemu_drop_connections(f.emu);
  static uint8_t tx[626], rx[2];
  bool valid = true, saw_lost = false;
  for (int k = 0; k < 5000 && !(saw_lost && valid); k++) {
    ASSERT_OK(autd3_link_cycle(link, tx, rx, &valid));
    if (!valid) saw_lost = true;
  }
  ASSERT_TRUE(saw_lost && valid);
  char diag[512];
  autd3_link_diagnostics(link, diag, sizeof diag);
  ASSERT_CONTAINS(diag, "reconnects : 1");
  autd3_link_close(link);
  ASSERT_ERR(open_tc("no-such-host.invalid", NULL, autd3_tcemu_port(f.emu), &link), AUTD3_E_CONNECT);
  ASSERT_CONTAINS(autd3_last_error(), "cannot resolve");
  ASSERT_ERR(open_tc("", NULL, autd3_tcemu_port(f.emu), &link), AUTD3_E_INVALID_OPTION);
  emu_stop(&f);
}

TEST(link_reports_device_reset_from_state_words) {
  /* A power-cycled slave: its state word falls to INIT and comes back; the link reports a reset of that device
   * (once) before the cycle that carries its post-reset inputs, and none for the other. */
  tc_fixture_t t;
  tc_start(&t, 2);
  autd3_link_t *link = tc_open(&t, 2, true);
  ASSERT_EQ(autd3_link_device_resets(link, 0), 0);
  ASSERT_EQ(autd3_link_device_resets(link, 1), 0);
  autd3_tcemu_power_cycle(t.emu.emu, 1);
  static uint8_t tx[2 * 626], rx[4];
  bool valid = false, saw_ff = false;
  int k;
  for (k = 0; k < 5000 && autd3_link_device_resets(link, 1) == 0; k++) ASSERT_OK(autd3_link_cycle(link, tx, rx, &valid));
  ASSERT_EQ(autd3_link_device_resets(link, 1), 1);
  /* then it comes back to OP; the count stays at one */
  autd3_link_status_t st;
  for (k = 0; k < 5000; k++) {
    ASSERT_OK(autd3_link_cycle(link, tx, rx, &valid));
    if (valid && rx[2] == 0xFF) saw_ff = true; /* the re-powered firmware's boot ack */
    ASSERT_OK(autd3_link_check_state(link, &st));
    if (st.state[1] == AUTD3_DEVICE_OP && k > 2 * AUTD3_TCEMU_POWER_CYCLE_TASKS) break;
  }
  ASSERT_EQ(st.state[1], AUTD3_DEVICE_OP);
  ASSERT_TRUE(saw_ff);
  ASSERT_EQ(autd3_link_device_resets(link, 1), 1);
  ASSERT_EQ(autd3_link_device_resets(link, 0), 0);
  tc_stop(&t);
}
