/*
 * The remote server core (include/autd3/remote_server.h): one event loop
 * (the thread in autd3_remote_server_run) owns the sockets and the session
 * state; a bus thread owns the wrapped link and cycles it; a state-checker
 * thread calls the link's check_state every 100 ms, as the reference server
 * does, which is what recovers a wrapped EtherCAT link's rebooted or re-plugged
 * devices (nothing else on the server would) and what v7 replies report.
 *
 * Hand-off between the two is lock-free, with up to two requests in flight
 * (the reference client is strictly request/response - link.rs writes a
 * frame, then reads its reply - but a pipelining client may send the next
 * request before the previous reply; replies always go out in order):
 *   - two tx slots; request v is parsed straight into slot v&1 and published
 *     by storing `published` = v. The bus thread reads only slot taken&1. The
 *     session starts parsing v only when taken == published (= v-1), so the
 *     two never touch the same slot.
 *   - after the first cycle that carried v the bus thread copies that cycle's
 *     rx into reply slot v&1, stores `done` = v and writes one byte to a pipe
 *     that wakes the event loop. v is parsed only once the reply of v-2 has
 *     been queued, so a reply slot is never overwritten before it is sent.
 * This is the reference's exchange() (server.rs: tx_version/applied_version
 * under a mutex + condvar) without a lock the bus thread could block on.
 *
 * Pickup: a self-pacing link's cycle() takes its tx when called and then
 * sleeps to the cycle's deadline, so a request that arrives just after a
 * reply would miss the next cycle and every request would cost two. With no
 * request pending, the bus thread therefore waits `pickup_percent` of the
 * measured cycle before calling cycle() (with the request if one came, else
 * the last tx again), so a client that answers within that window gets one
 * exchange per bus cycle. 0 = call at once (the reference's behaviour).
 *
 * Holding up against hostile clients (docs/remote.md, "Limits"): a new
 * connection first sits in a table of handshakes (bounded by
 * max_connections together with the session, refused at once beyond it), each
 * with its own handshake deadline, so a slow hello delays nobody else. The
 * first one to complete hello + geometry becomes the session. A session that
 * has sent nothing for idle_timeout_ms yields to the next client that
 * completes a handshake; a busy one refuses it (BUSY) as before. Log lines go
 * through a token bucket (net/log_limit.h).
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "autd3/remote_server.h"
#include "core/struct_size.h"
#include "link/link_internal.h"
#include "link/remote/armt.h"
#include "net/log_limit.h"
#include "net/mdns.h"
#include "net/net.h"
#include "platform/platform.h"

#define IN_CAP (64 * 1024)
#define OUT_CAP 1024
#define MAX_DRAIN 4
#define DRAIN_NS 1000000000ull
#define HS_BUF 4096      /* per handshake: read chunk; what follows the geometry moves to the session */
#define STATE_CHECK_NS 100000000ull /* as the reference server samples its link's status (autd3-rs-link-remote 0.9.0 bus.rs) */
#define MAX_ACCEPTS 64   /* per loop turn, so a connect storm cannot starve the session */

/* A connection that has not completed hello + geometry yet. */
typedef struct handshake {
  int fd; /* -1 = free */
  char peer[AUTD3_NET_PEER_MAX];
  armt_parser_t parser;
  uint64_t deadline;
  bool said; /* it sent something: leaving now is a dropped handshake, not a port probe */
  size_t off, len;
  uint8_t buf[HS_BUF];
} handshake_t;

struct autd3_remote_server {
  autd3_remote_server_option_t o;
  int lfd;
  uint16_t port;
  autd3_net_wake_t stop, wake; /* stop(): from any thread or a signal handler; wake: from the bus thread */

  /* wrapped link + bus thread */
  autd3_link_t *link;
  uint16_t n;
  autd3__thread_t bus;
  bool bus_running;
  atomic_bool bus_stop;
  _Atomic uint64_t published, taken, done;
  atomic_int bus_err;
  char bus_msg[320];
  uint8_t *slot[2], *bus_rx, *reply_rx[2];
  bool reply_valid[2];
  atomic_bool take_wake; /* the session waits for the bus to take the published request */
  /* The state checker: the wrapped link's check_state every STATE_CHECK_NS, on its own thread (check_state may run
   * beside cycle, and may take a while: echocat and SOEM recover a device inside it). It is what brings a wrapped
   * EtherCAT link's rebooted or re-plugged devices back, and what v7 replies report per device. */
  autd3__thread_t checker;
  bool checker_running;
  _Atomic uint8_t dev_state[AUTD3_MAX_DEVICES]; /* the v7 state byte of each device, from the last check */
  _Atomic uint64_t link_recoveries;
  atomic_bool recovering; /* some device the link can observe is not in OP */
  /* Bus cycles that repeated the last tx because no new request had arrived, this session: before its first
   * request (lead), between requests (mid), and the current run since the last one (trailing at session end). */
  atomic_bool idle_reset;
  _Atomic uint64_t idle_lead, idle_mid, idle_run;

  /* session (event-loop thread only) */
  int cfd;
  char peer[AUTD3_NET_PEER_MAX];
  armt_parser_t parser;
  bool in_session, closing;
  uint64_t replied, deadline, session_requests; /* replied: last version whose reply is queued */
  uint8_t *in;
  size_t in_off, in_len;
  uint8_t out[OUT_CAP];
  size_t out_off, out_len;
  uint64_t last_rx; /* when the session last received bytes (idle measure) */
  struct {
    int fd;
    uint64_t deadline;
  } drain[MAX_DRAIN];
  handshake_t *hs; /* max_connections entries */
  autd3_net_poll_t *pfd;
  int *pfd_hs;      /* pfd index -> handshake index */
  autd3_log_limit_t log_limit;

  _Atomic uint64_t st_clients, st_refused, st_requests, st_dropped;

  /* DNS-SD advertisement (option advertise): the socket, and the answer built once at create */
  int mdns_fd;
  char mdns_instance[64], mdns_host[80], mdns_txt_sdk[48];
  uint8_t mdns_addr[8][4];
  size_t mdns_naddr;
};

