/* The EtherCrab link's pacing arithmetic (src/link/ethercrab/crab_pace.c)
 * against a simulated chain: host and DC clocks with a fixed offset, a path
 * latency with jitter, the bus thread's wake-up lateness, and devices that
 * take an image at the first SYNC0 edge after it arrived. Pure arithmetic,
 * no clock and no network: nothing here depends on the machine's timing. */
#include <stdint.h>

#include "harness/test.h"
#include "link/ethercrab/crab_pace.h"

#define P 1000000ull /* SYNC0 period */
#define US 1000ull
/* Frames reach the reference at or after their aim, up to what the host<->DC
 * estimate rose since its last low sample (200 ppm of the period per cycle,
 * for clock drift): a few us early at most, once the estimate has seen the
 * fast end of the jitter (WARMUP frames). */
#define EARLY_MAX (25 * US)
#define WARMUP 50

typedef struct sim {
  crab_pace_t pace;
  uint64_t now;       /* host time */
  int64_t offset;     /* DC time - host time */
  uint64_t next;      /* the pacer's next send, 0 = at once */
  uint64_t last_take; /* SYNC0 edge that took the previous frame's image */
  uint64_t last_dc;   /* DC time the previous frame reached the reference */
  int frames, shared_edges, edges_without_image;
} sim_t;

static void sim_init(sim_t *s, uint64_t send_period, int32_t shift) {
  crab_pace_init(&s->pace, (uint32_t)P, send_period, shift);
  s->now = 5000000000ull + 123457; /* not on any grid */
  s->offset = 777777777;
  s->next = 0;
  s->last_take = 0;
  s->last_dc = 0;
  s->frames = s->shared_edges = s->edges_without_image = 0;
}

/* One exchange: sleep to the pacer's point, wake `late` after it, the frame
 * needs `path` to reach the reference and the reply is back 20 us later. */
static uint64_t sim_frame(sim_t *s, uint64_t late, uint64_t path) {
  uint64_t t0 = (s->next != 0 && s->next > s->now ? s->next : s->now) + late;
  uint64_t dc = (uint64_t)((int64_t)(t0 + path) + s->offset);
  s->now = t0 + path + 20 * US;
  s->next = crab_pace_next(&s->pace, t0, dc, s->now);
  uint64_t take = (dc / P + 1) * P; /* the device model's take: first edge strictly after arrival */
  if (s->frames > 0 && take <= s->last_take) s->shared_edges++;
  if (s->frames > 0 && take > s->last_take + s->pace.send_period_ns)
    s->edges_without_image += (int)((take - s->last_take) / s->pace.send_period_ns) - 1;
  s->last_take = take;
  s->last_dc = dc;
  s->frames++;
  return dc;
}

/* A deterministic jitter in [0, span). */
static uint64_t jitter(uint32_t *x, uint64_t span) {
  *x = *x * 1103515245u + 12345u;
  return (uint64_t)((*x >> 8) % (uint32_t)span);
}

/* Without lateness every frame reaches the reference at least the publish
 * allowance after its SYNC0 edge (so it reads the ack of the image that edge
 * took), and every edge takes exactly one image. */
TEST(aim_leaves_the_devices_time_to_publish) {
  sim_t s;
  sim_init(&s, P, 0);
  uint32_t x = 1;
  for (int k = 0; k < 2000; k++) {
    uint64_t dc = sim_frame(&s, 0, 30 * US + jitter(&x, 80 * US));
    if (k < WARMUP) continue;
    ASSERT_GE(dc % P, CRAB_PUBLISH_NS - EARLY_MAX);
    ASSERT_LT(dc % P, CRAB_PUBLISH_NS + 81 * US);
  }
  ASSERT_EQ(s.shared_edges, 0);
  ASSERT_LE(s.edges_without_image, 2); /* at the anchoring only */
  ASSERT_EQ(s.pace.aim_mod_ns, CRAB_PUBLISH_NS);
}

