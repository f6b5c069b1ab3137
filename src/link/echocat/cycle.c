/*
 * echocat: the cycle engine (docs/echocat.md "Timing"): outputs aimed at a SYNC0 edge
 * with the one-image rule, the read frame before the next edge, the checker's
 * mailbox frame, and wait_next_cycle.
 */
#define _GNU_SOURCE
#include "link/echocat/echocat_internal.h"

static void jitter_record(echocat_t *ec, int64_t late_ns) {
  uint64_t us = late_ns <= 0 ? 0 : (uint64_t)late_ns / 1000u;
  atomic_fetch_add_explicit(&ec->jit[us < JIT_BUCKETS ? us : JIT_BUCKETS], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&ec->jit_n, 1, memory_order_relaxed);
  uint64_t m = atomic_load_explicit(&ec->jit_max, memory_order_relaxed);
  if (late_ns > 0 && (uint64_t)late_ns > m)
    atomic_store_explicit(&ec->jit_max, (uint64_t)late_ns, memory_order_relaxed);
}

/* Every sleep of the bus thread is one wake-up (counted for the diagnostics:
 * "wake-ups per cycle"); a deadline already past costs none. */
static void sleep_until(echocat_t *ec, uint64_t t, uint32_t spin_ns) {
  if ((int64_t)(t - autd3__now_ns()) <= 0)
    return;
  atomic_fetch_add_explicit(&ec->wakeups, 1, memory_order_relaxed);
  autd3__sleep_until_ns(t, spin_ns);
}

/* Time the outputs need before an edge: their measured round trip plus a guard. */
static uint64_t out_need(const echocat_t *ec) { return (uint64_t)ec->out_rtt_ns + GUARD_NS; }

void autd3__echocat_update_read_ahead(echocat_t *ec) {
  /* Leave room for: read round trip + the caller's turnaround + the outputs;
   * and as much more as the devices' processing allows (PROCESS_NS after an
   * edge): the more room, the longer a stall that costs no SYNC0 edge. */
  uint64_t ra = (uint64_t)ec->rd_rtt_ns + out_need(ec) + 100000u;
  if (ec->period > PROCESS_NS && ra < ec->period - PROCESS_NS)
    ra = ec->period - PROCESS_NS;
  if (ra > ec->period - 20000u)
    ra = ec->period - 20000u;
  ec->read_ahead = ra;
}

/* For every output reply not yet looked at: the devices take an image at the
 * first SYNC0 edge after it passed them (the reference read its clock right
 * behind the outputs, plus the way down the chain). No new image may reach
 * them before that edge: raise last_slot to it. */
static void account_outputs(echocat_t *ec) {
  uint32_t sync0 = ec->opt.ethercat.sync0_period_ns;
  for (int g = 0; g < ec->ngroups; g++) {
    slot_t *s = &ec->out[g];
    if (s->state != SLOT_DONE || s->accounted)
      continue;
    s->accounted = true;
    if (s->dg[1].wkc != 1)
      continue; /* the reference did not read: the caller assumes the worst */
    uint64_t passed = ecat_get64(s->f.buf + ec->out_dc[g]);
    autd3__echocat_dc_bound(ec, passed, s->rx_ns);
    uint64_t taken = autd3__ecat_dc_next_edge(ec->sync0_start, sync0, passed + CHAIN_PASS_NS(ec->n));
    if (taken > ec->last_slot)
      ec->last_slot = taken;
  }
}

/* Outputs of the previous call that never came back are either lost or
 * still queued somewhere (a stalled peer): if even the read frame sent after
 * them is missing, wait for them (bounded) before sending more, or a late
 * pair could land in one SYNC0 interval. */
static void resolve_previous(echocat_t *ec) {
  slot_t *set[MAX_GROUPS + 1];
  int n = 0;
  for (int g = 0; g < ec->ngroups; g++)
    if (ec->out[g].state == SLOT_SENT)
      set[n++] = &ec->out[g];
  if (n == 0 || ec->rd.state != SLOT_SENT)
    return; /* all answered, or the later read frame came back: the missing ones are gone */
  if (ec->silent)
    return; /* nothing has come back for a while: do not stall every cycle */
  set[n++] = &ec->rd;
  autd3__echocat_collect_until(ec, set, n, autd3__now_ns() + RESOLVE_CAP_NS, &ec->rd);
  bool any = ec->rd.state == SLOT_DONE;
  for (int i = 0; i + 1 < n; i++)
    any = any || set[i]->state == SLOT_DONE;
  ec->silent = !any;
  account_outputs(ec);
  if (ec->rd.state == SLOT_DONE && ec->rd.dg[0].wkc)
    autd3__echocat_dc_bound(ec, ecat_get64(ec->rd.f.buf + ec->rd_frmw), ec->rd.rx_ns);
}

/* The devices' DC time at host time `now`: the phase estimate, or the proven
 * lower bound if the estimate lags behind it. */
static uint64_t dc_at(const echocat_t *ec, uint64_t now) {
  uint64_t dc = (uint64_t)((int64_t)now + ec->off), lb = autd3__echocat_dc_lower(ec, now);
  return ec->lb_t && lb > dc ? lb : dc;
}

