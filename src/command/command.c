/*
 * Encoders of the output commands (include/autd3/command.h). Layouts: crate
 * autd3-cpu-wire 0.9.0, src/payload (write_pattern.rs, config_pattern.rs,
 * change_pattern_bank.rs, write_pattern_fused.rs, silencer.rs,
 * phase_corr.rs, output_mask.rs); the values the 0.9 client puts in them:
 * crate autd3-rs 0.9.0, src/commands/operation (write_pattern_fused.rs,
 * set_silencer.rs). docs/commands.md describes them. Every range the
 * firmware would reject is refused here first, with a message.
 */
#include <string.h>

#include "autd3/command.h"
#include "autd3/link_driver.h" /* autd3_set_error */
#include "command/encode.h"

#define NUM_BANKS 2u
#define SLOT_WORDS 256u
#define EMISSION_RAM_WORDS (SLOT_WORDS * 1024u)
#define MAX_PATTERN_SIZE 1024u
#define EMISSION_TYPE_RAW 1u
#define WP_HEADER 8u  /* WritePatternPayload */
#define PF_HEADER 32u /* WritePatternFusedPayload */
#define SILENCER_FIXED_UPDATE_RATE 0x01u
#define SILENCER_STRICT 0x02u
#define SILENCER_DEFAULT_RATE 256u
#define SILENCER_DEFAULT_STEPS_INTENSITY 10u
#define SILENCER_DEFAULT_STEPS_PHASE 40u
#define ULTRASOUND_PERIOD_NS 25000u /* 40 kHz */

autd3_err_t autd3__cmd_start(autd3_command_t *out, uint8_t cmd, const char *fn) {
  if (out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: out is NULL", fn);
  memset(out, 0, sizeof *out);
  out->cmd = cmd;
  return AUTD3_OK;
}

autd3_err_t autd3__cmd_check_bank(uint8_t bank, const char *fn) {
  if (bank >= NUM_BANKS) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: bank %u: must be 0 or 1", fn, (unsigned)bank);
  return AUTD3_OK;
}

static void put_drives(uint8_t *p, const autd3_drive_t *d, size_t n) {
  for (size_t i = 0; i < n; i++) {
    p[2 * i] = d[i].phase; /* one 16-bit word: phase low, intensity high */
    p[2 * i + 1] = d[i].intensity;
  }
}

autd3_err_t autd3_cmd_write_pattern(autd3_command_t *out, uint8_t bank, uint32_t offset, const autd3_drive_t *drives, size_t n) {
  static const char fn[] = "autd3_cmd_write_pattern";
  autd3_err_t err = autd3__cmd_start(out, AUTD3_CMD_WRITE_PATTERN_BUFFER, fn);
  if (err != AUTD3_OK) return err;
  if ((err = autd3__cmd_check_bank(bank, fn)) != AUTD3_OK) return err;
  const size_t max = (AUTD3_PAYLOAD_BYTES - WP_HEADER) / 2;
  if (drives == NULL && n > 0) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: drives is NULL", fn);
  if (n > max) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: %zu drives: at most %zu per frame", fn, n, max);
  if (offset > EMISSION_RAM_WORDS || n > EMISSION_RAM_WORDS - offset)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: words %u..%u: the pattern RAM has %u words", fn, (unsigned)offset,
                           (unsigned)(offset + n), EMISSION_RAM_WORDS);
  out->payload[0] = bank;
  autd3__put32(out->payload + 2, offset);
  autd3__put16(out->payload + 6, (uint16_t)(2 * n));
  put_drives(out->payload + WP_HEADER, drives, n);
  out->len = (uint16_t)(WP_HEADER + 2 * n);
  return AUTD3_OK;
}

