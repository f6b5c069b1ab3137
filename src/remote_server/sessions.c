/*
 * The remote server's sessions (server_internal.h): the one session (parse, hand off, reply) and the
 * table of connections still in their handshake. Event-loop thread only.
 */
#include "remote_server/server_internal.h"

/* Our v7 hello: "ARMT" 07 len "libautd3 x.y.z" (the reference sends its crate version; peers only display it). */
static size_t our_hello7(uint8_t *b, size_t cap) {
  char sdk[64];
  snprintf(sdk, sizeof sdk, "libautd3 %s", autd3_version_string());
  return autd3__armt_encode_hello7(sdk, b, cap);
}

/* A refusal in the client's version: v3 = u16 0 + our reason trailer; v7 = the session reply's reject codes (a busy
 * server and a geometry out of range have no code of their own: bus unavailable / internal, with the text). */
static size_t encode_refusal_for(const armt_parser_t *p, uint8_t *b, size_t cap, uint8_t reason, const char *text) {
  if (!autd3__rsrv_is_v7(p)) return autd3__armt_encode_refusal(b, cap, reason, text);
  uint8_t code = ARMT7_SESSION_INTERNAL;
  if (reason == ARMT_REFUSE_BUS_CLOSED) code = ARMT7_SESSION_BUS_CLOSED;
  else if (reason == ARMT_REFUSE_DEVICE_COUNT) code = ARMT7_SESSION_DEVICE_COUNT;
  else if (reason == ARMT_REFUSE_BUS_UNAVAILABLE || reason == ARMT_REFUSE_BUSY) code = ARMT7_SESSION_BUS_UNAVAILABLE;
  return autd3__armt_encode_session7(b, cap, code, 0, text);
}

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

void autd3__rsrv_session_reset(autd3_remote_server_t *s) {
  s->cfd = -1;
  s->in_session = s->closing = false;
  s->in_off = s->in_len = s->out_off = s->out_len = 0;
  s->progress = (autd3_net_progress_t){0};
  s->q_n = 0;
}

/* The stages of a request (the histograms s->h[], in this order; docs/remote.md "Where the hop's time goes"):
 * the recv() that brought its last byte, the hand-off to the bus thread, the bus thread taking it, the link call,
 * the link's return with the acks, the reply queued, the reply's last byte handed to TCP. */
static const char *const stage_names[N_STAGES] = {
    "TCP receive -> hand-off", "hand-off -> bus pickup", "pickup -> link call", "link call -> return (acks)",
    "return -> reply queued",  "queued -> TCP sent",     "TCP receive -> TCP sent"};
enum { ST_HANDOFF, ST_PICKUP, ST_TOCALL, ST_CALL, ST_TOQ, ST_SEND, ST_TOTAL };

/* The session's figures, logged at its end: idle bus cycles, the stages (p50/p99), the wrapped link's cycles (stale,
 * lost) and the server's CPU per bus cycle. */
static void log_session_figures(autd3_remote_server_t *s) {
  autd3__rsrv_log(s, "  bus cycles without a new request: %llu before the first, %llu between requests, %llu after the last",
        (unsigned long long)atomic_load(&s->idle_lead), (unsigned long long)atomic_load(&s->idle_mid),
        (unsigned long long)atomic_load(&s->idle_run));
  if (s->h[ST_TOTAL].n) {
    char line[400];
    int k = snprintf(line, sizeof line, "  stages p50/p99 us (10 us buckets):");
    for (int i = 0; i < N_STAGES && k > 0 && (size_t)k < sizeof line; i++)
      k += snprintf(line + k, sizeof line - (size_t)k, "%s %s %u/%u", i ? "," : "", stage_names[i],
                    autd3__stage_us(&s->h[i], 500), autd3__stage_us(&s->h[i], 990));
    autd3__rsrv_log(s, "%s (%u requests)", line, (unsigned)s->h[ST_TOTAL].n);
  }
  autd3_link_stats_t ls;
  autd3_link_stats(s->link, &ls);
  autd3__rsrv_log(s, "  link cycles this session: %llu, %llu stale, %llu lost",
                  (unsigned long long)(ls.cycles - s->sess_link0.cycles),
                  (unsigned long long)(ls.stale_cycles - s->sess_link0.stale_cycles),
                  (unsigned long long)(ls.lost_cycles - s->sess_link0.lost_cycles));
  autd3__rsrv_net_cpu_sample(s, autd3__now_ns(), true);
  uint64_t cycles = atomic_load(&s->bus_cycles) - s->sess_cycles0;
  uint64_t bus = autd3__rsrv_bus_cpu_ns(s) - s->sess_bus_cpu0, net = atomic_load(&s->net_cpu) - s->sess_net_cpu0;
  if (cycles)
    autd3__rsrv_log(s, "  CPU per bus cycle: bus thread %.2f us, network thread %.2f us (%llu cycles; %.3f / %.3f s)",
                    (double)bus / 1000.0 / (double)cycles, (double)net / 1000.0 / (double)cycles,
                    (unsigned long long)cycles, (double)bus / 1e9, (double)net / 1e9);
}

