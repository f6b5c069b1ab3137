/* SPDX-License-Identifier: GPL-3.0-only */
/*
 * The SOEM link: an EtherCAT master built on OpenEtherCATsociety/SOEM v2 (the
 * `ecx_*` context API).
 *
 * SOEM v2 is GPL-3.0-only, so this file is compiled only into the separate
 * library libautd3-link-soem (or the in-tree object library autd3_link_soem);
 * libautd3 itself never links SOEM. See LICENSE-NOTICE.md next to this file.
 *
 * The open sequence follows the new-generation AUTD3 SOEM link
 * (shinolab/autd3-sdk crates/autd3-rs-link-soem/src/{link,context,sync}.rs;
 * crate autd3-rs-link-soem 0.6.1):
 *   adapter (given or auto-detected) -> ecx_init -> ecx_config_init -> every
 *   slave an AUTD3 (src/ecat/identity.h) -> PRE-OP->SAFE-OP hook that starts SYNC0 -> ecx_configdc
 *   -> DC alignment wait -> ecx_config_map_group (does PRE-OP->SAFE-OP) ->
 *   SAFE-OP check -> the OP wait every EtherCAT link shares (services
 *   ecat_bringup: warm-up cycles, OP request, OP with a stable WKC).
 * cycle() is paced to the DC phase (as crate autd3-rs-link-soem 0.9.0 does; docs/soem.md), check_state() is libautd3's
 * EtherCAT recovery (services ecat_recovery_*: the new-generation state
 * checker plus the slave recovery) on SOEM's primitives, close() stops SYNC0
 * and requests INIT.
 *
 * Threads: cycle() runs on the caller's thread and allocates nothing; the only
 * locks it takes are SOEM's own port mutexes (index, tx, rx; priority
 * inheriting), which check_state() on another thread holds for one frame at a
 * time: that is how SOEM lets a state checker share the socket with the cyclic
 * exchange (frames are matched by index). The link's only thread is the
 * optional capture tap's (src/nic/capture.h).
 *
 * Portable: SOEM's own OS port does the I/O; the adapter checks before SOEM
 * opens it are libautd3's NIC seam (services nic_probe, nic_is_loopback).
 * Files: soem_internal.h.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "link/soem/soem_internal.h"

const autd3_link_services_t *autd3_soem_svc;

#define ALIGN_CHECK_NS 10000000ull  /* read the DC differences every 10 ms (sync.rs) */
#define ALIGN_LOOP_NS 1000000ull    /* distribute the reference time every 1 ms (sync.rs) */
#define ALIGN_EMA_ALPHA 0.2         /* smoothing of the DC differences (sync.rs) */

/* ---- small helpers ----------------------------------------------------------------- */

static int us_clamp(uint64_t ms) { return ms * 1000u > (uint64_t)INT_MAX ? INT_MAX : (int)(ms * 1000u); }

const char *autd3_soem_al_name(uint16_t s) {
  switch (s & 0x0f) {
    case EC_STATE_NONE: return "NONE (no response)";
    case EC_STATE_INIT: return "INIT";
    case EC_STATE_PRE_OP: return "PRE-OP";
    case EC_STATE_BOOT: return "BOOT";
    case EC_STATE_SAFE_OP: return (s & EC_STATE_ERROR) ? "SAFE-OP+ERROR" : "SAFE-OP";
    case EC_STATE_OPERATIONAL: return (s & EC_STATE_ERROR) ? "OP+ERROR" : "OP";
    default: return "unknown";
  }
}

/* Request `state` from one slave (1-based) or all (0), as ecx_writestate expects. */
static void request_state(ecx_contextt *ctx, uint16_t slave, uint16_t state) {
  ctx->slavelist[slave].state = state;
  ecx_writestate(ctx, slave);
}

/* Describe the first slave that is not in `want` into buf (after ecx_readstate). */
static void describe_bad_slave(ecx_contextt *ctx, uint16_t want, char *buf, size_t cap) {
  buf[0] = 0;
  for (int i = 1; i <= ctx->slavecount; i++) {
    const ec_slavet *s = &ctx->slavelist[i];
    if ((s->state & 0x1f) != want) {
      snprintf(buf, cap, "device %d is %s, AL status 0x%04x (%s)", i - 1, autd3_soem_al_name(s->state), s->ALstatuscode,
               ec_ALstatuscode2string(s->ALstatuscode));
      return;
    }
  }
  snprintf(buf, cap, "all devices reached it late");
}

/* The wait from a cycle's send time to the next frame: the next SYNC0 edge of
 * the reference clock plus the shift (link.rs next_cycle_wait). A negative
 * shift that would make the wait non-positive means "one cycle later". */
