/*
 * echocat: the EtherCAT master dedicated to AUTD3 (link kind ECHOCAT).
 *
 * Bring-up follows the order real AUTD3 devices are known to accept (the
 * SOEM/EtherCrab AUTD links of shinolab/autd3-sdk, crates autd3-rs-link-soem
 * 0.6.1 and autd3-rs-link-ethercrab 0.7.0): count, station addresses, SII identity, PRE-OP,
 * DC (delays, offsets, static drift, wait until 0x092C agrees), SYNC0, SM/FMMU
 * mapping, SAFE-OP, warm-up cycles, OP once the working counter is stable.
 *
 * The cycle (docs/echocat.md "Timing"): a device takes a new output image at
 * SYNC0 and answers within a fraction of a cycle. So one cycle() call
 *   1. sends the caller's outputs AT ONCE (LWR, ⌈N/2⌉ frames of ≤ 2 devices),
 *      aimed at the next SYNC0 edge they can still reach, never two images
 *      in one SYNC0 interval (the devices' SM buffer would be overwritten);
 *   2. sleeps (absolute deadline) until `read_ahead` before the following
 *      edge and sends one small frame: FRMW of the reference clock's system
 *      time (DC drift + our phase lock), LRD of all inputs, BRD AL status;
 *   3. returns those fresh inputs. The wait_next_cycle hook (ec_wait_next_cycle)
 *      then sleeps until shortly before that edge, so the caller's next
 *      outputs carry what it submitted meanwhile and still reach the edge.
 * The inputs are read as soon as the devices have answered and the outputs
 * are staged as late as the edge allows, so an ack comes back one cycle
 * after its frame was submitted
 * (reference links: outputs leave at SYNC0 and inputs are read with them).
 *
 * Threads: cycle() runs on the caller's bus thread and owns the NIC. Any
 * other bus access after open (check_state) is posted to a one-frame
 * mailbox that cycle() sends with its read frame and answers in the same
 * cycle; when nobody cycles, the checker takes the NIC itself via an
 * ownership flag. No lock is ever taken in cycle().
 *
 * Files (echocat_internal.h): this one holds open, close, the state check
 * (the shared recovery state machine, src/ecat/recovery.h, on echocat's
 * primitives) and the diagnostics; slots.c the frame slots and
 * transactions, scan.c the scan and identity, dc.c the distributed clocks,
 * cycle.c the cycle engine.
 */
#define _GNU_SOURCE
#include "core/error_context.h"
#include "link/echocat/echocat_internal.h"

/* ---------------------------------------------------------------- state check and recovery */
/* The state machine, the back-off and the recovery count are the shared ones
 * (src/ecat/recovery.h); echocat supplies its bus primitives and the steps it
 * does better than the generic ones: the batched state read, the reference
 * clock's re-base, the identity check, and DC from one latching frame
 * (dc.c) instead of host-timed reads. */

static autd3_err_t rec_read(void *c, uint16_t k, bool pos, uint16_t reg, void *buf, uint16_t len, uint16_t *wkc) {
  echocat_t *ec = c;
  autd3_err_t e = autd3__echocat_dg1(ec, pos ? ECAT_APRD : ECAT_FPRD, pos ? POSITION(k) : STATION(k), reg, NULL, len, buf, wkc);
  if (e == AUTD3_E_TIMEOUT) { /* the frame did not come back: nobody answered */
    *wkc = 0;
    return AUTD3_OK;
  }
  return e;
}

static autd3_err_t rec_write(void *c, uint16_t k, bool pos, uint16_t reg, const void *buf, uint16_t len, uint16_t *wkc) {
  echocat_t *ec = c;
  autd3_err_t e = autd3__echocat_dg1(ec, pos ? ECAT_APWR : ECAT_FPWR, pos ? POSITION(k) : STATION(k), reg, buf, len, NULL, wkc);
  if (e == AUTD3_E_TIMEOUT) {
    *wkc = 0;
    return AUTD3_OK;
  }
  return e;
}

