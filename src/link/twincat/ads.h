/*
 * AMS/ADS over TCP: the byte codec and a small blocking client.
 *
 * Everything Beckhoff's ADS needs for the TwinCAT link and the emulated
 * runtime, written from the protocol description (Beckhoff infosys "ADS/AMS
 * specification"): a 6-byte
 * AMS/TCP header, a 32-byte AMS header, then the command's data. All
 * integers are little-endian.
 *
 * Codec: pure functions, no allocation, thread-safe. Client: one object per
 * TCP connection, used by one thread at a time; buffers are allocated once
 * in autd3__ads_client_init(), so requests and the notification stream do not
 * allocate (the link's cycle() uses it on the hot path).
 */
#ifndef AUTD3_LINK_TWINCAT_ADS_H
#define AUTD3_LINK_TWINCAT_ADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autd3/error.h"
#include "net/net.h"

#define ADS_TCP_PORT 48898 /* 0xBF02: unencrypted ADS, every client's default */
#define AMS_TCP_HDR_LEN 6
#define AMS_HDR_LEN 32
#define AMS_FRAME_HDR_LEN (AMS_TCP_HDR_LEN + AMS_HDR_LEN)

/* First u16 of the AMS/TCP header: 0 for ADS frames, else a router command
 * (as used by ads-rs, ads-client and Beckhoff/ADS against a local router). */
#define AMS_TCP_ADS 0x0000u
#define AMS_TCP_PORT_CLOSE 0x0001u
#define AMS_TCP_PORT_CONNECT 0x1000u
#define AMS_TCP_ROUTER_NOTE 0x1001u
#define AMS_TCP_GET_LOCAL_NETID 0x1002u

/* AMS state flags: a TCP request carries 0x0004, its reply 0x0005. */
#define AMS_SF_RESPONSE 0x0001u
#define AMS_SF_ADS 0x0004u

/* ADS command ids. */
enum {
  ADS_CMD_INVALID = 0,
  ADS_CMD_READ_DEVICE_INFO = 1,
  ADS_CMD_READ = 2,
  ADS_CMD_WRITE = 3,
  ADS_CMD_READ_STATE = 4,
  ADS_CMD_WRITE_CONTROL = 5,
  ADS_CMD_ADD_NOTIFICATION = 6,
  ADS_CMD_DEL_NOTIFICATION = 7,
  ADS_CMD_NOTIFICATION = 8,
  ADS_CMD_READ_WRITE = 9,
};

/* Notification transmission modes (ADSTRANSMODE). */
enum {
  ADS_TRANS_NONE = 0,
  ADS_TRANS_CLIENT_CYCLE = 1,
  ADS_TRANS_CLIENT_ON_CHANGE = 2,
  ADS_TRANS_SERVER_CYCLE = 3,
  ADS_TRANS_SERVER_ON_CHANGE = 4,
  ADS_TRANS_SERVER_CYCLE2 = 5,
  ADS_TRANS_SERVER_ON_CHANGE2 = 6,
};

/* ADS states (ReadState). */
enum { ADS_STATE_RUN = 5, ADS_STATE_STOP = 6, ADS_STATE_CONFIG = 15 };

/* ADS return codes used by this code (full table in autd3__ads_strerror()). */
enum {
  ADS_ERR_NOERR = 0x0000,
  ADS_ERR_TARGET_PORT_NOT_FOUND = 0x0006,
  ADS_ERR_TARGET_MACHINE_NOT_FOUND = 0x0007,
  ADS_ERR_UNKNOWN_CMD = 0x0008,
  ADS_ERR_DEVICE_ERROR = 0x0700,
  ADS_ERR_SRV_NOT_SUPP = 0x0701,
  ADS_ERR_INVALID_GRP = 0x0702,
  ADS_ERR_INVALID_OFFSET = 0x0703,
  ADS_ERR_INVALID_ACCESS = 0x0704,
  ADS_ERR_INVALID_SIZE = 0x0705,
  ADS_ERR_INVALID_DATA = 0x0706,
  ADS_ERR_NO_MEMORY = 0x070A,
  ADS_ERR_INVALID_NOTIF_HANDLE = 0x0714,
  ADS_ERR_CLIENT_TIMEOUT = 0x0745,
  ADS_ERR_CLIENT_INVALID_RESPONSE = 0x0754,
};

typedef struct ams_netid {
  uint8_t b[6];
} ams_netid_t;

typedef struct ams_addr {
  ams_netid_t netid;
  uint16_t port;
} ams_addr_t;

typedef struct ams_header {
  ams_addr_t target;
  ams_addr_t source;
  uint16_t cmd;
  uint16_t flags;
  uint32_t length; /* ADS data bytes after the header */
  uint32_t error;  /* AMS-level error (router / target not found) */
  uint32_t invoke;
} ams_header_t;