static int64_t next_cycle_wait(int64_t dc_time_ns, int64_t cycle_ns, int64_t shift_ns) {
  int64_t phase = dc_time_ns % cycle_ns;
  if (phase < 0) phase += cycle_ns;
  int64_t wait = cycle_ns - phase + shift_ns;
  while (wait <= 0) wait += cycle_ns;
  return wait;
}

/* PRE-OP -> SAFE-OP hook on every slave: start SYNC0 before SAFE-OP, as the
 * AUTD3 firmware expects DC to be running when it leaves PRE-OP (context.rs). */
static int po2so_hook(ecx_contextt *ctx, uint16 slave) {
  const soem_link_t *l = ctx->userdata;
  ecx_dcsync0(ctx, slave, TRUE, l->sync0_period_ns, l->sync0_shift_ns);
  return 0;
}

/* ecx_close, including the mailbox-queue mutexes that ecx_config_init creates
 * per group: SOEM v2.0.0's ecx_close leaks them (fixed upstream after v2.0.0
 * by commit 8095dfb, whose ecx_close skips NULL ones), so free them here and
 * clear them; this is right for both versions. */
static void soem_close_ctx(ecx_contextt *ctx) {
  for (int g = 0; g < EC_MAXGROUP; g++) {
    if (ctx->grouplist[g].mbxtxqueue.mbxmutex != NULL) {
      osal_mutex_destroy(ctx->grouplist[g].mbxtxqueue.mbxmutex);
      ctx->grouplist[g].mbxtxqueue.mbxmutex = NULL;
    }
  }
  ecx_close(ctx);
}

/* ---- interface selection ---------------------------------------------------------------- */

/* Open `ifname` with SOEM and enumerate its slaves. On success *n_out is the slave count. */
static autd3_err_t soem_init(ecx_contextt *ctx, bool *ctx_open, const char *ifname, int *n_out) {
  *ctx_open = true; /* ecx_init allocates the mailbox pool even when it fails: ecx_close frees it */
  if (ecx_init(ctx, ifname) <= 0)
    return autd3_set_error(AUTD3_E_PERMISSION, "soem: ecx_init failed on \"%s\" (SOEM could not open the adapter for raw frames)",
                           ifname);
  int n = ecx_config_init(ctx);
  if (n <= 0) return autd3_set_error(AUTD3_E_NO_DEVICE, "soem: no EtherCAT device answered on \"%s\"", ifname);
  *n_out = n;
  return AUTD3_OK;
}

/* Every slave an AUTD3 (the shared identity check, src/ecat/identity.h)? *bad = the first that is not (1-based). */
static bool all_autd(const ecx_contextt *ctx, int n, int *bad) {
  for (int i = 1; i <= n; i++) {
    const ec_slavet *s = &ctx->slavelist[i];
    if (!S->ecat_is_autd(s->eep_man, s->eep_id, s->name)) {
      *bad = i;
      return false;
    }
  }
  return true;
}

/* The adapter as SOEM will use it (services nic_probe: SOEM's Linux port opens
 * a raw socket and sets promiscuous mode with SIOCSIFFLAGS itself), before
 * SOEM hides why it cannot: NO_INTERFACE, PERMISSION (naming what grants it),
 * NO_DEVICE (down). `os_name` gets the name SOEM opens it by. */
static autd3_err_t probe_interface(const char *ifname, char *os_name, size_t cap) {
  return S->nic_probe(ifname, "soem", true, os_name, cap);
}

/* Interface "auto": the first adapter whose slaves are all AUTD3 (adapters.rs).
 * Loopback adapters are skipped (they can hold no EtherCAT slave). */
