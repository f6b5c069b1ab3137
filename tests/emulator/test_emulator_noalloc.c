/* The emulator link's cycle path does no heap allocation: every malloc,
 * calloc and realloc the program makes is counted (linked with
 * -Wl,--wrap=...), and a run of cycles with faults injected and counters
 * read must not add to the count. */
#include <stdatomic.h>
#include <stdlib.h>

#include "autd3/emulator.h"
#include "autd3/link.h"
#include "harness/test.h"

static _Atomic long allocs;
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n) { allocs++; return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { allocs++; return __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { allocs++; return __real_realloc(p, n); }

TEST(cycle_does_not_allocate) {
  autd3_geometry_t *g;
  ASSERT_OK(autd3_geometry_create(4, NULL, &g));
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  o.u.emulator.cycle_ns = 100000;
  autd3_link_t *l;
  long before_open = allocs;
  ASSERT_OK(autd3_link_open(&o, g, &l));
  ASSERT_GT(allocs, before_open); /* the wrapper does see the library's allocations */
  static uint8_t tx[4 * AUTD3_TX_FRAME_BYTES], rx[4 * AUTD3_RX_FRAME_BYTES];
  long before = allocs;
  for (int k = 0; k < 200; k++) {
    for (int i = 0; i < 4; i++) autd3_tx_encode(tx + i * AUTD3_TX_FRAME_BYTES, (uint8_t)(k / 3), AUTD3_CMD_NOP, NULL, 0);
    if (k % 50 == 10) {
      autd3_device_fault_t f = {.drop_next = 1, .invalidate_rx = 1};
      ASSERT_OK(autd3_emulator_inject(l, (uint16_t)(k % 4), &f));
    }
    bool valid;
    ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
    autd3_device_counters_t c;
    ASSERT_OK(autd3_emulator_counters(l, 0, &c));
    if (k % 20 == 19) { /* the execution log records and drains without allocating too */
      static autd3_exec_entry_t ent[64];
      size_t n;
      ASSERT_OK(autd3_emulator_log_drain(l, (uint16_t)(k % 4), ent, 64, &n, NULL));
    }
  }
  long during = allocs - before;
  autd3_link_close(l);
  autd3_geometry_free(g);
  ASSERT_EQ(during, 0);
}
