/* Error table and the per-thread detailed message. */
#if defined(__MINGW32__) && !defined(__USE_MINGW_ANSI_STDIO)
/* The C99 vsnprintf that autd3_set_error's format attribute promises (link_driver.h). */
#define __USE_MINGW_ANSI_STDIO 1
#endif
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "autd3/error.h"
#include "autd3/link_driver.h"
#include "core/error_context.h"

/* One message per thread: the bus thread's errors are copied into the
 * caller's thread by the client before it returns them. */
static _Thread_local char last_error[AUTD3__ERROR_MSG_CAP];

const char *autd3_strerror(autd3_err_t err) {
  switch (err) {
    case AUTD3_OK:
      return "success";
#define AUTD3_ERR_MSG_(name, val, msg) \
  case AUTD3_E_##name:                 \
    return msg;
      AUTD3_ERR_MAP(AUTD3_ERR_MSG_)
#undef AUTD3_ERR_MSG_
  }
  return "unknown error";
}

const char *autd3_err_name(autd3_err_t err) {
  switch (err) {
    case AUTD3_OK:
      return "OK";
#define AUTD3_ERR_NAME_(name, val, msg) \
  case AUTD3_E_##name:                  \
    return #name;
      AUTD3_ERR_MAP(AUTD3_ERR_NAME_)
#undef AUTD3_ERR_NAME_
  }
  return "UNKNOWN";
}

const char *autd3_last_error(void) { return last_error; }

autd3_err_t autd3_set_error(autd3_err_t err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return err;
}

autd3_err_t autd3__error_context(autd3_err_t err, const char *fmt, ...) {
  char prefix[sizeof last_error]; /* a prefix as long as the whole message is cut below */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  const size_t cap = sizeof last_error - 1; /* characters, without the NUL */
  size_t p = strlen(prefix), head = p + 2, old = strlen(last_error);
  if (head > cap) head = cap;
  if (old > cap - head) old = cap - head;
  memmove(last_error + head, last_error, old); /* the previous message moves right, in place */
  memcpy(last_error, prefix, p < head ? p : head);
  if (head > p) memcpy(last_error + p, ": ", head - p);
  last_error[head + old] = 0;
  return err;
}
