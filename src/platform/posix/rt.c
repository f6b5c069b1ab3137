/* The bus thread's RT policy (platform/rt.h). */
#define _GNU_SOURCE
#include "platform/rt.h"

#ifdef __linux__
#  include <sys/prctl.h>
#endif

#include "platform/platform.h"

autd3_err_t autd3__bus_thread_policy(int priority, int cpu) {
#ifdef __linux__
  (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* best effort: only precision is at stake */
#endif
  if (priority > 0 || cpu >= 0)
    return autd3__thread_set_rt(priority, cpu);
  return AUTD3_OK;
}
