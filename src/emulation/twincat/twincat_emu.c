/*
 * The emulated TwinCAT runtime (see twincat_emu.h for what it serves and
 * why). One thread: ppoll() with a nanosecond timeout to the next task
 * deadline, then the task cycle, then socket I/O.
 */
#define _GNU_SOURCE
#include "emulation/twincat/twincat_emu.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "autd3/link_driver.h"
#include "autd3/proto.h"
#include "core/error_context.h"
#include "emulation/device/firmware.h"
#include "net/log_limit.h"
#include "net/net.h"
#include "platform/platform.h"

#define TASK_PORT 301          /* AUTD3 "Task 1" (reference: AMS port 301) */
#define SYSTEM_PORT 10000      /* TwinCAT system service */
#define IG_AUTD 0x03040030u
#define IO_OUTPUT 0x81000000u
#define IO_INPUT 0x80000000u
#define STATE_OP 0x0008u
#define FILETIME_UNIX_EPOCH 116444736000000000ull /* 100 ns ticks from 1601 to 1970 */

typedef struct notif {
  bool used;
  uint32_t handle, offset, len, mode, cycle_100ns;
  uint64_t last_cycle; /* task cycle of the last sample sent */
  bool sent_once;
  uint8_t *last;       /* snapshot for on-change (inside conn->snap) */
} notif_t;

typedef struct conn {
  int fd; /* -1 = free slot */
  uint8_t *rbuf, *wbuf, *snap;
  size_t rlen, wlen;
  size_t skip;           /* bytes of an oversized frame still to discard */
  ams_addr_t peer;       /* source of its last request: where notifications go */
  bool have_peer;
  notif_t notif[TCEMU_MAX_NOTIF];
  bool dead;
  bool framed;           /* it sent a complete AMS/TCP frame (its "handshake") */
  uint64_t since_ns;     /* accepted at, then: its last complete frame (quiet measure) */
  char name[AUTD3_NET_PEER_MAX]; /* peer address, for the log */
} conn_t;

struct tcemu {
  tcemu_config_t cfg;
  int lfd;
  uint16_t port;
  uint64_t task_ns;
  autd3_fw_dev_t *dev; /* per device: its firmware (cfg.firmware) and execution log (tcemu_log_drain) */
  uint8_t *out_img, *in_img; /* task output / input images */
  uint32_t out_len, in_len;
  uint32_t in_base; /* offset of the first rx pair in in_img: 2 (after CfgSlaveCount) or 0 (legacy_image) */
  size_t rcap, wcap, snap_len;
  conn_t *conns; /* cfg.max_conns places */
  struct pollfd *pf;
  int *pf_idx;
  conn_t fuzz;
  autd3_log_limit_t log_limit;
  _Atomic uint64_t st_accepted, st_refused, st_timed_out, st_evicted;
  uint32_t next_handle;
  uint16_t next_router_port;
  _Atomic bool stop, drop;
  _Atomic uint64_t cycles;
  _Atomic uint16_t state_word[AUTD3_MAX_DEVICES];
  atomic_bool power_cycle_req[AUTD3_MAX_DEVICES];
  uint32_t power_cycle_left[AUTD3_MAX_DEVICES]; /* task cycles until OP again (emulator thread) */
  uint8_t scratch[AMS_FRAME_HDR_LEN + 64];
};

tcemu_config_t tcemu_config_default(void) {
  tcemu_config_t c = {.devices = 2, .listen_host = "127.0.0.1", .listen_port = ADS_TCP_PORT, .task_us = 1000,
                      .netid = {{127, 0, 0, 1, 1, 1}}, .timing = autd3_timing_model_default(), .verbose = false,
                      .max_conns = TCEMU_MAX_CONNS, .handshake_timeout_ms = 10000, .idle_timeout_ms = 10000, .log_lines_per_s = 10};
  return c;
}

