/*
 * The emulated TwinCAT runtime's sockets and loop (runtime.h): one thread
 * waits on the listener and the connections (src/net, to the nanosecond
 * where the OS allows) until the next task deadline, runs the task cycle,
 * then reads, writes and enforces the connections' time limits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "emulation/twincat/runtime.h"
#include "platform/platform.h"

autd3_err_t autd3__tcemu_conn_alloc(autd3_tcemu_t *e, autd3_tcemu_conn_t *c, int fd) {
  memset(c, 0, sizeof *c);
  c->rbuf = malloc(e->rcap);
  c->wbuf = malloc(e->wcap);
  c->snap = malloc(e->snap_len * AUTD3_TCEMU_MAX_NOTIF);
  if (!c->rbuf || !c->wbuf || !c->snap) {
    free(c->rbuf), free(c->wbuf), free(c->snap);
    c->fd = -1;
    return AUTD3_E_NOMEM;
  }
  for (int i = 0; i < AUTD3_TCEMU_MAX_NOTIF; i++) c->notif[i].last = c->snap + (size_t)i * e->snap_len;
  c->fd = fd;
  return AUTD3_OK;
}

void autd3__tcemu_conn_close(autd3_tcemu_t *e, autd3_tcemu_conn_t *c, const char *why) {
  if (c->fd >= 0) {
    autd3__net_close(c->fd);
    autd3__tcemu_log(e, "connection %s closed%s%s", c->name, why ? ": " : "", why ? why : "");
  }
  free(c->rbuf), free(c->wbuf), free(c->snap);
  memset(c, 0, sizeof *c);
  c->fd = -1;
}

/* What a connection owes its client while its send-progress deadline runs. */
#define OWE_REPLIES 1 /* bytes in its output buffer that the kernel has not taken */

void autd3__tcemu_flush(autd3_tcemu_t *e, autd3_tcemu_conn_t *c) {
  bool moved = false;
  while (c->wlen > 0 && !c->dead) {
    long w = autd3__net_send(c->fd, c->wbuf, c->wlen);
    if (w > 0) {
      memmove(c->wbuf, c->wbuf + w, c->wlen - (size_t)w);
      c->wlen -= (size_t)w;
      moved = true;
      continue;
    }
    if (w < 0) c->dead = true; /* 0: the kernel takes nothing more now */
    break;
  }
  /* Send progress (net/progress.h): the deadline runs while output waits and restarts whenever the kernel takes
   * some of it, so only a client that takes nothing for idle_timeout_ms is dropped (autd3_tcemu_run). */
  uint64_t now = autd3__now_ns();
  if (moved) autd3__net_progress_restart(&c->progress, c->wlen ? OWE_REPLIES : 0, now, e->cfg.idle_timeout_ms);
  else autd3__net_progress_note(&c->progress, c->wlen ? OWE_REPLIES : 0, now, e->cfg.idle_timeout_ms);
}

/* A place for a new connection: a free one, else the one quiet longest if it has been quiet for idle_timeout_ms
 * (closed to make room), else -1. Connections that never sent a frame go by their handshake timeout instead. */
static int free_place(autd3_tcemu_t *e, uint64_t now) {
  int quiet = -1;
  for (uint32_t i = 0; i < e->cfg.max_conns; i++) {
    autd3_tcemu_conn_t *c = &e->conns[i];
    if (c->fd < 0) return (int)i;
    if (c->framed && (quiet < 0 || c->since_ns < e->conns[quiet].since_ns)) quiet = (int)i;
  }
  if (quiet < 0 || now - e->conns[quiet].since_ns < (uint64_t)e->cfg.idle_timeout_ms * 1000000u) return -1;
  atomic_fetch_add(&e->st_evicted, 1);
  autd3__tcemu_conn_close(e, &e->conns[quiet], "quiet longest, its place went to a new connection");
  return quiet;
}

static void accept_all(autd3_tcemu_t *e) {
  for (int k = 0; k < 64; k++) { /* bounded per loop turn: a connect storm cannot starve the task */
    char name[AUTD3_NET_PEER_MAX];
    int fd = autd3__net_accept(e->lfd, name, sizeof name);
    if (fd < 0) return;
    int slot = free_place(e, autd3__now_ns());
    if (slot < 0 || autd3__tcemu_conn_alloc(e, &e->conns[slot], fd) != AUTD3_OK) {
      atomic_fetch_add(&e->st_refused, 1); /* counted first: a client that sees the close may look at once */
      autd3__net_close(fd);                /* full: refused at once, bounded */
      autd3__tcemu_log(e, "connection %s refused: all %u places taken", name, e->cfg.max_conns);
      continue;
    }
    autd3_tcemu_conn_t *c = &e->conns[slot];
    /* Fixed, not autotuned to megabytes: a client that stops reading fills it soon, then its own buffer here,
     * and is disconnected (send progress, or its buffer overflowing) instead of being fed for minutes. */
    autd3__net_cap_send_buffer(fd, 65536);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->since_ns = autd3__now_ns();
    atomic_fetch_add(&e->st_accepted, 1);
    autd3__tcemu_log(e, "connection %s accepted", name);
  }
}

