/* The device execution log (see exec_log.h). */
#include "emulation/device/exec_log.h"

void autd3_exec_log_push(autd3_exec_log_t *l, uint8_t seq, uint8_t cmd, uint8_t result, const uint8_t *payload) {
  uint32_t index = l->next_index++;
  uint64_t head = atomic_load_explicit(&l->head, memory_order_relaxed);
  uint64_t tail = atomic_load_explicit(&l->tail, memory_order_acquire);
  if (head - tail >= AUTD3_EXEC_LOG_CAPACITY) {
    atomic_fetch_add_explicit(&l->dropped, 1, memory_order_relaxed);
    return;
  }
  autd3_exec_entry_t *e = &l->ring[head % AUTD3_EXEC_LOG_CAPACITY];
  e->index = index;
  /* Bytes 4..7 of the payload: in a tagged XorHash frame (u16 sleep_ms,
   * u16 data_len, data) the first four data bytes, i.e. the request id. */
  e->tag = (uint32_t)payload[4] | ((uint32_t)payload[5] << 8) | ((uint32_t)payload[6] << 16) | ((uint32_t)payload[7] << 24);
  e->boot = l->boot;
  e->seq = seq;
  e->cmd = cmd;
  e->result = result;
  atomic_store_explicit(&l->head, head + 1, memory_order_release);
}

void autd3_exec_log_note_boot(autd3_exec_log_t *l) { l->boot++; }

size_t autd3_exec_log_drain(autd3_exec_log_t *l, autd3_exec_entry_t *out, size_t cap, uint64_t *dropped) {
  uint64_t tail = atomic_load_explicit(&l->tail, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&l->head, memory_order_acquire);
  size_t n = 0;
  while (tail != head && n < cap) out[n++] = l->ring[tail++ % AUTD3_EXEC_LOG_CAPACITY];
  atomic_store_explicit(&l->tail, tail, memory_order_release);
  if (dropped) *dropped = atomic_load_explicit(&l->dropped, memory_order_relaxed);
  return n;
}
