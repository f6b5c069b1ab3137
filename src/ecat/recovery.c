/*
 * EtherCAT device recovery (src/ecat/recovery.h; the rules:
 * include/autd3/link_driver.h autd3_link_ecat_recovery_t).
 *
 * The checks and steps follow the new-generation AUTD3 links' state checker
 * (crate autd3-rs-link-soem 0.6.1 src/state_check.rs: OP; SAFE-OP+ERROR ->
 * acknowledge; SAFE-OP -> request OP) and SOEM's classic slave recovery for a
 * device that fell back (SOEM v2.0.0 src/ec_config.c ecx_recover_slave /
 * ecx_reconfig_slave: re-address, INIT, SyncManagers and FMMUs as configured,
 * PRE-OP, SAFE-OP); DC re-alignment as the ESC datasheet's DC chapter
 * describes it (offset 0x0920, delay 0x0928, filters 0x0930/0x0934, SYNC0
 * 0x0981/0x0990/0x09A0), arithmetic in src/ecat/dc.h.
 */
#include "ecat/recovery.h"

#include <stdlib.h>
#include <string.h>

#include "ecat/dc.h"
#include "ecat/regs.h"
#include "link/link_internal.h"
#include "platform/platform.h"

#define FMMU_BYTES 256u /* 16 FMMUs of 16 bytes at 0x0600 */
#define SM_BYTES 64u    /* 8 SyncManagers of 8 bytes at 0x0800 */
#define POLL_NS 1000000u

/* What a device had in OP (read at creation), for the generic steps. */
typedef struct snapshot {
  uint8_t sm[SM_BYTES];
  uint8_t fmmu[FMMU_BYTES];
  uint32_t delay;       /* 0x0928 */
  uint64_t sync0_start; /* 0x0990: the chain's SYNC0 grid */
  uint32_t sync0_cycle; /* 0x09A0 */
  uint8_t sync_act;     /* 0x0981 */
} snapshot_t;

typedef struct dev {
  autd3__ecat_rec_phase_t phase;
  uint8_t reported;       /* autd3_device_state_t of the last check */
  bool reset_reported;    /* this episode's reset was reported (until it is back in OP) */
  uint32_t failures;      /* consecutive failed bring-ups */
  uint32_t attempts;      /* bring-ups started (tests) */
  uint64_t retry_at_ns;   /* no bring-up before (back-off) */
  uint16_t station;
} dev_t;

struct autd3_link_ecat_recovery {
  autd3__link_device_reader_t reader; /* first: autd3_link_device_info() reads registers through it */
  struct autd3_link *link;
  autd3_link_ecat_ops_t ops;
  uint32_t state_timeout_ms;
  uint16_t n;
  autd3__mutex_t lock; /* serialises checks (user threads only; the cycle never takes it) */
  bool has_lock;       /* lock initialised (the last step of create) */
  uint64_t recoveries;
  dev_t *dev;
  snapshot_t *snap; /* NULL when the link does every step itself */
  /* per-check scratch, preallocated */
  uint16_t *al;
  bool *answered;
};

static void device_info(const autd3__link_device_reader_t *self, uint16_t dev, autd3_link_device_info_t *out);

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t le32(const uint8_t *p) { return (uint32_t)le16(p) | ((uint32_t)le16(p + 2) << 16); }
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | ((uint64_t)le32(p + 4) << 32); }
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v), put16(p + 2, (uint16_t)(v >> 16)); }
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)v), put32(p + 4, (uint32_t)(v >> 32)); }

uint64_t autd3__ecat_rec_backoff_ns(uint32_t failures) {
  if (failures == 0)
    return 0;
  uint32_t k = failures > 5 ? 4 : failures - 1;
  return 100000000ull << k;
}

/* ---- primitives with the working counter checked ------------------------------------ */

static autd3_err_t rd(autd3_link_ecat_recovery_t *r, uint16_t dev, bool pos, uint16_t reg, void *buf, uint16_t len) {
  uint16_t w = 0;
  autd3_err_t e = r->ops.read(r->ops.ctx, dev, pos, reg, buf, len, &w);
  if (e == AUTD3_OK && w != 1)
    e = autd3_set_error(AUTD3_E_IO, "EtherCAT recovery: device %u did not answer a read of 0x%04x", dev, reg);
  return e;
}

