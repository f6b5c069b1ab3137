/* POSIX threads, SCHED_FIFO and CPU affinity. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "autd3/link_driver.h"
#include "platform/platform.h"

autd3_err_t autd3__thread_start(autd3__thread_t *t, void *(*fn)(void *), void *arg, const char *name) {
  pthread_t th;
  int rc = pthread_create(&th, NULL, fn, arg);
  if (rc != 0) return autd3_set_error(AUTD3_E_NOMEM, "cannot start thread %s: %s", name ? name : "", strerror(rc));
#ifdef __linux__
  if (name) {
    char n[16];
    strncpy(n, name, sizeof n - 1);
    n[sizeof n - 1] = 0;
    pthread_setname_np(th, n);
  }
#endif
  t->handle = (uintptr_t)th;
  return AUTD3_OK;
}

void autd3__thread_join(autd3__thread_t *t) { pthread_join((pthread_t)t->handle, NULL); }

autd3_err_t autd3__thread_set_rt(int priority, int cpu) {
  if (priority > 0) {
    struct sched_param sp = {.sched_priority = priority};
    int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    if (rc != 0)
      return autd3_set_error(rc == EPERM ? AUTD3_E_PERMISSION : AUTD3_E_INVALID_ARGUMENT,
                             "cannot set SCHED_FIFO priority %d: %s (needs CAP_SYS_NICE or an rtprio limit)", priority,
                             strerror(rc));
  }
#ifdef __linux__
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (rc != 0) return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "cannot pin thread to CPU %d: %s", cpu, strerror(rc));
  }
#else
  (void)cpu;
#endif
  return AUTD3_OK;
}

uint64_t autd3__thread_cpu_ns_of(const autd3__thread_t *t) {
  clockid_t cid;
  struct timespec ts;
  if (pthread_getcpuclockid((pthread_t)t->handle, &cid) != 0 || clock_gettime(cid, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void autd3__thread_precise_timers(void) {
#ifdef __linux__
  /* The default 50 us slack would blur every cycle's wake-up. */
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
#endif
}
