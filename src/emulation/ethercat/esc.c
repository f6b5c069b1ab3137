/*
 * One emulated EtherCAT slave controller (ESC) with the AUTD3 firmware on its
 * PDI side. Register numbers, command semantics and WKC rules from
 * ETG.1000.4 (commands and WKC), the Beckhoff ESC datasheet sections I/II
 * (registers, AL state machine, the DC model) and what SOEM v2.0.0 and
 * EtherCrab 0.7 put on the wire (docs/emulator.md).
 *
 * Memory: a flat 64 KiB image per device; registers get special handling on
 * read (refresh of dynamic values: system time, next SYNC0, inputs) and on
 * write (a per-byte writability rule and side effects). Process RAM accesses
 * inside a SyncManager area obey the SM (enabled, direction, PDI-deactivated).
 */
#include <string.h>

#include "ecat/regs.h"
#include "emulation/ethercat/emu.h"

/* ---- little-endian helpers ---- */
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)rd16(p) | ((uint32_t)rd16(p + 2) << 16); }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32); }
static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void wr32(uint8_t *p, uint32_t v) { wr16(p, (uint16_t)v); wr16(p + 2, (uint16_t)(v >> 16)); }
static void wr64(uint8_t *p, uint64_t v) { wr32(p, (uint32_t)v); wr32(p + 4, (uint32_t)(v >> 32)); }

/* Does [a, a+n) overlap [r, r+rn)? (64-bit: no wrap) */
static bool overlaps(uint32_t a, uint32_t n, uint32_t r, uint32_t rn) { return a < r + rn && r < a + n; }

/* Registers and command codes: the shared map (src/ecat/regs.h). */

#define NUM_FMMU 8 /* 0x0004 */
#define NUM_SM 8   /* 0x0005 */

/* Bound of one time-control-loop step (docs/emulator.md "Clock model"):
 * a compare may slew the system time by at most SLEW_PPM of the time since
 * the previous compare, plus a floor, like the ESC's speed counter which
 * adjusts the clock rate, not its value. */
#define SLEW_PPM 500
#define SLEW_FLOOR_NS 20

/* ---- clock ---- */
uint64_t autd3_esc_local(const autd3_esc_t *e, uint64_t t) {
  uint64_t d = t > e->power_on_ns ? t - e->power_on_ns : 0;
  int64_t adj = (int64_t)(d / 1000000000u) * e->ppb + (int64_t)(d % 1000000000u) * e->ppb / 1000000000;
  return d + (uint64_t)adj;
}

/* Rate part of the time-control loop accrued since the last compare. */
static int64_t rate_part(const autd3_esc_t *e, uint64_t t) {
  if (!e->rate_ppb || t <= e->last_compare_ns) return 0;
  uint64_t d = t - e->last_compare_ns;
  return (int64_t)(d / 1000000000u) * e->rate_ppb + (int64_t)(d % 1000000000u) * e->rate_ppb / 1000000000;
}

uint64_t autd3_esc_systime(const autd3_esc_t *e, uint64_t t) {
  return autd3_esc_local(e, t) + rd64(e->mem + REG_DCOFS) + (uint64_t)(e->corr_ns + rate_part(e, t));
}

/* The firmware's time base: the device's DC local time, kept non-decreasing
 * (ticks may come with a host time before the last frame's hop-delayed time). */
static uint64_t fw_now(autd3_esc_t *e, uint64_t t) {
  uint64_t l = autd3_esc_local(e, t), fw = autd3_fw_dev_now(&e->fw);
  return l > fw ? l : fw;
}

uint8_t autd3_esc_al_state(const autd3_esc_t *e) { return e->mem[REG_ALSTAT] & 0x0F; }

/* ---- SYNC0: the firmware sees SYNC0 edges on its local time base ---- */
static void sync0_handoff(autd3_esc_t *e) {
  if (!e->sync0_on) {
    autd3_fw_dev_set_sync0(&e->fw, 0, 0);
    return;
  }
  int64_t shift = (int64_t)(rd64(e->mem + REG_DCOFS) + (uint64_t)e->corr_ns);
  e->sync0_local_shift = shift;
  autd3_fw_dev_set_sync0(&e->fw, e->sync0_start - (uint64_t)shift, e->sync0_cycle);
}

static uint64_t next_sync0(const autd3_esc_t *e, uint64_t sys) {
  if (!e->sync0_on || e->sync0_cycle == 0) return rd64(e->mem + REG_DCSTART0);
  if (sys <= e->sync0_start) return e->sync0_start;
  uint64_t k = (sys - e->sync0_start + e->sync0_cycle - 1) / e->sync0_cycle;
  return e->sync0_start + k * e->sync0_cycle;
}

/* ---- power-on ---- */
static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* The ESC's EEPROM control/status 0x0502 when idle: 8-byte reads (bit 6), and
 * bit 7 "2 address bytes", which an ESC reports for an EEPROM above 16 Kbit
 * (SII word 0x3E = size in Kbit − 1). */
