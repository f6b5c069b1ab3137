/*
 * The pacer (include/autd3/link_driver.h autd3_link_pacer_t): the one pacing
 * mechanism of the links, with one lateness policy. In-tree links call these
 * directly; out-of-tree links reach the same functions through the services
 * table (autd3_link_services()).
 */
#ifndef AUTD3_LINK_PACER_H
#define AUTD3_LINK_PACER_H

#include "autd3/link_driver.h"

/* Period and spin; unanchored, counters zero. */
void autd3__pacer_init(autd3_link_pacer_t *p, uint64_t period_ns, uint32_t spin_ns);
/* Next point at `point_ns` (0 = unanchored: the next wait returns at once). */
void autd3__pacer_anchor(autd3_link_pacer_t *p, uint64_t point_ns);
/* Sleep until the next point under the lateness policy, advance the grid by a
 * period; returns the point the exchange belongs to (now if unanchored, and
 * the grid is anchored there). Bus thread; no allocation. */
uint64_t autd3__pacer_wait(autd3_link_pacer_t *p);

#endif
