/* Error table and the per-thread detailed message. */
#if defined(__MINGW32__) && !defined(__USE_MINGW_ANSI_STDIO)
/* The C99 vsnprintf that autd3_set_error's format attribute promises (link_driver.h). */
#define __USE_MINGW_ANSI_STDIO 1
#endif
#include <stdarg.h>
#include <stdio.h>

#include "autd3/error.h"
#include "autd3/link_driver.h"

/* One message per thread: the bus thread's errors are copied into the
 * caller's thread by the client before it returns them. */
static _Thread_local char last_error[512];

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
