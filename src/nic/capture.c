/* pcap capture writer and passive tap (see capture.h). */
#include "nic/capture.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "nic/master_guard.h"
#include "nic/nic.h"
#include "platform/platform.h"

#define TAP_POLL_NS 20000000ull /* how soon the tap thread notices stop */
#define TAP_DRAIN_MAX 65536u    /* frames written after stop, at most (others may keep sending) */
/* A watch-only tap reads what queued every this long instead of waking for
 * every frame (the socket buffer holds far more than 5 ms of frames). */
#define TAP_WATCH_PERIOD_NS 5000000ull

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v), put16(p + 2, (uint16_t)(v >> 16)); }

autd3_err_t autd3__capture_open(autd3_capture_t *c, const char *path) {
  c->f = NULL;
  atomic_store_explicit(&c->frames, 0, memory_order_relaxed);
  if (path == NULL)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "capture: file path is NULL");
  FILE *f = fopen(path, "wb");
  if (f == NULL)
    return autd3_set_error(AUTD3_E_IO, "capture: cannot create capture file \"%s\": %s", path, strerror(errno));
  uint8_t h[24];
  put32(h, 0xa1b23c4du); /* nanosecond-resolution timestamps */
  put16(h + 4, 2);       /* version 2.4 */
  put16(h + 6, 4);
  put32(h + 8, 0);       /* thiszone, sigfigs: 0 by convention */
  put32(h + 12, 0);
  put32(h + 16, AUTD3_CAPTURE_SNAPLEN);
  put32(h + 20, 1); /* LINKTYPE_ETHERNET */
  if (fwrite(h, 1, sizeof h, f) != sizeof h || fflush(f) != 0) {
    int e = errno;
    fclose(f);
    return autd3_set_error(AUTD3_E_IO, "capture: cannot write capture file \"%s\": %s", path, strerror(e));
  }
  c->f = f;
  return AUTD3_OK;
}

void autd3__capture_write(autd3_capture_t *c, const uint8_t *frame, size_t len, uint64_t realtime_ns) {
  if (c->f == NULL)
    return;
  uint32_t incl = len < AUTD3_CAPTURE_SNAPLEN ? (uint32_t)len : AUTD3_CAPTURE_SNAPLEN;
  uint8_t h[16];
  put32(h, (uint32_t)(realtime_ns / 1000000000ull));
  put32(h + 4, (uint32_t)(realtime_ns % 1000000000ull));
  put32(h + 8, incl);
  put32(h + 12, (uint32_t)len);
  /* Header and data both or neither, so one short write cannot shift every later record. */
  if (fwrite(h, 1, sizeof h, c->f) == sizeof h && fwrite(frame, 1, incl, c->f) == incl)
    atomic_fetch_add_explicit(&c->frames, 1, memory_order_relaxed);
}

void autd3__capture_close(autd3_capture_t *c) {
  if (c->f != NULL)
    fclose(c->f);
  c->f = NULL;
}

/* ---- tap ---- */

struct autd3_capture_tap {
  autd3_nic_t *nic;
  autd3_capture_t w;
  bool watch;          /* count frames whose source is not `master` */
  uint8_t master[6];
  _Atomic uint64_t foreign; /* the first one's MAC is written before the count leaves 0 */
  uint8_t foreign_mac[6];
  atomic_bool stop;
  autd3__thread_t thread;
  int rt_priority, rt_cpu;
  _Atomic int rt_state; /* 0 pending, 1 applied (or nothing asked), 2 refused: rt_msg says why */
  char rt_msg[256];
  uint8_t buf[AUTD3_CAPTURE_SNAPLEN];
};

/* Tap thread: every EtherCAT frame of the adapter into the file, until stop;
 * then what is still queued. */
