/*
 * ESC error counters (registers 0x0300-0x0313) of the emulated devices, per
 * port, as a real ESC keeps them (Beckhoff ESC datasheet section II,
 * "Error counters"; ETG.1000.4 frame marking):
 *   0x0300 + 2p  invalid frame counter of port p (CRC / frame errors)
 *   0x0301 + 2p  RX error counter of port p (PHY RX_ER symbols)
 *   0x0308 + p   forwarded RX error counter of port p (the frame was
 *                already marked by an earlier ESC)
 *   0x030C       ECAT processing unit error counter
 *   0x030D       PDI error counter
 *   0x0310 + p   lost link counter of port p
 * Every counter stops at 0xFF. What clears them (the write side) is in
 * esc.c esc_write. Injection is the control socket's way to give a chain
 * known faults (docs/emulator.md "Error counters"): the counters record the
 * errors as the chain would, the current traffic is not damaged (`drop` and
 * `corrupt` do that).
 */
#include "autd3/link_driver.h"
#include "emulation/ethercat/emu.h"

static void bump(uint8_t *c, uint32_t n) {
  uint32_t v = (uint32_t)*c + n;
  *c = (uint8_t)(v > 0xFF ? 0xFF : v);
}

/* A frame damaged at device k's port p travels on marked: downstream on the
 * way out (entering port 0 of k+1 .. last), then back (entering port 1 of
 * last-1 .. 0, k included). A frame damaged on the way back (port 1) only passes the
 * devices before k, entering their port 1. Each of them counts a forwarded
 * error at the port it entered (a 2-port line; ports 2/3 carry nothing). */
static void forward_marked(autd3_emu_t *emu, uint16_t k, uint8_t port, uint32_t n) {
  uint16_t present = emu->faults.present;
  if (port == 0) {
    for (uint16_t i = (uint16_t)(k + 1u); i < present; i++) bump(&emu->esc[i].mem[0x0308], n);
    for (uint16_t i = 0; i + 1u < present; i++) bump(&emu->esc[i].mem[0x0309], n); /* the way back */
  } else if (port == 1) {
    for (uint16_t i = 0; i < k; i++) bump(&emu->esc[i].mem[0x0309], n);
  }
}

autd3_err_t autd3_emu_inject_errors(autd3_emu_t *emu, uint16_t k, autd3_emu_err_kind_t kind, uint8_t port, uint32_t n) {
  if (k >= emu->cfg.devices)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "autd3-emu: errors on device %u: chain has %u devices", (unsigned)k,
                           (unsigned)emu->cfg.devices);
  if (port > 3)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "autd3-emu: port %u: ports 0..3", (unsigned)port);
  uint8_t *m = emu->esc[k].mem;
  switch (kind) {
  case AUTD3_EMU_ERR_CRC:
    bump(&m[0x0300 + 2u * port], n);
    forward_marked(emu, k, port, n);
    break;
  case AUTD3_EMU_ERR_PHY: bump(&m[0x0301 + 2u * port], n); break;
  case AUTD3_EMU_ERR_FWD: bump(&m[0x0308 + port], n); break;
  case AUTD3_EMU_ERR_PU: bump(&m[0x030C], n); break;
  case AUTD3_EMU_ERR_PDI: bump(&m[0x030D], n); break;
  case AUTD3_EMU_ERR_LOST_LINK: bump(&m[0x0310 + port], n); break;
  default: return autd3_set_error(AUTD3_E_INVALID_OPTION, "autd3-emu: unknown error kind %d", (int)kind);
  }
  return AUTD3_OK;
}

void autd3_emu_link_lost(autd3_emu_t *emu, uint16_t k, uint8_t port) {
  if (k < emu->cfg.devices && port < 4) bump(&emu->esc[k].mem[0x0310 + port], 1);
}