static uint16_t eep_idle(const autd3_esc_t *e) { return rd16(e->sii + 0x3E * 2) >= 16 ? 0x00C0 : 0x0040; }
/* Declared EEPROM size in bytes: beyond it reads give 0xFF and writes are NACKed. */
static uint32_t eep_bytes(const autd3_esc_t *e) {
  uint32_t b = ((uint32_t)rd16(e->sii + 0x3E * 2) + 1u) * 128u;
  return b < AUTD3_EMU_SII_BYTES ? b : AUTD3_EMU_SII_BYTES;
}

/* What an ESC loads from the SII configuration area (words 0-4) after power-on
 * and on a reload command (Beckhoff ESC datasheet, section II): PDI control
 * and ESC configuration, PDI configuration, SYNC pulse length, extended PDI
 * configuration, station alias. */
static void load_config(autd3_esc_t *e) {
  uint8_t *m = e->mem;
  wr16(m + REG_PDICTL, rd16(e->sii + 0));
  wr16(m + REG_PDICFG, rd16(e->sii + 2));
  wr16(m + REG_SYNCLEN, rd16(e->sii + 4));
  wr16(m + REG_PDICFG2, rd16(e->sii + 6));
  wr16(m + REG_STALIAS, rd16(e->sii + 8));
}

uint16_t autd3_esc_dl_status(const autd3_esc_t *e, bool last) {
  /* bit 0 PDI operational (EEPROM loaded), bit 1 PDI watchdog reloaded, bits 4/5
   * physical link on ports 0/1; per port p bit 8+2p loop closed, 9+2p
   * communication: the last device has port 1 closed, no link there */
  uint16_t v = last ? 0x5613 : 0x5A33;
  /* bit 2: enhanced link detection active on at least one port, as the ESC
   * configuration 0x0141 loaded from the SII says (bit 1 all ports, bits 4-7 per port) */
  if (e->mem[REG_ESCCFG] & 0xF2) v |= 0x0004;
  return v;
}

static void registers_reset(autd3_esc_t *e, bool last) {
  uint8_t *m = e->mem;
  memset(m, 0, 0x10000);
  m[0x0000] = 0x04;          /* ESC type: IP core (the AUTD3's ESC type is unpublished) */
  m[0x0001] = 0x01;
  wr16(m + 0x0002, 0x0001);
  m[0x0004] = NUM_FMMU;
  m[0x0005] = NUM_SM;
  m[0x0006] = 8;             /* 8 KiB process RAM */
  m[0x0007] = 0x0F;          /* ports 0, 1: MII */
  wr16(m + 0x0008, 0x01FC);  /* DC, 64-bit DC, enhanced link detection, enhanced SYNC activation */
  m[0x0102] = 0x07;          /* DL control: RX FIFO size, reset value 7 */
  m[REG_ALSTAT] = ESC_AL_INIT;
  load_config(e);
  wr16(m + REG_DLSTAT, autd3_esc_dl_status(e, last)); /* after 0x0141 is loaded */
  wr16(m + REG_WDDIV, 0x09C2);             /* 100 µs units at 25 MHz */
  wr16(m + 0x0410, 1000);
  wr16(m + REG_WDSM, e->cfg->sm_watchdog_100us); /* ESC default 1000 = 100 ms; --sm-watchdog-ms */
  wr16(m + REG_EEPCTL, eep_idle(e));       /* idle, 8-byte reads, address bytes per the size */
  wr16(m + REG_DCSPEED, 0x1000);
  m[REG_DCFILT] = 0x04;
  m[REG_DCFILT + 1] = 0x0C;
}

/* SMs 2 and 3 are PDI-deactivated (0x0807 + 8n bit 0: 0x0817, 0x081F) outside SAFE-OP/OP, as the
 * AUTD3's slave stack does: process data is refused (no WKC) until then. */
static void pdi_sm_enable(autd3_esc_t *e, bool on) {
  e->mem[REG_SM0 + 2 * 8 + 7] = on ? 0 : 1;
  e->mem[REG_SM0 + 3 * 8 + 7] = on ? 0 : 1;
}

void autd3_esc_power_on(autd3_esc_t *e, const autd3_emu_config_t *cfg, uint16_t pos, uint64_t now_ns) {
  uint64_t s = cfg->seed ^ ((uint64_t)pos << 32) ^ 0x5151;
  e->pos = pos;
  e->cfg = cfg;
  e->last_compare_ns = 0;
  bool other = cfg->override_index == (int)pos;
  autd3_sii_build(e->sii, other ? cfg->override_vendor : AUTD3_EMU_VENDOR, pos + 1u,
                  other && cfg->override_name[0] ? cfg->override_name : NULL, cfg->mailbox);
  e->mbx_in_full = false;
  e->mbx_counter = 0;
  e->sdo_len = e->sdo_pos = 0;
  e->sdo_toggle = 0;
  registers_reset(e, pos + 1u == cfg->devices);
  /* Devices power on at slightly different moments (up to 1 s apart), so their
   * local clocks differ; each oscillator is off by a fixed error in ±drift_ppm. */
  e->power_on_ns = now_ns - (splitmix(&s) % 1000000000u);
  double u = (double)(splitmix(&s) % 2000001u) / 1000000.0 - 1.0; /* [-1, 1] */
  e->ppb = (int64_t)(u * cfg->drift_ppm * 1000.0);
  e->corr_ns = 0;
  e->rate_ppb = 0;
  e->filt_ns = 0;
  e->t_frame = now_ns;
  e->sync0_on = false;
  e->sync0_start = 0;
  e->sync0_cycle = 0;
  e->sync0_local_shift = 0;
  e->last_sm2_ns = now_ns;
  e->sm2_seen = false;
  e->frames_in = 0;
  pdi_sm_enable(e, false);
  autd3_fw_dev_init(&e->fw, cfg->firmware, pos, &cfg->version, &cfg->timing); /* the log is kept (zeroed once by calloc) */
}

