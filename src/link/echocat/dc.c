/*
 * echocat: distributed clocks: the phase estimate's samples and lower bound, offsets,
 * delays and static drift at open (or for a re-plugged device), the wait
 * until every clock agrees, SYNC0 on the common grid, and the re-base of a
 * power-cycled reference clock.
 */
#define _GNU_SOURCE
#include "link/echocat/echocat_internal.h"

/* The reference read `dc` before the reply arrived at t_recv: keep the
 * strongest lower bound of the DC time (autd3__ecat_dc_lower: it needs no estimate,
 * so it guards the one-image rule, and it holds for a reference clock slower
 * than the host's). */
void autd3__echocat_dc_bound(echocat_t *ec, uint64_t dc, uint64_t t_recv) {
  autd3__ecat_dc_bound_update(&ec->lb_dc, &ec->lb_t, dc, t_recv);
}

uint64_t autd3__echocat_dc_lower(const echocat_t *ec, uint64_t now) {
  return ec->lb_t ? autd3__ecat_dc_lower(ec->lb_dc, ec->lb_t, now) : 0;
}

/* Filtered DC offset (system time - host monotonic) from one round trip with
 * a reference read: the reference read its clock about halfway through. Only
 * round trips close to the fastest seen count (a stalled peer or thread makes
 * the midpoint meaningless); the floor creeps up slowly if the path slows. */
void autd3__echocat_dc_sample(echocat_t *ec, uint64_t dc, uint64_t t_send, uint64_t t_recv) {
  uint64_t rtt = t_recv - t_send;
  if (dc == 0)
    return; /* nobody read the reference (it did not answer): the data is what we sent */
  autd3__echocat_dc_bound(ec, dc, t_recv);
  if (ec->rtt_floor == 0 || rtt < ec->rtt_floor)
    ec->rtt_floor = rtt;
  else
    ec->rtt_floor += (rtt - ec->rtt_floor) / 1024;
  if (ec->off_valid && rtt > 2 * ec->rtt_floor + 20000u)
    return;
  int64_t o = (int64_t)(dc - (t_send + rtt / 2));
  if (!ec->off_valid) {
    ec->off = o;
    ec->off_valid = true;
  } else {
    ec->off += (o - ec->off) / 16;
  }
}

/* Offsets, delays (SOEM v2.0.0 src/ec_dc.c ecx_configdc) and static drift compensation for the slaves in list.
 * `initial`: all slaves, the system time starts at the host's wall clock;
 * else: the reference's current system time is the base (re-plugged device). */
