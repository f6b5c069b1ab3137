/*
 * Fuzz target: the mDNS / DNS-SD message parser (src/net/mdns.c) that the
 * Remote server's advertisement and autd3_remote_discover() run on every
 * datagram of the link, and its TXT lookup. Checks the parser's invariants
 * (names NUL-terminated within bounds, rdata inside the message); crashes /
 * sanitizer reports are the findings.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/mdns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct ctx {
  const uint8_t *pkt;
  size_t len;
} ctx_t;

static void check(void *c, const mdns_record_t *r) {
  const ctx_t *x = c;
  if (memchr(r->name, 0, sizeof r->name) == NULL || memchr(r->target, 0, sizeof r->target) == NULL) abort();
  if (r->txt && (r->txt < x->pkt || r->txt + r->txt_len > x->pkt + x->len)) abort();
  char v[64];
  if (r->txt && autd3__mdns_txt_get(r->txt, r->txt_len, "wire", v, sizeof v) && memchr(v, 0, sizeof v) == NULL) abort();
  (void)autd3__mdns_name_eq(r->name, "_autd3._tcp.local");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ctx_t c = {data, size};
  (void)autd3__mdns_parse(data, size, check, &c);
  return 0;
}