static void logf_(autd3_remote_server_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(autd3_remote_server_t *s, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  uint64_t held = 0;
  if (!autd3__log_limit_take(&s->log_limit, autd3__now_ns(), &held)) return;
  if (held) {
    size_t k = strlen(line);
    snprintf(line + k, sizeof line - k, " [%llu earlier line(s) not logged: rate limit]", (unsigned long long)held);
  }
  if (s->o.log) s->o.log(s->o.log_ctx, line);
  else fprintf(stderr, "autd3-remote-server: %s\n", line);
}

/* Each client is answered in its own protocol version (the one of its hello). */
static bool is_v7(const armt_parser_t *p) { return p->peer_version == ARMT_VERSION_7; }

/* Our v7 hello: "ARMT" 07 len "libautd3 x.y.z" (the reference sends its crate version; peers only display it). */
static size_t our_hello7(uint8_t *b, size_t cap) {
  char sdk[64];
  snprintf(sdk, sizeof sdk, "libautd3 %s", autd3_version_string());
  return armt__encode_hello7(sdk, b, cap);
}

/* A refusal in the client's version: v3 = u16 0 + our reason trailer; v7 = the session reply's reject codes (a busy
 * server and a geometry out of range have no code of their own: bus unavailable / internal, with the text). */
static size_t encode_refusal_for(const armt_parser_t *p, uint8_t *b, size_t cap, uint8_t reason, const char *text) {
  if (!is_v7(p)) return armt__encode_refusal(b, cap, reason, text);
  uint8_t code = ARMT7_SESSION_INTERNAL;
  if (reason == ARMT_REFUSE_BUS_CLOSED) code = ARMT7_SESSION_BUS_CLOSED;
  else if (reason == ARMT_REFUSE_DEVICE_COUNT) code = ARMT7_SESSION_DEVICE_COUNT;
  else if (reason == ARMT_REFUSE_BUS_UNAVAILABLE || reason == ARMT_REFUSE_BUSY) code = ARMT7_SESSION_BUS_UNAVAILABLE;
  return armt__encode_session7(b, cap, code, 0, text);
}

static autd3_remote_server_option_t option_defaults(void) {
  autd3_remote_server_option_t o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.listen = "127.0.0.1:8080";
  o.link = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  o.handshake_timeout_ms = 10000;
  o.stall_timeout_ms = 5000;
  o.idle_timeout_ms = 10000;
  o.max_connections = 8;
  o.log_lines_per_s = 10;
  o.min_period_us = 250;
  o.pickup_percent = 50;
  return o;
}

/* Every sizeof(autd3_remote_server_option_t) a header had (src/core/struct_size.h): append the old one when a
 * field is added. */
static const size_t option_sizes[] = {sizeof(autd3_remote_server_option_t)};

void autd3_remote_server_option_init(autd3_remote_server_option_t *o, size_t size) {
  if (o == NULL || size < sizeof o->size) return;
  autd3_remote_server_option_t d = option_defaults();
  d.size = (uint32_t)size;
  autd3__out_copy(o, size, &d, sizeof d);
}

autd3_remote_server_option_t(autd3_remote_server_option_default)(void) { return option_defaults(); }

/* ---------------- bus thread ---------------- */

static void *bus_main(void *arg) {
  autd3_remote_server_t *s = arg;
  const size_t rx_bytes = (size_t)s->n * AUTD3_RX_FRAME_BYTES;
  const uint64_t min_period = (uint64_t)s->o.min_period_us * 1000u;
  uint64_t taken = atomic_load(&s->taken), last_start = 0, last_ret = autd3__now_ns();
  uint64_t period = 0, win_min = UINT64_MAX;
  unsigned win_n = 0;
  /* A link with wait_next_cycle (emulator, EtherCrab) says itself when the last moment to stage is. */
  const bool link_waits = s->link->vt->wait_next_cycle != NULL;
  bool seen = false;
  uint64_t run = 0;
  while (!atomic_load_explicit(&s->bus_stop, memory_order_relaxed)) {
    uint64_t pub = atomic_load_explicit(&s->published, memory_order_acquire);
    uint64_t at = last_start + min_period;
    if (pub == taken && s->o.pickup_percent && period && !link_waits) {
      uint64_t hold = last_ret + period * s->o.pickup_percent / 100u;
      if (hold > at) at = hold;
    }
    autd3__sleep_until_ns(at, 0);
    if (link_waits) {
      autd3_err_t err = autd3_link_wait_next_cycle(s->link);
      if (err != AUTD3_OK) {
        snprintf(s->bus_msg, sizeof s->bus_msg, "%s: %s", autd3_err_name(err), autd3_last_error());
        atomic_store_explicit(&s->bus_err, (int)err, memory_order_release);
        autd3__net_wake_poke(&s->wake);
        break;
      }
    }
    if (atomic_exchange_explicit(&s->idle_reset, false, memory_order_relaxed)) { /* a new session */
      seen = false;
      run = 0;
    }
    pub = atomic_load_explicit(&s->published, memory_order_acquire);
    if (pub != taken) {
      taken = pub;
      atomic_store(&s->taken, taken);
      if (atomic_exchange(&s->take_wake, false)) autd3__net_wake_poke(&s->wake);
      atomic_fetch_add_explicit(seen ? &s->idle_mid : &s->idle_lead, run, memory_order_relaxed);
      seen = true;
      run = 0;
    } else {
      run++;
    }
    atomic_store_explicit(&s->idle_run, run, memory_order_relaxed);
    bool valid = false;
    last_start = autd3__now_ns();
    autd3_err_t err = autd3_link_cycle(s->link, s->slot[taken & 1], s->bus_rx, &valid);
    uint64_t ret = autd3__now_ns();
    if (err != AUTD3_OK) {
      snprintf(s->bus_msg, sizeof s->bus_msg, "%s: %s", autd3_err_name(err), autd3_last_error());
      atomic_store_explicit(&s->bus_err, (int)err, memory_order_release);
      autd3__net_wake_poke(&s->wake);
      break;
    }
    /* Cycle estimate: the smallest return-to-return interval of the last 16 cycles (stalls only lengthen intervals). */
    uint64_t iv = ret - last_ret;
    last_ret = ret;
    if (iv < win_min) win_min = iv;
    if (++win_n == 16) {
      period = win_min > 100000000u ? 100000000u : win_min;
      win_min = UINT64_MAX;
      win_n = 0;
    }
    if (taken != atomic_load_explicit(&s->done, memory_order_relaxed)) {
      memcpy(s->reply_rx[taken & 1], s->bus_rx, rx_bytes);
      s->reply_valid[taken & 1] = valid;
      atomic_store_explicit(&s->done, taken, memory_order_release);
      autd3__net_wake_poke(&s->wake);
    }
  }
  return NULL;
}

/* ---------------- state checker ---------------- */

static void *checker_main(void *arg) {
  autd3_remote_server_t *s = arg;
  uint64_t next = autd3__now_ns() + STATE_CHECK_NS;
  while (!atomic_load_explicit(&s->bus_stop, memory_order_relaxed)) {
    uint64_t now = autd3__now_ns();
    if (now < next) { /* in slices, so that a stop is seen within 10 ms */
      autd3__sleep_until_ns(next - now > 10000000u ? now + 10000000u : next, 0);
      continue;
    }
    next = now + STATE_CHECK_NS;
    autd3_link_status_t st;
    memset(&st, 0, sizeof st);
    if (autd3_link_check_state(s->link, &st) != AUTD3_OK) continue; /* the bus thread reports a failed link */
    bool bad = false;
    for (uint16_t d = 0; d < s->n; d++) {
      /* A link that cannot observe a device (UNKNOWN) is reported OP, as the reference does for links without a
       * state checker: the v7 byte has no "unknown", and the client's own accounting still sees every frame. */
      uint8_t v = st.state[d] == AUTD3_DEVICE_UNKNOWN ? ARMT7_DEV_OP : armt__encode_device_state7(st.state[d], st.al_state[d]);
      if (v != ARMT7_DEV_OP) bad = true;
      atomic_store_explicit(&s->dev_state[d], v, memory_order_relaxed);
    }
    atomic_store_explicit(&s->link_recoveries, st.recoveries, memory_order_relaxed);
    atomic_store_explicit(&s->recovering, bad, memory_order_relaxed);
  }
  return NULL;
}

static void bus_stop_join(autd3_remote_server_t *s) {
  if (!s->bus_running && !s->checker_running) return;
  atomic_store(&s->bus_stop, true);
  if (s->bus_running) autd3__thread_join(&s->bus);
  if (s->checker_running) autd3__thread_join(&s->checker);
  s->bus_running = s->checker_running = false;
}

static void link_close(autd3_remote_server_t *s) {
  bus_stop_join(s);
  if (s->link) {
    autd3_link_stats_t st;
    autd3_link_stats(s->link, &st);
    char diag[1024];
    if (autd3_link_diagnostics(s->link, diag, sizeof diag) > 0) { /* e.g. late / skipped cycles of the wrapped link */
      /* one log line per diagnostics line (strtok is not reentrant: split by hand) */
      for (char *line = diag; *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        if (*line) logf_(s, "  %s", line);
        if (!nl) break;
        line = nl + 1;
      }
    }
    autd3_link_close(s->link);
    s->link = NULL;
    logf_(s, "closed the %s link after %llu cycle(s), %llu stale", autd3_link_kind_name(s->o.link.kind),
          (unsigned long long)st.cycles, (unsigned long long)st.stale_cycles);
  }
}

static autd3_err_t link_open(autd3_remote_server_t *s, uint16_t n) {
  autd3_geometry_t *g = NULL;
  autd3_err_t err = autd3_geometry_create(n, NULL, &g);
  if (err == AUTD3_OK) err = autd3_link_open(&s->o.link, g, &s->link);
  autd3_geometry_free(g);
  if (err != AUTD3_OK) return err;
  s->n = n;
  memset(s->slot[0], 0, (size_t)AUTD3_MAX_DEVICES * AUTD3_TX_FRAME_BYTES);
  memset(s->slot[1], 0, (size_t)AUTD3_MAX_DEVICES * AUTD3_TX_FRAME_BYTES);
  atomic_store(&s->published, 0);
  atomic_store(&s->taken, 0);
  atomic_store(&s->done, 0);
  s->replied = 0;
  atomic_store(&s->bus_err, 0);
  atomic_store(&s->bus_stop, false);
  err = autd3__thread_start(&s->bus, bus_main, s, "autd3-remote-bus");
  if (err != AUTD3_OK) {
    autd3_link_close(s->link);
    s->link = NULL;
    return err;
  }
  s->bus_running = true;
  for (uint16_t d = 0; d < n; d++) atomic_store(&s->dev_state[d], ARMT7_DEV_OP); /* open returns with every device in OP */
  atomic_store(&s->link_recoveries, 0);
  atomic_store(&s->recovering, false);
  if ((err = autd3__thread_start(&s->checker, checker_main, s, "autd3-remote-chk")) != AUTD3_OK) {
    bus_stop_join(s);
    autd3_link_close(s->link);
    s->link = NULL;
    return err;
  }
  s->checker_running = true;
  logf_(s, "opened the %s link with %u device(s)", autd3_link_kind_name(s->o.link.kind), n);
  return AUTD3_OK;
}

/* ---------------- session ---------------- */

static void drain_add(autd3_remote_server_t *s, int fd) {
  autd3__net_shutdown_write(fd); /* FIN after our last bytes; keep reading so close() does not turn into a RST */
  for (int i = 0; i < MAX_DRAIN; i++) {
    if (s->drain[i].fd < 0) {
      s->drain[i].fd = fd;
      s->drain[i].deadline = autd3__now_ns() + DRAIN_NS;
      return;
    }
  }
  autd3__net_close(fd);
}

static void session_reset(autd3_remote_server_t *s) {
  s->cfd = -1;
  s->in_session = s->closing = false;
  s->in_off = s->in_len = s->out_off = s->out_len = 0;
  s->deadline = 0;
}

static void session_end(autd3_remote_server_t *s, bool dropped, const char *why) {
  if (s->cfd < 0) return;
  logf_(s, "client %s %s (%llu frame(s) served)", s->peer, why, (unsigned long long)s->session_requests);
  if (s->in_session && s->link)
    logf_(s, "  bus cycles without a new request: %llu before the first, %llu between requests, %llu after the last",
          (unsigned long long)atomic_load(&s->idle_lead), (unsigned long long)atomic_load(&s->idle_mid),
          (unsigned long long)atomic_load(&s->idle_run));
  if (dropped) atomic_fetch_add(&s->st_dropped, 1); /* before close(): a peer that sees the EOF sees the count */
  autd3__net_close(s->cfd);
  session_reset(s);
  if (s->o.devices == 0) link_close(s);
}

static void queue(autd3_remote_server_t *s, const void *b, size_t len) {
  if (len > OUT_CAP - s->out_len) len = OUT_CAP - s->out_len;
  memcpy(s->out + s->out_len, b, len);
  s->out_len += len;
}

/* Answer, then drop the connection once the answer is out. */
static void refuse(autd3_remote_server_t *s, uint8_t reason, const char *text) {
  uint8_t b[ARMT_REFUSAL_MAX_BYTES];
  queue(s, b, encode_refusal_for(&s->parser, b, sizeof b, reason, text));
  s->closing = true;
  atomic_fetch_add(&s->st_refused, 1);
  logf_(s, "refused client %s: %s", s->peer, text);
}

/* May the next request be parsed? Its tx slot must be free (the bus took every published request) and at most
 * one reply may be owed (its reply slot must be free). Sets the frame destination when it may. */
static bool next_slot(autd3_remote_server_t *s) {
  uint64_t pub = atomic_load_explicit(&s->published, memory_order_relaxed);
  if (pub - s->replied >= 2) return false;
  if (atomic_load(&s->taken) != pub) {
    atomic_store(&s->take_wake, true); /* then re-check: the bus may have taken it meanwhile */
    if (atomic_load(&s->taken) != pub) return false;
    atomic_store(&s->take_wake, false);
  }
  armt__parser_set_frame(&s->parser, s->slot[(pub + 1) & 1]);
  return true;
}

/* ---------------- handshakes ---------------- */

/* Refuse a connection that is not the session: send the few bytes at once (a fresh socket has room for them),
 * then keep reading until the peer closes, so close() does not turn into a RST that loses them. */
static void refuse_now(autd3_remote_server_t *s, int fd, const void *b, size_t len) {
  atomic_fetch_add(&s->st_refused, 1); /* before the answer: a client that sees it sees the count */
  (void)autd3__net_send(fd, b, len); /* may fail: the client is gone already */
  drain_add(s, fd);
}

/* p: the connection's parser (its version picks the format), NULL before any hello (v3 format). */
static void refuse_busy(autd3_remote_server_t *s, int fd, const armt_parser_t *p, const char *peer, const char *text) {
  uint8_t b[ARMT_REFUSAL_MAX_BYTES];
  size_t n = p ? encode_refusal_for(p, b, sizeof b, ARMT_REFUSE_BUSY, text) : armt__encode_refusal(b, sizeof b, ARMT_REFUSE_BUSY, text);
  refuse_now(s, fd, b, n);
  logf_(s, "refused client %s: %s", peer, text);
}

static void hs_close(handshake_t *h) {
  if (h->fd >= 0) autd3__net_close(h->fd);
  h->fd = -1;
}

/* A hello the server cannot take: answer so that the client can tell why, then drop it. */
static void bad_hello(autd3_remote_server_t *s, handshake_t *h) {
  armt_parser_t *p = &h->parser;
  uint8_t b[ARMT_REFUSAL_MAX_BYTES + 128];
  size_t n = 0;
  if (p->err_kind == ARMT_ERR_MAGIC && p->head[0] == 0x10) {
    /* AUTD3REMOTE v1 (autd3 v38) HELLO: answer in its error format (0xFF, u32 length, text) so it reports why. */
    static const char t[] = "this server speaks ARMT v3 and v7 (libautd3); AUTD3REMOTE v1 clients are not supported";
    const uint8_t hd[5] = {0xFF, (uint8_t)(sizeof t - 1), 0, 0, 0};
    memcpy(b, hd, 5);
    memcpy(b + 5, t, sizeof t - 1);
    n = 5 + sizeof t - 1;
    logf_(s, "refused client %s: AUTD3REMOTE v1 hello", h->peer);
  } else if (p->err_kind == ARMT_ERR_VERSION && p->peer_version >= 4) {
    /* ARMT v4+ clients wait for the server's hello ("ARMT" ver len sdk) and report the mismatch themselves
     * (server.rs handshake: the hello goes out, then the connection is dropped). */
    n = our_hello7(b, sizeof b);
    logf_(s, "refused client %s: it speaks ARMT v%u (autd3-sdk %s)", h->peer, p->peer_version, p->peer_sdk);
  } else {
    uint8_t reason = (p->err_kind == ARMT_ERR_MAGIC || p->err_kind == ARMT_ERR_VERSION) ? ARMT_REFUSE_VERSION : ARMT_REFUSE_GEOMETRY;
    n = encode_refusal_for(p, b, sizeof b, reason, p->error);
    logf_(s, "refused client %s: %s", h->peer, p->error);
  }
  refuse_now(s, h->fd, b, n);
  h->fd = -1;
}

static void on_geometry(autd3_remote_server_t *s) {
  uint16_t n = (uint16_t)s->parser.num_devices;
  const bool v7 = is_v7(&s->parser);
  uint8_t r[ARMT_REFUSAL_MAX_BYTES];
  if (s->o.devices != 0 && n != s->o.devices) {
    if (v7) { /* server.rs attach / reject_of: GeometryMismatch, with the reference's text (clients parse "the bus has N") */
      char t[200];
      snprintf(t, sizeof t,
               "the client geometry has %u device(s) but the bus has %u; build the geometry from what is actually wired to the "
               "appliance",
               n, s->o.devices);
      queue(s, r, armt__encode_session7(r, sizeof r, ARMT7_SESSION_DEVICE_COUNT, 0, t));
    } else { /* v3, like RemoteServer::with_link: answer with the bus's count (the client then reports the mismatch) */
      r[0] = (uint8_t)s->o.devices;
      r[1] = (uint8_t)(s->o.devices >> 8);
      queue(s, r, 2);
    }
    s->closing = true;
    atomic_fetch_add(&s->st_refused, 1);
    logf_(s, "refused client %s: its geometry has %u device(s), the bus has %u", s->peer, n, s->o.devices);
    return;
  }
  if (s->link == NULL) {
    autd3_err_t err = link_open(s, n);
    if (err != AUTD3_OK) {
      char t[ARMT_REFUSAL_TEXT_MAX];
      snprintf(t, sizeof t, "cannot open the %s link for %u device(s): %s: %s", autd3_link_kind_name(s->o.link.kind), n,
               autd3_err_name(err), autd3_last_error());
      refuse(s, ARMT_REFUSE_BUS_UNAVAILABLE, t);
      return;
    }
  } else {
    /* Shared bus: a request of the previous client may still be untaken; wait (bounded) so slots stay disjoint. */
    for (int i = 0; i < 20000 && atomic_load(&s->taken) != atomic_load(&s->published) && atomic_load(&s->bus_err) == 0; i++)
      autd3__sleep_ns(100000);
    /* Replies of the previous client's requests are not owed to this one. */
    s->replied = atomic_load(&s->published);
  }
  atomic_store(&s->idle_lead, 0);
  atomic_store(&s->idle_mid, 0);
  atomic_store(&s->idle_run, 0);
  atomic_store(&s->idle_reset, true);
  if (v7) {
    queue(s, r, armt__encode_session7(r, sizeof r, ARMT7_SESSION_OK, n, NULL));
  } else {
    r[0] = (uint8_t)n;
    r[1] = (uint8_t)(n >> 8);
    queue(s, r, 2);
  }
  s->in_session = true;
  s->deadline = 0;
  logf_(s, "client %s: ARMT v%u session with %u device(s), %u..%u transducers per device", s->peer, s->parser.peer_version, n,
        s->parser.min_transducers, s->parser.max_transducers);
}

/* Feed buffered input and read more until blocked (no free slot, output pending, or no data). */
static void pump_input(autd3_remote_server_t *s) {
  while (s->cfd >= 0 && !s->closing && s->out_len == 0 && (!s->in_session || next_slot(s))) {
    if (s->in_off == s->in_len) {
      long r = autd3__net_recv(s->cfd, s->in, IN_CAP);
      if (r == AUTD3_NET_EOF) {
        bool mid = armt__parser_mid_message(&s->parser);
        session_end(s, mid, !s->in_session ? "left during the handshake" : mid ? "left in the middle of a request" : "disconnected");
        return;
      }
      if (r == AUTD3_NET_FAILED) session_end(s, true, "connection failed");
      if (r <= 0) return;
      s->in_off = 0;
      s->in_len = (size_t)r;
      s->last_rx = autd3__now_ns();
    }
    armt_event_t ev;
    s->in_off += armt__parser_feed(&s->parser, s->in + s->in_off, s->in_len - s->in_off, &ev);
    switch (ev) {
      case ARMT_EV_NONE: break;
      case ARMT_EV_HELLO: break; /* only in a handshake (hs_read): the session's parser is past it */
      case ARMT_EV_GEOMETRY: on_geometry(s); break;
      case ARMT_EV_FRAME: {
        atomic_store_explicit(&s->published, atomic_load_explicit(&s->published, memory_order_relaxed) + 1,
                              memory_order_release);
        break;
      }
      case ARMT_EV_CLOSE: session_end(s, false, "closed the session"); return;
      case ARMT_EV_ERROR: {
        char why[200];
        snprintf(why, sizeof why, "dropped: %s", s->parser.error);
        session_end(s, true, why);
        return;
      }
    }
  }
}

static void flush_output(autd3_remote_server_t *s) {
  while (s->cfd >= 0 && s->out_off < s->out_len) {
    long w = autd3__net_send(s->cfd, s->out + s->out_off, s->out_len - s->out_off);
    if (w > 0) {
      s->out_off += (size_t)w;
      continue;
    }
    if (w == 0) return; /* would block */
    session_end(s, true, "connection failed while answering");
    return;
  }
  if (s->cfd < 0) return;
  s->out_off = s->out_len = 0;
  if (s->closing) {
    int fd = s->cfd;
    logf_(s, "client %s disconnected by the server", s->peer);
    session_reset(s);
    drain_add(s, fd);
    if (s->o.devices == 0) link_close(s);
  }
}

static void pump(autd3_remote_server_t *s) {
  for (int guard = 0; guard < 4 && s->cfd >= 0; guard++) {
    flush_output(s);
    if (s->cfd < 0 || s->out_len != 0) break;
    size_t before = s->in_off;
    pump_input(s);
    if (s->cfd < 0 || (s->out_len == 0 && s->in_off == before)) break;
  }
  if (s->cfd < 0 || !s->in_session) return;
  uint64_t now = autd3__now_ns();
  /* A frame is never left half-parsed for lack of a slot (next_slot holds until it completes), so mid-message
   * means the client is slow. */
  bool pending = s->out_len != 0, mid = armt__parser_mid_message(&s->parser);
  if (pending || mid) {
    if (s->deadline == 0) s->deadline = now + (uint64_t)s->o.stall_timeout_ms * 1000000u;
  } else {
    s->deadline = 0;
  }
}

static void on_bus(autd3_remote_server_t *s) {
  autd3__net_wake_drain(&s->wake);
  if (atomic_load_explicit(&s->bus_err, memory_order_acquire) != 0) {
    if (s->link) logf_(s, "the %s link failed: %s", autd3_link_kind_name(s->o.link.kind), s->bus_msg);
    session_end(s, false, "disconnected because the link failed");
    link_close(s); /* a shared bus is reopened for the next client */
    return;
  }
  if (!s->in_session) return;
  uint64_t done = atomic_load_explicit(&s->done, memory_order_acquire);
  while (s->replied < done) { /* in order; at most two */
    uint64_t v = ++s->replied;
    if (is_v7(&s->parser)) {
      /* v7 header: the bus facts we have. The wrapped link's counters (lock-free reads); no DC time (0 = unknown,
       * as the reference sends for links without one); each device's state, the recovery count and "recovering"
       * from the state checker's last look (at most STATE_CHECK_NS old), as the reference's server reports them. */
      autd3_link_stats_t st = {0};
      if (s->link) autd3_link_stats(s->link, &st);
      armt7_status_t h = {.rx_valid = s->reply_valid[v & 1],
                          .recovering = atomic_load_explicit(&s->recovering, memory_order_relaxed),
                          .recoveries = atomic_load_explicit(&s->link_recoveries, memory_order_relaxed),
                          .stale_cycles = st.stale_cycles,
                          .lost_cycles = st.lost_cycles};
      uint8_t hb[ARMT7_REPLY_HEADER_BYTES], states[AUTD3_MAX_DEVICES];
      armt__encode_reply7_header(hb, &h);
      for (uint16_t d = 0; d < s->n; d++) states[d] = atomic_load_explicit(&s->dev_state[d], memory_order_relaxed);
      queue(s, hb, sizeof hb);
      queue(s, states, s->n);
    } else {
      uint8_t valid = s->reply_valid[v & 1] ? 1 : 0;
      queue(s, &valid, 1);
    }
    queue(s, s->reply_rx[v & 1], (size_t)s->n * AUTD3_RX_FRAME_BYTES);
    s->session_requests++;
    atomic_fetch_add(&s->st_requests, 1);
  }
}

/* Has the session been quiet long enough to yield to a newcomer? Nothing owed either way, nothing half-sent. */
static bool session_idle(const autd3_remote_server_t *s, uint64_t now) {
  return s->cfd >= 0 && s->in_session && !s->closing && s->out_len == 0 && s->in_off == s->in_len &&
         !armt__parser_mid_message(&s->parser) && atomic_load(&s->published) == s->replied &&
         now - s->last_rx >= (uint64_t)s->o.idle_timeout_ms * 1000000u;
}

/* Hello + geometry complete: the connection becomes the session, unless a session is busy. */
static void hs_geometry(autd3_remote_server_t *s, handshake_t *h, uint64_t now) {
  if (s->cfd >= 0 && session_idle(s, now)) {
    char why[200];
    snprintf(why, sizeof why, "dropped: idle for %u ms or more while client %s waited", s->o.idle_timeout_ms, h->peer);
    session_end(s, true, why);
  }
  if (s->cfd >= 0) {
    char t[200];
    snprintf(t, sizeof t, "server busy: it serves one client at a time and is serving %s", s->peer);
    refuse_busy(s, h->fd, &h->parser, h->peer, t);
    h->fd = -1;
    return;
  }
  s->cfd = h->fd;
  snprintf(s->peer, sizeof s->peer, "%s", h->peer);
  s->parser = h->parser;
  s->in_off = 0;
  s->in_len = h->len - h->off; /* a request sent right behind the geometry */
  memcpy(s->in, h->buf + h->off, s->in_len);
  s->session_requests = 0;
  s->last_rx = now;
  s->deadline = now + (uint64_t)s->o.stall_timeout_ms * 1000000u; /* until on_geometry's answer is out */
  h->fd = -1;
  atomic_fetch_add(&s->st_clients, 1);
  on_geometry(s);
  pump(s);
}

/* Read and parse what a handshaking connection sent. */
static void hs_read(autd3_remote_server_t *s, handshake_t *h, uint64_t now) {
  for (;;) {
    if (h->off == h->len) {
      long r = autd3__net_recv(h->fd, h->buf, HS_BUF);
      if (r < 0) {
        if (r == AUTD3_NET_FAILED || h->said) atomic_fetch_add(&s->st_dropped, 1);
        logf_(s, "client %s %s", h->peer, r == AUTD3_NET_EOF ? "left during the handshake" : "connection failed during the handshake");
        hs_close(h);
        return;
      }
      if (r == 0) return; /* would block */
      h->off = 0;
      h->len = (size_t)r;
      h->said = true;
    }
    armt_event_t ev;
    h->off += armt__parser_feed(&h->parser, h->buf + h->off, h->len - h->off, &ev);
    if (ev == ARMT_EV_HELLO) {
      /* v7: our hello before the client sends its geometry (server.rs handshake). A fresh socket has room for these
       * few bytes; if it has not, the client is not reading and its handshake deadline drops it. */
      uint8_t b[ARMT7_HELLO_MAX];
      size_t n = our_hello7(b, sizeof b);
      if (autd3__net_send(h->fd, b, n) != (long)n) {
        atomic_fetch_add(&s->st_dropped, 1);
        logf_(s, "client %s dropped: cannot send the hello", h->peer);
        hs_close(h);
        return;
      }
      continue;
    }
    if (ev == ARMT_EV_GEOMETRY) {
      hs_geometry(s, h, now);
      return;
    }
    if (ev == ARMT_EV_ERROR) {
      bad_hello(s, h);
      return;
    }
    if (ev == ARMT_EV_CLOSE) { /* a close before any session: nothing to serve */
      logf_(s, "client %s closed during the handshake", h->peer);
      hs_close(h);
      return;
    }
  }
}

/* A free handshake place (-1 if none); *open = connections open (the session included). */
static int hs_free_slot(const autd3_remote_server_t *s, uint32_t *open) {
  int slot = -1;
  *open = s->cfd >= 0 ? 1u : 0u;
  for (uint32_t i = 0; i < s->o.max_connections; i++) {
    if (s->hs[i].fd >= 0) (*open)++;
    else if (slot < 0) slot = (int)i;
  }
  return *open >= s->o.max_connections ? -1 : slot;
}

/* Read every handshake that has input (or EOF) waiting, without blocking. */
static void hs_settle(autd3_remote_server_t *s, uint64_t now) {
  for (uint32_t i = 0; i < s->o.max_connections; i++) {
    handshake_t *h = &s->hs[i];
    if (h->fd < 0) continue;
    if (autd3__net_readable(h->fd)) hs_read(s, h, now);
  }
}

static void on_accept(autd3_remote_server_t *s) {
  for (int k = 0; k < MAX_ACCEPTS; k++) {
    /* The current client may have left already (its EOF not read yet): settle that before calling anyone busy. */
    if (s->cfd >= 0) pump(s);
    char peer[AUTD3_NET_PEER_MAX];
    int fd = autd3__net_accept(s->lfd, peer, sizeof peer);
    if (fd < 0) return;
    uint64_t now = autd3__now_ns();
    uint32_t open = 0;
    int slot = hs_free_slot(s, &open);
    if (slot < 0) { /* full: handshakes that left already (EOF not read yet) must not hold their places */
      hs_settle(s, now);
      slot = hs_free_slot(s, &open);
    }
    char t[200];
    if (slot < 0) {
      /* Bounded: refused at once rather than left in the backlog. */
      snprintf(t, sizeof t, "server busy: %u connection(s) open, the limit (max_connections)", open);
      refuse_busy(s, fd, NULL, peer, t); /* before any hello: v3's format (our v7 link reads it too) */
      continue;
    }
    /* A busy session does not refuse here: the newcomer's hello says which version the refusal must be in (a v7
     * client reads a hello first), so it is refused once its handshake completes (hs_geometry), in its version. */
    handshake_t *h = &s->hs[slot];
    h->fd = fd;
    snprintf(h->peer, sizeof h->peer, "%s", peer);
    armt__parser_init(&h->parser, AUTD3_MAX_DEVICES);
    h->deadline = now + (uint64_t)s->o.handshake_timeout_ms * 1000000u;
    h->off = h->len = 0;
    h->said = false;
    logf_(s, "client %s connected", peer);
  }
}

/* ---------------- DNS-SD advertisement ---------------- */

static const char mdns_service[] = "_autd3._tcp.local"; /* AUTD3_REMOTE_SERVICE_TYPE without the root dot */

static size_t mdns_answer(const autd3_remote_server_t *s, uint8_t *b, size_t cap, uint16_t id, uint32_t ttl) {
  const char *txt[2] = {"wire=7", s->mdns_txt_sdk}; /* discovery.rs service_info: TXT_WIRE_VERSION, TXT_SDK_VERSION */
  mdns_service_t sv = {.service = mdns_service, .instance = s->mdns_instance, .host = s->mdns_host, .port = s->port,
                       .txt = txt, .ntxt = 2, .addr = (const uint8_t(*)[4])s->mdns_addr, .naddr = s->mdns_naddr, .ttl = ttl};
  return mdns__build_response(b, cap, id, &sv);
}

/* Does a question ask for what we announce? (the service's PTR, our instance's SRV/TXT, our host's A, or ANY) */
typedef struct mdns_q {
  const autd3_remote_server_t *s;
  char fullname[MDNS_NAME_MAX];
  bool ours;
} mdns_q_t;

static void mdns_question(void *ctx, const mdns_record_t *r) {
  mdns_q_t *q = ctx;
  if (!r->is_question) return;
  bool any = r->type == MDNS_TYPE_ANY;
  if ((any || r->type == MDNS_TYPE_PTR) && mdns__name_eq(r->name, mdns_service)) q->ours = true;
  if ((any || r->type == MDNS_TYPE_SRV || r->type == MDNS_TYPE_TXT) && mdns__name_eq(r->name, q->fullname)) q->ours = true;
  if ((any || r->type == MDNS_TYPE_A) && mdns__name_eq(r->name, q->s->mdns_host)) q->ours = true;
}

static void mdns_announce(autd3_remote_server_t *s, uint32_t ttl) {
  uint8_t b[MDNS_PACKET_MAX];
  size_t n = mdns_answer(s, b, sizeof b, 0, ttl);
  if (n && autd3__net_udp_send4(s->mdns_fd, b, n, NULL, MDNS_PORT) != AUTD3_OK) logf_(s, "advertise: %s", autd3_last_error());
}

/* Answer every question about us that is waiting (multicast; a legacy unicast query - source port not 5353, RFC 6762
 * 6.7 - also gets a unicast copy with its id). Bounded per turn so a flood cannot starve the session. */
static void on_mdns(autd3_remote_server_t *s) {
  static uint8_t pkt[9000];
  mdns_q_t q = {.s = s};
  snprintf(q.fullname, sizeof q.fullname, "%s.%s", s->mdns_instance, mdns_service);
  for (int k = 0; k < 32; k++) {
    uint8_t ip[4];
    uint16_t port = 0;
    long r = autd3__net_udp_recv4(s->mdns_fd, pkt, sizeof pkt, ip, &port);
    if (r <= 0) return;
    if (r < 12 || (pkt[2] & 0x80)) continue; /* a response (ours looped back, or another responder's) */
    q.ours = false;
    (void)mdns__parse(pkt, (size_t)r, mdns_question, &q);
    if (!q.ours) continue;
    uint8_t b[MDNS_PACKET_MAX];
    size_t n = mdns_answer(s, b, sizeof b, 0, 120);
    if (n) (void)autd3__net_udp_send4(s->mdns_fd, b, n, NULL, MDNS_PORT);
    if (port != MDNS_PORT && (n = mdns_answer(s, b, sizeof b, (uint16_t)(pkt[0] << 8 | pkt[1]), 10)) != 0)
      (void)autd3__net_udp_send4(s->mdns_fd, b, n, ip, port);
  }
}

static autd3_err_t mdns_setup(autd3_remote_server_t *s, const char *listen) {
  if (s->o.advertise_instance) {
    size_t l = strlen(s->o.advertise_instance);
    if (l == 0 || l > 63 || strchr(s->o.advertise_instance, '.'))
      return autd3_set_error(AUTD3_E_INVALID_OPTION, "remote server: advertise_instance \"%s\": must be 1..63 bytes without dots",
                             s->o.advertise_instance);
    snprintf(s->mdns_instance, sizeof s->mdns_instance, "%s", s->o.advertise_instance);
  } else {
    char h[40];
    autd3__net_hostname(h, sizeof h);
    for (char *c = h; *c; c++)
      if (*c == '.' || *c == ' ') *c = '-';
    snprintf(s->mdns_instance, sizeof s->mdns_instance, "autd3-%s-%u", h, s->port);
  }
  snprintf(s->mdns_host, sizeof s->mdns_host, "%s.local", s->mdns_instance);
  snprintf(s->mdns_txt_sdk, sizeof s->mdns_txt_sdk, "sdk=libautd3-%s", autd3_version_string());
  /* Addresses: a specific IPv4 listen address is the only one that serves; a wildcard serves every interface. */
  char host[AUTD3_NET_HOST_MAX], port[16];
  uint8_t a[4];
  if (autd3__net_split(listen, host, sizeof host, port, sizeof port, "listen") == AUTD3_OK && strcmp(host, "0.0.0.0") != 0 &&
      strchr(host, ':') == NULL) {
    unsigned x[4];
    if (sscanf(host, "%u.%u.%u.%u", &x[0], &x[1], &x[2], &x[3]) == 4 && x[0] < 256 && x[1] < 256 && x[2] < 256 && x[3] < 256) {
      for (int i = 0; i < 4; i++) a[i] = (uint8_t)x[i];
      memcpy(s->mdns_addr[0], a, 4);
      s->mdns_naddr = 1;
    }
  }
  if (s->mdns_naddr == 0) s->mdns_naddr = autd3__net_ipv4_addrs(s->mdns_addr, 8);
  if (s->mdns_naddr == 0) {
    static const uint8_t lo[4] = {127, 0, 0, 1};
    memcpy(s->mdns_addr[0], lo, 4);
    s->mdns_naddr = 1;
  }
  autd3_err_t err = autd3__net_mdns_open(&s->mdns_fd);
  if (err != AUTD3_OK) return autd3_set_error(err, "remote server: --advertise: %s", autd3_last_error());
  return AUTD3_OK;
}

autd3_err_t autd3_remote_server_run(autd3_remote_server_t *s) {
  if (s == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_remote_server_run: NULL server");
  autd3_net_poll_t *p = s->pfd;
  if (s->mdns_fd >= 0) {
    mdns_announce(s, 120); /* RFC 6762 8.3: announce at start */
    logf_(s, "advertising %s.%s on port %u", s->mdns_instance, mdns_service, s->port);
  }
  for (;;) {
    int np = 0, id[MAX_DRAIN];
    p[np++] = (autd3_net_poll_t){.fd = s->stop.r, .events = AUTD3_NET_IN};
    p[np++] = (autd3_net_poll_t){.fd = s->lfd, .events = AUTD3_NET_IN};
    p[np++] = (autd3_net_poll_t){.fd = s->wake.r, .events = AUTD3_NET_IN};
    if (s->cfd >= 0) {
      int ev = 0;
      if (s->out_len) ev |= AUTD3_NET_OUT;
      else if (!s->closing && (!s->in_session || next_slot(s))) ev |= AUTD3_NET_IN;
      p[np++] = (autd3_net_poll_t){.fd = s->cfd, .events = ev};
    }
    uint64_t next = s->cfd >= 0 ? s->deadline : 0;
    for (int i = 0; i < MAX_DRAIN; i++) {
      id[i] = -1;
      if (s->drain[i].fd < 0) continue;
      id[i] = np;
      p[np++] = (autd3_net_poll_t){.fd = s->drain[i].fd, .events = AUTD3_NET_IN};
      if (next == 0 || s->drain[i].deadline < next) next = s->drain[i].deadline;
    }
    int mdns_i = -1;
    if (s->mdns_fd >= 0) {
      mdns_i = np;
      p[np++] = (autd3_net_poll_t){.fd = s->mdns_fd, .events = AUTD3_NET_IN};
    }
    const int hs_first = np;
    for (uint32_t i = 0; i < s->o.max_connections; i++) {
      if (s->hs[i].fd < 0) continue;
      s->pfd_hs[np - hs_first] = (int)i;
      p[np++] = (autd3_net_poll_t){.fd = s->hs[i].fd, .events = AUTD3_NET_IN};
      if (next == 0 || s->hs[i].deadline < next) next = s->hs[i].deadline;
    }
    int ms = -1;
    if (next) {
      uint64_t now = autd3__now_ns();
      ms = next <= now ? 0 : (int)((next - now) / 1000000u + 1);
    }
    int r = autd3__net_poll(p, (size_t)np, ms);
    if (r < 0) return autd3_set_error(AUTD3_E_IO, "remote server: %s", autd3_last_error());
    if (r > 0 && (p[0].revents & AUTD3_NET_IN)) break;
    if (r > 0 && (p[2].revents & AUTD3_NET_IN)) on_bus(s);
    if (s->cfd >= 0) pump(s); /* client I/O, or a reply just queued by on_bus */
    for (int k = hs_first; r > 0 && k < np; k++) {
      handshake_t *h = &s->hs[s->pfd_hs[k - hs_first]];
      if (p[k].revents && h->fd == p[k].fd) hs_read(s, h, autd3__now_ns());
    }
    if (r > 0 && (p[1].revents & AUTD3_NET_IN)) on_accept(s);
    if (r > 0 && mdns_i >= 0 && p[mdns_i].revents) on_mdns(s);
    uint64_t now = autd3__now_ns();
    for (int i = 0; i < MAX_DRAIN; i++) {
      if (s->drain[i].fd < 0) continue;
      bool done = now >= s->drain[i].deadline;
      if (!done && id[i] >= 0 && p[id[i]].revents && p[id[i]].fd == s->drain[i].fd) {
        uint8_t junk[4096];
        done = autd3__net_recv(s->drain[i].fd, junk, sizeof junk) < 0; /* EOF or error */
      }
      if (done) {
        autd3__net_close(s->drain[i].fd);
        s->drain[i].fd = -1;
      }
    }
    for (uint32_t i = 0; i < s->o.max_connections; i++) {
      handshake_t *h = &s->hs[i];
      if (h->fd < 0 || now < h->deadline) continue;
      atomic_fetch_add(&s->st_dropped, 1);
      logf_(s, "client %s dropped: no complete hello and geometry within %u ms", h->peer, s->o.handshake_timeout_ms);
      hs_close(h);
    }
    if (s->cfd >= 0 && s->deadline && now >= s->deadline) {
      if (!s->in_session) session_end(s, true, "dropped: it does not read the answer to its handshake");
      else if (s->out_len) session_end(s, true, "dropped: it does not read its replies");
      else session_end(s, true, "dropped: a request stalled");
    }
  }
  autd3__net_wake_drain(&s->stop);
  if (s->mdns_fd >= 0) mdns_announce(s, 0); /* goodbye (RFC 6762 10.1): browsers drop us at once */
  session_end(s, false, "disconnected: the server is stopping");
  for (uint32_t i = 0; i < s->o.max_connections; i++) hs_close(&s->hs[i]);
  return AUTD3_OK;
}

void autd3_remote_server_stop(autd3_remote_server_t *s) {
  if (s) autd3__net_wake_poke(&s->stop);
}

uint16_t autd3_remote_server_port(const autd3_remote_server_t *s) { return s ? s->port : 0; }

void autd3_remote_server_stats_sized(const autd3_remote_server_t *s, autd3_remote_server_stats_t *out, size_t size) {
  if (s == NULL || out == NULL) return;
  autd3_remote_server_stats_t st;
  st.clients = atomic_load(&s->st_clients);
  st.refused = atomic_load(&s->st_refused);
  st.requests = atomic_load(&s->st_requests);
  st.dropped = atomic_load(&s->st_dropped);
  autd3__out_copy(out, size, &st, sizeof st);
}

void(autd3_remote_server_stats)(const autd3_remote_server_t *s, autd3_remote_server_stats_t *out) {
  autd3_remote_server_stats_sized(s, out, AUTD3__SIZE_THROUGH(autd3_remote_server_stats_t, dropped));
}

void autd3_remote_server_destroy(autd3_remote_server_t *s) {
  if (s == NULL) return;
  if (s->cfd >= 0) autd3__net_close(s->cfd);
  s->cfd = -1;
  link_close(s);
  for (int i = 0; i < MAX_DRAIN; i++)
    if (s->drain[i].fd >= 0) autd3__net_close(s->drain[i].fd);
  if (s->hs)
    for (uint32_t i = 0; i < s->o.max_connections; i++) hs_close(&s->hs[i]);
  free(s->hs);
  free(s->pfd);
  free(s->pfd_hs);
  autd3__net_close(s->lfd);
  if (s->mdns_fd >= 0) autd3__net_close(s->mdns_fd);
  autd3__net_wake_close(&s->stop);
  autd3__net_wake_close(&s->wake);
  free(s->slot[0]);
  free(s->slot[1]);
  free(s->bus_rx);
  free(s->reply_rx[0]);
  free(s->reply_rx[1]);
  free(s->in);
  free(s);
}

autd3_err_t autd3_remote_server_create(const autd3_remote_server_option_t *given, autd3_remote_server_t **out) {
  if (given == NULL || out == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_remote_server_create: NULL argument");
  *out = NULL;
  /* The caller's prefix over the defaults, the wrapped link's option likewise (so a bad link option fails here,
   * not at the first client). */
  if (!autd3__size_known(given->size, option_sizes, sizeof option_sizes / sizeof option_sizes[0]))
    return autd3_set_error(AUTD3_E_INVALID_OPTION,
                           "remote server option: size = %u is not a size this library knows (%zu); start from "
                           "autd3_remote_server_option_default(), which sets it",
                           given->size, sizeof(autd3_remote_server_option_t));
  autd3_remote_server_option_t full = option_defaults();
  memcpy(&full, given, given->size);
  autd3_err_t lerr = autd3__link_option_full(&given->link, &full.link);
  if (lerr != AUTD3_OK) return lerr;
  const autd3_remote_server_option_t *o = &full;
  if (o->devices > AUTD3_MAX_DEVICES)
    return autd3_set_error(AUTD3_E_DEVICE_COUNT_RANGE, "remote server: devices = %u; must be 0 (from the client) or 1..%d",
                           o->devices, AUTD3_MAX_DEVICES);
  const struct {
    const char *name;
    uint32_t v, lo, hi;
  } range[] = {{"handshake_timeout_ms", o->handshake_timeout_ms, 1, 3600000},
               {"stall_timeout_ms", o->stall_timeout_ms, 1, 3600000},
               {"idle_timeout_ms", o->idle_timeout_ms, 1, 3600000},
               {"max_connections", o->max_connections, 2, AUTD3_REMOTE_SERVER_MAX_CONNECTIONS},
               {"log_lines_per_s", o->log_lines_per_s, 0, 100000}};
  for (size_t i = 0; i < sizeof range / sizeof range[0]; i++)
    if (range[i].v < range[i].lo || range[i].v > range[i].hi)
      return autd3_set_error(AUTD3_E_INVALID_OPTION, "remote server: %s = %u; must be %u..%u", range[i].name, range[i].v,
                             range[i].lo, range[i].hi);
  if (o->pickup_percent > 90) return autd3_set_error(AUTD3_E_INVALID_OPTION, "remote server: pickup_percent must be 0..90");
  autd3_remote_server_t *s = calloc(1, sizeof *s);
  if (s == NULL) return autd3_set_error(AUTD3_E_NOMEM, "remote server: out of memory");
  s->o = *o;
  s->lfd = s->stop.r = s->stop.w = s->wake.r = s->wake.w = s->mdns_fd = -1;
  for (int i = 0; i < MAX_DRAIN; i++) s->drain[i].fd = -1;
  session_reset(s);
  const size_t tx_cap = (size_t)AUTD3_MAX_DEVICES * AUTD3_TX_FRAME_BYTES, rx_cap = (size_t)AUTD3_MAX_DEVICES * AUTD3_RX_FRAME_BYTES;
  s->slot[0] = calloc(1, tx_cap);
  s->slot[1] = calloc(1, tx_cap);
  s->bus_rx = calloc(1, rx_cap);
  s->reply_rx[0] = calloc(1, rx_cap);
  s->reply_rx[1] = calloc(1, rx_cap);
  s->in = malloc(IN_CAP);
  s->hs = calloc(o->max_connections, sizeof *s->hs);
  s->pfd = calloc(5u + MAX_DRAIN + o->max_connections, sizeof *s->pfd);
  s->pfd_hs = calloc(o->max_connections, sizeof *s->pfd_hs);
  if (s->hs)
    for (uint32_t i = 0; i < o->max_connections; i++) s->hs[i].fd = -1;
  autd3__log_limit_init(&s->log_limit, o->log_lines_per_s, 0, autd3__now_ns());
  autd3_err_t err = AUTD3_OK;
  if (!s->slot[0] || !s->slot[1] || !s->bus_rx || !s->reply_rx[0] || !s->reply_rx[1] || !s->in || !s->hs || !s->pfd || !s->pfd_hs) {
    err = autd3_set_error(AUTD3_E_NOMEM, "remote server: out of memory");
    goto fail;
  }
  if ((err = autd3__net_wake_open(&s->stop)) != AUTD3_OK || (err = autd3__net_wake_open(&s->wake)) != AUTD3_OK) {
    err = autd3_set_error(err, "remote server: %s", autd3_last_error());
    goto fail;
  }
  if ((err = autd3__net_listen(o->listen ? o->listen : "127.0.0.1:8080", &s->lfd, &s->port)) != AUTD3_OK) goto fail;
  if (o->advertise && (err = mdns_setup(s, o->listen ? o->listen : "127.0.0.1:8080")) != AUTD3_OK) goto fail;
  if (o->devices != 0 && (err = link_open(s, o->devices)) != AUTD3_OK) goto fail;
  *out = s;
  return AUTD3_OK;
fail:
  autd3_remote_server_destroy(s);
  return err;
}
