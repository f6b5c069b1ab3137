/*
 * Distributed-clock arithmetic, once for every EtherCAT link (echocat, SOEM,
 * EtherCrab) and the recovery helper (src/ecat/recovery.h): decoding 0x092C,
 * propagation delays of a line, the system-time offset that makes a clock
 * agree with the reference, the offset that re-bases a power-cycled reference
 * clock, and SYNC0 start times. Numbers and rules from the Beckhoff ESC
 * datasheet section I ("Distributed Clocks": system time, offset 0x0920,
 * delay 0x0928, SYNC0 start 0x0990) and ETG.1000.4; the first-SYNC0 rule as
 * the AUTD3 SOEM link programs it (crate autd3-rs-link-soem 0.6.1). Pure
 * code: any thread, no allocation, no OS header. Unit-tested in tests/ecat.
 */
#ifndef AUTD3_ECAT_DC_H
#define AUTD3_ECAT_DC_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

/* EtherCAT system time counts from 2000-01-01T00:00:00Z. */
#define ECAT_EPOCH_OFFSET_NS 946684800000000000ull
/* How far ahead of a slave's current system time a SYNC0 start is programmed:
 * the write must reach the slave before the start time passes (every AUTD3
 * link uses 100 ms). */
#define ECAT_DC_START_AHEAD_NS 100000000ull

/* 0x092C is sign-magnitude: bits 30..0 magnitude, bit 31 = negative (as autd3-link-soem reads it). */
int64_t autd3__ecat_dc_diff_decode(uint32_t v);
/* Propagation delays of a line of n slaves from their port-0/port-1 receive times latched by one frame
 * (SOEM v2.0.0 src/ec_dc.c ecx_configdc, line case; ETG.1000.4 distributed clocks): delay[0] = 0, delay[k] = delay[k-1] + ((rt1[k-1]-rt0[k-1]) - (rt1[k]-rt0[k]))/2,
 * where the last slave has no child (its port-1 time is ignored). 32-bit wrap-safe. */
void autd3__ecat_dc_line_delays(size_t n, const uint32_t *rt0, const uint32_t *rt1, uint32_t *delay);
/* First SYNC0 pulse as the AUTD3 SOEM link programs it: floor((t + 100 ms)/cycle)·cycle + cycle + shift. */
uint64_t autd3__ecat_dc_sync0_start(uint64_t systime, uint32_t cycle_ns, int32_t shift_ns);
/* Smallest start + k·period (k >= 0) that is >= t. */
uint64_t autd3__ecat_dc_next_edge(uint64_t start, uint64_t period, uint64_t t);

/* System-time offset (0x0920) for a slave whose local time read `local` at the
 * moment the reference's system time read `ref_system`, `delay` ns upstream of
 * it (0x0928; 0 when both values were read at the same instant of the slave's
 * clock): its system time (local + offset) then equals the reference's plus
 * the delay, i.e. the reference's time as it reaches the slave. Modulo 2^64. */
uint64_t autd3__ecat_dc_offset(uint64_t ref_system, uint64_t local, uint32_t delay);
/* Re-base a reference clock that restarted (power cycle) while the other
 * clocks kept the old base: its current offset `ref_offset`, its system time
 * `ref_system` and another slave's system time `other_system` read at the same
 * instant (old base); returns the offset that continues the old base. */
uint64_t autd3__ecat_dc_rebase_offset(uint64_t ref_offset, uint64_t ref_system, uint64_t other_system);
/* The SYNC0 start for a slave that re-joins a running chain: the next edge of
 * the chain's grid `grid_start` + k·cycle at least ECAT_DC_START_AHEAD_NS after
 * the slave's system time `systime`, so its pulses coincide with the others'.
 * grid_start 0 (unknown): the first-pulse rule autd3__ecat_dc_sync0_start(). */
uint64_t autd3__ecat_dc_sync0_restart(uint64_t grid_start, uint32_t cycle_ns, int32_t shift_ns, uint64_t systime);


/* A proven lower bound of the DC system time (echocat's one-image rule rests on it): a reference
 * read `dc` that came back at host time t says the system time at host time now >= t is at least
 * dc + (now - t)·(1 - 1/ECAT_DC_RATE_DIV). The factor is the slowest the reference clock may run
 * against the host's: a bound that assumed the host's rate would run ahead of a slower reference
 * by the difference, without end (it is only ever replaced by a stronger read, and a slow
 * clock's reads never are), and everything aimed by it would drift away from the real edges.
 * 1/500 = 2000 ppm: far beyond a quartz's ±100 ppm and the emulator's --drift-ppm (<= 1000);
 * the price is a bound that lags the clock by 2 µs per ms since its read. */
#define ECAT_DC_RATE_DIV 500u
uint64_t autd3__ecat_dc_lower(uint64_t lb_dc, uint64_t lb_t, uint64_t now);
/* Host ns from `now` until autd3__ecat_dc_lower(lb_dc, lb_t, ·) reaches `target` (0: it has). */
uint64_t autd3__ecat_dc_lower_wait(uint64_t lb_dc, uint64_t lb_t, uint64_t now, uint64_t target);
/* Keep the stronger of the bound (*lb_dc, *lb_t) (none yet: *lb_t == 0) and a new read `dc`
 * that came back at host time t_recv. Returns true if the read replaced it. */
bool autd3__ecat_dc_bound_update(uint64_t *lb_dc, uint64_t *lb_t, uint64_t dc, uint64_t t_recv);

#endif