/* Verbose connection log, rate limited so a connect storm cannot grow it without bound. */
static void logf_(tcemu_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(tcemu_t *e, const char *fmt, ...) {
  if (!e->cfg.verbose) return;
  uint64_t held = 0;
  if (!autd3__log_limit_take(&e->log_limit, autd3__now_ns(), &held)) return;
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (held) {
    size_t k = strlen(line);
    snprintf(line + k, sizeof line - k, " [%llu earlier line(s) not logged: rate limit]", (unsigned long long)held);
  }
  if (e->cfg.log) e->cfg.log(e->cfg.log_ctx, line);
  else fprintf(stderr, "autd3-twincat-emu: %s\n", line);
}

static autd3_err_t conn_alloc(tcemu_t *e, conn_t *c, int fd) {
  memset(c, 0, sizeof *c);
  c->rbuf = malloc(e->rcap);
  c->wbuf = malloc(e->wcap);
  c->snap = malloc(e->snap_len * TCEMU_MAX_NOTIF);
  if (!c->rbuf || !c->wbuf || !c->snap) {
    free(c->rbuf), free(c->wbuf), free(c->snap);
    c->fd = -1;
    return AUTD3_E_NOMEM;
  }
  for (int i = 0; i < TCEMU_MAX_NOTIF; i++) c->notif[i].last = c->snap + (size_t)i * e->snap_len;
  c->fd = fd;
  return AUTD3_OK;
}

static void conn_close(tcemu_t *e, conn_t *c, const char *why) {
  if (c->fd >= 0) {
    close(c->fd);
    logf_(e, "connection %s closed%s%s", c->name, why ? ": " : "", why ? why : "");
  }
  free(c->rbuf), free(c->wbuf), free(c->snap);
  memset(c, 0, sizeof *c);
  c->fd = -1;
}

autd3_err_t tcemu_create(const tcemu_config_t *cfg, tcemu_t **out) {
  if (cfg->devices < 1 || cfg->devices > AUTD3_MAX_DEVICES)
    return autd3_set_error(AUTD3_E_DEVICE_COUNT_RANGE, "twincat-emu: --devices %u: must be 1..%d", cfg->devices, AUTD3_MAX_DEVICES);
  if (cfg->task_us < 50 || cfg->task_us > 1000000)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "twincat-emu: --task-us %u: must be 50..1000000", cfg->task_us);
  const struct {
    const char *name;
    uint32_t v, lo, hi;
  } range[] = {{"max-conns", cfg->max_conns, 1, TCEMU_MAX_CONNS_LIMIT},
               {"handshake-timeout-ms", cfg->handshake_timeout_ms, 1, 3600000},
               {"idle-timeout-ms", cfg->idle_timeout_ms, 1, 3600000},
               {"log-lines-per-s", cfg->log_lines_per_s, 0, 100000}};
  for (size_t i = 0; i < sizeof range / sizeof range[0]; i++)
    if (range[i].v < range[i].lo || range[i].v > range[i].hi)
      return autd3_set_error(AUTD3_E_INVALID_OPTION, "twincat-emu: --%s %u: must be %u..%u", range[i].name, range[i].v, range[i].lo,
                             range[i].hi);
  tcemu_t *e = calloc(1, sizeof *e);
  if (!e) return AUTD3_E_NOMEM;
  e->cfg = *cfg;
  e->lfd = -1;
  e->task_ns = (uint64_t)cfg->task_us * 1000;
  e->out_len = (uint32_t)cfg->devices * AUTD3_TX_FRAME_BYTES;
  e->in_base = cfg->legacy_image ? 0u : 2u; /* CfgSlaveCount first, unless the legacy layout */
  e->in_len = e->in_base + (uint32_t)cfg->devices * 4u;
  /* Room for the largest legitimate request (a Write of the whole output
   * image) with slack; longer frames get 0x0705 and are skipped. */
  e->rcap = AMS_FRAME_HDR_LEN + 16 + e->out_len + e->in_len + 4096;
  e->wcap = 4 * e->rcap;
  e->snap_len = e->out_len > e->in_len ? e->out_len : e->in_len;
  e->next_handle = 1;
  e->next_router_port = 30000;
  e->dev = calloc(cfg->devices, sizeof *e->dev);
  e->out_img = calloc(1, e->out_len);
  e->in_img = calloc(1, e->in_len);
  e->conns = calloc(cfg->max_conns, sizeof *e->conns);
  e->pf = calloc(1u + cfg->max_conns, sizeof *e->pf);
  e->pf_idx = calloc(1u + cfg->max_conns, sizeof *e->pf_idx);
  if (e->conns)
    for (uint32_t i = 0; i < cfg->max_conns; i++) e->conns[i].fd = -1;
  e->fuzz.fd = -1;
  autd3__log_limit_init(&e->log_limit, cfg->log_lines_per_s, 0, autd3__now_ns());
  if (!e->dev || !e->out_img || !e->in_img || !e->conns || !e->pf || !e->pf_idx) {
    tcemu_free(e);
    return AUTD3_E_NOMEM;
  }
  uint64_t now = autd3__now_ns();
  for (uint16_t i = 0; i < cfg->devices; i++) {
    autd3_fw_dev_init(&e->dev[i], cfg->firmware, i, NULL, &cfg->timing);
    autd3_fw_dev_set_sync0(&e->dev[i], now, (uint32_t)e->task_ns); /* SYNC0 = task cycle */
    atomic_init(&e->state_word[i], STATE_OP);
  }
  if (!cfg->legacy_image) ads_put_u16(e->in_img, cfg->devices); /* CfgSlaveCount */

  /* The shared network layer: IPv4 / IPv6 / names, the OS's backlog (the place table bounds connections). */
  const char *host = cfg->listen_host ? cfg->listen_host : "127.0.0.1";
  char addr[AUTD3_NET_HOST_MAX + 16];
  snprintf(addr, sizeof addr, strchr(host, ':') && host[0] != '[' ? "[%s]:%u" : "%s:%u", host, cfg->listen_port);
  autd3_err_t err = autd3__net_listen(addr, &e->lfd, &e->port);
  if (err != AUTD3_OK) {
    tcemu_free(e); /* frees; leaves the message alone */
    return autd3__error_context(err, "twincat-emu");
  }
  *out = e;
  return AUTD3_OK;
}

