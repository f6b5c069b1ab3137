/*
 * The emulated TwinCAT runtime's task (see twincat_emu.h for what it serves
 * and why; runtime.h for its parts): the options, the process images, the
 * devices (each with its firmware, emulation/device/firmware.h) and the task
 * cycle. One thread runs it (autd3_tcemu_run, server.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "autd3/proto.h"
#include "emulation/twincat/runtime.h"
#include "platform/platform.h"

autd3_tcemu_config_t autd3_tcemu_config_default(void) {
  autd3_tcemu_config_t c = {.devices = 2, .listen_host = "127.0.0.1", .listen_port = ADS_TCP_PORT, .task_us = 1000,
                            .netid = {{127, 0, 0, 1, 1, 1}}, .timing = autd3_timing_model_default(), .verbose = false,
                            .max_conns = AUTD3_TCEMU_MAX_CONNS, .handshake_timeout_ms = 10000, .idle_timeout_ms = 10000,
                            .log_lines_per_s = 10};
  return c;
}

void autd3__tcemu_log(autd3_tcemu_t *e, const char *fmt, ...) {
  if (!e->cfg.verbose) return;
  uint64_t held = 0;
  if (!autd3__log_limit_take(&e->log_limit, autd3__now_ns(), &held)) return;
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (held) {
    size_t k = strlen(line);
    snprintf(line + k, sizeof line - k, " [%llu earlier line(s) not logged: rate limit]", (unsigned long long)held);
  }
  if (e->cfg.log) e->cfg.log(e->cfg.log_ctx, line);
  else fprintf(stderr, "autd3-twincat-emu: %s\n", line);
}

autd3_err_t autd3_tcemu_create(const autd3_tcemu_config_t *cfg, autd3_tcemu_t **out) {
  if (cfg->devices < 1 || cfg->devices > AUTD3_MAX_DEVICES)
    return autd3_set_error(AUTD3_E_DEVICE_COUNT_RANGE, "twincat-emu: --devices %u: must be 1..%d", cfg->devices, AUTD3_MAX_DEVICES);
  if (cfg->task_us < 50 || cfg->task_us > 1000000)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "twincat-emu: --task-us %u: must be 50..1000000", cfg->task_us);
  const struct {
    const char *name;
    uint32_t v, lo, hi;
  } range[] = {{"max-conns", cfg->max_conns, 1, AUTD3_TCEMU_MAX_CONNS_LIMIT},
               {"handshake-timeout-ms", cfg->handshake_timeout_ms, 1, 3600000},
               {"idle-timeout-ms", cfg->idle_timeout_ms, 1, 3600000},
               {"log-lines-per-s", cfg->log_lines_per_s, 0, 100000}};
  for (size_t i = 0; i < sizeof range / sizeof range[0]; i++)
    if (range[i].v < range[i].lo || range[i].v > range[i].hi)
      return autd3_set_error(AUTD3_E_INVALID_OPTION, "twincat-emu: --%s %u: must be %u..%u", range[i].name, range[i].v, range[i].lo,
                             range[i].hi);
  autd3_tcemu_t *e = calloc(1, sizeof *e);
  if (!e) return AUTD3_E_NOMEM;
  e->cfg = *cfg;
  e->lfd = -1;
  e->task_ns = (uint64_t)cfg->task_us * 1000;
  e->out_len = (uint32_t)cfg->devices * AUTD3_TX_FRAME_BYTES;
  e->in_base = cfg->legacy_image ? 0u : 2u; /* CfgSlaveCount first, unless the legacy layout */
  e->in_len = e->in_base + (uint32_t)cfg->devices * 4u;
  /* Room for the largest legitimate request (a Write of the whole output
   * image) with slack; longer frames get 0x0705 and are skipped. */
  e->rcap = AMS_FRAME_HDR_LEN + 16 + e->out_len + e->in_len + 4096;
  e->wcap = 4 * e->rcap;
  e->snap_len = e->out_len > e->in_len ? e->out_len : e->in_len;
  e->next_handle = 1;
  e->next_router_port = 30000;
  e->dev = calloc(cfg->devices, sizeof *e->dev);
  e->out_img = calloc(1, e->out_len);
  e->in_img = calloc(1, e->in_len);
  e->conns = calloc(cfg->max_conns, sizeof *e->conns);
  e->pf = calloc(1u + cfg->max_conns, sizeof *e->pf);
  e->pf_idx = calloc(1u + cfg->max_conns, sizeof *e->pf_idx);
  if (e->conns)
    for (uint32_t i = 0; i < cfg->max_conns; i++) e->conns[i].fd = -1;
  e->fuzz.fd = -1;
  autd3__log_limit_init(&e->log_limit, cfg->log_lines_per_s, 0, autd3__now_ns());
  if (!e->dev || !e->out_img || !e->in_img || !e->conns || !e->pf || !e->pf_idx) {
    autd3_tcemu_free(e);
    return AUTD3_E_NOMEM;
  }
  uint64_t now = autd3__now_ns();
  for (uint16_t i = 0; i < cfg->devices; i++) {
    autd3_fw_dev_init(&e->dev[i], cfg->firmware, i, NULL, &cfg->timing);
    autd3_fw_dev_set_sync0(&e->dev[i], now, (uint32_t)e->task_ns); /* SYNC0 = task cycle */
    atomic_init(&e->state_word[i], STATE_OP);
  }
  if (!cfg->legacy_image) ads_put_u16(e->in_img, cfg->devices); /* CfgSlaveCount */

  /* The shared network layer: IPv4 / IPv6 / names, the OS's backlog (the place table bounds connections). */
  const char *host = cfg->listen_host ? cfg->listen_host : "127.0.0.1";
  char addr[AUTD3_NET_HOST_MAX + 16];
  snprintf(addr, sizeof addr, strchr(host, ':') && host[0] != '[' ? "[%s]:%u" : "%s:%u", host, cfg->listen_port);
  autd3_err_t err = autd3__net_listen(addr, &e->lfd, &e->port);
  if (err != AUTD3_OK) {
    autd3_tcemu_free(e); /* frees; leaves the message alone */
    return autd3__error_context(err, "twincat-emu");
  }
  *out = e;
  return AUTD3_OK;
}