/* Every device's AL status in one frame. */
static autd3_err_t rec_read_states(void *c, uint16_t *al, bool *answered) {
  echocat_t *ec = c;
  uint16_t all[AUTD3_MAX_DEVICES];
  autd3__echocat_list_range(all, 0, ec->n);
  uint8_t st[AUTD3_MAX_DEVICES];
  uint16_t code[AUTD3_MAX_DEVICES], wkc[AUTD3_MAX_DEVICES];
  autd3_err_t e = autd3__echocat_read_states(ec, all, ec->n, st, code, wkc);
  if (e == AUTD3_E_TIMEOUT) { /* nothing came back at all: every device is lost */
    memset(wkc, 0, sizeof wkc);
    e = AUTD3_OK;
  }
  for (uint16_t k = 0; k < ec->n && e == AUTD3_OK; k++) {
    answered[k] = wkc[k] == 1;
    al[k] = answered[k] ? st[k] : 0;
  }
  return e;
}

/* A device that lost its station address (power-cycled) gets it back. The
 * reference clock (device 0) first gets an offset that continues the old time
 * base (dc.c autd3__echocat_rebase_reference): from the moment it has its address
 * the cycle's FRMW distributes its time again. */
static autd3_err_t rec_readdress(void *c, uint16_t k, bool *readdressed) {
  echocat_t *ec = c;
  uint16_t one[1] = {k};
  uint8_t a[2];
  uint16_t w = 0;
  autd3_err_t e;
  *readdressed = false;
  /* only the power-on address 0 (see src/ecat/recovery.c generic_readdress) */
  if (autd3__echocat_dg1(ec, ECAT_APRD, POSITION(k), REG_STADR, NULL, 2, a, &w) != AUTD3_OK || w != 1 || ecat_get16(a) != 0)
    return AUTD3_OK; /* nothing at its position, it kept its address (back by itself), or another device */
  if (k == 0 && (e = autd3__echocat_rebase_reference(ec)) != AUTD3_OK)
    return e;
  if ((e = autd3__echocat_assign_addresses(ec, one, 1)) != AUTD3_OK)
    return e;
  *readdressed = true;
  return AUTD3_OK;
}

/* In INIT: no stale FMMU/SM/SYNC0 setup, EEPROM access for the master, the
 * identity (a different device may have been plugged in), the mailbox SMs. */
static autd3_err_t rec_restore(void *c, uint16_t k) {
  echocat_t *ec = c;
  uint16_t one[1] = {k};
  autd3_err_t e;
  const dgspec_t rs[4] = {{ECAT_APWR, REG_FMMU0, 48}, {ECAT_APWR, REG_SM0, 32}, {ECAT_APWR, REG_DCACT, 1},
                          {ECAT_APWR, REG_EEPCFG, 1}};
  uint8_t in[AUTD3_MAX_DEVICES * 82];
  memset(in + (size_t)k * 82, 0, 82);
  if ((e = autd3__echocat_each(ec, one, 1, true, rs, 4, in, NULL, NULL)) != AUTD3_OK)
    return e;
  if ((e = autd3__echocat_sii_read(ec, one, 1)) != AUTD3_OK || (e = autd3__echocat_check_identity(ec, one, 1)) != AUTD3_OK)
    return e;
  return autd3__echocat_mailbox_sm(ec, one, 1);
}

/* In PRE-OP: offset and delay from one latching frame, SYNC0 on the common
 * grid, then the process-data SM/FMMU mapping (as at open). */
static autd3_err_t rec_realign(void *c, uint16_t k) {
  echocat_t *ec = c;
  uint16_t one[1] = {k};
  autd3_err_t e;
  if ((e = autd3__echocat_dc_config(ec, one, 1, false)) != AUTD3_OK || (e = autd3__echocat_sync0_on(ec, one, 1)) != AUTD3_OK)
    return e;
  return autd3__echocat_map_pdo(ec, one, 1);
}