uint16_t tcemu_port(const tcemu_t *e) { return e->port; }
uint16_t tcemu_devices(const tcemu_t *e) { return e->cfg.devices; }
size_t tcemu_log_drain(tcemu_t *e, uint16_t dev, autd3_exec_entry_t *out, size_t cap, uint64_t *dropped) {
  if (dev >= e->cfg.devices) return 0;
  return autd3_exec_log_drain(&e->dev[dev].log, out, cap, dropped);
}
void tcemu_stop(tcemu_t *e) { atomic_store(&e->stop, true); }
void tcemu_drop_connections(tcemu_t *e) { atomic_store(&e->drop, true); }
uint64_t tcemu_cycles(const tcemu_t *e) { return atomic_load(&e->cycles); }
void tcemu_set_state_word(tcemu_t *e, uint16_t dev, uint16_t w) {
  if (dev < e->cfg.devices) atomic_store(&e->state_word[dev], w);
}
void tcemu_power_cycle(tcemu_t *e, uint16_t dev) {
  if (dev < e->cfg.devices) atomic_store(&e->power_cycle_req[dev], true);
}

/* The state word shown while a power-cycled slave comes back (quarters of TCEMU_POWER_CYCLE_TASKS). */
static uint16_t power_cycle_word(uint32_t left) {
  if (left > TCEMU_POWER_CYCLE_TASKS * 3 / 4) return 0x0001; /* INIT */
  if (left > TCEMU_POWER_CYCLE_TASKS / 2) return 0x0002;     /* PRE-OP */
  return 0x0004;                                             /* SAFE-OP */
}

void tcemu_conn_stats(const tcemu_t *e, tcemu_conn_stats_t *out) {
  out->accepted = atomic_load(&e->st_accepted);
  out->refused = atomic_load(&e->st_refused);
  out->timed_out = atomic_load(&e->st_timed_out);
  out->evicted = atomic_load(&e->st_evicted);
}

void tcemu_free(tcemu_t *e) {
  if (!e) return;
  if (e->conns)
    for (uint32_t i = 0; i < e->cfg.max_conns; i++)
      if (e->conns[i].fd >= 0) conn_close(e, &e->conns[i], NULL);
  if (e->fuzz.rbuf) conn_close(e, &e->fuzz, NULL);
  if (e->lfd >= 0) close(e->lfd);
  free(e->conns), free(e->pf), free(e->pf_idx);
  free(e->dev), free(e->out_img), free(e->in_img);
  free(e);
}

/* ---- output queue ---- */
static bool queue(conn_t *c, size_t wcap, const uint8_t *p, size_t n) {
  if (c->wlen + n > wcap) return false;
  memcpy(c->wbuf + c->wlen, p, n);
  c->wlen += n;
  return true;
}

/* Reply to request `h`: swap addresses, set the response flag, queue it.
 * A client that lets its replies pile up beyond the buffer is dropped. */
static void reply(tcemu_t *e, conn_t *c, const ams_header_t *req, uint32_t ams_error, const void *a, size_t na, const void *b, size_t nb) {
  ams_header_t h = {.target = req->source, .source = req->target, .cmd = req->cmd, .flags = AMS_SF_RESPONSE | AMS_SF_ADS,
                    .error = ams_error, .invoke = req->invoke};
  if (c->wlen + AMS_FRAME_HDR_LEN + na + nb > e->wcap) {
    c->dead = true;
    return;
  }
  c->wlen += autd3__ams_frame_encode(c->wbuf + c->wlen, e->wcap - c->wlen, &h, a, na, b, nb);
}