static autd3_err_t wr(autd3_link_ecat_recovery_t *r, uint16_t dev, uint16_t reg, const void *buf, uint16_t len) {
  uint16_t w = 0;
  autd3_err_t e = r->ops.write(r->ops.ctx, dev, false, reg, buf, len, &w);
  if (e == AUTD3_OK && w != 1)
    e = autd3_set_error(AUTD3_E_IO, "EtherCAT recovery: device %u did not take a write of 0x%04x", dev, reg);
  return e;
}

static autd3_err_t wr16(autd3_link_ecat_recovery_t *r, uint16_t dev, uint16_t reg, uint16_t v) {
  uint8_t b[2];
  put16(b, v);
  return wr(r, dev, reg, b, 2);
}

static autd3_err_t rd64(autd3_link_ecat_recovery_t *r, uint16_t dev, uint16_t reg, uint64_t *v) {
  uint8_t b[8];
  autd3_err_t e = rd(r, dev, false, reg, b, 8);
  *v = le64(b);
  return e;
}

/* Request `state` and wait for it (without the error flag) within the state timeout. */
static autd3_err_t go_state(autd3_link_ecat_recovery_t *r, uint16_t dev, uint16_t request, uint8_t want) {
  autd3_err_t e = wr16(r, dev, REG_ALCTL, request);
  if (e != AUTD3_OK)
    return e;
  uint64_t end = autd3__now_ns() + (uint64_t)r->state_timeout_ms * 1000000u;
  for (;;) {
    uint8_t b[2] = {0};
    uint16_t w = 0;
    if ((e = r->ops.read(r->ops.ctx, dev, false, REG_ALSTAT, b, 2, &w)) != AUTD3_OK)
      return e;
    uint16_t al = le16(b);
    if (w == 1 && (al & 0x1F) == want)
      return AUTD3_OK;
    if (w == 1 && (al & AL_ERROR))
      return autd3_set_error(AUTD3_E_STATE_TIMEOUT, "EtherCAT recovery: device %u refused AL state 0x%02x: AL status 0x%02x",
                             dev, want, al & 0xFF);
    if (autd3__now_ns() > end)
      return autd3_set_error(AUTD3_E_STATE_TIMEOUT,
                             "EtherCAT recovery: device %u did not reach AL state 0x%02x within %u ms (%s 0x%02x)", dev, want,
                             r->state_timeout_ms, w == 1 ? "AL status" : "no answer, last", al & 0xFF);
    autd3__sleep_ns(POLL_NS);
  }
}

/* ---- generic steps ---------------------------------------------------------------- */

static autd3_err_t generic_readdress(autd3_link_ecat_recovery_t *r, uint16_t dev, bool *readdressed) {
  uint8_t b[2] = {0};
  uint16_t w = 0;
  *readdressed = false;
  autd3_err_t e = r->ops.read(r->ops.ctx, dev, true, REG_STADR, b, 2, &w);
  /* Only an ESC with the power-on address 0 is ours to re-address: one that
   * kept its address answers again by itself, and one with another address is
   * another configured device (positions shifted): giving it this address
   * would make two devices answer to it. */
  if (e != AUTD3_OK || w != 1 || le16(b) != 0)
    return e;
  put16(b, r->dev[dev].station);
  if ((e = r->ops.write(r->ops.ctx, dev, true, REG_STADR, b, 2, &w)) != AUTD3_OK)
    return e;
  if (w != 1)
    return autd3_set_error(AUTD3_E_IO, "EtherCAT recovery: device at position %u did not take its station address", dev);
  *readdressed = true;
  return AUTD3_OK;
}

/* SyncManagers and FMMUs as they were in OP: only the configured ones (an
 * SM with a length, an FMMU with its enable bit), as ecx_reconfig_slave does. */
