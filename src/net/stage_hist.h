/*
 * A fixed histogram of short durations, for the per-stage timings of the Remote
 * link and the remote server (docs/remote.md "Where the hop's time goes"): 10 us
 * buckets up to 20 ms plus one overflow bucket, so recording is one increment
 * and nothing is allocated; one writer thread per histogram. Quantiles come
 * out at bucket resolution (the bucket's upper edge).
 */
#ifndef AUTD3_NET_STAGE_HIST_H
#define AUTD3_NET_STAGE_HIST_H

#include <stdint.h>
#include <string.h>

#define AUTD3_STAGE_BUCKET_NS 10000u
#define AUTD3_STAGE_BUCKETS 2000u

typedef struct autd3_stage_hist {
  uint32_t b[AUTD3_STAGE_BUCKETS + 1];
  uint32_t n;
} autd3_stage_hist_t;

static inline void autd3__stage_reset(autd3_stage_hist_t *h) { memset(h, 0, sizeof *h); }

/* from, to: monotonic ns; a reversed pair (a stage not reached) records nothing. */
static inline void autd3__stage_add(autd3_stage_hist_t *h, uint64_t from, uint64_t to) {
  if (from == 0 || to < from) return;
  uint64_t k = (to - from) / AUTD3_STAGE_BUCKET_NS;
  h->b[k < AUTD3_STAGE_BUCKETS ? k : AUTD3_STAGE_BUCKETS]++;
  h->n++;
}

/* The q-th permille in us (upper bucket edge; 0 when empty). */
static inline unsigned autd3__stage_us(const autd3_stage_hist_t *h, unsigned permille) {
  if (h->n == 0) return 0;
  uint64_t want = ((uint64_t)h->n * permille + 999u) / 1000u, seen = 0;
  if (want == 0) want = 1;
  for (unsigned k = 0; k <= AUTD3_STAGE_BUCKETS; k++) {
    seen += h->b[k];
    if (seen >= want) return (k + 1u) * (AUTD3_STAGE_BUCKET_NS / 1000u);
  }
  return (AUTD3_STAGE_BUCKETS + 1u) * (AUTD3_STAGE_BUCKET_NS / 1000u);
}

#endif
