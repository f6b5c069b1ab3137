/* SPDX-License-Identifier: GPL-3.0-only */
/*
 * The SOEM link's state checker (soem_internal.h): libautd3's EtherCAT
 * recovery (services ecat_recovery_*: the new-generation state checker plus
 * the slave recovery) on SOEM's primitives, and the DC re-alignment of a
 * device that comes back. Runs on the checking thread, never on the cycle's;
 * it shares SOEM's port with the cycle frame by frame (SOEM's port mutexes).
 */
#include <string.h>

#include "link/soem/soem_internal.h"

#define RECOVER_TIMEOUT_US 500000 /* per-slave recover/reconfig timeout, as SOEM's classic ecatcheck */
#define CONFIRM_TIMEOUT_US 20000  /* the second, single AL-status read before a device counts as lost */

/* A device that fell back to INIT/PRE-OP may have been power-cycled: its DC
 * system-time offset (0x0920) and propagation delay (0x0928) are then gone and
 * its clock is unrelated to the others, so SYNC0 would fire off the common grid.
 * Re-measure it the way ecx_configdc does, for this device only: latch the
 * receive time of one frame in every device (write to 0x0900), then set
 * offset = reference system time at that frame + delay - this device's local
 * latch time, and restore the delay SOEM measured at open. The cyclic FRMW of
 * 0x0910 then removes the residual error. Device 0 is the reference clock:
 * see rebase_reference(). Not on the hot path. */
static void rebase_reference(ecx_contextt *ctx);
static void realign_dc(ecx_contextt *ctx, uint16_t slave) {
  const ec_slavet *ref = &ctx->slavelist[1], *s = &ctx->slavelist[slave];
  if (slave == 1) rebase_reference(ctx);
  if (slave <= 1 || !s->hasdc || !ref->hasdc) return;
  int32_t zero = 0;
  uint64_t t_ref = 0, off_ref = 0, t_k = 0;
  if (ecx_BWR(&ctx->port, 0, REG_DCRT0, sizeof zero, &zero, EC_TIMEOUTRET) <= 0) return;
  if (ecx_FPRD(&ctx->port, ref->configadr, REG_DCRTPU, sizeof t_ref, &t_ref, EC_TIMEOUTRET) != 1 ||
      ecx_FPRD(&ctx->port, ref->configadr, REG_DCOFS, sizeof off_ref, &off_ref, EC_TIMEOUTRET) != 1 ||
      ecx_FPRD(&ctx->port, s->configadr, REG_DCRTPU, sizeof t_k, &t_k, EC_TIMEOUTRET) != 1)
    return;
  uint64_t offset = htoell(S->autd3__ecat_dc_offset(etohll(t_ref) + etohll(off_ref), etohll(t_k), (uint32_t)s->pdelay));
  int32_t delay = htoel(s->pdelay);
  uint16_t speed = htoes(0x1000); /* SOEM's reset value; rewriting it restarts the drift filter */
  ecx_FPWR(&ctx->port, s->configadr, REG_DCOFS, sizeof offset, &offset, EC_TIMEOUTRET);
  ecx_FPWR(&ctx->port, s->configadr, REG_DCDELAY, sizeof delay, &delay, EC_TIMEOUTRET);
  ecx_FPWR(&ctx->port, s->configadr, REG_DCSPEED, sizeof speed, &speed, EC_TIMEOUTRET);
}

/* The reference clock (device 0) itself came back with a fresh clock: the
 * others still hold the old time base, so give the reference an offset that
 * continues it. No frame can latch both (the others' latched local times do
 * not include their drift correction), so read device 1's system time and the
 * reference's, each bracketed by host timestamps, and carry device 1's value
 * to the moment of the second read; the residual (a fraction of a frame round
 * trip) is absorbed by the others' drift control, which follows the reference. */
static void rebase_reference(ecx_contextt *ctx) {
  const ec_slavet *ref = &ctx->slavelist[1], *other = &ctx->slavelist[2];
  if (ctx->slavecount < 2 || !ref->hasdc || !other->hasdc) return;
  uint64_t s_other = 0, s_ref = 0;
  uint64_t a0 = S->now_ns();
  if (ecx_FPRD(&ctx->port, other->configadr, REG_DCSYS, sizeof s_other, &s_other, EC_TIMEOUTRET) != 1) return;
  uint64_t a1 = S->now_ns();
  if (ecx_FPRD(&ctx->port, ref->configadr, REG_DCSYS, sizeof s_ref, &s_ref, EC_TIMEOUTRET) != 1) return;
  uint64_t b1 = S->now_ns();
  /* the reference's system time is its local time plus its current offset */
  uint64_t off_ref = 0;
  if (ecx_FPRD(&ctx->port, ref->configadr, REG_DCOFS, sizeof off_ref, &off_ref, EC_TIMEOUTRET) != 1) return;
  uint64_t target = etohll(s_other) + ((a1 + b1) / 2 - (a0 + a1) / 2);
  uint64_t offset = htoell(S->autd3__ecat_dc_rebase_offset(etohll(off_ref), etohll(s_ref), target));
  uint16_t speed = htoes(0x1000);
  ecx_FPWR(&ctx->port, ref->configadr, REG_DCOFS, sizeof offset, &offset, EC_TIMEOUTRET);
  ecx_FPWR(&ctx->port, ref->configadr, REG_DCSPEED, sizeof speed, &speed, EC_TIMEOUTRET);
}

