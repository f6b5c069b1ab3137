/*
 * A blocking ADS/TCP client over one non-blocking socket: every wait is a
 * poll() bounded by an absolute deadline, so no call can hang (ads-rs
 * documents hangs without a route; Beckhoff AdsLib defaults to 5 s).
 * Replies are matched by invoke id; DeviceNotification frames (command 8)
 * are handed to a callback wherever they interleave with replies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "core/error_context.h"
#include "link/twincat/ads.h"
#include "net/net.h"
#include "platform/platform.h"

/* ads-rs' Source::Auto uses this AMS port for the client. */
#define ADS_AUTO_SOURCE_PORT 58913

autd3_err_t autd3__ads_client_init(ads_client_t *c, size_t max_data, uint32_t timeout_ms) {
  memset(c, 0, sizeof *c);
  c->fd = -1;
  c->next_invoke = 1;
  c->timeout_ms = timeout_ms ? timeout_ms : 1000;
  /* Replies we ask for are at most max_data long; notifications and other
   * peers' frames get the same room plus slack. */
  c->rcap = 2 * (AMS_FRAME_HDR_LEN + max_data + 64) + 4096;
  c->wcap = AMS_FRAME_HDR_LEN + max_data + 64;
  c->rbuf = malloc(c->rcap);
  c->wbuf = malloc(c->wcap);
  if (!c->rbuf || !c->wbuf) {
    autd3__ads_client_free(c);
    return autd3_set_error(AUTD3_E_NOMEM, "ADS client: cannot allocate %zu bytes of buffers", c->rcap + c->wcap);
  }
  return AUTD3_OK;
}

void autd3__ads_client_free(ads_client_t *c) {
  autd3__ads_client_disconnect(c);
  free(c->rbuf);
  free(c->wbuf);
  c->rbuf = c->wbuf = NULL;
}

void autd3__ads_client_disconnect(ads_client_t *c) {
  autd3__net_close(c->fd);
  c->fd = -1;
  c->rlen = c->rpos = 0;
}

static uint64_t deadline_after(const ads_client_t *c) { return autd3__now_ns() + (uint64_t)c->timeout_ms * 1000000ull; }