static void read_conn(autd3_tcemu_t *e, autd3_tcemu_conn_t *c) {
  for (;;) {
    if (c->rlen == e->rcap) return; /* full: the task cycle consumes it first */
    long r = autd3__net_recv(c->fd, c->rbuf + c->rlen, e->rcap - c->rlen);
    if (r > 0) {
      c->rlen += (size_t)r;
      if (e->cfg.serve_immediately) autd3__tcemu_process_input(e, c);
      if (c->dead) return;
      continue;
    }
    if (r < 0) c->dead = true; /* EOF or failure; 0: nothing more now */
    return;
  }
}

/* The connections' time limits after a loop turn at now: the handshake and send progress. */
static void enforce_limits(autd3_tcemu_t *e, uint64_t now) {
  const uint64_t handshake_ns = (uint64_t)e->cfg.handshake_timeout_ms * 1000000u;
  for (uint32_t i = 0; i < e->cfg.max_conns; i++) {
    autd3_tcemu_conn_t *c = &e->conns[i];
    if (c->fd < 0) continue;
    autd3__tcemu_flush(e, c);
    if (c->dead) {
      autd3__tcemu_conn_close(e, c, NULL);
    } else if (!c->framed && now - c->since_ns >= handshake_ns) {
      atomic_fetch_add(&e->st_timed_out, 1);
      autd3__tcemu_conn_close(e, c, "no complete AMS/TCP frame within the handshake timeout");
    } else if (autd3__net_progress_expired(&c->progress, now)) {
      atomic_fetch_add(&e->st_stalled, 1);
      char why[96];
      snprintf(why, sizeof why, "dropped: it has not taken its replies for %u ms (idle_timeout_ms)", e->cfg.idle_timeout_ms);
      autd3__tcemu_conn_close(e, c, why);
    }
  }
}

autd3_err_t autd3_tcemu_run(autd3_tcemu_t *e) {
  autd3_net_poll_t *pf = e->pf;
  int *idx = e->pf_idx;
  uint64_t next = autd3__now_ns() + e->task_ns;
  while (!atomic_load(&e->stop)) {
    if (atomic_exchange(&e->drop, false))
      for (uint32_t i = 0; i < e->cfg.max_conns; i++)
        if (e->conns[i].fd >= 0) autd3__tcemu_conn_close(e, &e->conns[i], "dropped (test control)");
    int np = 0;
    pf[np] = (autd3_net_poll_t){.fd = e->lfd, .events = AUTD3_NET_IN};
    idx[np++] = -1;
    for (uint32_t i = 0; i < e->cfg.max_conns; i++) {
      autd3_tcemu_conn_t *c = &e->conns[i];
      if (c->fd < 0) continue;
      pf[np] = (autd3_net_poll_t){.fd = c->fd, .events = (c->rlen < e->rcap ? AUTD3_NET_IN : 0) | (c->wlen ? AUTD3_NET_OUT : 0)};
      idx[np++] = (int)i;
    }
    uint64_t now = autd3__now_ns();
    uint64_t wait = next > now ? next - now : 0;
    if (wait > 50000000) wait = 50000000; /* re-check stop/drop and the connections' deadlines at least every 50 ms */
    int r = autd3__net_poll_ns(pf, (size_t)np, (int64_t)wait);
    now = autd3__now_ns();
    if (now >= next) {
      autd3__tcemu_task_cycle(e, now);
      next += e->task_ns;
      if (next + 10 * e->task_ns < now) next = now + e->task_ns; /* stalled: restart the grid */
    }
    if (r > 0) {
      for (int k = 0; k < np; k++) {
        if (!pf[k].revents) continue;
        if (idx[k] < 0) accept_all(e);
        else if (e->conns[idx[k]].fd == pf[k].fd && (pf[k].revents & AUTD3_NET_IN)) read_conn(e, &e->conns[idx[k]]);
      }
    }
    enforce_limits(e, autd3__now_ns());
  }
  return AUTD3_OK;
}