autd3_err_t autd3_cmd_config_pattern(autd3_command_t *out, uint8_t bank, uint16_t divider, uint32_t size, uint16_t rep) {
  static const char fn[] = "autd3_cmd_config_pattern";
  autd3_err_t err = autd3__cmd_start(out, AUTD3_CMD_CONFIG_PATTERN, fn);
  if (err != AUTD3_OK) return err;
  if ((err = autd3__cmd_check_bank(bank, fn)) != AUTD3_OK) return err;
  if (divider == 0) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: divider 0: must be 1..65535", fn);
  if (size < 1 || size > MAX_PATTERN_SIZE)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: size %u: must be 1..%u", fn, (unsigned)size, MAX_PATTERN_SIZE);
  if (size < 2 && rep != AUTD3_LOOP_INFINITE)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: a finite loop (rep %u) needs at least 2 patterns", fn, (unsigned)rep);
  out->payload[0] = bank;
  out->payload[1] = EMISSION_TYPE_RAW;
  autd3__put16(out->payload + 2, divider);
  autd3__put32(out->payload + 4, size);
  autd3__put16(out->payload + 12, rep);
  out->len = 14;
  return AUTD3_OK;
}

autd3_err_t autd3_cmd_change_pattern_bank(autd3_command_t *out, uint8_t bank, const autd3_transition_t *transition) {
  return autd3__cmd_change_bank(out, AUTD3_CMD_CHANGE_PATTERN_BANK, bank, transition, "autd3_cmd_change_pattern_bank");
}

autd3_err_t autd3__cmd_change_bank(autd3_command_t *out, uint8_t cmd, uint8_t bank, const autd3_transition_t *transition,
                                   const char *fn) {
  autd3_err_t err = autd3__cmd_start(out, cmd, fn);
  if (err != AUTD3_OK) return err;
  if ((err = autd3__cmd_check_bank(bank, fn)) != AUTD3_OK) return err;
  if (transition == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: transition is NULL", fn);
  if ((err = autd3__check_transition_mode(transition, fn)) != AUTD3_OK) return err;
  out->payload[0] = bank;
  out->payload[1] = (uint8_t)transition->mode;
  autd3__put64(out->payload + 2, transition->value);
  autd3__put32(out->payload + 10, transition->margin_ns);
  out->len = 14;
  return AUTD3_OK;
}

autd3_err_t autd3_cmd_write_pattern_fused(autd3_command_t *out, uint8_t bank, const autd3_drive_t drives[AUTD3_NUM_TRANSDUCERS],
                                          uint16_t divider, const autd3_transition_t *transition) {
  static const char fn[] = "autd3_cmd_write_pattern_fused";
  autd3_err_t err = autd3__cmd_start(out, AUTD3_CMD_WRITE_PATTERN_FUSED, fn);
  if (err != AUTD3_OK) return err;
  if ((err = autd3__cmd_check_bank(bank, fn)) != AUTD3_OK) return err;
  if (drives == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: drives is NULL", fn);
  if (divider == 0) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: divider 0: must be 1..65535", fn);
  autd3_transition_t imm = {AUTD3_TRANSITION_IMMEDIATE, 0, 0};
  const autd3_transition_t *t = transition ? transition : &imm;
  if ((err = autd3__check_transition(t, AUTD3_LOOP_INFINITE, fn)) != AUTD3_OK) return err;
  uint8_t *p = out->payload;
  p[0] = bank;
  p[1] = EMISSION_TYPE_RAW;
  autd3__put16(p + 2, divider);
  autd3__put32(p + 4, 1); /* a single pattern */
  p[8] = 0;        /* num_foci: raw */
  p[9] = (uint8_t)t->mode;
  autd3__put16(p + 10, 0); /* sound speed: foci only */
  autd3__put16(p + 12, AUTD3_LOOP_INFINITE);
  autd3__put16(p + 14, 2 * AUTD3_NUM_TRANSDUCERS);
  autd3__put64(p + 16, t->value);
  autd3__put32(p + 24, t->margin_ns);
  put_drives(p + PF_HEADER, drives, AUTD3_NUM_TRANSDUCERS);
  out->len = (uint16_t)(PF_HEADER + 2 * AUTD3_NUM_TRANSDUCERS);
  return AUTD3_OK;
}

static void put_silencer(autd3_command_t *out, uint8_t flag, uint16_t rate_i, uint16_t rate_p, uint16_t steps_i, uint16_t steps_p) {
  out->payload[0] = flag;
  autd3__put16(out->payload + 2, rate_i);
  autd3__put16(out->payload + 4, rate_p);
  autd3__put16(out->payload + 6, steps_i);
  autd3__put16(out->payload + 8, steps_p);
  out->len = 10;
}

autd3_err_t autd3_cmd_silencer_fixed_update_rate(autd3_command_t *out, uint16_t intensity, uint16_t phase) {
  static const char fn[] = "autd3_cmd_silencer_fixed_update_rate";
  autd3_err_t err = autd3__cmd_start(out, AUTD3_CMD_SET_SILENCER, fn);
  if (err != AUTD3_OK) return err;
  if (intensity == 0 || phase == 0)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: rates %u (intensity), %u (phase): must be 1..65535", fn,
                           (unsigned)intensity, (unsigned)phase);
  /* The completion fields carry the defaults, as the 0.9 client sends them. */
  put_silencer(out, SILENCER_FIXED_UPDATE_RATE, intensity, phase, SILENCER_DEFAULT_STEPS_INTENSITY, SILENCER_DEFAULT_STEPS_PHASE);
  return AUTD3_OK;
}

/* set_silencer.rs completion_time_to_steps: whole 40 kHz periods, 1..65535 */
static autd3_err_t steps_of(uint64_t ns, const char *what, const char *fn, uint16_t *out) {
  if (ns % ULTRASOUND_PERIOD_NS != 0)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: %s completion time %llu ns: must be a multiple of 25000 ns (one 40 kHz period)",
                           fn, what, (unsigned long long)ns);
  uint64_t steps = ns / ULTRASOUND_PERIOD_NS;
  if (steps < 1 || steps > 0xFFFF)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: %s completion time %llu ns: must be 25 us..%llu ns", fn, what,
                           (unsigned long long)ns, 0xFFFFull * ULTRASOUND_PERIOD_NS);
  *out = (uint16_t)steps;
  return AUTD3_OK;
}

