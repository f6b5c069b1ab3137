/*
 * The few OS services the tools use beside libautd3's public API, in one
 * place (tool_os.c: POSIX or Win32), so the tools' own sources stay
 * portable: a monotonic clock, a sleep, one helper thread, loading a link
 * library at run time, and the interrupt signals. (The library's own seam,
 * src/platform, is internal; autd3-perftest links only the public API.)
 */
#ifndef AUTD3_TOOLS_TOOL_OS_H
#define AUTD3_TOOLS_TOOL_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

uint64_t tool_now_ns(void);
void tool_sleep_ms(uint32_t ms);

typedef struct tool_thread {
  void *handle;
} tool_thread_t;
bool tool_thread_start(tool_thread_t *t, void *(*fn)(void *), void *arg);
void tool_thread_join(tool_thread_t *t);

/* Load shared library `stem` ("autd3-link-soem": libautd3-link-soem.so,
 * autd3-link-soem.dll) and return its function `sym`, or NULL with the
 * reason in `why`. The library stays loaded. */
void (*tool_dl_fn(const char *stem, const char *sym, char *why, size_t why_cap))(void);

/* Call `fn` on Ctrl-C (SIGINT); `fn` must be async-signal-safe (on Windows
 * it runs on a thread of the C runtime). */
void tool_on_sigint(void (*fn)(int));
/* Whether stdout is a terminal (a view redrawn in place) rather than a pipe or file. */
bool tool_isatty_stdout(void);
/* A server's: `fn` on SIGINT and SIGTERM, SIGPIPE ignored where it exists. */
void tool_on_stop_signals(void (*fn)(int));
/* Be sent SIGTERM when the parent process dies (Linux only; false elsewhere, or
 * when the parent is already gone). */
bool tool_exit_with_parent(void);

#endif
