/*
 * The TwinCAT link: AUTD3 devices driven by a TwinCAT 3 runtime's I/O task
 * ("Task 1", created by the reference's twincat-cli), reached over ADS/TCP.
 *
 * ADS layout (shinolab/autd3-sdk crates/autd3-rs-link-twincat/src/link.rs;
 * docs/twincat.md): AMS port 301, index group 0x03040030; the task's
 * output image at offset 0x81000000 (N×626 bytes, device-major), its input
 * image at 0x80000000: u16 CfgSlaveCount, N×2 rx bytes, N×2 EtherCAT state
 * words (AL state in the low byte).
 *
 * Pacing (our choice; the reference does not pace): each cycle() sends one
 * ADS Write of the outputs and then waits for the next DeviceNotification
 * of the whole input image, registered in *server-cycle* mode with the task
 * cycle as its period. The runtime sends one per task cycle, so cycle()
 * runs at the task's rate with the freshest inputs and never spins. If the
 * runtime refuses the notification, the fallback is Write + synchronous Read
 * and an absolute-deadline sleep to the next task cycle. The optional
 * wait_next_cycle hook lets the client stage its tx just before the next
 * task cycle (docs/twincat.md, "Pacing").
 *
 * A dropped TCP connection makes the cycle lost (rx_valid false) and the
 * link reconnects on the following cycles; only when it cannot reconnect
 * within timeout_ms does cycle() fail.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "core/error_context.h"
#include "link/link_internal.h"
#include "link/pacer.h"
#include "link/twincat/ads.h"
#include "net/net.h"
#include "platform/platform.h"

#define TC_INDEX_GROUP 0x03040030u
#define TC_OFFSET_TX 0x81000000u
#define TC_OFFSET_INPUT 0x80000000u
#define TC_SLAVE_COUNT_BYTES 2u
#define TC_STATE_BYTES 2u

/* EtherCAT AL state bits in the low byte of a state word (ETG.1000.6). */
#define AL_MASK 0x0F
#define AL_INIT 0x01
#define AL_BOOT 0x03
#define AL_SAFE_OP 0x04
#define AL_OP 0x08
#define AL_ERROR 0x10

typedef struct tc_link {
  struct autd3_link base;
  char host[64];
  uint16_t tcp_port;
  bool local;
  bool have_client_id;
  ams_netid_t client_id;
  bool have_server_id;
  ams_addr_t target;
  ads_client_t ads;
  uint32_t input_len; /* 2 + 4N */
  uint8_t *input;     /* latest input image */
  bool fresh;         /* a notification arrived in this cycle */
  bool notify;        /* rx by notification (else synchronous read) */
  uint32_t handle;
  uint64_t task_ns;
  autd3_link_pacer_t pace; /* without notifications: the shared pacer on the task-cycle grid */
  uint64_t lost_since_ns; /* 0 while connected */
  uint64_t last_fresh_ns; /* when the last cycle's notification was taken (≈ the runtime's task cycle) */
  uint64_t wake_margin_ns; /* wait_next_cycle wakes this long before the estimated task cycle */
  _Atomic uint64_t missed_ticks; /* Writes that came too late for the targeted task cycle */
  /* state words for check_state (written by cycle, read by any thread) */
  _Atomic uint8_t al[AUTD3_MAX_DEVICES];
  _Atomic bool absent[AUTD3_MAX_DEVICES]; /* the word's high byte flags it (not present, link errors) */
  uint8_t prev_al[AUTD3_MAX_DEVICES]; /* the state words of the previous input image (cycle's thread) */
  bool states_known;
  _Atomic bool connected;
  _Atomic uint64_t reconnects, notifications;
  bool had_problem;
  uint64_t recoveries;
  char notify_error[160];
} tc_link_t;

static void on_notify(void *ctx, uint32_t handle, const uint8_t *data, uint32_t size) {
  tc_link_t *l = ctx;
  if (!l->notify || handle != l->handle || size != l->input_len) return;
  memcpy(l->input, data, size);
  l->fresh = true;
}

static bool al_down(uint8_t w) {
  uint8_t st = w & AL_MASK;
  return st == 0 || st == AL_INIT || st == AL_BOOT;
}

