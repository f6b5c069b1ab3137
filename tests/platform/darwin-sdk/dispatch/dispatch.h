/* Stand-in for the macOS SDK's <dispatch/dispatch.h>: see ../README. */
#ifndef AUTD3_DARWIN_SDK_DISPATCH_H
#define AUTD3_DARWIN_SDK_DISPATCH_H
#include <stdint.h>
typedef struct dispatch_semaphore_s *dispatch_semaphore_t;
typedef uint64_t dispatch_time_t;
#define DISPATCH_TIME_NOW (0ull)
#define DISPATCH_TIME_FOREVER (~0ull)
dispatch_semaphore_t dispatch_semaphore_create(intptr_t value);
intptr_t dispatch_semaphore_wait(dispatch_semaphore_t dsema, dispatch_time_t timeout);
intptr_t dispatch_semaphore_signal(dispatch_semaphore_t dsema);
dispatch_time_t dispatch_time(dispatch_time_t when, int64_t delta);
void dispatch_release(void *object);
#endif
