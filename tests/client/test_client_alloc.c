/*
 * Proof that the cycle path does not allocate: this binary interposes
 * malloc/calloc/realloc/free/posix_memalign/aligned_alloc with counting
 * wrappers around glibc's own allocator. The counter is armed after
 * autd3_client_open() returns and disarmed before autd3_client_close(); in
 * between, frames are pipelined over the emulator link: 10 000 with the
 * new-generation protocol, 1 000 with the v12 one (stop-and-wait: one frame
 * per round trip). Every thread counts (the bus thread, the emulator's, this
 * one), so the assertion covers send/wait on the user side as well as each
 * protocol's cycle path.
 *
 * Under AddressSanitizer the allocator belongs to ASan, so the test skips there.
 */
#include "client/client_fixture.h"

#ifndef FX_ASAN
#include <malloc.h>
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static _Atomic int armed;
static _Atomic uint64_t allocs, frees;

void *malloc(size_t n) {
  if (atomic_load_explicit(&armed, memory_order_relaxed)) atomic_fetch_add(&allocs, 1);
  return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
  if (atomic_load_explicit(&armed, memory_order_relaxed)) atomic_fetch_add(&allocs, 1);
  return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
  if (atomic_load_explicit(&armed, memory_order_relaxed)) atomic_fetch_add(&allocs, 1);
  return __libc_realloc(p, n);
}
void free(void *p) {
  if (p && atomic_load_explicit(&armed, memory_order_relaxed)) atomic_fetch_add(&frees, 1);
  __libc_free(p);
}
int posix_memalign(void **out, size_t align, size_t n) {
  if (atomic_load_explicit(&armed, memory_order_relaxed)) atomic_fetch_add(&allocs, 1);
  void *p = __libc_memalign(align, n);
  if (p == NULL) return 12; /* ENOMEM */
  *out = p;
  return 0;
}
void *aligned_alloc(size_t align, size_t n) {
  if (atomic_load_explicit(&armed, memory_order_relaxed)) atomic_fetch_add(&allocs, 1);
  return __libc_memalign(align, n);
}
#endif

#ifndef FX_ASAN
/* Self-check: the interposer sees allocations at all (else a 0 below proves nothing). */
static void interposer_counts(void) {
  atomic_store(&armed, 1);
  void *volatile probe = malloc(16);
  free(probe);
  atomic_store(&armed, 0);
  ASSERT_EQ(atomic_load(&allocs), 1);
  atomic_store(&allocs, 0);
  atomic_store(&frees, 0);
}

/* Stream `count` copies of `f` through c, keeping the window full, with the
 * counter armed; then close. Every frame must have completed. */
static void stream_unallocated(autd3_client_t *c, const autd3_frame_t *f, int count) {
  interposer_counts();
  autd3_client_stats_t before, after;
  autd3_client_stats(c, &before);
  autd3_request_t *win[AUTD3_MAX_INFLIGHT];
  size_t head = 0, len = 0;
  atomic_store(&armed, 1);
  for (int i = 0; i < count; i++) {
    if (len == AUTD3_MAX_INFLIGHT) {
      ASSERT_OK(autd3_request_wait(win[head], NULL));
      head = (head + 1) % AUTD3_MAX_INFLIGHT;
      len--;
    }
    ASSERT_OK(autd3_client_send(c, f, &win[(head + len) % AUTD3_MAX_INFLIGHT]));
    len++;
  }
  while (len > 0) {
    ASSERT_OK(autd3_request_wait(win[head], NULL));
    head = (head + 1) % AUTD3_MAX_INFLIGHT;
    len--;
  }
  atomic_store(&armed, 0);
  uint64_t a = atomic_load(&allocs), fr = atomic_load(&frees);
  autd3_client_stats(c, &after);
  ASSERT_CLOSE_OK(c);
  ASSERT_EQ(after.completed - before.completed, (uint64_t)count);
  ASSERT_EQ(a, 0);
  ASSERT_EQ(fr, 0);
}
#endif

TEST(no_allocation_in_cycle_path) {
#ifdef FX_ASAN
  SKIP("AddressSanitizer owns the allocator; run this test in a build without AUTD3_SANITIZE");
#else
  autd3_client_t *c = fx_open_emu(2, 500000, NULL);
  autd3_frame_t f;
  ASSERT_OK(autd3_frame_xor_hash_bench(&f, 0, AUTD3_XOR_HASH_MAX_DATA));
  stream_unallocated(c, &f, 10000);
#endif
}

/* The same rule for the firmware-v12 protocol's bus loop (src/client/v12/). */
TEST(no_allocation_in_cycle_path_v12) {
#ifdef FX_ASAN
  SKIP("AddressSanitizer owns the allocator; run this test in a build without AUTD3_SANITIZE");
#else
  autd3_geometry_t *g = fx_geometry(2);
  autd3_link_option_t o = fx_emu_option(500000);
  o.u.emulator.firmware = AUTD3_EMU_FIRMWARE_V12;
  autd3_client_config_t cfg = autd3_client_config_default();
  cfg.protocol = AUTD3_PROTOCOL_V12;
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, &cfg, &c));
  autd3_geometry_free(g);
  ASSERT_EQ(autd3_client_protocol(c), AUTD3_PROTOCOL_V12);
  uint8_t nop[2] = {AUTD3_V12_TAG_NOP, 0};
  autd3_frame_t f;
  ASSERT_OK(autd3_v12_frame(&f, nop, 2, NULL, 0));
  stream_unallocated(c, &f, 1000);
#endif
}
