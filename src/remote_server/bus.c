/*
 * The remote server's bus (server_internal.h): the bus thread that cycles the wrapped link and hands
 * requests and replies over lock-free, the state checker, and opening/closing the wrapped link.
 *
 * Pacing: the wrapped link paces the bus (every link does, through the shared pacer where it keeps a host
 * grid, on its devices' SYNC0 edges otherwise: docs/architecture.md "Pacing"). The bus thread keeps no grid of
 * its own, so it does not use src/link/pacer.c: it only waits for the point to take a request (Pickup,
 * server_internal.h) and keeps `min_period_us` between two calls, a floor for a link whose cycle() returns at
 * once; a grid of that period would count every cycle of a link that paces itself slower as late and skipped.
 */
#include "remote_server/server_internal.h"

/* The bus thread's wake-up latency on req_sem (a post's or a timeout's), tracked near its 99.5th percentile (199
 * steps up for a sample above it, one down otherwise), bounded by echocat's wake-up margin (at the bound the wait
 * ends where wait_next_cycle returned: as without it); a new bus thread starts at half of it. A wake-up later than
 * the estimate still has the outputs' guard before the edge; later than that, the link aims at the next edge. */
#define WAKE_LAT_STEP_NS 1000u
#define WAKE_LAT_MAX_NS 200000u

static void wake_lat_track(uint64_t *est, uint64_t sample) {
  if (sample > *est) *est += 199u * WAKE_LAT_STEP_NS;
  else if (*est > WAKE_LAT_STEP_NS) *est -= WAKE_LAT_STEP_NS;
  if (*est > WAKE_LAT_MAX_NS) *est = WAKE_LAT_MAX_NS;
}

void autd3__rsrv_bus_notify(autd3_remote_server_t *s) {
  if (atomic_exchange(&s->req_waiting, false)) autd3__sem_post(&s->req_sem);
}

/* Wait until a request newer than `taken` is published or `until` passes; returns `published`. The event loop posts
 * only while req_waiting is set (autd3__rsrv_bus_notify), so a post can outlive a wait only by racing its timeout;
 * such a stale post is drained first, and a spurious wake-up only re-checks; a stop posts too (bus_stop_join).
 * Samples the wake-up latency. */
static uint64_t wait_request(autd3_remote_server_t *s, uint64_t taken, uint64_t until, uint64_t *wake_lat) {
  while (autd3__sem_trywait(&s->req_sem)) {
  }
  atomic_store(&s->req_waiting, true);
  uint64_t pub = atomic_load(&s->published);
  while (pub == taken && !atomic_load_explicit(&s->bus_stop, memory_order_relaxed)) {
    uint64_t now = autd3__now_ns();
    if (now >= until) break;
    autd3_err_t e = autd3__sem_timedwait_ns(&s->req_sem, until - now);
    pub = atomic_load(&s->published);
    uint64_t woke = autd3__now_ns();
    if (pub != taken) wake_lat_track(wake_lat, woke - s->t_pub[pub & 1]); /* from the hand-off to running again */
    else if (e == AUTD3_E_PENDING) wake_lat_track(wake_lat, woke - until); /* the timeout's lateness */
    if (e != AUTD3_OK) break; /* timed out, or the OS failed the wait: stage at once */
  }
  atomic_store(&s->req_waiting, false);
  return pub;
}

static void bus_fail(autd3_remote_server_t *s, autd3_err_t err) {
  snprintf(s->bus_msg, sizeof s->bus_msg, "%s: %s", autd3_err_name(err), autd3_last_error());
  atomic_store_explicit(&s->bus_err, (int)err, memory_order_release);
  autd3__net_wake_poke(&s->wake);
}

/* Until when to wait for a request before this cycle's call (0: take what is there now). After wait_next_cycle: the
 * stage deadline the link reported, less the wake-up latency; without wait_next_cycle: the pickup window. */
static autd3_err_t pickup_point(autd3_remote_server_t *s, bool link_waits, uint64_t period, uint64_t last_ret,
                                uint64_t wake_lat, uint64_t *until) {
  *until = 0;
  if (link_waits) {
    uint64_t stage = 0;
    autd3_err_t err = autd3__link_wait_stage(s->link, &stage);
    if (err == AUTD3_OK && stage > wake_lat) *until = stage - wake_lat;
    return err;
  }
  if (s->o.pickup_percent && period) *until = last_ret + period * s->o.pickup_percent / 100u;
  return AUTD3_OK;
}

