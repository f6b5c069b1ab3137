/*
 * src/net/stage_hist.h, the per-stage histograms of the Remote link and the remote server: bucket edges,
 * quantiles at bucket resolution (the bucket's upper edge), the overflow bucket, stages never reached.
 */
#include "harness/test.h"
#include "net/stage_hist.h"

static autd3_stage_hist_t h;

TEST(empty_reports_zero) {
  autd3__stage_reset(&h);
  ASSERT_EQ(h.n, 0);
  ASSERT_EQ(autd3__stage_us(&h, 500), 0);
  ASSERT_EQ(autd3__stage_us(&h, 990), 0);
}

TEST(bucket_edges_are_upper_edges) {
  const uint64_t t0 = 1000000000ull;
  const struct {
    uint64_t ns;
    unsigned us;
  } c[] = {{0, 10}, {9999, 10}, {10000, 20}, {19999, 20}, {125000, 130}, {19999999, 20000}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    autd3__stage_reset(&h);
    autd3__stage_add(&h, t0, t0 + c[i].ns);
    ASSERT_EQ(h.n, 1);
    ASSERT_EQ(autd3__stage_us(&h, 500), c[i].us);
    ASSERT_EQ(autd3__stage_us(&h, 1), c[i].us); /* one sample: every quantile is it */
    ASSERT_EQ(autd3__stage_us(&h, 1000), c[i].us);
  }
}

TEST(beyond_the_range_is_the_overflow_bucket) {
  autd3__stage_reset(&h);
  autd3__stage_add(&h, 1, 1 + 20000000ull);       /* 20 ms: the first duration past the last bucket */
  autd3__stage_add(&h, 1, 1 + 3600000000000ull);  /* an hour */
  ASSERT_EQ(h.n, 2);
  ASSERT_EQ(h.b[AUTD3_STAGE_BUCKETS], 2);
  ASSERT_EQ(autd3__stage_us(&h, 500), (AUTD3_STAGE_BUCKETS + 1) * 10);
}

TEST(a_stage_not_reached_records_nothing) {
  autd3__stage_reset(&h);
  autd3__stage_add(&h, 0, 5000);    /* no start stamp */
  autd3__stage_add(&h, 9000, 5000); /* reversed: the end is an older request's */
  ASSERT_EQ(h.n, 0);
  autd3__stage_add(&h, 5000, 5000); /* zero length is a duration */
  ASSERT_EQ(h.n, 1);
  ASSERT_EQ(autd3__stage_us(&h, 500), 10);
}

TEST(quantiles_round_up_to_the_sample_that_covers_them) {
  autd3__stage_reset(&h);
  for (int i = 0; i < 98; i++) autd3__stage_add(&h, 100, 100 + 5000); /* 98 x 5 us -> bucket 0 */
  autd3__stage_add(&h, 100, 100 + 995000);                            /* 995 us -> bucket 99 */
  autd3__stage_add(&h, 100, 100 + 2500000);                           /* 2.5 ms -> bucket 250 */
  ASSERT_EQ(h.n, 100);
  ASSERT_EQ(autd3__stage_us(&h, 500), 10);   /* the 50th sample */
  ASSERT_EQ(autd3__stage_us(&h, 980), 10);   /* the 98th */
  ASSERT_EQ(autd3__stage_us(&h, 981), 1000); /* 98.1 % needs the 99th sample */
  ASSERT_EQ(autd3__stage_us(&h, 990), 1000);
  ASSERT_EQ(autd3__stage_us(&h, 991), 2510); /* the 100th */
  ASSERT_EQ(autd3__stage_us(&h, 1000), 2510);
  ASSERT_EQ(autd3__stage_us(&h, 0), 10);     /* permille 0 still names a sample: the smallest */
}

TEST(reset_clears_every_bucket) {
  autd3__stage_reset(&h);
  autd3__stage_add(&h, 1, 1 + 40000000ull);
  autd3__stage_add(&h, 1, 1 + 70000);
  autd3__stage_reset(&h);
  ASSERT_EQ(h.n, 0);
  for (unsigned k = 0; k <= AUTD3_STAGE_BUCKETS; k++) ASSERT_EQ(h.b[k], 0);
}
