/* The EtherCrab link's pacing arithmetic: see crab_pace.h. */
#include "crab_pace.h"

void crab_pace_init(crab_pace_t *p, uint32_t period_ns, uint64_t send_period_ns, int32_t shift_ns) {
  p->period_ns = period_ns;
  p->send_period_ns = send_period_ns;
  int64_t per = (int64_t)period_ns;
  uint64_t shift_mod = (uint64_t)(((int64_t)shift_ns % per + per) % per);
  p->aim_mod_ns = (shift_mod + CRAB_PUBLISH_NS) % period_ns;
  p->have_est = false;
  p->est_ns = 0;
  p->target_dc_ns = 0;
  atomic_init(&p->edge_skips, 0);
}

uint64_t crab_pace_phase(const crab_pace_t *p, uint64_t dc_ns) {
  return (dc_ns % p->period_ns + p->period_ns - p->aim_mod_ns) % p->period_ns;
}

/* EtherCrab's own rule (autd3-sdk cycle.rs) is next = exchange start +
 * next_cycle_wait, i.e. re-anchored on every reply. Any jitter of the send
 * path (EtherCrab's tx/rx thread has to wake up) or of the reply then moves
 * the next frame by the same amount, and a frame that reaches the devices in
 * the same SYNC0 interval as the one before replaces that image before it was
 * taken (measured on veth: ~7 % of frames at shift 0, streaming ~550 cmd/s).
 * So the deadline is computed from the same DC time, but through a filtered
 * host<->DC offset: `est` follows the lowest observed (DC arrival - host
 * start) immediately and rises by at most 200 ppm of the period per cycle
 * (clock drift), so a frame sent at target - est can only arrive at or after
 * its aim; targets step one send period along the aim points, skipping slots
 * after a late wake-up, and never aim into the SYNC0 interval of the frame
 * before (one image per edge, whatever the lateness). */
uint64_t crab_pace_next(crab_pace_t *p, uint64_t t0, uint64_t dc_ns, uint64_t now) {
  const uint64_t P = p->period_ns, SP = p->send_period_ns;
  if (dc_ns != 0) {
    int64_t off = (int64_t)(dc_ns - t0);
    int64_t slew = (int64_t)(P / 5000);
    int64_t jump = (int64_t)P * 50;
    /* The reference clock jumped (power-cycled, re-synchronised) or this is
     * the first reply: re-anchor the grid on this frame. */
    if (p->have_est && (off < p->est_ns - jump || off > p->est_ns + jump)) p->have_est = false;
    if (!p->have_est || off < p->est_ns) p->est_ns = off;
    else p->est_ns = p->est_ns + slew < off ? p->est_ns + slew : off;
    if (!p->have_est) p->target_dc_ns = dc_ns - crab_pace_phase(p, dc_ns); /* the aim point this frame belonged to */
    p->have_est = true;
  }
  if (!p->have_est) return 0;
  p->target_dc_ns += SP;
  uint64_t send = p->target_dc_ns - (uint64_t)p->est_ns;
  if ((int64_t)(send - now) < 0) { /* late: skip to the first slot still ahead */
    uint64_t n = (now - send) / SP + 1;
    p->target_dc_ns += n * SP;
    send += n * SP;
  }
  if (send - now > 2 * SP) { /* never sleep on a stale grid: send now, re-anchor on the reply */
    p->have_est = false;
    return 0;
  }
  if (dc_ns != 0) {
    /* The devices take this frame's outputs at the first SYNC0 edge after it
     * reached them; the next frame (arriving at or after its target) must
     * reach them after that edge, or it would replace this image untaken (a
     * SyncManager keeps the newest image only). */
    uint64_t taken_at = (dc_ns / P + 1) * P;
    if (p->target_dc_ns < taken_at) {
      uint64_t n = (taken_at - p->target_dc_ns + SP - 1) / SP;
      p->target_dc_ns += n * SP;
      send += n * SP;
      atomic_fetch_add_explicit(&p->edge_skips, n, memory_order_relaxed);
    }
  }
  return send; /* the edge rule adds at most the slots up to a reply's edge: never a stale grid */
}