/* echocat's pacing is not the shared host-grid pacer (link/pacer.h) on
 * purpose: its deadlines are the devices' SYNC0 edges in DC time, mapped to
 * host time through a measured offset that moves every cycle, and a late
 * wake-up must aim at the next edge still ahead (the one-image rule), never
 * run "now" on a past point. Its lateness is counted in edges ("late
 * wake-ups") and departure jitter instead. */
/* The SYNC0 edge outputs sent at host time `now` aim at: the next one at least
 * MIN_LEAD ahead, and never one that may already hold an image of ours (one
 * image per SYNC0: the devices keep only the newest SM2 buffer). */
static uint64_t aim_edge(const echocat_t *ec, uint64_t now) {
  uint64_t slot = autd3__ecat_dc_next_edge(ec->sync0_start, ec->period, dc_at(ec, now) + MIN_LEAD_NS);
  if (ec->last_slot && slot <= ec->last_slot)
    slot = ec->last_slot + ec->period;
  return slot;
}

/* The read frame: FRMW of the reference's system time, one LRD of every
 * input, BRD AL status. Once a read came back short (a device missing, or
 * one not in OP), and until IN_SPLIT_HOLD reads in a row were complete, it
 * also carries an FPRD of each device's AL status (up to IN_DG_MAX devices),
 * so that the next reads tell whose inputs came back (read_inputs). A
 * healthy chain's frame, and so its wire budget (wire.c), is unchanged; a
 * degraded one pays 14 bytes per device. A device's inputs are mapped at
 * n × 626 + its index × 2 (autd3__echocat_map_pdo). */
static void read_send(echocat_t *ec, uint64_t deadline) {
  const uint16_t n = ec->n;
  slot_t *r = &ec->rd;
  autd3__echocat_slot_start(ec, r, true);
  ec->rd_frmw = autd3__ecat_dg_add(&r->f, ECAT_FRMW, STATION(0), REG_DCSYS, NULL, 8);
  uint32_t inlog = (uint32_t)n * OUT_BYTES;
  ec->rd_lrd = autd3__ecat_dg_add(&r->f, ECAT_LRD, (uint16_t)inlog, (uint16_t)(inlog >> 16), NULL, (uint16_t)(n * IN_BYTES));
  ec->rd_brd = autd3__ecat_dg_add(&r->f, ECAT_BRD, 0, REG_ALSTAT, NULL, 2);
  ec->rd_aim_dc = (uint64_t)((int64_t)deadline + ec->off);
  ec->rd_split = ec->in_split && n <= IN_DG_MAX;
  for (uint16_t d = 0; ec->rd_split && d < n; d++)
    ec->rd_al[d] = autd3__ecat_dg_add(&r->f, ECAT_FPRD, STATION(d), REG_ALSTAT, NULL, 2);
  autd3__echocat_slot_send(ec, r);
  jitter_record(ec, (int64_t)(r->sent_ns - deadline));
}

/* The output replies of this call, taken: the devices took the outputs at
 * `slot` only if the reference read its clock early enough (account_outputs);
 * if that is not proven (late wake-up, lost reply) they may be taken at the
 * edge after, which must then stay free. Sets res->lost/wkc_ok for them. */
static void outputs_done(echocat_t *ec, uint64_t slot, cycle_res_t *res) {
  const uint16_t n = ec->n;
  bool proven = true;
  double fwd = 0;
  for (int g = 0; g < ec->ngroups; g++) {
    slot_t *s = &ec->out[g];
    if (s->state != SLOT_DONE || s->dg[1].wkc != 1) {
      proven = false;
      continue;
    }
    /* how long the outputs took to reach the reference, in DC time */
    double v = (double)(int64_t)(ecat_get64(s->f.buf + ec->out_dc[g]) - (uint64_t)((int64_t)s->sent_ns + ec->off));
    if (v > fwd)
      fwd = v;
  }
  account_outputs(ec);
  if (!proven || ec->last_slot != slot)
    atomic_fetch_add_explicit(&ec->unproven, 1, memory_order_relaxed);
  if (!proven && ec->last_slot < slot + ec->opt.ethercat.sync0_period_ns)
    ec->last_slot = slot + ec->opt.ethercat.sync0_period_ns;
  if (proven && fwd > 0 && fwd < (double)ec->period)
    ec->out_rtt_ns += (fwd - ec->out_rtt_ns) / 16;
  res->lost = false;
  res->wkc_ok = true;
  for (int g = 0; g < ec->ngroups; g++) {
    slot_t *s = &ec->out[g];
    uint16_t m = (uint16_t)(n - 2 * g < 2 ? n - 2 * g : 2);
    if (s->state != SLOT_DONE) {
      res->lost = true;
      res->wkc_ok = false;
    } else if (s->dg[0].wkc != m || s->dg[1].wkc != 1) {
      res->wkc_ok = false;
    }
  }
}

