/*
 * The ring of emulated devices: walks each EtherCAT frame through devices
 * 0..present-1 in order (ETG.1000.4 frame processing; Beckhoff ESC datasheet section I, "Frame processing"),
 * applies run-time faults and keeps the chain counters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "emulation/ethercat/emu.h"

autd3_emu_config_t autd3_emu_config_default(void) {
  autd3_emu_config_t c;
  memset(&c, 0, sizeof c);
  c.devices = 2;
  c.version = (autd3_fw_version_t)AUTD3_FW_VERSION_DEFAULT;
  c.timing = autd3_timing_model_default();
  c.drift_ppm = 0;
  c.hop_ns = 600; /* an MII ESC forwards in roughly 0.5-1 µs (docs/emulator.md) */
  c.strict_op = true;
  c.dc_required = false;
  c.seed = 0xA0D3;
  c.sm_watchdog_100us = 1000; /* the ESC's power-on 100 ms */
  c.override_index = -1;
  return c;
}

autd3_err_t autd3_emu_create(const autd3_emu_config_t *cfg, uint64_t now_ns, autd3_emu_t **out) {
  *out = NULL;
  if (cfg->devices < 1 || cfg->devices > AUTD3_EMU_MAX_DEVICES)
    return autd3_set_error(AUTD3_E_DEVICE_COUNT_RANGE, "autd3-emu: %u devices (1..128)", (unsigned)cfg->devices);
  if (cfg->override_index >= (int)cfg->devices)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "autd3-emu: identity override for device %d of %u",
                           cfg->override_index, (unsigned)cfg->devices);
  autd3_emu_t *emu = calloc(1, sizeof *emu);
  if (!emu) return autd3_set_error(AUTD3_E_NOMEM, "autd3-emu: chain");
  emu->esc = calloc(cfg->devices, sizeof *emu->esc);
  if (!emu->esc) {
    free(emu);
    return autd3_set_error(AUTD3_E_NOMEM, "autd3-emu: %u devices", (unsigned)cfg->devices);
  }
  emu->cfg = *cfg;
  emu->faults.present = cfg->devices;
  emu->rng = cfg->seed | 1;
  for (uint16_t i = 0; i < cfg->devices; i++) autd3_esc_power_on(&emu->esc[i], &emu->cfg, i, now_ns);
  *out = emu;
  return AUTD3_OK;
}

void autd3_emu_destroy(autd3_emu_t *emu) {
  if (!emu) return;
  free(emu->esc);
  free(emu);
}

static double rnd(autd3_emu_t *emu) {
  emu->rng ^= emu->rng << 13;
  emu->rng ^= emu->rng >> 7;
  emu->rng ^= emu->rng << 17;
  return (double)(emu->rng >> 11) / 9007199254740992.0;
}

/* Validate the datagram chain: every datagram fits in both the EtherCAT length
 * and the received bytes. Returns the number of datagrams, 0 if malformed. */
static unsigned walk(const uint8_t *f, size_t len, uint16_t elen) {
  size_t end = 16 + (size_t)elen, off = 16;
  if (end > len) return 0;
  unsigned n = 0;
  for (;;) {
    if (off + 12 > end) return 0;
    size_t dl = (size_t)((f[off + 6] | (f[off + 7] << 8)) & 0x07FF);
    if (off + 12 + dl > end) return 0;
    n++;
    bool more = (f[off + 7] & 0x80) != 0;
    off += 12 + dl;
    if (!more) return n;
  }
}