/* ---- AL state machine ---- */
static void al_set(autd3_esc_t *e, uint8_t state, uint16_t code) {
  uint8_t old = autd3_esc_al_state(e);
  e->mem[REG_ALSTAT] = (uint8_t)(state | (code ? 0x10 : 0));
  wr16(e->mem + REG_ALCODE, code);
  bool pd = state == ESC_AL_SAFEOP || state == ESC_AL_OP;
  bool was = old == ESC_AL_SAFEOP || old == ESC_AL_OP;
  if (pd && !was) {
    e->sm2_seen = false;
    e->last_sm2_ns = e->t_frame;
  }
  pdi_sm_enable(e, pd);
}

static bool sm_is(const autd3_esc_t *e, int n, uint16_t start, uint16_t len, uint8_t dir) {
  const uint8_t *sm = e->mem + REG_SM0 + n * 8;
  return rd16(sm) == start && rd16(sm + 2) == len && (sm[4] & 0x03) == 0 && ((sm[4] >> 2) & 0x03) == dir &&
         (sm[6] & 1);
}

/* An active FMMU of `type` (1 read, 2 write) mapping physical address phys. */
static bool fmmu_maps(const autd3_esc_t *e, uint8_t type, uint16_t phys) {
  for (int i = 0; i < NUM_FMMU; i++) {
    const uint8_t *f = e->mem + REG_FMMU0 + i * 16;
    if ((f[12] & 1) && (f[11] & type) && rd16(f + 4) > 0 && phys >= rd16(f + 8) && phys < rd16(f + 8) + rd16(f + 4))
      return true;
  }
  return false;
}

/* SM0/SM1 as the SII declares them: mailbox mode, write resp. read, enabled. */
static bool mailbox_sms_ok(const autd3_esc_t *e) {
  const uint8_t *s0 = e->mem + REG_SM0, *s1 = e->mem + REG_SM0 + 8;
  return rd16(s0) == 0x1000 && rd16(s0 + 2) == 128 && (s0[4] & 0x0F) == 0x06 && (s0[6] & 1) &&
         rd16(s1) == 0x1400 && rd16(s1 + 2) == 128 && (s1[4] & 0x0F) == 0x02 && (s1[6] & 1);
}

static uint16_t check_safeop(const autd3_esc_t *e, const autd3_emu_config_t *cfg) {
  if (!sm_is(e, 2, AUTD3_EMU_SM2_START, AUTD3_EMU_SM2_LEN, 1) || !fmmu_maps(e, 2, AUTD3_EMU_SM2_START))
    return ESC_ALSC_INVALID_OUTPUT_CFG;
  if (!sm_is(e, 3, AUTD3_EMU_SM3_START, AUTD3_EMU_SM3_LEN, 0) || !fmmu_maps(e, 1, AUTD3_EMU_SM3_START))
    return ESC_ALSC_INVALID_INPUT_CFG;
  if (cfg && cfg->dc_required) {
    if ((e->mem[REG_DCACT] & 0x03) != 0x03) return ESC_ALSC_INVALID_DC_SYNC;
    uint32_t c = rd32(e->mem + REG_DCCYC0);
    if (c == 0 || c % 500000u != 0) return ESC_ALSC_INVALID_SYNC0_CYCLE;
  }
  return ESC_ALSC_OK;
}

static void al_control(autd3_esc_t *e, uint16_t v) {
  uint8_t req = v & 0x0F;
  bool ack = (v & 0x10) != 0;
  uint8_t cur = autd3_esc_al_state(e);
  bool err = (e->mem[REG_ALSTAT] & 0x10) != 0;
  /* With the error flag set a request without acknowledge is ignored, except
   * a request for INIT (lenient: a master can always get a device down). */
  if (err && !ack && req != ESC_AL_INIT) return;
  uint16_t code = 0;
  uint8_t next = cur;
  switch (req) {
    case ESC_AL_INIT: next = ESC_AL_INIT; break;
    case ESC_AL_PREOP:
      if (cur == ESC_AL_BOOT) code = ESC_ALSC_INVALID_TRANSITION;
      else if (cur == ESC_AL_INIT && e->cfg && e->cfg->mailbox && !mailbox_sms_ok(e)) code = ESC_ALSC_INVALID_MBX_CFG;
      else next = ESC_AL_PREOP;
      break;
    case ESC_AL_BOOT: code = cur == ESC_AL_INIT ? ESC_ALSC_BOOT_NOT_SUPPORTED : ESC_ALSC_INVALID_TRANSITION; break;
    case ESC_AL_SAFEOP:
      if (cur == ESC_AL_PREOP) {
        code = check_safeop(e, e->cfg);
        if (!code) next = ESC_AL_SAFEOP;
      } else if (cur == ESC_AL_SAFEOP || cur == ESC_AL_OP) {
        next = ESC_AL_SAFEOP;
      } else {
        code = ESC_ALSC_INVALID_TRANSITION;
      }
      break;
    case ESC_AL_OP:
      if (cur == ESC_AL_SAFEOP) {
        if (e->cfg && e->cfg->strict_op && !e->sm2_seen) code = ESC_ALSC_NO_VALID_OUTPUTS;
        else next = ESC_AL_OP;
      } else if (cur == ESC_AL_OP) {
        next = ESC_AL_OP;
      } else {
        code = ESC_ALSC_INVALID_TRANSITION;
      }
      break;
    default: code = ESC_ALSC_UNKNOWN_STATE; break;
  }
  if (code) {
    al_set(e, cur, code);
  } else if (next != cur || ack) {
    al_set(e, next, 0);
  }
}