uint16_t autd3_tcemu_port(const autd3_tcemu_t *e) { return e->port; }
uint16_t autd3_tcemu_devices(const autd3_tcemu_t *e) { return e->cfg.devices; }
size_t autd3_tcemu_log_drain(autd3_tcemu_t *e, uint16_t dev, autd3_exec_entry_t *out, size_t cap, uint64_t *dropped) {
  if (dev >= e->cfg.devices) return 0;
  return autd3_exec_log_drain(&e->dev[dev].log, out, cap, dropped);
}
void autd3_tcemu_stop(autd3_tcemu_t *e) { atomic_store(&e->stop, true); }
void autd3_tcemu_drop_connections(autd3_tcemu_t *e) { atomic_store(&e->drop, true); }
uint64_t autd3_tcemu_cycles(const autd3_tcemu_t *e) { return atomic_load(&e->cycles); }
void autd3_tcemu_set_state_word(autd3_tcemu_t *e, uint16_t dev, uint16_t w) {
  if (dev < e->cfg.devices) atomic_store(&e->state_word[dev], w);
}
void autd3_tcemu_power_cycle(autd3_tcemu_t *e, uint16_t dev) {
  if (dev < e->cfg.devices) atomic_store(&e->power_cycle_req[dev], true);
}
void autd3_tcemu_set_lost(autd3_tcemu_t *e, uint16_t dev, bool lost) {
  if (dev < e->cfg.devices) atomic_store(&e->lost[dev], lost);
}
autd3_err_t autd3_tcemu_output(autd3_tcemu_t *e, uint16_t dev, autd3_output_state_t *out) {
  if (dev >= e->cfg.devices) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "twincat-emu: output %u: no such device", dev);
  atomic_store(&e->out_req, dev + 1);
  for (int i = 0; i < 2000 && atomic_load(&e->out_req) != 0; i++) autd3__sleep_ns(1000000);
  if (atomic_load(&e->out_req) != 0) return autd3_set_error(AUTD3_E_TIMEOUT, "twincat-emu: output %u: the task loop does not run", dev);
  *out = e->out_snap;
  return AUTD3_OK;
}

/* The state word shown while a power-cycled slave comes back (quarters of AUTD3_TCEMU_POWER_CYCLE_TASKS). */
static uint16_t power_cycle_word(uint32_t left) {
  if (left > AUTD3_TCEMU_POWER_CYCLE_TASKS * 3 / 4) return 0x0001; /* INIT */
  if (left > AUTD3_TCEMU_POWER_CYCLE_TASKS / 2) return 0x0002;     /* PRE-OP */
  return 0x0004;                                             /* SAFE-OP */
}

void autd3_tcemu_conn_stats(const autd3_tcemu_t *e, autd3_tcemu_conn_stats_t *out) {
  out->accepted = atomic_load(&e->st_accepted);
  out->refused = atomic_load(&e->st_refused);
  out->timed_out = atomic_load(&e->st_timed_out);
  out->evicted = atomic_load(&e->st_evicted);
  out->stalled = atomic_load(&e->st_stalled);
}