/* The read frame's inputs, and whose they are. Whole: the LRD counted every
 * device and the BRD saw all in OP. Split (read_send): the FPRDs of the AL
 * status tell whose inputs the LRD carries (autd3__ecat_inputs_valid). A
 * longer chain than IN_DG_MAX has only the whole verdict. */
static void read_inputs(echocat_t *ec, const slot_t *r, uint8_t *rx, cycle_res_t *res) {
  const uint16_t n = ec->n;
  if (r->dg[0].wkc != n)
    res->wkc_ok = false;
  const ecat_dg_t *lrd = &r->dg[1], *brd = &r->dg[2];
  res->all_op = brd->wkc == n && (r->f.buf[ec->rd_brd] & 0x1F) == AL_OP;
  bool whole = lrd->wkc == n && res->all_op;
  if (lrd->wkc != n)
    res->wkc_ok = false;
  if (whole) {
    memcpy(rx, r->f.buf + ec->rd_lrd, (size_t)n * IN_BYTES);
    memset(res->in_ok, 1, n);
  } else if (ec->rd_split) {
    uint8_t al[IN_DG_MAX] = {0};
    uint16_t al_wkc[IN_DG_MAX] = {0};
    for (uint16_t d = 0; d < n; d++) {
      al[d] = r->f.buf[ec->rd_al[d]];
      al_wkc[d] = r->dg[3 + d].wkc;
    }
    autd3__ecat_inputs_valid(n, lrd->wkc, al, al_wkc, res->in_ok);
    for (uint16_t d = 0; d < n; d++)
      if (res->in_ok[d])
        memcpy(rx + (size_t)d * IN_BYTES, r->f.buf + ec->rd_lrd + (size_t)d * IN_BYTES, IN_BYTES);
  }
  bool all = true;
  for (uint16_t d = 0; d < n && all; d++)
    all = res->in_ok[d];
  if (!all) {
    ec->in_split = true; /* the next reads tell whose */
    ec->in_good = 0;
  } else if (ec->in_split && ++ec->in_good >= IN_SPLIT_HOLD) {
    ec->in_split = false;
  }
}

/* The link statistics of a read frame that came back: its round trip is the exchange; where its reference read
 * found the devices' clock, against the DC time it was aimed at, is the phase (an excursion: it reached them in
 * another SYNC0 interval than the one holding its aim). */
static void read_stats(echocat_t *ec, const slot_t *r) {
  if (!atomic_load_explicit(&ec->running, memory_order_relaxed))
    return; /* the caller's cycles only, not open's warm-up (as the diagnostics) */
  autd3_link_report_exchange(&ec->base, r->rx_ns - r->sent_ns);
  if (!r->dg[0].wkc || !ec->off_valid || ec->rd_aim_dc < ec->sync0_start)
    return;
  uint64_t aim = ec->rd_aim_dc, dc = ecat_get64(r->f.buf + ec->rd_frmw);
  autd3_link_report_dc_time(&ec->base, r->sent_ns + (r->rx_ns - r->sent_ns) / 2, dc);
  uint64_t early = aim - (autd3__ecat_dc_next_edge(ec->sync0_start, ec->period, aim + 1) - ec->period);
  autd3_link_report_phase(&ec->base, (int64_t)(dc - aim), early, ec->period - early);
}

/* The read frame's reply (or its absence): the inputs, all-OP, the phase sample. */
static void read_done(echocat_t *ec, uint8_t *rx, cycle_res_t *res) {
  slot_t *r = &ec->rd;
  res->all_op = false;
  if (r->state != SLOT_DONE) {
    res->lost = true;
    res->wkc_ok = false;
    return;
  }
  ec->silent = false;
  ec->rd_stamped = r->stamped;
  read_stats(ec, r);
  read_inputs(ec, r, rx, res);
  if (r->dg[0].wkc)
    autd3__echocat_dc_sample(ec, ecat_get64(r->f.buf + ec->rd_frmw), r->sent_ns, r->rx_ns);
  double v = (double)(r->rx_ns - r->sent_ns);
  ec->rd_rtt_ns += (v - ec->rd_rtt_ns) / 16;
}

/* May this cycle() leave its read's reply for the next call (one wake-up per
 * cycle)? Only for a caller that uses wait_next_cycle and skipped it now (it
 * has more frames queued: nobody waits for this cycle's acks before its next
 * one), when the replies carry the NIC's arrival stamp (the phase guard of the
 * next call rests on the last read's arrival, which taking it late would
 * push back), with no state-check frame to answer and no outputs of unknown
 * fate (those take the split plan's bounded wait). */
static bool may_defer(echocat_t *ec) {
  if (ec->hooked || !ec->hook_seen || !ec->rd_stamped || atomic_load(&ec->mbx) == MBX_POSTED)
    return false;
  for (int g = 0; g < ec->ngroups; g++)
    if (ec->out[g].state == SLOT_SENT || ec->out[g].state == SLOT_FAILED)
      return false;
  return true;
}