static autd3_err_t generic_restore(autd3_link_ecat_recovery_t *r, uint16_t dev) {
  const snapshot_t *s = &r->snap[dev];
  autd3_err_t e = AUTD3_OK;
  for (uint16_t k = 0; k < SM_BYTES / 8 && e == AUTD3_OK; k++)
    if (s->sm[k * 8 + 2] != 0 || s->sm[k * 8 + 3] != 0)
      e = wr(r, dev, (uint16_t)(REG_SM0 + 8 * k), s->sm + k * 8, 8);
  for (uint16_t k = 0; k < FMMU_BYTES / 16 && e == AUTD3_OK; k++)
    if (s->fmmu[k * 16 + 12] & 0x01)
      e = wr(r, dev, (uint16_t)(REG_FMMU0 + 16 * k), s->fmmu + k * 16, 16);
  return e;
}

/* The delay as measured at open; the offset so that its system time equals
 * that of a device in OP (the mean of two reads of the other around one read
 * of its local time: the frames' delays cancel to within a round trip); the
 * drift filters restarted; SYNC0 on the chain's grid. The cyclic FRMW of the
 * reference's system time removes the residual. */
static autd3_err_t generic_realign(autd3_link_ecat_recovery_t *r, uint16_t dev) {
  const snapshot_t *s = &r->snap[dev];
  uint8_t b[8];
  put32(b, s->delay);
  autd3_err_t e = wr(r, dev, REG_DCDELAY, b, 4);
  int src = -1; /* time source: a device in OP (none: its restarted clock is as good as any) */
  for (uint16_t j = 0; j < r->n && src < 0; j++)
    if (j != dev && r->dev[j].phase == AUTD3__REC_OP)
      src = j;
  if (e == AUTD3_OK && src >= 0) {
    uint64_t t1 = 0, local = 0, t2 = 0;
    put64(b, 0);
    if ((e = wr(r, dev, REG_DCOFS, b, 8)) == AUTD3_OK && (e = rd64(r, (uint16_t)src, REG_DCSYS, &t1)) == AUTD3_OK &&
        (e = rd64(r, dev, REG_DCSYS, &local)) == AUTD3_OK && (e = rd64(r, (uint16_t)src, REG_DCSYS, &t2)) == AUTD3_OK) {
      put64(b, autd3__ecat_dc_offset(t1 / 2 + t2 / 2 + ((t1 & 1) + (t2 & 1)) / 2, local, 0));
      e = wr(r, dev, REG_DCOFS, b, 8);
    }
  }
  /* restart the drift filters (the reset values SOEM and EtherCrab write) */
  if (e == AUTD3_OK)
    e = wr16(r, dev, REG_DCFILT, 0x0C00);
  if (e == AUTD3_OK)
    e = wr16(r, dev, REG_DCSPEED, 0x1000);
  if (e != AUTD3_OK || s->sync_act == 0 || s->sync0_cycle == 0)
    return e;
  uint8_t off = 0;
  uint64_t now = 0;
  if ((e = wr(r, dev, REG_DCACT, &off, 1)) != AUTD3_OK || (e = rd64(r, dev, REG_DCSYS, &now)) != AUTD3_OK)
    return e;
  put64(b, autd3__ecat_dc_sync0_restart(s->sync0_start, s->sync0_cycle, 0, now));
  if ((e = wr(r, dev, REG_DCSTART0, b, 8)) != AUTD3_OK)
    return e;
  put32(b, s->sync0_cycle);
  if ((e = wr(r, dev, REG_DCCYC0, b, 4)) != AUTD3_OK)
    return e;
  return wr(r, dev, REG_DCACT, &s->sync_act, 1);
}

/* INIT -> restore -> PRE-OP -> DC -> SAFE-OP (or the link's own), then request OP. */
static autd3_err_t bring_up(autd3_link_ecat_recovery_t *r, uint16_t dev) {
  autd3_err_t e;
  void *c = r->ops.ctx;
  r->dev[dev].attempts++;
  if (r->ops.reconfigure) {
    e = r->ops.reconfigure(c, dev);
  } else {
    if ((e = go_state(r, dev, AL_INIT | AL_ACK, AL_INIT)) != AUTD3_OK)
      return e;
    if ((e = r->ops.restore ? r->ops.restore(c, dev) : generic_restore(r, dev)) != AUTD3_OK)
      return e;
    if ((e = go_state(r, dev, AL_PREOP, AL_PREOP)) != AUTD3_OK)
      return e;
    if ((e = r->ops.realign_dc ? r->ops.realign_dc(c, dev) : generic_realign(r, dev)) != AUTD3_OK)
      return e;
    e = go_state(r, dev, AL_SAFEOP, AL_SAFEOP);
  }
  if (e != AUTD3_OK)
    return e;
  return wr16(r, dev, REG_ALCTL, AL_OP);
}

