/*
 * The remaining output commands (include/autd3/command.h): compressed
 * patterns, pulse-width table, force fan, GPIO inputs and outputs. Layouts:
 * crate autd3-cpu-wire 0.9.0 src/payload (write_pattern_compressed.rs,
 * pwe.rs, force_fan.rs, gpio_in.rs, gpio_out.rs); the values the 0.9 client
 * puts in them: crate autd3-rs 0.9.0 src/commands/operation
 * (write_pattern_compressed.rs, set_pulse_width_table.rs, set_gpio_out.rs).
 */
#include <math.h>
#include <string.h>

#include "autd3/command.h"
#include "autd3/link_driver.h" /* autd3_set_error */
#include "command/encode.h"

#define PI_ 3.14159265358979323846 /* M_PI is POSIX, not C11 */
#define PATTERN_INDICES 1024u
#define SLOT_WORDS 256u
#define WPC_HEADER 8u
#define GPIO_VALUE_MASK 0x00FFFFFFFFFFFFFFull

autd3_err_t autd3_cmd_write_pattern_compressed(autd3_command_t *out, uint8_t bank, uint32_t index,
                                               autd3_pattern_compression_t format, const uint8_t *phases, size_t count) {
  static const char fn[] = "autd3_cmd_write_pattern_compressed";
  autd3_err_t err = autd3__cmd_start(out, AUTD3_CMD_WRITE_PATTERN_COMPRESSED, fn);
  if (err != AUTD3_OK) return err;
  if (bank > 1) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: bank %u: must be 0 or 1", fn, (unsigned)bank);
  if (format != AUTD3_PATTERN_PHASE_FULL && format != AUTD3_PATTERN_PHASE_HALF)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: unknown format %d", fn, (int)format);
  size_t max = format == AUTD3_PATTERN_PHASE_FULL ? 2 : 4;
  if (count < 1 || count > max)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: %zu patterns: this format packs 1..%zu per frame", fn, count, max);
  if (phases == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: phases is NULL", fn);
  if (index >= PATTERN_INDICES || count > PATTERN_INDICES - index)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: indices %u..%zu: a bank has %u", fn, (unsigned)index, index + count - 1,
                           PATTERN_INDICES);
  uint8_t *p = out->payload;
  p[0] = bank;
  p[1] = (uint8_t)format;
  p[2] = (uint8_t)count;
  autd3__put32(p + 4, index * SLOT_WORDS);
  /* Word t holds transducer t of every pattern: pattern g in byte g
   * (PHASE_FULL) or in nibble g, the phase's high nibble (PHASE_HALF). */
  const unsigned shift = format == AUTD3_PATTERN_PHASE_FULL ? 8 : 4, drop = format == AUTD3_PATTERN_PHASE_FULL ? 0 : 4;
  for (size_t t = 0; t < AUTD3_NUM_TRANSDUCERS; t++) {
    uint16_t w = 0;
    for (size_t g = 0; g < count; g++) w = (uint16_t)(w | (uint16_t)(phases[g * AUTD3_NUM_TRANSDUCERS + t] >> drop) << (shift * g));
    autd3__put16(p + WPC_HEADER + 2 * t, w);
  }
  out->len = (uint16_t)(WPC_HEADER + 2 * AUTD3_NUM_TRANSDUCERS);
  return AUTD3_OK;
}

void autd3_pulse_width_table_default(uint16_t table[AUTD3_PULSE_WIDTH_TABLE_SIZE]) {
  if (table == NULL) return;
  for (int i = 0; i < AUTD3_PULSE_WIDTH_TABLE_SIZE; i++)
    table[i] = (uint16_t)floor(asin(i / 255.0) / PI_ * AUTD3_PULSE_WIDTH_PERIOD + 0.5);
}