/* One FPRD whose reply is checked against the request. SOEM matches a reply
 * to its request by the frame index alone (16 of them, SOEM v2.0.0
 * oshw/linux/nicdrv.c ecx_inframe), and its reads resend the same frame every
 * EC_TIMEOUTRET until the timeout (ecx_srconfirm). After a host stall,
 * replies to timed-out or resent frames arrive late; one whose index has
 * been reused meanwhile is taken as the reply to the new request, whose own
 * reply is then the stale one for the next user of that index, and so on: a
 * lasting shift, in which every FPRD of the state checker read process data
 * (both devices LOST for good while they ran in OP). This read sends once,
 * skips replies that are not to its own datagram (command, address, length)
 * and so consumes the stale one, ending the shift on its index. */
static int fprd_checked(ecx_contextt *ctx, uint16_t adr, uint16_t reg, uint16_t len, void *data, int timeout_us) {
  ecx_portt *port = &ctx->port;
  uint8 idx = ecx_getindex(port);
  ecx_setupdatagram(port, &port->txbuf[idx], EC_CMD_FPRD, idx, adr, reg, len, data);
  ecx_outframe_red(port, idx);
  osal_timert t;
  osal_timer_start(&t, timeout_us);
  int wkc = EC_NOFRAME;
  while (!osal_timer_is_expired(&t)) {
    int w = ecx_waitinframe(port, idx, EC_TIMEOUTRET);
    if (w <= EC_NOFRAME) continue;
    ec_comt h;
    memcpy(&h, port->rxbuf[idx], sizeof h);
    if (h.command == EC_CMD_FPRD && etohs(h.ADP) == adr && etohs(h.ADO) == reg && (etohs(h.dlength) & 0x07ffu) == len) {
      memcpy(data, &port->rxbuf[idx][EC_HEADERSIZE], len);
      wkc = w;
      break;
    }
    ecx_setbufstat(port, idx, EC_BUF_TX); /* someone else's late reply: keep waiting for ours */
  }
  ecx_setbufstat(port, idx, EC_BUF_EMPTY);
  return wkc;
}

/* Every action the check takes on a device that is not in OP (re-address,
 * reconfigure, report a reset, or call it LOST) rests on a fresh AL-status
 * read of that device that is known to be the reply to its own request
 * (fprd_checked): ecx_readstate() (SOEM v2.0.0 src/ec_main.c) leaves a slave's
 * state 0 (EC_STATE_NONE) when its datagram got no reply within SOEM's 2-6 ms
 * timeouts, which a loaded host misses now and then while the slave is fine
 * (the LOST branch would then re-address a healthy slave), and may read a
 * stale reply as an AL state. The second read has a longer timeout; no reply
 * at all means LOST. */
static uint16_t confirm_state(ecx_contextt *ctx, uint16_t slave) {
  uint16_t al = 0;
  if (fprd_checked(ctx, ctx->slavelist[slave].configadr, ECT_REG_ALSTAT, sizeof al, &al, CONFIRM_TIMEOUT_US) != 1)
    return EC_STATE_NONE;
  ctx->slavelist[slave].state = etohs(al);
  return ctx->slavelist[slave].state;
}

/* ---- the state checker: libautd3's EtherCAT recovery (services ecat_recovery_*) on SOEM's primitives ---- */

/* Registers by station address (reads checked against their request, see
 * fprd_checked) or by ring position (dev 0-based; SOEM's slave = dev + 1). */
static autd3_err_t rec_read(void *c, uint16_t dev, bool pos, uint16_t reg, void *buf, uint16_t len, uint16_t *wkc) {
  ecx_contextt *ctx = ((soem_link_t *)c)->ctx;
  int w = pos ? ecx_APRD(&ctx->port, (uint16_t)(0u - dev), reg, len, buf, EC_TIMEOUTRET3)
              : fprd_checked(ctx, ctx->slavelist[dev + 1].configadr, reg, len, buf, CONFIRM_TIMEOUT_US);
  *wkc = w > 0 ? (uint16_t)w : 0;
  return AUTD3_OK;
}