/* Take the state words of the current input image into the atomic cache. A slave seen falling to INIT (or BOOT,
 * or no state) was power-cycled or re-initialised by the runtime: its firmware state is gone, so the link reports
 * it (autd3_link_report_device_reset) before this cycle's inputs, which may carry its post-reset ack, go out. */
static void publish_states(tc_link_t *l) {
  const uint8_t *st = l->input + TC_SLAVE_COUNT_BYTES + l->base.num_devices * AUTD3_RX_FRAME_BYTES;
  for (uint16_t i = 0; i < l->base.num_devices; i++) {
    uint8_t w = st[i * TC_STATE_BYTES];
    if (l->states_known && al_down(w) && !al_down(l->prev_al[i])) autd3_link_report_device_reset(&l->base, i);
    l->prev_al[i] = w;
    atomic_store_explicit(&l->al[i], w, memory_order_relaxed);
    atomic_store_explicit(&l->absent[i], st[i * TC_STATE_BYTES + 1] != 0, memory_order_relaxed);
  }
  l->states_known = true;
}

/* Whose inputs the image carries (docs/reliability.md "A fault costs only its device"): the runtime reads every
 * slave it can reach each task cycle and leaves a lost one's inputs as they were, so a successful read says nothing
 * per device; its state word does. A device is valid only in OP (a slave in SAFE-OP takes no outputs, ETG.1000.6)
 * with nothing in the word's high byte, where the EtherCAT master flags a slave it cannot reach (not present, link
 * errors; Beckhoff's TwinCAT EtherCAT master documents these bits of the InfoData State word). Returns whether every
 * device is. */
static bool devices_valid(const tc_link_t *l, bool *ok) {
  const uint8_t *st = l->input + TC_SLAVE_COUNT_BYTES + l->base.num_devices * AUTD3_RX_FRAME_BYTES;
  bool all = true;
  for (uint16_t i = 0; i < l->base.num_devices; i++) {
    uint16_t w = ads_get_u16(st + i * TC_STATE_BYTES);
    ok[i] = (w & AL_MASK) == AL_OP && (w & 0xFF00u) == 0;
    all = all && ok[i];
  }
  return all;
}

static autd3_err_t check_count(tc_link_t *l) {
  uint16_t count = ads_get_u16(l->input);
  if (count != l->base.num_devices)
    return autd3_set_error(AUTD3_E_DEVICE_COUNT_MISMATCH,
                           "TwinCAT: the runtime's task has %u AUTD3 slaves (CfgSlaveCount at IG 0x%08x IO 0x%08x), the geometry %u",
                           count, TC_INDEX_GROUP, TC_OFFSET_INPUT, l->base.num_devices);
  return AUTD3_OK;
}

static autd3_err_t read_input(tc_link_t *l) {
  uint32_t n = 0;
  autd3_err_t e = autd3__ads_read(&l->ads, &l->target, TC_INDEX_GROUP, TC_OFFSET_INPUT, l->input, l->input_len, &n);
  if (e != AUTD3_OK) return e;
  if (n != l->input_len)
    return autd3_set_error(AUTD3_E_PROTOCOL, "TwinCAT: read %u bytes of the input image, expected %u (2 + 4 x %u devices)", n,
                           l->input_len, l->base.num_devices);
  return AUTD3_OK;
}

