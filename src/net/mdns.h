/*
 * The few parts of multicast DNS (RFC 6762) and DNS-SD (RFC 6763) that the
 * Remote server's advertisement and autd3_remote_discover() need: a PTR
 * question, an answer carrying PTR + SRV + TXT + A, and a parser of any mDNS
 * message that walks its records. Pure codec: no I/O, no allocation; the
 * parser is bounded (compression pointers only backwards, at most 255-byte
 * names, a fixed jump budget) and fuzzed (fuzz/fuzz_mdns.c). Sockets are in
 * net.h (autd3__net_mdns_*). Why our own and not a library: docs/remote.md.
 */
#ifndef AUTD3_NET_MDNS_H
#define AUTD3_NET_MDNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MDNS_PORT 5353u
#define MDNS_NAME_MAX 256 /* dotted, without the final dot, NUL included */
#define MDNS_TYPE_A 1u
#define MDNS_TYPE_PTR 12u
#define MDNS_TYPE_TXT 16u
#define MDNS_TYPE_SRV 33u
#define MDNS_TYPE_ANY 255u
#define MDNS_PACKET_MAX 1500u

/* What one service instance announces. Names are dotted without the final dot ("_autd3._tcp.local"). */
typedef struct mdns_service {
  const char *service;  /* "_autd3._tcp.local" */
  const char *instance; /* "autd3-lab-8080": the label before the service */
  const char *host;     /* "autd3-lab-8080.local" */
  uint16_t port;
  const char *const *txt; /* "key=value" strings */
  size_t ntxt;
  const uint8_t (*addr)[4]; /* IPv4 addresses of host */
  size_t naddr;
  uint32_t ttl; /* seconds; 0 = goodbye (RFC 6762 10.1) */
} mdns_service_t;

/* One question for `name` of `type` (QU bit clear: answers come by multicast). Returns the length, 0 if it does not fit. */
size_t autd3__mdns_build_query(uint8_t *out, size_t cap, uint16_t id, const char *name, uint16_t type);
/* A response (id echoed for legacy unicast queries, else 0) carrying PTR, SRV, TXT and the A records. 0 if it does not fit. */
size_t autd3__mdns_build_response(uint8_t *out, size_t cap, uint16_t id, const mdns_service_t *s);

/* One record (or question, with is_question) of a parsed message. */
typedef struct mdns_record {
  bool is_question;
  char name[MDNS_NAME_MAX];
  uint16_t type;
  uint32_t ttl;
  char target[MDNS_NAME_MAX]; /* PTR, SRV */
  uint16_t port;              /* SRV */
  uint8_t a[4];               /* A */
  const uint8_t *txt;         /* TXT rdata (length-prefixed strings), inside the packet */
  size_t txt_len;
} mdns_record_t;

/* Walk every question and record of `pkt`, calling fn for each; stops at the first malformed byte. Returns false if
 * the message is malformed (records before that point were delivered). */
bool autd3__mdns_parse(const uint8_t *pkt, size_t len, void (*fn)(void *ctx, const mdns_record_t *r), void *ctx);
/* TXT rdata: the value of `key` (case-insensitive) into out (NUL-terminated, truncated); false if absent. */
bool autd3__mdns_txt_get(const uint8_t *txt, size_t len, const char *key, char *out, size_t cap);
/* Case-insensitive name equality (DNS names compare ASCII case-insensitively). */
bool autd3__mdns_name_eq(const char *a, const char *b);

#endif
