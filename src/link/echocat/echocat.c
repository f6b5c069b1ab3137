/*
 * echocat: the EtherCAT master dedicated to AUTD3 (link kind ECHOCAT).
 *
 * Bring-up follows the order real AUTD3 devices are known to accept (the
 * SOEM/EtherCrab AUTD links, shared/reference/autd3-link-layer.md §4.2 and
 * ethercat-for-autd3.md §7): count, station addresses, SII identity, PRE-OP,
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
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "link/echocat/ecat.h"
#include "link/link_internal.h"
#include "nic/nic.h"
#include "platform/platform.h"

#define AUTD3_VENDOR 0x000008A9u
#define AUTD3_PRODUCT 0x00000001u
#define AUTD3_NAME "AUTD"

#define SM2_START 0x1800
#define SM3_START 0x1F80
#define MAX_GROUPS ((AUTD3_MAX_DEVICES + 1) / 2)
#define OUT_BYTES AUTD3_TX_FRAME_BYTES
#define IN_BYTES AUTD3_RX_FRAME_BYTES
#define JIT_BUCKETS 2048 /* 1 µs buckets */
#define STATIC_DRIFT_ITER 10000 /* FRMW compares before cyclic operation (EtherCrab's count, §7.6) */
#define GUARD_NS 50000u          /* aim: outputs through the chain this long before SYNC0 */
#define MIN_LEAD_NS 30000u       /* try an edge only if at least this far ahead */
/* wait_next_cycle wakes this long (at most a fifth of the cycle) before the
 * outputs' own need: room for the wake-up latency (p99 60-120 µs on a loaded
 * VM), the caller's staging and the send. */
#define WAKE_MARGIN_NS 200000u
/* From the reference reading its clock to the last device holding the image:
 * ~1 µs per ESC hop plus a margin (ethercat-for-autd3.md §8.3: 200-600 ns hops). */
#define CHAIN_PASS_NS(n) (5000u + 1000u * (uint64_t)(n))
/* Time the devices get after SYNC0 to take, process and publish before the
 * inputs are read (the default device model needs 100 µs in FIFO mode). */
#define PROCESS_NS 300000u
#define RESOLVE_CAP_NS 20000000u /* wait at most this long for outputs of unknown fate */
#define STATION(k) ((uint16_t)(0x1000 + (k) + 1))
#define POSITION(k) ((uint16_t)(0u - (unsigned)(k)))

enum { SLOT_IDLE, SLOT_SENT, SLOT_DONE, SLOT_FAILED };
enum { MBX_IDLE, MBX_POSTED, MBX_SENT, MBX_DONE, MBX_FAILED };
enum { OWN_NONE, OWN_BUS, OWN_CHECKER };

/* A preallocated frame slot: the frame as built, then (after the reply) as returned. */
typedef struct slot {
  ecat_frame_t f;
  size_t wire;
  int state;
  bool accounted; /* output slot: its reference time was taken into last_slot */
  uint64_t sent_ns, rx_ns;
  ecat_dg_t dg[64];
} slot_t;

typedef struct slave {
  uint32_t vendor, product, revision;
  char name[33];
  uint16_t mbx_out_off, mbx_out_len, mbx_in_off, mbx_in_len;
  bool no_lrw;
  uint32_t delay;
  bool lost;
} slave_t;

typedef struct cycle_res {
  bool lost;     /* a frame did not come back */
  bool wkc_ok;   /* every working counter as expected */
  bool all_op;   /* BRD AL status == OP from every device */
} cycle_res_t;

typedef struct echocat {
  struct autd3_link base;
  autd3_echocat_option_t opt;
  char ifname[64];
  autd3_nic_t *nic;
  uint8_t mac[6];
  uint16_t n;
  slave_t sl[AUTD3_MAX_DEVICES];
  autd3_capture_t cap;
  uint8_t rxbuf[AUTD3_NIC_MAX_FRAME];

  /* DC / timing (bus thread after open) */
  uint64_t period;        /* host send cycle = slot spacing, ns */
  uint64_t sync0_start;   /* DC time of the first SYNC0 pulse */
  int64_t off;            /* DC system time - host monotonic, filtered */
  bool off_valid;
  uint64_t rtt_floor;     /* fastest recent round trip with a reference read */
  uint64_t lb_dc, lb_t;   /* DC lower bound: system time >= lb_dc + (now - lb_t) */
  bool silent;            /* the bus answered nothing to the last resolve wait */
  bool first_call;        /* next cycle is the caller's first after open */
  uint64_t last_slot;     /* DC time of the SYNC0 edge the last outputs were aimed at */
  double out_rtt_ns;      /* EMA: outputs sent -> the reference reads its clock behind them */
  double rd_rtt_ns;       /* EMA: read frame round trip */
  uint64_t read_ahead;    /* read frame leaves this long before an edge */
  uint8_t bus_idx;        /* 0x00..0x7F rolling: cyclic frames */
  uint8_t x_idx;          /* 0x80..0xFF rolling: transactions */
  int ngroups;
  slot_t out[MAX_GROUPS];
  uint16_t out_dc[MAX_GROUPS]; /* offset of the reference time read in each output frame */
  slot_t rd;
  uint16_t rd_frmw, rd_lrd, rd_brd; /* data offsets in the read frame */
  uint8_t *zero_tx;

  /* transactions (open, close, checker) */
  slot_t xs;
  atomic_bool running;  /* open finished: transactions go through the mailbox */
  atomic_int owner;
  atomic_int mbx;
  atomic_uint_fast64_t bus_cycles; /* cycle() calls, for the checker's "is anyone cycling" */
  autd3__mutex_t check_lock;       /* serialises check_state callers (user threads only) */
  uint64_t recoveries;
  bool problem;

  /* diagnostics (written by the bus thread, read anywhere) */
  atomic_uint jit[JIT_BUCKETS + 1];
  atomic_uint_fast64_t jit_n, jit_max, late, frames, cyc, guard_waits, unproven;
  atomic_bool rt_failed;
  atomic_uint_fast64_t diag_ra, diag_out; /* read_ahead and out_rtt_ns for other threads */
} echocat_t;

/* ---------------------------------------------------------------- low-level I/O */

static void slot_start(echocat_t *ec, slot_t *s, bool bus) {
  uint8_t idx = bus ? (uint8_t)(ec->bus_idx++ & 0x7F) : (uint8_t)(0x80 | (ec->x_idx++ & 0x7F));
  ecat_frame_init(&s->f, ec->mac, idx);
  s->state = SLOT_IDLE;
  s->accounted = false;
}

static autd3_err_t slot_send(echocat_t *ec, slot_t *s) {
  s->wire = ecat_frame_finish(&s->f);
  s->sent_ns = autd3__now_ns();
  autd3_err_t e = autd3__nic_send(ec->nic, s->f.buf, s->wire);
  if (ec->cap.f)
    autd3__capture_write(&ec->cap, s->f.buf, s->wire, autd3__realtime_ns());
  s->state = e == AUTD3_OK ? SLOT_SENT : SLOT_FAILED;
  return e;
}

/* Receive replies until none of `set` is SENT or `deadline` passes. A reply is
 * matched on the idx of its first datagram and on an unchanged datagram chain;
 * anything else (late replies of an earlier cycle, foreign frames) is ignored. */
static autd3_err_t collect_until(echocat_t *ec, slot_t **set, int n, uint64_t deadline, const slot_t *stop) {
  int pending = 0;
  for (int i = 0; i < n; i++)
    pending += set[i]->state == SLOT_SENT;
  while (pending > 0 && !(stop && stop->state == SLOT_DONE)) {
    size_t len = 0;
    autd3_err_t e = autd3__nic_recv(ec->nic, ec->rxbuf, sizeof ec->rxbuf, &len, deadline);
    if (e == AUTD3_E_TIMEOUT)
      break;
    if (e != AUTD3_OK)
      return e;
    uint64_t t = autd3__now_ns();
    if (ec->cap.f)
      autd3__capture_write(&ec->cap, ec->rxbuf, len, autd3__realtime_ns());
    if (len < ECAT_ETH_HDR + ECAT_HDR + ECAT_DG_OVERHEAD)
      continue;
    uint8_t idx = ec->rxbuf[ECAT_ETH_HDR + ECAT_HDR + 1];
    for (int i = 0; i < n; i++) {
      slot_t *s = set[i];
      if (s->state == SLOT_SENT && s->f.idx == idx && s->f.ndg <= 64 &&
          ecat_reply_matches(&s->f, s->wire, ec->rxbuf, len, s->dg)) {
        memcpy(s->f.buf, ec->rxbuf, len);
        s->rx_ns = t;
        s->state = SLOT_DONE;
        pending--;
        break;
      }
    }
  }
  return AUTD3_OK;
}

static autd3_err_t collect(echocat_t *ec, slot_t **set, int n, uint64_t deadline) {
  return collect_until(ec, set, n, deadline, NULL);
}

/* One exchange on the NIC from the calling thread: send, wait, resend with the
 * same idx on timeout (as SOEM does). */
