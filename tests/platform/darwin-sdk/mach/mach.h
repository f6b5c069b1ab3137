/* Stand-in for the macOS SDK's <mach/mach.h>: see ../README. */
#ifndef AUTD3_DARWIN_SDK_MACH_H
#define AUTD3_DARWIN_SDK_MACH_H
#include <pthread.h>
#include <stdint.h>
typedef int kern_return_t;
typedef int integer_t;
typedef int boolean_t;
typedef int policy_t;
typedef unsigned int natural_t;
typedef natural_t mach_port_t;
typedef mach_port_t thread_act_t;
typedef mach_port_t thread_inspect_t;
typedef natural_t mach_msg_type_number_t;
typedef natural_t thread_flavor_t;
typedef integer_t *thread_info_t;
#define KERN_SUCCESS 0
typedef struct time_value {
  integer_t seconds;
  integer_t microseconds;
} time_value_t;
struct thread_basic_info {
  time_value_t user_time;
  time_value_t system_time;
  integer_t cpu_usage;
  policy_t policy;
  integer_t run_state;
  integer_t flags;
  integer_t suspend_count;
  integer_t sleep_time;
};
typedef struct thread_basic_info thread_basic_info_data_t;
#define THREAD_BASIC_INFO 3
#define THREAD_BASIC_INFO_COUNT ((mach_msg_type_number_t)(sizeof(thread_basic_info_data_t) / sizeof(natural_t)))
kern_return_t thread_info(thread_inspect_t target_act, thread_flavor_t flavor, thread_info_t thread_info_out,
                          mach_msg_type_number_t *thread_info_outCnt);
/* <pthread.h> on macOS */
mach_port_t pthread_mach_thread_np(pthread_t);
int pthread_setname_np(const char *);
#endif