autd3_err_t autd3__echocat_dc_config(echocat_t *ec, const uint16_t *list, int cnt, bool initial) {
  slot_t *s = &ec->xs;
  uint8_t z[8] = {0};
  /* latch receive times in every slave */
  autd3__echocat_slot_start(ec, s, false);
  autd3__ecat_dg_add(&s->f, ECAT_BWR, 0, REG_DCRT0, z, 4);
  autd3_err_t e = autd3__echocat_xfer(ec, s);
  if (e != AUTD3_OK)
    return e;
  uint64_t master = autd3__realtime_ns() - ECAT_EPOCH_OFFSET_NS;
  uint8_t rt[AUTD3_MAX_DEVICES * 24];
  uint16_t all[AUTD3_MAX_DEVICES];
  autd3__echocat_list_range(all, 0, ec->n);
  const dgspec_t sp[2] = {{ECAT_FPRD, REG_DCRT0, 16}, {ECAT_FPRD, REG_DCRTPU, 8}};
  uint16_t wkc[AUTD3_MAX_DEVICES * 2];
  if (initial) {
    if ((e = autd3__echocat_each(ec, all, ec->n, false, sp, 2, NULL, rt, wkc)) != AUTD3_OK)
      return e;
    uint32_t rt0[AUTD3_MAX_DEVICES], rt1[AUTD3_MAX_DEVICES], delay[AUTD3_MAX_DEVICES];
    for (int k = 0; k < ec->n; k++) {
      rt0[k] = ecat_get32(rt + k * 24);
      rt1[k] = ecat_get32(rt + k * 24 + 4);
    }
    autd3__ecat_dc_line_delays(ec->n, rt0, rt1, delay);
    for (int k = 0; k < ec->n; k++)
      ec->sl[k].delay = delay[k];
    /* the loop behind the reference, as its port 1 measured it (cycle.c's bound) */
    int32_t behind = ec->n > 1 ? (int32_t)(rt1[0] - rt0[0]) : 0;
    ec->ring_ns = behind > 0 ? (uint64_t)behind : 0;
  } else {
    /* only the reference and the slaves in list are read */
    uint16_t rl[AUTD3_MAX_DEVICES + 1];
    int m = 0;
    rl[m++] = 0;
    for (int i = 0; i < cnt; i++)
      if (list[i] != 0)
        rl[m++] = list[i];
    if ((e = autd3__echocat_each(ec, rl, m, false, sp, 2, NULL, rt, wkc)) != AUTD3_OK)
      return e;
    uint8_t ofs[8];
    uint16_t w;
    if ((e = autd3__echocat_dg1(ec, ECAT_FPRD, STATION(0), REG_DCOFS, NULL, 8, ofs, &w)) != AUTD3_OK)
      return e;
    master = ecat_get64(rt + 16) + ecat_get64(ofs); /* the reference's system time at the latch */
  }
  /* offset_k = system time at the latch - local latch time + delay_k, so every
   * clock agrees with the reference (delay included) from the start. */
  uint8_t wr[AUTD3_MAX_DEVICES * 12] = {0};
  for (int i = 0; i < cnt; i++) {
    uint16_t k = list[i];
    uint64_t local = ecat_get64(rt + k * 24 + 16);
    ecat_put64(wr + (size_t)k * 12, autd3__ecat_dc_offset(master, local, ec->sl[k].delay));
    ecat_put32(wr + (size_t)k * 12 + 8, ec->sl[k].delay);
  }
  const dgspec_t wsp[2] = {{ECAT_FPWR, REG_DCOFS, 8}, {ECAT_FPWR, REG_DCDELAY, 4}};
  if ((e = autd3__echocat_each(ec, list, cnt, false, wsp, 2, wr, NULL, NULL)) != AUTD3_OK)
    return e;
  if (!initial)
    return AUTD3_OK; /* the cyclic FRMW keeps a re-plugged device locked */
  /* Static drift compensation: many FRMW of the reference's system time; 64
   * compares per frame, each datagram is one compare in every other slave. */
  for (int done = 0; done < STATIC_DRIFT_ITER;) {
    autd3__echocat_slot_start(ec, s, false);
    uint16_t o0 = 0;
    int m = 0;
    while (m < 64 && done + m < STATIC_DRIFT_ITER) {
      uint16_t o = autd3__ecat_dg_add(&s->f, ECAT_FRMW, STATION(0), REG_DCSYS, NULL, 8);
      if (!o)
        break;
      if (m == 0)
        o0 = o;
      m++;
    }
    if ((e = autd3__echocat_xfer_direct(ec, s, 20000, 3)) != AUTD3_OK)
      return e;
    autd3__echocat_dc_sample(ec, ecat_get64(s->f.buf + o0), s->sent_ns, s->rx_ns);
    done += m;
  }
  return AUTD3_OK;
}

/* Wait until every non-reference clock agrees (AUTD link's wait_for_sync,
 * crate autd3-rs-link-soem 0.6.1 src/sync.rs): FRMW every 1 ms, read 0x092C every 10 ms,
 * EMA (alpha 0.2) of the signed difference, done when max |ema| < tolerance. */
