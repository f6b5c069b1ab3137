/*
 * The EtherCrab link's pacing arithmetic: when the bus thread sends the next
 * process-data frame, from the DC time at which the previous one reached the
 * reference device. Pure (no clock, no sleep, no I/O) so that it can be
 * tested against synthetic replies; link_ethercrab.c feeds it and sleeps
 * with the shared pacer. Bus thread only, except the atomic counter.
 *
 * EtherCrab reads the inputs with the frame that writes the outputs (one LRW
 * per group), so where that frame lands in the SYNC0 period decides two
 * things: the outputs are taken at the first SYNC0 edge after it (anywhere in
 * the period costs the same), and the inputs it reads show only what the
 * devices published before it passed. A frame that lands right after an
 * edge reads the inputs before the devices have processed the image taken at
 * that edge, so every ack comes a whole cycle later. The aim is therefore
 * SYNC0 + shift + CRAB_PUBLISH_NS: the devices get that long after the edge
 * to take, process and publish; the rest of the period absorbs lateness.
 */
#ifndef AUTD3_LINK_ETHERCRAB_CRAB_PACE_H
#define AUTD3_LINK_ETHERCRAB_CRAB_PACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* What the devices get after a SYNC0 edge to take the image, process it and
 * publish (ack, data) before this link's frame reads the inputs. The
 * emulator's default device model publishes 100 us after the take
 * (docs/device-model.md); 50 us more of margin. Frames arrive at their aim
 * or later, so the rest of the period (850 us at 1 ms, 350 us at 500 us)
 * absorbs lateness before a frame misses its edge and costs a slot: a longer
 * allowance (300 us, echocat's) skipped visibly more streaming slots on a
 * loaded 2-core machine. A device that needs longer: add it with
 * sync0_shift_ns. (Frames can also arrive a few us *before* their aim, by
 * what `est` rose since its last low sample, so a shift that puts the aim
 * right on an edge, -150 us, risks two images at one edge, as the aim at
 * the edge itself did before.) */
#define CRAB_PUBLISH_NS 150000u

typedef struct crab_pace {
  uint64_t period_ns;      /* SYNC0 period; SYNC0 edges are its multiples in DC time */
  uint64_t send_period_ns; /* a multiple of period_ns */
  uint64_t aim_mod_ns;     /* where in the period frames should reach the reference: shift + publish allowance */
  /* Host <-> DC mapping: est = lower envelope of (DC time at which a frame
   * reached the reference - host time the exchange started). */
  bool have_est;
  int64_t est_ns;
  uint64_t target_dc_ns; /* DC time the next frame should reach the reference (an aim point) */
  /* slots passed over because the frame before reached the devices so late
   * that the devices take it at the slot's edge (diagnostics, any thread) */
  _Atomic uint64_t edge_skips;
} crab_pace_t;

/* period_ns a multiple of 500 us (so > CRAB_PUBLISH_NS); send_period_ns a
 * multiple of it; shift_ns in (-period, 2 period). */
void crab_pace_init(crab_pace_t *p, uint32_t period_ns, uint64_t send_period_ns, int32_t shift_ns);
/* How long after its aim point (mod the period) a frame that reached the reference at dc_ns got there. */
uint64_t crab_pace_phase(const crab_pace_t *p, uint64_t dc_ns);
/* After an exchange that started at host time t0 and whose frame reached the
 * reference at DC time dc_ns (0: no reply, the frame is lost), with host
 * time now: the host time to send the next frame, or 0 = at once (no
 * mapping yet, or it went stale; the reply re-anchors it). */
uint64_t crab_pace_next(crab_pace_t *p, uint64_t t0, uint64_t dc_ns, uint64_t now);

#endif
