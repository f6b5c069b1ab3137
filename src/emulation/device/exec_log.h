/*
 * The device's own execution log: one entry per frame the firmware model
 * executed (handle_frame: seq == expected, or a Reset), in a bounded ring
 * that a reader drains. It is the ground truth the exactly-once tests compare
 * the client's per-device outcomes with (docs/reliability.md).
 *
 * Single producer (the thread that owns the device: the emulator link's bus
 * thread, autd3-emu's loop, the TwinCAT runtime's task), single consumer (any
 * one reader at a time): head/tail are atomics, so draining needs no lock and
 * the producer never waits. Storage is inside the struct (the owner allocates
 * it with the device); pushing allocates nothing. A full ring drops the new
 * entry and counts it; entry indices keep counting, so the reader also sees
 * the gap.
 */
#ifndef AUTD3_EMULATION_DEVICE_EXEC_LOG_H
#define AUTD3_EMULATION_DEVICE_EXEC_LOG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "autd3/emulator.h"

typedef struct autd3_exec_log {
  _Atomic uint64_t head;    /* entries pushed (producer) */
  _Atomic uint64_t tail;    /* entries drained (consumer) */
  _Atomic uint64_t dropped; /* entries lost to a full ring */
  uint32_t next_index;      /* producer: index of the next execution */
  uint16_t boot;            /* producer: power cycles so far */
  autd3_exec_entry_t ring[AUTD3_EXEC_LOG_CAPACITY];
} autd3_exec_log_t;

/* Producer side. */
void autd3_exec_log_push(autd3_exec_log_t *l, uint8_t seq, uint8_t cmd, uint8_t result, const uint8_t *payload);
void autd3_exec_log_note_boot(autd3_exec_log_t *l);

/* Consumer side: move up to `cap` oldest entries to `out`; returns how many.
 * `dropped` (may be NULL) gets the total count of entries lost so far. */
size_t autd3_exec_log_drain(autd3_exec_log_t *l, autd3_exec_entry_t *out, size_t cap, uint64_t *dropped);

#endif