static autd3_err_t find_autd_adapter(char *out, size_t cap, autd3_link_master_guard_t **guard) {
  ec_adaptert *head = ec_find_adapters();
  char scanned[256] = "";
  size_t used = 0;
  bool permission = false, busy = false;
  bool found = false;
  for (ec_adaptert *a = head; a != NULL && !found; a = a->next) {
    if (S->nic_is_loopback(a->name)) continue;
    if (used < sizeof scanned) used += (size_t)snprintf(scanned + used, sizeof scanned - used, "%s%s", used ? ", " : "", a->name);
    char name[SOEM_IFNAME_CAP];
    autd3_err_t err = probe_interface(a->name, name, sizeof name);
    if (err == AUTD3_OK) err = S->master_guard_take(name, "soem", guard);
    if (err == AUTD3_E_PERMISSION) permission = true;
    if (err == AUTD3_E_SECOND_MASTER) busy = true;
    if (err != AUTD3_OK) continue;
    ecx_contextt *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL) break;
    bool open = false;
    int n = 0, bad = 0;
    err = soem_init(ctx, &open, name, &n);
    if (err == AUTD3_E_PERMISSION) permission = true;
    if (err == AUTD3_OK && all_autd(ctx, n, &bad)) {
      snprintf(out, cap, "%s", name); /* cap = SOEM_IFNAME_CAP, as name's */
      found = true; /* keep its guard */
    } else {
      S->master_guard_release(*guard);
      *guard = NULL;
    }
    if (open) soem_close_ctx(ctx);
    free(ctx);
  }
  ec_free_adapters(head);
  if (found) return AUTD3_OK;
  if (busy && !permission)
    return autd3_set_error(AUTD3_E_SECOND_MASTER,
                           "soem: interface auto-detection: no free adapter with only AUTD3 devices; another EtherCAT master "
                           "drives some (scanned: %s)",
                           scanned);
  if (permission)
    return autd3_set_error(AUTD3_E_PERMISSION,
                           "soem: interface auto-detection could not open some adapters (%s): SOEM needs CAP_NET_RAW and "
                           "CAP_NET_ADMIN; or name the interface",
                           scanned);
  return autd3_set_error(AUTD3_E_NO_DEVICE, "soem: no adapter with only AUTD3 devices found (scanned: %s)",
                         used ? scanned : "none");
}

/* ---- bring-up ------------------------------------------------------------------------------- */

/* DC alignment (sync.rs): keep sending the reference clock's system time to
 * the others (FRMW 0x0910 every 1 ms) and, every 10 ms, read each other
 * slave's system-time difference (0x092C, sign-magnitude), smooth it with an
 * EMA and stop when the largest magnitude is below the tolerance. A failed
 * read counts as "not aligned yet" rather than as zero. */
static autd3_err_t wait_for_align(soem_link_t *l, uint32_t tolerance_ns, uint32_t timeout_ms) {
  ecx_contextt *ctx = l->ctx;
  int n = ctx->slavecount;
  double ema[AUTD3_MAX_DEVICES];
  bool have[AUTD3_MAX_DEVICES] = {false};
  uint64_t start = S->now_ns(), last_check = start;
  double worst = 0.0;
  int worst_dev = -1;
  for (;;) {
    uint64_t dc = 0;
    ecx_FRMW(&ctx->port, ctx->slavelist[1].configadr, REG_DCSYS, sizeof dc, &dc, EC_TIMEOUTRET);
    uint64_t now = S->now_ns();
    if (now - last_check >= ALIGN_CHECK_NS) {
      last_check = now;
      bool complete = true;
      worst = 0.0;
      worst_dev = -1;
      for (int i = 2; i <= n; i++) {
        uint32_t raw = 0;
        if (ecx_FPRD(&ctx->port, ctx->slavelist[i].configadr, REG_DCDIFF, sizeof raw, &raw, EC_TIMEOUTRET) != 1) {
          complete = false;
          continue;
        }
        raw = etohl(raw);
        /* 0x092C is sign + magnitude, not two's complement (sync.rs; ESC datasheets). */
        double diff = (double)(raw & 0x7fffffffu) * ((raw & 0x80000000u) ? -1.0 : 1.0);
        double *e = &ema[i - 1];
        if (!have[i - 1]) {
          *e = diff;
          have[i - 1] = true;
        }
        *e = ALIGN_EMA_ALPHA * diff + (1.0 - ALIGN_EMA_ALPHA) * *e;
        if (fabs(*e) > worst) {
          worst = fabs(*e);
          worst_dev = i - 1;
        }
      }
      if (complete && worst < (double)tolerance_ns) return AUTD3_OK;
      if (now - start > (uint64_t)timeout_ms * 1000000ull) {
        if (worst_dev < 0)
          return autd3_set_error(AUTD3_E_SYNC_TIMEOUT, "soem: DC system-time difference (0x092C) unreadable for %u ms on \"%s\"",
                                 timeout_ms, l->ifname);
        return autd3_set_error(AUTD3_E_SYNC_TIMEOUT,
                               "soem: DC clocks did not align within sync_timeout_ms = %u: device %d still %.0f ns off "
                               "(sync_tolerance_ns = %u)",
                               timeout_ms, worst_dev, worst, tolerance_ns);
      }
    }
    S->sleep_ns(ALIGN_LOOP_NS);
  }
}

/* ---- the OP wait: the one every EtherCAT link shares (services ecat_bringup) on SOEM's process data ---- */

