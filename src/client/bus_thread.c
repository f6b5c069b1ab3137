/*
 * The bus thread's frame, the same for every protocol (docs/architecture.md
 * §2, §7): start it and wait for its handshake; in it, apply the RT policy
 * (its one owner), run the protocol's handshake and cycle loop (through the
 * table), then tear down: refuse new pushes, fail what the protocol had in
 * flight and what is still queued, wake blocked senders. Also the link's
 * reset evidence, which both protocols read every cycle.
 */
#include <string.h>

#include "client/client_internal.h"
#include "platform/rt.h"

/* Copy the thread's (thread-local) message, after `prefix`, where user
 * threads can read it. No formatting: the loop's rules hold here too. */
static void keep_message(char *dst, size_t cap, const char *prefix) {
  size_t p = strlen(prefix);
  if (p >= cap) p = cap - 1;
  memcpy(dst, prefix, p);
  const char *m = autd3_last_error();
  size_t ml = strlen(m);
  if (ml > cap - 1 - p) ml = cap - 1 - p;
  memcpy(dst + p, m, ml);
  dst[p + ml] = 0;
}

/* The loop has ended (close or link error): refuse new pushes, fail what is
 * in flight (the protocol's) and what is still queued, and wake blocked senders. */
static void teardown(struct autd3_client *c, autd3_err_t why) {
  c->dead_reason = why;
  atomic_store(&c->dead, true);
  uint8_t w = why == AUTD3_E_LINK ? AUTD3__WHY_LINK : AUTD3__WHY_CLOSED;
  c->proto->stop(c, why, w);
  autd3__ring_close(c);
  for (struct autd3__slot *r; (r = autd3__ring_peek(c)) != NULL;) { /* bounded: ≤ 127 entries */
    autd3__ring_pop(c);
    /* Queued, never staged: not executed anywhere. */
    for (size_t d = 0; d < c->num_devices; d++) {
      r->outcome[d] = AUTD3_OUTCOME_NOT_EXECUTED;
      autd3__slot_blame(r, d, why, w, 0);
    }
    autd3__client_complete(c, r, why);
  }
  autd3__sem_post(&c->free_sem); /* the "baton": see request.c slot_acquire() */
}

static void *bus_main(void *arg) {
  struct autd3_client *c = arg;
  const autd3__protocol_t *p = c->proto;
  /* The one owner of the bus thread's RT policy (platform/rt.h): links never change the thread that cycles them. */
  autd3_err_t err = autd3__bus_thread_policy(c->cfg.rt_priority, c->cfg.rt_cpu);
  if (err != AUTD3_OK) keep_message(c->hs_msg, sizeof c->hs_msg, "client bus thread: rt_priority/rt_cpu: ");
  if (err == AUTD3_OK && (err = p->handshake(c)) != AUTD3_OK) {
    keep_message(c->hs_msg, sizeof c->hs_msg, p->handshake_fail);
    err = AUTD3_E_LINK;
  }
  c->hs_err = err;
  autd3__sem_post(&c->hs_done);
  if (err != AUTD3_OK) return NULL;

  autd3_err_t why = p->run(c);
  /* A failed cycle: the link's message is copied before any completion so
   * the waiters can re-raise it on their own threads. */
  if (why == AUTD3_E_LINK) keep_message(c->link_msg, sizeof c->link_msg, "");
  /* The final CPU figure, for stats read after the thread has stopped (while
   * it runs, autd3_client_stats() reads the thread's CPU clock itself, so the
   * cycle pays no clock_gettime for it). */
  atomic_store_explicit(&c->st_cpu_ns, autd3__thread_cpu_ns(), memory_order_relaxed);
  teardown(c, why);
  return NULL;
}

autd3_err_t autd3__bus_start(struct autd3_client *c) {
  autd3_err_t err = autd3__thread_start(&c->thread, bus_main, c, "autd3-bus");
  if (err != AUTD3_OK) return err;
  c->thread_started = true;
  autd3__sem_wait(&c->hs_done);
  if (c->hs_err == AUTD3_OK) return AUTD3_OK;
  /* The bus thread has returned without entering its loop. */
  autd3__thread_join(&c->thread);
  c->thread_started = false;
  return autd3_set_error(c->hs_err, "%s", c->hs_msg);
}

void autd3__bus_stop(struct autd3_client *c) {
  atomic_store(&c->closing, true);
  /* The bus thread notices `closing` at its next cycle boundary (≤ one bus
   * cycle), fails everything in flight or queued with CLOSED and returns. */
  if (c->thread_started) autd3__thread_join(&c->thread);
  c->thread_started = false;
}

/* ---- the link's reset evidence (bus thread) --------------------------------------------------- */

void autd3__bus_evidence_baseline(struct autd3_client *c) {
  c->bus.resets_any = atomic_load_explicit(&c->link->device_resets_any, memory_order_acquire);
  for (size_t d = 0; d < c->num_devices; d++)
    c->bus.resets[d] = atomic_load_explicit(&c->link->device_resets[d], memory_order_acquire);
}

size_t autd3__bus_reset_devices(struct autd3_client *c, uint8_t out[AUTD3_MAX_DEVICES]) {
  uint32_t any = atomic_load_explicit(&c->link->device_resets_any, memory_order_acquire);
  if (any == c->bus.resets_any) return 0;
  c->bus.resets_any = any;
  size_t k = 0;
  for (size_t d = 0; d < c->num_devices; d++) {
    uint32_t r = atomic_load_explicit(&c->link->device_resets[d], memory_order_acquire);
    if (r == c->bus.resets[d]) continue;
    c->bus.resets[d] = r;
    out[k++] = (uint8_t)d;
  }
  return k;
}
