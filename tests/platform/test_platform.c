/* The platform seam's contracts (src/platform/platform.h), the same cases on
 * every back end: natively, under qemu-user (aarch64), and the Windows one
 * under wine (win_seam.sh). Only the seam, the harness and libc: nothing
 * here may include an OS header. No timing is asserted beyond ordering
 * (a sleep never ends before its deadline). */
#include <stdatomic.h>

#include "autd3/error.h"
#include "harness/test.h"
#include "platform/platform.h"

TEST(monotonic_clock_never_goes_back) {
  uint64_t prev = autd3__now_ns();
  for (int i = 0; i < 100000; i++) {
    uint64_t t = autd3__now_ns();
    ASSERT_GE(t, prev);
    prev = t;
  }
  /* Wall clock: after 2020-01-01, in ns since the Unix epoch. */
  ASSERT_GT(autd3__realtime_ns(), 1577836800ull * 1000000000ull);
}

TEST(sleep_until_never_returns_early) {
  for (int i = 0; i < 20; i++) {
    uint64_t deadline = autd3__now_ns() + 200000u * (uint64_t)(i % 4);
    autd3__sleep_until_ns(deadline, i % 2 ? 50000u : 0u);
    ASSERT_GE(autd3__now_ns(), deadline);
  }
  uint64_t t0 = autd3__now_ns();
  autd3__sleep_ns(1000000);
  ASSERT_GE(autd3__now_ns(), t0 + 1000000);
  autd3__sleep_until_ns(0, 0); /* in the past: returns */
}

TEST(semaphore_counts) {
  autd3__sem_t s;
  ASSERT_OK(autd3__sem_init(&s, 2));
  ASSERT_TRUE(autd3__sem_trywait(&s));
  ASSERT_OK(autd3__sem_wait(&s));
  ASSERT_FALSE(autd3__sem_trywait(&s));
  autd3__sem_post(&s);
  autd3__sem_post(&s);
  ASSERT_TRUE(autd3__sem_trywait(&s));
  ASSERT_OK(autd3__sem_timedwait_ns(&s, 0));
  ASSERT_FALSE(autd3__sem_trywait(&s));
  autd3__sem_destroy(&s);
}

TEST(semaphore_timeout_is_pending) {
  autd3__sem_t s;
  ASSERT_OK(autd3__sem_init(&s, 0));
  uint64_t t0 = autd3__now_ns();
  ASSERT_ERR(autd3__sem_timedwait_ns(&s, 20000000), AUTD3_E_PENDING);
  ASSERT_GE(autd3__now_ns(), t0 + 20000000); /* waited its timeout, did not give up early */
  ASSERT_ERR(autd3__sem_timedwait_ns(&s, 0), AUTD3_E_PENDING);
  autd3__sem_destroy(&s);
}

struct ping {
  autd3__sem_t go, done;
  autd3__mutex_t mu;
  atomic_int counter;
  int plain; /* guarded by mu */
};

static void *pinger(void *p) {
  struct ping *x = p;
  for (int i = 0; i < 1000; i++) {
    if (autd3__sem_wait(&x->go) != AUTD3_OK) return NULL;
    autd3__mutex_lock(&x->mu);
    x->plain++;
    autd3__mutex_unlock(&x->mu);
    atomic_fetch_add(&x->counter, 1);
    autd3__sem_post(&x->done);
  }
  return p;
}

/* Posts from another thread wake a blocked and a timed waiter; the mutex
 * serialises both threads' increments. */
TEST(threads_semaphores_mutex) {
  struct ping x = {0};
  ASSERT_OK(autd3__sem_init(&x.go, 0));
  ASSERT_OK(autd3__sem_init(&x.done, 0));
  ASSERT_OK(autd3__mutex_init(&x.mu));
  autd3__thread_t th;
  ASSERT_OK(autd3__thread_start(&th, pinger, &x, "autd3-test"));
  for (int i = 0; i < 1000; i++) {
    autd3__sem_post(&x.go);
    autd3__mutex_lock(&x.mu);
    x.plain++;
    autd3__mutex_unlock(&x.mu);
    if (i % 2)
      ASSERT_OK(autd3__sem_wait(&x.done));
    else
      ASSERT_OK(autd3__sem_timedwait_ns(&x.done, 60ull * 1000000000ull));
    ASSERT_EQ(atomic_load(&x.counter), i + 1);
  }
  autd3__thread_join(&th);
  ASSERT_EQ(x.plain, 2000);
  autd3__mutex_destroy(&x.mu);
  autd3__sem_destroy(&x.go);
  autd3__sem_destroy(&x.done);
}

static void *holder(void *p) {
  autd3__mutex_t *m = p;
  autd3__mutex_lock(m);
  autd3__sleep_ns(1000000);
  autd3__mutex_unlock(m);
  return NULL;
}

TEST(mutex_trylock) {
  autd3__mutex_t m;
  ASSERT_OK(autd3__mutex_init(&m));
  ASSERT_TRUE(autd3__mutex_trylock(&m));
  autd3__thread_t th;
  ASSERT_OK(autd3__thread_start(&th, holder, &m, "autd3-holder"));
  autd3__sleep_ns(1000000);
  autd3__mutex_unlock(&m); /* the holder takes it now (or later) */
  autd3__thread_join(&th);
  ASSERT_TRUE(autd3__mutex_trylock(&m)); /* released by the holder */
  autd3__mutex_unlock(&m);
  autd3__mutex_destroy(&m);
}

static void *burn(void *p) {
  autd3__sem_t *s = p;
  volatile uint64_t x = 0;
  while (!autd3__sem_trywait(s)) x = x + 1;
  return NULL;
}

TEST(thread_cpu_time_and_hints) {
  uint64_t c0 = autd3__thread_cpu_ns();
  volatile uint64_t x = 0;
  for (uint64_t i = 0; i < 50000000ull && autd3__thread_cpu_ns() == c0; i++) x = x + i;
  ASSERT_GT(autd3__thread_cpu_ns(), c0);
  autd3__sem_t stop;
  ASSERT_OK(autd3__sem_init(&stop, 0));
  autd3__thread_t th;
  ASSERT_OK(autd3__thread_start(&th, burn, &stop, "autd3-burn"));
  /* Read from outside while it runs (0 means "cannot tell": allowed). */
  uint64_t seen = 0;
  for (int i = 0; i < 2000 && seen == 0; i++) {
    autd3__sleep_ns(1000000);
    seen = autd3__thread_cpu_ns_of(&th);
  }
  autd3__sem_post(&stop);
  autd3__thread_join(&th);
  autd3__sem_destroy(&stop);
  /* Hints: best effort, never crash; RT may be refused, but only with a message. */
  autd3__thread_precise_timers();
  autd3_err_t e = autd3__thread_set_rt(0, -1);
  ASSERT_OK(e);
}
