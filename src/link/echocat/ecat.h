/*
 * echocat's portable EtherCAT pieces: the frame/datagram codec (register numbers: src/ecat/regs.h;
 * distributed-clock arithmetic: src/ecat/dc.h) (the pcap capture writer is
 * the shared one, src/nic/capture.h). Pure code, unit-tested in tests/echocat
 * and fuzzed in fuzz/fuzz_echocat_reply.c.
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

#include "ecat/dc.h"
#include "ecat/regs.h"
#include "nic/capture.h"
#include "nic/nic.h"

/* Command codes, ESC registers and AL states: the shared map (src/ecat/regs.h). */

#define ECAT_ETH_HDR 14
#define ECAT_HDR 2           /* EtherCAT header after the EtherType */
#define ECAT_DG_HDR 10       /* datagram header */
#define ECAT_DG_OVERHEAD 12  /* header + working counter */
#define ECAT_MIN_FRAME 60    /* Ethernet minimum without FCS: we pad (IEEE 802.3; ETG.1000.4) */
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
void autd3__ecat_frame_init(ecat_frame_t *f, const uint8_t mac[6], uint8_t idx);
/* Append a datagram (data NULL = zeros). Returns the data offset in f->buf, or 0 if it does not fit. */
uint16_t autd3__ecat_dg_add(ecat_frame_t *f, uint8_t cmd, uint16_t adp, uint16_t ado, const void *data, uint16_t len);
/* Bytes still free for one more datagram's data (0 if none fits). */
uint16_t autd3__ecat_frame_room(const ecat_frame_t *f);
/* Write the EtherCAT length field and pad to 60 bytes; returns the wire length. */
size_t autd3__ecat_frame_finish(ecat_frame_t *f);
/* Parse a received frame: at most `max` datagrams into `dgs`. Returns the count, or -1 if the frame is
 * not a well-formed type-1 EtherCAT frame (short, bad length field, datagram chain overruns). */
int autd3__ecat_parse(const uint8_t *frame, size_t len, ecat_dg_t *dgs, int max);
/* Whether `reply` is the answer to `sent` (wire length `sent_len`): same length, same datagram
 * chain (cmd, idx, len per datagram). Fills dgs (at least sent->ndg entries). */
bool autd3__ecat_reply_matches(const ecat_frame_t *sent, size_t sent_len, const uint8_t *reply, size_t len, ecat_dg_t *dgs);

/* Little-endian helpers. */
/* Whose inputs a read frame carries (docs/reliability.md "A fault costs only
 * its device"): one LRD of every device's inputs came back with count
 * `lrd_wkc`, and an FPRD of each device's AL status in the same frame with
 * count al_wkc[d] and AL status al[d]. A device answers the LRD iff its SM3
 * and FMMU are set up (SAFE-OP or OP, ETG.1000.6), and every device that
 * answered its FPRD saw the LRD in the same pass; so if the LRD counted
 * exactly the devices that answered in SAFE-OP or OP, the ones in OP have
 * their inputs in the frame and valid[d] is true for them (a device in
 * SAFE-OP takes no outputs: its inputs say nothing of the stream). Any other
 * count cannot be attributed: every valid[d] false. Returns the number valid. */
uint16_t autd3__ecat_inputs_valid(uint16_t n, uint16_t lrd_wkc, const uint8_t *al, const uint16_t *al_wkc, bool *valid);

static inline uint16_t ecat_get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t ecat_get32(const uint8_t *p) { return (uint32_t)ecat_get16(p) | ((uint32_t)ecat_get16(p + 2) << 16); }
static inline uint64_t ecat_get64(const uint8_t *p) { return (uint64_t)ecat_get32(p) | ((uint64_t)ecat_get32(p + 4) << 32); }
static inline void ecat_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static inline void ecat_put32(uint8_t *p, uint32_t v) { ecat_put16(p, (uint16_t)v), ecat_put16(p + 2, (uint16_t)(v >> 16)); }
static inline void ecat_put64(uint8_t *p, uint64_t v) { ecat_put32(p, (uint32_t)v), ecat_put32(p + 4, (uint32_t)(v >> 32)); }

/* Distributed clocks: the shared arithmetic (src/ecat/dc.h). */

#endif
