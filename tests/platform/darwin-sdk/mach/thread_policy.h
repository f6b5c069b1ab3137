/* Stand-in for the macOS SDK's <mach/thread_policy.h>: see ../README. */
#ifndef AUTD3_DARWIN_SDK_THREAD_POLICY_H
#define AUTD3_DARWIN_SDK_THREAD_POLICY_H
#include <stdint.h>
#include "mach/mach.h"
typedef natural_t thread_policy_flavor_t;
typedef integer_t *thread_policy_t;
#define THREAD_TIME_CONSTRAINT_POLICY 2
struct thread_time_constraint_policy {
  uint32_t period;
  uint32_t computation;
  uint32_t constraint;
  boolean_t preemptible;
};
typedef struct thread_time_constraint_policy thread_time_constraint_policy_data_t;
#define THREAD_TIME_CONSTRAINT_POLICY_COUNT \
  ((mach_msg_type_number_t)(sizeof(thread_time_constraint_policy_data_t) / sizeof(integer_t)))
kern_return_t thread_policy_set(thread_act_t thread, thread_policy_flavor_t flavor, thread_policy_t policy_info,
                                mach_msg_type_number_t policy_infoCnt);
#endif