/* ---- little-endian helpers ---- */
static inline uint16_t ads_get_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t ads_get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t ads_get_u64(const uint8_t *p) { return (uint64_t)ads_get_u32(p) | ((uint64_t)ads_get_u32(p + 4) << 32); }
static inline void ads_put_u16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static inline void ads_put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void ads_put_u64(uint8_t *p, uint64_t v) {
  ads_put_u32(p, (uint32_t)v);
  ads_put_u32(p + 4, (uint32_t)(v >> 32));
}

/* ---- NetIds ---- */
/* Parse "a.b.c.d.e.f" (each 0..255). AUTD3_E_INVALID_ARGUMENT if malformed. */
autd3_err_t autd3__ams_netid_parse(const char *s, ams_netid_t *out);
/* Format into buf (at least 24 bytes). Returns buf. */
char *autd3__ams_netid_format(const ams_netid_t *id, char *buf, size_t cap);
bool autd3__ams_netid_eq(const ams_netid_t *a, const ams_netid_t *b);

/* ---- framing ---- */
/*
 * Look at the start of a receive buffer. Returns 1 and the frame's total
 * length (6 + AMS/TCP length) once a whole frame is there, 0 if more bytes
 * are needed, and AUTD3_E_PROTOCOL if the announced length exceeds
 * `max_frame` (a hostile or broken peer: drop the connection).
 */
int autd3__ams_frame_peek(const uint8_t *buf, size_t len, size_t max_frame, uint16_t *tcp_cmd, size_t *frame_len);
/*
 * Decode the AMS header of an ADS frame (the whole frame, AMS/TCP header
 * included). Checks that the AMS/TCP length equals 32 + data length (ads-rs
 * drops the connection otherwise). `*data` points into `frame`.
 */
/* Decode only the AMS header (needs the first 38 bytes; no length check). */
autd3_err_t autd3__ams_header_peek(const uint8_t *frame, size_t len, ams_header_t *h);
autd3_err_t autd3__ams_frame_decode(const uint8_t *frame, size_t len, ams_header_t *h, const uint8_t **data);
/*
 * Encode an ADS frame: AMS/TCP header, AMS header (h->length is set from
 * the part lengths), then `a` (na bytes) and `b` (nb bytes). Returns the
 * frame length, or 0 if it does not fit into `cap`.
 */
size_t autd3__ams_frame_encode(uint8_t *out, size_t cap, ams_header_t *h, const void *a, size_t na, const void *b, size_t nb);
/* A router frame (AMS/TCP command `cmd`, `n` payload bytes). Returns the length or 0. */
size_t autd3__ams_router_encode(uint8_t *out, size_t cap, uint16_t cmd, const void *payload, size_t n);

/* ---- command data (request parameters and reply parsing) ---- */
/* Fill the fixed parameter words of requests; return the parameter length. */
size_t autd3__ads_params_rw(uint8_t *p, uint32_t group, uint32_t offset, uint32_t len);                      /* Read / Write: 12 */
size_t autd3__ads_params_readwrite(uint8_t *p, uint32_t group, uint32_t offset, uint32_t rlen, uint32_t wlen); /* ReadWrite: 16 */
size_t autd3__ads_params_add_notification(uint8_t *p, uint32_t group, uint32_t offset, uint32_t len, uint32_t mode,
                                   uint32_t max_delay_100ns, uint32_t cycle_100ns); /* 40 */

typedef struct ads_device_info {
  uint8_t major, minor;
  uint16_t build;
  char name[17];
} ads_device_info_t;

/*
 * Parse reply data of `cmd`. Every reply starts with a u32 ADS result, stored
 * in *result. For Read/ReadWrite `*payload`/`*payload_len` is the data; for
 * ReadState `aux` receives (ads_state << 16 | device_state); for
 * AddDeviceNotification `aux` receives the handle. AUTD3_E_PROTOCOL when the
 * data is shorter than the command requires or its length field lies.
 */
autd3_err_t autd3__ads_reply_parse(uint16_t cmd, const uint8_t *data, size_t len, uint32_t *result, const uint8_t **payload,
                            uint32_t *payload_len, uint32_t *aux);
autd3_err_t autd3__ads_device_info_parse(const uint8_t *data, size_t len, uint32_t *result, ads_device_info_t *out);

/*
 * Walk a DeviceNotification stream (command 8 data): length, stamps, then per
 * stamp a FILETIME and samples (handle, size, bytes). Calls fn for each
 * sample. AUTD3_E_PROTOCOL if any count or size runs past the data.
 */
typedef void (*ads_sample_fn)(void *ctx, uint64_t filetime, uint32_t handle, const uint8_t *data, uint32_t size);
autd3_err_t autd3__ads_notification_parse(const uint8_t *data, size_t len, ads_sample_fn fn, void *ctx);

/* Text of an ADS/AMS return code ("unknown ADS error" if not in the table). */
const char *autd3__ads_strerror(uint32_t code);
/* Name of a command id ("Read", "Write", ...). */
const char *autd3__ads_cmd_name(uint16_t cmd);