/* ---- SII EEPROM interface ---- */
static void eeprom_command(autd3_esc_t *e) {
  uint8_t *m = e->mem;
  uint16_t ctrl = rd16(m + REG_EEPCTL);
  uint8_t cmd = (uint8_t)((ctrl >> 8) & 0x07);
  uint8_t wen = ctrl & 0x01;
  uint16_t err = 0;
  uint32_t word = rd32(m + REG_EEPADR);
  uint32_t size = eep_bytes(e);
  if (cmd == 1) { /* read 8 bytes (bit6 of the status says we can) */
    for (int i = 0; i < 8; i++) {
      uint64_t b = (uint64_t)word * 2 + (uint64_t)i;
      m[REG_EEPDAT + i] = b < size ? e->sii[b] : 0xFF;
    }
  } else if (cmd == 2) { /* write one word, only with write enable in the same access */
    if (!wen) err = 0x4000;
    else if ((uint64_t)word * 2 + 1 < size) {
      e->sii[word * 2] = m[REG_EEPDAT];
      e->sii[word * 2 + 1] = m[REG_EEPDAT + 1];
    } else err = 0x2000; /* NACK: beyond the device */
  } else if (cmd == 4) { /* reload: the configuration words */
    load_config(e);
  } else if (cmd != 0) {
    err = 0x2000;
  }
  /* done at once: not busy, command bits clear, error bits from this command */
  wr16(m + REG_EEPCTL, (uint16_t)(eep_idle(e) | err));
}

/* ---- DC ---- */
static void dc_latch(autd3_esc_t *e, uint64_t t, uint64_t ret_t, bool last) {
  uint64_t l = autd3_esc_local(e, t);
  wr32(e->mem + REG_DCRT0, (uint32_t)l);
  if (!last) wr32(e->mem + REG_DCRT0 + 4, (uint32_t)autd3_esc_local(e, ret_t)); /* port 1 on the way back */
  wr64(e->mem + REG_DCRTPU, l);
}

static void dc_compare(autd3_esc_t *e, const uint8_t *data, uint32_t ado, uint16_t n, uint64_t t) {
  /* Only 8-byte writes, or 4-byte writes of the low half, are a compare. */
  if (!(ado == REG_DCSYS && (n == 4 || n >= 8))) return;
  uint64_t local = autd3_esc_systime(e, t) - rd32(e->mem + REG_DCDELAY);
  uint64_t recv = n >= 8 ? rd64(data) : ((local & 0xFFFFFFFF00000000ull) | rd32(data));
  int64_t dt = n >= 8 ? (int64_t)(local - recv) : (int64_t)(int32_t)(uint32_t)(local - recv);
  /* saturate: 0x092C holds 31 bits anyway, and a master may write anything */
  if (dt > 1000000000000ll) dt = 1000000000000ll;
  if (dt < -1000000000000ll) dt = -1000000000000ll;
  /* The loop (docs/emulator.md "Clock model"): a proportional step bounded
   * by SLEW_PPM of the time since the previous compare (the ESC slews, it
   * does not jump), and an integral term that learns the rate error so that
   * the residual between compares converges towards 0, like the ESC's speed
   * counter. */
  uint64_t since = e->last_compare_ns && t > e->last_compare_ns ? t - e->last_compare_ns : 0;
  e->corr_ns += rate_part(e, t); /* fold the rate part accrued so far */
  e->last_compare_ns = t;
  int64_t bound = SLEW_FLOOR_NS + (int64_t)(since / (1000000 / SLEW_PPM));
  if (bound > 100000) bound = 100000;
  int64_t step = dt > bound ? bound : (dt < -bound ? -bound : dt);
  e->corr_ns -= step;
  if (since >= 100000 && since <= 1000000000u) { /* compares 0.1 ms..1 s apart feed the rate */
    e->rate_ppb -= (int64_t)((double)dt * 1e9 / (double)since / 4);
    if (e->rate_ppb > SLEW_PPM * 1000) e->rate_ppb = SLEW_PPM * 1000;
    if (e->rate_ppb < -SLEW_PPM * 1000) e->rate_ppb = -SLEW_PPM * 1000;
  }
  uint8_t depth = e->mem[REG_DCFILT] & 0x0F;
  e->filt_ns = depth == 0 ? dt : e->filt_ns + ((dt - e->filt_ns) / (1 << depth));
  uint64_t mag = (uint64_t)(e->filt_ns < 0 ? -e->filt_ns : e->filt_ns);
  if (mag > 0x7FFFFFFF) mag = 0x7FFFFFFF;
  /* bit 31 set: local copy smaller than the received time (Beckhoff's convention) */
  wr32(e->mem + REG_DCDIFF, (uint32_t)mag | (e->filt_ns < 0 ? 0x80000000u : 0));
  /* keep the firmware's SYNC0 grid (local time) on the corrected system time */
  int64_t moved = (int64_t)(rd64(e->mem + REG_DCOFS) + (uint64_t)e->corr_ns) - e->sync0_local_shift;
  if (e->sync0_on && (moved > 200 || moved < -200)) sync0_handoff(e);
}

