/* echocat's portable pieces (src/link/echocat/ecat.h): frame codec, reply
 * matching, DC arithmetic, pcap writer; and option validation (no network). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "autd3/autd3.h"
#include "harness/test.h"
#include "link/echocat/ecat.h"
#include "nic/capture.h"

static const uint8_t MAC[6] = {0x02, 0x10, 0x20, 0x30, 0x40, 0x50};

TEST(frame_build_and_parse) {
  ecat_frame_t f;
  autd3__ecat_frame_init(&f, MAC, 0x42);
  uint8_t v[2] = {0x11, 0x00};
  uint16_t o1 = autd3__ecat_dg_add(&f, ECAT_BWR, 0, REG_ALCTL, v, 2);
  uint16_t o2 = autd3__ecat_dg_add(&f, ECAT_FPRD, 0x1001, REG_ALSTAT, NULL, 6);
  ASSERT_EQ(o1, 14 + 2 + 10);
  ASSERT_EQ(o2, o1 + 2 + 2 + 10);
  size_t wire = autd3__ecat_frame_finish(&f);
  ASSERT_EQ(wire, 60); /* 44 bytes padded to the Ethernet minimum */
  ASSERT_EQ(f.buf[12], 0x88);
  ASSERT_EQ(f.buf[13], 0xA4);
  ASSERT_EQ(ecat_get16(f.buf + 14), 0x1000 | (14 + 18)); /* type 1, length of the datagrams only */
  ASSERT_MEMEQ(f.buf + 6, MAC, 6);
  ecat_dg_t d[4];
  ASSERT_EQ(autd3__ecat_parse(f.buf, wire, d, 4), 2);
  ASSERT_EQ(d[0].cmd, ECAT_BWR);
  ASSERT_EQ(d[0].idx, 0x42);
  ASSERT_EQ(d[0].ado, REG_ALCTL);
  ASSERT_EQ(d[0].len, 2);
  ASSERT_EQ(d[0].off, o1);
  ASSERT_EQ(d[1].cmd, ECAT_FPRD);
  ASSERT_EQ(d[1].adp, 0x1001);
  ASSERT_EQ(d[1].len, 6);
  ASSERT_EQ(ecat_get16(f.buf + o1 - 10 + 6) & 0x8000, 0x8000); /* "more follow" on the first */
  ASSERT_EQ(ecat_get16(f.buf + o2 - 10 + 6) & 0x8000, 0);      /* not on the last */
}

TEST(frame_room_limits) {
  ecat_frame_t f;
  autd3__ecat_frame_init(&f, MAC, 1);
  ASSERT_EQ(autd3__ecat_frame_room(&f), ECAT_MAX_PAYLOAD - ECAT_DG_OVERHEAD);
  /* two AUTD3 devices' outputs (1252 bytes) plus the DC datagram fit one frame */
  ASSERT_NE(autd3__ecat_dg_add(&f, ECAT_FRMW, 0x1001, REG_DCSYS, NULL, 8), 0);
  ASSERT_NE(autd3__ecat_dg_add(&f, ECAT_LWR, 0, 0, NULL, 1252), 0);
  ASSERT_EQ(autd3__ecat_dg_add(&f, ECAT_LWR, 0, 0, NULL, 626), 0); /* a third does not */
  int n = 0;
  autd3__ecat_frame_init(&f, MAC, 1);
  while (autd3__ecat_dg_add(&f, ECAT_FPRD, 0, 0, NULL, 8))
    n++;
  ASSERT_EQ(n, ECAT_MAX_PAYLOAD / 20);
  ASSERT_LE(autd3__ecat_frame_finish(&f), 1514);
  autd3__ecat_frame_init(&f, MAC, 1);
  ASSERT_EQ(autd3__ecat_dg_add(&f, ECAT_LRD, 0, 0, NULL, 0x800), 0); /* length field is 11 bits */
}

TEST(reply_matching) {
  ecat_frame_t f;
  autd3__ecat_frame_init(&f, MAC, 7);
  autd3__ecat_dg_add(&f, ECAT_APWR, 0, REG_STADR, NULL, 2);
  autd3__ecat_dg_add(&f, ECAT_APWR, 0xFFFF, REG_STADR, NULL, 2);
  size_t wire = autd3__ecat_frame_finish(&f);
  uint8_t r[64];
  ecat_dg_t d[4];
  memcpy(r, f.buf, wire);
  r[6] |= 0x02;                      /* the first ESC marks the source MAC */
  ecat_put16(r + 16 + 2, 1);         /* ADP incremented on the way */
  ecat_put16(r + 16 + 10 + 2, 1);    /* WKC */
  ASSERT_TRUE(autd3__ecat_reply_matches(&f, wire, r, wire, d));
  ASSERT_EQ(d[0].wkc, 1);
  ASSERT_EQ(d[0].adp, 1);
  ASSERT_FALSE(autd3__ecat_reply_matches(&f, wire, r, wire - 1, d)); /* length differs */
  r[17] = 8;                                                  /* another frame's idx */
  ASSERT_FALSE(autd3__ecat_reply_matches(&f, wire, r, wire, d));
  r[17] = 7;
  r[16] = ECAT_APRD; /* command changed */
  ASSERT_FALSE(autd3__ecat_reply_matches(&f, wire, r, wire, d));
}