/* ---- the state machine -------------------------------------------------------------- */

static void report_reset(autd3_link_ecat_recovery_t *r, uint16_t dev) {
  if (r->dev[dev].reset_reported)
    return;
  r->dev[dev].reset_reported = true;
  autd3_link_report_device_reset(r->link, dev);
}

/* One device, its AL status read (answered, al). */
static void step(autd3_link_ecat_recovery_t *r, uint16_t k, bool answered, uint16_t al, uint64_t now, autd3_link_status_t *out) {
  dev_t *d = &r->dev[k];
  out->al_state[k] = 0;
  if (!answered) {
    bool readdressed = false;
    autd3_err_t e = r->ops.readdress ? r->ops.readdress(r->ops.ctx, k, &readdressed) : generic_readdress(r, k, &readdressed);
    uint8_t b[2] = {0};
    uint16_t w = 0;
    if (e == AUTD3_OK && readdressed) {
      /* it lost its station address: power-cycled, its firmware state is gone */
      report_reset(r, k);
      if (r->ops.read(r->ops.ctx, k, false, REG_ALSTAT, b, 2, &w) == AUTD3_OK && w == 1)
        answered = true, al = le16(b);
    }
    if (!answered) {
      d->phase = AUTD3__REC_LOST;
      out->state[k] = AUTD3_DEVICE_LOST;
      return;
    }
  }
  uint8_t st = al & 0x0F;
  if (st == AL_OP) { /* the error flag alone does not stop OP (state_check.rs) */
    d->phase = AUTD3__REC_OP;
    d->reset_reported = false; /* a later reset is a new episode */
    d->failures = 0;
    d->retry_at_ns = 0;
    out->state[k] = AUTD3_DEVICE_OP;
  } else if (st == AL_SAFEOP && (al & AL_ERROR)) {
    d->phase = AUTD3__REC_ACKED;
    out->state[k] = AUTD3_DEVICE_SAFE_OP_ERROR;
    (void)wr16(r, k, REG_ALCTL, AL_SAFEOP | AL_ACK); /* the next check requests OP */
  } else if (st == AL_SAFEOP) {
    d->phase = AUTD3__REC_OP_REQUESTED;
    out->state[k] = AUTD3_DEVICE_SAFE_OP;
    (void)wr16(r, k, REG_ALCTL, AL_OP);
  } else if (st == AL_INIT || st == AL_PREOP) {
    out->state[k] = AUTD3_DEVICE_OTHER;
    out->al_state[k] = (uint8_t)al;
    /* Back in INIT: its firmware state is gone. Reported before the bring-up
     * restores its SyncManagers and FMMUs, i.e. before any cycle carries its
     * post-reset inputs as valid (a link's per-device validity rests on the
     * device answering its input read, which it cannot before the restore;
     * a whole cycle's needs every device in OP besides). */
    if (st == AL_INIT)
      report_reset(r, k);
    if (d->failures && now < d->retry_at_ns) {
      d->phase = AUTD3__REC_FAILED; /* rate-limited: not this check */
      return;
    }
    if (bring_up(r, k) == AUTD3_OK) {
      d->phase = AUTD3__REC_OP_REQUESTED;
      d->failures = 0;
    } else {
      d->phase = AUTD3__REC_FAILED;
      d->failures++;
      d->retry_at_ns = now + autd3__ecat_rec_backoff_ns(d->failures);
    }
  } else {
    d->phase = AUTD3__REC_OTHER; /* BOOT (being flashed) or unknown: not ours to touch */
    out->state[k] = AUTD3_DEVICE_OTHER;
    out->al_state[k] = (uint8_t)al;
  }
}

