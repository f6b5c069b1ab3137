/*
 * Rate limit for the log lines of a network server (the Remote server, the
 * emulated TwinCAT runtime): a token bucket, so a connect storm cannot grow
 * the log without bound. A line is let through while the bucket has a token
 * (`burst` at most, refilled at `per_s` per second); the lines held back are
 * counted and the next line let through reports how many.
 */
#ifndef AUTD3_NET_LOG_LIMIT_H
#define AUTD3_NET_LOG_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct autd3_log_limit {
  uint32_t per_s;       /* 0 = unlimited */
  uint32_t burst;
  uint64_t credit_ns;   /* tokens, as time: one token = 1e9 / per_s ns */
  uint64_t last_ns;
  uint64_t suppressed;  /* held back since the last line let through */
} autd3_log_limit_t;

/* per_s 0 = no limit; burst 0 = 10 x per_s. Starts full. */
void autd3__log_limit_init(autd3_log_limit_t *l, uint32_t per_s, uint32_t burst, uint64_t now_ns);
/* May a line go out now? When it may, *held = lines held back before it (then reset), else the count grows. */
bool autd3__log_limit_take(autd3_log_limit_t *l, uint64_t now_ns, uint64_t *held);

#endif