TEST(parse_rejects_malformed) {
  ecat_frame_t f;
  autd3__ecat_frame_init(&f, MAC, 1);
  autd3__ecat_dg_add(&f, ECAT_BRD, 0, 0, NULL, 2);
  autd3__ecat_dg_add(&f, ECAT_BRD, 0, 0, NULL, 2);
  size_t wire = autd3__ecat_frame_finish(&f);
  ecat_dg_t d[4];
  uint8_t r[64];
  memcpy(r, f.buf, wire);
  ASSERT_EQ(autd3__ecat_parse(r, wire, d, 4), 2);
  ASSERT_EQ(autd3__ecat_parse(r, 20, d, 4), -1);    /* truncated */
  r[13] = 0x00;                              /* not EtherCAT */
  ASSERT_EQ(autd3__ecat_parse(r, wire, d, 4), -1);
  memcpy(r, f.buf, wire);
  ecat_put16(r + 14, 0x4000 | 28);           /* type 4 (network variables) is not for us */
  ASSERT_EQ(autd3__ecat_parse(r, wire, d, 4), -1);
  memcpy(r, f.buf, wire);
  ecat_put16(r + 14, 0x1000 | 200);          /* length field beyond the frame */
  ASSERT_EQ(autd3__ecat_parse(r, wire, d, 4), -1);
  memcpy(r, f.buf, wire);
  ecat_put16(r + 16 + 6, 0x8000 | 30);       /* first datagram overruns the chain */
  ASSERT_EQ(autd3__ecat_parse(r, wire, d, 4), -1);
  memcpy(r, f.buf, wire);
  ecat_put16(r + 16 + 14 + 6, 0x8000 | 2);   /* "more follow" on the last: runs off the end */
  ASSERT_EQ(autd3__ecat_parse(r, wire, d, 4), -1);
  memcpy(r, f.buf, wire);
  ASSERT_EQ(autd3__ecat_parse(r, wire, d, 1), 2);   /* counts beyond `max`, fills only `max` */
}

TEST(dc_diff_decode) {
  ASSERT_EQ(autd3__ecat_dc_diff_decode(0), 0);
  ASSERT_EQ(autd3__ecat_dc_diff_decode(1234), 1234);
  ASSERT_EQ(autd3__ecat_dc_diff_decode(0x80000000u | 1234), -1234);
  ASSERT_EQ(autd3__ecat_dc_diff_decode(0x7FFFFFFFu), 0x7FFFFFFF);
}

/* A line of n slaves, hop delay h: port 0 of slave k sees the frame at
 * base_k + k*h, port 1 on its way back at base_k + (2(n-1)-k)*h. */
TEST(dc_line_delays) {
  enum { N = 5 };
  const uint32_t h = 600;
  uint32_t rt0[N], rt1[N], delay[N];
  for (int k = 0; k < N; k++) {
    uint32_t base = 0xFFFFF000u + (uint32_t)k * 0x10000000u; /* different local clocks, some wrapping */
    rt0[k] = base + (uint32_t)k * h;
    rt1[k] = base + (uint32_t)(2 * (N - 1) - k) * h;
  }
  rt1[N - 1] = 12345; /* the last slave's port 1 is closed: garbage must be ignored */
  autd3__ecat_dc_line_delays(N, rt0, rt1, delay);
  for (int k = 0; k < N; k++)
    ASSERT_EQ(delay[k], (uint32_t)k * h);
  autd3__ecat_dc_line_delays(1, rt0, rt1, delay);
  ASSERT_EQ(delay[0], 0);
}

TEST(dc_sync0_start_and_edges) {
  /* floor((t + 100 ms)/cycle)*cycle + cycle + shift (SOEM v2.0.0 ethercatdc.c ecx_dcsync0) */
  ASSERT_EQ(autd3__ecat_dc_sync0_start(0, 1000000, 0), 101000000ull);
  ASSERT_EQ(autd3__ecat_dc_sync0_start(123456789, 1000000, 0), 224000000ull);
  ASSERT_EQ(autd3__ecat_dc_sync0_start(123456789, 500000, 250000), 223750000ull);
  ASSERT_EQ(autd3__ecat_dc_sync0_start(123456789, 1000000, -100000), 223900000ull);
  ASSERT_EQ(autd3__ecat_dc_next_edge(1000, 500, 0), 1000);
  ASSERT_EQ(autd3__ecat_dc_next_edge(1000, 500, 1000), 1000);
  ASSERT_EQ(autd3__ecat_dc_next_edge(1000, 500, 1001), 1500);
  ASSERT_EQ(autd3__ecat_dc_next_edge(1000, 500, 1500), 1500);
  ASSERT_EQ(autd3__ecat_dc_next_edge(1000, 500, 1999), 2000);
}