bool autd3_emu_process(autd3_emu_t *emu, uint8_t *f, size_t len, uint64_t now_ns) {
  emu->frames++;
  emu->reply_ns = now_ns;
  if (len < 14 || ((f[12] << 8) | f[13]) != 0x88A4) return false; /* not EtherCAT: not ours */
  if (emu->cfg.wire) {
    /* 100 Mbit/s is serial: a frame sent back to back behind others starts when
     * the line is free. The ESC processes on the fly, but the model takes the
     * whole frame's tail as "complete" (pessimistic by at most the bytes after
     * a device's data). The return line needs no state of its own: replies are
     * the forward frames shifted by the constant ring time, so they never overlap. */
    uint64_t start = emu->wire_busy_ns > now_ns ? emu->wire_busy_ns : now_ns;
    if (start - now_ns > AUTD3_EMU_WIRE_BACKLOG_NS) {
      emu->dropped++;
      return false;
    }
    emu->wire_busy_ns = start + AUTD3_EMU_WIRE_NS(len);
    now_ns = emu->wire_busy_ns; /* complete at device 0 */
    emu->reply_ns = now_ns + 2u * (uint64_t)emu->faults.present * emu->cfg.hop_ns;
  }
  if (emu->faults.silence || emu->faults.present == 0) return false;
  if (emu->faults.drop > 0 && rnd(emu) < emu->faults.drop) {
    emu->dropped++;
    return false;
  }
  f[6] |= 0x02; /* the first ESC marks the source MAC locally administered (EtherCrab relies on it) */
  if (len < 16) {
    emu->malformed++;
    return true;
  }
  uint16_t h = (uint16_t)(f[14] | (f[15] << 8));
  uint16_t elen = h & 0x07FF;
  if ((h >> 12) != 1 || walk(f, len, elen) == 0) {
    /* other types (network variables, mailbox gateway) pass unchanged; a
     * datagram chain that does not fit is not processed (no partial writes) */
    if ((h >> 12) == 1) emu->malformed++;
    return true;
  }
  uint16_t present = emu->faults.present;
  uint32_t hop = emu->cfg.hop_ns;
  for (uint16_t i = 0; i < present; i++) {
    if (emu->faults.mute[i]) continue; /* forwarded untouched */
    if (emu->faults.mute_after[i] != 0 && --emu->faults.mute_after[i] == 0)
      emu->faults.mute[i] = true; /* this frame is the last it answers */
    autd3_esc_t *e = &emu->esc[i];
    uint64_t t = now_ns + (uint64_t)i * hop;
    uint64_t ret_t = now_ns + (uint64_t)(2u * (present - 1u) - i) * hop;
    bool last = i + 1u == present;
    size_t off = 16;
    for (;;) { /* bounded: walk() checked the chain */
      uint16_t dl = (uint16_t)((f[off + 6] | (f[off + 7] << 8)) & 0x07FF);
      bool more = (f[off + 7] & 0x80) != 0;
      autd3_esc_datagram(e, f + off, dl, t, ret_t, last);
      off += 12u + dl;
      if (!more) break;
    }
  }
  if (emu->faults.corrupt > 0 && rnd(emu) < emu->faults.corrupt && elen > 0) {
    size_t bit = (size_t)(rnd(emu) * (double)elen * 8);
    f[16 + bit / 8] ^= (uint8_t)(1u << (bit % 8));
    emu->corrupted++;
  }
  emu->replied++;
  return true;
}

void autd3_emu_tick(autd3_emu_t *emu, uint64_t now_ns) {
  for (uint16_t i = 0; i < emu->cfg.devices; i++) autd3_esc_tick(&emu->esc[i], now_ns);
}

static void set_last(autd3_emu_t *emu) {
  /* DL status: the last present device has port 1 closed */
  for (uint16_t i = 0; i < emu->cfg.devices; i++) {
    uint16_t v = autd3_esc_dl_status(&emu->esc[i], i + 1u == emu->faults.present);
    emu->esc[i].mem[0x0110] = (uint8_t)v;
    emu->esc[i].mem[0x0111] = (uint8_t)(v >> 8);
  }
}