autd3_err_t autd3_cmd_silencer_fixed_completion_time(autd3_command_t *out, uint64_t intensity_ns, uint64_t phase_ns, bool strict) {
  static const char fn[] = "autd3_cmd_silencer_fixed_completion_time";
  autd3_err_t err = autd3__cmd_start(out, AUTD3_CMD_SET_SILENCER, fn);
  if (err != AUTD3_OK) return err;
  uint16_t si = 0, sp = 0;
  if ((err = steps_of(intensity_ns, "intensity", fn, &si)) != AUTD3_OK) return err;
  if ((err = steps_of(phase_ns, "phase", fn, &sp)) != AUTD3_OK) return err;
  put_silencer(out, strict ? SILENCER_STRICT : 0, SILENCER_DEFAULT_RATE, SILENCER_DEFAULT_RATE, si, sp);
  return AUTD3_OK;
}

autd3_err_t autd3_cmd_silencer_default(autd3_command_t *out) {
  return autd3_cmd_silencer_fixed_completion_time(out, (uint64_t)SILENCER_DEFAULT_STEPS_INTENSITY * ULTRASOUND_PERIOD_NS,
                                                  (uint64_t)SILENCER_DEFAULT_STEPS_PHASE * ULTRASOUND_PERIOD_NS, true);
}

autd3_err_t autd3_cmd_silencer_disable(autd3_command_t *out) {
  return autd3_cmd_silencer_fixed_completion_time(out, ULTRASOUND_PERIOD_NS, ULTRASOUND_PERIOD_NS, false);
}