autd3_err_t autd3__ads_client_connect(ads_client_t *c, const char *host, uint16_t port) {
  autd3__ads_client_disconnect(c);
  snprintf(c->peer, sizeof c->peer, strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
  if (c->addrs.n == 0 || c->addrs.port != port || strcmp(c->addrs.host, host) != 0) {
    autd3_err_t e = autd3__net_resolve(host, port, "TwinCAT", &c->addrs);
    if (e != AUTD3_OK) {
      c->addrs.n = 0;
      return e;
    }
  }
  int fd = -1;
  autd3_err_t e = autd3__net_connect_resolved(&c->addrs, c->timeout_ms, "TwinCAT", NULL, &fd);
  if (e != AUTD3_OK) return e;
  c->fd = fd;
  c->heard = false;
  /* Default source as ads-rs Source::Auto: this socket's local IPv4 + ".1.1" (127.0.0.1 over IPv6: set
   * client_ams_net_id there). */
  if (!autd3__net_local_ipv4(fd, c->source.netid.b)) {
    c->source.netid.b[0] = 127, c->source.netid.b[1] = 0, c->source.netid.b[2] = 0, c->source.netid.b[3] = 1;
  }
  c->source.netid.b[4] = 1;
  c->source.netid.b[5] = 1;
  c->source.port = ADS_AUTO_SOURCE_PORT;
  return AUTD3_OK;
}

/* The connection ended (`how`: "closed the connection", "reset the connection", ...). Before the peer ever
 * answered, the likely causes are named: a TwinCAT router accepts a TCP connection and closes it at once when
 * it has no place for another ADS client, and so does a service that is not a router (or rejects us).
 * `with_reason`: the thread's message says why (a socket error) and is kept after the text. */
static autd3_err_t closed_error(ads_client_t *c, const char *how, bool with_reason) {
  autd3_err_t (*say)(autd3_err_t, const char *, ...) = with_reason ? autd3__error_context : autd3_set_error;
  if (c->heard) return say(AUTD3_E_PEER_CLOSED, "TwinCAT: %s %s", c->peer, how);
  return say(AUTD3_E_PEER_CLOSED,
             "TwinCAT: %s accepted the connection and %s before answering anything: the TwinCAT runtime there may be at "
             "its connection limit (other ADS clients connected: close them, e.g. TwinCAT XAE or another program), or "
             "what listens on that port is not a TwinCAT router (AMS/TCP, port 48898)",
             c->peer, how);
}

static autd3_err_t send_all(ads_client_t *c, const uint8_t *p, size_t n, uint64_t deadline) {
  if (c->fd < 0) return autd3_set_error(AUTD3_E_PEER_CLOSED, "TwinCAT: not connected to %s", c->peer);
  autd3_err_t e = autd3__net_write_all(c->fd, p, n, deadline, NULL);
  if (e == AUTD3_E_TIMEOUT) return autd3_set_error(AUTD3_E_TIMEOUT, "TwinCAT: send to %s timed out after %u ms", c->peer, c->timeout_ms);
  if (e != AUTD3_OK) {
    autd3__ads_client_disconnect(c); /* leaves the thread's message alone */
    return closed_error(c, "dropped it while we were sending", true);
  }
  return AUTD3_OK;
}

/* Read whatever is available (waiting until the deadline for the first byte). */
static autd3_err_t fill(ads_client_t *c, uint64_t deadline) {
  if (c->fd < 0) return autd3_set_error(AUTD3_E_PEER_CLOSED, "TwinCAT: not connected to %s", c->peer);
  if (c->rpos > 0) { /* compact: consumed frames go */
    memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
    c->rlen -= c->rpos;
    c->rpos = 0;
  }
  for (;;) {
    long r = autd3__net_recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
    if (r > 0) {
      c->rlen += (size_t)r;
      c->heard = true;
      return AUTD3_OK;
    }
    if (r < 0) {
      autd3__ads_client_disconnect(c);
      return closed_error(c, r == AUTD3_NET_EOF ? "closed the connection" : "reset the connection", false);
    }
    if (autd3__net_wait(c->fd, false, deadline) != AUTD3_OK)
      return autd3_set_error(AUTD3_E_TIMEOUT, "TwinCAT: no answer from %s within %u ms", c->peer, c->timeout_ms);
  }
}

/* The next whole frame (blocking until the deadline). */
static autd3_err_t next_frame(ads_client_t *c, uint64_t deadline, uint16_t *tcp_cmd, const uint8_t **frame, size_t *len) {
  for (;;) {
    int k = autd3__ams_frame_peek(c->rbuf + c->rpos, c->rlen - c->rpos, c->rcap, tcp_cmd, len);
    if (k < 0) {
      autd3__ads_client_disconnect(c);
      return autd3_set_error(AUTD3_E_PROTOCOL, "TwinCAT: %s sent a frame longer than %zu bytes", c->peer, c->rcap);
    }
    if (k == 1) {
      *frame = c->rbuf + c->rpos;
      c->rpos += *len;
      return AUTD3_OK;
    }
    autd3_err_t e = fill(c, deadline);
    if (e != AUTD3_OK) return e;
  }
}

static void on_sample(void *ctx, uint64_t filetime, uint32_t handle, const uint8_t *data, uint32_t size) {
  (void)filetime;
  ads_client_t *c = ctx;
  if (c->on_notify) c->on_notify(c->notify_ctx, handle, data, size);
}

autd3_err_t autd3__ads_client_port_connect(ads_client_t *c) {
  uint8_t req[AMS_TCP_HDR_LEN + 2];
  uint16_t any = 0;
  size_t n = autd3__ams_router_encode(req, sizeof req, AMS_TCP_PORT_CONNECT, &any, 2);
  uint64_t deadline = deadline_after(c);
  autd3_err_t e = send_all(c, req, n, deadline);
  if (e != AUTD3_OK) return e;
  for (;;) {
    uint16_t cmd;
    const uint8_t *f;
    size_t len;
    e = next_frame(c, deadline, &cmd, &f, &len);
    if (e != AUTD3_OK) return e;
    if (cmd != AMS_TCP_PORT_CONNECT) continue; /* router notes etc. */
    if (len < AMS_TCP_HDR_LEN + 8)
      return autd3_set_error(AUTD3_E_PROTOCOL, "TwinCAT: router %s answered the port request with %zu bytes, expected 14", c->peer, len);
    memcpy(c->source.netid.b, f + AMS_TCP_HDR_LEN, 6);
    c->source.port = ads_get_u16(f + AMS_TCP_HDR_LEN + 6);
    return AUTD3_OK;
  }
}

autd3_err_t autd3__ads_client_send(ads_client_t *c, const ams_addr_t *target, uint16_t cmd, const void *params, size_t np,
                            const void *data, size_t nd, uint32_t *invoke) {
  ams_header_t h = {.target = *target, .source = c->source, .cmd = cmd, .flags = AMS_SF_ADS, .invoke = c->next_invoke++};
  if (c->next_invoke == 0) c->next_invoke = 1;
  size_t n = autd3__ams_frame_encode(c->wbuf, c->wcap, &h, params, np, data, nd);
  if (n == 0) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "ADS %s: %zu data bytes exceed the client's buffer", autd3__ads_cmd_name(cmd), np + nd);
  if (invoke) *invoke = h.invoke;
  return send_all(c, c->wbuf, n, deadline_after(c));
}

