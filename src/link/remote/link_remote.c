/*
 * The Remote link: relays every bus cycle over TCP to autd3-remote-server
 * (or any ARMT server of its version: autd3-rs-link-remote 0.1-0.4's
 * RemoteServer for v3, 0.5-0.9's for v7), which drives the real link.
 * Protocol: armt.h. Behaviour follows shinolab/autd3-sdk
 * crates/autd3-rs-link-remote/src/link.rs: connect (with the timeout if set,
 * which then also bounds every read and write), TCP_NODELAY; v3: hello +
 * geometry, u16 device count (0 = error); v7 (crate 0.9.0 link.rs): hello,
 * the server's hello (its version must be 7), geometry, session reply; then
 * one request/reply per cycle; 0x02 on close. v7 replies also carry the
 * devices' states, which check_state reports. The server paces the cycles, so
 * cycle() here does not sleep: it blocks on the reply. Optionally (see
 * autd3_remote_pipeline_t) one request is kept in flight ahead of the caller
 * (AUTO: only while the caller streams, see remote_cycle); the protocol
 * allows it because replies come back in order.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "core/error_context.h"
#include "link/link_internal.h"
#include "link/remote/armt.h"
#include "net/net.h"
#include "net/stage_hist.h"
#include "platform/platform.h"

typedef struct remote_link {
  struct autd3_link base;
  int fd;
  uint32_t timeout_ms;
  autd3_err_t broken; /* first fatal error; later cycles repeat it */
  bool pipelined;     /* current mode: one request ahead of the caller */
  bool primed;        /* pipelined and that request is in flight */
  bool follow;        /* AUTO chose strict: pipeline while every call brings a new tx (streaming), see remote_cycle */
  bool last_fresh;    /* follow: the previous call's tx differed from the one before */
  uint8_t *last_tx;   /* follow: the last tx sent */
  int auto_phase;     /* AUTO: 0 timing strict, 1 timing pipelined, 2 decided; OFF/ON: 2 */
  uint32_t auto_n;    /* calls in the current phase */
  uint64_t auto_t0, auto_strict_ns;
  /* reply timing, for wait_next_cycle: the bus period is the shortest reply-to-reply interval of 16 */
  uint64_t last_reply_ns, last_iv_ns, period_ns, win_min_ns;
  uint32_t win_n;
  uint64_t wait_ns;    /* wait_next_cycle's sleep after a reply: adapts to the server's pickup, see remote_wait */
  bool waited;         /* the request now in flight was sent after such a sleep */
  bool hooked;         /* wait_next_cycle ran before this cycle: the caller waits for its acks (link_driver.h) */
  uint32_t in_time;    /* replies one period apart since wait_ns last changed */
  uint64_t wait_misses; /* cycles a request missed after a sleep (each halved wait_ns) */
  /* Stage timings (bus thread writes; diagnostics reads, a snapshot): the last reply -> the next send (the caller and
   * wait_next_cycle), and send -> its reply (the server's share plus the network). docs/remote.md "Why". */
  uint64_t last_send_ns;
  autd3_stage_hist_t h_gap, h_xchg;
  size_t tx_bytes, rx_bytes;
  uint8_t *reply;     /* v3: 1 + N x 2; v7: 50 + N + N x 2 */
  size_t reply_bytes; /* whole reply */
  size_t rx_off;      /* where rx starts in it */
  unsigned version;   /* 3 or 7 */
  /* v7: the devices' states of the last reply (bus thread writes, check_state reads from any thread) */
  _Atomic uint8_t state[AUTD3_MAX_DEVICES], al[AUTD3_MAX_DEVICES];
  _Atomic uint64_t recoveries;
  /* v7: the server link's counters of the last reply (bus thread), so that each reply adds what it counted since */
  bool have_srv;
  uint64_t srv_lost, srv_excursions;
  char addr[128];
} remote_link_t;

static bool publish_states(remote_link_t *l);

static uint64_t deadline_of(uint32_t timeout_ms) {
  return timeout_ms ? autd3__now_ns() + (uint64_t)timeout_ms * 1000000u : 0;
}