/* Connect, find our AmsAddr, check the task, register the notification. */
static autd3_err_t session_open(tc_link_t *l, bool first) {
  autd3_err_t e = autd3__ads_client_connect(&l->ads, l->host, l->tcp_port);
  if (e != AUTD3_OK) return e;
  if (!l->have_server_id && !l->local) {
    /* server_ip is a name: the default NetId is the address it resolved to + ".1.1", as for an IPv4 literal. */
    if (!autd3__net_peer_ipv4(l->ads.fd, l->target.netid.b)) {
      autd3__ads_client_disconnect(&l->ads);
      return autd3_set_error(AUTD3_E_INVALID_OPTION,
                             "TwinCAT: server_ip \"%s\" is reached over IPv6: set server_ams_net_id (the default, the server's IPv4 "
                             "address + \".1.1\", does not exist)",
                             l->host);
    }
    l->target.netid.b[4] = 1;
    l->target.netid.b[5] = 1;
  }
  if (l->local && !l->have_client_id) {
    /* Local router: ask for a port; its answer carries the local NetId
     * (ads-rs Source::Request, what the reference's local variant does). */
    e = autd3__ads_client_port_connect(&l->ads);
    if (e != AUTD3_OK) return e;
    if (!l->have_server_id) l->target.netid = l->ads.source.netid;
  }
  if (l->have_client_id) l->ads.source.netid = l->client_id;
  /* The slave count alone first: with a wrong N the whole image's size
   * would only give 0x0705 instead of a clear mismatch message. */
  uint32_t got = 0;
  e = autd3__ads_read(&l->ads, &l->target, TC_INDEX_GROUP, TC_OFFSET_INPUT, l->input, TC_SLAVE_COUNT_BYTES, &got);
  if (e == AUTD3_OK && got != TC_SLAVE_COUNT_BYTES)
    e = autd3_set_error(AUTD3_E_PROTOCOL, "TwinCAT: the slave count read returned %u bytes, expected 2", got);
  if (e == AUTD3_OK) e = check_count(l);
  if (e == AUTD3_OK) e = read_input(l);
  if (e != AUTD3_OK) return e;
  publish_states(l);
  if (first || l->notify) {
    l->notify = false;
    bool want = first ? l->notify_error[0] == 0 : true;
    if (want) {
      uint32_t cycle_100ns = (uint32_t)(l->task_ns / 100);
      e = autd3__ads_add_notification(&l->ads, &l->target, TC_INDEX_GROUP, TC_OFFSET_INPUT, l->input_len, ADS_TRANS_SERVER_CYCLE, 0,
                               cycle_100ns, &l->handle);
      if (e == AUTD3_OK) {
        l->notify = true;
      } else if (e == AUTD3_E_ADS) {
        /* fallback: synchronous reads; keep the reason for diagnostics */
        snprintf(l->notify_error, sizeof l->notify_error, "%s", autd3_last_error());
      } else {
        return e;
      }
    }
  }
  atomic_store(&l->connected, true);
  l->lost_since_ns = 0;
  return AUTD3_OK;
}

static void mark_lost(tc_link_t *l) {
  autd3__ads_client_disconnect(&l->ads);
  atomic_store(&l->connected, false);
  l->last_fresh_ns = 0; /* no wake estimate until notifications flow again */
  if (l->lost_since_ns == 0) l->lost_since_ns = autd3__now_ns();
}

/* Without notifications nothing tells when the runtime's task runs: a plain
 * grid of task cycles, by the pacers' one lateness policy (link_driver.h). */
static void pace(tc_link_t *l) { (void)autd3__pacer_wait(&l->pace); }

static bool readable(ads_client_t *c) {
  uint16_t cmd;
  size_t len;
  if (autd3__ams_frame_peek(c->rbuf + c->rpos, c->rlen - c->rpos, c->rcap, &cmd, &len) != 0) return true;
  return c->fd >= 0 && autd3__net_readable(c->fd);
}