autd3_err_t autd3__ads_client_pump(ads_client_t *c, uint32_t invoke, uint64_t deadline_ns, bool stop_on_notify, bool *got,
                            ads_reply_t *reply) {
  *got = false;
  for (;;) {
    uint16_t tcmd;
    const uint8_t *f;
    size_t len;
    autd3_err_t e = next_frame(c, deadline_ns, &tcmd, &f, &len);
    if (e != AUTD3_OK) return e;
    if (tcmd != AMS_TCP_ADS) continue; /* router messages: not for us */
    ams_header_t h;
    const uint8_t *d;
    if (autd3__ams_frame_decode(f, len, &h, &d) != AUTD3_OK) {
      autd3__ads_client_disconnect(c);
      return autd3_set_error(AUTD3_E_PROTOCOL, "TwinCAT: %s sent an AMS frame whose lengths disagree", c->peer);
    }
    /* Frames for another NetId/port are not ours. */
    if (!autd3__ams_netid_eq(&h.target.netid, &c->source.netid) || h.target.port != c->source.port) continue;
    if (h.cmd == ADS_CMD_NOTIFICATION && !(h.flags & AMS_SF_RESPONSE)) {
      if (autd3__ads_notification_parse(d, h.length, on_sample, c) != AUTD3_OK) {
        autd3__ads_client_disconnect(c);
        return autd3_set_error(AUTD3_E_PROTOCOL, "TwinCAT: malformed DeviceNotification from %s", c->peer);
      }
      c->notifications++;
      if (stop_on_notify) return AUTD3_OK;
      continue;
    }
    if ((h.flags & AMS_SF_RESPONSE) && h.invoke == invoke && invoke != 0) {
      reply->h = h;
      reply->data = d;
      reply->len = h.length;
      *got = true;
      return AUTD3_OK;
    }
    /* a late reply to a request that already timed out: drop it */
  }
}

autd3_err_t autd3__ads_reply_check(const ads_client_t *c, const ams_addr_t *target, uint16_t cmd, const ads_reply_t *r, uint32_t group,
                            uint32_t offset) {
  char id[24];
  autd3__ams_netid_format(&target->netid, id, sizeof id);
  if (r->h.error != 0)
    return autd3_set_error(AUTD3_E_ADS, "TwinCAT: AMS error 0x%04x (%s) from %s:%u on %s", r->h.error, autd3__ads_strerror(r->h.error), id,
                           target->port, autd3__ads_cmd_name(cmd));
  if (r->h.cmd != cmd || !autd3__ams_netid_eq(&r->h.source.netid, &target->netid) || r->h.source.port != target->port)
    return autd3_set_error(AUTD3_E_PROTOCOL, "TwinCAT: reply from %s to %s does not match the request (command %u)", c->peer,
                           autd3__ads_cmd_name(cmd), r->h.cmd);
  uint32_t result;
  if (autd3__ads_reply_parse(cmd, r->data, r->len, &result, NULL, NULL, NULL) != AUTD3_OK)
    return autd3_set_error(AUTD3_E_PROTOCOL, "TwinCAT: malformed %s reply from %s (%zu data bytes)", autd3__ads_cmd_name(cmd), c->peer, r->len);
  if (result != 0) {
    if (cmd == ADS_CMD_READ || cmd == ADS_CMD_WRITE || cmd == ADS_CMD_READ_WRITE || cmd == ADS_CMD_ADD_NOTIFICATION)
      return autd3_set_error(AUTD3_E_ADS, "TwinCAT: ADS error 0x%04x (%s) from %s:%u on %s IG 0x%08x IO 0x%08x", result,
                             autd3__ads_strerror(result), id, target->port, autd3__ads_cmd_name(cmd), group, offset);
    return autd3_set_error(AUTD3_E_ADS, "TwinCAT: ADS error 0x%04x (%s) from %s:%u on %s", result, autd3__ads_strerror(result), id,
                           target->port, autd3__ads_cmd_name(cmd));
  }
  return AUTD3_OK;
}

autd3_err_t autd3__ads_client_request(ads_client_t *c, const ams_addr_t *target, uint16_t cmd, const void *params, size_t np,
                               const void *data, size_t nd, ads_reply_t *reply) {
  uint32_t invoke;
  autd3_err_t e = autd3__ads_client_send(c, target, cmd, params, np, data, nd, &invoke);
  if (e != AUTD3_OK) return e;
  uint64_t deadline = deadline_after(c);
  bool got = false;
  while (!got) {
    e = autd3__ads_client_pump(c, invoke, deadline, false, &got, reply);
    if (e == AUTD3_E_TIMEOUT)
      return autd3_set_error(AUTD3_E_TIMEOUT, "TwinCAT: no reply to %s from %s within %u ms (ADS 0x0745: check the route)",
                             autd3__ads_cmd_name(cmd), c->peer, c->timeout_ms);
    if (e != AUTD3_OK) return e;
  }
  uint32_t group = np >= 8 ? ads_get_u32(params) : 0, offset = np >= 8 ? ads_get_u32((const uint8_t *)params + 4) : 0;
  return autd3__ads_reply_check(c, target, cmd, reply, group, offset);
}

