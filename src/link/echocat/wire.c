/*
 * echocat: what a 100 Mbit/s EtherCAT line carries per cycle (docs/echocat.md
 * "The wire limit"). The frames are the ones cycle.c builds: per group of two
 * devices one LWR of their outputs + an FPRD of the reference clock, and one
 * read frame (FRMW of the reference time, one LRD of every input, BRD of the
 * AL status; an FPRD of each device's AL status while a device is missing). Used by open (refuse a chain the cycle cannot carry, naming the
 * cycle that would) and by the cycle engine (which plan, when to send).
 */
#define _GNU_SOURCE
#include "link/echocat/echocat_internal.h"

/* An Ethernet frame of len bytes (header + payload, no FCS) on 100 Mbit/s:
 * padded to 60, + FCS 4, preamble + SFD 8, inter-frame gap 12; 80 ns a byte
 * (IEEE 802.3 clause 3 and 4; the same model as the emulator's --wire). */
uint64_t autd3__echocat_frame_wire_ns(size_t len) { return (uint64_t)((len < 60 ? 60 : len) + 24) * 80u; }

/* Ethernet header 14 + EtherCAT header 2 + per datagram 10 header + data + 2 WKC. */
#define DG(len) (10u + (len) + 2u)

uint64_t autd3__echocat_out_wire_ns(uint16_t n) {
  uint64_t t = 0;
  for (uint16_t first = 0; first < n; first = (uint16_t)(first + 2)) {
    unsigned m = n - first < 2 ? 1u : 2u;
    t += autd3__echocat_frame_wire_ns(14u + 2u + DG(m * OUT_BYTES) + DG(8u));
  }
  return t;
}

/* The healthy read frame (one LRD of every input). While a device is missing
 * or out of OP the read also carries an FPRD of each device's AL status
 * (cycle.c read_send): 14 bytes more per device, which the budget does not
 * reserve: the chain is degraded then. */
uint64_t autd3__echocat_read_wire_ns(uint16_t n) {
  return autd3__echocat_frame_wire_ns(14u + 2u + DG(8u) + DG((unsigned)n * IN_BYTES) + DG(2u));
}

/* The line time one cycle needs: every output frame and the read frame back to
 * back, plus the outputs' way through the chain to the last device (HOP_MAX_NS
 * per device). The return line carries the same frames shifted by the ring
 * time, so it needs no budget of its own. */
uint64_t autd3__echocat_cycle_wire_ns(uint16_t n) {
  return autd3__echocat_out_wire_ns(n) + autd3__echocat_read_wire_ns(n) + (uint64_t)n * HOP_MAX_NS;
}

/* The shortest send cycle (a multiple of the 500 µs EtherCAT cycle base) that carries n devices. */
uint64_t autd3__echocat_min_cycle_ns(uint16_t n) {
  uint64_t w = autd3__echocat_cycle_wire_ns(n);
  return (w / 500000u + 1u) * 500000u;
}