/* A failed request still gets its command's fixed reply fields, zeroed
 * (Read: result + length 0): Beckhoff AdsLib (inside pyads) ignores a
 * shorter reply and times out with 0x0745. */
static void reply_result(tcemu_t *e, conn_t *c, const ams_header_t *req, uint32_t result) {
  uint8_t r[24] = {0};
  size_t n = 4;
  if (req->cmd == ADS_CMD_READ || req->cmd == ADS_CMD_READ_WRITE || req->cmd == ADS_CMD_ADD_NOTIFICATION || req->cmd == ADS_CMD_READ_STATE)
    n = 8;
  else if (req->cmd == ADS_CMD_READ_DEVICE_INFO)
    n = 24;
  ads_put_u32(r, result);
  reply(e, c, req, 0, r, n, NULL, 0);
}

/* Locate [offset, offset+len) in the task's images: returns a pointer or
 * sets *err to the ADS code a runtime gives (0x0703 outside, 0x0705 too long). */
static uint8_t *image_at(tcemu_t *e, uint32_t offset, uint32_t len, bool *is_input, uint32_t *err) {
  struct {
    uint32_t base, size;
    uint8_t *p;
    bool input;
  } img[2] = {{IO_INPUT, e->in_len, e->in_img, true}, {IO_OUTPUT, e->out_len, e->out_img, false}};
  for (int i = 0; i < 2; i++) {
    if (offset >= img[i].base && offset - img[i].base < img[i].size) {
      if ((uint64_t)(offset - img[i].base) + len > img[i].size) {
        *err = ADS_ERR_INVALID_SIZE;
        return NULL;
      }
      *is_input = img[i].input;
      return img[i].p + (offset - img[i].base);
    }
  }
  *err = ADS_ERR_INVALID_OFFSET;
  return NULL;
}

static void device_info(tcemu_t *e, conn_t *c, const ams_header_t *h, const char *name) {
  uint8_t r[24] = {0};
  r[4] = 3, r[5] = 1;    /* TwinCAT 3.1 */
  ads_put_u16(r + 6, 4026); /* build 4026, the reference tool's default */
  memcpy(r + 8, name, strlen(name) < 16 ? strlen(name) : 16);
  reply(e, c, h, 0, r, 24, NULL, 0);
}

static void read_state(tcemu_t *e, conn_t *c, const ams_header_t *h) {
  uint8_t r[8] = {0};
  ads_put_u16(r + 4, ADS_STATE_RUN);
  reply(e, c, h, 0, r, 8, NULL, 0);
}

