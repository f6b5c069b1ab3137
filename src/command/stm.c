/*
 * Pattern STM (include/autd3/command.h): one device's frames for a sequence
 * of patterns, split as the 0.9 client splits them (crate autd3-rs 0.9.0
 * src/commands/stm/pattern.rs): every pattern into its own index of the
 * bank (a WritePatternBuffer each, or WritePatternCompressed packing 2 or 4
 * phase-only patterns), then ConfigPattern, then ChangePatternBank.
 */
#include <string.h>

#include "autd3/command.h"
#include "autd3/link_driver.h" /* autd3_set_error */
#include "command/encode.h"

#define PATTERN_INDICES 1024u
#define SLOT_WORDS 256u

autd3_err_t autd3_pattern_stm_commands(const autd3_pattern_stm_t *s, autd3_command_t *out, size_t cap, size_t *n) {
  static const char fn[] = "autd3_pattern_stm_commands";
  if (s == NULL || out == NULL || n == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: NULL argument", fn);
  *n = 0;
  if (s->drives == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: drives is NULL", fn);
  if (s->size < 2 || s->size > PATTERN_INDICES)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: %zu patterns: an STM has 2..%u", fn, s->size, PATTERN_INDICES);
  if (s->compression != 0 && s->compression != AUTD3_PATTERN_PHASE_FULL && s->compression != AUTD3_PATTERN_PHASE_HALF)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: unknown compression %d", fn, s->compression);
  autd3_err_t err;
  if (!s->later && (err = autd3__check_transition(&s->transition, s->rep, fn)) != AUTD3_OK) return err;
  const size_t per = s->compression == 0 ? 1 : s->compression == AUTD3_PATTERN_PHASE_FULL ? 2 : 4;
  const size_t writes = (s->size + per - 1) / per, need = writes + 1 + (s->later ? 0 : 1);
  if (cap < need) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: cap %zu: this STM needs %zu commands", fn, cap, need);
  size_t k = 0;
  for (size_t base = 0; base < s->size; base += per) {
    const autd3_drive_t *d = s->drives + base * AUTD3_NUM_TRANSDUCERS;
    if (s->compression == 0) {
      err = autd3_cmd_write_pattern(&out[k], s->bank, (uint32_t)(base * SLOT_WORDS), d, AUTD3_NUM_TRANSDUCERS);
    } else {
      size_t count = s->size - base < per ? s->size - base : per;
      uint8_t phases[4 * AUTD3_NUM_TRANSDUCERS];
      for (size_t i = 0; i < count * AUTD3_NUM_TRANSDUCERS; i++) phases[i] = d[i].phase; /* intensity: full */
      err = autd3_cmd_write_pattern_compressed(&out[k], s->bank, (uint32_t)base, (autd3_pattern_compression_t)s->compression, phases,
                                               count);
    }
    if (err != AUTD3_OK) return err;
    k++;
  }
  if ((err = autd3_cmd_config_pattern(&out[k++], s->bank, s->divider, (uint32_t)s->size, s->rep)) != AUTD3_OK) return err;
  if (!s->later && (err = autd3_cmd_change_pattern_bank(&out[k++], s->bank, &s->transition)) != AUTD3_OK) return err;
  *n = k;
  return AUTD3_OK;
}
