/* The ARMT v3 codec: byte vectors pinning the wire format, and the server's parser on hostile input. */
#include <stdio.h>
#include <string.h>

#include "autd3/geometry.h"
#include "autd3/link.h"
#include "harness/test.h"
#include "link/remote/armt.h"

static autd3_geometry_t *two_devices(void) {
  autd3_device_pose_t p[2] = {autd3_device_pose_at(0, 0, 0), autd3_device_pose_at(192, 0, 0)};
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(2, p, &g));
  return g;
}

static size_t load(const char *name, uint8_t *buf, size_t cap) {
  char path[512];
  snprintf(path, sizeof path, "%s/tests/remote/vectors/%s", AUTD3_SOURCE_DIR, name);
  FILE *f = fopen(path, "rb");
  if (!f) TEST_FAIL_("cannot open %s", path);
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

/* Client -> server: "ARMT" 03, u32 N, per device u32 T + T x (pos xyz, dir xyz) f32 LE. */
TEST(hello_prefix_bytes) {
  autd3_geometry_t *g = two_devices();
  static uint8_t b[16384];
  size_t n = autd3__armt_encode_hello(g, b, sizeof b);
  ASSERT_EQ(n, 5 + 4 + 2 * (4 + 249 * 24));
  ASSERT_EQ(n, autd3__armt_hello_bytes(g));
  static const uint8_t want[] = {'A', 'R', 'M', 'T', 0x03, 0x02, 0, 0, 0, 0xF9, 0, 0, 0,
                                 /* transducer 0: pos (0,0,0), dir (0,0,1) */
                                 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x3F,
                                 /* transducer 1: x = 10.16f */
                                 0x5C, 0x8F, 0x22, 0x41};
  ASSERT_MEMEQ(b, want, sizeof want);
  /* device 1's record: u32 249 then transducer 0 at x = 192.0f (0x43400000) */
  const uint8_t *d1 = b + 9 + 4 + 249 * 24;
  static const uint8_t want1[] = {0xF9, 0, 0, 0, 0, 0, 0x40, 0x43};
  ASSERT_MEMEQ(d1, want1, sizeof want1);
  ASSERT_EQ(autd3__armt_encode_hello(g, b, n - 1), 0); /* does not fit: nothing written */
  autd3_geometry_free(g);
}

/* The exact bytes the published client (PyPI autd3-link-remote 0.2.0 + autd3 0.2.0) sent for the same geometry. */
TEST(hello_matches_pypi_0_2_0_capture) {
  static uint8_t ref[16384], b[16384];
  size_t rn = load("pypi-autd3-link-remote-0.2.0-hello-2dev.bin", ref, sizeof ref);
  autd3_geometry_t *g = two_devices();
  size_t n = autd3__armt_encode_hello(g, b, sizeof b);
  ASSERT_EQ(n, rn);
  for (size_t i = 0; i < n; i++)
    if (b[i] != ref[i]) TEST_FAIL_("byte %zu: ours 0x%02x, reference 0x%02x", i, b[i], ref[i]);
  autd3_geometry_free(g);
}

TEST(refusal_bytes) {
  uint8_t b[ARMT_REFUSAL_MAX_BYTES];
  size_t n = autd3__armt_encode_refusal(b, sizeof b, ARMT_REFUSE_BUSY, "busy!");
  static const uint8_t want[] = {0, 0, 0x11, 5, 0, 'b', 'u', 's', 'y', '!'};
  ASSERT_EQ(n, sizeof want);
  ASSERT_MEMEQ(b, want, n);
  char big[2000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  ASSERT_EQ(autd3__armt_encode_refusal(b, sizeof b, 1, big), 5 + ARMT_REFUSAL_TEXT_MAX); /* truncated */
  ASSERT_EQ(b[3] | b[4] << 8, ARMT_REFUSAL_TEXT_MAX);
}

static armt_event_t feed_all(armt_parser_t *p, const uint8_t *b, size_t n, size_t *used) {
  armt_event_t ev = ARMT_EV_NONE;
  *used = 0;
  while (*used < n && ev == ARMT_EV_NONE) *used += autd3__armt_parser_feed(p, b + *used, n - *used, &ev);
  return ev;
}

TEST(parser_byte_at_a_time) {
  autd3_geometry_t *g = two_devices();
  static uint8_t b[16384], frame[2 * 626];
  size_t n = autd3__armt_encode_hello(g, b, sizeof b);
  armt_parser_t p;
  autd3__armt_parser_init(&p, AUTD3_MAX_DEVICES);
  for (size_t i = 0; i < n; i++) {
    armt_event_t ev;
    ASSERT_EQ(autd3__armt_parser_feed(&p, b + i, 1, &ev), 1);
    ASSERT_EQ(ev, i + 1 == n ? ARMT_EV_GEOMETRY : ARMT_EV_NONE);
    ASSERT_TRUE(autd3__armt_parser_mid_message(&p) == (i + 1 != n));
  }
  ASSERT_EQ(p.num_devices, 2);
  ASSERT_EQ(p.min_transducers, 249);
  ASSERT_EQ(p.max_transducers, 249);
  /* a frame, byte at a time, lands in the frame buffer */
  autd3__armt_parser_set_frame(&p, frame);
  static uint8_t req[1 + 2 * 626];
  req[0] = 0x01;
  for (size_t i = 1; i < sizeof req; i++) req[i] = (uint8_t)i;
  for (size_t i = 0; i < sizeof req; i++) {
    armt_event_t ev;
    autd3__armt_parser_feed(&p, req + i, 1, &ev);
    ASSERT_EQ(ev, i + 1 == sizeof req ? ARMT_EV_FRAME : ARMT_EV_NONE);
  }
  ASSERT_MEMEQ(frame, req + 1, sizeof frame);
  /* pipelined: frame + close in one buffer: one event per call */
  static uint8_t two[sizeof req + 1];
  memcpy(two, req, sizeof req);
  two[sizeof req] = 0x02;
  size_t used;
  ASSERT_EQ(feed_all(&p, two, sizeof two, &used), ARMT_EV_FRAME);
  ASSERT_EQ(used, sizeof req);
  ASSERT_EQ(feed_all(&p, two + used, 1, &used), ARMT_EV_CLOSE);
  uint8_t extra = 0x01;
  ASSERT_EQ(feed_all(&p, &extra, 1, &used), ARMT_EV_ERROR);
  ASSERT_EQ(p.err_kind, ARMT_ERR_AFTER_CLOSE);
  autd3_geometry_free(g);
}

static armt_parser_t parse(const uint8_t *b, size_t n, armt_event_t *ev) {
  armt_parser_t p;
  autd3__armt_parser_init(&p, AUTD3_MAX_DEVICES);
  size_t used;
  *ev = feed_all(&p, b, n, &used);
  return p;
}

TEST(parser_rejects_bad_hello) {
  armt_event_t ev;
  static const uint8_t magic[] = {'A', 'R', 'M', 'X', 3};
  armt_parser_t p = parse(magic, sizeof magic, &ev);
  ASSERT_EQ(ev, ARMT_EV_ERROR);
  ASSERT_EQ(p.err_kind, ARMT_ERR_MAGIC);
  /* v6 (autd3-rs-link-remote 0.4.x-era hello format): read whole, then refused with its SDK text */
  static const uint8_t ver[] = {'A', 'R', 'M', 'T', 6, 5, '0', '.', '4', '.', '0'};
  p = parse(ver, sizeof ver, &ev);
  ASSERT_EQ(ev, ARMT_EV_ERROR);
  ASSERT_EQ(p.err_kind, ARMT_ERR_VERSION);
  ASSERT_EQ(p.peer_version, 6);
  ASSERT_CONTAINS(p.error, "version 6 (autd3-sdk 0.4.0)");
  /* v2: no such hello format, refused at the version byte */
  static const uint8_t v2[] = {'A', 'R', 'M', 'T', 2};
  p = parse(v2, sizeof v2, &ev);
  ASSERT_EQ(p.err_kind, ARMT_ERR_VERSION);
  static const uint8_t v1[] = {0x10, 0x01, 0x00, 'A', 'U', 'T', 'D', '3', 'R', 'E', 'M', 'O', 'T', 'E'};
  p = parse(v1, sizeof v1, &ev);
  ASSERT_EQ(p.err_kind, ARMT_ERR_MAGIC);
  /* empty and truncated: no event, no error, still mid-message */
  p = parse(v1, 0, &ev);
  ASSERT_EQ(ev, ARMT_EV_NONE);
  p = parse(magic, 3, &ev);
  ASSERT_EQ(ev, ARMT_EV_NONE);
  ASSERT_TRUE(autd3__armt_parser_mid_message(&p));
}

TEST(parser_rejects_counts_before_allocating) {
  armt_event_t ev;
  uint8_t b[13] = {'A', 'R', 'M', 'T', 3};
  const uint32_t bad[] = {0, 129, 0xFFFFFFFFu};
  for (size_t i = 0; i < 3; i++) {
    memcpy(b + 5, &(uint32_t){bad[i]}, 4); /* host is little-endian (x86/arm64) */
    armt_parser_t p = parse(b, 9, &ev);
    ASSERT_EQ(ev, ARMT_EV_ERROR);
    ASSERT_EQ(p.err_kind, ARMT_ERR_DEVICE_COUNT);
  }
  b[5] = 1, b[6] = b[7] = b[8] = 0;
  memcpy(b + 9, &(uint32_t){4097}, 4);
  armt_parser_t p = parse(b, 13, &ev);
  ASSERT_EQ(p.err_kind, ARMT_ERR_TRANSDUCERS);
  memcpy(b + 9, &(uint32_t){0}, 4); /* zero transducers is accepted (the reference reads any count) */
  p = parse(b, 13, &ev);
  ASSERT_EQ(ev, ARMT_EV_GEOMETRY);
  uint8_t tag = 0x7F;
  size_t used;
  ASSERT_EQ(feed_all(&p, &tag, 1, &used), ARMT_EV_ERROR);
  ASSERT_EQ(p.err_kind, ARMT_ERR_TAG);
  ASSERT_CONTAINS(p.error, "0x7f");
  /* once in error, the parser consumes nothing more */
  ASSERT_EQ(autd3__armt_parser_feed(&p, &tag, 1, &ev), 0);
  ASSERT_EQ(ev, ARMT_EV_ERROR);
}

/* v7 (autd3-rs-link-remote 0.9.0 wire.rs): hello both ways, session reply, reply header, device states. */
TEST(v7_codec_bytes) {
  uint8_t b[ARMT7_HELLO_MAX];
  size_t n = autd3__armt_encode_hello7("0.9.0", b, sizeof b);
  static const uint8_t h7[] = {'A', 'R', 'M', 'T', 7, 5, '0', '.', '9', '.', '0'};
  ASSERT_EQ(n, sizeof h7);
  ASSERT_MEMEQ(b, h7, n);
  ASSERT_EQ(autd3__armt_encode_hello7("0.9.0", b, 10), 0);
  uint8_t s[ARMT_REFUSAL_MAX_BYTES];
  ASSERT_EQ(autd3__armt_encode_session7(s, sizeof s, ARMT7_SESSION_OK, 0x0102, "ignored"), 3);
  static const uint8_t ok[] = {0x00, 0x02, 0x01};
  ASSERT_MEMEQ(s, ok, 3);
  ASSERT_EQ(autd3__armt_encode_session7(s, sizeof s, ARMT7_SESSION_BUS_CLOSED, 0, "closed"), 9);
  static const uint8_t rej[] = {0x01, 0x06, 0x00, 'c', 'l', 'o', 's', 'e', 'd'};
  ASSERT_MEMEQ(s, rej, 9);
  armt7_status_t st = {.rx_valid = true, .recovering = true, .dc_time_ns = 0x0102030405060708ull, .recoveries = 3,
                       .stale_cycles = 17, .lost_cycles = 5, .phase_excursions = 41, .worst_phase_deviation_ns = 987654};
  uint8_t h[ARMT7_REPLY_HEADER_BYTES];
  autd3__armt_encode_reply7_header(h, &st);
  static const uint8_t head[] = {0x01, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x01, 0x03, 0, 0, 0, 0, 0, 0, 0, 17};
  ASSERT_MEMEQ(h, head, sizeof head);
  armt7_status_t back;
  autd3__armt_decode_reply7_header(h, &back);
  ASSERT_EQ(back.dc_time_ns, st.dc_time_ns);
  ASSERT_EQ(back.worst_phase_deviation_ns, 987654);
  ASSERT_EQ(back.lost_cycles, 5);
  ASSERT_TRUE(back.rx_valid && back.recovering);
  /* states: the four named ones round-trip; any other byte is OTHER with its low 5 bits, never healthy */
  uint8_t al = 0;
  for (uint8_t st8 = AUTD3_DEVICE_OP; st8 <= AUTD3_DEVICE_LOST; st8++)
    ASSERT_EQ(autd3__armt_decode_device_state7(autd3__armt_encode_device_state7(st8, 0), &al), st8);
  ASSERT_EQ(autd3__armt_encode_device_state7(AUTD3_DEVICE_OP, 0), 0x08);
  ASSERT_EQ(autd3__armt_encode_device_state7(AUTD3_DEVICE_OTHER, 0x12), 0x32);
  ASSERT_EQ(autd3__armt_decode_device_state7(0x32, &al), AUTD3_DEVICE_OTHER);
  ASSERT_EQ(al, 0x12);
  ASSERT_EQ(autd3__armt_decode_device_state7(0x09, &al), AUTD3_DEVICE_OTHER);
}

/* The server-side parser on a v7 stream: the hello is an event of its own, then the geometry as in v3. */
TEST(v7_parser_hello_then_geometry) {
  static uint8_t b[16384];
  static const uint8_t h7[] = {'A', 'R', 'M', 'T', 7, 5, '0', '.', '9', '.', '0'};
  memcpy(b, h7, sizeof h7);
  autd3_geometry_t *g = two_devices();
  size_t n = sizeof h7 + autd3__armt_encode_geometry(g, b + sizeof h7, sizeof b - sizeof h7);
  ASSERT_EQ(n, sizeof h7 + autd3__armt_geometry_bytes(g));
  autd3_geometry_free(g);
  for (size_t chunk = 1; chunk <= 7; chunk += 6) {
    armt_parser_t p;
    autd3__armt_parser_init(&p, AUTD3_MAX_DEVICES);
    int hellos = 0, geoms = 0;
    for (size_t off = 0; off < n;) {
      size_t len = n - off < chunk ? n - off : chunk;
      armt_event_t ev;
      off += autd3__armt_parser_feed(&p, b + off, len, &ev);
      ASSERT_TRUE(ev != ARMT_EV_ERROR);
      if (ev == ARMT_EV_HELLO) {
        ASSERT_EQ(geoms, 0);
        hellos++;
      }
      if (ev == ARMT_EV_GEOMETRY) geoms++;
    }
    ASSERT_EQ(hellos, 1);
    ASSERT_EQ(geoms, 1);
    ASSERT_EQ(p.peer_version, 7);
    ASSERT_CONTAINS(p.peer_sdk, "0.9.0");
    ASSERT_EQ(p.num_devices, 2);
  }
  /* an empty SDK text completes the hello at once */
  static const uint8_t e7[] = {'A', 'R', 'M', 'T', 7, 0};
  armt_parser_t p;
  autd3__armt_parser_init(&p, AUTD3_MAX_DEVICES);
  armt_event_t ev;
  ASSERT_EQ(autd3__armt_parser_feed(&p, e7, sizeof e7, &ev), sizeof e7);
  ASSERT_EQ(ev, ARMT_EV_HELLO);
}