static void serve_task(tcemu_t *e, conn_t *c, const ams_header_t *h, const uint8_t *d) {
  uint32_t n = h->length, err = 0;
  bool in = false;
  switch (h->cmd) {
    case ADS_CMD_READ_DEVICE_INFO: device_info(e, c, h, "Task 1"); return;
    case ADS_CMD_READ_STATE: read_state(e, c, h); return;
    case ADS_CMD_READ: {
      if (n < 12) return reply_result(e, c, h, ADS_ERR_INVALID_SIZE);
      uint32_t ig = ads_get_u32(d), io = ads_get_u32(d + 4), len = ads_get_u32(d + 8);
      if (ig != IG_AUTD) return reply_result(e, c, h, ADS_ERR_INVALID_GRP);
      const uint8_t *p = image_at(e, io, len, &in, &err);
      if (!p) return reply_result(e, c, h, err);
      uint8_t r[8];
      ads_put_u32(r, 0);
      ads_put_u32(r + 4, len);
      return reply(e, c, h, 0, r, 8, p, len);
    }
    case ADS_CMD_WRITE: {
      if (n < 12) return reply_result(e, c, h, ADS_ERR_INVALID_SIZE);
      uint32_t ig = ads_get_u32(d), io = ads_get_u32(d + 4), len = ads_get_u32(d + 8);
      if ((uint64_t)len + 12 != n) return reply_result(e, c, h, ADS_ERR_INVALID_SIZE);
      if (ig != IG_AUTD) return reply_result(e, c, h, ADS_ERR_INVALID_GRP);
      uint8_t *p = image_at(e, io, len, &in, &err);
      if (!p) return reply_result(e, c, h, err);
      if (in) return reply_result(e, c, h, ADS_ERR_INVALID_ACCESS); /* inputs come from the devices */
      memcpy(p, d + 12, len);
      return reply_result(e, c, h, 0);
    }
    case ADS_CMD_ADD_NOTIFICATION: {
      if (n < 40) return reply_result(e, c, h, ADS_ERR_INVALID_SIZE);
      uint32_t ig = ads_get_u32(d), io = ads_get_u32(d + 4), len = ads_get_u32(d + 8), mode = ads_get_u32(d + 12);
      if (ig != IG_AUTD) return reply_result(e, c, h, ADS_ERR_INVALID_GRP);
      if (!image_at(e, io, len, &in, &err)) return reply_result(e, c, h, err);
      if (mode < ADS_TRANS_SERVER_CYCLE || mode > ADS_TRANS_SERVER_ON_CHANGE2) return reply_result(e, c, h, 0x0713);
      if (len == 0) return reply_result(e, c, h, ADS_ERR_INVALID_SIZE);
      for (int i = 0; i < TCEMU_MAX_NOTIF; i++) {
        notif_t *nt = &c->notif[i];
        if (nt->used) continue;
        uint8_t *snap = nt->last;
        *nt = (notif_t){.used = true, .handle = e->next_handle++, .offset = io, .len = len, .mode = mode,
                        .cycle_100ns = ads_get_u32(d + 20), .last = snap};
        if (e->next_handle == 0) e->next_handle = 1;
        uint8_t r[8];
        ads_put_u32(r, 0);
        ads_put_u32(r + 4, nt->handle);
        return reply(e, c, h, 0, r, 8, NULL, 0);
      }
      return reply_result(e, c, h, 0x0716); /* no further notification handle */
    }
    case ADS_CMD_DEL_NOTIFICATION: {
      if (n < 4) return reply_result(e, c, h, ADS_ERR_INVALID_SIZE);
      uint32_t handle = ads_get_u32(d);
      for (int i = 0; i < TCEMU_MAX_NOTIF; i++)
        if (c->notif[i].used && c->notif[i].handle == handle) {
          c->notif[i].used = false;
          return reply_result(e, c, h, 0);
        }
      return reply_result(e, c, h, ADS_ERR_INVALID_NOTIF_HANDLE);
    }
    default: return reply_result(e, c, h, ADS_ERR_SRV_NOT_SUPP); /* ReadWrite, WriteControl, ... */
  }
}

static void handle_frame(tcemu_t *e, conn_t *c, uint16_t tcmd, const uint8_t *f, size_t len) {
  if (tcmd == AMS_TCP_PORT_CONNECT) {
    /* A local router hands out a port and tells its NetId (ads-rs Source::Request). */
    uint8_t r[8];
    memcpy(r, e->cfg.netid.b, 6);
    ads_put_u16(r + 6, e->next_router_port++);
    if (e->next_router_port < 30000) e->next_router_port = 30000;
    size_t k = autd3__ams_router_encode(e->scratch, sizeof e->scratch, AMS_TCP_PORT_CONNECT, r, 8);
    if (!queue(c, e->wcap, e->scratch, k)) c->dead = true;
    return;
  }
  if (tcmd == AMS_TCP_GET_LOCAL_NETID) {
    size_t k = autd3__ams_router_encode(e->scratch, sizeof e->scratch, AMS_TCP_GET_LOCAL_NETID, e->cfg.netid.b, 6);
    if (!queue(c, e->wcap, e->scratch, k)) c->dead = true;
    return;
  }
  if (tcmd != AMS_TCP_ADS) return; /* port close, router notes: nothing to answer */
  ams_header_t h;
  const uint8_t *d;
  if (autd3__ams_frame_decode(f, len, &h, &d) != AUTD3_OK) {
    c->dead = true; /* lengths disagree: the stream cannot be trusted any more */
    return;
  }
  if (h.flags & AMS_SF_RESPONSE) return; /* we never send requests */
  c->peer = h.source;
  c->have_peer = true;
  if (!autd3__ams_netid_eq(&h.target.netid, &e->cfg.netid)) return reply(e, c, &h, ADS_ERR_TARGET_MACHINE_NOT_FOUND, NULL, 0, NULL, 0);
  if (h.target.port == TASK_PORT) return serve_task(e, c, &h, d);
  if (h.target.port == SYSTEM_PORT) {
    if (h.cmd == ADS_CMD_READ_STATE) return read_state(e, c, &h);
    if (h.cmd == ADS_CMD_READ_DEVICE_INFO) return device_info(e, c, &h, "TwinCAT System");
    return reply_result(e, c, &h, ADS_ERR_SRV_NOT_SUPP);
  }
  reply(e, c, &h, ADS_ERR_TARGET_PORT_NOT_FOUND, NULL, 0, NULL, 0);
}