typedef struct soem_bringup {
  soem_link_t *l;
  uint64_t next_ns; /* the next cycle's send point (0: at once) */
} soem_bringup_t;

/* One process-data exchange, paced to the DC phase as the cycle is (link.rs
 * next_cycle_wait). SOEM's process data reads no AL status: every device's
 * OP is the final state read's to confirm. */
static autd3_err_t bu_exchange(void *c, autd3_link_ecat_cycle_t *out) {
  soem_bringup_t *b = c;
  soem_link_t *l = b->l;
  ecx_contextt *ctx = l->ctx;
  if (b->next_ns != 0) S->sleep_until_ns(b->next_ns, 0);
  uint64_t t0 = S->now_ns();
  ecx_send_processdata(ctx);
  int wkc = ecx_receive_processdata(ctx, EC_TIMEOUTRET);
  b->next_ns = t0 + (uint64_t)next_cycle_wait(ctx->DCtime, l->cycle_ns, l->sync0_shift_ns);
  *out = (autd3_link_ecat_cycle_t){.wkc = wkc > 0 ? (uint16_t)wkc : 0, .wkc_ok = wkc == l->expected_wkc, .lost = wkc <= 0, .all_op = true};
  return AUTD3_OK;
}

static autd3_err_t bu_request_op(void *c) {
  request_state(((soem_bringup_t *)c)->l->ctx, 0, EC_STATE_OPERATIONAL);
  return AUTD3_OK;
}

static autd3_err_t bu_read_states(void *c, uint16_t *al, uint16_t *code, bool *answered) {
  ecx_contextt *ctx = ((soem_bringup_t *)c)->l->ctx;
  ecx_readstate(ctx);
  for (int i = 1; i <= ctx->slavecount; i++) {
    const ec_slavet *s = &ctx->slavelist[i];
    al[i - 1] = s->state, code[i - 1] = s->ALstatuscode, answered[i - 1] = (s->state & 0x0f) != EC_STATE_NONE;
  }
  return AUTD3_OK;
}

static autd3_err_t bu_write_control(void *c, uint16_t dev, uint16_t value) {
  request_state(((soem_bringup_t *)c)->l->ctx, (uint16_t)(dev + 1), value);
  return AUTD3_OK;
}

static autd3_err_t wait_for_op(soem_link_t *l, const autd3_ethercat_option_t *o) {
  soem_bringup_t b = {l, 0};
  const autd3_link_ecat_bringup_ops_t ops = {&b, bu_exchange, bu_request_op, bu_read_states, bu_write_control};
  const autd3_link_ecat_bringup_config_t cfg = {sizeof cfg, l->hdr.num_devices, AUTD3_LINK_ECAT_WARMUP_CYCLES,
                                                o->op_wait_timeout_ms, "soem", l->ifname};
  uint16_t wkc = 0;
  return S->ecat_bringup(&ops, &cfg, &wkc);
}

/* ---- one master per chain ------------------------------------------------------------------------ */

/* The source MAC SOEM sends with: its primary MAC (nicdrv.c priMAC, from
 * ec_options.h EC_PRIMARY_MAC_ARRAY), each 16-bit word in network order as
 * ec_setupheader writes it. */
static void soem_master_mac(uint8_t mac[6]) {
  for (int i = 0; i < 3; i++) {
    mac[2 * i] = (uint8_t)(priMAC[i] >> 8);
    mac[2 * i + 1] = (uint8_t)priMAC[i];
  }
}

/* Another master's frames on the chain (the tap's watch): the devices execute
 * its frames too. Fatal for the link: every later cycle fails the same way. */
static autd3_err_t foreign_master_error(soem_link_t *l, const char *when) {
  return S->foreign_master_error("soem", l->ifname, when, l->cap);
}

/* ---- per-device inputs -------------------------------------------------------------------------- */

/* Devices whose inputs one frame can prove: an LRD of its inputs and an FPRD
 * of its AL status per device (28 bytes each, within one Ethernet frame). */
#define SOEM_IN_DEV_MAX 50

/* SOEM's process data is one LRW over every device, whose working counter
 * says only whether all took part. A device that left or went silent makes
 * it short; one back in SAFE-OP (its SM watchdog expired, or its error is
 * being acknowledged) still counts in it (its SyncManagers are active from
 * SAFE-OP on, ETG.1000.6) but takes no outputs. So when the counter came back
 * short, or a device was last seen out of OP (out_of_op), one more frame
 * tells whose inputs are valid (docs/reliability.md "A fault costs only its
 * device"): per device an LRD of its 2 input bytes and an FPRD of its AL
 * status, valid iff both answered and it is in OP. A device answers the LRD
 * only while its SM3/FMMU are set up, and a device back from a power cycle is
 * set up only after the state check reported its reset. Costs nothing on a
 * good cycle, one round trip on such a cycle. The reply is taken only if it
 * is ours (first datagram's header, as soem_recovery.c fprd_checked), so a
 * late reply to an earlier frame with the same index is never read as
 * inputs. No allocation. Returns whether every device is valid and in OP
 * (out_of_op is then clear). */