/* The one-image rule's lower bound of the DC time (autd3__ecat_dc_bound_update / autd3__ecat_dc_lower): fed
 * one reference read per 1 ms cycle, with uneven reply delays and a few long stalls, for 60 s of
 * simulated host time (no clock is read), it must never be above the reference's real system
 * time, whether that clock runs slower or faster than the host's (a power-cycled reference that
 * ran 500 ppm slow made a bound that assumed the host's rate lead the clock by 0.5 ms per second,
 * and echocat's cycle rate collapse: docs/reliability.md "Availability"), and it must stay close
 * to it (lag at most the reply delay plus a few µs), or the phase guard would stall the cycle. */
static uint64_t sim_dc(int64_t ppm, uint64_t h) {
  const uint64_t h0 = 1000000000ull, d0 = 800000000000000000ull; /* ~2025 in EtherCAT time */
  int64_t el = (int64_t)(h - h0);
  return d0 + (uint64_t)(el + el / 1000000 * ppm + (el % 1000000) * ppm / 1000000);
}

TEST(dc_lower_bound_holds_for_drifting_reference) {
  const int64_t ppms[] = {-1000, -500, -20, 0, 20, 1000};
  for (size_t c = 0; c < sizeof ppms / sizeof ppms[0]; c++) {
    int64_t ppm = ppms[c];
    uint64_t lb_dc = 0, lb_t = 0, rnd = 12345, max_lag = 0;
    int replaced = 0;
    for (int i = 0; i < 60000; i++) {
      uint64_t sent = 1000000000ull + (uint64_t)i * 1000000u;
      rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t to_ref = 5000 + (rnd >> 33) % 50000;       /* 5..55 µs to the reference */
      uint64_t back = 5000 + (rnd >> 17) % 250000;        /* 5..255 µs back to the host */
      if (i % 997 == 0) back += 5000000;                  /* a 5-ms stall of the receiving thread */
      uint64_t t_read = sent + to_ref, t_recv = t_read + back;
      replaced += autd3__ecat_dc_bound_update(&lb_dc, &lb_t, sim_dc(ppm, t_read), t_recv);
      for (uint64_t later = 0; later <= 2000000u; later += 250000u) { /* until the next-but-one read */
        uint64_t now = t_recv + later, truth = sim_dc(ppm, now), lb = autd3__ecat_dc_lower(lb_dc, lb_t, now);
        if (lb > truth)
          TEST_FAIL_("%lld ppm, read %d, +%llu ns: bound %llu ns above the clock", (long long)ppm, i,
                     (unsigned long long)later, (unsigned long long)(lb - truth));
        if (i > 100 && truth - lb > max_lag)
          max_lag = truth - lb;
        /* waiting as the phase guard does brings the bound to the target */
        uint64_t w = autd3__ecat_dc_lower_wait(lb_dc, lb_t, now, lb + 700000u);
        ASSERT_TRUE(autd3__ecat_dc_lower(lb_dc, lb_t, now + w) >= lb + 700000u);
        ASSERT_TRUE(w <= 700000u + 700000u / (ECAT_DC_RATE_DIV - 1u) + 1u);
      }
    }
    printf("%+lld ppm: bound replaced by %d of 60000 reads, max lag %.1f us\n", (long long)ppm, replaced,
           (double)max_lag / 1000.0);
    /* about the fastest recent delay back: far below a cycle (the guard would wait that much more) */
    ASSERT_TRUE(max_lag < 1000000u);
    ASSERT_TRUE(replaced > 1000); /* the bound keeps up with the clock, whatever its rate */
  }
}

TEST(capture_file_format) {
  char path[] = "/tmp/echocat-cap-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_TRUE(fd >= 0);
  close(fd);
  autd3_capture_t c;
  ASSERT_OK(autd3__capture_open(&c, path));
  ecat_frame_t f;
  autd3__ecat_frame_init(&f, MAC, 1);
  autd3__ecat_dg_add(&f, ECAT_BRD, 0, 0, NULL, 2);
  size_t wire = autd3__ecat_frame_finish(&f);
  autd3__capture_write(&c, f.buf, wire, 1700000000123456789ull);
  autd3__capture_close(&c);
  uint8_t b[256];
  FILE *fp = fopen(path, "rb");
  ASSERT_TRUE(fp != NULL);
  size_t n = fread(b, 1, sizeof b, fp);
  fclose(fp);
  unlink(path);
  ASSERT_EQ(n, 24 + 16 + wire);
  ASSERT_EQ(ecat_get32(b), 0xa1b23c4du); /* nanosecond pcap */
  ASSERT_EQ(ecat_get32(b + 20), 1);      /* Ethernet */
  ASSERT_EQ(ecat_get32(b + 24), 1700000000u);
  ASSERT_EQ(ecat_get32(b + 28), 123456789u);
  ASSERT_EQ(ecat_get32(b + 32), wire);
  ASSERT_MEMEQ(b + 40, f.buf, wire);
  ASSERT_ERR(autd3__capture_open(&c, "/nonexistent-dir/x.pcap"), AUTD3_E_IO);
  ASSERT_CONTAINS(autd3_last_error(), "/nonexistent-dir/x.pcap");
}

