/* Stand-in for the macOS SDK's <mach/mach_time.h>: see ../README. */
#ifndef AUTD3_DARWIN_SDK_MACH_TIME_H
#define AUTD3_DARWIN_SDK_MACH_TIME_H
#include <stdint.h>
#include "mach/mach.h"
struct mach_timebase_info {
  uint32_t numer;
  uint32_t denom;
};
typedef struct mach_timebase_info *mach_timebase_info_t;
typedef struct mach_timebase_info mach_timebase_info_data_t;
kern_return_t mach_timebase_info(mach_timebase_info_t info);
kern_return_t mach_wait_until(uint64_t deadline);
uint64_t mach_absolute_time(void);
#endif