static void dc_activation(autd3_esc_t *e, uint64_t t) {
  uint8_t act = e->mem[REG_DCACT];
  e->mem[REG_DCACTST] = act & 0x07;
  uint32_t cycle = rd32(e->mem + REG_DCCYC0);
  if ((act & 0x03) == 0x03 && cycle > 0) {
    uint64_t sys = autd3_esc_systime(e, t);
    uint64_t start = rd64(e->mem + REG_DCSTART0);
    if (start < sys) start += ((sys - start) / cycle + 1) * cycle; /* a start in the past: next pulse */
    e->sync0_on = true;
    e->sync0_start = start;
    e->sync0_cycle = cycle;
  } else {
    e->sync0_on = false;
  }
  sync0_handoff(e);
}

/* ---- process RAM and SyncManagers ---- */
/* May ECAT access [a, a+n) of process RAM (a >= 0x1000)? write: direction. */
static bool ram_access_ok(const autd3_esc_t *e, uint32_t a, uint32_t n, bool write) {
  bool covered2 = false, covered3 = false;
  for (int i = 0; i < NUM_SM; i++) {
    const uint8_t *sm = e->mem + REG_SM0 + i * 8;
    uint16_t start = rd16(sm), len = rd16(sm + 2);
    if (len == 0 || !(sm[6] & 1) || !overlaps(a, n, start, len)) continue;
    if (sm[7] & 1) return false;                          /* PDI deactivated */
    bool ecat_writes = ((sm[4] >> 2) & 0x03) == 1;
    if (write && !ecat_writes) return false;              /* inputs are read-only for ECAT */
    /* mailbox SM: the read mailbox can be read only while full (the
     * write mailbox is served at once, so it is never full) */
    if ((sm[4] & 0x03) == 0x02 && !ecat_writes && !e->mbx_in_full) return false;
    if (start <= AUTD3_EMU_SM2_START && start + len >= AUTD3_EMU_SM2_START + AUTD3_EMU_SM2_LEN) covered2 = true;
    if (start <= AUTD3_EMU_SM3_START && start + len >= AUTD3_EMU_SM3_START + AUTD3_EMU_SM3_LEN) covered3 = true;
  }
  /* The firmware's process data areas exist only behind their SMs. */
  if (overlaps(a, n, AUTD3_EMU_SM2_START, AUTD3_EMU_SM2_LEN) && !covered2) return false;
  if (overlaps(a, n, AUTD3_EMU_SM3_START, AUTD3_EMU_SM3_LEN) && !covered3) return false;
  return true;
}

/* Refresh dynamic values in [a, a+n) before ECAT reads them. */
static void refresh(autd3_esc_t *e, uint32_t a, uint32_t n, uint64_t t) {
  uint8_t *m = e->mem;
  if (overlaps(a, n, REG_DCSYS, 8)) wr64(m + REG_DCSYS, autd3_esc_systime(e, t));
  if (overlaps(a, n, REG_DCSTART0, 8) && e->sync0_on) wr64(m + REG_DCSTART0, next_sync0(e, autd3_esc_systime(e, t)));
  if (overlaps(a, n, REG_SM0 + 8 + 5, 1)) m[REG_SM0 + 8 + 5] = e->mbx_in_full ? 0x08 : 0; /* SM1 "mailbox full" */
  if (overlaps(a, n, AUTD3_EMU_SM3_START, AUTD3_EMU_SM3_LEN)) {
    uint8_t st = autd3_esc_al_state(e);
    if (st == ESC_AL_SAFEOP || st == ESC_AL_OP) { /* inputs are valid from SAFE-OP on */
      uint8_t rx[AUTD3_RX_FRAME_BYTES];
      autd3_fw_dev_read(&e->fw, fw_now(e, t), rx);
      memcpy(m + AUTD3_EMU_SM3_START, rx, AUTD3_RX_FRAME_BYTES);
    }
  }
}

