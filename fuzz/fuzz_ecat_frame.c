/*
 * Fuzz target for the emulator's frame processor (src/emulation/ethercat): a chain of 1..4
 * devices is fed a sequence of frames, each copied into a heap buffer of
 * exactly its length so that any read or write past the frame is caught by
 * AddressSanitizer.
 *
 * Input: byte 0 = options (bits 0-1: devices - 1; bit 2: drift on; bit 3:
 * tick between frames; bit 4: lenient OP; bit 5: start in OP; bit 6: mailbox), then frames as [u16 LE length][bytes]... . Seeds in
 * fuzz/corpus/ecat_frame/ are real pysoem set-up and cyclic sequences
 * captured from autd3-emu (--capture), in this format.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emulation/ethercat/emu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
  autd3_emu_t *emu;
  uint64_t *now;
} op_ctx_t;
static void emit(void *ctx, uint8_t *frame, size_t len) {
  op_ctx_t *c = ctx;
  *c->now += 100000;
  autd3_emu_process(c->emu, frame, len, *c->now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  autd3_emu_config_t cfg = autd3_emu_config_default();
  cfg.devices = (uint16_t)(1 + (data[0] & 3));
  cfg.drift_ppm = (data[0] & 4) ? 100 : 0;
  cfg.strict_op = (data[0] & 16) == 0;
  cfg.mailbox = (data[0] & 64) != 0;
  uint64_t now = 1000000000ull;
  autd3_emu_t *emu;
  if (autd3_emu_create(&cfg, now, &emu) != AUTD3_OK) return 0;
  if (data[0] & 32) {
    op_ctx_t c = {emu, &now};
    autd3_emu_script_op(cfg.devices, emit, &c);
  }
  size_t off = 1;
  for (int frames = 0; frames < 256 && off + 2 <= size; frames++) {
    size_t len = (size_t)(data[off] | (data[off + 1] << 8)) % 2048;
    off += 2;
    if (len > size - off) len = size - off;
    uint8_t *f = malloc(len ? len : 1);
    if (!f) break;
    memcpy(f, data + off, len);
    off += len;
    now += 250000;
    (void)autd3_emu_process(emu, f, len, now);
    free(f);
    if (data[0] & 8) autd3_emu_tick(emu, now);
    if ((frames & 31) == 31) { /* faults too */
      autd3_emu_unplug(emu, (uint16_t)(frames / 32 % (cfg.devices + 1)));
      autd3_emu_power_cycle(emu, 0, now);
    }
  }
  char st[4096];
  autd3_emu_status(emu, st, sizeof st);
  autd3_emu_destroy(emu);
  return 0;
}
