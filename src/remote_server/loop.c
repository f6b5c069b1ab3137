/*
 * The remote server's event loop (server_internal.h): autd3_remote_server_run polls the stop and bus
 * wakes, the listener, the session, draining connections, handshakes and mDNS, and enforces their deadlines.
 */
#include "remote_server/server_internal.h"

void autd3__rsrv_net_cpu_sample(autd3_remote_server_t *s, uint64_t now, bool force) {
  if (!force && now - s->net_cpu_t < CPU_SAMPLE_NS) return;
  s->net_cpu_t = now;
  atomic_store_explicit(&s->net_cpu, s->net_cpu_base + (autd3__thread_cpu_ns() - s->net_cpu0), memory_order_relaxed);
}

autd3_err_t autd3_remote_server_run(autd3_remote_server_t *s) {
  if (s == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_remote_server_run: NULL server");
  autd3_net_poll_t *p = s->pfd;
  s->net_cpu0 = autd3__thread_cpu_ns();
  s->net_cpu_base = atomic_load(&s->net_cpu);
  s->net_cpu_t = autd3__now_ns();
  if (s->mdns_fd >= 0) {
    autd3__rsrv_mdns_announce(s, 120); /* RFC 6762 8.3: announce at start */
    autd3__rsrv_log(s, "advertising %s.%s on port %u", s->mdns_instance, autd3__rsrv_mdns_service, s->port);
  }
  for (;;) {
    int np = 0, id[MAX_DRAIN];
    p[np++] = (autd3_net_poll_t){.fd = s->stop.r, .events = AUTD3_NET_IN};
    p[np++] = (autd3_net_poll_t){.fd = s->lfd, .events = AUTD3_NET_IN};
    p[np++] = (autd3_net_poll_t){.fd = s->wake.r, .events = AUTD3_NET_IN};
    if (s->cfd >= 0) {
      int ev = 0;
      if (s->out_len) ev |= AUTD3_NET_OUT;
      else if (!s->closing && (!s->in_session || autd3__rsrv_next_slot(s))) ev |= AUTD3_NET_IN;
      p[np++] = (autd3_net_poll_t){.fd = s->cfd, .events = ev};
    }
    uint64_t next = s->cfd >= 0 ? s->progress.deadline_ns : 0;
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
    if (r < 0) return autd3__error_context(AUTD3_E_IO, "remote server");
    if (r > 0 && (p[0].revents & AUTD3_NET_IN)) break;
    if (r > 0 && (p[2].revents & AUTD3_NET_IN)) autd3__rsrv_on_bus(s);
    if (s->cfd >= 0) autd3__rsrv_pump(s); /* client I/O, or a reply just queued by autd3__rsrv_on_bus */
    for (int k = hs_first; r > 0 && k < np; k++) {
      handshake_t *h = &s->hs[s->pfd_hs[k - hs_first]];
      if (p[k].revents && h->fd == p[k].fd) autd3__rsrv_hs_read(s, h, autd3__now_ns());
    }
    if (r > 0 && (p[1].revents & AUTD3_NET_IN)) autd3__rsrv_on_accept(s);
    if (r > 0 && mdns_i >= 0 && p[mdns_i].revents) autd3__rsrv_on_mdns(s);
    uint64_t now = autd3__now_ns();
    autd3__rsrv_net_cpu_sample(s, now, false);
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
      autd3__rsrv_log(s, "client %s dropped: no complete hello and geometry within %u ms", h->peer, s->o.handshake_timeout_ms);
      autd3__rsrv_hs_close(h);
    }
    if (s->cfd >= 0 && autd3__net_progress_expired(&s->progress, now)) {
      if (!s->in_session) autd3__rsrv_session_end(s, true, "dropped: it does not read the answer to its handshake");
      else if (s->progress.owed == RSRV_OWE_AHEAD) {
        char why[160];
        snprintf(why, sizeof why, "dropped: for %u ms (stall_timeout_ms) it kept sending requests ahead of its replies "
                 "(it does not take them)", s->o.stall_timeout_ms);
        autd3__rsrv_session_end(s, true, why);
      } else if (s->out_len) {
        char why[120];
        snprintf(why, sizeof why, "dropped: it has not taken its replies for %u ms (stall_timeout_ms)", s->o.stall_timeout_ms);
        autd3__rsrv_session_end(s, true, why);
      }
      else autd3__rsrv_session_end(s, true, "dropped: a request stalled");
    }
  }
  autd3__net_wake_drain(&s->stop);
  if (s->mdns_fd >= 0) autd3__rsrv_mdns_announce(s, 0); /* goodbye (RFC 6762 10.1): browsers drop us at once */
  autd3__rsrv_session_end(s, false, "disconnected: the server is stopping");
  for (uint32_t i = 0; i < s->o.max_connections; i++) autd3__rsrv_hs_close(&s->hs[i]);
  autd3__rsrv_net_cpu_sample(s, autd3__now_ns(), true);
  return AUTD3_OK;
}

void autd3_remote_server_stop(autd3_remote_server_t *s) {
  if (s) autd3__net_wake_poke(&s->stop);
}