static bool per_device_inputs(soem_link_t *l, uint8_t *rx, bool *ok) {
  ecx_contextt *ctx = l->ctx;
  ecx_portt *port = &ctx->port;
  uint16_t n = l->hdr.num_devices;
  memset(ok, 0, n);
  if (n > SOEM_IN_DEV_MAX) return false; /* not in one frame: every device's inputs count as the cycle's */
  uint8_t zero[RX_BYTES] = {0};
  uint16_t off[SOEM_IN_DEV_MAX], aloff[SOEM_IN_DEV_MAX];
  uint8 idx = ecx_getindex(port);
  uint32_t la0 = (uint32_t)(ctx->slavelist[1].inputs - l->iomap); /* group 0: logical = offset in the IOmap */
  ecx_setupdatagram(port, &port->txbuf[idx], EC_CMD_LRD, idx, (uint16_t)la0, (uint16_t)(la0 >> 16), RX_BYTES, zero);
  off[0] = EC_HEADERSIZE;
  for (uint16_t d = 1; d < n; d++) {
    uint32_t la = (uint32_t)(ctx->slavelist[d + 1].inputs - l->iomap);
    off[d] = ecx_adddatagram(port, &port->txbuf[idx], EC_CMD_LRD, idx, true, (uint16_t)la, (uint16_t)(la >> 16), RX_BYTES, zero);
  }
  for (uint16_t d = 0; d < n; d++)
    aloff[d] = ecx_adddatagram(port, &port->txbuf[idx], EC_CMD_FPRD, idx, d + 1 < n, ctx->slavelist[d + 1].configadr,
                               ECT_REG_ALSTAT, 2, zero);
  ecx_outframe_red(port, idx);
  bool all = false;
  osal_timert t;
  osal_timer_start(&t, EC_TIMEOUTRET);
  while (!osal_timer_is_expired(&t)) {
    int w = ecx_waitinframe(port, idx, EC_TIMEOUTRET);
    if (w <= EC_NOFRAME) continue;
    ec_comt h;
    memcpy(&h, port->rxbuf[idx], sizeof h);
    if (h.command == EC_CMD_LRD && etohs(h.ADP) == (uint16_t)la0 && etohs(h.ADO) == (uint16_t)(la0 >> 16) &&
        (etohs(h.dlength) & 0x07ffu) == RX_BYTES) {
      all = true;
      for (uint16_t d = 0; d < n; d++) {
        const uint8_t *p = &port->rxbuf[idx][off[d]], *a = &port->rxbuf[idx][aloff[d]];
        bool in = (uint16_t)(p[RX_BYTES] | (p[RX_BYTES + 1] << 8)) == 1;
        bool op = (uint16_t)(a[2] | (a[3] << 8)) == 1 && (a[0] & 0x0f) == EC_STATE_OPERATIONAL;
        ok[d] = in && op;
        all = all && ok[d];
        if (ok[d]) memcpy(rx + (size_t)d * RX_BYTES, p, RX_BYTES);
      }
      break;
    }
    ecx_setbufstat(port, idx, EC_BUF_TX); /* someone else's late reply: keep waiting for ours */
  }
  ecx_setbufstat(port, idx, EC_BUF_EMPTY);
  atomic_store_explicit(&l->out_of_op, !all, memory_order_relaxed);
  return all;
}

/* ---- vtable ------------------------------------------------------------------------------------ */

