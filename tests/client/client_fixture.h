/*
 * Shared helpers of the client tests: open a client over the in-process
 * emulator link, and "testlink", a tiny synchronous link registered under the
 * REMOTE kind that runs the device model (src/emulation/device) back to back with no
 * timing, records every distinct (seq, cmd) it sends, can report a wrong
 * device count and can fail its cycle on demand.
 */
#ifndef AUTD3_TESTS_CLIENT_FIXTURE_H
#define AUTD3_TESTS_CLIENT_FIXTURE_H

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/autd3.h"
#include "autd3/link_driver.h"
#include "emulation/device/device.h"
#include "harness/test.h"
#include "platform/platform.h"

/* FX_ASAN: built with AddressSanitizer (whose allocator and use-after-free
 * reports some cases depend on). */
#if defined(__SANITIZE_ADDRESS__)
#define FX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FX_ASAN 1
#endif
#endif

/* What the open sequence costs each device (session.c, bus.c handshake):
 * frames through the stream (10 identity reads, Clear, Synchronize), and
 * commands executed (those + SetMode). A re-establishment executes SetMode,
 * Clear and Synchronize. */
#define FX_OPEN_SENT 12
#define FX_OPEN_EXECUTED 13
#define FX_REINIT_EXECUTED 3

static inline autd3_geometry_t *fx_geometry(size_t n) {
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(n, NULL, &g));
  return g;
}

/* Emulator options for the tests: a short cycle keeps the suite fast. */
static inline autd3_link_option_t fx_emu_option(uint32_t cycle_ns) {
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  o.u.emulator.cycle_ns = cycle_ns;
  return o;
}

static inline autd3_client_t *fx_open_emu(size_t n, uint32_t cycle_ns, const autd3_client_config_t *cfg) {
  autd3_geometry_t *g = fx_geometry(n);
  autd3_link_option_t o = fx_emu_option(cycle_ns);
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, cfg, &c));
  autd3_geometry_free(g);
  return c;
}

static inline autd3_device_counters_t fx_counters(autd3_client_t *c, uint16_t dev) {
  autd3_device_counters_t k;
  ASSERT_OK(autd3_emulator_counters(autd3_client_link(c), dev, &k));
  return k;
}

/* A checked NOP on two devices: it fails with `err` (the message naming
 * `names`, if given), devices 0 and 1 with outcomes o0 and o1. */
static inline void fx_nop_expect(autd3_client_t *c, autd3_err_t err, const char *names, uint8_t o0, uint8_t o1) {
  autd3_frame_t nop = autd3_frame_simple(AUTD3_CMD_NOP);
  autd3_response_t resp;
  ASSERT_ERR(autd3_client_send_checked(c, &nop, &resp), err);
  if (names) ASSERT_CONTAINS(autd3_last_error(), names);
  ASSERT_EQ(resp.outcome[0], o0);
  ASSERT_EQ(resp.outcome[1], o1);
}

/* Poll (bounded) until the client has re-established device `dev` after
 * `resets` state losses: READY again with reinits == resets. */
static inline void fx_wait_device_ready(autd3_client_t *c, uint16_t dev, uint32_t resets) {
  autd3_client_device_status_t st;
  for (int i = 0; i < 20000; i++) {
    ASSERT_OK(autd3_client_device_status(c, dev, &st));
    if (st.state == AUTD3_CLIENT_DEVICE_READY && st.reinits == resets && st.resets == resets) return;
    autd3__sleep_ns(500000);
  }
  ASSERT_OK(autd3_client_device_status(c, dev, &st));
  ASSERT_EQ(st.state, AUTD3_CLIENT_DEVICE_READY);
  ASSERT_EQ(st.resets, resets);
  ASSERT_EQ(st.reinits, resets);
}

/* ---- testlink ----------------------------------------------------------------- */