/* The shift moves the aim (negative = period + shift). */
TEST(shift_moves_the_aim) {
  int32_t shifts[] = {200000, -100000, 700000};
  for (int i = 0; i < 3; i++) {
    sim_t s;
    sim_init(&s, P, shifts[i]);
    uint64_t aim = ((uint64_t)(shifts[i] < 0 ? (int64_t)P + shifts[i] : shifts[i]) + CRAB_PUBLISH_NS) % P;
    ASSERT_EQ(s.pace.aim_mod_ns, aim);
    uint32_t x = 7;
    for (int k = 0; k < 500; k++) {
      uint64_t dc = sim_frame(&s, 0, 30 * US + jitter(&x, 50 * US));
      if (k < WARMUP) continue;
      ASSERT_LT((dc % P + P - aim + EARLY_MAX) % P, EARLY_MAX + 51 * US); /* at (or just after) the aim */
    }
    ASSERT_EQ(s.shared_edges, 0);
  }
}

/* A frame that reaches the devices so late that it misses its edge is taken
 * at the next one; the frame after it must not land in that same interval,
 * where it would replace the late image before the devices took it. Whatever
 * the lateness, no SYNC0 edge is aimed at twice. */
TEST(late_frames_never_share_an_edge) {
  static const uint64_t lateness[] = {0, 500 * US, 800 * US, 840 * US, 900 * US, 990 * US, 1300 * US, 3100 * US, 20 * US};
  sim_t s;
  sim_init(&s, P, 0);
  uint32_t x = 3;
  for (int k = 0; k < 3000; k++) {
    uint64_t late = k % 7 == 3 ? lateness[(k / 7) % 9] : 0;
    (void)sim_frame(&s, late, 30 * US + jitter(&x, 80 * US));
  }
  ASSERT_EQ(s.shared_edges, 0);
  /* the same with a slow path instead of a late wake-up */
  sim_init(&s, P, 0);
  for (int k = 0; k < 3000; k++) {
    uint64_t path = 30 * US + (k % 5 == 2 ? lateness[(k / 5) % 9] : jitter(&x, 80 * US));
    (void)sim_frame(&s, 0, path);
  }
  ASSERT_EQ(s.shared_edges, 0);
}

/* send_cycle = 2 SYNC0 periods: one image every other edge, none shared. */
TEST(send_period_of_two_edges) {
  sim_t s;
  sim_init(&s, 2 * P, 0);
  uint32_t x = 5;
  for (int k = 0; k < 1000; k++) {
    uint64_t dc = sim_frame(&s, k % 11 == 4 ? 1500 * US : 0, 30 * US + jitter(&x, 80 * US));
    if (k >= WARMUP && k % 11 != 4) ASSERT_GE(dc % P, CRAB_PUBLISH_NS - EARLY_MAX);
  }
  ASSERT_EQ(s.shared_edges, 0);
}

/* A lost frame (no reply) keeps the grid: the next send is one send period
 * after the one before. A reference clock that jumps re-anchors at once. */
TEST(lost_frame_keeps_grid_and_clock_jump_reanchors) {
  sim_t s;
  sim_init(&s, P, 0);
  uint32_t x = 9;
  for (int k = 0; k < 100; k++) (void)sim_frame(&s, 0, 30 * US + jitter(&x, 80 * US));
  uint64_t before = s.next;
  ASSERT_NE(before, 0);
  s.now = before + 100 * US;
  uint64_t after = crab_pace_next(&s.pace, before, 0, s.now);
  ASSERT_EQ(after, before + P);
  /* the reference was power-cycled: its time restarts far away */
  s.next = after;
  s.offset -= 5000000000ll;
  s.frames = 0; /* edges on the new time base are not comparable with the old */
  (void)sim_frame(&s, 0, 40 * US);
  for (int k = 0; k < 200; k++) {
    uint64_t dc = sim_frame(&s, 0, 30 * US + jitter(&x, 80 * US));
    if (k >= WARMUP) ASSERT_GE(dc % P, CRAB_PUBLISH_NS - EARLY_MAX);
  }
  ASSERT_EQ(s.shared_edges, 0);
}
