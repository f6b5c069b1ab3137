/* Exactly-once harness (see exactly_once.h). Test code: allocates freely. */
#include "reliability/exactly_once.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/emuctl.h"
#include "platform/platform.h"

/* One record per send, one execution count per (device, request). */
typedef struct rec {
  autd3_err_t send_err; /* the send itself failed: never handed to the client */
  autd3_err_t wait_err;
  bool done;
  uint8_t outcome[AUTD3_MAX_DEVICES];
} rec_t;

static rec_t *g_rec;
static size_t g_cap;
static uint8_t *g_exec[AUTD3_MAX_DEVICES]; /* saturating execution count per request index */
static uint64_t g_foreign[AUTD3_MAX_DEVICES]; /* tagged entries with an index never sent */
static uint64_t g_dropped[AUTD3_MAX_DEVICES];
static uint64_t g_boots[AUTD3_MAX_DEVICES];
static uint64_t g_stream_boot[AUTD3_MAX_DEVICES], g_stream_in_boot[AUTD3_MAX_DEVICES];

static void grow(size_t need, size_t ndev) {
  if (need <= g_cap) return;
  size_t nc = g_cap ? g_cap * 2 : 4096;
  while (nc < need) nc *= 2;
  g_rec = realloc(g_rec, nc * sizeof *g_rec);
  if (!g_rec) abort();
  memset(g_rec + g_cap, 0, (nc - g_cap) * sizeof *g_rec);
  for (size_t d = 0; d < ndev; d++) {
    g_exec[d] = realloc(g_exec[d], nc);
    if (!g_exec[d]) abort();
    memset(g_exec[d] + g_cap, 0, nc - g_cap);
  }
  g_cap = nc;
}

/* Drain every device's log once; false if a log could not be read. */
static bool drain_once(const eo_config_t *cfg, size_t ndev, size_t *total) {
  static autd3_exec_entry_t ent[1024];
  *total = 0;
  for (uint16_t d = 0; d < ndev; d++) {
    for (;;) {
      uint64_t dropped = 0;
      size_t n = cfg->drain(cfg->drain_ctx, d, ent, 1024, &dropped);
      if (n == (size_t)-1) return false;
      g_dropped[d] = dropped;
      *total += n;
      for (size_t i = 0; i < n; i++) {
        const autd3_exec_entry_t *e = &ent[i];
        if (e->boot > g_boots[d]) g_boots[d] = e->boot;
        if (e->cmd != AUTD3_CMD_XOR_HASH || (e->tag & 0xFF000000u) != EO_ID_MARK) continue; /* handshake, Reset, ... */
        if (e->boot > g_stream_boot[d]) { /* the stream reached a later boot of this device */
          g_stream_boot[d] = e->boot;
          g_stream_in_boot[d] = 0;
        }
        if (e->boot == g_stream_boot[d]) g_stream_in_boot[d]++;
        size_t idx = e->tag & EO_MAX_REQUESTS;
        if (idx >= g_cap) {
          g_foreign[d]++;
          continue;
        }
        if (g_exec[d][idx] < 255) g_exec[d][idx]++;
      }
      if (n < 1024) break;
    }
  }
  return true;
}

static autd3_frame_t tagged_frame(size_t i) {
  uint32_t id = EO_ID_MARK | (uint32_t)i;
  uint8_t data[8];
  for (int k = 0; k < 4; k++) data[k] = data[4 + k] = (uint8_t)(id >> (8 * k));
  autd3_frame_t f;
  if (autd3_frame_xor_hash(&f, 0, data, sizeof data) != AUTD3_OK) abort();
  return f;
}

static void finish_one(autd3_request_t *req, rec_t *r, uint32_t wait_ms, eo_result_t *res) {
  autd3_response_t resp;
  memset(&resp, 0, sizeof resp);
  /* after one hang, the client is likely stuck: do not wait the full bound for every handle */
  autd3_err_t e = autd3_request_wait_for(req, res->wait_hung ? 1000 : wait_ms, &resp);
  if (e == AUTD3_E_PENDING) {
    /* A request that does not finish within the bound is a hang: count it,
     * give the handle up, and leave it unaccounted. */
    res->wait_hung++;
    autd3_request_detach(req);
    r->wait_err = AUTD3_E_PENDING;
    return;
  }
  r->done = true;
  r->wait_err = e;
  memcpy(r->outcome, resp.outcome, sizeof r->outcome);
}

