/*
 * The remote server (include/autd3/remote_server.h): options, create, destroy and stats; the design is
 * described in server_internal.h.
 */
#include "remote_server/server_internal.h"

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
  o.rt_cpu = -1;
  return o;
}

/* Every sizeof(autd3_remote_server_option_t) a header had (src/core/struct_size.h): append the old one when a
 * field is added. 0.3.0 ended with log_ctx. */
static const size_t option_sizes[] = {sizeof(autd3_remote_server_option_0_3_t), sizeof(autd3_remote_server_option_t)};
_Static_assert(sizeof(autd3_remote_server_option_0_3_t) == AUTD3__SIZE_THROUGH(autd3_remote_server_option_t, log_ctx),
               "autd3_remote_server_option_0_3_t is the prefix of autd3_remote_server_option_t through log_ctx");

void autd3_remote_server_option_init(autd3_remote_server_option_t *o, size_t size) {
  if (o == NULL || size < sizeof o->size) return;
  autd3_remote_server_option_t d = option_defaults();
  d.size = (uint32_t)size;
  autd3__out_copy(o, size, &d, sizeof d);
}

/* The exported function: the 0.3.0 layout, by value (binaries and FFI built against it). */
autd3_remote_server_option_0_3_t(autd3_remote_server_option_default)(void) {
  autd3_remote_server_option_t d = option_defaults();
  autd3_remote_server_option_0_3_t o;
  memcpy(&o, &d, sizeof o);
  o.size = (uint32_t)sizeof o;
  return o;
}

uint16_t autd3_remote_server_port(const autd3_remote_server_t *s) { return s ? s->port : 0; }

void autd3_remote_server_stats_sized(const autd3_remote_server_t *s, autd3_remote_server_stats_t *out, size_t size) {
  if (s == NULL || out == NULL) return;
  autd3_remote_server_stats_t st;
  st.clients = atomic_load(&s->st_clients);
  st.refused = atomic_load(&s->st_refused);
  st.requests = atomic_load(&s->st_requests);
  st.dropped = atomic_load(&s->st_dropped);
  st.bus_cycles = atomic_load(&s->bus_cycles);
  st.bus_cpu_ns = autd3__rsrv_bus_cpu_ns(s);
  st.net_cpu_ns = atomic_load(&s->net_cpu);
  autd3__out_copy(out, size, &st, sizeof st);
}

void(autd3_remote_server_stats)(const autd3_remote_server_t *s, autd3_remote_server_stats_t *out) {
  autd3_remote_server_stats_sized(s, out, AUTD3__SIZE_THROUGH(autd3_remote_server_stats_t, dropped));
}

void autd3_remote_server_destroy(autd3_remote_server_t *s) {
  if (s == NULL) return;
  if (s->cfd >= 0) autd3__net_close(s->cfd);
  s->cfd = -1;
  autd3__rsrv_link_close(s);
  for (int i = 0; i < MAX_DRAIN; i++)
    if (s->drain[i].fd >= 0) autd3__net_close(s->drain[i].fd);
  if (s->hs)
    for (uint32_t i = 0; i < s->o.max_connections; i++) autd3__rsrv_hs_close(&s->hs[i]);
  free(s->hs);
  free(s->pfd);
  free(s->pfd_hs);
  autd3__net_close(s->lfd);
  if (s->mdns_fd >= 0) autd3__net_close(s->mdns_fd);
  autd3__net_wake_close(&s->stop);
  autd3__net_wake_close(&s->wake);
  if (s->sems) {
    autd3__sem_destroy(&s->req_sem);
    autd3__sem_destroy(&s->bus_started);
  }
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
  if (o->rt_priority < 0 || o->rt_priority > 99)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "remote server: rt_priority = %d; must be 0 (none) or 1..99", o->rt_priority);
  if (o->rt_cpu < -1)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "remote server: rt_cpu = %d; must be -1 (none) or a CPU index", o->rt_cpu);
  autd3_remote_server_t *s = calloc(1, sizeof *s);
  if (s == NULL) return autd3_set_error(AUTD3_E_NOMEM, "remote server: out of memory");
  s->o = *o;
  s->lfd = s->stop.r = s->stop.w = s->wake.r = s->wake.w = s->mdns_fd = -1;
  for (int i = 0; i < MAX_DRAIN; i++) s->drain[i].fd = -1;
  autd3__rsrv_session_reset(s);
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
    err = autd3__error_context(err, "remote server");
    goto fail;
  }
  if ((err = autd3__sem_init(&s->req_sem, 0)) != AUTD3_OK) goto fail;
  if ((err = autd3__sem_init(&s->bus_started, 0)) != AUTD3_OK) {
    autd3__sem_destroy(&s->req_sem);
    goto fail;
  }
  s->sems = true;
  if ((err = autd3__net_listen(o->listen ? o->listen : "127.0.0.1:8080", &s->lfd, &s->port)) != AUTD3_OK) goto fail;
  if (o->advertise && (err = autd3__rsrv_mdns_setup(s, o->listen ? o->listen : "127.0.0.1:8080")) != AUTD3_OK) goto fail;
  if (o->devices != 0 && (err = autd3__rsrv_link_open(s, o->devices)) != AUTD3_OK) goto fail;
  *out = s;
  return AUTD3_OK;
fail:
  autd3_remote_server_destroy(s);
  return err;
}