/* The split plan (docs/echocat.md "Timing"): outputs at once, inputs read
 * late. `defer` (may_defer): one wake-up per cycle. The read goes out at the
 * same point, but its reply is left in the NIC's ring; the next call takes it
 * when it wakes to send its own read (the reply had most of a cycle to
 * arrive) and returns those inputs: one cycle older, the ack of a command one
 * cycle later, no wait for a reply. A reply still missing then makes that
 * cycle lost, as a reply missing at the deadline does without deferral. The
 * first deferring call has no earlier read to return: a stale cycle. */
static autd3_err_t cycle_split(echocat_t *ec, const uint8_t *tx, uint8_t *rx, cycle_res_t *res, bool defer) {
  const uint16_t n = ec->n;
  bool prev_read = defer && ec->rd_pending;
  if (!defer) {
    /* A read left by a deferring call: the bounded wait below takes it (it
     * went out after any outputs still missing); this call reads anew. */
    resolve_previous(ec);
  }
  ec->rd_pending = false;
  uint64_t now = autd3__now_ns();
  /* 0. The one-image rule must not rest on the phase estimate: outputs may
   * only leave once the devices' clock is provably past the edge the previous
   * image was aimed at (normally true long before: the read frame proved it). */
  if (ec->last_slot && ec->lb_t) {
    uint64_t short_by = autd3__ecat_dc_lower_wait(ec->lb_dc, ec->lb_t, now, ec->last_slot + 1000u);
    if (short_by > 0) {
      if (short_by > 2 * ec->period)
        short_by = 2 * ec->period;
      sleep_until(ec, now + short_by, 0);
      now = autd3__now_ns();
      atomic_fetch_add_explicit(&ec->guard_waits, 1, memory_order_relaxed);
    }
  }
  /* 1. The SYNC0 edge these outputs aim at (aim_edge). Whether the outputs
   * really made it is known from their replies (step 2). */
  uint64_t slot = aim_edge(ec, now);
  uint64_t prev = ec->last_slot;
  if (prev && slot > prev + ec->period && !ec->first_call)
    atomic_fetch_add_explicit(&ec->late, (slot - prev) / ec->period - 1, memory_order_relaxed);
  ec->first_call = false; /* the gap between open and the caller's first cycle is no late wake-up */
  slot_t *set[MAX_GROUPS + 2];
  int ns = 0;
  for (int g = 0; g < ec->ngroups; g++) {
    slot_t *s = &ec->out[g];
    uint16_t first = (uint16_t)(2 * g), m = (uint16_t)(n - first < 2 ? n - first : 2);
    uint32_t log = (uint32_t)first * OUT_BYTES;
    autd3__echocat_slot_start(ec, s, true);
    autd3__ecat_dg_add(&s->f, ECAT_LWR, (uint16_t)log, (uint16_t)(log >> 16), tx + log, (uint16_t)(m * OUT_BYTES));
    /* The reference clock's system time right after the outputs passed it:
     * tells, in the devices' own time base, whether they had the image
     * before the edge (no host-side estimate involved). */
    ec->out_dc[g] = autd3__ecat_dg_add(&s->f, ECAT_FPRD, STATION(0), REG_DCSYS, NULL, 8);
    autd3__echocat_slot_send(ec, s); /* a failed send leaves the slot FAILED: counted as lost below */
    set[ns++] = s;
  }
  uint64_t next_edge_host = (uint64_t)((int64_t)(slot + ec->period) - ec->off);
  uint64_t ra = ec->read_ahead;
  if (defer && ec->period > DEFER_READ_NS + 20000u && ra < ec->period - DEFER_READ_NS)
    ra = ec->period - DEFER_READ_NS; /* read early: the caller's next outputs leave with it */
  uint64_t deadline = next_edge_host - ra;
  ec->last_slot = slot; /* until the replies say otherwise (after step 3) */

  /* 2. The read frame, `read_ahead` before the following edge. The output
   * replies (and a deferred read's) waited in the socket meanwhile: take
   * them first without polling (no system call at all from the ring). */
  sleep_until(ec, deadline, ec->opt.spin_ns);
  slot_t *r = &ec->rd;
  if (defer) {
    if (prev_read)
      set[ns++] = r;
    autd3__echocat_collect(ec, set, ns, 0);
    outputs_done(ec, slot, res);
    if (prev_read) {
      read_done(ec, rx, res);
    } else {
      res->all_op = false; /* no earlier read to return: stale, not lost */
    }
    read_send(ec, deadline);
    ec->rd_pending = r->state == SLOT_SENT;
    atomic_fetch_add_explicit(&ec->frames, (uint64_t)ec->ngroups + 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&ec->cyc, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&ec->deferred, 1, memory_order_relaxed);
    autd3__echocat_update_read_ahead(ec);
    atomic_store_explicit(&ec->diag_ra, ra, memory_order_relaxed); /* this cycle's, DEFER_READ_NS included */
    atomic_store_explicit(&ec->diag_out, (uint64_t)ec->out_rtt_ns, memory_order_relaxed);
    return AUTD3_OK;
  }
  autd3__echocat_collect(ec, set, ns, 0);
  read_send(ec, deadline);
  set[ns++] = r;
  int mb = MBX_POSTED;
  bool mbx = atomic_compare_exchange_strong(&ec->mbx, &mb, MBX_SENT);
  if (mbx) {
    ec->xs.state = SLOT_IDLE;
    ec->xs.sent_ns = autd3__now_ns();
    if (autd3__nic_send(ec->nic, ec->xs.f.buf, ec->xs.wire) == AUTD3_OK)
      ec->xs.state = SLOT_SENT;
    set[ns++] = &ec->xs;
  }
  atomic_fetch_add_explicit(&ec->frames, (uint64_t)ns, memory_order_relaxed);
  atomic_fetch_add_explicit(&ec->cyc, 1, memory_order_relaxed);

  /* 3. Replies: wait no longer than the caller's next outputs can afford. */
  uint64_t rx_deadline = next_edge_host - MIN_LEAD_NS - 20000u;
  if (rx_deadline < r->sent_ns + 100000u)
    rx_deadline = r->sent_ns + 100000u;
  autd3__echocat_collect(ec, set, ns, rx_deadline); /* an I/O error shows as missing replies */
  outputs_done(ec, slot, res);
  if (mbx)
    atomic_store(&ec->mbx, ec->xs.state == SLOT_DONE ? MBX_DONE : MBX_FAILED);
  read_done(ec, rx, res);
  autd3__echocat_update_read_ahead(ec);
  atomic_store_explicit(&ec->diag_ra, ec->read_ahead, memory_order_relaxed);
  atomic_store_explicit(&ec->diag_out, (uint64_t)ec->out_rtt_ns, memory_order_relaxed);
  return AUTD3_OK;
}

