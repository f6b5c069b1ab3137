/*
 * The bus thread's real-time policy, with one owner: the client applies it
 * to its own bus thread once, at start (src/client/seqcmd/bus.c), from
 * autd3_client_config_t's rt_priority/rt_cpu. A link never changes the policy
 * of the thread that calls its vtable; the ethercat option's rt_priority/
 * rt_cpu apply to threads a link owns (EtherCrab's tx/rx thread, the capture
 * taps), through autd3__thread_set_rt.
 */
#ifndef AUTD3_PLATFORM_RT_H
#define AUTD3_PLATFORM_RT_H

#include "autd3/error.h"

/* For the calling thread (the bus thread): exact timer wake-ups always
 * (Linux: a timer slack of 1 ns instead of the default 50 µs, which every
 * absolute-deadline sleep of a link's cycle would otherwise overshoot by),
 * then SCHED_FIFO `priority` (0 = leave) and CPU `cpu` (-1 = leave).
 * Errors: those of autd3__thread_set_rt (PERMISSION with a message); the
 * timer slack is applied even then. */
autd3_err_t autd3__bus_thread_policy(int priority, int cpu);

#endif
