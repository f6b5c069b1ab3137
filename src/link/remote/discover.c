/*
 * autd3_remote_discover(): browse both DNS-SD service types of Remote servers
 * (autd3-rs-link-remote 0.9.0 src/discovery.rs: "_autd3._tcp.local." and
 * "_autd3-sim._tcp.local.", TXT keys "wire", "sdk", "ctrl") with one-shot
 * mDNS queries, and join the PTR -> SRV + TXT -> A answers that come back
 * within the timeout. The codec is net/mdns.c; the socket is net.h's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "autd3/link_remote.h"
#include "core/error_context.h"
#include "net/mdns.h"
#include "net/net.h"
#include "platform/platform.h"

#define MAX_FOUND 32

static const char *const svc[2] = {"_autd3._tcp.local", "_autd3-sim._tcp.local"};

typedef struct found {
  char fullname[MDNS_NAME_MAX];
  int kind; /* index in svc */
  bool srv;
  char target[MDNS_NAME_MAX];
  uint16_t port;
  uint8_t from[4]; /* sender of the SRV: the address if no A record comes */
  char wire[8], sdk[48], ctrl[8];
} found_t;

typedef struct acc {
  found_t f[MAX_FOUND];
  size_t nf;
  struct {
    char name[MDNS_NAME_MAX];
    uint8_t a[4];
  } h[MAX_FOUND];
  size_t nh;
  uint8_t from[4];
} acc_t;

/* The kind whose service type `name` is "<instance>.<type>" of, or -1. */
static int kind_of(const char *name) {
  size_t n = strlen(name);
  for (int k = 0; k < 2; k++) {
    size_t t = strlen(svc[k]);
    if (n > t + 1 && name[n - t - 1] == '.' && autd3__mdns_name_eq(name + n - t, svc[k])) return k;
  }
  return -1;
}

static found_t *entry(acc_t *a, const char *fullname) {
  int k = kind_of(fullname);
  if (k < 0) return NULL;
  for (size_t i = 0; i < a->nf; i++)
    if (autd3__mdns_name_eq(a->f[i].fullname, fullname)) return &a->f[i];
  if (a->nf == MAX_FOUND) return NULL;
  found_t *f = &a->f[a->nf++];
  memset(f, 0, sizeof *f);
  snprintf(f->fullname, sizeof f->fullname, "%s", fullname);
  f->kind = k;
  return f;
}

static void on_record(void *ctx, const mdns_record_t *r) {
  acc_t *a = ctx;
  if (r->is_question) return;
  found_t *f;
  switch (r->type) {
    case MDNS_TYPE_PTR:
      if ((autd3__mdns_name_eq(r->name, svc[0]) || autd3__mdns_name_eq(r->name, svc[1])) && r->ttl != 0) (void)entry(a, r->target);
      break;
    case MDNS_TYPE_SRV:
      if ((f = entry(a, r->name)) != NULL) {
        f->srv = true;
        f->port = r->port;
        snprintf(f->target, sizeof f->target, "%s", r->target);
        memcpy(f->from, a->from, 4);
      }
      break;
    case MDNS_TYPE_TXT:
      if ((f = entry(a, r->name)) != NULL) {
        (void)autd3__mdns_txt_get(r->txt, r->txt_len, "wire", f->wire, sizeof f->wire);
        (void)autd3__mdns_txt_get(r->txt, r->txt_len, "sdk", f->sdk, sizeof f->sdk);
        (void)autd3__mdns_txt_get(r->txt, r->txt_len, "ctrl", f->ctrl, sizeof f->ctrl);
      }
      break;
    case MDNS_TYPE_A:
      for (size_t i = 0; i < a->nh; i++)
        if (autd3__mdns_name_eq(a->h[i].name, r->name)) {
          memcpy(a->h[i].a, r->a, 4); /* the latest answer wins */
          return;
        }
      if (a->nh < MAX_FOUND) {
        snprintf(a->h[a->nh].name, sizeof a->h[a->nh].name, "%s", r->name);
        memcpy(a->h[a->nh++].a, r->a, 4);
      }
      break;
    default: break;
  }
}