/* ---------------------------------------------------------------- long chains */

/* The edge a burst sent at host time `now` aims at: its frames need lead_ns of
 * line to reach the last device, and never an edge that may hold an image of ours. */
static uint64_t burst_aim(const echocat_t *ec, uint64_t now) {
  uint64_t slot = autd3__ecat_dc_next_edge(ec->sync0_start, ec->period, dc_at(ec, now) + ec->lead_ns);
  if (ec->last_slot && slot <= ec->last_slot)
    slot = ec->last_slot + ec->period;
  return slot;
}

/* How early (DC time) before the edge `slot - period` an output frame may be
 * handed to the NIC: no device holds its image before the frame's headers and
 * its first device's 626 bytes crossed the line (credit_ns, set at open), so
 * the image reaches it after that edge even when sent this much before. Only
 * on a line measured to serialise (the reference read the first outputs'
 * clock >= 3/4 w0_ns after they left, 8 bursts in a row): a veth without the
 * wire model delivers at once. */
static uint64_t burst_credit(const echocat_t *ec) { return ec->serial_n >= 8 ? ec->credit_ns : 0; }

/* Every slot with a frame in flight: a receive matches replies only against
 * the set it is given and drops the rest, so each wait gets all of them. */
static int in_flight(echocat_t *ec, slot_t **set, bool mbx) {
  int ns = 0;
  for (int g = 0; g < ec->ngroups; g++)
    if (ec->out[g].state == SLOT_SENT)
      set[ns++] = &ec->out[g];
  if (ec->rd.state == SLOT_SENT)
    set[ns++] = &ec->rd;
  if (mbx && ec->xs.state == SLOT_SENT)
    set[ns++] = &ec->xs;
  return ns;
}

/* The read frame's reference read as a lower bound of the devices' clock.
 * Its reply cannot be back before the frame went from the reference round
 * the chain behind it and back (ring_ns, measured by the reference's port
 * receive times at open; less RING_MARGIN_NS for the bytes of the frame ahead
 * of the FRMW), provided the frame went round the chain measured then: every
 * device handled its FRMW (working counter n). */
static void read_bound(echocat_t *ec) {
  const slot_t *r = &ec->rd;
  if (r->state != SLOT_DONE || r->dg[0].wkc == 0)
    return;
  uint64_t dc = ecat_get64(r->f.buf + ec->rd_frmw);
  if (r->dg[0].wkc == ec->n && ec->ring_ns > RING_MARGIN_NS)
    dc += ec->ring_ns - RING_MARGIN_NS;
  autd3__echocat_dc_bound(ec, dc, r->rx_ns);
}

/* Outputs may leave once the devices' clock is provably past `dc` (the lower
 * bound of the reference reads, autd3__echocat_dc_bound): sleep until then, or spin
 * when that is less than BURST_SPIN_MAX_NS away; look again after each wait
 * (a sleep is at most two cycles). */
static void burst_guard(echocat_t *ec, uint64_t dc) {
  bool waited = false;
  while (ec->lb_t) {
    uint64_t now = autd3__now_ns();
    uint64_t short_by = autd3__ecat_dc_lower_wait(ec->lb_dc, ec->lb_t, now, dc);
    if (short_by == 0)
      break;
    if (!waited)
      atomic_fetch_add_explicit(&ec->guard_waits, 1, memory_order_relaxed);
    waited = true;
    if (short_by <= BURST_SPIN_MAX_NS)
      autd3__sleep_until_ns(now + short_by, (uint32_t)short_by);
    else
      sleep_until(ec, now + (short_by < 2 * ec->period ? short_by : 2 * ec->period), ec->opt.spin_ns);
  }
}