static void *bus_main(void *arg) {
  autd3_remote_server_t *s = arg;
  /* The one owner of a bus thread's RT policy (platform/rt.h), as for the client's bus thread. */
  autd3_err_t perr = autd3__bus_thread_policy(s->o.rt_priority, s->o.rt_cpu);
  if (perr != AUTD3_OK) {
    snprintf(s->bus_msg, sizeof s->bus_msg, "rt_priority %d / rt_cpu %d: %s", s->o.rt_priority, s->o.rt_cpu,
             autd3_last_error());
    atomic_store_explicit(&s->bus_err, (int)perr, memory_order_release);
  }
  autd3__sem_post(&s->bus_started);
  if (perr != AUTD3_OK) return NULL;
  const size_t rx_bytes = (size_t)s->n * AUTD3_RX_FRAME_BYTES;
  const uint64_t min_period = (uint64_t)s->o.min_period_us * 1000u;
  uint64_t taken = atomic_load(&s->taken), last_start = 0, last_ret = autd3__now_ns(), cpu_t = last_ret;
  uint64_t period = 0, win_min = UINT64_MAX, wake_lat = WAKE_LAT_MAX_NS / 2;
  unsigned win_n = 0;
  const bool link_waits = s->link->vt->wait_next_cycle != NULL;
  bool seen = false;
  uint64_t run = 0;
  while (!atomic_load_explicit(&s->bus_stop, memory_order_relaxed)) {
    autd3__sleep_until_ns(last_start + min_period, 0);
    uint64_t until = 0;
    autd3_err_t err = pickup_point(s, link_waits, period, last_ret, wake_lat, &until);
    if (err != AUTD3_OK) {
      bus_fail(s, err);
      break;
    }
    if (atomic_exchange_explicit(&s->idle_reset, false, memory_order_relaxed)) { /* a new session */
      seen = false;
      run = 0;
    }
    uint64_t pub = atomic_load_explicit(&s->published, memory_order_acquire);
    if (pub == taken && until > autd3__now_ns()) {
      pub = wait_request(s, taken, until, &wake_lat);
      if (atomic_load_explicit(&s->bus_stop, memory_order_relaxed)) break;
    }
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
    err = autd3_link_cycle(s->link, s->slot[taken & 1], s->bus_rx, &valid);
    uint64_t ret = autd3__now_ns();
    if (err != AUTD3_OK) {
      bus_fail(s, err);
      break;
    }
    /* Counted before the reply is handed over, so that a reader who sees a request answered sees its cycle too. */
    atomic_fetch_add_explicit(&s->bus_cycles, 1, memory_order_relaxed);
    if (first) { /* the acks leave at once: the event loop queues and sends the reply when woken */
      s->t_call[taken & 1] = last_start;
      s->t_ret[taken & 1] = ret;
      memcpy(s->reply_rx[taken & 1], s->bus_rx, rx_bytes);
      s->reply_valid[taken & 1] = valid;
      atomic_store_explicit(&s->done, taken, memory_order_release);
      autd3__net_wake_poke(&s->wake);
    }
    if (ret - cpu_t >= CPU_SAMPLE_NS) {
      atomic_store_explicit(&s->bus_cpu_live, autd3__thread_cpu_ns(), memory_order_relaxed);
      cpu_t = ret;
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
  }
  /* Hand this thread's CPU time over to the total (a reader in between may miss or count its last sample once). */
  atomic_fetch_add(&s->bus_cpu_done, autd3__thread_cpu_ns());
  atomic_store(&s->bus_cpu_live, 0);
  return NULL;
}

uint64_t autd3__rsrv_bus_cpu_ns(const autd3_remote_server_t *s) {
  return atomic_load_explicit(&s->bus_cpu_done, memory_order_relaxed) +
         atomic_load_explicit(&s->bus_cpu_live, memory_order_relaxed);
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
  autd3__rsrv_bus_notify(s); /* a bus thread waiting for a request sees the stop now */
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

/* Start the bus thread and wait until it applied its RT policy; a refused policy fails the open with its reason. */
static autd3_err_t bus_start(autd3_remote_server_t *s) {
  autd3_err_t err = autd3__thread_start(&s->bus, bus_main, s, "autd3-remote-bus");
  if (err != AUTD3_OK) return err;
  s->bus_running = true;
  if ((err = autd3__sem_wait(&s->bus_started)) != AUTD3_OK) return err;
  int perr = atomic_load_explicit(&s->bus_err, memory_order_acquire);
  if (perr == AUTD3_OK) return AUTD3_OK;
  char msg[sizeof s->bus_msg];
  snprintf(msg, sizeof msg, "%s", s->bus_msg);
  return autd3_set_error((autd3_err_t)perr, "remote server bus thread: %s", msg);
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
  atomic_store(&s->req_waiting, false);
  for (uint16_t d = 0; d < n; d++) atomic_store(&s->dev_state[d], ARMT7_DEV_OP); /* open returns with every device in OP */
  atomic_store(&s->link_recoveries, 0);
  atomic_store(&s->recovering, false);
  if ((err = bus_start(s)) != AUTD3_OK ||
      (err = autd3__thread_start(&s->checker, checker_main, s, "autd3-remote-chk")) != AUTD3_OK) {
    char why[512];
    snprintf(why, sizeof why, "%s", autd3_last_error()); /* closing the link may set another message */
    bus_stop_join(s);
    atomic_store(&s->bus_err, 0);
    autd3_link_close(s->link);
    s->link = NULL;
    return autd3_set_error(err, "%s", why);
  }
  s->checker_running = true;
  char rt[64] = "";
  if (s->o.rt_priority > 0) snprintf(rt, sizeof rt, ", bus thread SCHED_FIFO %d", s->o.rt_priority);
  if (s->o.rt_cpu >= 0) snprintf(rt + strlen(rt), sizeof rt - strlen(rt), ", bus thread on CPU %d", s->o.rt_cpu);
  autd3__rsrv_log(s, "opened the %s link with %u device(s)%s", autd3_link_kind_name(s->o.link.kind), n, rt);
  return AUTD3_OK;
}
