/* Token-bucket limit for server log lines (see log_limit.h). */
#include "net/log_limit.h"

void autd3__log_limit_init(autd3_log_limit_t *l, uint32_t per_s, uint32_t burst, uint64_t now_ns) {
  l->per_s = per_s;
  l->burst = burst ? burst : (per_s > UINT32_MAX / 10 ? UINT32_MAX : per_s * 10);
  l->last_ns = now_ns;
  l->suppressed = 0;
  l->credit_ns = per_s ? (uint64_t)l->burst * (1000000000ull / per_s) : 0;
}

bool autd3__log_limit_take(autd3_log_limit_t *l, uint64_t now_ns, uint64_t *held) {
  *held = 0;
  if (l->per_s == 0) return true;
  const uint64_t cost = 1000000000ull / l->per_s, cap = (uint64_t)l->burst * cost;
  if (now_ns > l->last_ns) {
    uint64_t add = now_ns - l->last_ns;
    l->credit_ns = add >= cap - l->credit_ns ? cap : l->credit_ns + add;
    l->last_ns = now_ns;
  }
  if (l->credit_ns < cost) {
    l->suppressed++;
    return false;
  }
  l->credit_ns -= cost;
  *held = l->suppressed;
  l->suppressed = 0;
  return true;
}