static autd3_err_t soem_cycle(struct autd3_link *base, const uint8_t *tx, uint8_t *rx, bool *rx_valid) {
  soem_link_t *l = (soem_link_t *)base;
  ecx_contextt *ctx = l->ctx;
  uint16_t n = base->num_devices;
  *rx_valid = false;
  if (S->tap_foreign(l->cap, NULL) != 0) return foreign_master_error(l, "mid-run");
  S->pacer_wait(&l->pace);
  for (uint16_t i = 0; i < n; i++) memcpy(ctx->slavelist[i + 1].outputs, tx + (size_t)i * TX_BYTES, TX_BYTES);

  uint64_t t0 = S->now_ns();
  ecx_send_processdata(ctx);
  int wkc = ecx_receive_processdata(ctx, EC_TIMEOUTRET);
  uint64_t txrx = S->now_ns() - t0;
  autd3_link_report_exchange(base, txrx);
  if (txrx > atomic_load_explicit(&l->diag_max_txrx_ns, memory_order_relaxed))
    atomic_store_explicit(&l->diag_max_txrx_ns, txrx, memory_order_relaxed);
  atomic_store_explicit(&l->diag_last_wkc, wkc, memory_order_relaxed);

  if (wkc <= 0) {
    /* No frame came back: a lost cycle. Without a DC time there is no phase to
     * pace to, so the next cycle goes out at once (link.rs). */
    S->pacer_anchor(&l->pace, 0);
    l->aim_dc = 0;
    *rx_valid = false;
    autd3_link_count_cycle(base, false, true);
    return AUTD3_OK;
  }
  int64_t dc = ctx->DCtime; /* reference clock time, from the FRMW in the first frame */
  if (dc > 0) autd3_link_report_dc_time(base, t0 + txrx / 2, (uint64_t)dc);
  if (l->aim_dc != 0) { /* the phase: where this frame met the clock against its aim, an edge of SYNC0 (+ shift) or after */
    int64_t p0 = (int64_t)l->sync0_period_ns, early = ((l->aim_dc - l->sync0_shift_ns) % p0 + p0) % p0;
    autd3_link_report_phase(base, dc - l->aim_dc, (uint64_t)early, (uint64_t)(p0 - early));
  }
  int64_t wait = next_cycle_wait(dc, l->cycle_ns, l->sync0_shift_ns);
  l->aim_dc = dc + wait;
  S->pacer_anchor(&l->pace, t0 + (uint64_t)wait);
  int64_t phase = dc % l->cycle_ns;
  atomic_store_explicit(&l->diag_dc_phase_ns, phase < 0 ? phase + l->cycle_ns : phase, memory_order_relaxed);

  /* A WKC other than 3 per device means some slave did not read or write its
   * process data this cycle (lost, or a frame was lost): stale. A slave in
   * SAFE-OP still counts: one last seen out of OP makes the cycle look closer. */
  bool valid = wkc == l->expected_wkc && !atomic_load_explicit(&l->out_of_op, memory_order_relaxed);
  if (S->tap_foreign(l->cap, NULL) != 0) { /* these inputs may be the other master's doing */
    autd3_link_count_cycle(base, false, false);
    return foreign_master_error(l, "mid-run");
  }
  for (uint16_t i = 0; i < n; i++) memcpy(rx + (size_t)i * RX_BYTES, ctx->slavelist[i + 1].inputs, RX_BYTES);
  bool ok[AUTD3_MAX_DEVICES];
  if (!valid) valid = per_device_inputs(l, rx, ok) && wkc == l->expected_wkc; /* whose inputs are there after all */
  *rx_valid = valid;
  autd3_link_count_cycle(base, valid, false);
  if (!valid) autd3_link_report_inputs(base, ok);
  return AUTD3_OK;
}

static size_t soem_diagnostics(struct autd3_link *base, char *buf, size_t cap) {
  soem_link_t *l = (soem_link_t *)base;
  int r = snprintf(buf, cap,
                   "interface : %s\nexpected wkc : %d\nlast wkc : %lld\nlate wake-ups : %llu\n"
                   "skipped cycles : %llu\nmax lateness : %llu ns\nmax send+receive : %llu ns\ndc phase at send : %lld ns\ncaptured frames : %llu\n"
                   "foreign master frames : %llu\n",
                   l->ifname, l->expected_wkc, (long long)atomic_load(&l->diag_last_wkc),
                   (unsigned long long)atomic_load(&l->pace.late), (unsigned long long)atomic_load(&l->pace.skipped),
                   (unsigned long long)atomic_load(&l->pace.max_late_ns),
                   (unsigned long long)atomic_load(&l->diag_max_txrx_ns), (long long)atomic_load(&l->diag_dc_phase_ns),
                   (unsigned long long)S->tap_frames(l->cap),
                   (unsigned long long)S->tap_foreign(l->cap, NULL));
  if (r < 0) return 0;
  return (size_t)r < cap ? (size_t)r : cap - 1;
}