static autd3_err_t tc_cycle(struct autd3_link *base, const uint8_t *tx, uint8_t *rx, bool *rx_valid) {
  tc_link_t *l = (tc_link_t *)base;
  uint16_t n = base->num_devices;
  *rx_valid = false;
  if (!atomic_load(&l->connected)) {
    autd3_err_t e = session_open(l, false);
    if (e != AUTD3_OK) {
      if (e == AUTD3_E_DEVICE_COUNT_MISMATCH || autd3__now_ns() - l->lost_since_ns > (uint64_t)l->ads.timeout_ms * 1000000ull) {
        return autd3__error_context(e == AUTD3_E_DEVICE_COUNT_MISMATCH ? e : AUTD3_E_PEER_CLOSED,
                                    "TwinCAT: connection to %s lost and not re-established within %u ms", l->ads.peer,
                                    l->ads.timeout_ms);
      }
      autd3__ads_client_disconnect(&l->ads);
      pace(l);
      autd3_link_count_cycle(base, false, true);
      return AUTD3_OK;
    }
    atomic_fetch_add(&l->reconnects, 1);
  }

  uint8_t p[12];
  uint32_t invoke;
  uint64_t t_send = autd3__now_ns(); /* the exchange: the Write and its reply, then the inputs */
  autd3_err_t e = autd3__ads_client_send(&l->ads, &l->target, ADS_CMD_WRITE, p, autd3__ads_params_rw(p, TC_INDEX_GROUP, TC_OFFSET_TX, n * AUTD3_TX_FRAME_BYTES),
                                  tx, (size_t)n * AUTD3_TX_FRAME_BYTES, &invoke);
  uint64_t deadline = autd3__now_ns() + (uint64_t)l->ads.timeout_ms * 1000000ull;
  ads_reply_t reply;
  bool got = false;
  l->fresh = false;
  while (e == AUTD3_OK && (!got || (l->notify && !l->fresh))) {
    bool g = false;
    e = autd3__ads_client_pump(&l->ads, got ? 0 : invoke, deadline, l->notify, &g, &reply);
    if (e == AUTD3_OK && g) {
      got = true;
      e = autd3__ads_reply_check(&l->ads, &l->target, ADS_CMD_WRITE, &reply, TC_INDEX_GROUP, TC_OFFSET_TX);
      if (e != AUTD3_OK) return e; /* e.g. 0x0705: the task's image does not fit N devices */
    }
  }
  if (e == AUTD3_OK && l->notify) {
    /* Notifications that queued up while we were late: keep the newest. */
    while (e == AUTD3_OK && readable(&l->ads)) e = autd3__ads_client_pump(&l->ads, 0, deadline, true, &got, &reply);
  } else if (e == AUTD3_OK) {
    e = read_input(l);
  }
  if (e == AUTD3_E_ADS) return e;
  if (e != AUTD3_OK) { /* timeout, peer closed, malformed stream: reconnect next cycle */
    mark_lost(l);
    autd3_link_count_cycle(base, false, true);
    return AUTD3_OK;
  }
  autd3_link_report_exchange(base, autd3__now_ns() - t_send);
  if (!l->notify) pace(l);
  e = check_count(l);
  if (e != AUTD3_OK) return e;
  memcpy(rx, l->input + TC_SLAVE_COUNT_BYTES, (size_t)n * AUTD3_RX_FRAME_BYTES);
  publish_states(l);
  uint64_t now = autd3__now_ns();
  if (l->notify && l->last_fresh_ns != 0) {
    /* Adapt the wake margin: a cycle that took more than 1.5 task cycles
     * since the last notification missed the targeted task cycle (the OS
     * woke us late, or the network is slow): double the margin; otherwise
     * shrink it slowly. */
    if (now - l->last_fresh_ns > l->task_ns + l->task_ns / 2) {
      l->wake_margin_ns = l->wake_margin_ns * 2 > l->task_ns ? l->task_ns : l->wake_margin_ns * 2;
      atomic_fetch_add_explicit(&l->missed_ticks, 1, memory_order_relaxed);
    } else if (l->wake_margin_ns > l->task_ns / 4) {
      l->wake_margin_ns -= l->task_ns / 1024;
    }
  }
  l->last_fresh_ns = l->notify ? now : 0;
  atomic_store_explicit(&l->notifications, l->ads.notifications, memory_order_relaxed);
  bool ok[AUTD3_MAX_DEVICES];
  *rx_valid = devices_valid(l, ok);
  autd3_link_count_cycle(base, *rx_valid, false);
  if (!*rx_valid) autd3_link_report_inputs(base, ok); /* whose inputs this image carries */
  return AUTD3_OK;
}

/*
 * Optional pacing step (link_driver.h): sleep until `wake_margin_ns` (between
 * a quarter and a whole task cycle, adapted in tc_cycle) before the runtime's
 * next task cycle, estimated from when the last notification came, so that
 * the caller stages its tx late and the Write still arrives before the task
 * serves ADS. Missing that moment costs nothing but the gain: cycle() still
 * waits for the Write's reply and a fresh notification.
 */
