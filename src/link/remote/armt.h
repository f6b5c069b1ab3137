/*
 * ARMT: the Remote link's wire protocol, versions 3 and 7 (shinolab/autd3-sdk
 * crates/autd3-rs-link-remote/src/wire.rs). Version 3: crates.io
 * autd3-rs-link-remote 0.1.0-0.4.0, PyPI autd3-link-remote 0.2.0. Version 7:
 * crates.io autd3-rs-link-remote 0.5.0-0.9.0 (read: 0.9.0 src/wire.rs,
 * link.rs, server.rs), PyPI autd3-link-remote 0.8.0/0.9.0. All integers
 * little-endian, f32 IEEE-754.
 *
 * Version 3:
 *   client -> server  "ARMT" u8 version(3)
 *                     u32 N; N x { u32 T; T x 6 f32 (pos x,y,z, dir x,y,z) }
 *   server -> client  u16 N (0 = refused)
 *   per cycle:        client 0x01 + N x 626  ->  server u8 rx_valid + N x 2
 *   end:              client 0x02 (no reply; the server drops the connection)
 * Extension (ours, invisible to the reference client, which stops reading
 * after the u16): a refusal (u16 0) is followed by u8 reason, u16 length and
 * that many bytes of UTF-8 text, so our client can say *why*.
 *
 * Version 7:
 *   hello, both ways  "ARMT" u8 version(7) u8 len, len bytes SDK version text
 *                     (the server answers every hello with its own, then drops
 *                     a client of another version; the client checks `version`)
 *   client -> server  the geometry, as in v3 (u32 N; N x { u32 T; T x 6 f32 })
 *   server -> client  session reply: u8 code; code 0: u16 N; else u16 len + text
 *                     (1 bus closed, 2 device count, 3 bus unavailable, 4 internal)
 *   per cycle:        client 0x01 + N x 626  ->  server u8 rx_valid, u64 DC time ns
 *                     (0 = unknown), u8 recovering, 5 x u64 (recoveries, stale
 *                     cycles, lost cycles, phase excursions, worst phase deviation
 *                     ns), N x u8 device state, N x 2 rx
 *   end:              client 0x02
 *
 * This file holds the pure codec: no I/O, no allocation, used by the link
 * (link_remote.c), the server (server.c) and the fuzz target.
 */
#ifndef AUTD3_LINK_REMOTE_ARMT_H
#define AUTD3_LINK_REMOTE_ARMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autd3/geometry.h"
#include "autd3/proto.h"

#define ARMT_MAGIC "ARMT"
#define ARMT_VERSION 3u  /* the v3 hello's version byte */
#define ARMT_VERSION_7 7u
#define ARMT_VERSION_NEWEST ARMT_VERSION_7
#define ARMT7_SDK_MAX 255u
#define ARMT7_HELLO_MAX (6u + ARMT7_SDK_MAX)
#define ARMT7_REPLY_HEADER_BYTES 50u /* 1 + 8 + 1 + 5 x 8 */
/* v7 session reply codes (wire.rs SESSION_*) */
#define ARMT7_SESSION_OK 0x00u
#define ARMT7_SESSION_BUS_CLOSED 0x01u
#define ARMT7_SESSION_DEVICE_COUNT 0x02u
#define ARMT7_SESSION_BUS_UNAVAILABLE 0x03u
#define ARMT7_SESSION_INTERNAL 0x04u
/* v7 device state bytes (wire.rs encode_device_state) */
#define ARMT7_DEV_OP 0x08u
#define ARMT7_DEV_SAFE_OP 0x04u
#define ARMT7_DEV_SAFE_OP_ERROR 0x14u
#define ARMT7_DEV_LOST 0xFFu
#define ARMT7_DEV_OTHER_TAG 0x20u
#define ARMT7_DEV_OTHER_MASK 0x1Fu
#define ARMT_HELLO_BYTES 5u
#define ARMT_TAG_FRAME 0x01u
#define ARMT_TAG_CLOSE 0x02u
#define ARMT_TRANSDUCER_BYTES 24u /* 6 x f32 */
/* Largest transducer count per device we accept (the same cap autd3-rs-link-remote 0.5+ applies). */
#define ARMT_MAX_TRANSDUCERS 4096u
/* Refusal trailer text cap. */
#define ARMT_REFUSAL_TEXT_MAX 512u
#define ARMT_REFUSAL_MAX_BYTES (2u + 1u + 2u + ARMT_REFUSAL_TEXT_MAX)

/* Reasons carried by the refusal trailer (1..4 mirror the session codes of ARMT v7). */
enum armt_refusal {
  ARMT_REFUSE_BUS_CLOSED = 0x01,
  ARMT_REFUSE_DEVICE_COUNT = 0x02,
  ARMT_REFUSE_BUS_UNAVAILABLE = 0x03,
  ARMT_REFUSE_INTERNAL = 0x04,
  ARMT_REFUSE_VERSION = 0x10,
  ARMT_REFUSE_BUSY = 0x11,
  ARMT_REFUSE_GEOMETRY = 0x12,
};