/* Stop SYNC0 on every slave and send them to INIT (link.rs shutdown), then free. */
static void soem_teardown(soem_link_t *l) {
  if (l->ctx != NULL) {
    if (l->configured) {
      for (uint16_t i = 1; i <= l->ctx->slavecount; i++) ecx_dcsync0(l->ctx, i, FALSE, 0, 0);
      request_state(l->ctx, 0, EC_STATE_INIT);
    }
    if (l->ctx_open) soem_close_ctx(l->ctx);
    free(l->ctx);
  }
  S->ecat_recovery_free(l->rec);
  S->tap_stop(l->cap); /* after close's INIT request: the tap writes what it has queued */
  S->master_guard_release(l->guard); /* after the last frame */
  free(l->iomap);
  free(l);
}

static void soem_close(struct autd3_link *base) { soem_teardown((soem_link_t *)base); }

static const autd3_link_vtable_t soem_vtable = {
    .cycle = soem_cycle,
    .check_state = autd3_soem_check_state,
    .close = soem_close,
    .diagnostics = soem_diagnostics,
};

static autd3_err_t soem_open_steps(soem_link_t *l, const autd3_ethercat_option_t *o, uint16_t expected) {
  autd3_err_t err;
  if (o->interface == NULL || o->interface[0] == 0 || strcmp(o->interface, "auto") == 0) {
    err = find_autd_adapter(l->ifname, sizeof l->ifname, &l->guard);
    if (err != AUTD3_OK) return err;
  }
  if (l->guard == NULL) {
    /* one master per chain, before SOEM's first frame (SOEM's own reasons
     * for an unusable adapter first: their messages say what SOEM needs) */
    if ((err = probe_interface(o->interface, l->ifname, sizeof l->ifname)) != AUTD3_OK) return err;
    if ((err = S->master_guard_take(l->ifname, "soem", &l->guard)) != AUTD3_OK) return err;
  }
  {
    /* before SOEM's first frame: the watch for another master (a master that
     * starts after the guard's listen), and the capture file shows the whole
     * bring-up */
    uint8_t mac[6];
    soem_master_mac(mac);
    /* the tap thread is SOEM's only thread of its own: it gets the ethercat
     * option's rt_priority/rt_cpu (the bus thread that calls cycle() is the
     * client's, which applies its own autd3_client_config_t policy) */
    if ((err = S->tap_start(l->ifname, o->capture_path, mac, o->rt_priority, o->rt_cpu, &l->cap)) != AUTD3_OK) return err;
  }
  ecx_contextt *ctx = l->ctx;
  int n = 0;
  if ((err = soem_init(ctx, &l->ctx_open, l->ifname, &n)) != AUTD3_OK) return err;
  int bad = 0;
  if (!all_autd(ctx, n, &bad))
    return S->ecat_check_identity("soem", l->ifname, (uint16_t)(bad - 1), ctx->slavelist[bad].eep_man,
                                      ctx->slavelist[bad].eep_id, ctx->slavelist[bad].name);
  if (n != expected)
    return autd3_set_error(AUTD3_E_DEVICE_COUNT_MISMATCH, "soem: %d AUTD3 device%s on \"%s\", but the geometry has %u", n,
                           n == 1 ? "" : "s", l->ifname, (unsigned)expected);
  l->configured = true;

  ctx->userdata = l;
  for (int i = 1; i <= n; i++) ctx->slavelist[i].PO2SOconfig = po2so_hook;
  if (!ecx_configdc(ctx))
    return autd3_set_error(AUTD3_E_NOT_AUTD, "soem: no device on \"%s\" supports distributed clocks (every AUTD3 does)", l->ifname);
  if ((err = wait_for_align(l, o->sync_tolerance_ns, o->sync_timeout_ms)) != AUTD3_OK) return err;

  l->iomap = calloc((size_t)n, 1 + TX_BYTES + RX_BYTES); /* +1: SOEM maps each mailbox-status byte too */
  if (l->iomap == NULL) return autd3_set_error(AUTD3_E_NOMEM, "soem: out of memory for the process image");
  ecx_config_map_group(ctx, l->iomap, 0); /* programs SM/FMMU and requests SAFE-OP (the hook runs here) */
  for (int i = 1; i <= n; i++) {
    const ec_slavet *s = &ctx->slavelist[i];
    if (s->Obytes != TX_BYTES || s->Ibytes != RX_BYTES || s->outputs == NULL || s->inputs == NULL)
      return autd3_set_error(AUTD3_E_NOT_AUTD, "soem: device %d maps %u output / %u input bytes, an AUTD3 maps %d / %d", i - 1,
                             (unsigned)s->Obytes, (unsigned)s->Ibytes, TX_BYTES, RX_BYTES);
  }
  if (ecx_statecheck(ctx, 0, EC_STATE_SAFE_OP, us_clamp(o->state_timeout_ms)) != EC_STATE_SAFE_OP) {
    char what[192];
    ecx_readstate(ctx);
    describe_bad_slave(ctx, EC_STATE_SAFE_OP, what, sizeof what);
    return autd3_set_error(AUTD3_E_STATE_TIMEOUT, "soem: devices did not reach SAFE-OP within state_timeout_ms = %u: %s",
                           o->state_timeout_ms, what);
  }
  /* SOEM's convention: an output write counts 2, an input read 1, i.e. 3 per AUTD3 (SOEM v2.0.0
   * samples/simple_test computes it so; crate autd3-rs-link-soem 0.9.0 checks it). */
  l->expected_wkc = ctx->grouplist[0].outputsWKC * 2 + ctx->grouplist[0].inputsWKC;
  if ((err = wait_for_op(l, o)) != AUTD3_OK) return err;
  if ((err = autd3_soem_recovery_create(l, o->state_timeout_ms)) != AUTD3_OK) return err;
  if (S->tap_foreign(l->cap, NULL) != 0) return foreign_master_error(l, "during open");
  return AUTD3_OK;
}