/* Parse every whole frame in the receive buffer. */
static void process_input(tcemu_t *e, conn_t *c) {
  size_t pos = 0;
  while (!c->dead) {
    if (c->skip > 0) {
      size_t k = c->skip < c->rlen - pos ? c->skip : c->rlen - pos;
      pos += k;
      c->skip -= k;
      if (c->skip > 0) break;
    }
    uint16_t tcmd;
    size_t flen;
    int r = autd3__ams_frame_peek(c->rbuf + pos, c->rlen - pos, e->rcap, &tcmd, &flen);
    if (r == 0) break;
    if (r < 0) {
      /* Too long for any legitimate request: answer 0x0705 from its header
       * (when it is a consistent ADS request) and discard its bytes. */
      if (c->rlen - pos < AMS_FRAME_HDR_LEN) break;
      ams_header_t h;
      uint32_t body = ads_get_u32(c->rbuf + pos + 2);
      autd3__ams_header_peek(c->rbuf + pos, c->rlen - pos, &h);
      if (tcmd == AMS_TCP_ADS) {
        if ((uint64_t)h.length + AMS_HDR_LEN != body) {
          c->dead = true;
          break;
        }
        if (!(h.flags & AMS_SF_RESPONSE)) reply_result(e, c, &h, ADS_ERR_INVALID_SIZE);
      }
      c->skip = (size_t)body + AMS_TCP_HDR_LEN;
      continue;
    }
    handle_frame(e, c, tcmd, c->rbuf + pos, flen);
    pos += flen;
    c->framed = true;
    c->since_ns = autd3__now_ns();
  }
  memmove(c->rbuf, c->rbuf + pos, c->rlen - pos);
  c->rlen -= pos;
}

/* One notification frame per connection carrying every due sample. */
static void notify(tcemu_t *e, conn_t *c, uint64_t cycle, uint64_t filetime) {
  if (!c->have_peer) return;
  size_t hdr = AMS_FRAME_HDR_LEN, pos = hdr + 4 + 4 + 8 + 4;
  uint32_t samples = 0;
  for (int i = 0; i < TCEMU_MAX_NOTIF; i++) {
    notif_t *nt = &c->notif[i];
    if (!nt->used) continue;
    bool in;
    uint32_t err;
    const uint8_t *p = image_at(e, nt->offset, nt->len, &in, &err);
    if (!p) continue;
    bool on_change = nt->mode == ADS_TRANS_SERVER_ON_CHANGE || nt->mode == ADS_TRANS_SERVER_ON_CHANGE2;
    uint64_t period = nt->cycle_100ns ? ((uint64_t)nt->cycle_100ns * 100 + e->task_ns - 1) / e->task_ns : 1;
    if (nt->sent_once && cycle - nt->last_cycle < period) continue;
    if (on_change && nt->sent_once && memcmp(nt->last, p, nt->len) == 0) continue;
    if (c->wlen + pos + 8 + nt->len > e->wcap) break; /* client is not reading: skip, never block */
    uint8_t *w = c->wbuf + c->wlen;
    ads_put_u32(w + pos, nt->handle);
    ads_put_u32(w + pos + 4, nt->len);
    memcpy(w + pos + 8, p, nt->len);
    memcpy(nt->last, p, nt->len);
    pos += 8 + nt->len;
    nt->last_cycle = cycle;
    nt->sent_once = true;
    samples++;
  }
  if (samples == 0) return;
  uint8_t *w = c->wbuf + c->wlen;
  ams_header_t h = {.target = c->peer, .source = {.netid = e->cfg.netid, .port = TASK_PORT}, .cmd = ADS_CMD_NOTIFICATION,
                    .flags = AMS_SF_ADS, .invoke = 0};
  size_t data = pos - hdr;
  ads_put_u32(w + hdr, (uint32_t)(data - 4));
  ads_put_u32(w + hdr + 4, 1); /* one stamp */
  ads_put_u64(w + hdr + 8, filetime);
  ads_put_u32(w + hdr + 16, samples);
  /* header last: autd3__ams_frame_encode with no parts only writes the 38 bytes */
  uint8_t hb[AMS_FRAME_HDR_LEN];
  autd3__ams_frame_encode(hb, sizeof hb, &h, NULL, 0, NULL, 0);
  ads_put_u32(hb + 2, (uint32_t)(AMS_HDR_LEN + data));
  ads_put_u32(hb + AMS_TCP_HDR_LEN + 20, (uint32_t)data);
  memcpy(w, hb, hdr);
  c->wlen += pos;
}