autd3_err_t autd3__echocat_wait_sync(echocat_t *ec) {
  const autd3_ethercat_option_t *o = &ec->opt.ethercat;
  uint64_t start = autd3__now_ns(), next = start, end = start + (uint64_t)o->sync_timeout_ms * 1000000u;
  double ema[AUTD3_MAX_DEVICES] = {0};
  uint32_t samples[AUTD3_MAX_DEVICES] = {0};
  enum { CHUNK = 60 }; /* 0x092C reads per frame (the rest of the chain in later rounds) */
  int reads = 0;
  for (int iter = 0;; iter++) {
    autd3__sleep_until_ns(next, 0);
    next += 1000000u;
    slot_t *s = &ec->xs;
    autd3__echocat_slot_start(ec, s, false);
    uint16_t of = autd3__ecat_dg_add(&s->f, ECAT_FRMW, STATION(0), REG_DCSYS, NULL, 8);
    bool read = ec->n > 1 && iter % 10 == 9;
    uint16_t od[CHUNK];
    int k0 = 1 + (reads * CHUNK) % (ec->n - 1 > 0 ? ec->n - 1 : 1), nk = 0;
    for (int k = k0; read && k < ec->n && nk < CHUNK; k++)
      od[nk++] = autd3__ecat_dg_add(&s->f, ECAT_FPRD, STATION(k), REG_DCDIFF, NULL, 4);
    autd3_err_t e = autd3__echocat_xfer_direct(ec, s, 5000, 2);
    if (e == AUTD3_OK) {
      autd3__echocat_dc_sample(ec, ecat_get64(s->f.buf + of), s->sent_ns, s->rx_ns);
      if (ec->n == 1 && iter >= 20)
        return AUTD3_OK; /* a single clock is its own reference: only the phase estimate was needed */
      if (read) {
        reads++;
        for (int i = 0; i < nk; i++) {
          int k = k0 + i;
          double v = (double)autd3__ecat_dc_diff_decode(ecat_get32(s->f.buf + od[i]));
          ema[k] = samples[k]++ == 0 ? v : ema[k] + 0.2 * (v - ema[k]);
        }
        double worst = 0;
        int wk = 1;
        bool enough = true;
        for (int k = 1; k < ec->n; k++) {
          double a = ema[k] < 0 ? -ema[k] : ema[k];
          if (a > worst || k == 1)
            worst = a, wk = k;
          if (samples[k] < 3)
            enough = false;
        }
        if (enough && worst < (double)o->sync_tolerance_ns)
          return AUTD3_OK;
        if (autd3__now_ns() > end)
          return autd3_set_error(AUTD3_E_SYNC_TIMEOUT,
                                 "echocat %s: distributed clocks did not converge within sync_timeout_ms = %u: device %d "
                                 "differs by %.0f ns (sync_tolerance_ns = %u)",
                                 ec->ifname, o->sync_timeout_ms, wk, worst, o->sync_tolerance_ns);
      }
    }
    if (autd3__now_ns() > end + 100000000u)
      return autd3_set_error(AUTD3_E_SYNC_TIMEOUT, "echocat %s: no DC answer within sync_timeout_ms = %u", ec->ifname,
                             o->sync_timeout_ms);
  }
}

/* SYNC0 on every slave in list: cyclic + SYNC0 (0x0981 = 3) with the period,
 * first pulse on the common grid at least 100 ms ahead (SOEM v2.0.0 src/ec_dc.c
 * ecx_dcsync0 for the registers; ethercrab 0.7 src/dc.rs for the 100 ms lead). */
autd3_err_t autd3__echocat_sync0_on(echocat_t *ec, const uint16_t *list, int cnt) {
  uint8_t t1b[8];
  uint16_t w;
  autd3_err_t e = autd3__echocat_dg1(ec, ECAT_FPRD, STATION(0), REG_DCSYS, NULL, 8, t1b, &w);
  if (e != AUTD3_OK)
    return e;
  uint64_t t1 = ecat_get64(t1b);
  const autd3_ethercat_option_t *o = &ec->opt.ethercat;
  /* the first time the chain's grid; later (a re-joining device) its next edge */
  uint64_t start = autd3__ecat_dc_sync0_restart(ec->sync0_start, o->sync0_period_ns, o->sync0_shift_ns, t1);
  if (ec->sync0_start == 0)
    ec->sync0_start = start;
  uint8_t v[AUTD3_MAX_DEVICES * 15] = {0};
  for (int i = 0; i < cnt; i++) {
    uint8_t *p = v + (size_t)list[i] * 15;
    p[0] = 0;  /* 0x0981 off */
    p[1] = 0;  /* 0x0980: ECAT drives the SYNC unit */
    ecat_put64(p + 2, start);
    ecat_put32(p + 10, o->sync0_period_ns);
    p[14] = 3; /* 0x0981: cyclic operation + SYNC0 */
  }
  const dgspec_t sp[5] = {{ECAT_FPWR, REG_DCACT, 1}, {ECAT_FPWR, REG_DCCUC, 1}, {ECAT_FPWR, REG_DCSTART0, 8},
                          {ECAT_FPWR, REG_DCCYC0, 4}, {ECAT_FPWR, REG_DCACT, 1}};
  return autd3__echocat_each(ec, list, cnt, false, sp, 5, v, NULL, NULL);
}