static autd3_err_t ec_check_state(struct autd3_link *link, autd3_link_status_t *out) {
  return autd3__ecat_recovery_check(((echocat_t *)link)->rec, out);
}

static autd3_err_t recovery_create(echocat_t *ec) {
  const autd3_link_ecat_ops_t ops = {.ctx = ec,
                                     .read = rec_read,
                                     .write = rec_write,
                                     .read_states = rec_read_states,
                                     .readdress = rec_readdress,
                                     .restore = rec_restore,
                                     .realign_dc = rec_realign};
  const autd3_link_ecat_recovery_config_t cfg = {sizeof cfg, ec->opt.ethercat.state_timeout_ms, NULL};
  return autd3__ecat_recovery_create(&ec->base, &ops, &cfg, &ec->rec);
}

/* ---------------------------------------------------------------- diagnostics */

static uint64_t jit_pct(echocat_t *ec, uint64_t total, double p) {
  uint64_t want = (uint64_t)(p * (double)total / 100.0 + 0.999999), acc = 0;
  if (want == 0)
    want = 1;
  for (int i = 0; i <= JIT_BUCKETS; i++) {
    acc += atomic_load_explicit(&ec->jit[i], memory_order_relaxed);
    if (acc >= want)
      return (uint64_t)i;
  }
  return JIT_BUCKETS;
}

static size_t ec_diagnostics(struct autd3_link *link, char *buf, size_t cap) {
  echocat_t *ec = (echocat_t *)link;
  uint64_t n = atomic_load(&ec->jit_n), cyc = atomic_load(&ec->cyc);
  uint64_t foreign = atomic_load_explicit(&ec->foreign, memory_order_acquire);
  char fmac[18] = "";
  if (foreign)
    autd3__mac_format(ec->foreign_mac, fmac);
  int w = snprintf(buf, cap,
                   "departure jitter p50 : %" PRIu64 " us\n"
                   "departure jitter p99 : %" PRIu64 " us\n"
                   "departure jitter max : %.1f us\n"
                   "late wake-ups        : %" PRIu64 " (SYNC0 edges without new outputs)\n"
                   "outputs after edge   : %" PRIu64 " (not proven before their SYNC0 edge)\n"
                   "phase guard waits    : %" PRIu64 "\n"
                   "frames per cycle     : %.2f\n"
                   "wake-ups per cycle   : %.2f (sleeps and receives that waited, wait_next_cycle included)\n"
                   "one-wake-up cycles   : %" PRIu64 " (read's reply taken at the next call: the caller had more queued)\n"
                   "read ahead of SYNC0  : %.0f us\n"
                   "outputs to reference : %.0f us\n"
                   "ignored frames       : %" PRIu64 "\n"
                   "foreign master frames: %" PRIu64 "%s%s\n"
                   "captured frames      : %" PRIu64 "\n"
                   "nic receive path     : %s\n",
                   n ? jit_pct(ec, n, 50) : 0, n ? jit_pct(ec, n, 99) : 0, (double)atomic_load(&ec->jit_max) / 1000.0,
                   (uint64_t)atomic_load(&ec->late), (uint64_t)atomic_load(&ec->unproven),
                   (uint64_t)atomic_load(&ec->guard_waits), cyc ? (double)atomic_load(&ec->frames) / (double)cyc : 0.0,
                   cyc ? (double)atomic_load(&ec->wakeups) / (double)cyc : 0.0, (uint64_t)atomic_load(&ec->deferred),
                   (double)atomic_load(&ec->diag_ra) / 1000.0, (double)atomic_load(&ec->diag_out) / 1000.0,
                   autd3__nic_ignored(ec->nic), foreign, foreign ? " from " : "", foreign ? fmac : "",
                   autd3__capture_tap_frames(ec->cap), ec->nic ? autd3__nic_io_path(ec->nic) : "closed");
  if (w < 0)
    return 0;
  return (size_t)w < cap ? (size_t)w : cap - 1;
}