/* Re-label a socket error with what we were doing. */
static autd3_err_t io_error(remote_link_t *l, autd3_err_t err, const char *doing, size_t got, size_t want) {
  switch (err) {
    case AUTD3_E_TIMEOUT:
      return autd3_set_error(err, "remote %s: no answer within %u ms while %s (%zu of %zu bytes)", l->addr, l->timeout_ms, doing,
                             got, want);
    case AUTD3_E_PEER_CLOSED:
      return autd3__error_context(err, "remote %s: the server closed the connection while %s (%zu of %zu bytes)", l->addr,
                                  doing, got, want);
    default:
      return autd3__error_context(err, "remote %s: I/O error while %s", l->addr, doing);
  }
}

#define AUTO_SKIP 8   /* calls ignored after a switch */
#define AUTO_CALLS 64 /* calls timed per mode */

static autd3_err_t read_reply(remote_link_t *l, uint64_t deadline) {
  size_t got = 0;
  autd3_err_t err = autd3__net_read_all(l->fd, l->reply, l->reply_bytes, deadline, &got);
  if (err) return l->broken = io_error(l, err, "waiting for the cycle's reply", got, l->reply_bytes);
  uint64_t now = autd3__now_ns();
  autd3__stage_add(&l->h_xchg, l->last_send_ns, now);
  if (l->last_send_ns) autd3_link_report_exchange(&l->base, now - l->last_send_ns); /* strict: this request's reply */
  l->last_send_ns = 0;
  if (l->last_reply_ns) {
    l->last_iv_ns = now - l->last_reply_ns;
    if (l->last_iv_ns < l->win_min_ns || l->win_n == 0) l->win_min_ns = l->last_iv_ns;
    if (++l->win_n == 16) {
      if (l->period_ns == 0) l->wait_ns = l->win_min_ns / 3; /* the first estimate: start at the most */
      l->period_ns = l->win_min_ns > 100000000u ? 0 : l->win_min_ns;
      l->win_n = 0;
    }
  }
  l->last_reply_ns = now;
  return AUTD3_OK;
}

/*
 * wait_next_cycle: sleep a little after the last reply, so that the caller
 * stages what its user submitted meanwhile (typically a reaction to that
 * reply's acks, which comes within microseconds) and the request still makes
 * the server's next pickup - the emulator's trick (link_emulator.c emu_wait),
 * one hop further away. How long after the reply that pickup comes depends on
 * the server's link, and the client cannot see it: ~a period for a link that
 * returns right after its exchange (emulator), but only ~0.4 of one for
 * echocat, whose cycle() returns with the inputs read after the edge and whose
 * next pickup is just before the following edge. A fixed third of a period
 * made every strict request miss echocat's pickup (measured: TCP receive ->
 * bus pickup p50 970 us, two cycles per stop-and-wait send; docs/remote.md
 * "Why the hop cost cycles"). So the sleep adapts: it starts at a third of
 * the period, shrinks by a quarter whenever a request sent after it missed a
 * cycle (reply interval > 1.5 periods), never below 1/16 period (what the
 * caller needs to react to the acks: below it the reaction misses the request
 * instead), and creeps back up by 1/64 period after every 64 replies in time.
 * Right after a missed cycle it does not wait, so it cannot lock itself into
 * missing every cycle.
 */
/* Not the shared pacer (link/pacer.h): the server paces the bus, so there is
 * no grid here to keep, only a wake-up relative to the last reply. */
static autd3_err_t remote_wait(struct autd3_link *base) {
  remote_link_t *l = (remote_link_t *)base;
  bool waited = l->waited;
  l->waited = false;
  l->hooked = true;
  if (l->period_ns == 0 || l->broken) return AUTD3_OK;
  const uint64_t most = l->period_ns / 3, step = l->period_ns / 64, floor = l->period_ns / 16;
  if (l->last_iv_ns > l->period_ns * 3 / 2) {
    if (waited) {
      l->wait_ns = l->wait_ns * 3 / 4 < floor ? floor : l->wait_ns * 3 / 4;
      l->in_time = 0;
      l->wait_misses++;
    }
    return AUTD3_OK;
  }
  if (++l->in_time >= 64) {
    l->in_time = 0;
    l->wait_ns = l->wait_ns + step > most ? most : l->wait_ns + step;
  }
  if (l->wait_ns > most) l->wait_ns = most;
  if (l->wait_ns == 0) return AUTD3_OK;
  autd3__sleep_until_ns(l->last_reply_ns + l->wait_ns, 0);
  l->waited = true;
  return AUTD3_OK;
}