/* Bytes of the client's opening message (hello + geometry) for `g`. */
size_t autd3__armt_hello_bytes(const autd3_geometry_t *g);
/* Write hello + geometry into out (cap >= autd3__armt_hello_bytes); returns the length, 0 if it does not fit. */
size_t autd3__armt_encode_hello(const autd3_geometry_t *g, uint8_t *out, size_t cap);
/* Write a refusal: u16 0, reason, u16 length, text (truncated to ARMT_REFUSAL_TEXT_MAX). Returns the length. */
size_t autd3__armt_encode_refusal(uint8_t *out, size_t cap, uint8_t reason, const char *text);

/* v7: "ARMT" 07 len sdk (sdk truncated to 255 bytes). Returns the length, 0 if it does not fit. */
size_t autd3__armt_encode_hello7(const char *sdk, uint8_t *out, size_t cap);
/* The geometry alone (u32 N; per device u32 T + T records), the v7 message after the hellos. */
size_t autd3__armt_geometry_bytes(const autd3_geometry_t *g);
size_t autd3__armt_encode_geometry(const autd3_geometry_t *g, uint8_t *out, size_t cap);
/* v7 session reply: code 0 -> 00 + u16 n; otherwise code + u16 length + text (truncated to ARMT_REFUSAL_TEXT_MAX). */
size_t autd3__armt_encode_session7(uint8_t *out, size_t cap, uint8_t code, uint16_t n, const char *text);

/* The bus facts a v7 reply carries besides rx. */
typedef struct armt7_status {
  bool rx_valid;
  bool recovering;
  uint64_t dc_time_ns; /* 0 = unknown */
  uint64_t recoveries, stale_cycles, lost_cycles, phase_excursions, worst_phase_deviation_ns;
} armt7_status_t;
/* Write the 50-byte v7 reply header. */
void autd3__armt_encode_reply7_header(uint8_t out[ARMT7_REPLY_HEADER_BYTES], const armt7_status_t *st);
void autd3__armt_decode_reply7_header(const uint8_t in[ARMT7_REPLY_HEADER_BYTES], armt7_status_t *st);
/* autd3_device_state_t (+ raw AL bits for OTHER) <-> the v7 state byte. */
uint8_t autd3__armt_encode_device_state7(uint8_t state, uint8_t al_bits);
uint8_t autd3__armt_decode_device_state7(uint8_t byte, uint8_t *al_bits);

/* ---- server side: incremental parser of the client's byte stream ---- */

typedef enum armt_event {
  ARMT_EV_NONE = 0,  /* need more bytes */
  ARMT_EV_HELLO,     /* v7 hello complete (peer_version 7, peer_sdk): answer with ours; the geometry follows */
  ARMT_EV_GEOMETRY,  /* hello + geometry complete: num_devices is set */
  ARMT_EV_FRAME,     /* a 0x01 request's N x 626 bytes are in the frame buffer */
  ARMT_EV_CLOSE,     /* 0x02 */
  ARMT_EV_ERROR      /* malformed input: see err_kind / error; the parser stays in ERROR */
} armt_event_t;

typedef enum armt_err_kind {
  ARMT_ERR_NONE = 0,
  ARMT_ERR_MAGIC,        /* not "ARMT" */
  ARMT_ERR_VERSION,      /* "ARMT" but neither 3 nor 7 (peer_version; for >= 4 the v7-style hello was read whole) */
  ARMT_ERR_DEVICE_COUNT, /* 0 or > max_devices */
  ARMT_ERR_TRANSDUCERS,  /* > ARMT_MAX_TRANSDUCERS */
  ARMT_ERR_TAG,          /* unknown request tag */
  ARMT_ERR_AFTER_CLOSE   /* bytes after 0x02 */
} armt_err_kind_t;

typedef struct armt_parser {
  int state;
  uint8_t head[ARMT_HELLO_BYTES];
  uint32_t have;             /* bytes of the current field so far */
  uint32_t max_devices;
  uint32_t num_devices;      /* from the geometry */
  uint32_t dev;              /* device whose transducers are being read */
  uint64_t skip;             /* transducer bytes left for `dev` */
  uint32_t min_transducers, max_transducers;
  uint8_t *frame;            /* destination of the next request's payload */
  size_t frame_bytes;        /* num_devices x 626 */
  uint8_t peer_version;      /* version byte of the hello (if the magic matched): 3 or 7 once accepted */
  uint8_t sdk_len;           /* v7-style hello: SDK text bytes announced / kept in peer_sdk */
  char peer_sdk[48];         /* v7-style hello: the peer's SDK version text (truncated, NUL-terminated) */
  armt_err_kind_t err_kind;
  char error[128];
} armt_parser_t;

/* Start parsing a new connection; device counts above max_devices are rejected. */
void autd3__armt_parser_init(armt_parser_t *p, uint32_t max_devices);
/* Where the next request's payload goes (num_devices x 626 bytes). Set after ARMT_EV_GEOMETRY and after each frame. */
void autd3__armt_parser_set_frame(armt_parser_t *p, uint8_t *dst);
/*
 * Consume up to `len` bytes, stopping right after the first event. Returns
 * the number of bytes consumed and the event in *ev. Bounded: O(len), no
 * allocation. A FRAME request with no frame buffer set is consumed into
 * nothing (the payload is dropped) so a fuzzer can drive it without one.
 */
size_t autd3__armt_parser_feed(armt_parser_t *p, const uint8_t *buf, size_t len, armt_event_t *ev);
/* True while a message is partly received (used for the stall timeout). */
bool autd3__armt_parser_mid_message(const armt_parser_t *p);

#endif
