/*
 * echocat's portable EtherCAT pieces: the frame/datagram codec and the
 * distributed-clock arithmetic (register numbers: src/ecat/regs.h) (the pcap capture writer is
 * the shared one, src/nic/capture.h). Pure code, unit-tested in tests/echocat
 * and fuzzed in fuzz/fuzz_ecat_parse.c.
 *
 * Wire format: ETG.1000.4 (frame, datagram, commands, working counter) and
 * the Beckhoff ESC datasheet section II (registers, distributed clocks).
 * Calling context: any thread; no allocation.
 */
#ifndef AUTD3_ECHOCAT_ECAT_H
#define AUTD3_ECHOCAT_ECAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ecat/regs.h"
#include "nic/capture.h"
#include "nic/nic.h"

/* Command codes, ESC registers and AL states: the shared map (src/ecat/regs.h). */

#define ECAT_ETH_HDR 14
#define ECAT_HDR 2           /* EtherCAT header after the EtherType */
#define ECAT_DG_HDR 10       /* datagram header */
#define ECAT_DG_OVERHEAD 12  /* header + working counter */
#define ECAT_MIN_FRAME 60    /* Ethernet minimum without FCS: we pad (§1.1) */
#define ECAT_MAX_DATA (AUTD3_NIC_MAX_FRAME - ECAT_ETH_HDR - ECAT_HDR) /* 1502 here, 1498 on the wire max */
#define ECAT_MAX_PAYLOAD 1498 /* 1500-byte Ethernet payload minus the EtherCAT header */

/* A frame under construction / as sent. */
typedef struct ecat_frame {
  uint8_t buf[AUTD3_NIC_MAX_FRAME];
  uint16_t len;  /* bytes used, Ethernet header included, before padding */
  uint16_t last; /* offset of the last datagram header (0 = none yet) */
  uint8_t ndg;   /* datagrams */
  uint8_t idx;   /* idx of every datagram of this frame (replies are matched on it) */
} ecat_frame_t;

/* A parsed datagram: offsets into the frame buffer. */
typedef struct ecat_dg {
  uint8_t cmd, idx;
  uint16_t adp, ado;
  uint16_t len;  /* data bytes */
  uint16_t off;  /* data offset in the frame */
  uint16_t wkc;
} ecat_dg_t;

/* Start a frame: broadcast destination, source `mac`, EtherType 0x88A4, all datagrams tagged `idx`. */
void ecat_frame_init(ecat_frame_t *f, const uint8_t mac[6], uint8_t idx);
/* Append a datagram (data NULL = zeros). Returns the data offset in f->buf, or 0 if it does not fit. */
uint16_t ecat_dg_add(ecat_frame_t *f, uint8_t cmd, uint16_t adp, uint16_t ado, const void *data, uint16_t len);
/* Bytes still free for one more datagram's data (0 if none fits). */
uint16_t ecat_frame_room(const ecat_frame_t *f);
/* Write the EtherCAT length field and pad to 60 bytes; returns the wire length. */
size_t ecat_frame_finish(ecat_frame_t *f);
/* Parse a received frame: at most `max` datagrams into `dgs`. Returns the count, or -1 if the frame is
 * not a well-formed type-1 EtherCAT frame (short, bad length field, datagram chain overruns). */
int ecat_parse(const uint8_t *frame, size_t len, ecat_dg_t *dgs, int max);
/* Whether `reply` is the answer to `sent` (wire length `sent_len`): same length, same datagram
 * chain (cmd, idx, len per datagram). Fills dgs (at least sent->ndg entries). */
bool ecat_reply_matches(const ecat_frame_t *sent, size_t sent_len, const uint8_t *reply, size_t len, ecat_dg_t *dgs);

/* Little-endian helpers. */
static inline uint16_t ecat_get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t ecat_get32(const uint8_t *p) { return (uint32_t)ecat_get16(p) | ((uint32_t)ecat_get16(p + 2) << 16); }
static inline uint64_t ecat_get64(const uint8_t *p) { return (uint64_t)ecat_get32(p) | ((uint64_t)ecat_get32(p + 4) << 32); }
static inline void ecat_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static inline void ecat_put32(uint8_t *p, uint32_t v) { ecat_put16(p, (uint16_t)v), ecat_put16(p + 2, (uint16_t)(v >> 16)); }
static inline void ecat_put64(uint8_t *p, uint64_t v) { ecat_put32(p, (uint32_t)v), ecat_put32(p + 4, (uint32_t)(v >> 32)); }

/* ---- distributed clocks (§8) ---- */

/* EtherCAT system time counts from 2000-01-01T00:00:00Z. */
#define ECAT_EPOCH_OFFSET_NS 946684800000000000ull

/* 0x092C is sign-magnitude: bits 30..0 magnitude, bit 31 = negative (as autd3-link-soem reads it). */
int64_t ecat_dc_diff_decode(uint32_t v);
/* Propagation delays of a line of n slaves from their port-0/port-1 receive times latched by one frame
 * (§8.1, line case): delay[0] = 0, delay[k] = delay[k-1] + ((rt1[k-1]-rt0[k-1]) - (rt1[k]-rt0[k]))/2,
 * where the last slave has no child (its port-1 time is ignored). 32-bit wrap-safe. */
void ecat_dc_line_delays(size_t n, const uint32_t *rt0, const uint32_t *rt1, uint32_t *delay);
/* First SYNC0 pulse as the AUTD3 SOEM link programs it: floor((t + 100 ms)/cycle)·cycle + cycle + shift. */
uint64_t ecat_dc_sync0_start(uint64_t systime, uint32_t cycle_ns, int32_t shift_ns);
/* Smallest start + k·period (k >= 0) that is >= t. */
uint64_t ecat_dc_next_edge(uint64_t start, uint64_t period, uint64_t t);


#endif
