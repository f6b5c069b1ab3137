/*
 * The remote server's log (server_internal.h): one line per event, through the token bucket of
 * net/log_limit.h, to the option's sink or stderr. Every other file of the server logs through it.
 */
#include "remote_server/server_internal.h"

void autd3__rsrv_log(autd3_remote_server_t *s, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  uint64_t held = 0;
  if (!autd3__log_limit_take(&s->log_limit, autd3__now_ns(), &held)) return;
  if (held) {
    size_t k = strlen(line);
    snprintf(line + k, sizeof line - k, " [%llu earlier line(s) not logged: rate limit]", (unsigned long long)held);
  }
  if (s->o.log) s->o.log(s->o.log_ctx, line);
  else fprintf(stderr, "autd3-remote-server: %s\n", line);
}