/* ---- client ---- */
typedef void (*ads_notify_fn)(void *ctx, uint32_t handle, const uint8_t *data, uint32_t size);

typedef struct ads_client {
  int fd;                /* -1 when not connected */
  ams_addr_t source;     /* our AmsAddr */
  uint32_t next_invoke;  /* starts at 1 (ads-rs), skips 0 */
  uint32_t timeout_ms;   /* per request */
  uint8_t *rbuf, *wbuf;  /* receive / send buffers, allocated once */
  size_t rcap, wcap, rlen, rpos;
  ads_notify_fn on_notify;
  void *notify_ctx;
  uint64_t notifications; /* notification frames received */
  bool heard;             /* a byte came on this connection (a closed connection that never answered: ads_client.c closed) */
  char peer[64];          /* "host:port" for messages */
  autd3_net_addrs_t addrs; /* what the host resolved to at the first connect: reconnects (on the cycle path) reuse it */
} ads_client_t;

/* A reply: valid until the next call on the client. */
typedef struct ads_reply {
  ams_header_t h;
  const uint8_t *data;
  size_t len;
} ads_reply_t;

/* Allocate buffers for frames carrying up to `max_data` ADS data bytes. */
autd3_err_t autd3__ads_client_init(ads_client_t *c, size_t max_data, uint32_t timeout_ms);
void autd3__ads_client_free(ads_client_t *c);
/* TCP connect (IPv4 / IPv6 address or name, resolved once: a reconnect to the same host reuses the addresses),
 * TCP_NODELAY, bounded by the timeout. Sets the
 * default source NetId to <local IP>.1.1, port 58913 (what ads-rs' Source::Auto does). */
autd3_err_t autd3__ads_client_connect(ads_client_t *c, const char *host, uint16_t port);
void autd3__ads_client_disconnect(ads_client_t *c);
/* Ask a local router for an AMS port (AMS/TCP 0x1000); sets c->source to the answer. */
autd3_err_t autd3__ads_client_port_connect(ads_client_t *c);
/* Send a request without waiting; returns its invoke id. */
autd3_err_t autd3__ads_client_send(ads_client_t *c, const ams_addr_t *target, uint16_t cmd, const void *params, size_t np,
                            const void *data, size_t nd, uint32_t *invoke);
/*
 * Read and handle frames until the reply to `invoke` arrives (then *got = true
 * and *reply is filled), one notification was dispatched (when
 * `stop_on_notify`), or `deadline_ns` passes (AUTD3_E_TIMEOUT). Replies to
 * other invoke ids (late answers to timed-out requests) are dropped.
 */
autd3_err_t autd3__ads_client_pump(ads_client_t *c, uint32_t invoke, uint64_t deadline_ns, bool stop_on_notify, bool *got,
                            ads_reply_t *reply);
/*
 * One request/reply round trip. Checks the AMS error, the reply's source and
 * command, and the ADS result; any failure returns AUTD3_E_ADS with a message
 * naming the code, its text, the target and the command.
 */
autd3_err_t autd3__ads_client_request(ads_client_t *c, const ams_addr_t *target, uint16_t cmd, const void *params, size_t np,
                               const void *data, size_t nd, ads_reply_t *reply);
/* Check a reply against its request (used by request and by the link's pipelined write). */
autd3_err_t autd3__ads_reply_check(const ads_client_t *c, const ams_addr_t *target, uint16_t cmd, const ads_reply_t *r, uint32_t group,
                            uint32_t offset);

autd3_err_t autd3__ads_read(ads_client_t *c, const ams_addr_t *t, uint32_t group, uint32_t offset, void *buf, uint32_t len, uint32_t *nread);
autd3_err_t autd3__ads_write(ads_client_t *c, const ams_addr_t *t, uint32_t group, uint32_t offset, const void *buf, uint32_t len);
autd3_err_t autd3__ads_read_write(ads_client_t *c, const ams_addr_t *t, uint32_t group, uint32_t offset, void *rbuf, uint32_t rlen,
                           const void *wbuf, uint32_t wlen, uint32_t *nread);
autd3_err_t autd3__ads_read_state(ads_client_t *c, const ams_addr_t *t, uint16_t *ads_state, uint16_t *dev_state);
autd3_err_t autd3__ads_read_device_info(ads_client_t *c, const ams_addr_t *t, ads_device_info_t *out);
autd3_err_t autd3__ads_add_notification(ads_client_t *c, const ams_addr_t *t, uint32_t group, uint32_t offset, uint32_t len, uint32_t mode,
                                 uint32_t max_delay_100ns, uint32_t cycle_100ns, uint32_t *handle);
autd3_err_t autd3__ads_del_notification(ads_client_t *c, const ams_addr_t *t, uint32_t handle);

#endif
