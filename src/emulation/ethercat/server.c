/*
 * The emulator served on an interface (server.h): the loop, the frames, the
 * replies held back to their due time, and the control socket's connections
 * (the commands themselves: control.c). Everything through the seams: the
 * interface through src/nic, the waits and the control socket through src/net.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "core/error_context.h"
#include "emulation/ethercat/server_internal.h"
#include "platform/platform.h"

#define TICK_NS 1000000u /* time-driven work (SM watchdog, firmware events) at least every 1 ms */
#define FRAME_BATCH 64   /* frames answered per loop turn before the control socket gets its turn */

autd3_emu_server_config_t autd3_emu_server_config_default(void) {
  autd3_emu_server_config_t c;
  memset(&c, 0, sizeof c);
  c.chain = autd3_emu_config_default();
  c.unplug = -1;
  return c;
}

autd3_err_t autd3_emu_server_create(const autd3_emu_server_config_t *cfg, autd3_emu_server_t **out) {
  *out = NULL;
  autd3_emu_server_t *s = calloc(1, sizeof *s);
  if (s == NULL) return autd3_set_error(AUTD3_E_NOMEM, "autd3-emu: out of memory");
  s->cfg = *cfg;
  s->lfd = -1;
  s->nic_fd = -1;
  s->stop.r = s->stop.w = -1;
  s->delay_us = cfg->delay_us;
  for (int i = 0; i < AUTD3_EMU_SERVER_CLIENTS; i++) s->cl[i].fd = -1;
  autd3_err_t err = autd3_emu_create(&cfg->chain, autd3__now_ns(), &s->emu); /* the message names autd3-emu */
  if (err == AUTD3_OK) err = autd3__net_wake_open(&s->stop);
  if (err == AUTD3_OK) {
    s->emu->faults.drop = cfg->drop;
    s->emu->faults.corrupt = cfg->corrupt;
    s->emu->faults.silence = cfg->silence;
    if (cfg->unplug >= 0) err = autd3_emu_unplug(s->emu, (uint16_t)cfg->unplug);
  }
  if (err != AUTD3_OK) {
    autd3_emu_server_free(s);
    return err;
  }
  *out = s;
  return AUTD3_OK;
}

autd3_err_t autd3_emu_server_attach(autd3_emu_server_t *s) {
  autd3_err_t err = autd3__nic_open(s->cfg.ifname, AUTD3_NIC_AUTO, &s->nic);
  if (err != AUTD3_OK) return err;
  s->nic_fd = autd3__nic_fd(s->nic);
  autd3__rx_clock_init(&s->rx_clock, s->nic_fd); /* before the master's first frame: it must carry a stamp */
  if (s->cfg.capture_path && (err = autd3__capture_open(&s->cap, s->cfg.capture_path)) != AUTD3_OK)
    return autd3__error_context(err, "--capture");
  if (s->cfg.control_path && (err = autd3__net_listen_local(s->cfg.control_path, &s->lfd)) != AUTD3_OK)
    return autd3__error_context(err, "--control");
  /* replies are due at sub-microsecond model times: a 50 us default timer slack would add up to 50 us to each */
  if (s->cfg.chain.wire) autd3__thread_precise_timers();
  if (s->cfg.verbose)
    fprintf(stderr, "autd3-emu: %u devices on %s%s%s\n", (unsigned)s->cfg.chain.devices, s->cfg.ifname,
            s->cfg.control_path ? ", control " : "", s->cfg.control_path ? s->cfg.control_path : "");
  return AUTD3_OK;
}

void autd3_emu_server_stop(autd3_emu_server_t *s) { autd3__net_wake_poke(&s->stop); }

void autd3_emu_server_free(autd3_emu_server_t *s) {
  if (s == NULL) return;
  for (int i = 0; i < AUTD3_EMU_SERVER_CLIENTS; i++)
    if (s->cl[i].fd >= 0) autd3__net_close(s->cl[i].fd);
  if (s->lfd >= 0) autd3__net_close_local(s->lfd, s->cfg.control_path);
  autd3__capture_close(&s->cap);
  if (s->nic) autd3__nic_close(s->nic);
  autd3__net_wake_close(&s->stop);
  autd3_emu_destroy(s->emu);
  free(s);
}

