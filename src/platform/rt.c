/* The bus thread's RT policy (platform/rt.h): one owner, written once on the
 * seam's primitives, so it is the same on every OS. */
#include "platform/rt.h"

#include "platform/platform.h"

autd3_err_t autd3__bus_thread_policy(int priority, int cpu) {
  autd3__thread_precise_timers(); /* best effort: only precision is at stake */
  if (priority > 0 || cpu >= 0)
    return autd3__thread_set_rt(priority, cpu);
  return AUTD3_OK;
}