autd3_err_t autd3_cmd_pulse_width_table(autd3_command_t *out, const uint16_t table[AUTD3_PULSE_WIDTH_TABLE_SIZE]) {
  static const char fn[] = "autd3_cmd_pulse_width_table";
  autd3_err_t err = autd3__cmd_start(out, AUTD3_CMD_SET_PULSE_WIDTH_TABLE, fn);
  if (err != AUTD3_OK) return err;
  if (table == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: table is NULL", fn);
  for (int i = 0; i < AUTD3_PULSE_WIDTH_TABLE_SIZE; i++) {
    if (table[i] >= AUTD3_PULSE_WIDTH_PERIOD)
      return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: entry %d = %u: must be 0..%d", fn, i, (unsigned)table[i],
                             AUTD3_PULSE_WIDTH_PERIOD - 1);
    autd3__put16(out->payload + 2 * i, table[i]);
  }
  out->len = 2 * AUTD3_PULSE_WIDTH_TABLE_SIZE;
  return AUTD3_OK;
}

autd3_err_t autd3_cmd_force_fan(autd3_command_t *out, bool on) {
  autd3_err_t err = autd3__cmd_start(out, AUTD3_CMD_FORCE_FAN, "autd3_cmd_force_fan");
  if (err != AUTD3_OK) return err;
  out->payload[0] = on ? 1 : 0;
  out->len = 1;
  return AUTD3_OK;
}

autd3_err_t autd3_cmd_emulate_gpio_in(autd3_command_t *out, const bool in[4]) {
  static const char fn[] = "autd3_cmd_emulate_gpio_in";
  autd3_err_t err = autd3__cmd_start(out, AUTD3_CMD_EMULATE_GPIO_IN, fn);
  if (err != AUTD3_OK) return err;
  if (in == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: in is NULL", fn);
  for (int i = 0; i < 4; i++) out->payload[i] = in[i] ? 1 : 0;
  out->len = 4;
  return AUTD3_OK;
}

/* The parameter's range per type; the value as the FPGA takes it. */
static autd3_err_t gpio_word(const autd3_gpio_out_t *o, int pin, const char *fn, uint64_t *word) {
  uint64_t v = o->value, max = 0;
  switch (o->type) {
    case AUTD3_GPIO_OUT_NONE:
    case AUTD3_GPIO_OUT_BASE_SIGNAL:
    case AUTD3_GPIO_OUT_THERMO:
    case AUTD3_GPIO_OUT_FORCE_FAN:
    case AUTD3_GPIO_OUT_SYNC:
    case AUTD3_GPIO_OUT_MOD_BANK:
    case AUTD3_GPIO_OUT_PATTERN_BANK:
    case AUTD3_GPIO_OUT_IS_STM_MODE:
    case AUTD3_GPIO_OUT_SYNC_DIFF: max = 0; break;
    case AUTD3_GPIO_OUT_MOD_IDX:
    case AUTD3_GPIO_OUT_PATTERN_IDX: max = 0xFFFF; break;
    case AUTD3_GPIO_OUT_PWM_OUT: max = AUTD3_NUM_TRANSDUCERS - 1; break;
    case AUTD3_GPIO_OUT_DIRECT: max = 1; break;
    case AUTD3_GPIO_OUT_SYS_TIME_EQ:
      /* DC ns → the FPGA's system-time counter, as the reference converts
       * it (set_gpio_out.rs): ((ns / 3125) << 6) >> 9. */
      v = ((v / 3125u) << 6) >> 9;
      max = GPIO_VALUE_MASK;
      break;
    default: return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: output %d: unknown type 0x%02X", fn, pin, (unsigned)o->type);
  }
  if (v > max)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: output %d (type 0x%02X): parameter %llu: must be 0..%llu", fn, pin,
                           (unsigned)o->type, (unsigned long long)o->value, (unsigned long long)max);
  *word = ((uint64_t)o->type << 56) | v;
  return AUTD3_OK;
}

autd3_err_t autd3_cmd_gpio_out(autd3_command_t *out, const autd3_gpio_out_t outputs[4]) {
  static const char fn[] = "autd3_cmd_gpio_out";
  autd3_err_t err = autd3__cmd_start(out, AUTD3_CMD_SET_GPIO_OUT, fn);
  if (err != AUTD3_OK) return err;
  if (outputs == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: outputs is NULL", fn);
  for (int i = 0; i < 4; i++) {
    uint64_t w = 0;
    if ((err = gpio_word(&outputs[i], i, fn, &w)) != AUTD3_OK) return err;
    autd3__put64(out->payload + 8 * i, w);
  }
  out->len = 32;
  return AUTD3_OK;
}