/* AUTO: time AUTO_CALLS strict calls, then AUTO_CALLS pipelined ones; keep pipelining only if clearly faster
 * (it is ~2x with a server link that sends at call time, ~1x otherwise, where strict has the lower latency). */
static autd3_err_t auto_step(remote_link_t *l, uint64_t deadline) {
  uint32_t k = ++l->auto_n;
  if (k == AUTO_SKIP) l->auto_t0 = autd3__now_ns();
  if (k != AUTO_SKIP + AUTO_CALLS) return AUTD3_OK;
  uint64_t dt = autd3__now_ns() - l->auto_t0;
  l->auto_n = 0;
  if (l->auto_phase == 0) {
    l->auto_strict_ns = dt;
    l->auto_phase = 1;
    l->pipelined = true; /* the next call sends without reading: one stale cycle */
    l->primed = false;
    return AUTD3_OK;
  }
  l->auto_phase = 2;
  if (dt * 4 < l->auto_strict_ns * 3) return AUTD3_OK; /* pipelined is >25 % faster: keep it */
  l->pipelined = false; /* back to strict: collect the request still in flight */
  l->primed = false;
  l->follow = l->last_tx != NULL;
  autd3_err_t err = read_reply(l, deadline);
  return err;
}

/*
 * follow (AUTO, once it chose strict): strict costs nothing in latency but leaves the bus one round trip
 * (server event loop -> client bus thread -> server) to get each next request in before the next cycle; when a
 * thread is descheduled past that, the server repeats the last tx and a streaming caller loses the cycle
 * (measured on a loaded 2-core machine: 8-78 of 20000 cycles, median 19; 1-9 with follow). So while the caller streams - this call and the
 * previous one both bring a tx that differs from the one before - the link keeps one request ahead, as
 * PIPELINE_ON does, and the server always has the next request when its cycle comes. When the caller stops (the
 * tx repeats: nothing new staged) the request is not sent: the server repeats the last tx between requests
 * anyway, so not sending it changes nothing on the bus, and reading the reply in flight makes the link strict
 * again for the next new frame (a lone request, e.g. stop-and-wait, keeps the strict latency). Every request
 * is still one exchange with one reply, in order; entering the pipelined run costs one stale cycle.
 */
static autd3_err_t remote_cycle(struct autd3_link *base, const uint8_t *tx, uint8_t *rx, bool *rx_valid) {
  remote_link_t *l = (remote_link_t *)base;
  if (l->broken) return autd3_set_error(l->broken, "remote %s: the connection failed earlier; reopen the link", l->addr);
  uint64_t deadline = deadline_of(l->timeout_ms);
  static const uint8_t tag = ARMT_TAG_FRAME;
  bool send = true;
  if (l->follow) {
    bool fresh = memcmp(tx, l->last_tx, l->tx_bytes) != 0;
    if (fresh) memcpy(l->last_tx, tx, l->tx_bytes);
    if (l->primed && !fresh) { /* the stream ended: collect the reply in flight, send nothing */
      send = false;
      l->primed = false;
      l->pipelined = true; /* this call only: read without sending */
    } else {
      /* A caller that waited (wait_next_cycle) for this cycle waits for its acks: a new frame right after the last
       * one is a stop-and-wait reaction, not a stream; starting a pipelined run there cost it a stale cycle. */
      l->pipelined = fresh && (l->primed || (l->last_fresh && !l->hooked));
    }
    l->last_fresh = fresh;
  }
  autd3_err_t err;
  /* One request = tag + N x 626 in one sendmsg (link.rs writes them back to back, then flushes). */
  if (send) {
    uint64_t now = autd3__now_ns();
    autd3__stage_add(&l->h_gap, l->last_reply_ns, now);
    l->last_send_ns = l->pipelined ? 0 : now; /* pipelined: the reply read next is an earlier request's */
  }
  if (send && (err = autd3__net_write2(l->fd, &tag, 1, tx, l->tx_bytes, deadline)) != AUTD3_OK)
    return l->broken = io_error(l, err, "sending a frame", 0, 1 + l->tx_bytes);
  bool lost = false;
  if (l->pipelined && !l->primed && send) { /* nothing to return yet: this request's reply comes with the next call */
    l->primed = true;
    memset(rx, 0, l->rx_bytes);
    *rx_valid = false;
  } else {
    if ((err = read_reply(l, deadline)) != AUTD3_OK) return err;
    *rx_valid = l->reply[0] != 0; /* link.rs: valid[0] != 0 (both versions) */
    memcpy(rx, l->reply + l->rx_off, l->rx_bytes);
    if (l->version == ARMT_VERSION_7) lost = publish_states(l) && !*rx_valid;
  }
  if (l->follow && !send) l->pipelined = false;
  l->hooked = false;
  /* Stale as the reply says; lost (v7) when the server's link lost cycles since the previous reply and these
   * inputs are stale: one exchange counts once, so the shares stay of this link's cycles. */
  autd3_link_count_cycle(base, *rx_valid, lost);
  if (l->auto_phase < 2 && (err = auto_step(l, deadline)) != AUTD3_OK) return err;
  return AUTD3_OK;
}