static autd3_err_t soem_open_once(const autd3_link_option_t *option, const autd3_geometry_t *geometry, struct autd3_link **out);

/* SOEM's configuration reads (slave detection, SII, mapping) are not checked
 * against their requests: a read that timed out is resent, and a late reply
 * can be taken as the reply to a later read that reused its frame index (see
 * soem_recovery.c fprd_checked). When the chain answered late during open (a starved
 * emulator; seen under load) the chain may thus look empty or its mapping
 * wrong. Those two outcomes get one more attempt on a fresh socket before they
 * are reported; a chain that really is empty or not AUTD3 fails it the same
 * way. Every other error is reported at once. */
static autd3_err_t soem_open(const autd3_link_option_t *option, const autd3_geometry_t *geometry, struct autd3_link **out) {
  autd3_err_t err = soem_open_once(option, geometry, out);
  if (err == AUTD3_E_NO_DEVICE || err == AUTD3_E_NOT_AUTD) err = soem_open_once(option, geometry, out);
  return err;
}

static autd3_err_t soem_open_once(const autd3_link_option_t *option, const autd3_geometry_t *geometry, struct autd3_link **out) {
  const autd3_ethercat_option_t *o = &option->u.soem.ethercat;
  autd3_err_t err = autd3_ethercat_option_validate(o);
  if (err != AUTD3_OK) return err;
  size_t n = autd3_geometry_num_devices(geometry);
  soem_link_t *l = calloc(1, sizeof *l);
  if (l == NULL) return autd3_set_error(AUTD3_E_NOMEM, "soem: out of memory");
  l->ctx = calloc(1, sizeof *l->ctx);
  if (l->ctx == NULL) {
    free(l);
    return autd3_set_error(AUTD3_E_NOMEM, "soem: out of memory for the SOEM context");
  }
  autd3_link_init(&l->hdr, &soem_vtable, AUTD3_LINK_SOEM, (uint16_t)n);
  autd3_link_set_measured(&l->hdr, AUTD3_LINK_MEASURES_LOST | AUTD3_LINK_MEASURES_EXCHANGE | AUTD3_LINK_MEASURES_PHASE |
                                       AUTD3_LINK_MEASURES_DC_TIME |
                                       (n <= SOEM_IN_DEV_MAX ? AUTD3_LINK_MEASURES_DEVICE_STALE : 0));
  l->sync0_period_ns = o->sync0_period_ns;
  l->sync0_shift_ns = o->sync0_shift_ns;
  l->cycle_ns = o->send_cycle_ns ? o->send_cycle_ns : o->sync0_period_ns;
  S->pacer_init(&l->pace, (uint64_t)l->cycle_ns, 0);
  err = soem_open_steps(l, o, (uint16_t)n);
  if (err != AUTD3_OK) {
    soem_teardown(l);
    return err;
  }
  *out = &l->hdr;
  return AUTD3_OK;
}

void autd3_link_soem_register(void) {
  if (S == NULL) S = autd3_link_services(AUTD3_LINK_SERVICES_VERSION);
  if (S != NULL) autd3_link_register(AUTD3_LINK_SOEM, soem_open); /* else opening it reports NOT_BUILT */
}

/* With GCC/Clang (MinGW included) linking the shared library is enough to
 * make "soem" available: the loader runs this before main. Elsewhere (MSVC),
 * or when a static link dropped this object, the application calls
 * autd3_link_soem_register() itself: that explicit call is the contract,
 * this is a convenience. */
#if defined(__GNUC__)
__attribute__((constructor)) static void soem_register_at_load(void) { autd3_link_soem_register(); }
#endif