static autd3_err_t xfer_direct(echocat_t *ec, slot_t *s, uint32_t timeout_us, int tries) {
  for (int t = 0; t < tries; t++) {
    autd3_err_t e = slot_send(ec, s);
    if (e != AUTD3_OK)
      return e;
    slot_t *set[1] = {s};
    e = collect(ec, set, 1, autd3__now_ns() + (uint64_t)timeout_us * 1000u);
    if (e != AUTD3_OK)
      return e;
    if (s->state == SLOT_DONE)
      return AUTD3_OK;
  }
  return autd3_set_error(AUTD3_E_TIMEOUT, "echocat %s: no reply to a frame after %d tries", ec->ifname, tries);
}

/* A transaction on ec->xs: direct during open/close, through the bus thread's
 * mailbox while cycle() runs, or direct again (ownership flag) when nobody cycles. */
static autd3_err_t xfer(echocat_t *ec, slot_t *s) {
  if (!atomic_load(&ec->running))
    return xfer_direct(ec, s, 20000, 3);
  s->wire = ecat_frame_finish(&s->f);
  for (int attempt = 0; attempt < 3; attempt++) {
    s->state = SLOT_IDLE;
    atomic_store(&ec->mbx, MBX_POSTED);
    uint64_t c0 = atomic_load(&ec->bus_cycles);
    uint64_t t0 = autd3__now_ns();
    for (;;) {
      int st = atomic_load(&ec->mbx);
      if (st == MBX_DONE) {
        atomic_store(&ec->mbx, MBX_IDLE);
        return AUTD3_OK;
      }
      if (st == MBX_FAILED)
        break;
      uint64_t waited = autd3__now_ns() - t0;
      if (st == MBX_POSTED && atomic_load(&ec->bus_cycles) - c0 < 2 && waited > 4 * ec->period + 20000000u) {
        /* Nobody is cycling: take the mailbox back and the NIC for ourselves. */
        int exp = MBX_POSTED;
        if (atomic_compare_exchange_strong(&ec->mbx, &exp, MBX_IDLE)) {
          int own = OWN_NONE;
          if (atomic_compare_exchange_strong(&ec->owner, &own, OWN_CHECKER)) {
            autd3_err_t e = xfer_direct(ec, s, 20000, 3);
            atomic_store(&ec->owner, OWN_NONE);
            return e;
          }
          break; /* the bus thread just started: post again */
        }
        continue;
      }
      if (waited > 1000000000ull) { /* the bus thread holds it without answering: give up */
        int exp = MBX_POSTED;
        atomic_compare_exchange_strong(&ec->mbx, &exp, MBX_IDLE);
        return autd3_set_error(AUTD3_E_TIMEOUT, "echocat %s: bus thread did not serve a state-check frame", ec->ifname);
      }
      autd3__sleep_ns(100000);
    }
    atomic_store(&ec->mbx, MBX_IDLE);
  }
  return autd3_set_error(AUTD3_E_TIMEOUT, "echocat %s: no reply to a state-check frame", ec->ifname);
}

/* Per-slave datagrams: for each slave in `list`, the datagrams `spec` addressed
 * by station address (or position when by_pos), data from `in` (per-slave
 * stride = sum of lengths; NULL = zeros) and results into `out` (same layout;
 * may be NULL) and wkc[i*nspec + j]. Frames are split at slave boundaries. */
typedef struct dgspec {
  uint8_t cmd;
  uint16_t ado;
  uint16_t len;
} dgspec_t;

static autd3_err_t each(echocat_t *ec, const uint16_t *list, int cnt, bool by_pos, const dgspec_t *spec, int nspec,
                        const uint8_t *in, uint8_t *out, uint16_t *wkc) {
  size_t stride = 0, need = 0;
  for (int j = 0; j < nspec; j++)
    stride += spec[j].len, need += spec[j].len + ECAT_DG_OVERHEAD;
  int i = 0;
  while (i < cnt) {
    slot_t *s = &ec->xs;
    slot_start(ec, s, false);
    int first = i;
    uint16_t offs[64];
    int nd = 0;
    while (i < cnt && nd + nspec <= 64 && (size_t)ecat_frame_room(&s->f) + ECAT_DG_OVERHEAD >= need) {
      uint16_t k = list[i];
      uint16_t adp = by_pos ? POSITION(k) : STATION(k);
      size_t o = 0;
      for (int j = 0; j < nspec; j++) {
        offs[nd++] = ecat_dg_add(&s->f, spec[j].cmd, adp, spec[j].ado, in ? in + (size_t)k * stride + o : NULL, spec[j].len);
        o += spec[j].len;
      }
      i++;
    }
    if (i == first)
      return autd3_set_error(AUTD3_E_INTERNAL, "echocat: datagram set does not fit a frame");
    autd3_err_t e = xfer(ec, s);
    if (e != AUTD3_OK)
      return e;
    nd = 0;
    for (int q = first; q < i; q++) {
      size_t o = 0;
      for (int j = 0; j < nspec; j++, nd++) {
        if (out)
          memcpy(out + (size_t)list[q] * stride + o, s->f.buf + offs[nd], spec[j].len);
        if (wkc)
          wkc[(size_t)list[q] * nspec + j] = ecat_get16(s->f.buf + offs[nd] + spec[j].len);
        o += spec[j].len;
      }
    }
  }
  return AUTD3_OK;
}

/* One datagram in one frame. */
static autd3_err_t dg1(echocat_t *ec, uint8_t cmd, uint16_t adp, uint16_t ado, const void *data, uint16_t len,
                       void *out, uint16_t *wkc) {
  slot_t *s = &ec->xs;
  slot_start(ec, s, false);
  uint16_t o = ecat_dg_add(&s->f, cmd, adp, ado, data, len);
  autd3_err_t e = xfer(ec, s);
  if (e != AUTD3_OK)
    return e;
  if (out)
    memcpy(out, s->f.buf + o, len);
  if (wkc)
    *wkc = ecat_get16(s->f.buf + o + len);
  return AUTD3_OK;
}

static void list_range(uint16_t *list, int first, int cnt) {
  for (int i = 0; i < cnt; i++)
    list[i] = (uint16_t)(first + i);
}

/* ---------------------------------------------------------------- SII */

/* Read 4 words at `word` from every slave in list into out[k*8] (ESCs without
 * 8-byte reads are asked twice). §3.4: FPWR 0x0502 {cmd 0x0100, address}, poll
 * busy, FPRD 0x0508. */
static autd3_err_t eep_read(echocat_t *ec, const uint16_t *list, int cnt, uint16_t word, uint8_t *out) {
  for (int half = 0; half < 2; half++) {
    uint8_t cmd[AUTD3_MAX_DEVICES * 6] = {0};
    for (int i = 0; i < cnt; i++) {
      uint8_t *c = cmd + (size_t)list[i] * 6;
      ecat_put16(c, 0x0100);
      ecat_put32(c + 2, (uint32_t)word + (uint32_t)half * 2);
    }
    const dgspec_t wr = {ECAT_FPWR, REG_EEPCTL, 6};
    autd3_err_t e = each(ec, list, cnt, false, &wr, 1, cmd, NULL, NULL);
    if (e != AUTD3_OK)
      return e;
    uint8_t st[AUTD3_MAX_DEVICES * 14];
    uint16_t wkc[AUTD3_MAX_DEVICES];
    const dgspec_t rd = {ECAT_FPRD, REG_EEPCTL, 14};
    bool all8 = true;
    for (int poll = 0;; poll++) {
      e = each(ec, list, cnt, false, &rd, 1, NULL, st, wkc);
      if (e != AUTD3_OK)
        return e;
      bool busy = false;
      for (int i = 0; i < cnt; i++) {
        uint16_t k = list[i];
        uint16_t status = ecat_get16(st + (size_t)k * 14);
        if (wkc[k] != 1)
          return autd3_set_error(AUTD3_E_IO, "echocat %s: device %u did not answer an EEPROM read", ec->ifname, k);
        if (status & 0x8000)
          busy = true;
        else if (status & 0x2000)
          return autd3_set_error(AUTD3_E_IO, "echocat %s: device %u EEPROM read of word 0x%04x failed (status 0x%04x)",
                                 ec->ifname, k, word, status);
        if (!(status & 0x0040))
          all8 = false;
      }
      if (!busy)
        break;
      if (poll > 200)
        return autd3_set_error(AUTD3_E_TIMEOUT, "echocat %s: EEPROM stays busy", ec->ifname);
      if (!atomic_load(&ec->running))
        autd3__sleep_ns(50000);
    }
    for (int i = 0; i < cnt; i++) {
      uint16_t k = list[i];
      memcpy(out + (size_t)k * 8 + half * 4, st + (size_t)k * 14 + 6, half ? 4 : (all8 ? 8 : 4));
    }
    if (all8)
      break;
  }
  return AUTD3_OK;
}

/* Identity, mailbox, name (string 1, as SOEM and the AUTD links read it) and
 * the General "not LRW" flag of every slave in list. */
