/*
 * Shared by the command encoders (command.c, modulation.c, misc.c): the
 * start of every encoder, the bank check, the bank-change payload,
 * little-endian writers and the loop/transition pairing check.
 */
#ifndef AUTD3_COMMAND_ENCODE_H
#define AUTD3_COMMAND_ENCODE_H

#include <stdint.h>

#include "autd3/command.h"

static inline void autd3__put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static inline void autd3__put32(uint8_t *p, uint32_t v) {
  autd3__put16(p, (uint16_t)v);
  autd3__put16(p + 2, (uint16_t)(v >> 16));
}
static inline void autd3__put64(uint8_t *p, uint64_t v) {
  autd3__put32(p, (uint32_t)v);
  autd3__put32(p + 4, (uint32_t)(v >> 32));
}

/* Every encoder's start: out checked and zeroed, the opcode set. Errors: INVALID_ARGUMENT. */
autd3_err_t autd3__cmd_start(autd3_command_t *out, uint8_t cmd, const char *fn);
/* A pattern or modulation bank: 0 or 1. Errors: INVALID_ARGUMENT. */
autd3_err_t autd3__cmd_check_bank(uint8_t bank, const char *fn);
/* ChangePatternBank / ChangeModulationBank (cmd): one payload (bank, transition mode, value, margin). */
autd3_err_t autd3__cmd_change_bank(autd3_command_t *out, uint8_t cmd, uint8_t bank, const autd3_transition_t *transition,
                                   const char *fn);

/* The firmware accepts IMMEDIATE/EXT for an infinite loop (rep 0xFFFF) and
 * SYNC_IDX/SYS_TIME/GPIO for a finite one (crate autd3-cpu-fw 0.9.0 src/fpga.rs
 * transition_mode_violates_loop); refused here first, with a message. */
autd3_err_t autd3__check_transition(const autd3_transition_t *t, uint16_t rep, const char *fn);
/* The mode alone (a bank change: the loop is on the device). */
autd3_err_t autd3__check_transition_mode(const autd3_transition_t *t, const char *fn);

#endif