autd3_err_t autd3__ecat_recovery_check_at(autd3_link_ecat_recovery_t *r, autd3_link_status_t *out, uint64_t now) {
  if (r == NULL || out == NULL)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "EtherCAT recovery: NULL argument");
  autd3__mutex_lock(&r->lock);
  bool was_all_op = true;
  for (uint16_t k = 0; k < r->n; k++)
    was_all_op &= r->dev[k].reported == AUTD3_DEVICE_OP;
  autd3_err_t e = AUTD3_OK;
  bool known[AUTD3_MAX_DEVICES];
  if (r->ops.read_states) {
    e = r->ops.read_states(r->ops.ctx, r->al, r->answered);
    for (uint16_t k = 0; k < r->n; k++)
      known[k] = true;
  } else {
    for (uint16_t k = 0; k < r->n; k++) {
      uint8_t b[2] = {0};
      uint16_t w = 0;
      /* a failure of the link itself (not a missing answer) leaves the device's state as last reported */
      known[k] = r->ops.read(r->ops.ctx, k, false, REG_ALSTAT, b, 2, &w) == AUTD3_OK;
      r->answered[k] = known[k] && w == 1;
      r->al[k] = le16(b);
    }
  }
  if (e != AUTD3_OK) {
    autd3__mutex_unlock(&r->lock);
    return e;
  }
  bool now_all_op = true;
  for (uint16_t k = 0; k < r->n; k++) {
    if (known[k])
      step(r, k, r->answered[k], r->al[k], now, out);
    else
      out->state[k] = r->dev[k].reported, out->al_state[k] = 0;
    r->dev[k].reported = out->state[k];
    now_all_op &= out->state[k] == AUTD3_DEVICE_OP;
  }
  if (!was_all_op && now_all_op)
    r->recoveries++;
  out->recoveries = r->recoveries;
  out->measured = AUTD3_LINK_STATUS_STATES | AUTD3_LINK_STATUS_RECOVERIES;
  autd3__mutex_unlock(&r->lock);
  return AUTD3_OK;
}

autd3_err_t autd3__ecat_recovery_check(autd3_link_ecat_recovery_t *r, autd3_link_status_t *out) {
  return autd3__ecat_recovery_check_at(r, out, autd3__now_ns());
}

static autd3_err_t take_snapshot(autd3_link_ecat_recovery_t *r, uint16_t k) {
  snapshot_t *s = &r->snap[k];
  uint8_t b[8] = {0};
  autd3_err_t e;
  if ((e = rd(r, k, false, REG_SM0, s->sm, SM_BYTES)) != AUTD3_OK ||
      (e = rd(r, k, false, REG_FMMU0, s->fmmu, FMMU_BYTES)) != AUTD3_OK || (e = rd(r, k, false, REG_DCDELAY, b, 4)) != AUTD3_OK)
    return e;
  s->delay = le32(b);
  if ((e = rd(r, k, false, REG_DCSTART0, b, 8)) != AUTD3_OK)
    return e;
  s->sync0_start = le64(b);
  if ((e = rd(r, k, false, REG_DCCYC0, b, 4)) != AUTD3_OK)
    return e;
  s->sync0_cycle = le32(b);
  if ((e = rd(r, k, false, REG_DCACT, b, 1)) != AUTD3_OK)
    return e;
  s->sync_act = b[0];
  return AUTD3_OK;
}