/* Is register byte r writable from ECAT? Everything else reads back, ignores writes. */
static bool reg_writable(uint32_t r) {
  if (r >= 0x0010 && r <= 0x0011) return true;  /* station address */
  if (r >= 0x0100 && r <= 0x0103) return true;  /* DL control */
  if (r >= 0x0108 && r <= 0x0109) return true;
  if (r >= 0x0120 && r <= 0x0121) return true;  /* AL control */
  if (r >= 0x0200 && r <= 0x0201) return true;  /* event mask */
  /* 0x0300-0x0313 error counters: a write clears (esc_write), the value is not stored */
  if (r == 0x0400 || r == 0x0401 || r == 0x0410 || r == 0x0411 || r == 0x0420 || r == 0x0421) return true;
  if (r == 0x0500 || (r >= 0x0502 && r <= 0x050F)) return true; /* SII interface (0x0501 PDI-owned) */
  if (r >= REG_FMMU0 && r < REG_FMMU0 + 0x100) return true;
  if (r >= REG_SM0 && r < REG_SM0 + 0x80) { uint32_t o = (r - REG_SM0) & 7; return o <= 4 || o == 6; }
  if (r >= REG_DCOFS && r < REG_DCDIFF) return true;   /* offset, delay */
  if (r >= REG_DCSPEED && r <= 0x0931) return true;
  if (r >= REG_DCFILT && r <= 0x0935) return true;
  if (r == 0x0980 || r == REG_DCACT) return true;
  if (r >= REG_DCSTART0 && r < REG_DCSTART0 + 8) return true;
  if (r >= REG_DCCYC0 && r < REG_DCCYC0 + 8) return true;
  return false;
}

/* ECAT read of [a, a+n) into out (or OR into out). Returns false if refused. */
static bool esc_read(autd3_esc_t *e, uint32_t a, uint32_t n, uint8_t *out, bool or_read, uint64_t t) {
  if (a >= 0x10000) return false;
  if (a + n > 0x10000) n = 0x10000 - a;
  uint32_t ram = a >= 0x1000 ? a : 0x1000;
  if (a + n > 0x1000 && !ram_access_ok(e, ram, a + n - ram, false)) return false;
  refresh(e, a, n, t);
  if (or_read) for (uint32_t i = 0; i < n; i++) out[i] |= e->mem[a + i];
  else memcpy(out, e->mem + a, n);
  const uint8_t *sm1 = e->mem + REG_SM0 + 8;
  uint32_t last1 = (uint32_t)rd16(sm1) + rd16(sm1 + 2) - 1u;
  if (e->mbx_in_full && (sm1[4] & 0x03) == 0x02 && rd16(sm1 + 2) && a <= last1 && a + n > last1)
    e->mbx_in_full = false; /* reading the last byte empties the read mailbox */
  return true;
}

/* ECAT write of [a, a+n). Returns false if refused. Side effects after the write. */
static bool esc_write(autd3_esc_t *e, uint32_t a, uint32_t n, const uint8_t *in, uint64_t t, uint64_t ret_t, bool last) {
  if (a >= 0x10000) return false;
  if (a + n > 0x10000) n = 0x10000 - a;
  uint8_t *m = e->mem;
  uint32_t ram = a >= 0x1000 ? a : 0x1000;
  if (a + n > 0x1000) {
    if (!ram_access_ok(e, ram, a + n - ram, true)) return false;
    memcpy(m + ram, in + (ram - a), a + n - ram);
  }
  if (a < 0x1000) {
    uint32_t end = a + n < 0x1000 ? a + n : 0x1000;
    for (uint32_t r = a; r < end; r++)
      if (reg_writable(r)) m[r] = in[r - a];
    /* side effects, in register order */
    if (overlaps(a, n, REG_ALCTL, 1)) al_control(e, rd16(m + REG_ALCTL));
    if (overlaps(a, n, REG_EEPCTL + 1, 1)) eeprom_command(e);
    else if (overlaps(a, n, REG_EEPCTL, 1)) m[REG_EEPCTL] = (uint8_t)(eep_idle(e) | (m[REG_EEPCTL] & 1));
    /* Error counters (errors.c): a write to any RX error counter (invalid
     * frame, RX error, forwarded: 0x0300-0x030B) clears all of them; 0x030C
     * and 0x030D clear on their own write; a write to any lost link counter
     * clears the four (Beckhoff ESC datasheet section II; SOEM clears with
     * one BWR of 8 bytes at 0x0300, IgH's `crc -r` writes 0x0300-0x0313). */
    if (overlaps(a, n, 0x0300, 0x0C)) memset(m + 0x0300, 0, 0x0C);
    if (overlaps(a, n, 0x030C, 1)) m[0x030C] = 0;
    if (overlaps(a, n, 0x030D, 1)) m[0x030D] = 0;
    if (overlaps(a, n, 0x0310, 4)) memset(m + 0x0310, 0, 4);
    if (a <= REG_DCRT0 && a + n > REG_DCRT0) dc_latch(e, t, ret_t, last);
    if (a <= REG_DCSYS && a + n > REG_DCSYS)
      dc_compare(e, in + (REG_DCSYS - a), REG_DCSYS, (uint16_t)(a + n - REG_DCSYS), t);
    if (overlaps(a, n, REG_DCSPEED, 2) || overlaps(a, n, REG_DCFILT, 2)) { /* resets the loop */
      e->corr_ns += rate_part(e, t);
      e->rate_ppb = 0;
      e->filt_ns = 0;
      wr32(m + REG_DCDIFF, 0);
    }
    if (overlaps(a, n, REG_DCACT, 1) || overlaps(a, n, REG_DCCYC0, 4) || overlaps(a, n, REG_DCSTART0, 8)) {
      if (overlaps(a, n, REG_DCACT, 1) || e->sync0_on) dc_activation(e, t);
    }
    if (overlaps(a, n, REG_DCOFS, 8) && e->sync0_on) sync0_handoff(e);
    if (overlaps(a, n, REG_SM0, 0x80)) {
      if (!(m[REG_SM0 + 8 + 6] & 1)) e->mbx_in_full = false; /* a disabled SM1 forgets its buffer */
      /* clear the SII-declared SMs' PDI deactivation per the AL state */
      uint8_t st = autd3_esc_al_state(e);
      pdi_sm_enable(e, st == ESC_AL_SAFEOP || st == ESC_AL_OP);
    }
  }
  /* mailbox SM0: writing its last byte hands the request to the slave */
  const uint8_t *sm0 = m + REG_SM0;
  uint32_t last0 = (uint32_t)rd16(sm0) + rd16(sm0 + 2) - 1u;
  if (e->cfg && e->cfg->mailbox && rd16(sm0 + 2) && (sm0[4] & 0x0F) == 0x06 && (sm0[6] & 1) && a <= last0 &&
      a + n > last0 && a >= rd16(sm0))
    autd3_esc_mailbox(e);
  /* 3-buffer SM2: the buffer is complete when its last byte is written. */
  const uint8_t *sm2 = m + REG_SM0 + 2 * 8;
  uint32_t last_byte = (uint32_t)rd16(sm2) + rd16(sm2 + 2) - 1u;
  if (rd16(sm2 + 2) > 0 && a <= last_byte && a + n > last_byte && (sm2[6] & 1)) {
    uint8_t st = autd3_esc_al_state(e);
    if (sm2[4] & 0x40) e->last_sm2_ns = t; /* watchdog trigger */
    m[REG_WDSMST] = 1;
    if (st == ESC_AL_SAFEOP || st == ESC_AL_OP) e->sm2_seen = true;
    /* The firmware runs only in OP. SM2 holds the 626 bytes the master wrote
     * contiguously (RxPdo0 498 B + RxPdo1 128 B); the firmware's RAM
     * copy has a 2-byte hole after RxPdo0 (words 249 | gap | 64), which the
     * port layer removes again, so the logical frame is SM2 byte for byte. */
    if (st == ESC_AL_OP && rd16(sm2) == AUTD3_EMU_SM2_START && rd16(sm2 + 2) == AUTD3_EMU_SM2_LEN) {
      autd3_fw_dev_write(&e->fw, m + AUTD3_EMU_SM2_START, fw_now(e, t));
      e->frames_in++;
    }
  }
  return true;
}

