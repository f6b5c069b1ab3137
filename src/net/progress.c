/* Send progress of a server's connection (see progress.h). */
#include "net/progress.h"

void autd3__net_progress_restart(autd3_net_progress_t *p, int owed, uint64_t now_ns, uint32_t timeout_ms) {
  p->owed = owed;
  p->deadline_ns = owed ? now_ns + (uint64_t)timeout_ms * 1000000u : 0;
}

void autd3__net_progress_note(autd3_net_progress_t *p, int owed, uint64_t now_ns, uint32_t timeout_ms) {
  if (owed == 0 || p->deadline_ns == 0 || owed != p->owed) {
    autd3__net_progress_restart(p, owed, now_ns, timeout_ms);
  }
}

bool autd3__net_progress_expired(const autd3_net_progress_t *p, uint64_t now_ns) {
  return p->deadline_ns != 0 && now_ns >= p->deadline_ns;
}