/* ---------------------------------------------------------------- open / close */

static void release(echocat_t *ec) {
  if (ec->nic)
    autd3__nic_close(ec->nic);
  autd3__capture_tap_stop(ec->cap); /* after the last frame: the tap writes what it has queued */
  autd3__master_guard_release(ec->guard); /* after the last frame (close's INIT request) */
  autd3__ecat_recovery_free(ec->rec);
  free(ec->zero_tx);
  free(ec->ifname);
  free(ec);
}

static void ec_close(struct autd3_link *link) {
  echocat_t *ec = (echocat_t *)link;
  atomic_store(&ec->running, false);
  /* the caller stopped cycling; make sure a checker is not on the bus */
  for (int i = 0; i < 1000; i++) {
    int own = OWN_NONE;
    if (atomic_compare_exchange_strong(&ec->owner, &own, OWN_CHECKER))
      break;
    autd3__sleep_ns(1000000);
  }
  uint16_t all[AUTD3_MAX_DEVICES];
  autd3__echocat_list_range(all, 0, ec->n);
  uint8_t z[AUTD3_MAX_DEVICES] = {0};
  const dgspec_t sp = {ECAT_FPWR, REG_DCACT, 1};
  autd3__echocat_each(ec, all, ec->n, false, &sp, 1, z, NULL, NULL); /* SYNC0 off */
  uint16_t w;
  uint8_t v[2];
  ecat_put16(v, AL_INIT);
  autd3__echocat_dg1(ec, ECAT_BWR, 0, REG_ALCTL, v, 2, NULL, &w);
  release(ec);
}

static const autd3_link_vtable_t ec_vt = {.cycle = autd3__echocat_cycle,
                                          .check_state = ec_check_state,
                                          .close = ec_close,
                                          .diagnostics = ec_diagnostics,
                                          .wait_next_cycle = autd3__echocat_wait_next_cycle};

/* Open `ifname`, count, address and identify its slaves. */
static autd3_err_t probe(echocat_t *ec, const char *user_name, uint16_t *count) {
  /* From here on the adapter is named by its OS name, however the user named
   * it (Windows: a description or friendly name), so its lock is one. */
  char *os_name = NULL;
  autd3_err_t e = autd3__nic_resolve(user_name, &os_name);
  if (e != AUTD3_OK)
    return e;
  free(ec->ifname);
  ec->ifname = os_name;
  const char *ifname = os_name;
  /* One master per chain: the interface's lock and a short listen for a
   * master already cycling, before our first frame (nic/master_guard.h). */
  e = autd3__master_guard_take(ifname, ec->opt.backend, "echocat", &ec->guard);
  if (e != AUTD3_OK)
    return e;
  e = autd3__nic_open(ifname, ec->opt.backend, &ec->nic);
  if (e != AUTD3_OK)
    return e;
  /* A source MAC that no adapter has and no other master uses (this open's
   * own): the first ESC sets bit 0x02 in the returning frame (Beckhoff ESC datasheet section I, frame processing), so a
   * reply never carries our adapter's own address (back ends that cannot
   * filter by direction drop those), and a frame with any other source is
   * another master's (collect_until). */
  autd3__master_guard_mac(ec->guard, ec->mac);
  if (ec->opt.ethercat.capture_path && !ec->cap) {
    /* The one capture path of the EtherCAT links (src/nic/capture.h): a tap
     * on its own thread sees both directions, so the bus thread never writes
     * a file (it blocks only on its own socket). Its thread is echocat's only
     * own thread: the ethercat option's RT policy is for it. */
    const autd3_tap_options_t to = {ec->opt.ethercat.capture_path, NULL, ec->opt.ethercat.rt_priority,
                                    ec->opt.ethercat.rt_cpu};
    if ((e = autd3__tap_start(ifname, &to, &ec->cap)) != AUTD3_OK)
      return e;
    autd3__nic_sends_to_taps(ec->nic); /* else the file would hold only the replies */
  }
  if ((e = autd3__echocat_count_slaves(ec, count)) != AUTD3_OK)
    return e;
  if (*count == 0)
    return autd3_set_error(AUTD3_E_NO_DEVICE, "echocat %s: no EtherCAT slave answered", ifname);
  if (*count > AUTD3_MAX_DEVICES)
    return autd3_set_error(AUTD3_E_DEVICE_COUNT_RANGE, "echocat %s: %u slaves, at most %d are supported", ifname, *count,
                           AUTD3_MAX_DEVICES);
  ec->n = *count;
  uint16_t all[AUTD3_MAX_DEVICES];
  autd3__echocat_list_range(all, 0, ec->n);
  if ((e = autd3__echocat_reset_slaves(ec)) != AUTD3_OK || (e = autd3__echocat_assign_addresses(ec, all, ec->n)) != AUTD3_OK ||
      (e = autd3__echocat_sii_read(ec, all, ec->n)) != AUTD3_OK)
    return e;
  return autd3__echocat_check_identity(ec, all, ec->n);
}