void autd3_tcemu_free(autd3_tcemu_t *e) {
  if (!e) return;
  if (e->conns)
    for (uint32_t i = 0; i < e->cfg.max_conns; i++)
      if (e->conns[i].fd >= 0) autd3__tcemu_conn_close(e, &e->conns[i], NULL);
  if (e->fuzz.rbuf) autd3__tcemu_conn_close(e, &e->fuzz, NULL);
  if (e->lfd >= 0) autd3__net_close(e->lfd);
  free(e->conns), free(e->pf), free(e->pf_idx);
  free(e->dev), free(e->out_img), free(e->in_img);
  free(e);
}

void autd3__tcemu_task_cycle(autd3_tcemu_t *e, uint64_t now) {
  uint16_t n = e->cfg.devices;
  if (!e->cfg.serve_immediately)
    for (uint32_t i = 0; i < e->cfg.max_conns; i++)
      if (e->conns[i].fd >= 0 && e->conns[i].rlen > 0) {
        autd3__tcemu_process_input(e, &e->conns[i]);
        autd3__tcemu_flush(e, &e->conns[i]); /* replies first, in their own segments (readable captures) */
      }
  for (uint16_t i = 0; i < n; i++) {
    uint8_t rx[AUTD3_RX_FRAME_BYTES];
    if (atomic_exchange_explicit(&e->power_cycle_req[i], false, memory_order_relaxed)) {
      autd3_fw_dev_power_cycle(&e->dev[i], now); /* the firmware restarts: its state is gone (its log and counters stay) */
      autd3_fw_dev_set_sync0(&e->dev[i], now, (uint32_t)e->task_ns);
      e->power_cycle_left[i] = AUTD3_TCEMU_POWER_CYCLE_TASKS;
    }
    uint16_t word = atomic_load_explicit(&e->state_word[i], memory_order_relaxed);
    if (atomic_load_explicit(&e->lost[i], memory_order_relaxed)) {
      /* off the line: no outputs reach it, its inputs in the image stand still, the master flags it not present
       * (0x0100) beside the state it last saw */
      ads_put_u16(e->in_img + e->in_base + 2 * n + 2 * i, (uint16_t)(0x0100u | (word & 0x00FFu)));
      continue;
    }
    if (e->power_cycle_left[i] > 0) { /* coming back: no outputs until OP */
      word = power_cycle_word(e->power_cycle_left[i]--);
    } else {
      autd3_fw_dev_write(&e->dev[i], e->out_img + (size_t)i * AUTD3_TX_FRAME_BYTES, now);
    }
    autd3_fw_dev_read(&e->dev[i], now, rx);
    memcpy(e->in_img + e->in_base + 2 * i, rx, 2);
    ads_put_u16(e->in_img + e->in_base + 2 * n + 2 * i, word);
  }
  int req = atomic_load(&e->out_req);
  if (req > 0 && req <= n) {
    autd3_fw_dev_output_state(&e->dev[req - 1], &e->out_snap);
    atomic_store(&e->out_req, 0);
  }
  uint64_t cycle = atomic_fetch_add(&e->cycles, 1) + 1;
  uint64_t ft = autd3__realtime_ns() / 100 + FILETIME_UNIX_EPOCH;
  for (uint32_t i = 0; i < e->cfg.max_conns; i++)
    if (e->conns[i].fd >= 0) autd3__tcemu_notify(e, &e->conns[i], cycle, ft);
  if (e->fuzz.rbuf) autd3__tcemu_notify(e, &e->fuzz, cycle, ft);
}

void autd3_tcemu_fuzz_feed(autd3_tcemu_t *e, const uint8_t *data, size_t len) {
  autd3_tcemu_conn_t *c = &e->fuzz;
  if (!c->rbuf && autd3__tcemu_conn_alloc(e, c, -1) != AUTD3_OK) return;
  c->dead = false;
  while (len > 0 && !c->dead) {
    size_t k = e->rcap - c->rlen < len ? e->rcap - c->rlen : len;
    memcpy(c->rbuf + c->rlen, data, k);
    c->rlen += k;
    data += k;
    len -= k;
    autd3__tcemu_process_input(e, c);
    if (c->rlen == e->rcap) break;
  }
  autd3__tcemu_task_cycle(e, autd3__now_ns());
  c->wlen = 0; /* replies discarded */
  if (c->dead) {
    c->rlen = 0;
    c->skip = 0;
  }
}
