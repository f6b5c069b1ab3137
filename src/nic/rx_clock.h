/*
 * When a received frame really arrived, for autd3-emu (the EtherCAT device
 * emulator's server, src/emulation/ethercat/server.c). Compiled into that
 * library, not into libautd3; the OS call lives here, in the NIC seam.
 *
 * The wire model (src/emulation/ethercat/chain.c, docs/emulator.md "Wire
 * model") must time the line from the moment the master's frame reached the
 * interface, not from the moment autd3-emu got round to reading it: otherwise
 * the emulator's own wake-up and scheduling delay counts as line time, and a
 * chain the wire carries looks too long. The kernel stamps every received
 * frame; this reads that stamp for the frame just received and maps it to the
 * monotonic clock of autd3__now_ns(). Where no stamp is available (another
 * socket type, an old kernel, another OS: rx_clock_none.c) the read time is
 * used, as before, and counted.
 */
#ifndef AUTD3_NIC_RX_CLOCK_H
#define AUTD3_NIC_RX_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

typedef struct autd3_rx_clock {
  int fd;
  bool on;                 /* the socket answered the first stamp request */
  uint64_t kernel, read;   /* frames timed by the kernel's stamp / by the read time */
} autd3_rx_clock_t;

/* Ask the kernel to stamp the frames of socket fd from now on (before the
 * first frame arrives: a frame queued earlier carries no stamp). */
void autd3__rx_clock_init(autd3_rx_clock_t *c, int fd);

/* Call right after a frame was received from c->fd: its arrival time in
 * autd3__now_ns() time (never later than now). `nic_rx_ns` is the NIC
 * layer's own arrival stamp of that frame (autd3__nic_rx_ns: the PACKET_MMAP
 * ring's per-frame stamp; 0 = none). It is preferred: a frame taken from the
 * ring was never read through the socket, so SIOCGSTAMPNS knows nothing of it. */
uint64_t autd3__rx_clock_arrival(autd3_rx_clock_t *c, uint64_t nic_rx_ns);

#endif