/* The state checker a user runs beside the client (the reference SDK's
 * spawn_state_check, autd3-perftest's checker): every 100 ms, so an EtherCAT
 * link brings an unplugged or power-cycled device back to OP during the run. */
typedef struct checker {
  pthread_t th;
  autd3_link_t *link;
  atomic_bool stop;
  uint64_t checks, errors;
  uint64_t recoveries;                 /* of the last successful check */
  bool not_op[AUTD3_MAX_DEVICES];      /* a check saw the device in a state other than OP */
} checker_t;

static void *checker_main(void *arg) {
  checker_t *k = arg;
  while (!atomic_load(&k->stop)) {
    autd3_link_status_t st;
    if (autd3_link_check_state(k->link, &st) == AUTD3_OK) {
      k->checks++;
      k->recoveries = st.recoveries;
      for (uint16_t d = 0; d < st.num_devices && d < AUTD3_MAX_DEVICES; d++)
        if (st.state[d] != AUTD3_DEVICE_OP && st.state[d] != AUTD3_DEVICE_UNKNOWN) k->not_op[d] = true;
    } else {
      k->errors++;
    }
    for (int i = 0; i < 10 && !atomic_load(&k->stop); i++) autd3__sleep_ns(10000000u);
  }
  return NULL;
}

void eo_run(autd3_client_t *c, const eo_config_t *cfg, eo_result_t *res) {
  memset(res, 0, sizeof *res);
  setvbuf(stdout, NULL, _IOLBF, 0); /* progress lines survive a ctest timeout */
  size_t ndev = autd3_client_num_devices(c);
  res->ndev = ndev;
  size_t window = cfg->window ? cfg->window : 32;
  uint32_t wait_ms = cfg->wait_ms ? cfg->wait_ms : 30000;
  size_t drain_every = cfg->drain_every ? cfg->drain_every : 100;
  autd3_request_t **win = calloc(window, sizeof *win);
  size_t *win_idx = calloc(window, sizeof *win_idx);
  size_t head = 0, len = 0;
  checker_t chk = {.link = autd3_client_link(c)};
  atomic_init(&chk.stop, false);
  bool chk_on = !cfg->no_state_check && pthread_create(&chk.th, NULL, checker_main, &chk) == 0;
  uint64_t t0 = autd3__now_ns();
  size_t i = 0, consecutive_send_errors = 0;
  for (;; i++) {
    uint64_t el = autd3__now_ns() - t0;
    if (cfg->requests && i >= cfg->requests) break;
    if (cfg->duration_ns && el >= cfg->duration_ns) break;
    if (cfg->stop && *cfg->stop) break;
    if (i > EO_MAX_REQUESTS) break;
    if (res->wait_hung) { /* the client is stuck: stop sending (the send could block for good) */
      fprintf(stderr, "%s: a request did not finish within %u ms; stopping the run\n", cfg->name ? cfg->name : "eo", wait_ms);
      break;
    }
    grow(i + 1, ndev);
    if (cfg->fault) cfg->fault(cfg->fault_ctx, i, el);
    if (len == window) { /* the window is full: finish the oldest */
      finish_one(win[head], &g_rec[win_idx[head]], wait_ms, res);
      head = (head + 1) % window;
      len--;
    }
    autd3_frame_t f = tagged_frame(i);
    autd3_request_t *req = NULL;
    autd3_err_t e = autd3_client_send(c, &f, &req);
    res->sent++;
    if (e != AUTD3_OK) {
      g_rec[i].send_err = e;
      g_rec[i].done = true;
      res->send_errors++;
      if (++consecutive_send_errors > 1000) {
        fprintf(stderr, "%s: the client refuses every send (%s: %s); stopping\n", cfg->name ? cfg->name : "eo",
                autd3_err_name(e), autd3_last_error());
        i++;
        break;
      }
      continue;
    }
    consecutive_send_errors = 0;
    win[(head + len) % window] = req;
    win_idx[(head + len) % window] = i;
    len++;
    if (i % drain_every == drain_every - 1) {
      size_t got;
      if (!drain_once(cfg, ndev, &got)) res->log_unreadable = true;
    }
  }
  while (len > 0) {
    finish_one(win[head], &g_rec[win_idx[head]], wait_ms, res);
    head = (head + 1) % window;
    len--;
  }
  if (chk_on) {
    atomic_store(&chk.stop, true);
    pthread_join(chk.th, NULL);
  }
  free(win);
  free(win_idx);
  autd3_client_stats(c, &res->client);
  autd3_link_stats(autd3_client_link(c), &res->link);
  for (uint16_t d = 0; d < ndev && d < AUTD3_MAX_DEVICES; d++) {
    res->dev_resets[d] = autd3_client_device_resets(c, d);
    res->not_op_seen[d] = chk_on && chk.not_op[d];
  }
  res->recoveries = chk.recoveries;
}

