/*
 * Fuzz target: the remote server's ARMT v3 / v7 message parser (src/link/remote/armt.c),
 * fed the input as one client byte stream split at input-chosen points, the way
 * recv() splits it. Checks the parser's own invariants; crashes / sanitizer
 * reports are the findings.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "link/remote/armt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static uint8_t frame[AUTD3_MAX_DEVICES * AUTD3_TX_FRAME_BYTES];
  if (size < 1) return 0;
  /* First byte: chunk size seed (0 = whole input at once). */
  size_t chunk = data[0];
  data++, size--;
  armt_parser_t p;
  autd3__armt_parser_init(&p, AUTD3_MAX_DEVICES);
  size_t off = 0;
  int events = 0;
  while (off < size) {
    size_t n = chunk ? chunk : size - off;
    if (n > size - off) n = size - off;
    size_t end = off + n;
    while (off < end) {
      armt_event_t ev;
      size_t used = autd3__armt_parser_feed(&p, data + off, end - off, &ev);
      if (used > end - off) abort();
      off += used;
      if (ev == ARMT_EV_ERROR) {
        if (p.err_kind == ARMT_ERR_NONE || p.error[0] == 0) abort();
        return 0; /* the server drops the connection */
      }
      if (ev == ARMT_EV_GEOMETRY) {
        if (p.num_devices < 1 || p.num_devices > AUTD3_MAX_DEVICES) abort();
        autd3__armt_parser_set_frame(&p, frame);
      }
      if (ev == ARMT_EV_CLOSE) return 0;
      if (ev != ARMT_EV_NONE) events++;
      if (used == 0 && ev == ARMT_EV_NONE) abort(); /* no progress without an event: would spin */
    }
  }
  (void)events;
  return 0;
}