/* v7: keep the states and the recovery count of the reply just read for check_state (relaxed: each is a snapshot),
 * add the server link's phase counts; true when that link lost cycles since the previous reply. */
static bool publish_states(remote_link_t *l) {
  armt7_status_t st;
  autd3__armt_decode_reply7_header(l->reply, &st);
  const uint8_t *states = l->reply + ARMT7_REPLY_HEADER_BYTES;
  for (size_t d = 0; d < l->base.num_devices; d++) {
    uint8_t al = 0, s = autd3__armt_decode_device_state7(states[d], &al);
    atomic_store_explicit(&l->state[d], s, memory_order_relaxed);
    atomic_store_explicit(&l->al[d], al, memory_order_relaxed);
  }
  atomic_store_explicit(&l->recoveries, st.recoveries, memory_order_relaxed);
  /* What the server's link counted since the previous reply (from the first reply on: the session's). A counter
   * that went back is a link the server reopened: count it from zero. The header cannot say whether that link
   * measures phase; a non-zero worst deviation says it does. Its stale count is not taken: the server cycles
   * between requests (repeating the last frame), so it counts cycles this link never exchanged. */
  uint64_t d_lost = 0;
  if (l->have_srv) {
    d_lost = st.lost_cycles >= l->srv_lost ? st.lost_cycles - l->srv_lost : st.lost_cycles;
    uint64_t d_exc = st.phase_excursions >= l->srv_excursions ? st.phase_excursions - l->srv_excursions : st.phase_excursions;
    autd3_link_add_counts(&l->base, 0, 0, d_exc, st.worst_phase_deviation_ns);
  }
  if (st.worst_phase_deviation_ns != 0) autd3_link_set_measured(&l->base, AUTD3_LINK_MEASURES_PHASE);
  l->have_srv = true;
  l->srv_lost = st.lost_cycles;
  l->srv_excursions = st.phase_excursions;
  return d_lost > 0;
}

/* v3: nothing filled, so every device reads AUTD3_DEVICE_UNKNOWN (the server forwards no states); v7: the last reply's states. */
static autd3_err_t remote_check_state(struct autd3_link *base, autd3_link_status_t *out) {
  remote_link_t *l = (remote_link_t *)base;
  if (l->version != ARMT_VERSION_7) return AUTD3_OK;
  for (size_t d = 0; d < base->num_devices; d++) {
    out->state[d] = atomic_load_explicit(&l->state[d], memory_order_relaxed);
    out->al_state[d] = atomic_load_explicit(&l->al[d], memory_order_relaxed);
  }
  out->recoveries = atomic_load_explicit(&l->recoveries, memory_order_relaxed);
  out->measured = AUTD3_LINK_STATUS_STATES | AUTD3_LINK_STATUS_RECOVERIES;
  return AUTD3_OK;
}