/* The task cycle: outputs to the devices, inputs back, notifications out. */
static void flush(conn_t *c);

static void task_cycle(tcemu_t *e, uint64_t now) {
  uint16_t n = e->cfg.devices;
  if (!e->cfg.serve_immediately)
    for (uint32_t i = 0; i < e->cfg.max_conns; i++)
      if (e->conns[i].fd >= 0 && e->conns[i].rlen > 0) {
        process_input(e, &e->conns[i]);
        flush(&e->conns[i]); /* replies first, in their own segments (readable captures) */
      }
  for (uint16_t i = 0; i < n; i++) {
    uint8_t rx[AUTD3_RX_FRAME_BYTES];
    if (atomic_exchange_explicit(&e->power_cycle_req[i], false, memory_order_relaxed)) {
      autd3_fw_dev_power_cycle(&e->dev[i], now); /* the firmware restarts: its state is gone (its log and counters stay) */
      autd3_fw_dev_set_sync0(&e->dev[i], now, (uint32_t)e->task_ns);
      e->power_cycle_left[i] = TCEMU_POWER_CYCLE_TASKS;
    }
    uint16_t word = atomic_load_explicit(&e->state_word[i], memory_order_relaxed);
    if (e->power_cycle_left[i] > 0) { /* coming back: no outputs until OP */
      word = power_cycle_word(e->power_cycle_left[i]--);
    } else {
      autd3_fw_dev_write(&e->dev[i], e->out_img + (size_t)i * AUTD3_TX_FRAME_BYTES, now);
    }
    autd3_fw_dev_read(&e->dev[i], now, rx);
    memcpy(e->in_img + e->in_base + 2 * i, rx, 2);
    ads_put_u16(e->in_img + e->in_base + 2 * n + 2 * i, word);
  }
  uint64_t cycle = atomic_fetch_add(&e->cycles, 1) + 1;
  uint64_t ft = autd3__realtime_ns() / 100 + FILETIME_UNIX_EPOCH;
  for (uint32_t i = 0; i < e->cfg.max_conns; i++)
    if (e->conns[i].fd >= 0) notify(e, &e->conns[i], cycle, ft);
  if (e->fuzz.rbuf) notify(e, &e->fuzz, cycle, ft);
}

static void flush(conn_t *c) {
  while (c->wlen > 0 && !c->dead) {
    ssize_t w = send(c->fd, c->wbuf, c->wlen, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      memmove(c->wbuf, c->wbuf + w, c->wlen - (size_t)w);
      c->wlen -= (size_t)w;
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else {
      if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) c->dead = true;
      break;
    }
  }
}

/* A place for a new connection: a free one, else the one quiet longest if it has been quiet for idle_timeout_ms
 * (closed to make room), else -1. Connections that never sent a frame go by their handshake timeout instead. */
static int free_place(tcemu_t *e, uint64_t now) {
  int quiet = -1;
  for (uint32_t i = 0; i < e->cfg.max_conns; i++) {
    conn_t *c = &e->conns[i];
    if (c->fd < 0) return (int)i;
    if (c->framed && (quiet < 0 || c->since_ns < e->conns[quiet].since_ns)) quiet = (int)i;
  }
  if (quiet < 0 || now - e->conns[quiet].since_ns < (uint64_t)e->cfg.idle_timeout_ms * 1000000u) return -1;
  atomic_fetch_add(&e->st_evicted, 1);
  conn_close(e, &e->conns[quiet], "quiet longest, its place went to a new connection");
  return quiet;
}

static void accept_all(tcemu_t *e) {
  for (int k = 0; k < 64; k++) { /* bounded per loop turn: a connect storm cannot starve the task */
    char name[AUTD3_NET_PEER_MAX];
    int fd = autd3__net_accept(e->lfd, name, sizeof name);
    if (fd < 0) return;
    int slot = free_place(e, autd3__now_ns());
    if (slot < 0 || conn_alloc(e, &e->conns[slot], fd) != AUTD3_OK) {
      close(fd); /* full: refused at once, bounded */
      atomic_fetch_add(&e->st_refused, 1);
      logf_(e, "connection %s refused: all %u places taken", name, e->cfg.max_conns);
      continue;
    }
    conn_t *c = &e->conns[slot];
    /* Fixed, not autotuned to megabytes: a client that stops reading fills it soon, then its own buffer here,
     * and is disconnected (flush/queue) instead of being fed for minutes. */
    autd3__net_cap_send_buffer(fd, 65536);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->since_ns = autd3__now_ns();
    atomic_fetch_add(&e->st_accepted, 1);
    logf_(e, "connection %s accepted", name);
  }
}

