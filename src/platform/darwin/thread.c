/* macOS threads: pthreads, the Mach time-constraint policy for the bus
 * thread, Mach thread times. macOS has no CPU pinning. */
#include <errno.h>
#include <mach/mach.h>
#include <mach/mach_time.h>
#include <mach/thread_policy.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "platform/platform.h"

struct start {
  void *(*fn)(void *);
  void *arg;
  char name[64];
};

/* macOS names only the calling thread: done first thing in the new one. */
static void *trampoline(void *p) {
  struct start s = *(struct start *)p;
  free(p);
  if (s.name[0]) pthread_setname_np(s.name);
  return s.fn(s.arg);
}

autd3_err_t autd3__thread_start(autd3__thread_t *t, void *(*fn)(void *), void *arg, const char *name) {
  struct start *s = malloc(sizeof *s);
  if (s == NULL) return autd3_set_error(AUTD3_E_NOMEM, "cannot start thread %s: out of memory", name ? name : "");
  s->fn = fn;
  s->arg = arg;
  snprintf(s->name, sizeof s->name, "%s", name ? name : "");
  pthread_t th;
  int rc = pthread_create(&th, NULL, trampoline, s);
  if (rc != 0) {
    free(s);
    return autd3_set_error(AUTD3_E_NOMEM, "cannot start thread %s: %s", name ? name : "", strerror(rc));
  }
  t->handle = (uintptr_t)th;
  return AUTD3_OK;
}

void autd3__thread_join(autd3__thread_t *t) { pthread_join((pthread_t)t->handle, NULL); }

/* A requested priority becomes THREAD_TIME_CONSTRAINT_POLICY (the
 * scheduler's real-time band, what audio threads use; SCHED_FIFO through
 * pthreads is not honoured the same way): computation 1/4 and constraint
 * 1/2 of a nominal 1 ms period, preemptible. The value 1..99 itself has no
 * grading here. */
autd3_err_t autd3__thread_set_rt(int priority, int cpu) {
  if (priority > 0) {
    mach_timebase_info_data_t tb;
    mach_timebase_info(&tb);
    uint32_t ms = (uint32_t)(1000000ull * tb.denom / tb.numer); /* 1 ms in Mach ticks */
    thread_time_constraint_policy_data_t p = {.period = ms, .computation = ms / 4, .constraint = ms / 2, .preemptible = 1};
    kern_return_t kr = thread_policy_set(pthread_mach_thread_np(pthread_self()), THREAD_TIME_CONSTRAINT_POLICY,
                                         (thread_policy_t)&p, THREAD_TIME_CONSTRAINT_POLICY_COUNT);
    if (kr != KERN_SUCCESS)
      return autd3_set_error(AUTD3_E_PERMISSION, "cannot set the time-constraint thread policy (kern_return %d)", (int)kr);
  }
  if (cpu >= 0)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "cannot pin thread to CPU %d: macOS has no CPU affinity", cpu);
  return AUTD3_OK;
}

uint64_t autd3__thread_cpu_ns_of(const autd3__thread_t *t) {
  thread_basic_info_data_t info;
  mach_msg_type_number_t n = THREAD_BASIC_INFO_COUNT;
  mach_port_t port = pthread_mach_thread_np((pthread_t)t->handle);
  if (thread_info(port, THREAD_BASIC_INFO, (thread_info_t)&info, &n) != KERN_SUCCESS) return 0;
  return ((uint64_t)info.user_time.seconds + (uint64_t)info.system_time.seconds) * 1000000000ull +
         ((uint64_t)info.user_time.microseconds + (uint64_t)info.system_time.microseconds) * 1000ull;
}

/* Timer coalescing on macOS is per process (App Nap, QoS); the
 * time-constraint policy above already exempts the bus thread. */
void autd3__thread_precise_timers(void) {}