static void remote_close(struct autd3_link *base) {
  remote_link_t *l = (remote_link_t *)base;
  if (l->fd >= 0) {
    if (!l->broken) {
      static const uint8_t tag = ARMT_TAG_CLOSE; /* best effort, like link.rs's Drop */
      (void)autd3__net_write_all(l->fd, &tag, 1, deadline_of(100), NULL);
    }
    autd3__net_close(l->fd);
  }
  free(l->reply);
  free(l->last_tx);
  free(l);
}

static size_t remote_diagnostics(struct autd3_link *base, char *buf, size_t cap) {
  remote_link_t *l = (remote_link_t *)base;
  int n = snprintf(buf, cap,
                   "mode                 : %s\n"
                   "reply -> next send   : p50 %u us, p99 %u us (client side: wait_next_cycle, staging)\n"
                   "send -> reply        : p50 %u us, p99 %u us (strict exchanges: network + server, %u)\n"
                   "wait after a reply   : %llu us now; %llu request(s) missed a cycle after it (each shortened it)\n",
                   l->follow ? "strict, following streaming runs" : l->pipelined ? "pipelined" : "strict",
                   autd3__stage_us(&l->h_gap, 500), autd3__stage_us(&l->h_gap, 990), autd3__stage_us(&l->h_xchg, 500),
                   autd3__stage_us(&l->h_xchg, 990), (unsigned)l->h_xchg.n, (unsigned long long)(l->wait_ns / 1000u),
                   (unsigned long long)l->wait_misses);
  return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap ? cap - 1 : 0;
}

static const autd3_link_vtable_t remote_vt = {.cycle = remote_cycle,
                                              .check_state = remote_check_state,
                                              .close = remote_close,
                                              .wait_next_cycle = remote_wait,
                                              .diagnostics = remote_diagnostics};

/* Make sense of a handshake reply that is not a plain u16 device count. */
static autd3_err_t handshake_reply(remote_link_t *l, const uint8_t r[2], size_t want_n, uint64_t deadline) {
  uint16_t n = (uint16_t)(r[0] | r[1] << 8);
  if (r[0] == 'A' && r[1] == 'R') {
    /* An ARMT v5+ server answers the hello with its own: "ARMT" ver len sdk (autd3-rs-link-remote >= 0.5, wire v7). */
    uint8_t h[4] = {0}, sdk[256] = {0};
    if (autd3__net_read_all(l->fd, h, 4, deadline, NULL) == AUTD3_OK && h[0] == 'M' && h[1] == 'T') {
      (void)autd3__net_read_all(l->fd, sdk, h[3], deadline, NULL);
      return autd3_set_error(AUTD3_E_VERSION,
                             "remote %s: the server speaks ARMT v%u (autd3-sdk %.*s); this link speaks v3 "
                             "(autd3-rs-link-remote 0.1-0.4, PyPI autd3-link-remote 0.2)",
                             l->addr, h[2], (int)h[3], (const char *)sdk);
    }
  }
  if (r[0] == 0xFF) {
    /* AUTD3REMOTE v1 (autd3 v38) answers an unknown first byte with 0xFF, u32 length, text. */
    uint8_t rest[3];
    char text[256] = "";
    if (autd3__net_read_all(l->fd, rest, 3, deadline, NULL) == AUTD3_OK) {
      uint32_t len = (uint32_t)r[1] | (uint32_t)rest[0] << 8 | (uint32_t)rest[1] << 16 | (uint32_t)rest[2] << 24;
      if (len < sizeof text) (void)autd3__net_read_all(l->fd, text, len, deadline, NULL);
    }
    return autd3_set_error(AUTD3_E_VERSION,
                           "remote %s: the server speaks the legacy AUTD3REMOTE v1 protocol (autd3 v38), not ARMT v3%s%s%s", l->addr,
                           text[0] ? " (it said \"" : "", text, text[0] ? "\")" : "");
  }
  if (n == 0) {
    /* Refused. Our server adds reason + text; the reference server never sends 0 (it just closes). */
    uint64_t short_deadline = autd3__now_ns() + 1000000000u;
    if (deadline && deadline < short_deadline) short_deadline = deadline;
    uint8_t h[3];
    char text[ARMT_REFUSAL_TEXT_MAX + 1] = "";
    if (autd3__net_read_all(l->fd, h, 3, short_deadline, NULL) != AUTD3_OK)
      return autd3_set_error(AUTD3_E_REMOTE, "remote %s: the server refused the session (device count 0)", l->addr);
    size_t len = (size_t)(h[1] | h[2] << 8);
    if (len > ARMT_REFUSAL_TEXT_MAX) len = ARMT_REFUSAL_TEXT_MAX;
    size_t got = 0;
    (void)autd3__net_read_all(l->fd, text, len, short_deadline, &got);
    text[got] = 0;
    autd3_err_t code = AUTD3_E_REMOTE;
    if (h[0] == ARMT_REFUSE_VERSION) code = AUTD3_E_VERSION;
    else if (h[0] == ARMT_REFUSE_DEVICE_COUNT) code = AUTD3_E_DEVICE_COUNT_MISMATCH;
    else if (h[0] == ARMT_REFUSE_BUSY) code = AUTD3_E_BUSY;
    return autd3_set_error(code, "remote %s: the server refused the session: %s", l->addr, text);
  }
  if (n != want_n)
    return autd3_set_error(AUTD3_E_DEVICE_COUNT_MISMATCH, "remote %s: the server drives %u device(s) but the geometry has %zu",
                           l->addr, n, want_n);
  return AUTD3_OK;
}