static void read_conn(tcemu_t *e, conn_t *c) {
  for (;;) {
    if (c->rlen == e->rcap) return; /* full: the task cycle consumes it first */
    ssize_t r = recv(c->fd, c->rbuf + c->rlen, e->rcap - c->rlen, MSG_DONTWAIT);
    if (r > 0) {
      c->rlen += (size_t)r;
      if (e->cfg.serve_immediately) process_input(e, c);
      if (c->dead) return;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) c->dead = true;
    return;
  }
}

autd3_err_t tcemu_run(tcemu_t *e) {
  struct pollfd *pf = e->pf;
  int *idx = e->pf_idx;
  uint64_t next = autd3__now_ns() + e->task_ns;
  const uint64_t handshake_ns = (uint64_t)e->cfg.handshake_timeout_ms * 1000000u;
  while (!atomic_load(&e->stop)) {
    if (atomic_exchange(&e->drop, false))
      for (uint32_t i = 0; i < e->cfg.max_conns; i++)
        if (e->conns[i].fd >= 0) conn_close(e, &e->conns[i], "dropped (test control)");
    int np = 0;
    pf[np] = (struct pollfd){.fd = e->lfd, .events = POLLIN};
    idx[np++] = -1;
    for (uint32_t i = 0; i < e->cfg.max_conns; i++) {
      if (e->conns[i].fd < 0) continue;
      pf[np] = (struct pollfd){.fd = e->conns[i].fd, .events = (short)((e->conns[i].rlen < e->rcap ? POLLIN : 0) | (e->conns[i].wlen ? POLLOUT : 0))};
      idx[np++] = (int)i;
    }
    uint64_t now = autd3__now_ns();
    uint64_t wait = next > now ? next - now : 0;
    if (wait > 50000000) wait = 50000000; /* re-check stop/drop and handshake deadlines at least every 50 ms */
    struct timespec ts = {.tv_sec = (time_t)(wait / 1000000000u), .tv_nsec = (long)(wait % 1000000000u)};
    int r = ppoll(pf, (nfds_t)np, &ts, NULL);
    now = autd3__now_ns();
    if (now >= next) {
      task_cycle(e, now);
      next += e->task_ns;
      if (next + 10 * e->task_ns < now) next = now + e->task_ns; /* stalled: restart the grid */
    }
    if (r > 0) {
      for (int k = 0; k < np; k++) {
        if (!pf[k].revents) continue;
        if (idx[k] < 0) accept_all(e);
        else if (e->conns[idx[k]].fd == pf[k].fd && (pf[k].revents & (POLLIN | POLLHUP | POLLERR))) read_conn(e, &e->conns[idx[k]]);
      }
    }
    now = autd3__now_ns();
    for (uint32_t i = 0; i < e->cfg.max_conns; i++) {
      conn_t *c = &e->conns[i];
      if (c->fd < 0) continue;
      flush(c);
      if (c->dead) {
        conn_close(e, c, NULL);
      } else if (!c->framed && now - c->since_ns >= handshake_ns) {
        atomic_fetch_add(&e->st_timed_out, 1);
        conn_close(e, c, "no complete AMS/TCP frame within the handshake timeout");
      }
    }
  }
  return AUTD3_OK;
}

void tcemu_fuzz_feed(tcemu_t *e, const uint8_t *data, size_t len) {
  conn_t *c = &e->fuzz;
  if (!c->rbuf && conn_alloc(e, c, -1) != AUTD3_OK) return;
  c->dead = false;
  while (len > 0 && !c->dead) {
    size_t k = e->rcap - c->rlen < len ? e->rcap - c->rlen : len;
    memcpy(c->rbuf + c->rlen, data, k);
    c->rlen += k;
    data += k;
    len -= k;
    process_input(e, c);
    if (c->rlen == e->rcap) break;
  }
  task_cycle(e, autd3__now_ns());
  c->wlen = 0; /* replies discarded */
  if (c->dead) {
    c->rlen = 0;
    c->skip = 0;
  }
}