autd3_err_t autd3_cmd_phase_correction(autd3_command_t *out, const uint8_t phase[AUTD3_NUM_TRANSDUCERS]) {
  static const char fn[] = "autd3_cmd_phase_correction";
  autd3_err_t err = autd3__cmd_start(out, AUTD3_CMD_SET_PHASE_CORRECTION, fn);
  if (err != AUTD3_OK) return err;
  if (phase == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: phase is NULL", fn);
  memcpy(out->payload, phase, AUTD3_NUM_TRANSDUCERS);
  out->len = AUTD3_NUM_TRANSDUCERS;
  return AUTD3_OK;
}

autd3_err_t autd3_cmd_output_mask(autd3_command_t *out, const bool enabled[AUTD3_NUM_TRANSDUCERS]) {
  static const char fn[] = "autd3_cmd_output_mask";
  autd3_err_t err = autd3__cmd_start(out, AUTD3_CMD_SET_OUTPUT_MASK, fn);
  if (err != AUTD3_OK) return err;
  if (enabled == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: enabled is NULL", fn);
  for (int i = 0; i < AUTD3_NUM_TRANSDUCERS; i++) out->payload[i] = enabled[i] ? 1 : 0;
  out->len = AUTD3_NUM_TRANSDUCERS;
  return AUTD3_OK;
}

/* ---- shared checks (encode.h) ---------------------------------------------------------- */

autd3_err_t autd3__check_transition_mode(const autd3_transition_t *t, const char *fn) {
  switch (t->mode) {
    case AUTD3_TRANSITION_SYNC_IDX:
    case AUTD3_TRANSITION_SYS_TIME:
    case AUTD3_TRANSITION_EXT:
    case AUTD3_TRANSITION_IMMEDIATE: return AUTD3_OK;
    case AUTD3_TRANSITION_GPIO:
      if (t->value <= 3) return AUTD3_OK;
      return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: GPIO transition on input %llu: must be 0..3", fn, (unsigned long long)t->value);
    default: return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: unknown transition mode 0x%02X", fn, (unsigned)t->mode);
  }
}

autd3_err_t autd3__check_transition(const autd3_transition_t *t, uint16_t rep, const char *fn) {
  autd3_err_t err = autd3__check_transition_mode(t, fn);
  if (err != AUTD3_OK) return err;
  bool infinite = rep == AUTD3_LOOP_INFINITE;
  bool for_infinite = t->mode == AUTD3_TRANSITION_IMMEDIATE || t->mode == AUTD3_TRANSITION_EXT;
  if (infinite && !for_infinite)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: transition 0x%02X is for finite loops; use IMMEDIATE or EXT", fn,
                           (unsigned)t->mode);
  if (!infinite && for_infinite)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: transition 0x%02X is for infinite loops; this one loops %u times", fn,
                           (unsigned)t->mode, (unsigned)rep + 1u);
  return AUTD3_OK;
}

/* ---- frames ---------------------------------------------------------------------------- */

autd3_err_t autd3_frame_buffer_set(autd3_frame_buffer_t *buf, size_t dev, const autd3_command_t *cmd) {
  if (buf == NULL || cmd == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_frame_buffer_set: NULL argument");
  if (dev >= AUTD3_MAX_DEVICES)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_frame_buffer_set: device %zu: must be < %d", dev, AUTD3_MAX_DEVICES);
  if (buf->num_devices > AUTD3_MAX_DEVICES)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_frame_buffer_set: buffer not initialised (num_devices %zu)", buf->num_devices);
  buf->cmds[dev] = cmd->cmd;
  memcpy(buf->payloads[dev], cmd->payload, AUTD3_PAYLOAD_BYTES);
  if (dev + 1 > buf->num_devices) buf->num_devices = dev + 1;
  return AUTD3_OK;
}

autd3_err_t autd3_frame_buffer_frame(const autd3_frame_buffer_t *buf, autd3_frame_t *out) {
  if (buf == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_frame_buffer_frame: NULL argument");
  if (buf->num_devices < 1 || buf->num_devices > AUTD3_MAX_DEVICES)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_frame_buffer_frame: %zu devices set: must be 1..%d", buf->num_devices,
                           AUTD3_MAX_DEVICES);
  memset(out, 0, sizeof *out);
  out->cmd = buf->cmds[0];
  out->device_cmds = buf->cmds;
  out->device_payloads = &buf->payloads[0][0];
  return AUTD3_OK;
}

autd3_err_t autd3_frame_broadcast(const autd3_command_t *cmd, autd3_frame_t *out) {
  if (cmd == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_frame_broadcast: NULL argument");
  memset(out, 0, sizeof *out);
  out->cmd = cmd->cmd;
  out->len = cmd->len;
  memcpy(out->payload, cmd->payload, AUTD3_PAYLOAD_BYTES);
  return AUTD3_OK;
}
