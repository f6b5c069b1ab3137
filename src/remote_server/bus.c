/*
 * The remote server's bus (server_internal.h): the bus thread that cycles the wrapped link and hands
 * requests and replies over lock-free, the state checker, and opening/closing the wrapped link.
 */
#include "remote_server/server_internal.h"

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
      s->t_take[taken & 1] = autd3__now_ns();
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
    const bool first = taken != atomic_load_explicit(&s->done, memory_order_relaxed); /* this cycle carries taken first */
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
    if (first) {
      s->t_call[taken & 1] = last_start;
      s->t_ret[taken & 1] = ret;
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
      uint8_t v = st.state[d] == AUTD3_DEVICE_UNKNOWN ? ARMT7_DEV_OP : autd3__armt_encode_device_state7(st.state[d], st.al_state[d]);
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

void autd3__rsrv_link_close(autd3_remote_server_t *s) {
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
        if (*line) autd3__rsrv_log(s, "  %s", line);
        if (!nl) break;
        line = nl + 1;
      }
    }
    autd3_link_close(s->link);
    s->link = NULL;
    autd3__rsrv_log(s, "closed the %s link after %llu cycle(s), %llu stale", autd3_link_kind_name(s->o.link.kind),
          (unsigned long long)st.cycles, (unsigned long long)st.stale_cycles);
  }
}

autd3_err_t autd3__rsrv_link_open(autd3_remote_server_t *s, uint16_t n) {
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
  autd3__rsrv_log(s, "opened the %s link with %u device(s)", autd3_link_kind_name(s->o.link.kind), n);
  return AUTD3_OK;
}