autd3_err_t autd3_emu_unplug(autd3_emu_t *emu, uint16_t k) {
  if (k > emu->cfg.devices)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "autd3-emu: unplug %u: chain has %u devices", (unsigned)k,
                           (unsigned)emu->cfg.devices);
  if (k < emu->faults.present) { /* the cable between k-1 and k comes out: both ends lose the link */
    if (k > 0) autd3_emu_link_lost(emu, (uint16_t)(k - 1u), 1);
    autd3_emu_link_lost(emu, k, 0);
  }
  emu->faults.present = k;
  set_last(emu);
  return AUTD3_OK;
}

void autd3_emu_replug(autd3_emu_t *emu) {
  emu->faults.present = emu->cfg.devices;
  set_last(emu);
}

autd3_err_t autd3_emu_power_cycle(autd3_emu_t *emu, uint16_t k, uint64_t now_ns) {
  if (k >= emu->cfg.devices)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "autd3-emu: power-cycle %u: chain has %u devices", (unsigned)k,
                           (unsigned)emu->cfg.devices);
  autd3_esc_t *e = &emu->esc[k];
  autd3_device_counters_t keep = *autd3_fw_dev_counters(&e->fw);
  autd3_esc_power_on(e, &emu->cfg, k, now_ns); /* the same firmware again: cfg and k choose it */
  *autd3_fw_dev_counters(&e->fw) = keep; /* counters survive, as a firmware power cycle keeps them */
  autd3_exec_log_note_boot(&e->fw.log);
  /* its neighbours saw the link go down (its own counters restart at 0) */
  if (k > 0 && k < emu->faults.present) autd3_emu_link_lost(emu, (uint16_t)(k - 1u), 1);
  if (k + 1u < emu->faults.present) autd3_emu_link_lost(emu, (uint16_t)(k + 1u), 0);
  set_last(emu);
  return AUTD3_OK;
}

size_t autd3_emu_status(const autd3_emu_t *emu, char *buf, size_t cap) {
  size_t n = 0;
  if (cap == 0) return 0;
  buf[0] = 0;
  int w = snprintf(buf, cap, "chain devices %u present %u frames %llu replied %llu dropped %llu corrupted %llu malformed %llu\n",
                   (unsigned)emu->cfg.devices, (unsigned)emu->faults.present, (unsigned long long)emu->frames,
                   (unsigned long long)emu->replied, (unsigned long long)emu->dropped,
                   (unsigned long long)emu->corrupted, (unsigned long long)emu->malformed);
  if (w < 0) return 0;
  n = (size_t)w < cap ? (size_t)w : cap - 1;
  static const char *names[16] = {"?", "INIT", "PREOP", "BOOT", "SAFEOP", "?", "?", "?", "OP"};
  for (uint16_t i = 0; i < emu->cfg.devices && n < cap - 1; i++) {
    const autd3_esc_t *e = &emu->esc[i];
    uint8_t st = e->mem[0x0130], ack, data;
    uint64_t executed;
    autd3_fw_dev_status(&e->fw, &executed, &ack, &data);
    const char *nm = names[st & 0x0F] ? names[st & 0x0F] : "?";
    uint16_t code = (uint16_t)(e->mem[0x0134] | (e->mem[0x0135] << 8));
    uint32_t diff = (uint32_t)e->mem[0x092C] | ((uint32_t)e->mem[0x092D] << 8) | ((uint32_t)e->mem[0x092E] << 16) |
                    ((uint32_t)e->mem[0x092F] << 24);
    w = snprintf(buf + n, cap - n,
                 "dev %u state %s%s code 0x%04x present %d images %llu executed %llu ack 0x%02x data 0x%02x dcdiff %s%u\n",
                 (unsigned)i, nm, (st & 0x10) ? "+ERR" : "", (unsigned)code, i < emu->faults.present ? 1 : 0,
                 (unsigned long long)e->frames_in,
                 (unsigned long long)executed, ack, data, (diff & 0x80000000u) ? "-" : "", (unsigned)(diff & 0x7FFFFFFFu));
    if (w < 0) break;
    n += (size_t)w < cap - n ? (size_t)w : cap - n - 1;
  }
  return n;
}
