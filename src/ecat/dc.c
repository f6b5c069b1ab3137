/*
 * Distributed-clock arithmetic (src/ecat/dc.h).
 */
#include "ecat/dc.h"

int64_t autd3__ecat_dc_diff_decode(uint32_t v) {
  int64_t mag = (int64_t)(v & 0x7FFFFFFFu);
  return (v & 0x80000000u) ? -mag : mag;
}

void autd3__ecat_dc_line_delays(size_t n, const uint32_t *rt0, const uint32_t *rt1, uint32_t *delay) {
  if (n == 0)
    return;
  delay[0] = 0;
  for (size_t k = 1; k < n; k++) {
    /* Loop time through everything behind slave k-1 minus the loop time behind slave k, halved:
     * the one-way delay of the hop k-1 -> k. Differences are taken in 32 bits (the latches wrap). */
    int64_t behind_prev = (int32_t)(rt1[k - 1] - rt0[k - 1]);
    int64_t behind_this = (k + 1 < n) ? (int32_t)(rt1[k] - rt0[k]) : 0;
    int64_t hop = (behind_prev - behind_this) / 2;
    if (hop < 0)
      hop = 0;
    delay[k] = delay[k - 1] + (uint32_t)hop;
  }
}

uint64_t autd3__ecat_dc_sync0_start(uint64_t systime, uint32_t cycle_ns, int32_t shift_ns) {
  uint64_t c = cycle_ns;
  return ((systime + ECAT_DC_START_AHEAD_NS) / c) * c + c + (uint64_t)(int64_t)shift_ns;
}

uint64_t autd3__ecat_dc_next_edge(uint64_t start, uint64_t period, uint64_t t) {
  if (t <= start || period == 0)
    return start;
  uint64_t k = (t - start + period - 1) / period;
  return start + k * period;
}

uint64_t autd3__ecat_dc_offset(uint64_t ref_system, uint64_t local, uint32_t delay) { return ref_system - local + delay; }

uint64_t autd3__ecat_dc_rebase_offset(uint64_t ref_offset, uint64_t ref_system, uint64_t other_system) {
  /* ref_system = local + ref_offset; the wanted system time is other_system. */
  return ref_offset + (other_system - ref_system);
}

uint64_t autd3__ecat_dc_sync0_restart(uint64_t grid_start, uint32_t cycle_ns, int32_t shift_ns, uint64_t systime) {
  if (grid_start == 0 || cycle_ns == 0)
    return autd3__ecat_dc_sync0_start(systime, cycle_ns ? cycle_ns : 1u, shift_ns);
  return autd3__ecat_dc_next_edge(grid_start, cycle_ns, systime + ECAT_DC_START_AHEAD_NS);
}

uint64_t autd3__ecat_dc_lower(uint64_t lb_dc, uint64_t lb_t, uint64_t now) {
  uint64_t el = now > lb_t ? now - lb_t : 0;
  return lb_dc + el - el / ECAT_DC_RATE_DIV;
}

uint64_t autd3__ecat_dc_lower_wait(uint64_t lb_dc, uint64_t lb_t, uint64_t now, uint64_t target) {
  int64_t short_by = (int64_t)(target - autd3__ecat_dc_lower(lb_dc, lb_t, now));
  if (short_by <= 0) return 0;
  /* the bound advances (1 - 1/DIV) ns per host ns; +1 for the rounding */
  return (uint64_t)short_by + (uint64_t)short_by / (ECAT_DC_RATE_DIV - 1u) + 1u;
}

bool autd3__ecat_dc_bound_update(uint64_t *lb_dc, uint64_t *lb_t, uint64_t dc, uint64_t t_recv) {
  /* A read that came back before the bound's own is compared with the bound's read itself
   * (stronger only if it is later; then it stays stronger at every later host time). */
  if (*lb_t != 0 && (int64_t)(dc - autd3__ecat_dc_lower(*lb_dc, *lb_t, t_recv)) <= 0) return false;
  *lb_dc = dc;
  *lb_t = t_recv;
  return true;
}