/* The previous burst's frame of pair g (`old`, same slot) must have its fate
 * known before the pair's new outputs leave: its reference read says at which
 * edge the pair took that image, and the new one must follow it. Wait for its
 * reply, bounded (RESOLVE_CAP_NS; only a look while the last such wait got
 * nothing back at all) and not beyond the reply of a read frame sent after it
 * on the same line: once that is back, a missing frame is lost, not late. */
static void await_old(echocat_t *ec, const slot_t *old, bool mbx) {
  slot_t *set[MAX_GROUPS + 2];
  const slot_t *r = &ec->rd;
  uint64_t cap = autd3__now_ns() + (ec->out_silent ? 0 : RESOLVE_CAP_NS);
  for (;;) {
    /* in steps, so that such a read's reply ends the wait */
    uint64_t now = autd3__now_ns(), step = now + ec->period / 4;
    autd3__echocat_collect_until(ec, set, in_flight(ec, set, mbx), step < cap ? step : cap, old);
    bool read_after = r->state == SLOT_DONE && (int64_t)(r->sent_ns - old->sent_ns) > 0;
    if (old->state != SLOT_SENT || read_after || autd3__now_ns() >= cap)
      break;
  }
  ec->out_silent = old->state == SLOT_SENT && !(r->state == SLOT_DONE && (int64_t)(r->sent_ns - old->sent_ns) > 0);
}

/* The long-chain plan (docs/echocat.md "Long chains"): when the outputs need
 * most of the cycle, one burst per cycle carries the read frame first (it
 * reads the inputs the devices published since the last edge and comes back
 * at once), then every output frame back to back, aimed at the edge after
 * next-but-the-line: they leave up to credit_ns before the edge they must
 * follow, so the whole cycle is line time. The output replies come back while
 * the caller works and are accounted at the next call, pair by pair: a pair's
 * new outputs leave once its previous ones are accounted (their reference read
 * says at which edge the pair took its image; one missing counts as taken one
 * edge later), so the last pair's reply, due just before the next burst, holds
 * up only that pair, whose frame queues last on the line anyway. The
 * one-image rule is the split plan's, per pair. */
