/* Shared between the Windows back-end files of the platform seam (only
 * src/platform/win includes it, after <windows.h>). */
#ifndef AUTD3_PLATFORM_WIN_INTERNAL_H
#define AUTD3_PLATFORM_WIN_INTERNAL_H

#include <stdint.h>

/* Kernel + user FILETIMEs (100 ns units) to ns. */
uint64_t autd3__win_filetime_ns(const FILETIME *kernel, const FILETIME *user);
/* Close the calling thread's sleep timer, if it made one (time.c). */
void autd3__win_sleep_timer_close(void);

#endif
