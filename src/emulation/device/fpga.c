/*
 * Output-side commands of the 0.9 firmware into the FPGA model (fpga.h).
 * Each handler checks what autd3-cpu-fw 0.9.0 checks, in the same order, so
 * the same invalid payload gives the same error code; a rejected command
 * changes nothing (the firmware validates before its first FPGA write).
 */
#include "emulation/device/fpga.h"

#include <math.h>
#include <string.h>

#include "emulation/device/device.h"
#include "geometry/geometry_internal.h"

/* Payload offsets (crate autd3-cpu-wire 0.9.0, src/payload; all little-endian). */
enum {
  WP_BANK = 0, WP_OFFSET = 2, WP_LEN = 6, WP_HEADER = 8, /* WritePatternPayload */
  CP_BANK = 0, CP_TYPE = 1, CP_DIV = 2, CP_SIZE = 4, CP_NUM_FOCI = 8, CP_SOUND_SPEED = 10, CP_REP = 12, /* ConfigPattern */
  PF_BANK = 0, PF_TYPE = 1, PF_DIV = 2, PF_SIZE = 4, PF_NUM_FOCI = 8, PF_TRANSITION_MODE = 9, PF_SOUND_SPEED = 10,
  PF_REP = 12, PF_LEN = 14, PF_TRANSITION_VALUE = 16, PF_MARGIN = 24, PF_HEADER = 32, /* WritePatternFused */
  CB_BANK = 0, CB_TRANSITION_MODE = 1, CB_TRANSITION_VALUE = 2, CB_MARGIN = 10, /* ChangePatternBank */
  SI_FLAG = 0, SI_RATE_I = 2, SI_RATE_P = 4, SI_STEPS_I = 6, SI_STEPS_P = 8 /* SilencerPayload */
};

#define EMISSION_TYPE_FOCI 0u
#define EMISSION_TYPE_RAW 1u
#define NUM_FOCI_MAX 8u
#define FOCUS_WORDS 4u
#define MAX_FOCI_TOTAL (AUTD3_FPGA_EMISSION_RAM_WORDS / FOCUS_WORDS)
#define BUFFER_SIZE_MIN 2u
#define TRANSITION_SYNC_IDX 0x00u
#define TRANSITION_SYS_TIME 0x01u
#define TRANSITION_GPIO 0x02u
#define TRANSITION_EXT 0xF0u
#define TRANSITION_IMMEDIATE 0xFFu
#define SYS_TIME_MARGIN_NS 10000000ull /* margin_ns 0 means 10 ms */
#define SILENCER_FIXED_UPDATE_RATE 0x01u
#define SILENCER_STRICT 0x02u
#define SILENCER_DEFAULT_RATE 256u
#define SILENCER_DEFAULT_STEPS_INTENSITY 10u
#define SILENCER_DEFAULT_STEPS_PHASE 40u