/* Read a v3-format refusal trailer whose first `have` bytes (u16 0, reason, u16 length, text...) are in `b`. Our
 * server sends one before any hello when its connection table is full, whatever the client's version. */
static autd3_err_t v3_refusal(remote_link_t *l, const uint8_t *b, size_t have, uint64_t deadline) {
  char text[ARMT_REFUSAL_TEXT_MAX + 1] = "";
  size_t len = (size_t)(b[3] | b[4] << 8), got = have - 5;
  if (len > ARMT_REFUSAL_TEXT_MAX) len = ARMT_REFUSAL_TEXT_MAX;
  if (got > len) got = len;
  memcpy(text, b + 5, got);
  size_t more = 0;
  if (got < len) (void)autd3__net_read_all(l->fd, text + got, len - got, deadline, &more);
  text[got + more] = 0;
  autd3_err_t code = b[2] == ARMT_REFUSE_BUSY ? AUTD3_E_BUSY : AUTD3_E_REMOTE;
  return autd3_set_error(code, "remote %s: the server refused the session: %s", l->addr, text);
}

/* v7 (autd3-rs-link-remote 0.9.0 link.rs open): hello, the server's hello, geometry, session reply. */
static autd3_err_t handshake7(remote_link_t *l, const autd3_geometry_t *g, size_t n, uint64_t deadline) {
  uint8_t h[ARMT7_HELLO_MAX];
  char sdk[64];
  snprintf(sdk, sizeof sdk, "libautd3 %s", autd3_version_string());
  size_t hl = autd3__armt_encode_hello7(sdk, h, sizeof h), got = 0;
  autd3_err_t err = autd3__net_write_all(l->fd, h, hl, deadline, NULL);
  if (err) return io_error(l, err, "sending the hello", 0, hl);
  uint8_t r[6];
  if ((err = autd3__net_read_all(l->fd, r, 6, deadline, &got)) != AUTD3_OK) {
    if (err == AUTD3_E_PEER_CLOSED && got == 0)
      return autd3_set_error(AUTD3_E_VERSION,
                             "remote %s: the server closed the connection on our ARMT v7 hello: it may speak only v3 "
                             "(autd3-rs-link-remote 0.1-0.4 does so); set the Remote option protocol = 3 for it",
                             l->addr);
    if (err == AUTD3_E_PEER_CLOSED && got >= 5 && r[0] == 0 && r[1] == 0) return v3_refusal(l, r, got, deadline);
    return io_error(l, err, "waiting for the server's hello", got, 6);
  }
  if (memcmp(r, ARMT_MAGIC, 4) != 0) {
    if (r[0] == 0 && r[1] == 0) return v3_refusal(l, r, 6, deadline);
    if (r[0] == 0xFF)
      return autd3_set_error(AUTD3_E_VERSION, "remote %s: the server speaks the legacy AUTD3REMOTE v1 protocol (autd3 v38), not ARMT",
                             l->addr);
    return autd3_set_error(AUTD3_E_VERSION, "remote %s: the server answered the ARMT v7 hello with %02x %02x %02x %02x: not an ARMT server",
                           l->addr, r[0], r[1], r[2], r[3]);
  }
  char peer_sdk[256] = "";
  size_t sl = 0;
  (void)autd3__net_read_all(l->fd, peer_sdk, r[5], deadline, &sl);
  peer_sdk[sl] = 0;
  if (r[4] != ARMT_VERSION_7)
    return autd3_set_error(AUTD3_E_VERSION,
                           "remote %s: the server speaks ARMT v%u (autd3-sdk %s); this link is set to v7%s", l->addr, r[4],
                           peer_sdk, r[4] == ARMT_VERSION ? " (set the Remote option protocol = 3 for this server)" : "");
  size_t gl = autd3__armt_geometry_bytes(g);
  uint8_t *gb = malloc(gl);
  if (gb == NULL) return autd3_set_error(AUTD3_E_NOMEM, "remote: out of memory");
  (void)autd3__armt_encode_geometry(g, gb, gl);
  err = autd3__net_write_all(l->fd, gb, gl, deadline, NULL);
  free(gb);
  if (err) return io_error(l, err, "sending the geometry", 0, gl);
  uint8_t sr[3];
  if ((err = autd3__net_read_all(l->fd, sr, 3, deadline, &got)) != AUTD3_OK) return io_error(l, err, "waiting for the session reply", got, 3);
  uint16_t v = (uint16_t)(sr[1] | sr[2] << 8);
  if (sr[0] == ARMT7_SESSION_OK) {
    if (v == n) return AUTD3_OK;
    return autd3_set_error(AUTD3_E_DEVICE_COUNT_MISMATCH, "remote %s: the server drives %u device(s) but the geometry has %zu",
                           l->addr, v, n);
  }
  char text[ARMT_REFUSAL_TEXT_MAX + 1] = "";
  size_t tl = v > ARMT_REFUSAL_TEXT_MAX ? ARMT_REFUSAL_TEXT_MAX : v;
  got = 0;
  (void)autd3__net_read_all(l->fd, text, tl, deadline, &got);
  text[got] = 0;
  autd3_err_t code = AUTD3_E_REMOTE;
  const char *kind = "server error";
  switch (sr[0]) { /* error.rs RejectKind */
    case ARMT7_SESSION_BUS_CLOSED: kind = "the bus is closed"; break;
    case ARMT7_SESSION_DEVICE_COUNT: kind = "device count mismatch", code = AUTD3_E_DEVICE_COUNT_MISMATCH; break;
    case ARMT7_SESSION_BUS_UNAVAILABLE:
      kind = "the bus is unavailable";
      /* our server's "busy" has no v7 code of its own: it comes as bus unavailable with this text */
      if (strncmp(text, "server busy", 11) == 0) code = AUTD3_E_BUSY;
      break;
    case ARMT7_SESSION_INTERNAL: break;
    default: kind = "unknown reason"; break;
  }
  return autd3_set_error(code, "remote %s: the server refused the session (%s, code %u): %s", l->addr, kind, sr[0], text);
}