static autd3_err_t cycle_burst(echocat_t *ec, const uint8_t *tx, uint8_t *rx, cycle_res_t *res) {
  const uint16_t n = ec->n;
  resolve_previous(ec); /* a stalled peer: outputs and the read after them missing */
  slot_t *set[MAX_GROUPS + 2];
  bool any = false;
  for (int g = 0; g < ec->ngroups; g++)
    any = any || ec->out[g].state != SLOT_IDLE;
  /* What of the previous burst is back already: taken without waiting. */
  autd3__echocat_collect(ec, set, in_flight(ec, set, false), 0);
  account_outputs(ec);

  /* The edge to aim at (pairs of the previous burst still in flight count as
   * taken where they aimed until their replies say otherwise, below). */
  uint64_t now = autd3__now_ns();
  uint64_t slot = burst_aim(ec, now), credit = burst_credit(ec);
  uint64_t prev = ec->last_slot;
  if (prev && slot > prev + ec->period && !ec->first_call)
    atomic_fetch_add_explicit(&ec->late, (slot - prev) / ec->period - 1, memory_order_relaxed);
  ec->first_call = false;

  /* The outputs, pair by pair, each once the previous burst's frame of its
   * pair is accounted and the devices' clock is past the edge before its aim
   * less the credit. */
  slot_t *r = &ec->rd;
  bool mbx = false, prev_lost = false, prev_wkc = true;
  int frames = 0;
  uint64_t aim = slot;
  for (int g = 0; g < ec->ngroups; g++) {
    slot_t *s = &ec->out[g];
    uint16_t first = (uint16_t)(2 * g), m = (uint16_t)(n - first < 2 ? n - first : 2);
    if (s->state == SLOT_SENT) {
      await_old(ec, s, mbx);
      account_outputs(ec);
    }
    if (s->state == SLOT_SENT || s->state == SLOT_FAILED) {
      prev_lost = true;
      if (ec->last_slot < ec->burst_slot + ec->period)
        ec->last_slot = ec->burst_slot + ec->period; /* fate unknown: as if taken one edge later */
    } else if (s->state == SLOT_DONE && (s->dg[0].wkc != m || s->dg[1].wkc != 1)) {
      prev_wkc = false;
    }
    if (g == 0 && s->state == SLOT_DONE && s->dg[1].wkc == 1) {
      double v = (double)(int64_t)(ecat_get64(s->f.buf + ec->out_dc[0]) - (uint64_t)((int64_t)s->sent_ns + ec->off));
      ec->serial_n = v >= 0.75 * (double)ec->w0_ns ? ec->serial_n + 1 : 0;
    }
    if (g == 0 && ec->wake_target) {
      /* How long after its wake-up target the burst is ready: wait_next_cycle
       * wakes that much earlier. Its 95th percentile (a step up 19 times the
       * step down balances at 5 % above): ready early costs a spin in the
       * guard, ready late an edge. */
      uint64_t v = autd3__now_ns() - ec->wake_target;
      if (v < ec->period / 4)
        ec->wake_lat_ns += (double)v > ec->wake_lat_ns ? 19 * WAKE_LAT_STEP_NS : -(double)WAKE_LAT_STEP_NS;
      if (ec->wake_lat_ns < 0)
        ec->wake_lat_ns = 0;
      ec->wake_target = 0;
    }
    if (ec->last_slot >= aim) { /* this pair (or one before it) took its last image late: follow it */
      uint64_t later = ec->last_slot + ec->period;
      atomic_fetch_add_explicit(&ec->late, (later - aim) / ec->period, memory_order_relaxed);
      aim = later;
    }
    burst_guard(ec, aim - ec->period + 1000u - credit);
    if (g == 0) {
      /* The read frame first, right before the first outputs (and a posted
       * transaction: both come back at once). */
      read_send(ec, (uint64_t)((int64_t)(aim - ec->period - credit) - ec->off));
      frames++;
      int mb = MBX_POSTED;
      mbx = atomic_compare_exchange_strong(&ec->mbx, &mb, MBX_SENT);
      if (mbx) {
        ec->xs.state = SLOT_IDLE;
        ec->xs.sent_ns = autd3__now_ns();
        if (autd3__nic_send(ec->nic, ec->xs.f.buf, ec->xs.wire) == AUTD3_OK)
          ec->xs.state = SLOT_SENT;
        frames++;
      }
    }
    uint32_t log = (uint32_t)first * OUT_BYTES;
    autd3__echocat_slot_start(ec, s, true);
    autd3__ecat_dg_add(&s->f, ECAT_LWR, (uint16_t)log, (uint16_t)(log >> 16), tx + log, (uint16_t)(m * OUT_BYTES));
    ec->out_dc[g] = autd3__ecat_dg_add(&s->f, ECAT_FPRD, STATION(0), REG_DCSYS, NULL, 8);
    autd3__echocat_slot_send(ec, s);
    frames++;
  }
  if (any && (prev_lost || ec->last_slot != ec->burst_slot))
    atomic_fetch_add_explicit(&ec->unproven, 1, memory_order_relaxed);
  ec->last_slot = ec->burst_slot = aim;
  atomic_fetch_add_explicit(&ec->frames, (uint64_t)frames, memory_order_relaxed);
  atomic_fetch_add_explicit(&ec->cyc, 1, memory_order_relaxed);

  /* The read's reply (output replies arriving first are kept for the next call). */
  int ns = in_flight(ec, set, mbx);
  autd3__echocat_collect_until(ec, set, ns, r->sent_ns + ec->period / 2, mbx ? NULL : r);
  if (mbx && ec->xs.state != SLOT_DONE)
    autd3__echocat_collect_until(ec, set, ns, r->sent_ns + ec->period / 2, &ec->xs);
  if (mbx)
    atomic_store(&ec->mbx, ec->xs.state == SLOT_DONE ? MBX_DONE : MBX_FAILED);

  res->lost = prev_lost;
  res->wkc_ok = !prev_lost && prev_wkc;
  res->all_op = false;
  if (r->state != SLOT_DONE) {
    res->lost = true;
    res->wkc_ok = false;
  } else {
    ec->silent = false;
    ec->out_silent = false;
    read_stats(ec, r);
    read_inputs(ec, r, rx, res);
    read_bound(ec);
    if (r->dg[0].wkc) {
      autd3__echocat_dc_sample(ec, ecat_get64(r->f.buf + ec->rd_frmw), r->sent_ns, r->rx_ns);
    }
    double v = (double)(r->rx_ns - r->sent_ns);
    ec->rd_rtt_ns += (v - ec->rd_rtt_ns) / 16;
  }
  atomic_store_explicit(&ec->diag_ra, 0, memory_order_relaxed);
  atomic_store_explicit(&ec->diag_out, (uint64_t)ec->out_rtt_ns, memory_order_relaxed);
  return AUTD3_OK;
}

/* The burst plan's wake-up: so that the burst is ready when its first
 * outputs may leave (cycle_burst's guard): that moment less the usual delay
 * from the wake-up target to ready (wake_lat_ns, ~p95), plus how far the
 * proven lower bound lags the estimate. Early costs a short spin in the guard. */
static void burst_wake(echocat_t *ec, uint64_t now) {
  uint64_t floor = burst_aim(ec, now) - ec->period, est = dc_at(ec, now), lb = autd3__echocat_dc_lower(ec, now);
  uint64_t lag = ec->lb_t && est > lb ? est - lb : 0;
  uint64_t lead = burst_credit(ec) + (uint64_t)ec->wake_lat_ns;
  uint64_t wake = (uint64_t)((int64_t)(floor + 2000u + lag - lead) - ec->off);
  ec->wake_target = wake;
  if ((int64_t)(wake - now) > (int64_t)(2 * ec->period))
    wake = now + 2 * ec->period;
  if ((int64_t)(wake - now) > 0)
    sleep_until(ec, wake, ec->opt.spin_ns);
}

