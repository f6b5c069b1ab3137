/*
 * Request handles and the client's lifetime rules (include/autd3/client.h
 * "Lifetime", src/client/handle.c): a stale handle never matches a later
 * request on its slot (for 2^32 reuses), in both protocols; a handle of a
 * freed client is refused; every call after close does what client.h says.
 *
 * Over the in-process emulator link. No test asserts timing.
 */
#include <stdint.h>

#include "client/client_fixture.h"
#include "client/client_internal.h" /* the generation word, to test its wrap without 2^32 sends */

#define CYCLE_NS 500000u
#define KEPT 300

static autd3_frame_t nop_frame(uint32_t protocol) {
  autd3_frame_t f;
  if (protocol == AUTD3_PROTOCOL_V12) {
    uint8_t op[2] = {AUTD3_V12_TAG_NOP, 0};
    ASSERT_OK(autd3_v12_frame(&f, op, 2, NULL, 0));
  } else {
    f = autd3_frame_simple(AUTD3_CMD_NOP);
  }
  return f;
}

/* One slot (max_inflight 1), so every send reuses it. */
static autd3_client_t *open_one_slot(uint32_t protocol) {
  autd3_geometry_t *g = fx_geometry(2);
  autd3_link_option_t o = fx_emu_option(CYCLE_NS);
  if (protocol == AUTD3_PROTOCOL_V12) o.u.emulator.firmware = AUTD3_EMU_FIRMWARE_V12;
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.max_inflight = 1;
  cfg.protocol = protocol;
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, &cfg, &c));
  autd3_geometry_free(g);
  return c;
}

/* Every use of a stale handle is refused, whichever function. */
static void assert_stale(autd3_request_t *h) {
  autd3_response_t resp;
  ASSERT_ERR(autd3_request_poll(h, &resp), AUTD3_E_INVALID_HANDLE);
  ASSERT_ERR(autd3_request_wait_for(h, 0, &resp), AUTD3_E_INVALID_HANDLE);
  ASSERT_ERR(autd3_request_detach(h), AUTD3_E_INVALID_HANDLE);
  ASSERT_ERR(autd3_request_wait(h, &resp), AUTD3_E_INVALID_HANDLE);
}

/* KEPT handles, each kept after its request finished and its slot was
 * reused, are tried while a live request holds the slot: none may match it
 * (with 16 handle cells per slot, 1 in 16 did and returned its result). */
static void stale_never_alias(uint32_t protocol) {
  autd3_client_t *c = open_one_slot(protocol);
  autd3_frame_t f = nop_frame(protocol);
  static autd3_request_t *kept[KEPT];
  for (int i = 0; i < KEPT; i++) {
    ASSERT_OK(autd3_client_send(c, &f, &kept[i]));
    ASSERT_OK(autd3_request_wait(kept[i], NULL));
  }
  autd3_request_t *live = NULL;
  ASSERT_OK(autd3_client_send(c, &f, &live));
  for (int i = 0; i < KEPT; i++) {
    ASSERT_NE((uintptr_t)kept[i], (uintptr_t)live);
    assert_stale(kept[i]);
    ASSERT_CONTAINS(autd3_last_error(), "stale request handle");
  }
  /* The live request was not consumed by any of them. */
  autd3_response_t resp;
  ASSERT_OK(autd3_request_wait(live, &resp));
  ASSERT_EQ(resp.outcome[0], AUTD3_OUTCOME_EXECUTED);
  for (int i = 0; i < KEPT; i += 37) assert_stale(kept[i]);
  ASSERT_OK(autd3_client_close(c));
}

TEST(stale_handles_never_alias) { stale_never_alias(AUTD3_PROTOCOL_NEW); }
TEST(stale_handles_never_alias_v12) { stale_never_alias(AUTD3_PROTOCOL_V12); }

/* Move slot 0 to generation `gen` (it is free: nothing else touches it). */
static void set_generation(autd3_client_t *c, uint32_t gen) {
  struct autd3__slot *r = &c->slots[0];
  ASSERT_EQ(atomic_load(&r->state), AUTD3__SLOT_FREE);
  r->gen = gen;
  atomic_store(&r->handle, (uint64_t)gen << 2 | AUTD3__H_NONE);
}

/* Across the wrap of the 32-bit generation handles work and stale ones are
 * refused; a handle matches again only after exactly 2^32 reuses of its slot. */
