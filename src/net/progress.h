/*
 * Send progress of a server's connection: the one rule by which the Remote
 * server and the emulated TwinCAT runtime drop a client that does not take
 * what it is sent, in time rather than in bytes, so that it holds whatever
 * the kernels buffer.
 *
 * The owner says after each loop turn what the connection owes its peer: 0
 * nothing, or a reason of its own (replies queued that the kernel has not
 * accepted, a request half received, requests arriving ahead of their
 * replies, ...). While something is owed a deadline runs; a new reason
 * restarts it; owing nothing clears it. At the deadline the owner drops the
 * connection and says why (it knows the reason). No allocation, no I/O.
 */
#ifndef AUTD3_NET_PROGRESS_H
#define AUTD3_NET_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct autd3_net_progress {
  uint64_t deadline_ns; /* 0 = nothing owed */
  int owed;             /* the reason the deadline runs for (0 = none) */
} autd3_net_progress_t;

/* After a loop turn at now_ns: what is owed now (0 = nothing) and the time allowed for it. */
void autd3__net_progress_note(autd3_net_progress_t *p, int owed, uint64_t now_ns, uint32_t timeout_ms);
/* Arm the deadline for `owed` from now_ns whatever ran before (a phase that starts its own clock). */
void autd3__net_progress_restart(autd3_net_progress_t *p, int owed, uint64_t now_ns, uint32_t timeout_ms);
/* Whether the deadline passed (false when nothing is owed). */
bool autd3__net_progress_expired(const autd3_net_progress_t *p, uint64_t now_ns);

#endif