static uint16_t u16le(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t u32le(const uint8_t *p) { return (uint32_t)u16le(p) | ((uint32_t)u16le(p + 2) << 16); }
static uint64_t u64le(const uint8_t *p) { return (uint64_t)u32le(p) | ((uint64_t)u32le(p + 4) << 32); }

static void seq_init(autd3_fpga_seq_t *q, uint16_t cycle) {
  memset(q, 0, sizeof *q);
  for (int b = 0; b < AUTD3_FPGA_NUM_BANKS; b++) {
    q->cycle[b] = cycle;
    q->div[b] = 0xFFFF;
    q->rep[b] = AUTD3_FPGA_REP_INFINITE;
  }
  q->transition_mode = TRANSITION_SYNC_IDX;
}

void autd3_fpga_init(autd3_fpga_t *f) {
  for (int b = 0; b < AUTD3_FPGA_NUM_BANKS; b++) {
    f->pattern_mode[b] = EMISSION_TYPE_RAW;
    f->pattern_sound_speed[b] = 0;
    f->pattern_num_foci[b] = 0;
    memset(f->em[b], 0, AUTD3_NUM_TRANSDUCERS * sizeof f->em[b][0]); /* slot 0's 249 words only */
    f->mod[b][0] = f->mod[b][1] = 0xFF; /* modulation word 0 = 0xFFFF */
    f->guard_pattern_div[b] = 0xFFFF;
    f->guard_mod_div[b] = 0xFFFF;
  }
  seq_init(&f->pattern, 0);    /* a single pattern */
  seq_init(&f->modulation, 1); /* two samples */
  f->guard_pattern_bank = f->guard_mod_bank = 0;
  f->guard_strict = false;
  f->silencer_flag = 0;
  f->silencer_rate_intensity = SILENCER_DEFAULT_RATE;
  f->silencer_rate_phase = SILENCER_DEFAULT_RATE;
  f->silencer_steps_intensity = SILENCER_DEFAULT_STEPS_INTENSITY;
  f->silencer_steps_phase = SILENCER_DEFAULT_STEPS_PHASE;
  f->guard_steps_intensity = SILENCER_DEFAULT_STEPS_INTENSITY;
  f->guard_steps_phase = SILENCER_DEFAULT_STEPS_PHASE;
  memset(f->phase_corr, 0, sizeof f->phase_corr);
  memset(f->output_mask, 1, sizeof f->output_mask);
  /* fpga.rs init_tables: the arcsine table, so that amplitude is linear in
   * intensity × modulation: entry i = round(asin(i/255)/π · 512). */
  for (int i = 0; i < 256; i++) f->pwe[i] = (uint16_t)floor(asin(i / 255.0) / 3.14159265358979323846 * 512.0 + 0.5);
  f->force_fan = false; /* the control flags are written 0 */
  f->gpio_in = 0;
  memset(f->gpio_out, 0, sizeof f->gpio_out);
}

void autd3_fpga_power_on(autd3_fpga_t *f) {
  memset(f, 0, sizeof *f);
  autd3_fpga_init(f);
}

bool autd3_fpga_handles(uint8_t cmd) {
  switch (cmd) {
    case AUTD3_CMD_WRITE_PATTERN_BUFFER:
    case AUTD3_CMD_CONFIG_PATTERN:
    case AUTD3_CMD_CHANGE_PATTERN_BANK:
    case AUTD3_CMD_WRITE_PATTERN_FUSED:
    case AUTD3_CMD_WRITE_MODULATION_BUFFER:
    case AUTD3_CMD_CONFIG_MODULATION:
    case AUTD3_CMD_CHANGE_MODULATION_BANK:
    case AUTD3_CMD_WRITE_MODULATION_FUSED:
    case AUTD3_CMD_WRITE_PATTERN_COMPRESSED:
    case AUTD3_CMD_SET_PULSE_WIDTH_TABLE:
    case AUTD3_CMD_EMULATE_GPIO_IN:
    case AUTD3_CMD_SET_GPIO_OUT:
    case AUTD3_CMD_FORCE_FAN:
    case AUTD3_CMD_SET_SILENCER:
    case AUTD3_CMD_SET_PHASE_CORRECTION:
    case AUTD3_CMD_SET_OUTPUT_MASK: return true;
    default: return false;
  }
}

/* Pattern RAM write of `len` bytes at word `offset` of `bank`; only slot 0 is kept. */
static void write_em(autd3_fpga_t *f, uint8_t bank, uint32_t offset, const uint8_t *src, uint32_t len) {
  for (uint32_t i = 0; 2 * i < len; i++) {
    uint32_t w = offset + i;
    if (w >= AUTD3_FPGA_SLOT_WORDS) break;
    uint16_t hi = 2 * i + 1 < len ? src[2 * i + 1] : 0;
    f->em[bank][w] = (uint16_t)(src[2 * i] | (hi << 8));
  }
}

static bool violates_pattern_div(const autd3_fpga_t *f, uint16_t div) {
  return f->guard_strict && (div < f->guard_steps_intensity || div < f->guard_steps_phase);
}

typedef struct {
  uint8_t bank, type, num_foci;
  uint16_t div, sound_speed, rep;
  uint32_t size;
} pattern_cfg_t;

/* config_pattern.rs validate_pattern_config */
static uint8_t validate_config(const autd3_fpga_t *f, const pattern_cfg_t *c) {
  if (c->type != EMISSION_TYPE_FOCI && c->type != EMISSION_TYPE_RAW) return AUTD3_DEV_ERR_INVALID_PAYLOAD;
  bool invalid = c->bank >= AUTD3_FPGA_NUM_BANKS || c->div == 0 || c->size == 0 ||
                 (c->size < BUFFER_SIZE_MIN && c->rep != AUTD3_FPGA_REP_INFINITE);
  if (!invalid) {
    if (c->type == EMISSION_TYPE_RAW)
      invalid = c->size > AUTD3_FPGA_EMISSION_INDICES;
    else
      invalid = c->size < BUFFER_SIZE_MIN || c->num_foci == 0 || c->num_foci > NUM_FOCI_MAX ||
                c->size > MAX_FOCI_TOTAL / c->num_foci || c->sound_speed == 0;
  }
  if (invalid) return AUTD3_DEV_ERR_INVALID_PAYLOAD;
  if (violates_pattern_div(f, c->div)) return AUTD3_DEV_ERR_INVALID_SILENCER_SETTING;
  return AUTD3_DEV_ERR_NONE;
}

static void write_config(autd3_fpga_t *f, const pattern_cfg_t *c) {
  f->pattern_mode[c->bank] = c->type;
  f->pattern.cycle[c->bank] = (uint16_t)(c->size - 1);
  f->pattern.div[c->bank] = c->div;
  f->pattern_sound_speed[c->bank] = c->sound_speed;
  f->pattern_num_foci[c->bank] = c->num_foci;
  f->pattern.rep[c->bank] = c->rep;
  f->guard_pattern_div[c->bank] = c->div;
}

/* fpga.rs transition_mode_violates_loop: an infinite loop switches at once
 * (Immediate) or on the external signal (Ext); a finite one at a sync
 * index, a system time or a GPIO edge. */
static bool transition_violates_loop(uint16_t rep, uint8_t mode) {
  if (rep == AUTD3_FPGA_REP_INFINITE) return !(mode == TRANSITION_IMMEDIATE || mode == TRANSITION_EXT);
  return !(mode == TRANSITION_SYNC_IDX || mode == TRANSITION_SYS_TIME || mode == TRANSITION_GPIO);
}

static bool transition_known(uint8_t mode) {
  return mode == TRANSITION_SYNC_IDX || mode == TRANSITION_SYS_TIME || mode == TRANSITION_GPIO ||
         mode == TRANSITION_EXT || mode == TRANSITION_IMMEDIATE;
}

/* change_pattern_bank.rs validate_pattern_change and change_mod_bank.rs
 * validate_mod_change: the same checks, with the guard of their divider. */
static uint8_t validate_change(bool div_violates, uint8_t bank, uint16_t rep, uint8_t mode, uint64_t value, uint32_t margin_raw,
                               uint64_t sys_time_ns) {
  uint64_t margin = margin_raw == 0 ? SYS_TIME_MARGIN_NS : margin_raw;
  if (bank >= AUTD3_FPGA_NUM_BANKS) return AUTD3_DEV_ERR_INVALID_PAYLOAD;
  if (div_violates) return AUTD3_DEV_ERR_INVALID_SILENCER_SETTING;
  if (!transition_known(mode) || transition_violates_loop(rep, mode)) return AUTD3_DEV_ERR_INVALID_TRANSITION_MODE;
  if (mode == TRANSITION_SYS_TIME && value < sys_time_ns + margin) return AUTD3_DEV_ERR_MISS_TRANSITION_TIME;
  return AUTD3_DEV_ERR_NONE;
}

static void write_change(autd3_fpga_seq_t *q, uint8_t bank, uint8_t mode, uint64_t value) {
  q->transition_mode = mode;
  q->transition_value = value;
  q->req_bank = bank;
}

/* PATTERN_SET / MOD_SET: the FPGA arms the sequencer with the requested bank
 * (emu_fpga swapchain.rs set): an infinite loop plays at once, a finite loop
 * on another bank waits for its transition (time is not modelled, so it
 * stays pending). */
static void seq_set(autd3_fpga_seq_t *q) {
  uint8_t req = q->req_bank;
  uint8_t target = q->pending ? q->pending_bank : q->cur_bank;
  if (q->rep[req] == AUTD3_FPGA_REP_INFINITE) {
    q->cur_bank = req;
    q->pending = false;
  } else if (req != target) {
    q->pending_bank = req;
    q->pending = true;
  }
}

static uint8_t write_pattern(autd3_fpga_t *f, const uint8_t *pl) {
  uint8_t bank = pl[WP_BANK];
  uint32_t offset = u32le(pl + WP_OFFSET);
  uint16_t len = u16le(pl + WP_LEN);
  if (bank >= AUTD3_FPGA_NUM_BANKS || len % 2 != 0 || len > AUTD3_PAYLOAD_BYTES - WP_HEADER ||
      offset > AUTD3_FPGA_EMISSION_RAM_WORDS || (uint32_t)(len / 2) > AUTD3_FPGA_EMISSION_RAM_WORDS - offset)
    return AUTD3_DEV_ERR_INVALID_PAYLOAD;
  write_em(f, bank, offset, pl + WP_HEADER, len);
  return AUTD3_DEV_ERR_NONE;
}

/* write_pattern_compressed.rs: `count` phase-only patterns from one word per
 * transducer, each written at full intensity into its own index. */
static uint8_t write_pattern_compressed(autd3_fpga_t *f, const uint8_t *pl) {
  enum { WPC_BANK = 0, WPC_FORMAT = 1, WPC_COUNT = 2, WPC_OFFSET = 4, WPC_HEADER = 8 };
  uint8_t bank = pl[WPC_BANK], format = pl[WPC_FORMAT], count = pl[WPC_COUNT];
  uint32_t offset = u32le(pl + WPC_OFFSET);
  if (format != 1 && format != 2) return AUTD3_DEV_ERR_INVALID_PAYLOAD;
  uint8_t max = format == 1 ? 2 : 4;
  if (bank >= AUTD3_FPGA_NUM_BANKS || count < 1 || count > max || offset > AUTD3_FPGA_EMISSION_RAM_WORDS ||
      (uint32_t)(count - 1) * AUTD3_FPGA_SLOT_WORDS + AUTD3_NUM_TRANSDUCERS > AUTD3_FPGA_EMISSION_RAM_WORDS - offset)
    return AUTD3_DEV_ERR_INVALID_PAYLOAD;
  for (uint8_t g = 0; g < count; g++) {
    uint8_t slot[2 * AUTD3_NUM_TRANSDUCERS];
    for (int t = 0; t < AUTD3_NUM_TRANSDUCERS; t++) {
      uint16_t w = u16le(pl + WPC_HEADER + 2 * t);
      uint8_t phase;
      if (format == 1) {
        phase = (uint8_t)(w >> (8 * g));
      } else {
        uint8_t p4 = (uint8_t)((w >> (4 * g)) & 0x0F);
        phase = (uint8_t)(p4 << 4 | p4); /* the nibble repeated */
      }
      slot[2 * t] = phase;
      slot[2 * t + 1] = 0xFF;
    }
    write_em(f, bank, offset + (uint32_t)g * AUTD3_FPGA_SLOT_WORDS, slot, sizeof slot);
  }
  return AUTD3_DEV_ERR_NONE;
}

static uint8_t config_pattern(autd3_fpga_t *f, const uint8_t *pl) {
  pattern_cfg_t c = {.bank = pl[CP_BANK], .type = pl[CP_TYPE], .div = u16le(pl + CP_DIV), .size = u32le(pl + CP_SIZE),
                     .num_foci = pl[CP_NUM_FOCI], .sound_speed = u16le(pl + CP_SOUND_SPEED), .rep = u16le(pl + CP_REP)};
  uint8_t r = validate_config(f, &c);
  if (r != AUTD3_DEV_ERR_NONE) return r;
  write_config(f, &c);
  seq_set(&f->pattern);
  return AUTD3_DEV_ERR_NONE;
}


static bool violates_mod_div(const autd3_fpga_t *f, uint16_t div) { return f->guard_strict && div < f->guard_steps_intensity; }

/* ChangePatternBank and ChangeModulationBank: one payload, one check, on
 * the pattern or the modulation sequencer (and its silencer guard). */
static uint8_t change_bank(autd3_fpga_t *f, bool pattern, const uint8_t *pl, uint64_t sys_time_ns) {
  autd3_fpga_seq_t *q = pattern ? &f->pattern : &f->modulation;
  uint8_t bank = pl[CB_BANK];
  if (bank >= AUTD3_FPGA_NUM_BANKS) return AUTD3_DEV_ERR_INVALID_PAYLOAD;
  uint8_t mode = pl[CB_TRANSITION_MODE];
  uint64_t value = u64le(pl + CB_TRANSITION_VALUE);
  bool guard = pattern ? violates_pattern_div(f, f->guard_pattern_div[bank]) : violates_mod_div(f, f->guard_mod_div[bank]);
  uint8_t r = validate_change(guard, bank, q->rep[bank], mode, value, u32le(pl + CB_MARGIN), sys_time_ns);
  if (r != AUTD3_DEV_ERR_NONE) return r;
  write_change(q, bank, mode, value);
  if (pattern) f->guard_pattern_bank = bank;
  else f->guard_mod_bank = bank;
  seq_set(q);
  return AUTD3_DEV_ERR_NONE;
}

static uint8_t write_pattern_fused(autd3_fpga_t *f, const uint8_t *pl, uint64_t sys_time_ns) {
  pattern_cfg_t c = {.bank = pl[PF_BANK], .type = pl[PF_TYPE], .div = u16le(pl + PF_DIV), .size = u32le(pl + PF_SIZE),
                     .num_foci = pl[PF_NUM_FOCI], .sound_speed = u16le(pl + PF_SOUND_SPEED), .rep = u16le(pl + PF_REP)};
  uint16_t len = u16le(pl + PF_LEN);
  if (c.bank >= AUTD3_FPGA_NUM_BANKS || len % 2 != 0 || len > AUTD3_PAYLOAD_BYTES - PF_HEADER ||
      (c.type == EMISSION_TYPE_RAW && c.size != 1))
    return AUTD3_DEV_ERR_INVALID_PAYLOAD;
  uint8_t r = validate_config(f, &c);
  if (r != AUTD3_DEV_ERR_NONE) return r;
  uint8_t mode = pl[PF_TRANSITION_MODE];
  uint64_t value = u64le(pl + PF_TRANSITION_VALUE);
  r = validate_change(violates_pattern_div(f, c.div), c.bank, c.rep, mode, value, u32le(pl + PF_MARGIN), sys_time_ns);
  if (r != AUTD3_DEV_ERR_NONE) return r;
  write_em(f, c.bank, 0, pl + PF_HEADER, len);
  write_config(f, &c);
  write_change(&f->pattern, c.bank, mode, value);
  f->guard_pattern_bank = c.bank;
  seq_set(&f->pattern);
  return AUTD3_DEV_ERR_NONE;
}

/* ---- modulation (cmd/write_mod.rs, config_mod.rs, change_mod_bank.rs, write_mod_fused.rs) ---- */

/* Modulation RAM write of `len` bytes at sample `offset` (even): whole 16-bit
 * words, so an odd length also writes a zero into the sample after the data. */
static void write_mod(autd3_fpga_t *f, uint8_t bank, uint32_t offset, const uint8_t *src, uint32_t len) {
  for (uint32_t i = 0; i < len; i++) f->mod[bank][offset + i] = src[i];
  if (len % 2 != 0 && offset + len < AUTD3_FPGA_MOD_SAMPLES) f->mod[bank][offset + len] = 0;
}


static uint8_t validate_mod_config(const autd3_fpga_t *f, uint8_t bank, uint16_t div, uint32_t size) {
  if (bank >= AUTD3_FPGA_NUM_BANKS || div == 0 || size < BUFFER_SIZE_MIN || size > AUTD3_FPGA_MOD_SAMPLES)
    return AUTD3_DEV_ERR_INVALID_PAYLOAD;
  if (violates_mod_div(f, div)) return AUTD3_DEV_ERR_INVALID_SILENCER_SETTING;
  return AUTD3_DEV_ERR_NONE;
}

static void write_mod_config(autd3_fpga_t *f, uint8_t bank, uint16_t div, uint32_t size, uint16_t rep) {
  f->modulation.cycle[bank] = (uint16_t)(size - 1);
  f->modulation.div[bank] = div;
  f->modulation.rep[bank] = rep;
  f->guard_mod_div[bank] = div;
}

enum {
  WM_BANK = 0, WM_OFFSET = 2, WM_LEN = 6, WM_HEADER = 8,                            /* WriteModPayload */
  CM_BANK = 0, CM_DIV = 2, CM_SIZE = 4, CM_REP = 8,                                 /* ConfigModPayload */
  MF_BANK = 0, MF_TRANSITION_MODE = 1, MF_DIV = 2, MF_SIZE = 4, MF_REP = 8, MF_LEN = 10, MF_TRANSITION_VALUE = 12,
  MF_MARGIN = 20, MF_HEADER = 24                                                     /* WriteModulationFusedPayload */
};

static uint8_t write_modulation(autd3_fpga_t *f, const uint8_t *pl) {
  uint8_t bank = pl[WM_BANK];
  uint32_t offset = u32le(pl + WM_OFFSET);
  uint16_t len = u16le(pl + WM_LEN);
  if (bank >= AUTD3_FPGA_NUM_BANKS || offset % 2 != 0 || len > AUTD3_PAYLOAD_BYTES - WM_HEADER ||
      offset > AUTD3_FPGA_MOD_SAMPLES || len > AUTD3_FPGA_MOD_SAMPLES - offset)
    return AUTD3_DEV_ERR_INVALID_PAYLOAD;
  write_mod(f, bank, offset, pl + WM_HEADER, len);
  return AUTD3_DEV_ERR_NONE;
}

static uint8_t config_modulation(autd3_fpga_t *f, const uint8_t *pl) {
  uint8_t bank = pl[CM_BANK];
  uint16_t div = u16le(pl + CM_DIV), rep = u16le(pl + CM_REP);
  uint32_t size = u32le(pl + CM_SIZE);
  uint8_t r = validate_mod_config(f, bank, div, size);
  if (r != AUTD3_DEV_ERR_NONE) return r;
  write_mod_config(f, bank, div, size, rep);
  seq_set(&f->modulation);
  return AUTD3_DEV_ERR_NONE;
}


static uint8_t write_modulation_fused(autd3_fpga_t *f, const uint8_t *pl, uint64_t sys_time_ns) {
  uint8_t bank = pl[MF_BANK];
  uint16_t len = u16le(pl + MF_LEN);
  if (bank >= AUTD3_FPGA_NUM_BANKS || len > AUTD3_PAYLOAD_BYTES - MF_HEADER) return AUTD3_DEV_ERR_INVALID_PAYLOAD;
  uint16_t div = u16le(pl + MF_DIV), rep = u16le(pl + MF_REP);
  uint32_t size = u32le(pl + MF_SIZE);
  uint8_t r = validate_mod_config(f, bank, div, size);
  if (r != AUTD3_DEV_ERR_NONE) return r;
  uint8_t mode = pl[MF_TRANSITION_MODE];
  uint64_t value = u64le(pl + MF_TRANSITION_VALUE);
  r = validate_change(violates_mod_div(f, div), bank, rep, mode, value, u32le(pl + MF_MARGIN), sys_time_ns);
  if (r != AUTD3_DEV_ERR_NONE) return r;
  write_mod(f, bank, 0, pl + MF_HEADER, len);
  write_mod_config(f, bank, div, size, rep);
  write_change(&f->modulation, bank, mode, value);
  f->guard_mod_bank = bank;
  seq_set(&f->modulation);
  return AUTD3_DEV_ERR_NONE;
}

/* silencer.rs set_silencer: fixed update rate needs non-zero rates; fixed
 * completion needs non-zero steps and, in strict mode, the current
 * modulation and pattern dividers no shorter than the completion steps. */
static uint8_t set_silencer(autd3_fpga_t *f, const uint8_t *pl) {
  uint8_t flag = pl[SI_FLAG];
  uint16_t rate_i = u16le(pl + SI_RATE_I), rate_p = u16le(pl + SI_RATE_P);
  uint16_t steps_i = u16le(pl + SI_STEPS_I), steps_p = u16le(pl + SI_STEPS_P);
  if (flag & SILENCER_FIXED_UPDATE_RATE) {
    if (rate_i == 0 || rate_p == 0) return AUTD3_DEV_ERR_INVALID_PAYLOAD;
    f->guard_strict = false;
  } else {
    if (steps_i == 0 || steps_p == 0) return AUTD3_DEV_ERR_INVALID_PAYLOAD;
    if (flag & SILENCER_STRICT) {
      uint16_t mod_div = f->guard_mod_div[f->guard_mod_bank];
      uint16_t pat_div = f->guard_pattern_div[f->guard_pattern_bank];
      if (mod_div < steps_i || pat_div < steps_i || pat_div < steps_p) return AUTD3_DEV_ERR_INVALID_SILENCER_SETTING;
      f->guard_strict = true;
    } else {
      f->guard_strict = false;
    }
    f->guard_steps_intensity = steps_i;
    f->guard_steps_phase = steps_p;
  }
  f->silencer_rate_intensity = rate_i;
  f->silencer_rate_phase = rate_p;
  f->silencer_steps_intensity = steps_i;
  f->silencer_steps_phase = steps_p;
  f->silencer_flag = flag;
  return AUTD3_DEV_ERR_NONE;
}

uint8_t autd3_fpga_exec(autd3_fpga_t *f, uint8_t cmd, const uint8_t *pl, uint64_t sys_time_ns) {
  switch (cmd) {
    case AUTD3_CMD_WRITE_PATTERN_BUFFER: return write_pattern(f, pl);
    case AUTD3_CMD_CONFIG_PATTERN: return config_pattern(f, pl);
    case AUTD3_CMD_CHANGE_PATTERN_BANK: return change_bank(f, true, pl, sys_time_ns);
    case AUTD3_CMD_WRITE_PATTERN_FUSED: return write_pattern_fused(f, pl, sys_time_ns);
    case AUTD3_CMD_WRITE_MODULATION_BUFFER: return write_modulation(f, pl);
    case AUTD3_CMD_CONFIG_MODULATION: return config_modulation(f, pl);
    case AUTD3_CMD_CHANGE_MODULATION_BANK: return change_bank(f, false, pl, sys_time_ns);
    case AUTD3_CMD_WRITE_MODULATION_FUSED: return write_modulation_fused(f, pl, sys_time_ns);
    case AUTD3_CMD_SET_SILENCER: return set_silencer(f, pl);
    case AUTD3_CMD_WRITE_PATTERN_COMPRESSED: return write_pattern_compressed(f, pl);
    case AUTD3_CMD_SET_PULSE_WIDTH_TABLE: /* pwe.rs: 256 little-endian words, no check */
      for (int i = 0; i < 256; i++) f->pwe[i] = u16le(pl + 2 * i);
      return AUTD3_DEV_ERR_NONE;
    case AUTD3_CMD_FORCE_FAN: /* force_fan.rs: 0 or 1 */
      if (pl[0] > 1) return AUTD3_DEV_ERR_INVALID_PAYLOAD;
      f->force_fan = pl[0] == 1;
      return AUTD3_DEV_ERR_NONE;
    case AUTD3_CMD_EMULATE_GPIO_IN: /* gpio_in.rs: four 0/1 bytes */
      for (int i = 0; i < 4; i++)
        if (pl[i] > 1) return AUTD3_DEV_ERR_INVALID_PAYLOAD;
      f->gpio_in = (uint8_t)(pl[0] | pl[1] << 1 | pl[2] << 2 | pl[3] << 3);
      return AUTD3_DEV_ERR_NONE;
    case AUTD3_CMD_SET_GPIO_OUT: /* gpio_out.rs: four little-endian u64, no check */
      for (int i = 0; i < 4; i++) f->gpio_out[i] = u64le(pl + 8 * i);
      return AUTD3_DEV_ERR_NONE;
    case AUTD3_CMD_SET_PHASE_CORRECTION: memcpy(f->phase_corr, pl, AUTD3_NUM_TRANSDUCERS); return AUTD3_DEV_ERR_NONE;
    case AUTD3_CMD_SET_OUTPUT_MASK:
      for (int i = 0; i < AUTD3_NUM_TRANSDUCERS; i++) f->output_mask[i] = pl[i] != 0;
      return AUTD3_DEV_ERR_NONE;
    default: return AUTD3_DEV_ERR_UNKNOWN_CMD;
  }
}

uint8_t autd3_fpga_state_bits(const autd3_fpga_t *f) {
  uint8_t s = 0;
  if (f->modulation.cur_bank == 1) s |= AUTD3_DEV_FPGA_STATE_MOD_BANK;
  if (f->pattern.cur_bank == 1) s |= AUTD3_DEV_FPGA_STATE_PATTERN_BANK;
  if (f->pattern.cycle[f->pattern.cur_bank] == 0) s |= AUTD3_DEV_FPGA_STATE_PATTERN_MODE;
  if (f->pattern.pending || f->modulation.pending) s |= AUTD3_DEV_FPGA_STATE_TRANSITION_PENDING;
  return s;
}

/* ---- foci: the FPGA computes each transducer's drive from focal points ----
 * (crate autd3-rs-firmware-emulator 0.9.0, src/emu_fpga/foci.rs, which
 * models the FPGA's pipeline). A focus is four RAM words: x, y, z as 18-bit
 * two's complement in units of 0.025 mm (device frame) at bits 0, 18 and 36,
 * and at bit 54 the step's intensity (first focus) or the focus's phase
 * offset (the others). Per transducer and focus the FPGA takes the integer
 * square root of the squared distance, turns it into a phase
 * q = (dist << 14) / sound_speed (sound speed in m/s · 64, so q is in
 * 1/256 of a wavelength at 40 kHz) plus the offset, looks up sin and cos in a
 * 256-entry table, averages them over the foci, and reads the phase back from
 * a 128 × 128 arctangent table. Both tables are generated here from their
 * definitions (sin: round(127.5 + 127.5 · sin(2πi/256)); atan: the angle of
 * (cos − 64, sin − 64), negated, in 1/256 turns, rounded): the differential
 * test (tests/command/test_command_diff.c) checks the result against the
 * reference's own tables. Arithmetic here is 64-bit: the reference emulator
 * squares in 32 bits, which wraps for a focus more than about 1.15 m from a
 * transducer (no focus a user would set; the differential test stays within). */
#define FOCUS_UNITS_PER_PITCH_X10 4064u /* 10.16 mm / 0.025 mm, times 10 */
#define TWO_PI 6.283185307179586

static int32_t sign_extend_18(uint64_t v) {
  uint32_t u = (uint32_t)(v & 0x3FFFFu);
  return (u & 0x20000u) ? (int32_t)(u | 0xFFFC0000u) : (int32_t)u;
}

static uint8_t sin_table(uint32_t i) { return (uint8_t)nearbyint(127.5 + 127.5 * sin(TWO_PI * (double)(i & 0xFFu) / 256.0)); }

static uint8_t atan_table(uint32_t s, uint32_t c) {
  double turns = -atan2((double)s - 64.0, (double)c - 64.0) / TWO_PI;
  return (uint8_t)((int32_t)nearbyint(turns * 256.0) & 0xFF);
}

static void foci_emissions(const autd3_fpga_t *f, uint8_t b, autd3_output_state_t *out) {
  const uint32_t num_foci = f->pattern_num_foci[b], c = f->pattern_sound_speed[b];
  uint8_t sin_t[256];
  for (uint32_t i = 0; i < 256; i++) sin_t[i] = sin_table(i);
  for (int i = 0; i < AUTD3_NUM_TRANSDUCERS; i++) {
    unsigned gx, gy;
    autd3__transducer_grid((size_t)i, &gx, &gy);
    /* the FPGA's transducer positions: the grid in 0.025 mm, rounded (never a tie) */
    const int64_t tx = (int64_t)((gx * FOCUS_UNITS_PER_PITCH_X10 + 5u) / 10u), ty = (int64_t)((gy * FOCUS_UNITS_PER_PITCH_X10 + 5u) / 10u);
    uint32_t ssum = 0, csum = 0;
    uint8_t intensity = 0;
    for (uint32_t k = 0; k < num_foci && c != 0; k++) {
      const uint16_t *w = &f->em[b][FOCUS_WORDS * k]; /* index 0: no time passes */
      const uint64_t v = (uint64_t)w[0] | (uint64_t)w[1] << 16 | (uint64_t)w[2] << 32 | (uint64_t)w[3] << 48;
      const int64_t dx = sign_extend_18(v) - tx, dy = sign_extend_18(v >> 18) - ty, dz = sign_extend_18(v >> 36);
      const uint8_t extra = (uint8_t)(v >> 54);
      uint32_t offset = 0;
      if (k == 0) intensity = extra;
      else offset = extra;
      const uint64_t d2 = (uint64_t)(dx * dx + dy * dy + dz * dz);
      uint64_t dist = (uint64_t)sqrt((double)d2); /* integer square root: corrected below */
      while (dist * dist > d2) dist--;
      while ((dist + 1) * (dist + 1) <= d2) dist++;
      const uint32_t q = (uint32_t)(((dist << 14) / c) + offset);
      ssum += sin_t[q & 0xFFu];
      csum += sin_t[(q + 64u) & 0xFFu];
    }
    uint8_t phase = 0;
    if (num_foci != 0 && c != 0) phase = atan_table((ssum / num_foci) >> 1, (csum / num_foci) >> 1);
    out->phase[i] = (uint8_t)(phase + f->phase_corr[i]);
    out->intensity[i] = f->output_mask[i] ? intensity : 0;
  }
}

void autd3_fpga_output(const autd3_fpga_t *f, autd3_output_state_t *out) {
  const uint8_t b = f->pattern.cur_bank;
  if (f->pattern_mode[b] == EMISSION_TYPE_FOCI) {
    foci_emissions(f, b, out);
  } else {
    for (int i = 0; i < AUTD3_NUM_TRANSDUCERS; i++) {
      uint16_t w = f->em[b][i];
      /* emissions_at: phase plus the correction (mod 256); intensity 0 where masked */
      out->phase[i] = (uint8_t)((w & 0xFFu) + f->phase_corr[i]);
      out->intensity[i] = f->output_mask[i] ? (uint8_t)(w >> 8) : 0;
    }
  }
  out->pattern_bank = b;
  out->pattern_emission_type = f->pattern_mode[b];
  out->pattern_size = (uint32_t)f->pattern.cycle[b] + 1u;
  out->pattern_divider = f->pattern.div[b];
  out->pattern_rep = f->pattern.rep[b];
  out->transition_pending = f->pattern.pending;
  const uint8_t mb = f->modulation.cur_bank;
  const uint32_t msize = (uint32_t)f->modulation.cycle[mb] + 1u;
  out->modulation_bank = mb;
  out->modulation_size = msize;
  out->modulation_divider = f->modulation.div[mb];
  out->modulation_rep = f->modulation.rep[mb];
  out->modulation_transition_pending = f->modulation.pending;
  out->modulation_cursor = 0; /* no time: the index stays at 0 */
  out->modulation = f->mod[mb][0];
  uint32_t head = msize < AUTD3_OUTPUT_MOD_SAMPLES ? msize : AUTD3_OUTPUT_MOD_SAMPLES;
  memcpy(out->modulation_buffer, f->mod[mb], head);
  memcpy(out->pulse_width_table, f->pwe, sizeof out->pulse_width_table);
  out->force_fan = f->force_fan;
  out->gpio_in = f->gpio_in;
  memcpy(out->gpio_out, f->gpio_out, sizeof out->gpio_out);
  out->silencer_flag = f->silencer_flag;
  out->silencer_update_rate_intensity = f->silencer_rate_intensity;
  out->silencer_update_rate_phase = f->silencer_rate_phase;
  out->silencer_completion_steps_intensity = f->silencer_steps_intensity;
  out->silencer_completion_steps_phase = f->silencer_steps_phase;
}

void autd3_dev_output_state(const autd3_dev_t *d, autd3_output_state_t *out) {
  memset(out, 0, sizeof *out);
  autd3_fpga_output(&d->fpga, out);
  out->fpga_state = d->fpga_state;
  out->error_detail = d->error_detail;
}