static autd3_err_t sii_read(echocat_t *ec, const uint16_t *list, int cnt) {
  uint8_t tmp[AUTD3_MAX_DEVICES * 8];
  autd3_err_t e;
  if ((e = eep_read(ec, list, cnt, 0x08, tmp)) != AUTD3_OK)
    return e;
  for (int i = 0; i < cnt; i++) {
    slave_t *s = &ec->sl[list[i]];
    s->vendor = ecat_get32(tmp + list[i] * 8);
    s->product = ecat_get32(tmp + list[i] * 8 + 4);
  }
  if ((e = eep_read(ec, list, cnt, 0x0C, tmp)) != AUTD3_OK)
    return e;
  for (int i = 0; i < cnt; i++)
    ec->sl[list[i]].revision = ecat_get32(tmp + list[i] * 8);
  if ((e = eep_read(ec, list, cnt, 0x18, tmp)) != AUTD3_OK)
    return e;
  for (int i = 0; i < cnt; i++) {
    slave_t *s = &ec->sl[list[i]];
    const uint8_t *p = tmp + list[i] * 8;
    s->mbx_out_off = ecat_get16(p), s->mbx_out_len = ecat_get16(p + 2);
    s->mbx_in_off = ecat_get16(p + 4), s->mbx_in_len = ecat_get16(p + 6);
    s->name[0] = 0;
    s->no_lrw = false;
  }
  /* Category walk from word 0x40, one slave at a time, 8 bytes per read. */
  for (int i = 0; i < cnt; i++) {
    uint16_t k = list[i];
    uint16_t one[1] = {k};
    uint8_t blk[AUTD3_MAX_DEVICES * 8];
    uint32_t cached = UINT32_MAX;
    uint8_t data[8];
#define SII_BYTE(addr, dst)                                                           \
  do {                                                                                \
    uint32_t a_ = (addr), w_ = (a_ / 2) & ~3u;                                        \
    if (w_ != cached) {                                                               \
      if ((e = eep_read(ec, one, 1, (uint16_t)w_, blk)) != AUTD3_OK) return e;        \
      memcpy(data, blk + (size_t)k * 8, 8);                                           \
      cached = w_;                                                                    \
    }                                                                                 \
    (dst) = data[a_ - w_ * 2];                                                        \
  } while (0)
    uint32_t a = 0x80; /* byte address of word 0x40 */
    bool have_name = false, have_general = false;
    for (int cat = 0; cat < 32 && a < 8192 && !(have_name && have_general); cat++) {
      uint8_t b0, b1, b2, b3;
      SII_BYTE(a, b0);
      SII_BYTE(a + 1, b1);
      SII_BYTE(a + 2, b2);
      SII_BYTE(a + 3, b3);
      uint16_t type = (uint16_t)(b0 | b1 << 8), words = (uint16_t)(b2 | b3 << 8);
      if (type == 0xFFFF)
        break;
      uint32_t d = a + 4;
      if (type == 10 && !have_name) { /* strings: count, then (len, chars)...; string 1 is the name */
        uint8_t count, slen;
        SII_BYTE(d, count);
        if (count > 0) {
          SII_BYTE(d + 1, slen);
          if (slen > 32)
            slen = 32;
          for (uint8_t c = 0; c < slen; c++)
            SII_BYTE(d + 2 + c, ec->sl[k].name[c]);
          ec->sl[k].name[slen] = 0;
        }
        have_name = true;
      } else if (type == 30 && words >= 6) { /* General: byte 11 bit 0x02 = use LRD/LWR (§4.2) */
        uint8_t flags;
        SII_BYTE(d + 11, flags);
        ec->sl[k].no_lrw = (flags & 0x02) != 0;
        have_general = true;
      }
      a = d + (uint32_t)words * 2;
    }
#undef SII_BYTE
  }
  return AUTD3_OK;
}

static bool is_autd(const slave_t *s) {
  return s->vendor == AUTD3_VENDOR && s->product == AUTD3_PRODUCT && strcmp(s->name, AUTD3_NAME) == 0;
}

static autd3_err_t check_identity(echocat_t *ec, const uint16_t *list, int cnt) {
  for (int i = 0; i < cnt; i++) {
    const slave_t *s = &ec->sl[list[i]];
    if (!is_autd(s))
      return autd3_set_error(AUTD3_E_NOT_AUTD,
                             "echocat %s: slave at position %u (vendor 0x%08x, product 0x%08x, name \"%s\") is not an "
                             "AUTD3 device (expected vendor 0x%08x, product 0x%08x, name \"%s\")",
                             ec->ifname, list[i], s->vendor, s->product, s->name, AUTD3_VENDOR, AUTD3_PRODUCT, AUTD3_NAME);
  }
  return AUTD3_OK;
}

/* ---------------------------------------------------------------- states */

static const char *al_name(uint8_t st) {
  switch (st & 0x0F) {
  case AL_INIT: return "INIT";
  case AL_PREOP: return "PRE-OP";
  case AL_BOOT: return "BOOT";
  case AL_SAFEOP: return "SAFE-OP";
  case AL_OP: return "OP";
  default: return "NONE";
  }
}

static autd3_err_t request_state(echocat_t *ec, const uint16_t *list, int cnt, uint16_t state) {
  uint8_t v[AUTD3_MAX_DEVICES * 2] = {0};
  for (int i = 0; i < cnt; i++)
    ecat_put16(v + (size_t)list[i] * 2, state);
  const dgspec_t sp = {ECAT_FPWR, REG_ALCTL, 2};
  return each(ec, list, cnt, false, &sp, 1, v, NULL, NULL);
}

/* AL status (+code) of every slave in list: al[k] = status low byte (0 if no answer), code[k]. */
static autd3_err_t read_states(echocat_t *ec, const uint16_t *list, int cnt, uint8_t *al, uint16_t *code, uint16_t *wkc) {
  uint8_t st[AUTD3_MAX_DEVICES * 6];
  const dgspec_t sp = {ECAT_FPRD, REG_ALSTAT, 6};
  autd3_err_t e = each(ec, list, cnt, false, &sp, 1, NULL, st, wkc);
  if (e != AUTD3_OK)
    return e;
  for (int i = 0; i < cnt; i++) {
    uint16_t k = list[i];
    al[k] = wkc[k] ? st[k * 6] : 0;
    code[k] = wkc[k] ? ecat_get16(st + k * 6 + 4) : 0;
  }
  return AUTD3_OK;
}

/* Wait until every slave in list reports `state`; a slave that raises the
 * error flag fails at once with its AL status code. */
static autd3_err_t wait_state(echocat_t *ec, const uint16_t *list, int cnt, uint8_t state, uint32_t timeout_ms) {
  uint64_t end = autd3__now_ns() + (uint64_t)timeout_ms * 1000000u;
  uint8_t al[AUTD3_MAX_DEVICES];
  uint16_t code[AUTD3_MAX_DEVICES], wkc[AUTD3_MAX_DEVICES];
  for (;;) {
    autd3_err_t e = read_states(ec, list, cnt, al, code, wkc);
    if (e != AUTD3_OK && e != AUTD3_E_TIMEOUT)
      return e;
    int bad = -1;
    if (e == AUTD3_OK) {
      for (int i = 0; i < cnt && bad < 0; i++) {
        uint16_t k = list[i];
        if (wkc[k] == 1 && (al[k] & AL_ERROR))
          return autd3_set_error(AUTD3_E_STATE_TIMEOUT,
                                 "echocat %s: device %u refused %s: state %s+ERROR, AL status code 0x%04x", ec->ifname, k,
                                 al_name(state), al_name(al[k]), code[k]);
        if (wkc[k] != 1 || (al[k] & 0x0F) != state)
          bad = k;
      }
      if (bad < 0)
        return AUTD3_OK;
    }
    if (autd3__now_ns() > end) {
      if (bad < 0)
        return autd3_set_error(AUTD3_E_STATE_TIMEOUT, "echocat %s: no answer while waiting for %s", ec->ifname, al_name(state));
      return autd3_set_error(AUTD3_E_STATE_TIMEOUT,
                             "echocat %s: device %d did not reach %s within %u ms (state %s, AL status code 0x%04x%s)",
                             ec->ifname, bad, al_name(state), timeout_ms, wkc[bad] ? al_name(al[bad]) : "no answer",
                             code[bad], wkc[bad] ? "" : ", lost");
    }
    if (!atomic_load(&ec->running))
      autd3__sleep_ns(1000000);
  }
}

/* ---------------------------------------------------------------- bring-up steps */

/* Count the slaves: BRD of register 0x0000, the working counter is the count (§7.2). */
static autd3_err_t count_slaves(echocat_t *ec, uint16_t *count) {
  slot_t *s = &ec->xs;
  slot_start(ec, s, false);
  uint8_t v[2];
  ecat_put16(v, AL_INIT | AL_ACK);
  ecat_dg_add(&s->f, ECAT_BWR, 0, REG_ALCTL, v, 2);
  uint16_t o = ecat_dg_add(&s->f, ECAT_BRD, 0, REG_TYPE, NULL, 2);
  autd3_err_t e = xfer_direct(ec, s, 20000, 3);
  if (e == AUTD3_E_TIMEOUT) {
    *count = 0;
    return AUTD3_OK;
  }
  if (e != AUTD3_OK)
    return e;
  *count = ecat_get16(s->f.buf + o + 2);
  return AUTD3_OK;
}

