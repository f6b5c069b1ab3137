/*
 * Adding context to the calling thread's last error message.
 *
 * The pattern "copy autd3_last_error() aside, then autd3_set_error(err,
 * "what we were doing: %s", copy)" needs the copy because the message is one
 * per-thread buffer: passing autd3_last_error() straight to autd3_set_error()
 * makes vsnprintf read the buffer it writes. This helper does it in place.
 * Calling context: any thread; no allocation; touches only the caller's message.
 */
#ifndef AUTD3_CORE_ERROR_CONTEXT_H
#define AUTD3_CORE_ERROR_CONTEXT_H

#include "autd3/error.h"

#if defined(__GNUC__) || defined(__clang__)
#define AUTD3__PRINTF_(f, a) __attribute__((format(printf, f, a)))
#else
#define AUTD3__PRINTF_(f, a)
#endif

/* The message becomes "<fmt ...>: <the previous message>" (truncated to the
 * message buffer); returns `err`, so `return autd3__error_context(err, "...")`. */
autd3_err_t autd3__error_context(autd3_err_t err, const char *fmt, ...) AUTD3__PRINTF_(2, 3);

#endif
