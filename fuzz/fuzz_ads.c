/*
 * Fuzz the AMS/ADS parsers in both directions:
 *  - client side: the bytes as a TCP stream from a hostile ADS server,
 *    through the real client (autd3__ads_client_pump over a socketpair) and the
 *    reply / notification parsers of every command;
 *  - server side: the bytes as a client's stream into the emulated TwinCAT
 *    runtime (autd3_tcemu_fuzz_feed: router commands, every ADS service, oversized
 *    frames, notifications in the following task cycle).
 * Input byte 0 picks the direction, so one corpus seeds both.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "link/twincat/ads.h"
#include "platform/platform.h"
#include "emulation/twincat/twincat_emu.h"

static void sample(void *ctx, uint64_t ft, uint32_t handle, const uint8_t *data, uint32_t size) {
  (void)ft, (void)handle;
  volatile uint8_t sink = size ? data[0] ^ data[size - 1] : 0;
  (void)sink;
  (*(int *)ctx)++;
}

static void notify(void *ctx, uint32_t handle, const uint8_t *data, uint32_t size) { sample(ctx, 0, handle, data, size); }

static void client_side(const uint8_t *data, size_t len) {
  /* direct parsers over every frame in the input */
  size_t pos = 0;
  int count = 0;
  while (pos < len) {
    uint16_t tcmd;
    size_t flen;
    if (autd3__ams_frame_peek(data + pos, len - pos, 1 << 16, &tcmd, &flen) != 1) break;
    ams_header_t h;
    const uint8_t *d;
    if (autd3__ams_frame_decode(data + pos, flen, &h, &d) == AUTD3_OK) {
      uint32_t res, plen, aux;
      const uint8_t *p;
      autd3__ads_reply_parse(h.cmd, d, h.length, &res, &p, &plen, &aux);
      ads_device_info_t info;
      autd3__ads_device_info_parse(d, h.length, &res, &info);
      autd3__ads_notification_parse(d, h.length, sample, &count);
    }
    pos += flen;
  }
  /* the client's stream handling over a socket */
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0) return;
  ads_client_t c;
  if (autd3__ads_client_init(&c, 2048, 10) != AUTD3_OK) {
    close(sv[0]), close(sv[1]);
    return;
  }
  c.fd = sv[0];
  c.on_notify = notify;
  c.notify_ctx = &count;
  /* the fuzz input's first frame decides our source address, so frames can match */
  if (len >= AMS_FRAME_HDR_LEN) {
    ams_header_t h;
    autd3__ams_header_peek(data, len, &h);
    c.source = h.target;
  }
  ssize_t w = send(sv[1], data, len, MSG_DONTWAIT);
  (void)w;
  shutdown(sv[1], SHUT_WR);
  for (int k = 0; k < 64 && c.fd >= 0; k++) {
    bool got;
    ads_reply_t r;
    if (autd3__ads_client_pump(&c, 1, autd3__now_ns(), true, &got, &r) != AUTD3_OK) break;
    if (got) {
      ams_addr_t t = r.h.source;
      autd3__ads_reply_check(&c, &t, r.h.cmd, &r, 0, 0);
    }
  }
  autd3__ads_client_free(&c); /* closes sv[0] */
  close(sv[1]);
}

static autd3_tcemu_t *emu;

static void server_side(const uint8_t *data, size_t len) {
  if (!emu) {
    autd3_tcemu_config_t cfg = autd3_tcemu_config_default();
    cfg.listen_port = 0;
    if (autd3_tcemu_create(&cfg, &emu) != AUTD3_OK) abort();
  }
  autd3_tcemu_fuzz_feed(emu, data, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  if (data[0] & 1) server_side(data + 1, size - 1);
  else client_side(data + 1, size - 1);
  return 0;
}