#define FX_LOG_MAX 64
__attribute__((unused)) static struct {
  int num_devices_override; /* < 0: the geometry's count */
  _Atomic int fail_after_cycles; /* < 0: never; set by the test thread, read by the bus thread */
  _Atomic uint64_t cycles;
  uint8_t log_seq[FX_LOG_MAX], log_cmd[FX_LOG_MAX]; /* distinct consecutive (seq, cmd) of device 0 */
  _Atomic int log_len;
  /* One-shot hook on device hook_dev, fired at the first cycle whose frame for
   * it has seq hook_seq (not a Reset), before the device sees that frame:
   * FX_HOOK_REBOOT power-cycles it without telling the client (a link with no
   * reset evidence), FX_HOOK_FOREIGN moves it to ack foreign_ack as if another
   * master had driven it there, FX_HOOK_GLITCH flips bit 3 of its ack in
   * that cycle's inputs only (a bit error on the wire). From that cycle on,
   * hook_stale cycles report invalid inputs. */
  _Atomic int hook_kind; /* FX_HOOK_*; 0 = none; set last by the test thread */
  int hook_dev;
  uint8_t hook_seq, foreign_ack;
  uint32_t hook_stale;
  uint32_t stale_left; /* bus thread only */
  /* The last tx image of device 0, and what the devices showed when the link
   * was closed (for close's silencing frame). */
  uint8_t last_tx0[AUTD3_TX_FRAME_BYTES];
  /* The first blind_cycles cycles reach no device: as if SYNC0 started late
   * and every image before its first edge were replaced unseen. */
  uint32_t blind_cycles;
  uint8_t closed_ack[AUTD3_MAX_DEVICES], closed_data[AUTD3_MAX_DEVICES];
  /* Per device (the first FX_DEV_FAULTS), set by the test thread: for
   * away_left cycles the device's inputs are invalid and the link says so
   * per device (autd3_link_report_inputs; the others stay valid), and it
   * takes no frame unless away_takes (its answers alone are lost). frozen: it
   * takes no frame (answering as before) until cleared. */
  _Atomic uint32_t away_left[8];
  _Atomic bool away_takes[8];
  _Atomic bool frozen[8];
  _Atomic bool reboot[8]; /* power-cycle the device at the next cycle (no evidence: the link kind is REMOTE) */
  uint8_t tx_seen[8][2];              /* the (seq, cmd) of each device's tx image last cycle (bus thread) */
  _Atomic uint64_t tx_changed_at[8];  /* the cycle in which it last changed */
} fx_tl = {.num_devices_override = -1, .fail_after_cycles = -1};
#define FX_DEV_FAULTS 8

#define FX_HOOK_REBOOT 1
#define FX_HOOK_FOREIGN 2
#define FX_HOOK_DESYNC 3 /* the device loses its place in the numbering (alive, ignores our seqs) */
#define FX_HOOK_GLITCH 4

typedef struct {
  struct autd3_link hdr;
  autd3_dev_t *devs;
  uint16_t n;
} fx_testlink_t;

/* The last testlink opened (for a test that checks its devices' counters). */
__attribute__((unused)) static fx_testlink_t *fx_tl_last;

static inline autd3_err_t fx_tl_cycle(struct autd3_link *l, const uint8_t *tx, uint8_t *rx, bool *rx_valid) {
  fx_testlink_t *t = (fx_testlink_t *)l;
  autd3__sleep_ns(100000); /* pace a little: 100 µs */
  uint64_t k = atomic_fetch_add(&fx_tl.cycles, 1);
  if (fx_tl.fail_after_cycles >= 0 && k >= (uint64_t)fx_tl.fail_after_cycles)
    return autd3_set_error(AUTD3_E_IO, "testlink: injected cable cut at cycle %llu", (unsigned long long)k);
  int len = atomic_load(&fx_tl.log_len);
  if (len < FX_LOG_MAX && (len == 0 || fx_tl.log_seq[len - 1] != tx[0] || fx_tl.log_cmd[len - 1] != tx[1])) {
    fx_tl.log_seq[len] = tx[0];
    fx_tl.log_cmd[len] = tx[1];
    atomic_store(&fx_tl.log_len, len + 1);
  }
  uint64_t now = autd3__now_ns();
  int kind = atomic_load(&fx_tl.hook_kind);
  bool glitch = false;
  if (kind != 0 && fx_tl.hook_dev < t->n) {
    const uint8_t *htx = tx + (size_t)fx_tl.hook_dev * AUTD3_TX_FRAME_BYTES;
    if (htx[0] == fx_tl.hook_seq && htx[1] != AUTD3_CMD_RESET) {
      autd3_dev_t *hd = &t->devs[fx_tl.hook_dev];
      if (kind == FX_HOOK_REBOOT) {
        autd3_dev_power_cycle(hd, now);
      } else if (kind == FX_HOOK_GLITCH) {
        glitch = true;
      } else if (kind == FX_HOOK_DESYNC) {
        hd->expected_seq = (uint8_t)(hd->expected_seq + 100); /* ignores every frame from now on */
      } else {
        hd->ack = fx_tl.foreign_ack;
        hd->expected_seq = (uint8_t)(fx_tl.foreign_ack + 1);
      }
      fx_tl.stale_left = fx_tl.hook_stale;
      atomic_store(&fx_tl.hook_kind, 0);
    }
  }
  memcpy(fx_tl.last_tx0, tx, AUTD3_TX_FRAME_BYTES);
  for (uint16_t d = 0; d < t->n && d < FX_DEV_FAULTS; d++) {
    const uint8_t *dt = tx + (size_t)d * AUTD3_TX_FRAME_BYTES;
    if (dt[0] != fx_tl.tx_seen[d][0] || dt[1] != fx_tl.tx_seen[d][1]) atomic_store(&fx_tl.tx_changed_at[d], k);
    fx_tl.tx_seen[d][0] = dt[0], fx_tl.tx_seen[d][1] = dt[1];
  }
  if (fx_tl.blind_cycles > 0) fx_tl.blind_cycles--;
  else
  for (uint16_t d = 0; d < t->n && d < FX_DEV_FAULTS; d++)
    if (atomic_exchange(&fx_tl.reboot[d], false)) autd3_dev_power_cycle(&t->devs[d], now);
  for (uint16_t d = 0; d < t->n; d++) {
    bool away = d < FX_DEV_FAULTS && atomic_load(&fx_tl.away_left[d]) > 0;
    bool takes = d < FX_DEV_FAULTS ? (!away || atomic_load(&fx_tl.away_takes[d])) && !atomic_load(&fx_tl.frozen[d]) : true;
    if (takes) autd3_dev_recv_frame(&t->devs[d], tx + (size_t)d * AUTD3_TX_FRAME_BYTES, now);
    rx[d * 2] = t->devs[d].ack;
    rx[d * 2 + 1] = t->devs[d].data;
  }
  if (glitch) rx[fx_tl.hook_dev * 2] ^= 0x08;
  bool valid = fx_tl.stale_left == 0;
  if (!valid) fx_tl.stale_left--;
  bool per[AUTD3_MAX_DEVICES], any_away = false;
  for (uint16_t d = 0; d < t->n; d++) {
    per[d] = valid;
    if (d < FX_DEV_FAULTS && atomic_load(&fx_tl.away_left[d]) > 0) {
      atomic_fetch_sub(&fx_tl.away_left[d], 1);
      per[d] = false;
      any_away = true;
    }
  }
  if (any_away) valid = false;
  *rx_valid = valid;
  autd3_link_count_cycle(l, valid, false);
  if (any_away) autd3_link_report_inputs(l, per);
  return AUTD3_OK;
}