/* The options echocat needs besides the shared EtherCAT ones; *send_cycle = the host's send cycle. */
static autd3_err_t validate(const autd3_echocat_option_t *opt, uint32_t *send_cycle) {
  autd3_err_t e = autd3_ethercat_option_validate(&opt->ethercat);
  if (e != AUTD3_OK)
    return e;
  const autd3_ethercat_option_t *o = &opt->ethercat;
  *send_cycle = o->send_cycle_ns ? o->send_cycle_ns : o->sync0_period_ns;
  if (*send_cycle % o->sync0_period_ns != 0)
    return autd3_set_error(AUTD3_E_INVALID_OPTION,
                           "echocat: send_cycle_ns = %u must be a multiple of sync0_period_ns = %u (one image per SYNC0)",
                           o->send_cycle_ns, o->sync0_period_ns);
  if ((o->rt_priority > 0 || o->rt_cpu >= 0) && o->capture_path == NULL)
    return autd3_set_error(AUTD3_E_INVALID_OPTION,
                           "echocat: rt_priority = %d / rt_cpu = %d: the ethercat option's RT policy is for a link's "
                           "own threads and echocat has none without capture_path; its cycle runs on the caller's "
                           "thread: set autd3_client_config_t.rt_priority/rt_cpu (the client's bus thread) or "
                           "autd3_remote_server_option_t.rt_priority/rt_cpu (the remote server's)",
                           o->rt_priority, o->rt_cpu);
  if ((unsigned)opt->backend > AUTD3_NIC_PCAP)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "echocat: backend = %d is not a autd3_nic_backend_t", (int)opt->backend);
  if (opt->spin_ns >= *send_cycle / 2)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "echocat: spin_ns = %u must be below half the send cycle (%u ns)",
                           opt->spin_ns, *send_cycle / 2);
  if (opt->warmup_cycles > 100000)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "echocat: warmup_cycles = %u is above 100000", opt->warmup_cycles);
  return AUTD3_OK;
}

/* Undo a probe that did not choose its adapter (interface = auto). */
static void unprobe(echocat_t *ec) {
  if (ec->nic)
    autd3__nic_close(ec->nic);
  ec->nic = NULL;
  autd3__capture_tap_stop(ec->cap); /* the file is for the adapter that is chosen */
  ec->cap = NULL;
  autd3__master_guard_release(ec->guard);
  ec->guard = NULL;
  ec->n = 0;
}

