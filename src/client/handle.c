/*
 * Request handles (client.h "Lifetime"): what an autd3_request_t * is, and how
 * wait/poll/detach tell a live handle from a stale or foreign one.
 *
 * A handle is not an address. It is an integer carried in the pointer:
 *
 *   64-bit:  generation (32 bits) << 32 | client entry + 1 (10 bits) << 7 | slot (7 bits)
 *   32-bit:  generation (15 bits) << 17 | client entry + 1 (10 bits) << 7 | slot (7 bits)
 *
 * The generation counts the sends on a slot; each send publishes it in the
 * slot's `handle` word, and a handle is accepted only while the word holds
 * its generation, so a stale handle is refused until its slot has been
 * reused 2^32 times (2^15 on a 32-bit platform, where the pointer has no room
 * for more). The previous scheme (the address of one of 16 cells per slot)
 * carried only 4 bits of generation: a handle kept across 16 reuses of its
 * slot was accepted and returned another request's result.
 *
 * Without an address the handle needs a way back to its client: the
 * process-wide table below, one entry per open client (a fixed array: no
 * allocation, no lock; entries are taken by CAS at open and given back when
 * the client's memory is freed). An entry remembers the generation its last
 * client reached, and the next client taken into it starts from there, so a
 * handle of a freed client is refused by the generation too, not only by the
 * empty entry. Sending adds nothing to the old cost (one increment, one
 * atomic store); a wait adds one atomic load of the entry.
 */

#include "client/client_internal.h"

#define SLOT_BITS 7u
#define ENTRY_BITS 10u
#define ENTRIES ((1u << ENTRY_BITS) - 1u) /* the field holds entry + 1, never 0: a handle is never NULL */
#if UINTPTR_MAX > 0xFFFFFFFFu
#define GEN_SHIFT 32u
#define GEN_MASK 0xFFFFFFFFu
#else
#define GEN_SHIFT (SLOT_BITS + ENTRY_BITS)
#define GEN_MASK ((1u << (32u - GEN_SHIFT)) - 1u)
#endif
/* Bits between the entry field and the generation (64-bit only): always 0 in a handle. */
#define UNUSED_MASK ((((uintptr_t)1 << GEN_SHIFT) - 1u) & ~(((uintptr_t)1 << (SLOT_BITS + ENTRY_BITS)) - 1u))

/* Reserved while its client is being set up; never a client address. */
static char entry_reserved;
#define RESERVED ((struct autd3_client *)(void *)&entry_reserved)

/* Zero-initialised static atomics are valid (C11 7.17.2.1 allows it for static storage). */
static struct {
  _Atomic(struct autd3_client *) client;
  _Atomic uint32_t next_gen; /* written by the client that leaves the entry, read by the next one */
} entries[ENTRIES];

autd3_err_t autd3__handle_register(struct autd3_client *c) {
  for (uint32_t i = 0; i < ENTRIES; i++) {
    struct autd3_client *expect = NULL;
    if (!atomic_compare_exchange_strong_explicit(&entries[i].client, &expect, RESERVED, memory_order_acquire,
                                                 memory_order_relaxed))
      continue;
    uint32_t gen = atomic_load_explicit(&entries[i].next_gen, memory_order_relaxed);
    for (uint32_t s = 0; s < c->num_slots; s++) {
      c->slots[s].gen = gen;
      atomic_store_explicit(&c->slots[s].handle, (uint64_t)gen << 2 | AUTD3__H_NONE, memory_order_relaxed);
    }
    c->entry = i;
    /* Release: a wait that finds the client also sees its slots' words. */
    atomic_store_explicit(&entries[i].client, c, memory_order_release);
    return AUTD3_OK;
  }
  return autd3_set_error(AUTD3_E_NOMEM, "client: %u clients are open or not yet freed, the most a process may have "
                         "(a closed client is freed once its last request handle is released)", ENTRIES);
}

void autd3__handle_unregister(struct autd3_client *c) {
  if (c->entry == AUTD3__NO_ENTRY) return;
  /* Every slot is free (the last reference is gone): the next client of this
   * entry starts after the highest generation any handle of ours can hold. */
  uint32_t floor = atomic_load_explicit(&entries[c->entry].next_gen, memory_order_relaxed), top = 0;
  for (uint32_t s = 0; s < c->num_slots; s++)
    if (c->slots[s].gen - floor > top) top = c->slots[s].gen - floor; /* sends on slot s (wrapping) */
  atomic_store_explicit(&entries[c->entry].next_gen, floor + top + 1u, memory_order_relaxed);
  atomic_store_explicit(&entries[c->entry].client, NULL, memory_order_release);
  c->entry = AUTD3__NO_ENTRY;
}

autd3_request_t *autd3__handle_of(const struct autd3__slot *r) {
  uintptr_t h = (uintptr_t)(r->gen & GEN_MASK) << GEN_SHIFT | (uintptr_t)(r->client->entry + 1u) << SLOT_BITS | r->index;
  return (autd3_request_t *)(void *)h;
}

autd3_err_t autd3__handle_claim(autd3_request_t *req, const char *fn, struct autd3__slot **out, uint32_t *gen) {
  if (req == NULL) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: NULL request", fn);
  uintptr_t h = (uintptr_t)(void *)req;
  uint32_t field = (uint32_t)(h >> SLOT_BITS) & ENTRIES;
  if ((h & UNUSED_MASK) != 0 || field == 0)
    return autd3_set_error(AUTD3_E_INVALID_HANDLE, "%s: not a request handle (autd3_client_send() gives them)", fn);
  struct autd3_client *c = atomic_load_explicit(&entries[field - 1u].client, memory_order_acquire);
  uint32_t s = (uint32_t)(h & ((1u << SLOT_BITS) - 1u));
  if (c == NULL || c == RESERVED || s >= c->num_slots)
    return autd3_set_error(AUTD3_E_INVALID_HANDLE, "%s: stale request handle: its client was closed and every "
                           "request of it released (the client is freed)", fn);
  struct autd3__slot *r = &c->slots[s];
  uint32_t want = (uint32_t)(h >> GEN_SHIFT) & GEN_MASK;
  /* One CAS from the word we saw: it checks the generation and that nobody
   * else waits on it, so a second wait, a wait after detach or two
   * concurrent waits fail instead of hanging on a semaphore nobody posts. */
  uint64_t cur = atomic_load_explicit(&r->handle, memory_order_acquire);
  for (;;) {
    if (((uint32_t)(cur >> 2) & GEN_MASK) != want)
      return autd3_set_error(AUTD3_E_INVALID_HANDLE, "%s: stale request handle: its request was waited on or "
                             "detached and its slot now carries a later request", fn);
    if ((cur & 3u) != AUTD3__H_OUT)
      return autd3_set_error(AUTD3_E_INVALID_HANDLE, "%s: the request handle was already waited on or detached "
                             "(or is in use by another wait)", fn);
    if (atomic_compare_exchange_weak_explicit(&r->handle, &cur, (cur & ~(uint64_t)3u) | AUTD3__H_WAITING,
                                              memory_order_acq_rel, memory_order_acquire))
      break;
  }
  *out = r;
  *gen = (uint32_t)(cur >> 2);
  return AUTD3_OK;
}

void autd3__handle_unclaim(struct autd3__slot *r, uint32_t gen) {
  atomic_store_explicit(&r->handle, (uint64_t)gen << 2 | AUTD3__H_OUT, memory_order_release);
}