autd3_err_t autd3__ecat_recovery_create(struct autd3_link *link, const autd3_link_ecat_ops_t *ops,
                                        const autd3_link_ecat_recovery_config_t *cfg, autd3_link_ecat_recovery_t **out) {
  if (link == NULL || ops == NULL || cfg == NULL || out == NULL || ops->read == NULL || ops->write == NULL)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "EtherCAT recovery: NULL link, ops, read/write primitive, config or out");
  if (cfg->size < sizeof *cfg)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "EtherCAT recovery: config.size = %u, expected %u", (unsigned)cfg->size,
                           (unsigned)sizeof *cfg);
  if (cfg->stations == NULL && ops->readdress == NULL)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT,
                           "EtherCAT recovery: the generic re-addressing needs config.stations (or a readdress primitive)");
  uint16_t n = link->num_devices;
  if (n == 0 || n > AUTD3_MAX_DEVICES)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "EtherCAT recovery: the link has %u devices", n);
  *out = NULL;
  autd3_link_ecat_recovery_t *r = calloc(1, sizeof *r);
  if (r == NULL)
    return autd3_set_error(AUTD3_E_NOMEM, "EtherCAT recovery: out of memory");
  r->link = link;
  r->ops = *ops;
  r->n = n;
  r->state_timeout_ms = cfg->state_timeout_ms;
  r->dev = calloc(n, sizeof *r->dev);
  r->al = calloc(n, sizeof *r->al);
  r->answered = calloc(n, sizeof *r->answered);
  bool generic = ops->reconfigure == NULL && (ops->restore == NULL || ops->realign_dc == NULL);
  if (generic)
    r->snap = calloc(n, sizeof *r->snap);
  if (r->dev == NULL || r->al == NULL || r->answered == NULL || (generic && r->snap == NULL)) {
    autd3__ecat_recovery_free(r);
    return autd3_set_error(AUTD3_E_NOMEM, "EtherCAT recovery: out of memory");
  }
  for (uint16_t k = 0; k < n; k++) {
    r->dev[k].phase = AUTD3__REC_OP;
    r->dev[k].reported = AUTD3_DEVICE_OP; /* open returns with every device in OP */
    r->dev[k].station = cfg->stations ? cfg->stations[k] : 0;
  }
  autd3_err_t e = AUTD3_OK;
  for (uint16_t k = 0; generic && k < n && e == AUTD3_OK; k++)
    e = take_snapshot(r, k);
  if (e == AUTD3_OK && (e = autd3__mutex_init(&r->lock)) == AUTD3_OK)
    r->has_lock = true;
  if (e != AUTD3_OK) {
    autd3__ecat_recovery_free(r);
    return e;
  }
  r->reader.read = device_info;
  autd3__link_set_device_reader(link, &r->reader);
  *out = r;
  return AUTD3_OK;
}

/* The link's device reader (autd3_link_device_info()): its ESC error counters and DC deviation, read now. */
static void device_info(const autd3__link_device_reader_t *self, uint16_t dev, autd3_link_device_info_t *out) {
  autd3_link_ecat_recovery_t *r = (autd3_link_ecat_recovery_t *)self; /* `reader` is the first member */
  if (r == NULL || dev >= r->n)
    return;
  uint8_t c[20] = {0}, t[4] = {0};
  autd3__mutex_lock(&r->lock);
  bool counters = rd(r, dev, false, REG_ERRCNT, c, sizeof c) == AUTD3_OK;
  bool dc = rd(r, dev, false, REG_DCDIFF, t, sizeof t) == AUTD3_OK;
  autd3__mutex_unlock(&r->lock);
  if (counters) {
    for (int p = 0; p < 4; p++) {
      out->crc_errors[p] = c[2 * p];
      out->phy_errors[p] = c[2 * p + 1];
      out->forwarded_errors[p] = c[8 + p];
      out->lost_links[p] = c[16 + p];
    }
    out->processing_unit_errors = c[12];
    out->pdi_errors = c[13];
    out->measured |= AUTD3_LINK_MEASURES_ESC_COUNTERS;
  }
  if (dc) {
    out->dc_deviation_ns = (int32_t)autd3__ecat_dc_diff_decode(le32(t));
    out->measured |= AUTD3_LINK_MEASURES_DC;
  }
}

void autd3__ecat_recovery_free(autd3_link_ecat_recovery_t *r) {
  if (r == NULL)
    return;
  if (r->link != NULL)
    autd3__link_set_device_reader(r->link, NULL);
  if (r->has_lock)
    autd3__mutex_destroy(&r->lock);
  free(r->dev);
  free(r->al);
  free(r->answered);
  free(r->snap);
  free(r);
}

autd3__ecat_rec_phase_t autd3__ecat_recovery_phase(const autd3_link_ecat_recovery_t *r, uint16_t dev) {
  return r->dev[dev].phase;
}

uint32_t autd3__ecat_recovery_attempts(const autd3_link_ecat_recovery_t *r, uint16_t dev) { return r->dev[dev].attempts; }