/* ---- frames ---- */

static void cap_write(autd3_emu_server_t *s, const uint8_t *f, size_t len) {
  autd3__capture_write(&s->cap, f, len, autd3__realtime_ns());
}

/* Send every queued reply that is due by now. Called between received frames
 * too: a reply is due at its model time whatever the master sends meanwhile
 * (a burst of frames must not hold back the replies of earlier ones). */
static void send_due(autd3_emu_server_t *s) {
  uint64_t now = autd3__now_ns();
  while (s->qlen && s->q[s->qhead].due <= now) {
    autd3_emu_pending_t *p = &s->q[s->qhead];
    cap_write(s, p->buf, p->len);
    autd3__nic_send(s->nic, p->buf, p->len);
    s->qhead = (s->qhead + 1) % AUTD3_EMU_SERVER_QLEN;
    s->qlen--;
  }
}

/* Time-driven work may run at time t only once every frame that arrived
 * before t has been processed: read t first, then check that the interface's
 * queue is empty. Otherwise a stall of this process (CI load) would let the
 * watchdog expire although the master's frames were waiting in the socket; a
 * real ESC sees each frame when it arrives. */
bool autd3__emu_server_tick_if_drained(autd3_emu_server_t *s) {
  uint64_t t = autd3__now_ns();
  if (autd3__net_readable(s->nic_fd)) return false;
  autd3_emu_tick(s->emu, t);
  return true;
}

/* Print AL status changes (verbose). */
static void log_states(autd3_emu_server_t *s) {
  for (uint16_t i = 0; i < s->emu->cfg.devices; i++) {
    const uint8_t *m = s->emu->esc[i].mem;
    if (m[0x130] == s->prev_state[i]) continue;
    fprintf(stderr, "autd3-emu: device %u AL status 0x%02x code 0x%04x\n", (unsigned)i, m[0x130],
            (unsigned)(m[0x134] | (m[0x135] << 8)));
    s->prev_state[i] = m[0x130];
  }
}

/* Answer the frames waiting on the interface (a bounded batch). */
static void serve_frames(autd3_emu_server_t *s) {
  autd3_emu_t *emu = s->emu;
  uint8_t *buf = s->frame;
  for (int k = 0; k < FRAME_BATCH; k++) {
    size_t len;
    send_due(s);
    if (autd3__nic_recv(s->nic, buf, AUTD3_NIC_MAX_FRAME, &len, 0) != AUTD3_OK) break;
    /* The devices see the frame from when it reached the interface, not
     * from when this process got to read it (nic/rx_clock.h). */
    uint64_t t = autd3__rx_clock_arrival(&s->rx_clock, autd3__nic_rx_ns(s->nic));
    cap_write(s, buf, len);
    if (s->qlen == AUTD3_EMU_SERVER_QLEN) { /* no room for the reply: lost before it reaches the devices */
      emu->dropped++;
      continue;
    }
    if (!autd3_emu_process(emu, buf, len, t)) continue;
    /* the wire model's ring time (emu->reply_ns; t without it), then "delay US" */
    uint64_t due = emu->reply_ns + (uint64_t)s->delay_us * 1000u;
    if (due <= autd3__now_ns() && s->qlen == 0) {
      cap_write(s, buf, len);
      if (autd3__nic_send(s->nic, buf, len) != AUTD3_OK && s->cfg.verbose) fprintf(stderr, "autd3-emu: %s\n", autd3_last_error());
    } else {
      autd3_emu_pending_t *q = &s->q[(s->qhead + s->qlen) % AUTD3_EMU_SERVER_QLEN];
      q->due = due;
      q->len = len;
      memcpy(q->buf, buf, len);
      s->qlen++;
    }
  }
  if (s->cfg.verbose) log_states(s);
}

/* ---- the control socket ---- */