/* The reference clock (device 0) came back with a fresh clock while the
 * others, and our phase estimate, still run on the old time base. Before it
 * gets its station address back (from then on the cycle's FRMW reads it),
 * give it an offset that continues the old base: one frame reads its system
 * time (position-addressed) and then device 1's, which the frame reaches
 * sl[1].delay later, so device 1 read (old base) T + delay at the moment
 * device 0 read T (new base). The residual (ns) is left to the drift control.
 *
 * The second frame also restarts its drift control and gives it its station
 * address back, in that order and in one frame. While it has no address, the
 * cyclic FRMW (addressed to STATION(0)) finds no reader, and every ESC that is
 * not the reader writes: device 0 takes the frame's placeholder as a time
 * compare, seconds off, and its control loop runs its clock as slow as it can
 * (ETG.1000.4 FRMW; the emulator's loop saturates at -500 ppm). A reference
 * gets no compares once it reads, so a restart followed by even one more
 * cycle without its address (a separate transaction) left it running slow
 * for good: the other clocks followed it, the cycle's lower bound of the DC
 * time ran ahead of it and the cycle rate collapsed (docs/reliability.md
 * "Availability"). */
autd3_err_t autd3__echocat_rebase_reference(echocat_t *ec) {
  if (ec->n < 2)
    return AUTD3_OK; /* a single clock is its own base: the phase estimate re-locks (dc_sample) */
  slot_t *s = &ec->xs;
  autd3__echocat_slot_start(ec, s, false);
  uint16_t o0 = autd3__ecat_dg_add(&s->f, ECAT_APRD, POSITION(0), REG_DCSYS, NULL, 8);
  uint16_t oo = autd3__ecat_dg_add(&s->f, ECAT_APRD, POSITION(0), REG_DCOFS, NULL, 8);
  uint16_t o1 = autd3__ecat_dg_add(&s->f, ECAT_FPRD, STATION(1), REG_DCSYS, NULL, 8);
  autd3_err_t e = autd3__echocat_xfer(ec, s);
  if (e != AUTD3_OK)
    return e;
  if (s->dg[0].wkc != 1 || s->dg[1].wkc != 1 || s->dg[2].wkc != 1)
    return autd3_set_error(AUTD3_E_IO, "echocat %s: device 0 or 1 did not answer the reference clock re-base", ec->ifname);
  uint64_t sys0 = ecat_get64(s->f.buf + o0), ofs0 = ecat_get64(s->f.buf + oo), sys1 = ecat_get64(s->f.buf + o1);
  uint8_t v[8], sp[2], fl[2], ad[2];
  ecat_put64(v, autd3__ecat_dc_rebase_offset(ofs0, sys0, sys1 - ec->sl[1].delay));
  ecat_put16(sp, 0x1000); /* restart its drift filter, as reset_slaves does */
  ecat_put16(fl, 0x0C00);
  ecat_put16(ad, STATION(0));
  autd3__echocat_slot_start(ec, s, false);
  autd3__ecat_dg_add(&s->f, ECAT_APWR, POSITION(0), REG_DCOFS, v, 8);
  autd3__ecat_dg_add(&s->f, ECAT_APWR, POSITION(0), REG_DCSPEED, sp, 2);
  autd3__ecat_dg_add(&s->f, ECAT_APWR, POSITION(0), REG_DCFILT, fl, 2);
  autd3__ecat_dg_add(&s->f, ECAT_APWR, POSITION(0), REG_STADR, ad, 2);
  if ((e = autd3__echocat_xfer(ec, s)) != AUTD3_OK)
    return e;
  if (s->dg[3].wkc != 1)
    return autd3_set_error(AUTD3_E_IO, "echocat %s: device 0 did not take its station address at the clock re-base",
                           ec->ifname);
  return AUTD3_OK;
}