void eo_finish(const eo_config_t *cfg, eo_result_t *res) {
  size_t ndev = res->ndev;
  /* Frames still queued in a device run shortly after the client closed:
   * drain until three rounds in a row find nothing (bounded). */
  int quiet = 0;
  for (int round = 0; round < 100 && quiet < 3; round++) {
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
    size_t got = 0;
    if (!drain_once(cfg, ndev, &got)) {
      res->log_unreadable = true;
      break;
    }
    quiet = got == 0 ? quiet + 1 : 0;
  }
  bool any_outcome = false;
  for (size_t i = 0; i < res->sent; i++)
    for (size_t d = 0; d < ndev; d++)
      if (g_rec[i].outcome[d] != AUTD3_OUTCOME_NONE) any_outcome = true;
  res->old_client = !any_outcome;
  for (size_t i = 0; i < res->sent; i++) {
    rec_t *r = &g_rec[i];
    if (r->done && r->send_err == AUTD3_OK) {
      switch (r->wait_err) {
        case AUTD3_OK: res->completed_ok++; break;
        case AUTD3_E_DEVICE_RESET: res->err_device_reset++; break;
        case AUTD3_E_OUTCOME_UNKNOWN: res->err_outcome_unknown++; break;
        case AUTD3_E_TIMEOUT: res->err_timeout++; break;
        case AUTD3_E_LINK: res->err_link++; break;
        case AUTD3_E_CLOSED: res->err_closed++; break;
        default: res->err_other++; break;
      }
    }
    for (size_t d = 0; d < ndev; d++) {
      eo_dev_summary_t *s = &res->dev[d];
      uint8_t n = g_exec[d][i];
      if (n > 0) s->executed_log++;
      if (n > 1 && s->doubles < 8) s->first_double[s->doubles] = (uint32_t)i;
      if (n > 1) s->doubles++;
      uint8_t o = r->outcome[d];
      bool unaccounted = false;
      if (r->send_err != AUTD3_OK) {
        o = AUTD3_OUTCOME_NOT_EXECUTED; /* never handed to the client */
      } else if (!r->done) {
        unaccounted = true; /* hung */
      } else if (o == AUTD3_OUTCOME_NONE) {
        unaccounted = r->wait_err != AUTD3_OK || !res->old_client;
        if (res->old_client) o = r->wait_err == AUTD3_OK ? AUTD3_OUTCOME_EXECUTED : AUTD3_OUTCOME_NOT_EXECUTED;
      }
      if (unaccounted) s->unaccounted++;
      if (o == AUTD3_OUTCOME_EXECUTED) {
        s->reported_executed++;
        if (n == 0 && s->missing < 8) s->first_missing[s->missing] = (uint32_t)i;
        if (n == 0) s->missing++;
      } else if (o == AUTD3_OUTCOME_NOT_EXECUTED) {
        s->reported_not++;
        if (n > 0 && s->phantom < 8) s->first_phantom[s->phantom] = (uint32_t)i;
        if (n > 0) s->phantom++;
      } else if (o == AUTD3_OUTCOME_UNKNOWN) {
        s->reported_unknown++;
        if (n > 0) s->unknown_executed++;
      }
    }
  }
  for (size_t d = 0; d < ndev; d++) {
    for (uint64_t j = 0; j < g_foreign[d]; j++, res->dev[d].phantom++)
      if (res->dev[d].phantom < 8) res->dev[d].first_phantom[res->dev[d].phantom] = UINT32_MAX; /* never sent */
    res->dev[d].log_dropped = g_dropped[d];
    res->dev[d].boots = g_boots[d];
    res->dev[d].stream_boot = g_stream_boot[d];
    res->dev[d].stream_in_last_boot = g_stream_in_boot[d];
  }
}

