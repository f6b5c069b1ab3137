/*
 * The pacer: see link_driver.h autd3_link_pacer_t for the lateness policy and
 * docs/architecture.md "Pacing" for which link paces with it and why the
 * others (echocat's SYNC0 edges, Remote's reply-relative wake) do not.
 */
#include "link/pacer.h"

#include "platform/platform.h"

void autd3__pacer_init(autd3_link_pacer_t *p, uint64_t period_ns, uint32_t spin_ns) {
  p->period_ns = period_ns;
  p->next_ns = 0;
  p->spin_ns = spin_ns;
  atomic_init(&p->late, 0);
  atomic_init(&p->skipped, 0);
  atomic_init(&p->max_late_ns, 0);
}

void autd3__pacer_anchor(autd3_link_pacer_t *p, uint64_t point_ns) { p->next_ns = point_ns; }

uint64_t autd3__pacer_wait(autd3_link_pacer_t *p) {
  uint64_t t = p->next_ns;
  if (t == 0) { /* unanchored: now is the point, the grid starts here */
    t = autd3__now_ns();
    p->next_ns = t + p->period_ns;
    return t;
  }
  uint64_t now = autd3__now_ns();
  if (now <= t) {
    autd3__sleep_until_ns(t, p->spin_ns);
  } else {
    /* Late, measured against the point the caller was due at. */
    uint64_t late = now - t;
    if (late >= AUTD3_LINK_PACER_LATE_NS)
      atomic_fetch_add_explicit(&p->late, 1, memory_order_relaxed);
    if (late > atomic_load_explicit(&p->max_late_ns, memory_order_relaxed))
      atomic_store_explicit(&p->max_late_ns, late, memory_order_relaxed);
    if (p->period_ns != 0 && late >= p->period_ns) {
      /* A period or more: take the latest point not after now and skip the
       * missed ones, instead of bursting through them. */
      uint64_t missed = late / p->period_ns;
      t += missed * p->period_ns;
      atomic_fetch_add_explicit(&p->skipped, missed, memory_order_relaxed);
    }
  }
  p->next_ns = t + p->period_ns;
  return t;
}