autd3_err_t autd3__echocat_cycle_core(echocat_t *ec, const uint8_t *tx, uint8_t *rx, cycle_res_t *res) {
  memset(res->in_ok, 0, ec->n); /* no read reply: nobody's inputs */
  if (ec->burst) {
    /* A streaming caller skips wait_next_cycle when its frame is decided
     * already (client bus.c more_queued); the burst plan needs that wake-up
     * all the same (the frame must not leave before its pairs' guard), so it
     * takes it here. */
    if (!ec->hooked && ec->off_valid)
      burst_wake(ec, autd3__now_ns());
    return cycle_burst(ec, tx, rx, res);
  }
  return cycle_split(ec, tx, rx, res, may_defer(ec));
}

/* Another master's frames reached us: the devices execute its frames as
 * well as ours, so nothing we send can be trusted to run exactly once. Fatal
 * for the link (every later cycle fails the same way). */
autd3_err_t autd3__echocat_foreign_master_error(echocat_t *ec, const char *when) {
  uint64_t n = atomic_load_explicit(&ec->foreign, memory_order_acquire);
  return autd3__foreign_master_error("echocat", ec->ifname, when, n, ec->foreign_mac);
}

autd3_err_t autd3__echocat_cycle(struct autd3_link *link, const uint8_t *tx, uint8_t *rx, bool *rx_valid) {
  echocat_t *ec = (echocat_t *)link;
  *rx_valid = false;
  if (atomic_load_explicit(&ec->foreign, memory_order_relaxed) != 0)
    return autd3__echocat_foreign_master_error(ec, "mid-run");
  atomic_fetch_add(&ec->bus_cycles, 1);
  int own = OWN_NONE;
  if (!atomic_compare_exchange_strong(&ec->owner, &own, OWN_BUS)) {
    /* the checker drives the bus right now (only when nobody cycled for a while) */
    autd3__sleep_ns(ec->period);
    autd3_link_count_cycle(link, false, true);
    return AUTD3_OK;
  }
  cycle_res_t res;
  autd3_err_t e = autd3__echocat_cycle_core(ec, tx, rx, &res);
  ec->hooked = false;
  atomic_store(&ec->owner, OWN_NONE);
  if (e != AUTD3_OK)
    return e;
  if (atomic_load_explicit(&ec->foreign, memory_order_relaxed) != 0) { /* this cycle's inputs may be the other master's doing */
    autd3_link_count_cycle(link, false, res.lost);
    return autd3__echocat_foreign_master_error(ec, "mid-run");
  }
  *rx_valid = !res.lost && res.wkc_ok && res.all_op;
  autd3_link_count_cycle(link, *rx_valid, res.lost);
  if (!*rx_valid)
    autd3_link_report_inputs(link, res.in_ok); /* whose inputs this cycle still carries */
  return AUTD3_OK;
}

/* wait_next_cycle (bus thread, before the caller stages its tx): sleep until
 * the latest moment from which outputs still reach the edge cycle() would aim
 * at now: that edge - their forward time and guard (out_need) - a wake-up
 * margin. A request submitted while we sleep then makes that edge; in
 * stop-and-wait the caller's next request comes a few µs after cycle()
 * returned, so its ack is read one cycle later instead of two. Only *when*
 * cycle() runs moves: it decides the edge, the phase guard and the late
 * wake-up accounting itself, as without this wait (a late wake-up aims at
 * the next edge; cycle() without a wait sends at once, as before). No NIC
 * access, no lock, no allocation. A caller that uses this hook and then
 * skips it before a cycle() has more frames queued: that cycle may defer its
 * read's reply to the next call (may_defer). It reports the edge's stage
 * deadline (autd3_link_report_stage_deadline): what the wake-up margin is for
 * is spent by a caller that is awake already and only swaps a pointer. */
autd3_err_t autd3__echocat_wait_next_cycle(struct autd3_link *link) {
  echocat_t *ec = (echocat_t *)link;
  ec->hooked = ec->hook_seen = true; /* this cycle's caller may wait for its acks: no deferral */
  if (!ec->off_valid)
    return AUTD3_OK;
  uint64_t now = autd3__now_ns();
  if (ec->burst) {
    burst_wake(ec, now);
    return AUTD3_OK;
  }
  uint64_t margin = ec->period / 5 < WAKE_MARGIN_NS ? ec->period / 5 : WAKE_MARGIN_NS;
  uint64_t edge_host = (uint64_t)((int64_t)aim_edge(ec, now) - ec->off);
  uint64_t wake = edge_host - out_need(ec) - margin;
  if ((int64_t)(wake - now) > (int64_t)(2 * ec->period))
    wake = now + 2 * ec->period; /* bounded, whatever the estimate says; cycle() decides anyway */
  else /* the margin is the caller's wake-up and staging: one that is awake already may stage until the outputs' own need */
    autd3_link_report_stage_deadline(link, edge_host - out_need(ec));
  if ((int64_t)(wake - now) > 0)
    sleep_until(ec, wake, ec->opt.spin_ns);
  return AUTD3_OK;
}