/* Interface "auto": every adapter that is up, the first one whose slaves are all AUTD3 wins. */
static autd3_err_t probe_auto(echocat_t *ec, uint16_t *count) {
  autd3_nic_names_t names;
  autd3_err_t e = autd3__nic_names(&names);
  if (e != AUTD3_OK) {
    autd3__nic_names_free(&names);
    return e;
  }
  size_t nn = names.count;
  char tried[512] = "";
  bool perm = false, busy = false; /* some adapter refused us / has another master */
  e = AUTD3_E_NO_DEVICE;
  for (size_t i = 0; i < nn && e != AUTD3_OK; i++) {
    if ((e = probe(ec, names.name[i], count)) == AUTD3_OK)
      break;
    perm = perm || e == AUTD3_E_PERMISSION;
    busy = busy || e == AUTD3_E_SECOND_MASTER;
    size_t l = strlen(tried);
    snprintf(tried + l, sizeof tried - l, "%s%s (%s)", l ? ", " : "", names.name[i], autd3_err_name(e));
    unprobe(ec);
  }
  autd3__nic_names_free(&names);
  if (e == AUTD3_OK)
    return e;
  if (busy && !perm)
    return autd3_set_error(AUTD3_E_SECOND_MASTER,
                           "echocat: interface = auto: no free adapter has only AUTD3 devices; another EtherCAT master "
                           "drives some (tried: %s)",
                           tried);
  if (perm)
    return autd3_set_error(AUTD3_E_PERMISSION,
                           "echocat: cannot open raw sockets to scan for AUTD3 devices: needs CAP_NET_RAW and "
                           "CAP_NET_ADMIN (run as root or `sudo setcap cap_net_raw,cap_net_admin+ep <program>`)");
  return autd3_set_error(AUTD3_E_NO_DEVICE, "echocat: interface = auto: no adapter has only AUTD3 devices (tried: %s)",
                         nn ? tried : "no adapter is up");
}

/* The chain found fits the geometry and the send cycle. */
static autd3_err_t check_chain(const echocat_t *ec, uint16_t count, size_t want) {
  if (count != want)
    return autd3_set_error(AUTD3_E_DEVICE_COUNT_MISMATCH, "echocat %s: %u AUTD3 devices on the bus, the geometry has %zu",
                           ec->ifname, count, want);
  /* An EtherCAT line runs at 100 Mbit/s: every output frame (two devices'
   * 626 B + the reference read, 106 µs on the wire), the read frame and
   * the way through the chain must fit in one send cycle, or frames would
   * queue up and be lost every cycle. Refuse such a chain here, naming the
   * cycle that carries it (the computation: docs/echocat.md "The wire limit"). */
  uint64_t need = autd3__echocat_cycle_wire_ns(count);
  if (need > ec->period)
    return autd3_set_error(AUTD3_E_INVALID_OPTION,
                           "echocat %s: %u devices need %llu us of 100 Mbit/s wire per cycle (outputs, inputs, %u hops), "
                           "more than the send cycle of %u us: raise sync0_period_ns (and send_cycle_ns) to at least %llu us",
                           ec->ifname, count, (unsigned long long)(need / 1000), count, (unsigned)(ec->period / 1000),
                           (unsigned long long)(autd3__echocat_min_cycle_ns(count) / 1000));
  return AUTD3_OK;
}

/* PRE-OP, distributed clocks, SYNC0, the process-data SM/FMMU mapping, SAFE-OP. */
static autd3_err_t configure(echocat_t *ec) {
  uint16_t all[AUTD3_MAX_DEVICES];
  autd3__echocat_list_range(all, 0, ec->n);
  autd3_err_t e;
  if ((e = autd3__echocat_to_preop(ec, all, ec->n)) != AUTD3_OK || (e = autd3__echocat_dc_config(ec, all, ec->n, true)) != AUTD3_OK ||
      (e = autd3__echocat_wait_sync(ec)) != AUTD3_OK || (e = autd3__echocat_sync0_on(ec, all, ec->n)) != AUTD3_OK ||
      (e = autd3__echocat_map_pdo(ec, all, ec->n)) != AUTD3_OK)
    return e;
  if ((e = autd3__echocat_request_state(ec, all, ec->n, AL_SAFEOP)) != AUTD3_OK)
    return e;
  return autd3__echocat_wait_state(ec, all, ec->n, AL_SAFEOP, ec->opt.ethercat.state_timeout_ms);
}