uint64_t eo_ok_from(const eo_result_t *res, size_t first) {
  uint64_t n = 0;
  for (size_t i = first; i < res->sent; i++)
    n += g_rec[i].done && g_rec[i].send_err == AUTD3_OK && g_rec[i].wait_err == AUTD3_OK;
  return n;
}

uint8_t eo_outcome(const eo_result_t *res, size_t i, uint16_t d) {
  if (i >= res->sent || d >= res->ndev) return AUTD3_OUTCOME_NONE;
  if (g_rec[i].send_err != AUTD3_OK) return AUTD3_OUTCOME_NOT_EXECUTED;
  return g_rec[i].done ? g_rec[i].outcome[d] : AUTD3_OUTCOME_NONE;
}

unsigned eo_executions(const eo_result_t *res, size_t i, uint16_t d) {
  if (i >= res->sent || d >= res->ndev) return 0;
  return g_exec[d][i] > 2 ? 2u : g_exec[d][i];
}

void eo_print(const eo_config_t *cfg, const eo_result_t *res) {
  const char *nm = cfg->name ? cfg->name : "eo";
  printf("%s: sent %llu completed %llu send-errors %llu hung %llu | DEVICE_RESET %llu OUTCOME_UNKNOWN %llu TIMEOUT %llu "
         "LINK %llu CLOSED %llu other %llu%s\n",
         nm, (unsigned long long)res->sent, (unsigned long long)res->completed_ok, (unsigned long long)res->send_errors,
         (unsigned long long)res->wait_hung, (unsigned long long)res->err_device_reset,
         (unsigned long long)res->err_outcome_unknown, (unsigned long long)res->err_timeout,
         (unsigned long long)res->err_link, (unsigned long long)res->err_closed, (unsigned long long)res->err_other,
         res->old_client ? " (no outcome[] from the client: OK taken as EXECUTED everywhere)" : "");
  printf("%s: client resyncs %llu resets %llu retransmits %llu\n", nm, (unsigned long long)res->client.resyncs,
         (unsigned long long)res->client.resets, (unsigned long long)res->client.retransmits);
  printf("%s: link stale %llu lost %llu of %llu cycles | state checks: recoveries %llu | per device: resets, not-OP seen:", nm,
         (unsigned long long)res->link.stale_cycles, (unsigned long long)res->link.lost_cycles,
         (unsigned long long)res->link.cycles, (unsigned long long)res->recoveries);
  for (size_t d = 0; d < res->ndev; d++) printf(" %u%s", res->dev_resets[d], res->not_op_seen[d] ? "+" : "");
  printf("\n");
  for (size_t d = 0; d < res->ndev; d++) {
    const eo_dev_summary_t *s = &res->dev[d];
    printf("%s: dev %zu executed(log) %llu reported: executed %llu not-executed %llu unknown %llu (of which executed %llu) | "
           "doubles %llu missing %llu phantom %llu unaccounted %llu log-dropped %llu last-boot-in-log %llu "
           "(stream frames in boot %llu: %llu)\n",
           nm, d, (unsigned long long)s->executed_log, (unsigned long long)s->reported_executed,
           (unsigned long long)s->reported_not, (unsigned long long)s->reported_unknown,
           (unsigned long long)s->unknown_executed, (unsigned long long)s->doubles, (unsigned long long)s->missing,
           (unsigned long long)s->phantom, (unsigned long long)s->unaccounted, (unsigned long long)s->log_dropped,
           (unsigned long long)s->boots, (unsigned long long)s->stream_boot, (unsigned long long)s->stream_in_last_boot);
    static const char *kind[3] = {"double", "missing", "phantom"};
    const uint32_t *ids[3] = {s->first_double, s->first_missing, s->first_phantom};
    const uint64_t cnt[3] = {s->doubles, s->missing, s->phantom};
    for (int k = 0; k < 3; k++) {
      if (cnt[k] == 0) continue;
      printf("%s: dev %zu first %s request indices:", nm, d, kind[k]);
      for (uint64_t j = 0; j < cnt[k] && j < 8; j++)
        if (ids[k][j] == UINT32_MAX) printf(" (an id never sent)");
        else printf(" %u", ids[k][j]);
      printf("\n");
    }
  }
  fflush(stdout);
}