/* echocat's own option checks run before any network access. */
TEST(option_validation) {
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(1, NULL, &g));
  autd3_link_t *l = NULL;
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_ECHOCAT);
  o.u.echocat.ethercat.send_cycle_ns = 1500000; /* not a multiple of the 1 ms SYNC0 */
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "send_cycle_ns");
  o = autd3_link_option_default(AUTD3_LINK_ECHOCAT);
  o.u.echocat.spin_ns = 600000;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "spin_ns");
  o = autd3_link_option_default(AUTD3_LINK_ECHOCAT);
  o.u.echocat.backend = (autd3_nic_backend_t)7;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "backend");
  o = autd3_link_option_default(AUTD3_LINK_ECHOCAT);
  o.u.echocat.ethercat.sync_tolerance_ns = 0;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "sync_tolerance_ns");
  o = autd3_link_option_default(AUTD3_LINK_ECHOCAT);
  o.u.echocat.ethercat.interface = "echocat-no-such-if";
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_NO_INTERFACE);
  ASSERT_CONTAINS(autd3_last_error(), "echocat-no-such-if");
  ASSERT_TRUE(l == NULL);
  autd3_geometry_free(g);
}

/* The split read's attribution (docs/reliability.md "A fault costs only its
 * device"): whose inputs one LRD carries, from the AL status each device
 * answered in the same frame. */
TEST(inputs_valid_per_device) {
  bool v[4];
  const uint8_t op4[4] = {AL_OP, AL_OP, AL_OP, AL_OP};
  const uint16_t all4[4] = {1, 1, 1, 1};
  ASSERT_EQ(autd3__ecat_inputs_valid(4, 4, op4, all4, v), 4);
  ASSERT_TRUE(v[0] && v[1] && v[2] && v[3]);
  /* devices 2.. unplugged: neither their FPRD nor the LRD counted them */
  const uint16_t two[4] = {1, 1, 0, 0};
  ASSERT_EQ(autd3__ecat_inputs_valid(4, 2, op4, two, v), 2);
  ASSERT_TRUE(v[0] && v[1] && !v[2] && !v[3]);
  /* device 1 silent in the middle (mute): the line through it intact */
  const uint16_t mid[4] = {1, 0, 1, 1};
  ASSERT_EQ(autd3__ecat_inputs_valid(4, 3, op4, mid, v), 3);
  ASSERT_TRUE(v[0] && !v[1] && v[2] && v[3]);
  /* device 3 back in SAFE-OP+ERROR (its SM watchdog expired): it answers the
   * LRD, takes no outputs: not valid, the others are */
  const uint8_t safe[4] = {AL_OP, AL_OP, AL_OP, AL_SAFEOP | AL_ERROR};
  ASSERT_EQ(autd3__ecat_inputs_valid(4, 4, safe, all4, v), 3);
  ASSERT_TRUE(v[0] && v[1] && v[2] && !v[3]);
  /* device 2 power-cycled, in INIT (no SM3 yet): answers its FPRD, not the LRD */
  const uint8_t init[4] = {AL_OP, AL_OP, AL_INIT, AL_OP};
  ASSERT_EQ(autd3__ecat_inputs_valid(4, 3, init, all4, v), 3);
  ASSERT_TRUE(v[0] && v[1] && !v[2] && v[3]);
  /* a count the AL statuses cannot explain: nobody's inputs */
  ASSERT_EQ(autd3__ecat_inputs_valid(4, 3, op4, all4, v), 0);
  ASSERT_TRUE(!v[0] && !v[1] && !v[2] && !v[3]);
  ASSERT_EQ(autd3__ecat_inputs_valid(4, 4, init, all4, v), 0);
  ASSERT_TRUE(!v[0] && !v[1] && !v[2] && !v[3]);
  /* the error flag alone does not stop OP */
  const uint8_t operr[4] = {AL_OP | AL_ERROR, AL_OP, AL_OP, AL_OP};
  ASSERT_EQ(autd3__ecat_inputs_valid(4, 4, operr, all4, v), 4);
}