autd3_err_t autd3__link_open_remote(const autd3_link_option_t *o, const autd3_geometry_t *g, struct autd3_link **out) {
  const autd3_remote_option_t *ro = &o->u.remote;
  const char *addr = ro->address ? ro->address : "127.0.0.1:8080";
  size_t n = autd3_geometry_num_devices(g);
  remote_link_t *l = calloc(1, sizeof *l);
  if (l == NULL) return autd3_set_error(AUTD3_E_NOMEM, "remote: out of memory");
  l->fd = -1;
  l->timeout_ms = ro->timeout_ms;
  if ((unsigned)ro->pipeline > AUTD3_REMOTE_PIPELINE_ON) {
    free(l);
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "remote: pipeline = %d: must be AUTO (0), OFF (1) or ON (2)", (int)ro->pipeline);
  }
  if (ro->protocol != AUTD3_REMOTE_PROTOCOL_NEWEST && ro->protocol != AUTD3_REMOTE_PROTOCOL_V3 &&
      ro->protocol != AUTD3_REMOTE_PROTOCOL_V7) {
    free(l);
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "remote: protocol = %u: must be 0 (newest), 3 or 7", ro->protocol);
  }
  l->version = ro->protocol == AUTD3_REMOTE_PROTOCOL_V3 ? ARMT_VERSION : ARMT_VERSION_7;
  l->pipelined = ro->pipeline == AUTD3_REMOTE_PIPELINE_ON;
  l->auto_phase = ro->pipeline == AUTD3_REMOTE_PIPELINE_AUTO ? 0 : 2;
  snprintf(l->addr, sizeof l->addr, "%s", addr);
  l->tx_bytes = n * AUTD3_TX_FRAME_BYTES;
  l->rx_bytes = n * AUTD3_RX_FRAME_BYTES;
  l->rx_off = l->version == ARMT_VERSION_7 ? ARMT7_REPLY_HEADER_BYTES + n : 1;
  l->reply_bytes = l->rx_off + l->rx_bytes;
  l->reply = malloc(l->reply_bytes);
  if (l->auto_phase == 0) l->last_tx = calloc(1, l->tx_bytes); /* for follow, which only AUTO enables */
  size_t hello_len = l->version == ARMT_VERSION ? autd3__armt_hello_bytes(g) : 1;
  uint8_t *hello = malloc(hello_len);
  autd3_err_t err = AUTD3_OK;
  if (l->reply == NULL || hello == NULL || (l->auto_phase == 0 && l->last_tx == NULL)) {
    err = autd3_set_error(AUTD3_E_NOMEM, "remote: out of memory");
    goto fail;
  }
  if (l->version == ARMT_VERSION) (void)autd3__armt_encode_hello(g, hello, hello_len);
  if ((err = autd3__net_connect_addr(addr, ro->timeout_ms, "remote", " (is autd3-remote-server running there?)", &l->fd)) != AUTD3_OK) goto fail;
  uint64_t deadline = deadline_of(ro->timeout_ms);
  if (l->version == ARMT_VERSION_7) {
    if ((err = handshake7(l, g, n, deadline)) != AUTD3_OK) goto fail;
    goto opened;
  }
  if ((err = autd3__net_write_all(l->fd, hello, hello_len, deadline, NULL)) != AUTD3_OK) {
    err = io_error(l, err, "sending the hello and geometry", 0, hello_len);
    goto fail;
  }
  uint8_t r[2];
  size_t got = 0;
  if ((err = autd3__net_read_all(l->fd, r, 2, deadline, &got)) != AUTD3_OK) {
    if (err == AUTD3_E_PEER_CLOSED)
      err = autd3_set_error(err,
                            "remote %s: the server closed the connection during the handshake (an ARMT v3 server does so on a "
                            "wrong magic/version or a geometry it cannot serve; see the server's log)",
                            addr);
    else
      err = io_error(l, err, "waiting for the handshake reply", got, 2);
    goto fail;
  }
  if ((err = handshake_reply(l, r, n, deadline)) != AUTD3_OK) goto fail;
opened:
  free(hello);
  autd3_link_init(&l->base, &remote_vt, AUTD3_LINK_REMOTE, (uint16_t)n);
  /* the exchange: a strict request to its reply (network + server); v7 tells lost cycles by the server link's count */
  autd3_link_set_measured(&l->base, AUTD3_LINK_MEASURES_EXCHANGE | (l->version == ARMT_VERSION_7 ? AUTD3_LINK_MEASURES_LOST : 0));
  *out = &l->base;
  return AUTD3_OK;
fail:
  free(hello);
  if (l->fd >= 0) autd3__net_close(l->fd);
  free(l->reply);
  free(l->last_tx);
  free(l);
  return err;
}