/* The cycle engine's buffers and its initial timing estimates, from the wire
 * model of a 100 Mbit/s chain (refined by measurement). */
static autd3_err_t cycle_init(echocat_t *ec) {
  ec->ngroups = (ec->n + 1) / 2;
  ec->zero_tx = calloc((size_t)ec->n, OUT_BYTES + IN_BYTES);
  if (!ec->zero_tx)
    return autd3_set_error(AUTD3_E_NOMEM, "echocat: out of memory");
  ec->out_rtt_ns = (double)(ec->n * OUT_BYTES + ec->ngroups * 70) * 80.0 + 20000.0;
  ec->rd_rtt_ns = 100000.0;
  ec->w0_ns = autd3__echocat_out_wire_ns(ec->n < 2 ? ec->n : 2);
  ec->lead_ns = autd3__echocat_cycle_wire_ns(ec->n) + 2000u;
  /* an output frame's preamble 8 + Ethernet 14 + EtherCAT 2 + datagram header 10 + its first device's outputs */
  ec->credit_ns = (uint64_t)(8 + 14 + 2 + 10 + OUT_BYTES) * 80u - 5000u;
  ec->wake_lat_ns = 50000.0;
  ec->burst = autd3__echocat_out_wire_ns(ec->n) + (uint64_t)ec->n * HOP_MAX_NS + GUARD_NS + SPLIT_HOST_NS > ec->period;
  autd3__echocat_update_read_ahead(ec);
  return AUTD3_OK;
}

/* ---- the OP wait: the shared bring-up (src/ecat/bringup.h) on echocat's cycle engine and transactions */

static autd3_err_t bu_exchange(void *c, autd3_link_ecat_cycle_t *out) {
  echocat_t *ec = c;
  cycle_res_t res;
  autd3_err_t e = autd3__echocat_cycle_core(ec, ec->zero_tx, ec->zero_tx + (size_t)ec->n * OUT_BYTES, &res);
  /* echocat judges every frame's working counter itself (wkc_ok); no total to report */
  *out = (autd3_link_ecat_cycle_t){.wkc = 0, .wkc_ok = res.wkc_ok, .lost = res.lost, .all_op = res.all_op};
  return e;
}

static autd3_err_t bu_request_op(void *c) {
  uint8_t v[2];
  ecat_put16(v, AL_OP);
  return autd3__echocat_dg1(c, ECAT_BWR, 0, REG_ALCTL, v, 2, NULL, NULL);
}

static autd3_err_t bu_read_states(void *c, uint16_t *al, uint16_t *code, bool *answered) {
  echocat_t *ec = c;
  uint16_t all[AUTD3_MAX_DEVICES], wkc[AUTD3_MAX_DEVICES];
  uint8_t st[AUTD3_MAX_DEVICES];
  autd3__echocat_list_range(all, 0, ec->n);
  autd3_err_t e = autd3__echocat_read_states(ec, all, ec->n, st, code, wkc);
  for (uint16_t k = 0; k < ec->n && e == AUTD3_OK; k++)
    al[k] = st[k], answered[k] = wkc[k] != 0;
  return e;
}

static autd3_err_t bu_write_control(void *c, uint16_t dev, uint16_t value) {
  uint8_t v[2];
  ecat_put16(v, value);
  return autd3__echocat_dg1(c, ECAT_FPWR, STATION(dev), REG_ALCTL, v, 2, NULL, NULL);
}