/* The data of a checked Read or ReadWrite reply into buf (at most cap bytes; the rest is dropped). */
static void reply_data(uint16_t cmd, const ads_reply_t *r, void *buf, uint32_t cap, uint32_t *nread) {
  uint32_t res, n;
  const uint8_t *d;
  autd3__ads_reply_parse(cmd, r->data, r->len, &res, &d, &n, NULL);
  if (n > cap) n = cap;
  memcpy(buf, d, n);
  if (nread) *nread = n;
}

autd3_err_t autd3__ads_read(ads_client_t *c, const ams_addr_t *t, uint32_t group, uint32_t offset, void *buf, uint32_t len, uint32_t *nread) {
  uint8_t p[12];
  ads_reply_t r;
  autd3_err_t e = autd3__ads_client_request(c, t, ADS_CMD_READ, p, autd3__ads_params_rw(p, group, offset, len), NULL, 0, &r);
  if (e == AUTD3_OK) reply_data(ADS_CMD_READ, &r, buf, len, nread);
  return e;
}

autd3_err_t autd3__ads_write(ads_client_t *c, const ams_addr_t *t, uint32_t group, uint32_t offset, const void *buf, uint32_t len) {
  uint8_t p[12];
  ads_reply_t r;
  return autd3__ads_client_request(c, t, ADS_CMD_WRITE, p, autd3__ads_params_rw(p, group, offset, len), buf, len, &r);
}

autd3_err_t autd3__ads_read_write(ads_client_t *c, const ams_addr_t *t, uint32_t group, uint32_t offset, void *rbuf, uint32_t rlen,
                           const void *wbuf, uint32_t wlen, uint32_t *nread) {
  uint8_t p[16];
  ads_reply_t r;
  autd3_err_t e = autd3__ads_client_request(c, t, ADS_CMD_READ_WRITE, p, autd3__ads_params_readwrite(p, group, offset, rlen, wlen), wbuf, wlen, &r);
  if (e == AUTD3_OK) reply_data(ADS_CMD_READ_WRITE, &r, rbuf, rlen, nread);
  return e;
}

autd3_err_t autd3__ads_read_state(ads_client_t *c, const ams_addr_t *t, uint16_t *ads_state, uint16_t *dev_state) {
  ads_reply_t r;
  autd3_err_t e = autd3__ads_client_request(c, t, ADS_CMD_READ_STATE, NULL, 0, NULL, 0, &r);
  if (e != AUTD3_OK) return e;
  uint32_t res, aux = 0;
  autd3__ads_reply_parse(ADS_CMD_READ_STATE, r.data, r.len, &res, NULL, NULL, &aux);
  *ads_state = (uint16_t)(aux >> 16);
  *dev_state = (uint16_t)aux;
  return AUTD3_OK;
}

autd3_err_t autd3__ads_read_device_info(ads_client_t *c, const ams_addr_t *t, ads_device_info_t *out) {
  ads_reply_t r;
  autd3_err_t e = autd3__ads_client_request(c, t, ADS_CMD_READ_DEVICE_INFO, NULL, 0, NULL, 0, &r);
  if (e != AUTD3_OK) return e;
  uint32_t res;
  return autd3__ads_device_info_parse(r.data, r.len, &res, out);
}

autd3_err_t autd3__ads_add_notification(ads_client_t *c, const ams_addr_t *t, uint32_t group, uint32_t offset, uint32_t len, uint32_t mode,
                                 uint32_t max_delay_100ns, uint32_t cycle_100ns, uint32_t *handle) {
  uint8_t p[40];
  ads_reply_t r;
  size_t np = autd3__ads_params_add_notification(p, group, offset, len, mode, max_delay_100ns, cycle_100ns);
  autd3_err_t e = autd3__ads_client_request(c, t, ADS_CMD_ADD_NOTIFICATION, p, np, NULL, 0, &r);
  if (e != AUTD3_OK) return e;
  uint32_t res;
  autd3__ads_reply_parse(ADS_CMD_ADD_NOTIFICATION, r.data, r.len, &res, NULL, NULL, handle);
  return AUTD3_OK;
}

autd3_err_t autd3__ads_del_notification(ads_client_t *c, const ams_addr_t *t, uint32_t handle) {
  uint8_t p[4];
  ads_put_u32(p, handle);
  ads_reply_t r;
  return autd3__ads_client_request(c, t, ADS_CMD_DEL_NOTIFICATION, p, 4, NULL, 0, &r);
}