static autd3_err_t tc_wait_next_cycle(struct autd3_link *base) {
  tc_link_t *l = (tc_link_t *)base;
  if (!l->notify || l->last_fresh_ns == 0) return AUTD3_OK;
  uint64_t wake = l->last_fresh_ns + l->task_ns - l->wake_margin_ns;
  if (wake > autd3__now_ns()) autd3__sleep_until_ns(wake, 0);
  return AUTD3_OK;
}

/* State words as the reference's checker maps them (state_check.rs). */
static autd3_err_t tc_check_state(struct autd3_link *base, autd3_link_status_t *out) {
  tc_link_t *l = (tc_link_t *)base;
  bool connected = atomic_load(&l->connected), all_op = true;
  for (uint16_t i = 0; i < base->num_devices; i++) {
    uint8_t w = atomic_load_explicit(&l->al[i], memory_order_relaxed);
    uint8_t st = w & AL_MASK;
    if (!connected || atomic_load_explicit(&l->absent[i], memory_order_relaxed)) out->state[i] = AUTD3_DEVICE_LOST;
    else if (st == AL_OP) out->state[i] = AUTD3_DEVICE_OP;
    else if (st == AL_SAFE_OP) out->state[i] = (w & AL_ERROR) ? AUTD3_DEVICE_SAFE_OP_ERROR : AUTD3_DEVICE_SAFE_OP;
    else out->state[i] = AUTD3_DEVICE_OTHER, out->al_state[i] = w;
    if (out->state[i] != AUTD3_DEVICE_OP) all_op = false;
  }
  /* TwinCAT recovers slaves itself; count the returns to all-OP we observe.
   * Callers serialise check_state (link.h), so plain fields suffice. */
  if (!all_op) l->had_problem = true;
  else if (l->had_problem) l->had_problem = false, l->recoveries++;
  out->recoveries = l->recoveries;
  out->measured = AUTD3_LINK_STATUS_STATES | AUTD3_LINK_STATUS_RECOVERIES;
  return AUTD3_OK;
}

static size_t tc_diagnostics(struct autd3_link *base, char *buf, size_t cap) {
  tc_link_t *l = (tc_link_t *)base;
  int k = snprintf(buf, cap,
                   "rx path : %s\ntask cycle : %llu us\nnotifications : %llu\nmissed task cycles : %llu\nreconnects : %llu\n"
                   "connected : %s\n%s%s%s",
                   l->notify ? "device notification (server cycle)" : "synchronous read", (unsigned long long)(l->task_ns / 1000),
                   (unsigned long long)atomic_load(&l->notifications), (unsigned long long)atomic_load(&l->missed_ticks),
                   (unsigned long long)atomic_load(&l->reconnects),
                   atomic_load(&l->connected) ? "yes" : "no", l->notify_error[0] ? "notification refused : " : "", l->notify_error,
                   l->notify_error[0] ? "\n" : "");
  return k < 0 ? 0 : ((size_t)k < cap ? (size_t)k : cap - 1);
}

static void tc_close(struct autd3_link *base) {
  tc_link_t *l = (tc_link_t *)base;
  if (l->ads.fd >= 0) {
    uint32_t t = l->ads.timeout_ms;
    l->ads.timeout_ms = t < 200 ? t : 200; /* best effort: do not hang in close */
    if (l->notify) autd3__ads_del_notification(&l->ads, &l->target, l->handle);
    if (l->local && !l->have_client_id) {
      /* give the router its port back (AMS/TCP 0x0001) */
      uint8_t f[AMS_TCP_HDR_LEN + 2], port[2];
      ads_put_u16(port, l->ads.source.port);
      size_t n = autd3__ams_router_encode(f, sizeof f, AMS_TCP_PORT_CLOSE, port, 2);
      (void)autd3__net_send(l->ads.fd, f, n); /* best effort, never waits */
    }
  }
  autd3__ads_client_free(&l->ads);
  free(l->input);
  free(l);
}

static const autd3_link_vtable_t tc_vt = {.cycle = tc_cycle, .check_state = tc_check_state, .close = tc_close,
                                         .diagnostics = tc_diagnostics, .wait_next_cycle = tc_wait_next_cycle};