TEST(generation_wraps_after_2_32_reuses) {
#if UINTPTR_MAX <= 0xFFFFFFFFu
  SKIP("32-bit platform: handles carry a 15-bit generation (src/client/handle.c)");
#else
  autd3_client_t *c = open_one_slot(AUTD3_PROTOCOL_NEW);
  autd3_frame_t f = nop_frame(AUTD3_PROTOCOL_NEW);
  set_generation(c, UINT32_MAX - 8);
  autd3_request_t *h[20];
  for (int i = 0; i < 20; i++) { /* generations 2^32 - 7 .. 12 */
    ASSERT_OK(autd3_client_send(c, &f, &h[i]));
    ASSERT_OK(autd3_request_wait(h[i], NULL));
  }
  for (int i = 0; i < 20; i++) assert_stale(h[i]);
  /* h[0] was issued at generation 2^32 - 7. 16 and 2^31 reuses later it is refused... */
  const uint32_t g0 = UINT32_MAX - 7;
  uint32_t later[] = {g0 + 16u, g0 + 0x80000000u, g0 - 1u /* 2^32 - 1 reuses */};
  for (size_t k = 0; k < sizeof later / sizeof later[0]; k++) {
    set_generation(c, later[k] - 1u);
    autd3_request_t *live = NULL;
    ASSERT_OK(autd3_client_send(c, &f, &live));
    assert_stale(h[0]);
    ASSERT_OK(autd3_request_wait(live, NULL));
  }
  /* ...and after exactly 2^32 it is the same handle again (the documented limit). */
  set_generation(c, g0 - 1u);
  autd3_request_t *same = NULL;
  ASSERT_OK(autd3_client_send(c, &f, &same));
  ASSERT_EQ((uintptr_t)same, (uintptr_t)h[0]);
  ASSERT_OK(autd3_request_wait(h[0], NULL));
  ASSERT_OK(autd3_client_close(c));
#endif
}

/* A handle outliving its client (closed, every request released: freed) is
 * refused, also once a new client has taken the freed one's place. */
TEST(handle_of_freed_client_refused) {
  autd3_frame_t f = nop_frame(AUTD3_PROTOCOL_NEW);
  autd3_client_t *a = open_one_slot(AUTD3_PROTOCOL_NEW);
  autd3_request_t *old[4];
  for (int i = 0; i < 4; i++) {
    ASSERT_OK(autd3_client_send(a, &f, &old[i]));
    ASSERT_OK(autd3_request_wait(old[i], NULL));
  }
  ASSERT_OK(autd3_client_close(a)); /* nothing outstanding: freed here */
  for (int i = 0; i < 4; i++) assert_stale(old[i]);
  ASSERT_CONTAINS(autd3_last_error(), "closed");
  /* The next client's generations continue past the freed one's. */
  autd3_client_t *b = open_one_slot(AUTD3_PROTOCOL_NEW);
  for (int k = 0; k < 8; k++) {
    autd3_request_t *live = NULL;
    ASSERT_OK(autd3_client_send(b, &f, &live));
    for (int i = 0; i < 4; i++) {
      ASSERT_NE((uintptr_t)old[i], (uintptr_t)live);
      assert_stale(old[i]);
    }
    ASSERT_OK(autd3_request_wait(live, NULL));
  }
  ASSERT_OK(autd3_client_close(b));
}

/* ---- client.h "Lifetime", claim by claim ------------------------------------------------- */

/* After close: every handle still outstanding stays valid for exactly one
 * wait/poll/detach and says CLOSED or OK; sends and a second close say
 * CLOSED; the read-only calls still answer; the last release frees. */
TEST(lifetime_after_close) {
  autd3_client_t *c = fx_open_emu(2, CYCLE_NS, NULL);
  autd3_frame_t f = nop_frame(AUTD3_PROTOCOL_NEW);
  autd3_request_t *w = NULL, *p = NULL, *t = NULL, *d = NULL;
  ASSERT_OK(autd3_client_send(c, &f, &w));
  ASSERT_OK(autd3_client_send(c, &f, &p));
  ASSERT_OK(autd3_client_send(c, &f, &t));
  ASSERT_OK(autd3_client_send(c, &f, &d));
  ASSERT_OK(autd3_client_close(c));
  ASSERT_ERR(autd3_client_close(c), AUTD3_E_CLOSED);
  ASSERT_CONTAINS(autd3_last_error(), "already closed");
  ASSERT_ERR(autd3_client_send(c, &f, NULL), AUTD3_E_CLOSED);
  ASSERT_ERR(autd3_client_send_checked(c, &f, NULL), AUTD3_E_CLOSED);
  uint8_t st[AUTD3_MAX_DEVICES];
  ASSERT_ERR(autd3_client_read_fpga_state(c, st), AUTD3_E_CLOSED);
  ASSERT_EQ(autd3_client_num_devices(c), 2);
  ASSERT_EQ(autd3_client_protocol(c), AUTD3_PROTOCOL_NEW);
  ASSERT_EQ(autd3_client_device_resets(c, 1), 0);
  autd3_client_device_status_t ds;
  ASSERT_OK(autd3_client_device_status(c, 1, &ds));
  ASSERT_EQ(ds.state, AUTD3_CLIENT_DEVICE_READY);
  autd3_fw_version_t fw[AUTD3_MAX_DEVICES];
  ASSERT_ERR(autd3_client_read_firmware_version(c, fw), AUTD3_E_CLOSED);
  ASSERT_ERR(autd3_client_read_error_detail(c, st), AUTD3_E_CLOSED);
  ASSERT_TRUE(autd3_client_link(c) == NULL);
  autd3_client_stats_t s;
  autd3_client_stats(c, &s);
  ASSERT_GE(s.sent, 4);
  autd3_response_t resp;
  autd3_err_t e = autd3_request_wait(w, &resp);
  ASSERT_TRUE(e == AUTD3_OK || e == AUTD3_E_CLOSED);
  ASSERT_ERR(autd3_request_wait(w, &resp), AUTD3_E_INVALID_HANDLE);
  e = autd3_request_poll(p, &resp); /* the bus thread is gone: complete, never PENDING */
  ASSERT_TRUE(e == AUTD3_OK || e == AUTD3_E_CLOSED);
  e = autd3_request_wait_for(t, 0, &resp);
  ASSERT_TRUE(e == AUTD3_OK || e == AUTD3_E_CLOSED);
  ASSERT_OK(autd3_request_detach(d)); /* the last one: frees the client */
  assert_stale(w);
  assert_stale(d);
}