void autd3__rsrv_session_end(autd3_remote_server_t *s, bool dropped, const char *why) {
  if (s->cfd < 0) return;
  autd3__rsrv_log(s, "client %s %s (%llu frame(s) served)", s->peer, why, (unsigned long long)s->session_requests);
  if (s->in_session && s->link) log_session_figures(s);
  if (dropped) atomic_fetch_add(&s->st_dropped, 1); /* before close(): a peer that sees the EOF sees the count */
  autd3__net_close(s->cfd);
  autd3__rsrv_session_reset(s);
  if (s->o.devices == 0) autd3__rsrv_link_close(s);
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
  autd3__rsrv_log(s, "refused client %s: %s", s->peer, text);
}

/* May the next request be parsed? Its tx slot must be free (the bus took every published request) and at most
 * one reply may be owed (its reply slot must be free). Sets the frame destination when it may. */
bool autd3__rsrv_next_slot(autd3_remote_server_t *s) {
  uint64_t pub = atomic_load_explicit(&s->published, memory_order_relaxed);
  if (pub - s->replied >= 2) return false;
  if (atomic_load(&s->taken) != pub) {
    atomic_store(&s->take_wake, true); /* then re-check: the bus may have taken it meanwhile */
    if (atomic_load(&s->taken) != pub) return false;
    atomic_store(&s->take_wake, false);
  }
  autd3__armt_parser_set_frame(&s->parser, s->slot[(pub + 1) & 1]);
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
  size_t n = p ? encode_refusal_for(p, b, sizeof b, ARMT_REFUSE_BUSY, text) : autd3__armt_encode_refusal(b, sizeof b, ARMT_REFUSE_BUSY, text);
  refuse_now(s, fd, b, n);
  autd3__rsrv_log(s, "refused client %s: %s", peer, text);
}

void autd3__rsrv_hs_close(handshake_t *h) {
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
    autd3__rsrv_log(s, "refused client %s: AUTD3REMOTE v1 hello", h->peer);
  } else if (p->err_kind == ARMT_ERR_VERSION && p->peer_version >= 4) {
    /* ARMT v4+ clients wait for the server's hello ("ARMT" ver len sdk) and report the mismatch themselves
     * (server.rs handshake: the hello goes out, then the connection is dropped). */
    n = our_hello7(b, sizeof b);
    autd3__rsrv_log(s, "refused client %s: it speaks ARMT v%u (autd3-sdk %s)", h->peer, p->peer_version, p->peer_sdk);
  } else {
    uint8_t reason = (p->err_kind == ARMT_ERR_MAGIC || p->err_kind == ARMT_ERR_VERSION) ? ARMT_REFUSE_VERSION : ARMT_REFUSE_GEOMETRY;
    n = encode_refusal_for(p, b, sizeof b, reason, p->error);
    autd3__rsrv_log(s, "refused client %s: %s", h->peer, p->error);
  }
  refuse_now(s, h->fd, b, n);
  h->fd = -1;
}