bool eo_ok(const eo_result_t *res, char *why, size_t cap) {
  if (res->log_unreadable) return snprintf(why, cap, "a device log could not be read"), false;
  if (res->sent == 0) return snprintf(why, cap, "nothing was sent"), false;
  for (size_t d = 0; d < res->ndev; d++) {
    const eo_dev_summary_t *s = &res->dev[d];
    const char *what = s->doubles ? "ids executed twice"
                       : s->missing ? "ids reported EXECUTED but not in the device's log"
                       : s->phantom ? "ids executed by the device but reported NOT_EXECUTED (or never sent)"
                       : s->unaccounted ? "sends without an outcome for this device"
                       : s->log_dropped ? "log entries dropped (drain more often)"
                                        : NULL;
    if (what) {
      unsigned long long v = s->doubles ? s->doubles : s->missing ? s->missing : s->phantom ? s->phantom
                             : s->unaccounted ? s->unaccounted : s->log_dropped;
      snprintf(why, cap, "device %zu: %llu %s", d, v, what);
      return false;
    }
  }
  return true;
}

/* ---- log sources ---- */

size_t eo_drain_emulator(void *link, uint16_t dev, autd3_exec_entry_t *out, size_t cap, uint64_t *dropped) {
  size_t n = 0;
  if (autd3_emulator_log_drain(link, dev, out, cap, &n, dropped) != AUTD3_OK) return (size_t)-1;
  return n;
}

/* "ok log K dropped D more M n N I:B:SS:CC:RR:TTTTTTTT ..." (src/emulation/ethercat/control.c) */
size_t eo_drain_emuctl(void *path, uint16_t dev, autd3_exec_entry_t *out, size_t cap, uint64_t *dropped) {
  static char reply[40000];
  char cmd[32];
  snprintf(cmd, sizeof cmd, "log %u", (unsigned)dev);
  const char *p = path ? (const char *)path : getenv("AUTD3_EMU_CONTROL");
  size_t total = 0;
  for (;;) {
    if (autd3_emuctl_at(p, cmd, reply, sizeof reply) != 0) {
      fprintf(stderr, "eo: %s: %s\n", cmd, reply);
      return (size_t)-1;
    }
    unsigned k;
    unsigned long long dr;
    int more, off = 0;
    size_t n;
    if (sscanf(reply, "ok log %u dropped %llu more %d n %zu%n", &k, &dr, &more, &n, &off) != 4) {
      fprintf(stderr, "eo: unparsable reply to %s: %.80s\n", cmd, reply);
      return (size_t)-1;
    }
    if (dropped) *dropped = dr;
    const char *q = reply + off;
    for (size_t i = 0; i < n; i++) {
      unsigned idx, boot, seq, c, r, tag;
      int used = 0;
      if (sscanf(q, " %u:%u:%x:%x:%x:%x%n", &idx, &boot, &seq, &c, &r, &tag, &used) != 6) {
        fprintf(stderr, "eo: bad entry in the reply to %s\n", cmd);
        return (size_t)-1;
      }
      q += used;
      if (total < cap) {
        autd3_exec_entry_t *e = &out[total];
        memset(e, 0, sizeof *e);
        e->index = idx;
        e->boot = (uint16_t)boot;
        e->seq = (uint8_t)seq;
        e->cmd = (uint8_t)c;
        e->result = (uint8_t)r;
        e->tag = tag;
        total++;
      } else {
        /* the caller's buffer is full: never happens with cap >= 512 (one reply's batch) */
        fprintf(stderr, "eo: log batch larger than the buffer\n");
        return (size_t)-1;
      }
    }
    if (!more || total + 512 > cap) break;
  }
  return total;
}