static void control_accept(autd3_emu_server_t *s) {
  int fd = autd3__net_accept(s->lfd, NULL, 0);
  if (fd < 0) return;
  for (int i = 0; i < AUTD3_EMU_SERVER_CLIENTS; i++) {
    if (s->cl[i].fd >= 0) continue;
    s->cl[i].fd = fd;
    s->cl[i].len = 0;
    return;
  }
  autd3__net_close(fd); /* every place taken */
}

/* Read a client's command lines and answer each. */
static void control_read(autd3_emu_server_t *s, autd3_emu_client_t *k) {
  long got = autd3__net_recv(k->fd, k->buf + k->len, sizeof k->buf - 1 - k->len);
  if (got == 0) return; /* nothing after all */
  if (got < 0) {
    autd3__net_close(k->fd);
    k->fd = -1;
    return;
  }
  k->len += (size_t)got;
  k->buf[k->len] = 0;
  char *nl;
  while ((nl = memchr(k->buf, '\n', k->len)) != NULL) {
    *nl = 0;
    autd3__emu_server_command(s, k->buf, s->reply, sizeof s->reply - 2);
    size_t rl = strlen(s->reply);
    s->reply[rl++] = '\n';
    (void)autd3__net_send(k->fd, s->reply, rl); /* a client gone is closed at its next read */
    size_t used = (size_t)(nl - k->buf) + 1;
    memmove(k->buf, nl + 1, k->len - used);
    k->len -= used;
  }
  if (k->len >= sizeof k->buf - 1) k->len = 0; /* a line too long: dropped */
}

/* ---- the loop ---- */

enum { P_NIC, P_STOP, P_FIXED };

autd3_err_t autd3_emu_server_run(autd3_emu_server_t *s) {
  autd3_net_poll_t p[P_FIXED + 1 + AUTD3_EMU_SERVER_CLIENTS];
  int who[AUTD3_EMU_SERVER_CLIENTS + 1]; /* poll entry -> client index (-1: the listener) */
  uint64_t last_tick = 0;
  for (;;) {
    p[P_NIC] = (autd3_net_poll_t){.fd = s->nic_fd, .events = AUTD3_NET_IN};
    p[P_STOP] = (autd3_net_poll_t){.fd = s->stop.r, .events = AUTD3_NET_IN};
    int np = P_FIXED;
    if (s->lfd >= 0) {
      who[np - P_FIXED] = -1;
      p[np++] = (autd3_net_poll_t){.fd = s->lfd, .events = AUTD3_NET_IN};
    }
    for (int i = 0; i < AUTD3_EMU_SERVER_CLIENTS; i++) {
      if (s->cl[i].fd < 0) continue;
      who[np - P_FIXED] = i;
      p[np++] = (autd3_net_poll_t){.fd = s->cl[i].fd, .events = AUTD3_NET_IN};
    }
    uint64_t now = autd3__now_ns();
    uint64_t wait = TICK_NS;
    if (s->qlen) wait = s->q[s->qhead].due > now ? s->q[s->qhead].due - now : 0;
    int r = autd3__net_poll_ns(p, (size_t)np, (int64_t)wait);
    if (r < 0) return autd3__error_context(AUTD3_E_IO, "autd3-emu");
    if (p[P_STOP].revents) break;
    if (p[P_NIC].revents) serve_frames(s);
    send_due(s);
    now = autd3__now_ns();
    if (now - last_tick >= TICK_NS && autd3__emu_server_tick_if_drained(s)) last_tick = now;
    for (int k = P_FIXED; r > 0 && k < np; k++) {
      if (!p[k].revents) continue;
      int i = who[k - P_FIXED];
      if (i < 0) control_accept(s);
      else if (s->cl[i].fd == p[k].fd) control_read(s, &s->cl[i]);
    }
  }
  autd3__net_wake_drain(&s->stop);
  if (s->cfg.verbose) {
    autd3_emu_status(s->emu, s->status, sizeof s->status);
    fprintf(stderr, "autd3-emu: stopping (frames timed by the kernel's receive stamp %llu, by the read %llu)\n%s",
            (unsigned long long)s->rx_clock.kernel, (unsigned long long)s->rx_clock.read, s->status);
  }
  return AUTD3_OK;
}