/* ---- logical addressing through FMMUs ---- */
/* Map the datagram [la, la+len) through FMMU f. write=true: frame → memory.
 * Returns true if at least one bit was mapped and the access was allowed. */
static bool fmmu_xfer(autd3_esc_t *e, const uint8_t *f, uint32_t la, uint8_t *data, uint16_t len, bool write,
                      uint64_t t, uint64_t ret_t, bool last) {
  uint64_t ls = rd32(f), ll = rd16(f + 4);
  uint8_t lsb = f[6] & 7, leb = f[7] & 7, psb = f[10] & 7;
  uint64_t ps = rd16(f + 8);
  if (ll == 0 || len == 0) return false; /* a zero-length datagram touches no byte */
  uint64_t lbit0 = ls * 8 + lsb, lbit1 = (ls + ll - 1) * 8 + leb; /* inclusive */
  if (lbit1 < lbit0) return false;
  uint64_t dbit0 = (uint64_t)la * 8, dbit1 = ((uint64_t)la + len) * 8 - 1;
  uint64_t b0 = lbit0 > dbit0 ? lbit0 : dbit0, b1 = lbit1 < dbit1 ? lbit1 : dbit1;
  if (b0 > b1) return false;
  uint64_t p0 = ps * 8 + psb + (b0 - lbit0); /* physical bit of b0 */
  uint32_t pa = (uint32_t)(p0 / 8), pn = (uint32_t)((p0 + (b1 - b0)) / 8 - p0 / 8 + 1);
  if (pa >= 0x10000) return false;
  if ((b0 % 8) == 0 && (b1 % 8) == 7 && (p0 % 8) == 0) { /* byte aligned: the common case */
    uint32_t off = (uint32_t)(b0 / 8 - la);
    return write ? esc_write(e, pa, pn, data + off, t, ret_t, last) : esc_read(e, pa, pn, data + off, false, t);
  }
  /* bit-granular: read-modify-write of the physical bytes */
  uint8_t tmp[2048];
  if (pn > sizeof tmp) return false;
  if (!esc_read(e, pa, pn, tmp, false, t)) return false;
  for (uint64_t b = b0; b <= b1; b++) {
    uint64_t p = p0 + (b - b0) - (uint64_t)pa * 8;
    uint64_t d = b - dbit0;
    if (write) {
      uint8_t bit = (data[d / 8] >> (d % 8)) & 1;
      tmp[p / 8] = (uint8_t)((tmp[p / 8] & ~(1u << (p % 8))) | (unsigned)(bit << (p % 8)));
    } else {
      uint8_t bit = (tmp[p / 8] >> (p % 8)) & 1;
      data[d / 8] = (uint8_t)((data[d / 8] & ~(1u << (d % 8))) | (unsigned)(bit << (d % 8)));
    }
  }
  return write ? esc_write(e, pa, pn, tmp, t, ret_t, last) : true;
}