autd3_err_t autd3__link_open_twincat(const autd3_link_option_t *option, const autd3_geometry_t *geometry, struct autd3_link **out) {
  const autd3_twincat_option_t *o = &option->u.twincat;
  size_t n = autd3_geometry_num_devices(geometry);
  if (o->server_ip != NULL && (strlen(o->server_ip) >= 64 || o->server_ip[0] == 0))
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "TwinCAT: server_ip must be a host name or an IPv4 / IPv6 address (1..63 characters)");
  tc_link_t *l = calloc(1, sizeof *l);
  if (!l) return autd3_set_error(AUTD3_E_NOMEM, "TwinCAT: out of memory");
  autd3_link_init(&l->base, &tc_vt, AUTD3_LINK_TWINCAT, (uint16_t)n);
  /* lost: no reply within the timeout; the exchange: ADS Write to reply (and the input read or notification) */
  autd3_link_set_measured(&l->base, AUTD3_LINK_MEASURES_LOST | AUTD3_LINK_MEASURES_EXCHANGE);
  l->local = o->server_ip == NULL;
  /* "[::1]" is accepted for an IPv6 address too (as in host:port elsewhere). */
  const char *host = l->local ? "127.0.0.1" : o->server_ip;
  size_t hl = strlen(host);
  if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') snprintf(l->host, sizeof l->host, "%.*s", (int)(hl - 2), host + 1);
  else snprintf(l->host, sizeof l->host, "%s", host);
  l->tcp_port = o->server_port ? o->server_port : ADS_TCP_PORT;
  l->target.port = o->ams_port ? o->ams_port : 301;
  l->task_ns = (uint64_t)(o->task_cycle_us ? o->task_cycle_us : 1000) * 1000ull;
  autd3__pacer_init(&l->pace, l->task_ns, 0);
  l->wake_margin_ns = l->task_ns / 2;
  l->input_len = (uint32_t)(TC_SLAVE_COUNT_BYTES + n * (AUTD3_RX_FRAME_BYTES + TC_STATE_BYTES));
  autd3_err_t e = AUTD3_OK;
  if (o->server_ams_net_id != NULL) {
    if (autd3__ams_netid_parse(o->server_ams_net_id, &l->target.netid) != AUTD3_OK)
      e = autd3_set_error(AUTD3_E_INVALID_OPTION, "TwinCAT: server_ams_net_id \"%s\" is not of the form a.b.c.d.e.f", o->server_ams_net_id);
    l->have_server_id = true;
  } else if (!l->local) {
    /* remote default: server_ip + ".1.1" (link_twincat.h); for a name, the address it resolves to (session_open) */
    char id[80];
    snprintf(id, sizeof id, "%s.1.1", l->host);
    if (autd3__ams_netid_parse(id, &l->target.netid) == AUTD3_OK) l->have_server_id = true;
  }
  if (e == AUTD3_OK && o->client_ams_net_id != NULL) {
    if (autd3__ams_netid_parse(o->client_ams_net_id, &l->client_id) != AUTD3_OK)
      e = autd3_set_error(AUTD3_E_INVALID_OPTION, "TwinCAT: client_ams_net_id \"%s\" is not of the form a.b.c.d.e.f", o->client_ams_net_id);
    l->have_client_id = true;
  }
  if (e == AUTD3_OK && o->no_notification) snprintf(l->notify_error, sizeof l->notify_error, "disabled by no_notification");
  if (e == AUTD3_OK) e = autd3__ads_client_init(&l->ads, n * AUTD3_TX_FRAME_BYTES + l->input_len + 64, o->timeout_ms);
  if (e == AUTD3_OK) {
    l->ads.on_notify = on_notify;
    l->ads.notify_ctx = l;
    l->input = calloc(1, l->input_len);
    if (!l->input) e = autd3_set_error(AUTD3_E_NOMEM, "TwinCAT: out of memory");
  }
  if (e == AUTD3_OK) e = session_open(l, true);
  if (e != AUTD3_OK) {
    autd3__ads_client_free(&l->ads);
    free(l->input);
    free(l);
    return e;
  }
  *out = &l->base;
  return AUTD3_OK;
}