/* Back to defaults (§7.2 step 2), all broadcast in one frame. */
static autd3_err_t reset_slaves(echocat_t *ec) {
  slot_t *s = &ec->xs;
  slot_start(ec, s, false);
  uint8_t z[48] = {0}, v[2];
  ecat_dg_add(&s->f, ECAT_BWR, 0, REG_DLCTL + 1, z, 1);         /* auto loop control */
  ecat_dg_add(&s->f, ECAT_BWR, 0, REG_FMMU0, z, 48);            /* FMMU0-2 off */
  ecat_dg_add(&s->f, ECAT_BWR, 0, REG_SM0, z, 32);              /* SM0-3 off */
  ecat_dg_add(&s->f, ECAT_BWR, 0, REG_DCACT, z, 1);             /* SYNC off */
  ecat_put16(v, 0x1000);
  ecat_dg_add(&s->f, ECAT_BWR, 0, REG_DCSPEED, v, 2);           /* DC loop bandwidth, resets the filter */
  ecat_put16(v, 0x0C00);
  ecat_dg_add(&s->f, ECAT_BWR, 0, REG_DCFILT, v, 2);
  ecat_put16(v, 2);
  ecat_dg_add(&s->f, ECAT_BWR, 0, REG_EEPCFG, v, 1);            /* force EEPROM to ECAT... */
  ecat_dg_add(&s->f, ECAT_BWR, 0, REG_EEPCFG, z, 1);            /* ...and keep it there */
  ecat_put16(v, AL_INIT | AL_ACK);
  ecat_dg_add(&s->f, ECAT_BWR, 0, REG_ALCTL, v, 2);
  return xfer_direct(ec, s, 20000, 3);
}

/* Station addresses 0x1001.. by position (APWR, §7.2 step 3). */
static autd3_err_t assign_addresses(echocat_t *ec, const uint16_t *list, int cnt) {
  uint8_t v[AUTD3_MAX_DEVICES * 2] = {0};
  uint16_t wkc[AUTD3_MAX_DEVICES];
  for (int i = 0; i < cnt; i++)
    ecat_put16(v + (size_t)list[i] * 2, STATION(list[i]));
  const dgspec_t sp = {ECAT_APWR, REG_STADR, 2};
  autd3_err_t e = each(ec, list, cnt, true, &sp, 1, v, NULL, wkc);
  if (e != AUTD3_OK)
    return e;
  for (int i = 0; i < cnt; i++)
    if (wkc[list[i]] != 1)
      return autd3_set_error(AUTD3_E_IO, "echocat %s: slave at position %u did not take its station address", ec->ifname,
                             list[i]);
  return AUTD3_OK;
}

/* SM0/SM1 for the mailbox where the SII declares one, then PRE-OP. */
static autd3_err_t to_preop(echocat_t *ec, const uint16_t *list, int cnt) {
  uint8_t sm[AUTD3_MAX_DEVICES * 16] = {0};
  uint16_t mlist[AUTD3_MAX_DEVICES];
  int m = 0;
  for (int i = 0; i < cnt; i++) {
    const slave_t *s = &ec->sl[list[i]];
    if (s->mbx_out_len == 0)
      continue;
    uint8_t *p = sm + (size_t)list[i] * 16;
    memset(p, 0, 16);
    ecat_put16(p, s->mbx_out_off), ecat_put16(p + 2, s->mbx_out_len), p[4] = 0x26, p[6] = 1;
    ecat_put16(p + 8, s->mbx_in_off), ecat_put16(p + 10, s->mbx_in_len), p[12] = 0x22, p[14] = 1;
    mlist[m++] = list[i];
  }
  const dgspec_t sp = {ECAT_FPWR, REG_SM0, 16};
  autd3_err_t e = m ? each(ec, mlist, m, false, &sp, 1, sm, NULL, NULL) : AUTD3_OK;
  if (e == AUTD3_OK)
    e = request_state(ec, list, cnt, AL_PREOP | AL_ACK);
  if (e == AUTD3_OK)
    e = wait_state(ec, list, cnt, AL_PREOP, ec->opt.ethercat.state_timeout_ms);
  return e;
}

/* SM2/SM3 and FMMU0/1 (§3.5, §3.6): all outputs first (626 per device), then all inputs (2 per device). */
static autd3_err_t map_pdo(echocat_t *ec, const uint16_t *list, int cnt) {
  uint8_t cfg[AUTD3_MAX_DEVICES * 48] = {0};
  for (int i = 0; i < cnt; i++) {
    uint16_t k = list[i];
    uint8_t *p = cfg + (size_t)k * 48;
    memset(p, 0, 48);
    ecat_put16(p, SM2_START), ecat_put16(p + 2, OUT_BYTES), p[4] = 0x64, p[6] = 1; /* SM2 outputs */
    ecat_put16(p + 8, SM3_START), ecat_put16(p + 10, IN_BYTES), p[12] = 0x20, p[14] = 1; /* SM3 inputs */
    uint8_t *f = p + 16;
    ecat_put32(f, (uint32_t)k * OUT_BYTES), ecat_put16(f + 4, OUT_BYTES), f[7] = 7;
    ecat_put16(f + 8, SM2_START), f[11] = 2, f[12] = 1; /* write */
    f += 16;
    ecat_put32(f, (uint32_t)ec->n * OUT_BYTES + (uint32_t)k * IN_BYTES), ecat_put16(f + 4, IN_BYTES), f[7] = 7;
    ecat_put16(f + 8, SM3_START), f[11] = 1, f[12] = 1; /* read */
  }
  const dgspec_t sp[2] = {{ECAT_FPWR, REG_SM2, 16}, {ECAT_FPWR, REG_FMMU0, 32}};
  uint16_t wkc[AUTD3_MAX_DEVICES * 2];
  autd3_err_t e = each(ec, list, cnt, false, sp, 2, cfg, NULL, wkc);
  if (e != AUTD3_OK)
    return e;
  for (int i = 0; i < cnt; i++)
    if (wkc[list[i] * 2] != 1 || wkc[list[i] * 2 + 1] != 1)
      return autd3_set_error(AUTD3_E_IO, "echocat %s: device %u refused its SM/FMMU configuration", ec->ifname, list[i]);
  return AUTD3_OK;
}

/* The DC system time is at least dc + (h - t_recv) at host time h: the
 * reference read `dc` before the reply arrived at t_recv. Keep the strongest
 * such lower bound (it needs no estimate, so it guards the one-image rule). */
static void dc_bound(echocat_t *ec, uint64_t dc, uint64_t t_recv) {
  if (ec->lb_t == 0 || (int64_t)(dc - ec->lb_dc) > (int64_t)(t_recv - ec->lb_t)) {
    ec->lb_dc = dc;
    ec->lb_t = t_recv;
  }
}

/* Filtered DC offset (system time - host monotonic) from one round trip with
 * a reference read: the reference read its clock about halfway through. Only
 * round trips close to the fastest seen count (a stalled peer or thread makes
 * the midpoint meaningless); the floor creeps up slowly if the path slows. */