static void ask(int fd) {
  uint8_t q[512];
  for (int k = 0; k < 2; k++) {
    size_t n = autd3__mdns_build_query(q, sizeof q, 0, svc[k], MDNS_TYPE_PTR);
    if (n) (void)autd3__net_udp_send4(fd, q, n, NULL, MDNS_PORT);
  }
}

static int by_kind_then_name(const void *x, const void *y) {
  const autd3_remote_found_t *a = x, *b = y;
  if (a->simulator != b->simulator) return a->simulator - b->simulator;
  return strcmp(a->instance, b->instance);
}

autd3_err_t autd3_remote_discover(uint32_t timeout_ms, autd3_remote_found_t *out, size_t cap, size_t *n) {
  if (n == NULL || (out == NULL && cap)) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3_remote_discover: NULL argument");
  *n = 0;
  if (timeout_ms < 1 || timeout_ms > 60000)
    return autd3_set_error(AUTD3_E_INVALID_OPTION, "autd3_remote_discover: timeout_ms = %u; must be 1..60000", timeout_ms);
  int fd = -1;
  autd3_err_t err = autd3__net_mdns_open(&fd);
  if (err != AUTD3_OK) return autd3__error_context(err, "Remote discovery");
  acc_t *a = calloc(1, sizeof *a);
  if (a == NULL) {
    autd3__net_close(fd);
    return autd3_set_error(AUTD3_E_NOMEM, "Remote discovery: out of memory");
  }
  const uint64_t t0 = autd3__now_ns(), end = t0 + (uint64_t)timeout_ms * 1000000u;
  uint64_t again = t0 + (uint64_t)timeout_ms * 1000000u / 3; /* one repeat: a multicast datagram may be lost */
  ask(fd);
  static uint8_t pkt[9000];
  for (;;) {
    uint64_t now = autd3__now_ns();
    if (now >= end) break;
    if (again && now >= again) {
      ask(fd);
      again = 0;
    }
    uint64_t next = again && again < end ? again : end;
    autd3_net_poll_t p = {.fd = fd, .events = AUTD3_NET_IN};
    if (autd3__net_poll(&p, 1, (int)((next - now) / 1000000u + 1)) <= 0) continue;
    long r;
    uint16_t port;
    while ((r = autd3__net_udp_recv4(fd, pkt, sizeof pkt, a->from, &port)) > 0)
      (void)autd3__mdns_parse(pkt, (size_t)r, on_record, a); /* records before a malformed byte still count */
  }
  autd3__net_close(fd);
  size_t k = 0;
  for (size_t i = 0; i < a->nf && k < cap; i++) {
    found_t *f = &a->f[i];
    if (!f->srv) continue;
    autd3_remote_found_t *o = &out[k];
    memset(o, 0, sizeof *o);
    const uint8_t *ip = f->from;
    for (size_t h = 0; h < a->nh; h++)
      if (autd3__mdns_name_eq(a->h[h].name, f->target)) ip = a->h[h].a;
    size_t il = strlen(f->fullname) - strlen(svc[f->kind]) - 1;
    snprintf(o->instance, sizeof o->instance, "%.*s", (int)il, f->fullname);
    snprintf(o->host, sizeof o->host, "%.*s", (int)sizeof o->host - 1, f->target); /* truncated if longer */
    snprintf(o->address, sizeof o->address, "%u.%u.%u.%u:%u", ip[0], ip[1], ip[2], ip[3], f->port);
    o->port = f->port;
    o->wire = (uint8_t)strtoul(f->wire, NULL, 10);
    snprintf(o->sdk, sizeof o->sdk, "%s", f->sdk);
    o->control_port = (uint16_t)strtoul(f->ctrl, NULL, 10);
    o->simulator = f->kind == 1;
    k++;
  }
  free(a);
  qsort(out, k, sizeof *out, by_kind_then_name);
  *n = k;
  if (k == 0)
    return autd3_set_error(AUTD3_E_TIMEOUT,
                           "Remote discovery: no AUTD3 server answered within %u ms (is it on the same link, with --advertise?)",
                           timeout_ms);
  return AUTD3_OK;
}