static void on_geometry(autd3_remote_server_t *s) {
  uint16_t n = (uint16_t)s->parser.num_devices;
  const bool v7 = autd3__rsrv_is_v7(&s->parser);
  uint8_t r[ARMT_REFUSAL_MAX_BYTES];
  if (s->o.devices != 0 && n != s->o.devices) {
    if (v7) { /* server.rs attach / reject_of: GeometryMismatch, with the reference's text (clients parse "the bus has N") */
      char t[200];
      snprintf(t, sizeof t,
               "the client geometry has %u device(s) but the bus has %u; build the geometry from what is actually wired to the "
               "appliance",
               n, s->o.devices);
      queue(s, r, autd3__armt_encode_session7(r, sizeof r, ARMT7_SESSION_DEVICE_COUNT, 0, t));
    } else { /* v3, like RemoteServer::with_link: answer with the bus's count (the client then reports the mismatch) */
      r[0] = (uint8_t)s->o.devices;
      r[1] = (uint8_t)(s->o.devices >> 8);
      queue(s, r, 2);
    }
    s->closing = true;
    atomic_fetch_add(&s->st_refused, 1);
    autd3__rsrv_log(s, "refused client %s: its geometry has %u device(s), the bus has %u", s->peer, n, s->o.devices);
    return;
  }
  if (s->link == NULL) {
    autd3_err_t err = autd3__rsrv_link_open(s, n);
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
  for (int i = 0; i < N_STAGES; i++) autd3__stage_reset(&s->h[i]);
  s->q_n = 0;
  autd3__rsrv_net_cpu_sample(s, autd3__now_ns(), true);
  s->sess_cycles0 = atomic_load(&s->bus_cycles);
  autd3_link_stats(s->link, &s->sess_link0);
  s->sess_bus_cpu0 = autd3__rsrv_bus_cpu_ns(s);
  s->sess_net_cpu0 = atomic_load(&s->net_cpu);
  if (v7) {
    queue(s, r, autd3__armt_encode_session7(r, sizeof r, ARMT7_SESSION_OK, n, NULL));
  } else {
    r[0] = (uint8_t)n;
    r[1] = (uint8_t)(n >> 8);
    queue(s, r, 2);
  }
  s->in_session = true;
  s->progress = (autd3_net_progress_t){0};
  autd3__rsrv_log(s, "client %s: ARMT v%u session with %u device(s), %u..%u transducers per device", s->peer, s->parser.peer_version, n,
        s->parser.min_transducers, s->parser.max_transducers);
}

/* Feed buffered input and read more until blocked (no free slot, output pending, or no data). */
static void pump_input(autd3_remote_server_t *s) {
  while (s->cfd >= 0 && !s->closing && s->out_len == 0 && (!s->in_session || autd3__rsrv_next_slot(s))) {
    if (s->in_off == s->in_len) {
      long r = autd3__net_recv(s->cfd, s->in, IN_CAP);
      if (r == AUTD3_NET_EOF) {
        bool mid = autd3__armt_parser_mid_message(&s->parser);
        autd3__rsrv_session_end(s, mid, !s->in_session ? "left during the handshake" : mid ? "left in the middle of a request" : "disconnected");
        return;
      }
      if (r == AUTD3_NET_FAILED) autd3__rsrv_session_end(s, true, "connection failed");
      if (r <= 0) return;
      s->in_off = 0;
      s->in_len = (size_t)r;
      s->last_rx = autd3__now_ns();
    }
    armt_event_t ev;
    s->in_off += autd3__armt_parser_feed(&s->parser, s->in + s->in_off, s->in_len - s->in_off, &ev);
    switch (ev) {
      case ARMT_EV_NONE: break;
      case ARMT_EV_HELLO: break; /* only in a handshake (autd3__rsrv_hs_read): the session's parser is past it */
      case ARMT_EV_GEOMETRY: on_geometry(s); break;
      case ARMT_EV_FRAME: {
        uint64_t v = atomic_load_explicit(&s->published, memory_order_relaxed) + 1;
        s->t_recv[v & 1] = s->last_rx; /* the recv() of the chunk that held its last byte */
        s->t_pub[v & 1] = autd3__now_ns();
        atomic_store(&s->published, v);
        autd3__rsrv_bus_notify(s);
        break;
      }
      case ARMT_EV_CLOSE: autd3__rsrv_session_end(s, false, "closed the session"); return;
      case ARMT_EV_ERROR: {
        char why[200];
        snprintf(why, sizeof why, "dropped: %s", s->parser.error);
        autd3__rsrv_session_end(s, true, why);
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
    autd3__rsrv_session_end(s, true, "connection failed while answering");
    return;
  }
  if (s->cfd < 0) return;
  uint64_t sent = autd3__now_ns();
  for (int i = 0; i < s->q_n; i++) {
    autd3__stage_add(&s->h[ST_SEND], s->q_queued[i], sent);
    autd3__stage_add(&s->h[ST_TOTAL], s->q_recv[i], sent);
  }
  s->q_n = 0;
  s->out_off = s->out_len = 0;
  if (s->closing) {
    int fd = s->cfd;
    autd3__rsrv_log(s, "client %s disconnected by the server", s->peer);
    autd3__rsrv_session_reset(s);
    drain_add(s, fd);
    if (s->o.devices == 0) autd3__rsrv_link_close(s);
  }
}

/* A request waiting to be parsed while a reply is owed: the client runs ahead of its replies. A client that reads
 * them is there only for moments (the reference waits for each reply, so nothing of it waits; a pipelining client
 * sends its next request after a reply and waits at most until the bus takes the previous one), and a burst of a
 * few is answered within as many bus cycles; autd3__rsrv_pump() clears it whenever nothing waits. A client that streams
 * without reading is there all the time: that is what drops it after stall_timeout_ms whatever its kernel's
 * receive buffer absorbs (on Linux 6.x that buffer grows towards tcp_rmem's maximum, tens of MB, while nobody
 * reads: ~10^5 small replies before the server's own send would block). Costs a poll(0) only while a reply is
 * owed and the read buffer is empty. */
static bool running_ahead(const autd3_remote_server_t *s) {
  if (!s->in_session || atomic_load_explicit(&s->published, memory_order_relaxed) == s->replied) return false;
  return s->in_off < s->in_len || autd3__net_readable(s->cfd);
}

void autd3__rsrv_pump(autd3_remote_server_t *s) {
  for (int guard = 0; guard < 4 && s->cfd >= 0; guard++) {
    flush_output(s);
    if (s->cfd < 0 || s->out_len != 0) break;
    size_t before = s->in_off;
    pump_input(s);
    if (s->cfd < 0 || (s->out_len == 0 && s->in_off == before)) break;
  }
  if (s->cfd < 0 || !s->in_session) return;
  uint64_t now = autd3__now_ns();
  /* A frame is never left half-parsed for lack of a slot (autd3__rsrv_next_slot holds until it completes), so mid-message
   * means the client is slow. */
  bool pending = s->out_len != 0, mid = autd3__armt_parser_mid_message(&s->parser);
  bool ahead = !pending && !mid && running_ahead(s);
  int owed = ahead ? RSRV_OWE_AHEAD : pending || mid ? RSRV_OWE_REPLY : 0;
  autd3__net_progress_note(&s->progress, owed, now, s->o.stall_timeout_ms);
}

void autd3__rsrv_on_bus(autd3_remote_server_t *s) {
  autd3__net_wake_drain(&s->wake);
  if (atomic_load_explicit(&s->bus_err, memory_order_acquire) != 0) {
    if (s->link) autd3__rsrv_log(s, "the %s link failed: %s", autd3_link_kind_name(s->o.link.kind), s->bus_msg);
    autd3__rsrv_session_end(s, false, "disconnected because the link failed");
    autd3__rsrv_link_close(s); /* a shared bus is reopened for the next client */
    return;
  }
  if (!s->in_session) return;
  uint64_t done = atomic_load_explicit(&s->done, memory_order_acquire);
  while (s->replied < done) { /* in order; at most two */
    uint64_t v = ++s->replied;
    if (autd3__rsrv_is_v7(&s->parser)) {
      /* v7 header: the bus facts we have. The wrapped link's counters (lock-free reads: stale, lost, phase
       * excursions and the worst phase deviation, 0 where that link does not measure them); no DC time (0 = unknown,
       * as the reference sends for links without one); each device's state, the recovery count and "recovering"
       * from the state checker's last look (at most STATE_CHECK_NS old), as the reference's server reports them. */
      autd3_link_stats_t st = {0};
      if (s->link) autd3_link_stats(s->link, &st);
      armt7_status_t h = {.rx_valid = s->reply_valid[v & 1],
                          .recovering = atomic_load_explicit(&s->recovering, memory_order_relaxed),
                          .recoveries = atomic_load_explicit(&s->link_recoveries, memory_order_relaxed),
                          .stale_cycles = st.stale_cycles,
                          .lost_cycles = st.lost_cycles,
                          .phase_excursions = st.phase_excursions,
                          .worst_phase_deviation_ns = st.worst_phase_deviation_ns};
      uint8_t hb[ARMT7_REPLY_HEADER_BYTES], states[AUTD3_MAX_DEVICES];
      autd3__armt_encode_reply7_header(hb, &h);
      for (uint16_t d = 0; d < s->n; d++) states[d] = atomic_load_explicit(&s->dev_state[d], memory_order_relaxed);
      queue(s, hb, sizeof hb);
      queue(s, states, s->n);
    } else {
      uint8_t valid = s->reply_valid[v & 1] ? 1 : 0;
      queue(s, &valid, 1);
    }
    queue(s, s->reply_rx[v & 1], (size_t)s->n * AUTD3_RX_FRAME_BYTES);
    uint64_t q = autd3__now_ns();
    const int k = (int)(v & 1);
    autd3__stage_add(&s->h[ST_HANDOFF], s->t_recv[k], s->t_pub[k]);
    autd3__stage_add(&s->h[ST_PICKUP], s->t_pub[k], s->t_take[k]);
    autd3__stage_add(&s->h[ST_TOCALL], s->t_take[k], s->t_call[k]);
    autd3__stage_add(&s->h[ST_CALL], s->t_call[k], s->t_ret[k]);
    autd3__stage_add(&s->h[ST_TOQ], s->t_ret[k], q);
    if (s->q_n < 2) { /* sent (and their last two stages taken) when `out` is flushed */
      s->q_recv[s->q_n] = s->t_recv[k];
      s->q_queued[s->q_n++] = q;
    }
    s->session_requests++;
    atomic_fetch_add(&s->st_requests, 1);
  }
}

/* Has the session been quiet long enough to yield to a newcomer? Nothing owed either way, nothing half-sent. */
static bool session_idle(const autd3_remote_server_t *s, uint64_t now) {
  return s->cfd >= 0 && s->in_session && !s->closing && s->out_len == 0 && s->in_off == s->in_len &&
         !autd3__armt_parser_mid_message(&s->parser) && atomic_load(&s->published) == s->replied &&
         now - s->last_rx >= (uint64_t)s->o.idle_timeout_ms * 1000000u;
}

/* Hello + geometry complete: the connection becomes the session, unless a session is busy. */
static void hs_geometry(autd3_remote_server_t *s, handshake_t *h, uint64_t now) {
  if (s->cfd >= 0 && session_idle(s, now)) {
    char why[200];
    snprintf(why, sizeof why, "dropped: idle for %u ms or more while client %s waited", s->o.idle_timeout_ms, h->peer);
    autd3__rsrv_session_end(s, true, why);
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
  autd3__net_progress_restart(&s->progress, RSRV_OWE_REPLY, now, s->o.stall_timeout_ms); /* until on_geometry's answer is out */
  h->fd = -1;
  atomic_fetch_add(&s->st_clients, 1);
  on_geometry(s);
  autd3__rsrv_pump(s);
}

/* Read and parse what a handshaking connection sent. */
void autd3__rsrv_hs_read(autd3_remote_server_t *s, handshake_t *h, uint64_t now) {
  for (;;) {
    if (h->off == h->len) {
      long r = autd3__net_recv(h->fd, h->buf, HS_BUF);
      if (r < 0) {
        if (r == AUTD3_NET_FAILED || h->said) atomic_fetch_add(&s->st_dropped, 1);
        autd3__rsrv_log(s, "client %s %s", h->peer, r == AUTD3_NET_EOF ? "left during the handshake" : "connection failed during the handshake");
        autd3__rsrv_hs_close(h);
        return;
      }
      if (r == 0) return; /* would block */
      h->off = 0;
      h->len = (size_t)r;
      h->said = true;
    }
    armt_event_t ev;
    h->off += autd3__armt_parser_feed(&h->parser, h->buf + h->off, h->len - h->off, &ev);
    if (ev == ARMT_EV_HELLO) {
      /* v7: our hello before the client sends its geometry (server.rs handshake). A fresh socket has room for these
       * few bytes; if it has not, the client is not reading and its handshake deadline drops it. */
      uint8_t b[ARMT7_HELLO_MAX];
      size_t n = our_hello7(b, sizeof b);
      if (autd3__net_send(h->fd, b, n) != (long)n) {
        atomic_fetch_add(&s->st_dropped, 1);
        autd3__rsrv_log(s, "client %s dropped: cannot send the hello", h->peer);
        autd3__rsrv_hs_close(h);
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
      autd3__rsrv_log(s, "client %s closed during the handshake", h->peer);
      autd3__rsrv_hs_close(h);
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
    if (autd3__net_readable(h->fd)) autd3__rsrv_hs_read(s, h, now);
  }
}

void autd3__rsrv_on_accept(autd3_remote_server_t *s) {
  for (int k = 0; k < MAX_ACCEPTS; k++) {
    /* The current client may have left already (its EOF not read yet): settle that before calling anyone busy. */
    if (s->cfd >= 0) autd3__rsrv_pump(s);
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
    autd3__net_cap_send_buffer(fd, SEND_BUFFER_BYTES);
    h->fd = fd;
    snprintf(h->peer, sizeof h->peer, "%s", peer);
    autd3__armt_parser_init(&h->parser, AUTD3_MAX_DEVICES);
    h->deadline = now + (uint64_t)s->o.handshake_timeout_ms * 1000000u;
    h->off = h->len = 0;
    h->said = false;
    autd3__rsrv_log(s, "client %s connected", peer);
  }
}