static autd3_err_t bring_up(echocat_t *ec) {
  const autd3_link_ecat_bringup_ops_t ops = {ec, bu_exchange, bu_request_op, bu_read_states, bu_write_control};
  const autd3_link_ecat_bringup_config_t cfg = {sizeof cfg, ec->n, ec->opt.warmup_cycles, ec->opt.ethercat.op_wait_timeout_ms,
                                                "echocat", ec->ifname};
  uint16_t wkc = 0;
  return autd3__ecat_bringup_run(&ops, &cfg, &wkc);
}

/* Every device in OP: no other master showed up, the state checker's
 * recovery reads what it restores, and the caller's cycles start. */
static autd3_err_t start(echocat_t *ec) {
  autd3_err_t e;
  if (atomic_load_explicit(&ec->foreign, memory_order_relaxed) != 0)
    return autd3__echocat_foreign_master_error(ec, "during open");
  if ((e = recovery_create(ec)) != AUTD3_OK)
    return e;
  /* statistics count the caller's cycles only */
  for (int i = 0; i <= JIT_BUCKETS; i++)
    atomic_store(&ec->jit[i], 0);
  atomic_store(&ec->jit_n, 0), atomic_store(&ec->jit_max, 0), atomic_store(&ec->late, 0);
  atomic_store(&ec->frames, 0), atomic_store(&ec->cyc, 0), atomic_store(&ec->guard_waits, 0);
  atomic_store(&ec->unproven, 0);
  ec->first_call = true;
  atomic_store(&ec->running, true);
  ec->opt.ethercat.capture_path = NULL; /* the caller's string; the file is open */
  return AUTD3_OK;
}

/* Open: the adapter and its chain (probe), the configuration up to SAFE-OP,
 * the OP wait, then cyclic operation. */
autd3_err_t autd3__link_open_echocat(const autd3_link_option_t *option, const autd3_geometry_t *geometry,
                                     struct autd3_link **out) {
  const autd3_echocat_option_t *opt = &option->u.echocat;
  uint32_t send_cycle = 0;
  autd3_err_t e = validate(opt, &send_cycle);
  if (e != AUTD3_OK)
    return e;
  echocat_t *ec = calloc(1, sizeof *ec);
  if (!ec)
    return autd3_set_error(AUTD3_E_NOMEM, "echocat: out of memory");
  ec->opt = *opt;
  ec->opt.ethercat.interface = NULL; /* not kept: the caller owns the string */
  ec->period = send_cycle;
  const char *ifname = opt->ethercat.interface;
  uint16_t count = 0;
  if (ifname == NULL || strcmp(ifname, "auto") == 0)
    e = probe_auto(ec, &count);
  else
    e = probe(ec, ifname, &count);
  if (e == AUTD3_OK && (e = check_chain(ec, count, autd3_geometry_num_devices(geometry))) == AUTD3_OK) {
    autd3_link_init(&ec->base, &ec_vt, AUTD3_LINK_ECHOCAT, ec->n);
    autd3_link_set_measured(&ec->base, AUTD3_LINK_MEASURES_LOST | AUTD3_LINK_MEASURES_EXCHANGE | AUTD3_LINK_MEASURES_PHASE |
                                           AUTD3_LINK_MEASURES_DEVICE_STALE | AUTD3_LINK_MEASURES_DC_TIME);
    if ((e = configure(ec)) == AUTD3_OK && (e = cycle_init(ec)) == AUTD3_OK && (e = bring_up(ec)) == AUTD3_OK)
      e = start(ec);
  }
  if (e == AUTD3_OK) {
    *out = &ec->base;
    return AUTD3_OK;
  }
  if (ec->nic && ec->n) { /* best effort: leave the devices in INIT */
    uint8_t v[2];
    ecat_put16(v, AL_INIT);
    autd3__error_saved_t keep;
    autd3__error_save(&keep);
    autd3__echocat_dg1(ec, ECAT_BWR, 0, REG_ALCTL, v, 2, NULL, NULL);
    autd3__error_restore(&keep, e);
  }
  release(ec);
  return e;
}