/* A request that close failed: CLOSED and the message says so. */
TEST(lifetime_in_flight_at_close_is_closed) {
  autd3_client_t *c = fx_open_emu(1, CYCLE_NS, NULL);
  autd3_frame_t f = nop_frame(AUTD3_PROTOCOL_NEW);
  autd3_request_t *r[100];
  for (int i = 0; i < 100; i++) ASSERT_OK(autd3_client_send(c, &f, &r[i]));
  /* Close silences first, behind the 100 in flight: it succeeds (the emulator acks everything). */
  ASSERT_OK(autd3_client_close(c));
  int closed = 0;
  for (int i = 0; i < 100; i++) {
    autd3_err_t e = autd3_request_wait(r[i], NULL);
    ASSERT_TRUE(e == AUTD3_OK || e == AUTD3_E_CLOSED);
    if (e == AUTD3_E_CLOSED) {
      closed++;
      ASSERT_CONTAINS(autd3_last_error(), "closed");
    }
  }
  (void)closed; /* how many were still in flight depends on timing */
}

/* wait_for and poll that time out leave the handle valid; while one wait
 * owns a handle, another on the same handle is refused (never a second
 * owner, never a hang). */
static autd3_request_t *g_shared;
static _Atomic int g_owner_result;
static void *owner_wait(void *arg) {
  (void)arg;
  autd3_err_t e;
  /* The main thread's wait_for(0) may hold the claim for an instant: retry until this wait owns it. */
  for (int i = 0; (e = autd3_request_wait(g_shared, NULL)) == AUTD3_E_INVALID_HANDLE && i < 100000; i++) autd3__sleep_ns(10000);
  atomic_store(&g_owner_result, (int)e);
  return NULL;
}

TEST(lifetime_pending_and_concurrent_waits) {
  /* A frozen device acks nothing: the request stays pending until thawed
   * (the client would give up only after timeout_cycles x max_resync_rounds = 8 s). */
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.timeout_cycles = 2000;
  autd3_client_t *c = fx_open_emu(1, CYCLE_NS, &cfg);
  autd3_device_fault_t freeze = {.freeze = true}, thaw = {0};
  ASSERT_OK(autd3_emulator_inject(autd3_client_link(c), 0, &freeze));
  autd3__sleep_ns(5 * CYCLE_NS); /* applied at the next cycle */
  autd3_frame_t f = nop_frame(AUTD3_PROTOCOL_NEW);
  ASSERT_OK(autd3_client_send(c, &f, &g_shared));
  ASSERT_ERR(autd3_request_poll(g_shared, NULL), AUTD3_E_PENDING);
  ASSERT_ERR(autd3_request_wait_for(g_shared, 1, NULL), AUTD3_E_PENDING);
  ASSERT_ERR(autd3_request_poll(g_shared, NULL), AUTD3_E_PENDING); /* still valid */
  /* Another thread's wait takes it; from then on this thread is refused. */
  autd3__thread_t th;
  atomic_store(&g_owner_result, 1);
  ASSERT_OK(autd3__thread_start(&th, owner_wait, NULL, "owner-wait"));
  autd3_err_t e = AUTD3_E_PENDING;
  for (int i = 0; i < 100000 && e == AUTD3_E_PENDING; i++) {
    e = autd3_request_wait_for(g_shared, 0, NULL);
    if (e == AUTD3_E_PENDING) autd3__sleep_ns(10000);
  }
  ASSERT_ERR(e, AUTD3_E_INVALID_HANDLE);
  ASSERT_CONTAINS(autd3_last_error(), "in use by another wait");
  ASSERT_OK(autd3_emulator_inject(autd3_client_link(c), 0, &thaw));
  autd3__thread_join(&th);
  ASSERT_EQ(atomic_load(&g_owner_result), AUTD3_OK);
  assert_stale(g_shared);
  ASSERT_OK(autd3_client_close(c));
}