/* ---- one datagram in one device ---- */

void autd3_esc_datagram(autd3_esc_t *e, uint8_t *hdr, uint16_t len, uint64_t t, uint64_t ret_t, bool last) {
  uint8_t cmd = hdr[0];
  uint16_t adp = rd16(hdr + 2), ado = rd16(hdr + 4);
  uint8_t *data = hdr + 10;
  uint8_t *wkcp = data + len;
  unsigned inc = 0;
  e->t_frame = t;
  uint8_t old[2048];
  switch (cmd) {
    case ECAT_APRD: case ECAT_APWR: case ECAT_APRW:
    case ECAT_FPRD: case ECAT_FPWR: case ECAT_FPRW:
    case ECAT_BRD: case ECAT_BWR: case ECAT_BRW: {
      bool ap = cmd <= ECAT_APRW, fp = cmd >= ECAT_FPRD && cmd <= ECAT_FPRW, b = cmd >= ECAT_BRD;
      bool match;
      if (ap) match = adp == 0;
      else if (fp) match = adp == rd16(e->mem + 0x0010) || ((e->mem[0x0103] & 1) && adp == rd16(e->mem + 0x0012));
      else match = true;
      if (ap || b) wr16(hdr + 2, (uint16_t)(adp + 1)); /* auto-increment in every device */
      if (!match || len == 0) break; /* WKC counts accessed bytes: none */
      unsigned kind = (unsigned)((cmd - 1) % 3); /* 0 read, 1 write, 2 read-write */
      bool rd_ok = false, wr_ok = false;
      if (kind == 2) {
        memcpy(old, data, len);
        rd_ok = esc_read(e, ado, len, data, b, t);       /* old memory contents go back */
        wr_ok = esc_write(e, ado, len, old, t, ret_t, last);
      } else if (kind == 0) {
        rd_ok = esc_read(e, ado, len, data, b, t);
      } else {
        wr_ok = esc_write(e, ado, len, data, t, ret_t, last);
      }
      inc = (rd_ok ? 1u : 0u) + (wr_ok ? (kind == 2 ? 2u : 1u) : 0u);
      break;
    }
    case ECAT_ARMW:
    case ECAT_FRMW: {
      bool reader = cmd == ECAT_ARMW ? adp == 0 : adp == rd16(e->mem + 0x0010);
      if (cmd == ECAT_ARMW) wr16(hdr + 2, (uint16_t)(adp + 1));
      if (len == 0) break;
      if (reader) inc = esc_read(e, ado, len, data, false, t) ? 1 : 0;
      else inc = esc_write(e, ado, len, data, t, ret_t, last) ? 1 : 0;
      break;
    }
    case ECAT_LRD: case ECAT_LWR: case ECAT_LRW: {
      uint32_t la = (uint32_t)adp | ((uint32_t)ado << 16);
      bool rd_hit = false, wr_hit = false;
      /* writes first, from the data as it arrived; then reads replace their bytes */
      if (cmd != ECAT_LRD) {
        if (cmd == ECAT_LRW) memcpy(old, data, len);
        for (int i = 0; i < NUM_FMMU; i++) {
          const uint8_t *f = e->mem + REG_FMMU0 + i * 16;
          if ((f[12] & 1) && (f[11] & 2))
            wr_hit |= fmmu_xfer(e, f, la, cmd == ECAT_LRW ? old : data, len, true, t, ret_t, last);
        }
      }
      if (cmd != ECAT_LWR) {
        for (int i = 0; i < NUM_FMMU; i++) {
          const uint8_t *f = e->mem + REG_FMMU0 + i * 16;
          if ((f[12] & 1) && (f[11] & 1)) rd_hit |= fmmu_xfer(e, f, la, data, len, false, t, ret_t, last);
        }
      }
      inc = (rd_hit ? 1u : 0u) + (wr_hit ? (cmd == ECAT_LRW ? 2u : 1u) : 0u);
      break;
    }
    default: break; /* NOP and reserved codes: untouched */
  }
  if (inc) wr16(wkcp, (uint16_t)(rd16(wkcp) + inc));
}

/* ---- time-driven work ---- */
void autd3_esc_tick(autd3_esc_t *e, uint64_t now_ns) {
  autd3_fw_dev_advance(&e->fw, fw_now(e, now_ns));
  /* SM watchdog: only with SM2's watchdog-trigger bit and a non-zero time. */
  const uint8_t *sm2 = e->mem + REG_SM0 + 2 * 8;
  uint64_t wd_ns = (uint64_t)rd16(e->mem + REG_WDSM) * ((uint64_t)rd16(e->mem + REG_WDDIV) + 2) * 40;
  if (wd_ns == 0 || !(sm2[4] & 0x40) || !(sm2[6] & 1)) return;
  uint8_t st = autd3_esc_al_state(e);
  if ((st == ESC_AL_OP || st == ESC_AL_SAFEOP) && now_ns > e->last_sm2_ns + wd_ns) {
    e->mem[REG_WDSMST] = 0; /* expired */
    if (st == ESC_AL_OP) al_set(e, ESC_AL_SAFEOP, ESC_ALSC_SM_WATCHDOG);
  }
}