static autd3_err_t rec_write(void *c, uint16_t dev, bool pos, uint16_t reg, const void *buf, uint16_t len, uint16_t *wkc) {
  ecx_contextt *ctx = ((soem_link_t *)c)->ctx;
  uint8_t data[EC_MAXECATFRAME]; /* SOEM's write calls take a mutable buffer */
  if (len > sizeof data) return autd3_set_error(AUTD3_E_INTERNAL, "soem: a %u-byte register write", len);
  memcpy(data, buf, len);
  int w = pos ? ecx_APWR(&ctx->port, (uint16_t)(0u - dev), reg, len, data, EC_TIMEOUTRET3)
              : ecx_FPWR(&ctx->port, ctx->slavelist[dev + 1].configadr, reg, len, data, EC_TIMEOUTRET3);
  *wkc = w > 0 ? (uint16_t)w : 0;
  return AUTD3_OK;
}

/* Every AL status with one ecx_readstate, each that is not OP confirmed by
 * its own checked read (confirm_state): no reply to that = no answer. */
static autd3_err_t rec_read_states(void *c, uint16_t *al, bool *answered) {
  soem_link_t *l = c;
  ecx_contextt *ctx = l->ctx;
  ecx_readstate(ctx);
  for (uint16_t d = 0; d < l->hdr.num_devices; d++) {
    uint16_t slave = (uint16_t)(d + 1);
    uint16_t st = ctx->slavelist[slave].state;
    if ((st & 0x0f) != EC_STATE_OPERATIONAL) st = confirm_state(ctx, slave);
    answered[d] = (st & 0x0f) != EC_STATE_NONE;
    al[d] = st;
    if ((st & 0x0f) != EC_STATE_OPERATIONAL) atomic_store_explicit(&l->out_of_op, true, memory_order_relaxed);
  }
  return AUTD3_OK;
}

/* The INIT -> SAFE-OP walk is SOEM's own: ecx_reconfig_slave restores the
 * SyncManagers and FMMUs from SOEM's slave list and runs the PRE-OP -> SAFE-OP
 * hook (po2so_hook), which starts SYNC0 with ecx_dcsync0 from the device's
 * system time; the generic steps would duplicate that and bypass SOEM's
 * bookkeeping. So the DC offset is re-aligned first (realign_dc), and the
 * recovery helper requests OP afterwards. ecx_reconfig_slave (SOEM v2.0.0
 * src/ec_config.c) requests SAFE-OP before it writes the FMMUs, while the
 * open (ecx_config_map_group) writes them first: a device that checks its
 * process data mapping at PRE-OP -> SAFE-OP (autd3-emu does, as an ESC's
 * "invalid output configuration") refused the first attempt after a power
 * cycle, which then waited SOEM's 2 s state timeout. So the FMMUs are
 * written first here, as at open (an ESC keeps them through INIT). */
static autd3_err_t rec_reconfigure(void *c, uint16_t dev) {
  ecx_contextt *ctx = ((soem_link_t *)c)->ctx;
  uint16_t slave = (uint16_t)(dev + 1);
  ec_slavet *s = &ctx->slavelist[slave];
  for (int f = 0; f < s->FMMUunused && f < EC_MAXFMMU; f++)
    ecx_FPWR(&ctx->port, s->configadr, (uint16)(ECT_REG_FMMU0 + sizeof(ec_fmmut) * f), sizeof(ec_fmmut), &s->FMMU[f],
             EC_TIMEOUTRET3);
  realign_dc(ctx, slave);
  int st = ecx_reconfig_slave(ctx, slave, RECOVER_TIMEOUT_US);
  if ((st & 0x0f) != EC_STATE_SAFE_OP)
    return autd3_set_error(AUTD3_E_STATE_TIMEOUT, "soem: device %u did not come back to SAFE-OP (ecx_reconfig_slave: %s)", dev,
                           autd3_soem_al_name((uint16_t)st));
  return AUTD3_OK;
}

autd3_err_t autd3_soem_recovery_create(soem_link_t *l, uint32_t state_timeout_ms) {
  uint16_t stations[AUTD3_MAX_DEVICES];
  for (uint16_t d = 0; d < l->hdr.num_devices; d++) stations[d] = l->ctx->slavelist[d + 1].configadr;
  const autd3_link_ecat_ops_t ops = {.ctx = l,
                                     .read = rec_read,
                                     .write = rec_write,
                                     .read_states = rec_read_states,
                                     .reconfigure = rec_reconfigure};
  const autd3_link_ecat_recovery_config_t cfg = {sizeof cfg, state_timeout_ms, stations};
  return S->ecat_recovery_create(&l->hdr, &ops, &cfg, &l->rec);
}

autd3_err_t autd3_soem_check_state(struct autd3_link *base, autd3_link_status_t *out) {
  return S->ecat_recovery_check(((soem_link_t *)base)->rec, out);
}
