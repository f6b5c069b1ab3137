/*
 * Adding context to the calling thread's last error message.
 *
 * The pattern "copy autd3_last_error() aside, then autd3_set_error(err,
 * "what we were doing: %s", copy)" needs the copy because the message is one
 * per-thread buffer: passing autd3_last_error() straight to autd3_set_error()
 * makes vsnprintf read the buffer it writes. These helpers are the one way to
 * do it: autd3__error_context() prefixes in place; autd3__error_save() /
 * autd3__error_restore() keep the message across a clean-up step that may set
 * its own (closing what was half opened).
 * Calling context: any thread; no allocation; touches only the caller's message.
 * The save/restore pair is header-only and uses only the public API, so link
 * libraries built outside libautd3 (EtherCrab, SOEM) use it too.
 */
#ifndef AUTD3_CORE_ERROR_CONTEXT_H
#define AUTD3_CORE_ERROR_CONTEXT_H

#include <string.h>

#include "autd3/error.h"
#include "autd3/link_driver.h" /* autd3_set_error */

#if defined(__MINGW32__)
/* as autd3_set_error: libautd3 formats with the C99 printf (%zu), not msvcrt's (src/core/error.c) */
#define AUTD3__PRINTF_(f, a) __attribute__((format(gnu_printf, f, a)))
#elif defined(__GNUC__) || defined(__clang__)
#define AUTD3__PRINTF_(f, a) __attribute__((format(printf, f, a)))
#else
#define AUTD3__PRINTF_(f, a)
#endif

/* The message becomes "<fmt ...>: <the previous message>" (truncated to the
 * message buffer); returns `err`, so `return autd3__error_context(err, "...")`. */
autd3_err_t autd3__error_context(autd3_err_t err, const char *fmt, ...) AUTD3__PRINTF_(2, 3);

/* The size of the thread's message buffer (autd3_last_error()), NUL included. */
#define AUTD3__ERROR_MSG_CAP 512

/* A copy of the thread's message (its text is `msg`, usable in a format). */
typedef struct autd3__error_saved {
  char msg[AUTD3__ERROR_MSG_CAP];
} autd3__error_saved_t;

/* Copy the thread's message aside. */
static inline void autd3__error_save(autd3__error_saved_t *s) {
  const char *m = autd3_last_error();
  size_t n = strlen(m);
  if (n > sizeof s->msg - 1) n = sizeof s->msg - 1;
  memcpy(s->msg, m, n);
  s->msg[n] = 0;
}

/* Make the saved message the thread's message again; returns `err`, so
 * `return autd3__error_restore(&saved, err);` after the clean-up. */
static inline autd3_err_t autd3__error_restore(const autd3__error_saved_t *s, autd3_err_t err) {
  return autd3_set_error(err, "%s", s->msg);
}

#endif