static void *tap_main(void *arg) {
  autd3_capture_tap_t *t = arg;
  int st = 1;
  if ((t->rt_priority > 0 || t->rt_cpu >= 0) && autd3__thread_set_rt(t->rt_priority, t->rt_cpu) != AUTD3_OK) {
    snprintf(t->rt_msg, sizeof t->rt_msg, "%s", autd3_last_error());
    st = 2;
  }
  atomic_store_explicit(&t->rt_state, st, memory_order_release);
  if (st == 2)
    return NULL;
  for (uint32_t after_stop = 0; after_stop < TAP_DRAIN_MAX;) {
    bool stopping = atomic_load_explicit(&t->stop, memory_order_acquire);
    after_stop += stopping;
    size_t len = 0;
    bool batch = t->w.f == NULL; /* watch only: no timestamps to keep, read in batches */
    autd3_err_t e = autd3__nic_recv(t->nic, t->buf, sizeof t->buf, &len,
                                    stopping || batch ? 0 : autd3__now_ns() + TAP_POLL_NS);
    if (e == AUTD3_OK) {
      autd3__capture_write(&t->w, t->buf, len, autd3__realtime_ns());
      if (t->watch && !autd3__frame_from(t->buf, t->master)) {
        if (atomic_load_explicit(&t->foreign, memory_order_relaxed) == 0)
          memcpy(t->foreign_mac, t->buf + 6, 6);
        atomic_fetch_add_explicit(&t->foreign, 1, memory_order_release);
      }
      continue;
    }
    if (stopping)
      break; /* queue drained (or the socket failed) */
    if (batch) {
      autd3__sleep_ns(TAP_WATCH_PERIOD_NS);
      continue;
    }
    if (e != AUTD3_E_TIMEOUT)
      autd3__sleep_ns(TAP_POLL_NS); /* e.g. the adapter is down: keep tapping, the link reports it */
  }
  return NULL;
}

autd3_err_t autd3__capture_tap_start(const char *ifname, const char *path, autd3_capture_tap_t **out) {
  const autd3_tap_options_t o = {path, NULL, 0, -1};
  return autd3__tap_start(ifname, &o, out);
}

autd3_err_t autd3__tap_start(const char *ifname, const autd3_tap_options_t *o, autd3_capture_tap_t **out) {
  *out = NULL;
  if (o->capture_path == NULL && o->master_mac == NULL)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "capture: a tap with neither a file nor a watch");
  autd3_capture_tap_t *t = calloc(1, sizeof *t);
  if (t == NULL)
    return autd3_set_error(AUTD3_E_NOMEM, "capture: out of memory for the tap on \"%s\"", ifname ? ifname : "");
  atomic_init(&t->foreign, 0);
  if (o->master_mac != NULL) {
    t->watch = true;
    memcpy(t->master, o->master_mac, 6);
  }
  autd3_err_t e = autd3__nic_open_tap(ifname, &t->nic);
  if (e == AUTD3_OK && o->capture_path != NULL)
    e = autd3__capture_open(&t->w, o->capture_path);
  bool started = false;
  if (e == AUTD3_OK) {
    atomic_init(&t->stop, false);
    atomic_init(&t->rt_state, 0);
    t->rt_priority = o->rt_priority, t->rt_cpu = o->rt_cpu;
    e = autd3__thread_start(&t->thread, tap_main, t, "autd3-capture");
    started = e == AUTD3_OK;
  }
  if (started) { /* the RT policy is applied by the thread itself: wait for its verdict */
    int st;
    while ((st = atomic_load_explicit(&t->rt_state, memory_order_acquire)) == 0)
      autd3__sleep_ns(100000);
    if (st == 2) {
      autd3__thread_join(&t->thread);
      e = autd3_set_error(AUTD3_E_PERMISSION, "capture tap on \"%s\": rt_priority/rt_cpu: %s", ifname ? ifname : "",
                          t->rt_msg);
    }
  }
  if (e != AUTD3_OK) {
    autd3__capture_close(&t->w);
    autd3__nic_close(t->nic);
    free(t);
    return e;
  }
  *out = t;
  return AUTD3_OK;
}

uint64_t autd3__capture_tap_frames(const autd3_capture_tap_t *tap) {
  return tap ? atomic_load_explicit(&tap->w.frames, memory_order_relaxed) : 0;
}

uint64_t autd3__tap_foreign(autd3_capture_tap_t *tap, uint8_t mac[6]) {
  if (tap == NULL)
    return 0;
  uint64_t n = atomic_load_explicit(&tap->foreign, memory_order_acquire);
  if (n != 0 && mac != NULL)
    memcpy(mac, tap->foreign_mac, 6);
  return n;
}

void autd3__capture_tap_stop(autd3_capture_tap_t *tap) {
  if (tap == NULL)
    return;
  atomic_store_explicit(&tap->stop, true, memory_order_release);
  autd3__thread_join(&tap->thread);
  autd3__capture_close(&tap->w);
  autd3__nic_close(tap->nic);
  free(tap);
}