static inline void fx_tl_close(struct autd3_link *l) {
  fx_testlink_t *t = (fx_testlink_t *)l;
  for (uint16_t d = 0; d < t->n; d++) {
    fx_tl.closed_ack[d] = t->devs[d].ack;
    fx_tl.closed_data[d] = t->devs[d].data;
  }
  free(t->devs);
  free(t);
}

__attribute__((unused)) static const autd3_link_vtable_t fx_tl_vt = {.cycle = fx_tl_cycle, .close = fx_tl_close};

static inline autd3_err_t fx_tl_open(const autd3_link_option_t *o, const autd3_geometry_t *g, struct autd3_link **out) {
  (void)o;
  int n = fx_tl.num_devices_override >= 0 ? fx_tl.num_devices_override : (int)autd3_geometry_num_devices(g);
  fx_testlink_t *t = calloc(1, sizeof *t);
  t->n = (uint16_t)(n > AUTD3_MAX_DEVICES ? AUTD3_MAX_DEVICES : n); /* devices actually modelled */
  t->devs = calloc(t->n ? t->n : 1, sizeof *t->devs);
  uint64_t now = autd3__now_ns();
  for (uint16_t d = 0; d < t->n; d++) {
    autd3_dev_init(&t->devs[d], NULL, NULL);
    autd3_dev_set_sync0(&t->devs[d], now, 1000000); /* Synchronize needs an active SYNC0 */
  }
  autd3_link_init(&t->hdr, &fx_tl_vt, AUTD3_LINK_REMOTE, (uint16_t)n);
  fx_tl_last = t;
  *out = &t->hdr;
  return AUTD3_OK;
}

static inline autd3_link_option_t fx_testlink_option(void) {
  ASSERT_OK(autd3_link_register(AUTD3_LINK_REMOTE, fx_tl_open));
  return autd3_link_option_default(AUTD3_LINK_REMOTE);
}

static inline autd3_client_t *fx_open_testlink(size_t n, const autd3_client_config_t *cfg) {
  autd3_geometry_t *g = fx_geometry(n);
  autd3_link_option_t o = fx_testlink_option();
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, cfg, &c));
  autd3_geometry_free(g);
  return c;
}

/* Arm testlink's hook: `kind` (FX_HOOK_*) happens to device `dev` when the frame with seq `seq` reaches it. Set
 * hook_stale / foreign_ack before, where the kind uses them. */
static inline void fx_tl_arm(uint16_t dev, uint8_t seq, int kind) {
  fx_tl.hook_dev = dev;
  fx_tl.hook_seq = seq;
  atomic_store(&fx_tl.hook_kind, kind);
}

#endif