static void dc_sample(echocat_t *ec, uint64_t dc, uint64_t t_send, uint64_t t_recv) {
  uint64_t rtt = t_recv - t_send;
  if (dc == 0)
    return; /* nobody read the reference (it did not answer): the data is what we sent */
  dc_bound(ec, dc, t_recv);
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

/* Offsets, delays (§8.1) and static drift compensation for the slaves in list.
 * `initial`: all slaves, the system time starts at the host's wall clock;
 * else: the reference's current system time is the base (re-plugged device). */
static autd3_err_t dc_config(echocat_t *ec, const uint16_t *list, int cnt, bool initial) {
  slot_t *s = &ec->xs;
  uint8_t z[8] = {0};
  /* latch receive times in every slave */
  slot_start(ec, s, false);
  ecat_dg_add(&s->f, ECAT_BWR, 0, REG_DCRT0, z, 4);
  autd3_err_t e = xfer(ec, s);
  if (e != AUTD3_OK)
    return e;
  uint64_t master = autd3__realtime_ns() - ECAT_EPOCH_OFFSET_NS;
  uint8_t rt[AUTD3_MAX_DEVICES * 24];
  uint16_t all[AUTD3_MAX_DEVICES];
  list_range(all, 0, ec->n);
  const dgspec_t sp[2] = {{ECAT_FPRD, REG_DCRT0, 16}, {ECAT_FPRD, REG_DCRTPU, 8}};
  uint16_t wkc[AUTD3_MAX_DEVICES * 2];
  if (initial) {
    if ((e = each(ec, all, ec->n, false, sp, 2, NULL, rt, wkc)) != AUTD3_OK)
      return e;
    uint32_t rt0[AUTD3_MAX_DEVICES], rt1[AUTD3_MAX_DEVICES], delay[AUTD3_MAX_DEVICES];
    for (int k = 0; k < ec->n; k++) {
      rt0[k] = ecat_get32(rt + k * 24);
      rt1[k] = ecat_get32(rt + k * 24 + 4);
    }
    ecat_dc_line_delays(ec->n, rt0, rt1, delay);
    for (int k = 0; k < ec->n; k++)
      ec->sl[k].delay = delay[k];
  } else {
    /* only the reference and the slaves in list are read */
    uint16_t rl[AUTD3_MAX_DEVICES + 1];
    int m = 0;
    rl[m++] = 0;
    for (int i = 0; i < cnt; i++)
      if (list[i] != 0)
        rl[m++] = list[i];
    if ((e = each(ec, rl, m, false, sp, 2, NULL, rt, wkc)) != AUTD3_OK)
      return e;
    uint8_t ofs[8];
    uint16_t w;
    if ((e = dg1(ec, ECAT_FPRD, STATION(0), REG_DCOFS, NULL, 8, ofs, &w)) != AUTD3_OK)
      return e;
    master = ecat_get64(rt + 16) + ecat_get64(ofs); /* the reference's system time at the latch */
  }
  /* offset_k = system time at the latch - local latch time + delay_k, so every
   * clock agrees with the reference (delay included) from the start. */
  uint8_t wr[AUTD3_MAX_DEVICES * 12] = {0};
  for (int i = 0; i < cnt; i++) {
    uint16_t k = list[i];
    uint64_t local = ecat_get64(rt + k * 24 + 16);
    ecat_put64(wr + (size_t)k * 12, master - local + ec->sl[k].delay);
    ecat_put32(wr + (size_t)k * 12 + 8, ec->sl[k].delay);
  }
  const dgspec_t wsp[2] = {{ECAT_FPWR, REG_DCOFS, 8}, {ECAT_FPWR, REG_DCDELAY, 4}};
  if ((e = each(ec, list, cnt, false, wsp, 2, wr, NULL, NULL)) != AUTD3_OK)
    return e;
  if (!initial)
    return AUTD3_OK; /* the cyclic FRMW keeps a re-plugged device locked */
  /* Static drift compensation: many FRMW of the reference's system time; 64
   * compares per frame, each datagram is one compare in every other slave. */
  for (int done = 0; done < STATIC_DRIFT_ITER;) {
    slot_start(ec, s, false);
    uint16_t o0 = 0;
    int m = 0;
    while (m < 64 && done + m < STATIC_DRIFT_ITER) {
      uint16_t o = ecat_dg_add(&s->f, ECAT_FRMW, STATION(0), REG_DCSYS, NULL, 8);
      if (!o)
        break;
      if (m == 0)
        o0 = o;
      m++;
    }
    if ((e = xfer_direct(ec, s, 20000, 3)) != AUTD3_OK)
      return e;
    dc_sample(ec, ecat_get64(s->f.buf + o0), s->sent_ns, s->rx_ns);
    done += m;
  }
  return AUTD3_OK;
}

/* Wait until every non-reference clock agrees (AUTD link's wait_for_sync,
 * autd3-link-layer.md §4.2 step 5): FRMW every 1 ms, read 0x092C every 10 ms,
 * EMA (alpha 0.2) of the signed difference, done when max |ema| < tolerance. */
static autd3_err_t wait_sync(echocat_t *ec) {
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
    slot_start(ec, s, false);
    uint16_t of = ecat_dg_add(&s->f, ECAT_FRMW, STATION(0), REG_DCSYS, NULL, 8);
    bool read = ec->n > 1 && iter % 10 == 9;
    uint16_t od[CHUNK];
    int k0 = 1 + (reads * CHUNK) % (ec->n - 1 > 0 ? ec->n - 1 : 1), nk = 0;
    for (int k = k0; read && k < ec->n && nk < CHUNK; k++)
      od[nk++] = ecat_dg_add(&s->f, ECAT_FPRD, STATION(k), REG_DCDIFF, NULL, 4);
    autd3_err_t e = xfer_direct(ec, s, 5000, 2);
    if (e == AUTD3_OK) {
      dc_sample(ec, ecat_get64(s->f.buf + of), s->sent_ns, s->rx_ns);
      if (ec->n == 1 && iter >= 20)
        return AUTD3_OK; /* a single clock is its own reference: only the phase estimate was needed */
      if (read) {
        reads++;
        for (int i = 0; i < nk; i++) {
          int k = k0 + i;
          double v = (double)ecat_dc_diff_decode(ecat_get32(s->f.buf + od[i]));
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
 * first pulse on the common grid at least 100 ms ahead (§8.2). */
static autd3_err_t sync0_on(echocat_t *ec, const uint16_t *list, int cnt) {
  uint8_t t1b[8];
  uint16_t w;
  autd3_err_t e = dg1(ec, ECAT_FPRD, STATION(0), REG_DCSYS, NULL, 8, t1b, &w);
  if (e != AUTD3_OK)
    return e;
  uint64_t t1 = ecat_get64(t1b);
  const autd3_ethercat_option_t *o = &ec->opt.ethercat;
  uint64_t start;
  if (ec->sync0_start == 0)
    start = ec->sync0_start = ecat_dc_sync0_start(t1, o->sync0_period_ns, o->sync0_shift_ns);
  else
    start = ecat_dc_next_edge(ec->sync0_start, o->sync0_period_ns, t1 + 100000000u);
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
  return each(ec, list, cnt, false, sp, 5, v, NULL, NULL);
}

/* ---------------------------------------------------------------- the cycle */

static void jitter_record(echocat_t *ec, int64_t late_ns) {
  uint64_t us = late_ns <= 0 ? 0 : (uint64_t)late_ns / 1000u;
  atomic_fetch_add_explicit(&ec->jit[us < JIT_BUCKETS ? us : JIT_BUCKETS], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&ec->jit_n, 1, memory_order_relaxed);
  uint64_t m = atomic_load_explicit(&ec->jit_max, memory_order_relaxed);
  if (late_ns > 0 && (uint64_t)late_ns > m)
    atomic_store_explicit(&ec->jit_max, (uint64_t)late_ns, memory_order_relaxed);
}

/* Time the outputs need before an edge: their measured round trip plus a guard. */
static uint64_t out_need(const echocat_t *ec) { return (uint64_t)ec->out_rtt_ns + GUARD_NS; }

static void update_read_ahead(echocat_t *ec) {
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
    dc_bound(ec, passed, s->rx_ns);
    uint64_t taken = ecat_dc_next_edge(ec->sync0_start, sync0, passed + CHAIN_PASS_NS(ec->n));
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
  collect_until(ec, set, n, autd3__now_ns() + RESOLVE_CAP_NS, &ec->rd);
  bool any = ec->rd.state == SLOT_DONE;
  for (int i = 0; i + 1 < n; i++)
    any = any || set[i]->state == SLOT_DONE;
  ec->silent = !any;
  account_outputs(ec);
  if (ec->rd.state == SLOT_DONE && ec->rd.dg[0].wkc)
    dc_bound(ec, ecat_get64(ec->rd.f.buf + ec->rd_frmw), ec->rd.rx_ns);
}

/* The devices' DC time at host time `now`: the phase estimate, or the proven
 * lower bound if the estimate lags behind it. */
static uint64_t dc_at(const echocat_t *ec, uint64_t now) {
  uint64_t dc = (uint64_t)((int64_t)now + ec->off);
  if (ec->lb_t && ec->lb_dc + (now - ec->lb_t) > dc)
    dc = ec->lb_dc + (now - ec->lb_t);
  return dc;
}

/* The SYNC0 edge outputs sent at host time `now` aim at: the next one at least
 * MIN_LEAD ahead, and never one that may already hold an image of ours (one
 * image per SYNC0: the devices keep only the newest SM2 buffer). */
static uint64_t aim_edge(const echocat_t *ec, uint64_t now) {
  uint64_t slot = ecat_dc_next_edge(ec->sync0_start, ec->period, dc_at(ec, now) + MIN_LEAD_NS);
  if (ec->last_slot && slot <= ec->last_slot)
    slot = ec->last_slot + ec->period;
  return slot;
}

static autd3_err_t cycle_core(echocat_t *ec, const uint8_t *tx, uint8_t *rx, cycle_res_t *res) {
  const uint16_t n = ec->n;
  resolve_previous(ec);
  uint64_t now = autd3__now_ns();
  /* 0. The one-image rule must not rest on the phase estimate: outputs may
   * only leave once the devices' clock is provably past the edge the previous
   * image was aimed at (normally true long before: the read frame proved it). */
  if (ec->last_slot && ec->lb_t) {
    int64_t short_by = (int64_t)(ec->last_slot + 1000u - ec->lb_dc) - (int64_t)(now - ec->lb_t);
    if (short_by > 0) {
      if ((uint64_t)short_by > 2 * ec->period)
        short_by = (int64_t)(2 * ec->period);
      autd3__sleep_until_ns(now + (uint64_t)short_by, 0);
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
    slot_start(ec, s, true);
    ecat_dg_add(&s->f, ECAT_LWR, (uint16_t)log, (uint16_t)(log >> 16), tx + log, (uint16_t)(m * OUT_BYTES));
    /* The reference clock's system time right after the outputs passed it:
     * tells, in the devices' own time base, whether they had the image
     * before the edge (no host-side estimate involved). */
    ec->out_dc[g] = ecat_dg_add(&s->f, ECAT_FPRD, STATION(0), REG_DCSYS, NULL, 8);
    slot_send(ec, s); /* a failed send leaves the slot FAILED: counted as lost below */
    set[ns++] = s;
  }
  uint64_t next_edge_host = (uint64_t)((int64_t)(slot + ec->period) - ec->off);
  uint64_t deadline = next_edge_host - ec->read_ahead;
  ec->last_slot = slot; /* until the replies say otherwise (after step 3) */

  /* 2. The read frame, `read_ahead` before the following edge. The output
   * replies waited in the socket meanwhile: take them first without polling
   * (one system call per frame instead of poll + receive). */
  autd3__sleep_until_ns(deadline, ec->opt.spin_ns);
  collect(ec, set, ns, 0);
  slot_t *r = &ec->rd;
  slot_start(ec, r, true);
  ec->rd_frmw = ecat_dg_add(&r->f, ECAT_FRMW, STATION(0), REG_DCSYS, NULL, 8);
  uint32_t inlog = (uint32_t)n * OUT_BYTES;
  ec->rd_lrd = ecat_dg_add(&r->f, ECAT_LRD, (uint16_t)inlog, (uint16_t)(inlog >> 16), NULL, (uint16_t)(n * IN_BYTES));
  ec->rd_brd = ecat_dg_add(&r->f, ECAT_BRD, 0, REG_ALSTAT, NULL, 2);
  slot_send(ec, r);
  jitter_record(ec, (int64_t)(r->sent_ns - deadline));
  set[ns++] = r;
  int mb = MBX_POSTED;
  bool mbx = atomic_compare_exchange_strong(&ec->mbx, &mb, MBX_SENT);
  if (mbx) {
    ec->xs.state = SLOT_IDLE;
    ec->xs.sent_ns = autd3__now_ns();
    if (autd3__nic_send(ec->nic, ec->xs.f.buf, ec->xs.wire) == AUTD3_OK) {
      ec->xs.state = SLOT_SENT;
      if (ec->cap.f)
        autd3__capture_write(&ec->cap, ec->xs.f.buf, ec->xs.wire, autd3__realtime_ns());
    }
    set[ns++] = &ec->xs;
  }
  atomic_fetch_add_explicit(&ec->frames, (uint64_t)ns, memory_order_relaxed);
  atomic_fetch_add_explicit(&ec->cyc, 1, memory_order_relaxed);

  /* 3. Replies: wait no longer than the caller's next outputs can afford. */
  uint64_t rx_deadline = next_edge_host - MIN_LEAD_NS - 20000u;
  if (rx_deadline < r->sent_ns + 100000u)
    rx_deadline = r->sent_ns + 100000u;
  collect(ec, set, ns, rx_deadline); /* an I/O error shows as missing replies */
  /* The output replies waited in the socket while we slept (one wake-up per
   * cycle less). The devices took the outputs at `slot` only if the reference
   * read its clock early enough (account_outputs); if that is not proven
   * (late wake-up, lost reply) they may be taken at the edge after, which
   * must then stay free. */
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
  if (mbx)
    atomic_store(&ec->mbx, ec->xs.state == SLOT_DONE ? MBX_DONE : MBX_FAILED);

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
  res->all_op = false;
  if (r->state == SLOT_DONE)
    ec->silent = false;
  if (r->state != SLOT_DONE) {
    res->lost = true;
    res->wkc_ok = false;
  } else {
    if (r->dg[0].wkc != n || r->dg[1].wkc != n)
      res->wkc_ok = false;
    else
      memcpy(rx, r->f.buf + ec->rd_lrd, (size_t)n * IN_BYTES);
    res->all_op = r->dg[2].wkc == n && (r->f.buf[ec->rd_brd] & 0x1F) == AL_OP;
    if (r->dg[0].wkc)
      dc_sample(ec, ecat_get64(r->f.buf + ec->rd_frmw), r->sent_ns, r->rx_ns);
    double v = (double)(r->rx_ns - r->sent_ns);
    ec->rd_rtt_ns += (v - ec->rd_rtt_ns) / 16;
  }
  update_read_ahead(ec);
  atomic_store_explicit(&ec->diag_ra, ec->read_ahead, memory_order_relaxed);
  atomic_store_explicit(&ec->diag_out, (uint64_t)ec->out_rtt_ns, memory_order_relaxed);
  return AUTD3_OK;
}

static autd3_err_t ec_cycle(struct autd3_link *link, const uint8_t *tx, uint8_t *rx, bool *rx_valid) {
  echocat_t *ec = (echocat_t *)link;
  *rx_valid = false;
  static _Thread_local const void *tuned;
  if (tuned != ec) { /* once per bus thread: exact wake-ups, and the RT options */
    tuned = ec;
    autd3__thread_precise_timers();
    if (ec->opt.ethercat.rt_priority > 0 || ec->opt.ethercat.rt_cpu >= 0)
      if (autd3__thread_set_rt(ec->opt.ethercat.rt_priority, ec->opt.ethercat.rt_cpu) != AUTD3_OK)
        atomic_store(&ec->rt_failed, true);
  }
  atomic_fetch_add(&ec->bus_cycles, 1);
  int own = OWN_NONE;
  if (!atomic_compare_exchange_strong(&ec->owner, &own, OWN_BUS)) {
    /* the checker drives the bus right now (only when nobody cycled for a while) */
    autd3__sleep_ns(ec->period);
    autd3_link_count_cycle(link, false, true);
    return AUTD3_OK;
  }
  cycle_res_t res;
  autd3_err_t e = cycle_core(ec, tx, rx, &res);
  atomic_store(&ec->owner, OWN_NONE);
  if (e != AUTD3_OK)
    return e;
  *rx_valid = !res.lost && res.wkc_ok && res.all_op;
  autd3_link_count_cycle(link, *rx_valid, res.lost);
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
 * access, no lock, no allocation. */
static autd3_err_t ec_wait_next_cycle(struct autd3_link *link) {
  echocat_t *ec = (echocat_t *)link;
  if (!ec->off_valid)
    return AUTD3_OK;
  uint64_t margin = ec->period / 5 < WAKE_MARGIN_NS ? ec->period / 5 : WAKE_MARGIN_NS;
  uint64_t now = autd3__now_ns();
  uint64_t edge_host = (uint64_t)((int64_t)aim_edge(ec, now) - ec->off);
  uint64_t wake = edge_host - out_need(ec) - margin;
  if ((int64_t)(wake - now) > (int64_t)(2 * ec->period))
    wake = now + 2 * ec->period; /* bounded, whatever the estimate says; cycle() decides anyway */
  if ((int64_t)(wake - now) > 0)
    autd3__sleep_until_ns(wake, ec->opt.spin_ns);
  return AUTD3_OK;
}

/* ---------------------------------------------------------------- state check and recovery */

/* A device at position k answers but lost its configuration (power-cycled):
 * configure it again as at open, up to SAFE-OP, then ask for OP. */
static autd3_err_t recover_slave(echocat_t *ec, uint16_t k) {
  uint16_t one[1] = {k};
  uint8_t v[2];
  autd3_err_t e;
  const dgspec_t rs[4] = {{ECAT_APWR, REG_FMMU0, 48}, {ECAT_APWR, REG_SM0, 32}, {ECAT_APWR, REG_DCACT, 1},
                          {ECAT_APWR, REG_EEPCFG, 1}};
  uint8_t in[AUTD3_MAX_DEVICES * 82];
  memset(in + (size_t)k * 82, 0, 82);
  if ((e = each(ec, one, 1, true, rs, 4, in, NULL, NULL)) != AUTD3_OK)
    return e;
  if ((e = assign_addresses(ec, one, 1)) != AUTD3_OK)
    return e;
  ecat_put16(v, AL_INIT | AL_ACK);
  if ((e = dg1(ec, ECAT_FPWR, STATION(k), REG_ALCTL, v, 2, NULL, NULL)) != AUTD3_OK)
    return e;
  if ((e = sii_read(ec, one, 1)) != AUTD3_OK)
    return e;
  if ((e = check_identity(ec, one, 1)) != AUTD3_OK)
    return e;
  if ((e = to_preop(ec, one, 1)) != AUTD3_OK)
    return e;
  if ((e = dc_config(ec, one, 1, false)) != AUTD3_OK)
    return e;
  if ((e = sync0_on(ec, one, 1)) != AUTD3_OK)
    return e;
  if ((e = map_pdo(ec, one, 1)) != AUTD3_OK)
    return e;
  if ((e = request_state(ec, one, 1, AL_SAFEOP)) != AUTD3_OK)
    return e;
  if ((e = wait_state(ec, one, 1, AL_SAFEOP, ec->opt.ethercat.state_timeout_ms)) != AUTD3_OK)
    return e;
  return request_state(ec, one, 1, AL_OP);
}

static autd3_err_t ec_check_state(struct autd3_link *link, autd3_link_status_t *out) {
  echocat_t *ec = (echocat_t *)link;
  autd3__mutex_lock(&ec->check_lock);
  uint16_t all[AUTD3_MAX_DEVICES];
  list_range(all, 0, ec->n);
  uint8_t al[AUTD3_MAX_DEVICES];
  uint16_t code[AUTD3_MAX_DEVICES], wkc[AUTD3_MAX_DEVICES];
  autd3_err_t e = read_states(ec, all, ec->n, al, code, wkc);
  if (e == AUTD3_E_TIMEOUT) { /* nothing came back at all: every device is lost */
    memset(wkc, 0, sizeof wkc);
    memset(al, 0, sizeof al);
    e = AUTD3_OK;
  }
  if (e != AUTD3_OK) {
    autd3__mutex_unlock(&ec->check_lock);
    return e;
  }
  bool all_op = true;
  for (uint16_t k = 0; k < ec->n; k++) {
    uint8_t st = al[k] & 0x0F;
    bool err = (al[k] & AL_ERROR) != 0;
    if (wkc[k] != 1) {
      out->state[k] = AUTD3_DEVICE_LOST;
      ec->sl[k].lost = true;
    } else if (st == AL_OP && !err) {
      out->state[k] = AUTD3_DEVICE_OP;
      ec->sl[k].lost = false;
      continue;
    } else if (st == AL_SAFEOP && err) {
      out->state[k] = AUTD3_DEVICE_SAFE_OP_ERROR;
      uint8_t v[2];
      ecat_put16(v, AL_SAFEOP | AL_ACK); /* acknowledge; the next check asks for OP */
      dg1(ec, ECAT_FPWR, STATION(k), REG_ALCTL, v, 2, NULL, NULL);
    } else if (st == AL_SAFEOP) {
      out->state[k] = AUTD3_DEVICE_SAFE_OP;
      uint8_t v[2];
      ecat_put16(v, AL_OP);
      dg1(ec, ECAT_FPWR, STATION(k), REG_ALCTL, v, 2, NULL, NULL);
    } else {
      out->state[k] = AUTD3_DEVICE_OTHER;
      out->al_state[k] = al[k];
      /* answers at its address but fell back (INIT/PRE-OP): configure again */
      recover_slave(ec, k);
    }
    all_op = false;
  }
  /* Lost devices: is something at their position again (re-plugged)? A device
   * that kept its station address comes back by itself (the next check sees its
   * state); one that was power-cycled (address 0) is configured again. */
  for (uint16_t k = 0; k < ec->n; k++) {
    if (out->state[k] != AUTD3_DEVICE_LOST)
      continue;
    uint8_t a[2];
    uint16_t w = 0;
    if (dg1(ec, ECAT_APRD, POSITION(k), REG_STADR, NULL, 2, a, &w) == AUTD3_OK && w == 1 &&
        ecat_get16(a) != STATION(k))
      recover_slave(ec, k);
  }
  if (!all_op)
    ec->problem = true;
  else if (ec->problem) {
    ec->problem = false;
    ec->recoveries++;
  }
  out->recoveries = ec->recoveries;
  autd3__mutex_unlock(&ec->check_lock);
  return AUTD3_OK;
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
  int w = snprintf(buf, cap,
                   "departure jitter p50 : %" PRIu64 " us\n"
                   "departure jitter p99 : %" PRIu64 " us\n"
                   "departure jitter max : %.1f us\n"
                   "late wake-ups        : %" PRIu64 " (SYNC0 edges without new outputs)\n"
                   "outputs after edge   : %" PRIu64 " (not proven before their SYNC0 edge)\n"
                   "phase guard waits    : %" PRIu64 "\n"
                   "frames per cycle     : %.2f\n"
                   "read ahead of SYNC0  : %.0f us\n"
                   "outputs to reference : %.0f us\n"
                   "ignored frames       : %" PRIu64 "\n"
                   "rt priority/affinity : %s\n",
                   n ? jit_pct(ec, n, 50) : 0, n ? jit_pct(ec, n, 99) : 0, (double)atomic_load(&ec->jit_max) / 1000.0,
                   (uint64_t)atomic_load(&ec->late), (uint64_t)atomic_load(&ec->unproven),
                   (uint64_t)atomic_load(&ec->guard_waits), cyc ? (double)atomic_load(&ec->frames) / (double)cyc : 0.0,
                   (double)atomic_load(&ec->diag_ra) / 1000.0, (double)atomic_load(&ec->diag_out) / 1000.0,
                   autd3__nic_ignored(ec->nic),
                   atomic_load(&ec->rt_failed)                                           ? "refused by the OS"
                   : (ec->opt.ethercat.rt_priority > 0 || ec->opt.ethercat.rt_cpu >= 0) ? "applied"
                                                                                        : "not requested");
  if (w < 0)
    return 0;
  return (size_t)w < cap ? (size_t)w : cap - 1;
}

/* ---------------------------------------------------------------- open / close */

static void release(echocat_t *ec) {
  if (ec->nic)
    autd3__nic_close(ec->nic);
  autd3__capture_close(&ec->cap);
  autd3__mutex_destroy(&ec->check_lock);
  free(ec->zero_tx);
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
  list_range(all, 0, ec->n);
  uint8_t z[AUTD3_MAX_DEVICES] = {0};
  const dgspec_t sp = {ECAT_FPWR, REG_DCACT, 1};
  each(ec, all, ec->n, false, &sp, 1, z, NULL, NULL); /* SYNC0 off */
  uint16_t w;
  uint8_t v[2];
  ecat_put16(v, AL_INIT);
  dg1(ec, ECAT_BWR, 0, REG_ALCTL, v, 2, NULL, &w);
  release(ec);
}

static const autd3_link_vtable_t ec_vt = {.cycle = ec_cycle,
                                          .check_state = ec_check_state,
                                          .close = ec_close,
                                          .diagnostics = ec_diagnostics,
                                          .wait_next_cycle = ec_wait_next_cycle};

/* Open `ifname`, count, address and identify its slaves. */
static autd3_err_t probe(echocat_t *ec, const char *ifname, uint16_t *count) {
  /* Bounded precision: GCC for aarch64 cannot see the caller's length. */
  snprintf(ec->ifname, sizeof ec->ifname, "%.*s", (int)sizeof ec->ifname - 1, ifname);
  autd3_err_t e = autd3__nic_open(ifname, ec->opt.backend, &ec->nic);
  if (e != AUTD3_OK)
    return e;
  /* A fixed source MAC that no adapter has: the first ESC sets bit 0x02 in
   * the returning frame (§1.1), so a reply never carries our adapter's own
   * address (back ends that cannot filter by direction drop those). */
  static const uint8_t src[6] = {0x0C, 0xEC, 0xA7, 0xAD, 0x00, 0x01};
  memcpy(ec->mac, src, 6);
  if (ec->opt.ethercat.capture_path && !ec->cap.f &&
      (e = autd3__capture_open(&ec->cap, ec->opt.ethercat.capture_path)) != AUTD3_OK)
    return e;
  if ((e = count_slaves(ec, count)) != AUTD3_OK)
    return e;
  if (*count == 0)
    return autd3_set_error(AUTD3_E_NO_DEVICE, "echocat %s: no EtherCAT slave answered", ifname);
  if (*count > AUTD3_MAX_DEVICES)
    return autd3_set_error(AUTD3_E_DEVICE_COUNT_RANGE, "echocat %s: %u slaves, at most %d are supported", ifname, *count,
                           AUTD3_MAX_DEVICES);
  ec->n = *count;
  uint16_t all[AUTD3_MAX_DEVICES];
  list_range(all, 0, ec->n);
  if ((e = reset_slaves(ec)) != AUTD3_OK || (e = assign_addresses(ec, all, ec->n)) != AUTD3_OK ||
      (e = sii_read(ec, all, ec->n)) != AUTD3_OK)
    return e;
  return check_identity(ec, all, ec->n);
}

autd3_err_t autd3__link_open_echocat(const autd3_link_option_t *option, const autd3_geometry_t *geometry,
                                     struct autd3_link **out) {
  const autd3_echocat_option_t *opt = &option->u.echocat;
  autd3_err_t e = autd3_ethercat_option_validate(&opt->ethercat);
  if (e != AUTD3_OK)
    return e;
  const autd3_ethercat_option_t *o = &opt->ethercat;
  uint32_t send_cycle = o->send_cycle_ns ? o->send_cycle_ns : o->sync0_period_ns;
  if (send_cycle % o->sync0_period_ns != 0)
    return autd3_set_error(AUTD3_E_INVALID_OPTION,
                           "echocat: send_cycle_ns = %u must be a multiple of sync0_period_ns = %u (one image per SYNC0)",
                           o->send_cycle_ns, o->sync0_period_ns);
  if ((unsigned)opt->backend > AUTD3_NIC_PCAP)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "echocat: backend = %d is not a autd3_nic_backend_t", (int)opt->backend);
  if (opt->spin_ns >= send_cycle / 2)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "echocat: spin_ns = %u must be below half the send cycle (%u ns)",
                           opt->spin_ns, send_cycle / 2);
  if (opt->warmup_cycles > 100000)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "echocat: warmup_cycles = %u is above 100000", opt->warmup_cycles);
  size_t want = autd3_geometry_num_devices(geometry);

  echocat_t *ec = calloc(1, sizeof *ec);
  if (!ec)
    return autd3_set_error(AUTD3_E_NOMEM, "echocat: out of memory");
  ec->opt = *opt;
  ec->opt.ethercat.interface = NULL; /* not kept: the caller owns the string */
  ec->opt.ethercat.capture_path = o->capture_path;
  if (autd3__mutex_init(&ec->check_lock) != AUTD3_OK) {
    free(ec);
    return AUTD3_E_INTERNAL; /* the seam set the message */
  }
  ec->period = send_cycle;
  uint16_t count = 0;

  if (o->interface == NULL || strcmp(o->interface, "auto") == 0) {
    /* Every adapter that is up, first one whose slaves are all AUTD3 wins. */
    char names[32][32];
    size_t nn = 0;
    if ((e = autd3__nic_list(names, 32, &nn)) != AUTD3_OK)
      goto fail;
    char tried[512] = "";
    autd3_err_t first_perm = AUTD3_OK;
    e = AUTD3_E_NO_DEVICE;
    for (size_t i = 0; i < nn; i++) {
      e = probe(ec, names[i], &count);
      if (e == AUTD3_OK)
        break;
      if (e == AUTD3_E_PERMISSION)
        first_perm = e;
      size_t l = strlen(tried);
      snprintf(tried + l, sizeof tried - l, "%s%.*s (%s)", l ? ", " : "", (int)sizeof names[i], names[i], autd3_err_name(e));
      if (ec->nic)
        autd3__nic_close(ec->nic);
      ec->nic = NULL;
      ec->n = 0;
    }
    if (e != AUTD3_OK) {
      if (first_perm)
        e = autd3_set_error(AUTD3_E_PERMISSION,
                            "echocat: cannot open raw sockets to scan for AUTD3 devices: needs CAP_NET_RAW and "
                            "CAP_NET_ADMIN (run as root or `sudo setcap cap_net_raw,cap_net_admin+ep <program>`)");
      else
        e = autd3_set_error(AUTD3_E_NO_DEVICE, "echocat: interface = auto: no adapter has only AUTD3 devices (tried: %s)",
                            nn ? tried : "no adapter is up");
      goto fail;
    }
  } else if ((e = probe(ec, o->interface, &count)) != AUTD3_OK) {
    goto fail;
  }
  if (count != want) {
    e = autd3_set_error(AUTD3_E_DEVICE_COUNT_MISMATCH, "echocat %s: %u AUTD3 devices on the bus, the geometry has %zu",
                        ec->ifname, count, want);
    goto fail;
  }
  {
    /* An EtherCAT line runs at 100 Mbit/s: each output frame (two devices'
     * 626 B + headers, ~1.3 kB with preamble and gap) takes ~106 µs on the
     * wire, and the outputs of one cycle must pass the chain before its SYNC0
     * edge. A chain whose outputs cannot fit in one send cycle would lose
     * frames every cycle (measured with the emulator's wire model: 14 devices
     * is the limit at 1 ms, docs/emulator.md), so refuse it here, clearly. */
    uint64_t frame_ns = (uint64_t)(14 + 2 + 2 * (10 + OUT_BYTES + 2) + 4 + 8 + 12) * 80u;
    uint64_t wire_ns = (uint64_t)((count + 1) / 2) * frame_ns;
    if (wire_ns >= ec->period) {
      uint64_t need = (wire_ns / 500000u + 1) * 500000u;
      e = autd3_set_error(AUTD3_E_INVALID_OPTION,
                          "echocat %s: %u devices need %llu us of 100 Mbit/s wire per cycle for their outputs, more than "
                          "the send cycle of %u us: raise sync0_period_ns (and send_cycle_ns) to at least %llu us",
                          ec->ifname, count, (unsigned long long)(wire_ns / 1000), (unsigned)(ec->period / 1000),
                          (unsigned long long)(need / 1000));
      goto fail;
    }
  }
  autd3_link_init(&ec->base, &ec_vt, AUTD3_LINK_ECHOCAT, ec->n);

  uint16_t all[AUTD3_MAX_DEVICES];
  list_range(all, 0, ec->n);
  if ((e = to_preop(ec, all, ec->n)) != AUTD3_OK || (e = dc_config(ec, all, ec->n, true)) != AUTD3_OK ||
      (e = wait_sync(ec)) != AUTD3_OK || (e = sync0_on(ec, all, ec->n)) != AUTD3_OK ||
      (e = map_pdo(ec, all, ec->n)) != AUTD3_OK || (e = request_state(ec, all, ec->n, AL_SAFEOP)) != AUTD3_OK ||
      (e = wait_state(ec, all, ec->n, AL_SAFEOP, o->state_timeout_ms)) != AUTD3_OK)
    goto fail;

  /* Cyclic exchange: warm-up in SAFE-OP, then OP once the WKC is stable for 5 cycles. */
  ec->ngroups = (ec->n + 1) / 2;
  ec->zero_tx = calloc((size_t)ec->n, OUT_BYTES + IN_BYTES);
  if (!ec->zero_tx) {
    e = autd3_set_error(AUTD3_E_NOMEM, "echocat: out of memory");
    goto fail;
  }
  /* Initial timing estimates from the wire model of a 100 Mbit/s chain (refined by measurement). */
  ec->out_rtt_ns = (double)(ec->n * OUT_BYTES + ec->ngroups * 70) * 80.0 + 20000.0;
  ec->rd_rtt_ns = 100000.0;
  update_read_ahead(ec);
  uint8_t *rx = ec->zero_tx + (size_t)ec->n * OUT_BYTES;
  uint64_t op_req = 0, last_fix = 0;
  int good = 0;
  for (uint32_t i = 0;; i++) {
    cycle_res_t res;
    if ((e = cycle_core(ec, ec->zero_tx, rx, &res)) != AUTD3_OK)
      goto fail;
    uint64_t now = autd3__now_ns();
    if (i == opt->warmup_cycles) {
      uint8_t v[2];
      ecat_put16(v, AL_OP);
      if ((e = dg1(ec, ECAT_BWR, 0, REG_ALCTL, v, 2, NULL, NULL)) != AUTD3_OK)
        goto fail;
      op_req = last_fix = now;
    }
    if (!op_req)
      continue;
    good = (!res.lost && res.wkc_ok && res.all_op) ? good + 1 : 0;
    if (good >= 5)
      break;
    if (now - last_fix > 100000000u) { /* every 100 ms without progress: ack errors, ask for OP again */
      last_fix = now;
      uint8_t al[AUTD3_MAX_DEVICES];
      uint16_t code[AUTD3_MAX_DEVICES], wkc[AUTD3_MAX_DEVICES];
      if (read_states(ec, all, ec->n, al, code, wkc) == AUTD3_OK)
        for (uint16_t k = 0; k < ec->n; k++) {
          uint8_t v[2];
          if ((al[k] & 0x1F) == (AL_SAFEOP | AL_ERROR))
            ecat_put16(v, AL_SAFEOP | AL_ACK);
          else if ((al[k] & 0x0F) == AL_SAFEOP)
            ecat_put16(v, AL_OP);
          else
            continue;
          dg1(ec, ECAT_FPWR, STATION(k), REG_ALCTL, v, 2, NULL, NULL);
        }
    }
    if (now - op_req > (uint64_t)o->op_wait_timeout_ms * 1000000u) {
      uint8_t al[AUTD3_MAX_DEVICES];
      uint16_t code[AUTD3_MAX_DEVICES], wkc[AUTD3_MAX_DEVICES];
      char detail[256] = "";
      if (read_states(ec, all, ec->n, al, code, wkc) == AUTD3_OK)
        for (uint16_t k = 0; k < ec->n; k++) {
          size_t l = strlen(detail);
          snprintf(detail + l, sizeof detail - l, "%sdevice %u %s%s code 0x%04x", k ? "; " : "", k,
                   wkc[k] ? al_name(al[k]) : "lost", (al[k] & AL_ERROR) ? "+ERROR" : "", code[k]);
        }
      e = autd3_set_error(AUTD3_E_STATE_TIMEOUT, "echocat %s: devices not in OP with a stable working counter within "
                                                 "op_wait_timeout_ms = %u: %s",
                          ec->ifname, o->op_wait_timeout_ms, detail);
      goto fail;
    }
  }
  /* statistics count the caller's cycles only */
  for (int i = 0; i <= JIT_BUCKETS; i++)
    atomic_store(&ec->jit[i], 0);
  atomic_store(&ec->jit_n, 0), atomic_store(&ec->jit_max, 0), atomic_store(&ec->late, 0);
  atomic_store(&ec->frames, 0), atomic_store(&ec->cyc, 0), atomic_store(&ec->guard_waits, 0);
  atomic_store(&ec->unproven, 0);
  ec->first_call = true;
  atomic_store(&ec->running, true);
  ec->opt.ethercat.capture_path = NULL; /* the caller's string; the file is open */
  *out = &ec->base;
  return AUTD3_OK;

fail:
  if (ec->nic && ec->n) { /* best effort: leave the devices in INIT */
    uint8_t v[2];
    ecat_put16(v, AL_INIT);
    char keep[512];
    snprintf(keep, sizeof keep, "%s", autd3_last_error());
    dg1(ec, ECAT_BWR, 0, REG_ALCTL, v, 2, NULL, NULL);
    autd3_set_error(e, "%s", keep);
  }
  release(ec);
  return e;
}
