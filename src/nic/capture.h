/*
 * Capture files (the EtherCAT option `capture_path`), one mechanism for every
 * EtherCAT link:
 *  - the writer: a classic pcap file (nanosecond magic 0xa1b23c4d, version
 *    2.4, snaplen AUTD3_CAPTURE_SNAPLEN, LINKTYPE_ETHERNET), for a link that
 *    sees its own frames (echocat writes each frame it sends or receives);
 *  - the tap: a passive reader of the adapter (nic.h autd3__nic_open_tap,
 *    both directions, EtherType 0x88A4 only) whose own thread feeds a writer,
 *    for links whose EtherCAT master owns the socket (SOEM, EtherCrab) — the
 *    way tcpdump sees them.
 * The tap can also watch for another master on the chain (autd3__tap_start).
 * The file format is the classic one libpcap/tshark/Wireshark read
 * (https://www.tcpdump.org/manpages/pcap-savefile.5.html), little-endian.
 */
#ifndef AUTD3_NIC_CAPTURE_H
#define AUTD3_NIC_CAPTURE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "autd3/error.h"

#define AUTD3_CAPTURE_SNAPLEN 2048u /* > any Ethernet frame without FCS (1514) */

/* A pcap writer. Zero-initialised = closed (write and close are no-ops). */
typedef struct autd3_capture {
  FILE *f;                 /* NULL when closed */
  _Atomic uint64_t frames; /* records written; readable from any thread */
} autd3_capture_t;

/* Create/truncate `path` and write the file header (this also makes stdio
 * allocate its buffer, so later writes never allocate). Open-time only.
 * Errors: INVALID_ARGUMENT (NULL path), IO (message names the path and why). */
autd3_err_t autd3__capture_open(autd3_capture_t *c, const char *path);
/* Append one frame stamped with wall-clock time `realtime_ns` (records at
 * most AUTD3_CAPTURE_SNAPLEN bytes, and the original length). One thread at
 * a time per writer; no allocation, no lock a user thread holds: fit for a
 * bus thread's cycle. A full disk loses records, never blocks the caller's
 * bus beyond the write itself. */
void autd3__capture_write(autd3_capture_t *c, const uint8_t *frame, size_t len, uint64_t realtime_ns);
/* Flush and close; closed/zeroed writers are fine. Close time only. */
void autd3__capture_close(autd3_capture_t *c);

/* A passive tap feeding a writer from its own thread (Linux only so far). */
typedef struct autd3_capture_tap autd3_capture_tap_t;

/* Open the tap socket on `ifname`, create `path`, start the reader thread.
 * Call before the link sends its first frame: every EtherCAT frame on the
 * adapter from then on, in both directions, goes to the file. Open time only
 * (allocates). Errors: those of autd3__nic_open_tap (NO_INTERFACE,
 * PERMISSION naming CAP_NET_RAW, NOT_BUILT off Linux) and of
 * autd3__capture_open; on error *out is NULL and nothing is left running. */
autd3_err_t autd3__capture_tap_start(const char *ifname, const char *path, autd3_capture_tap_t **out);
/* A tap for a link whose EtherCAT master owns the socket (SOEM, EtherCrab):
 * the capture file and/or a watch for another master on the chain, one
 * thread for both. `master_mac`: the source MAC this link's master sends
 * with; every EtherCAT frame from any other source (bit 0x02 of the first
 * byte ignored: the first ESC sets it, nic/master_guard.h) is another
 * master's and counted (autd3__tap_foreign). Frames of a watch-only tap are
 * read every few milliseconds, not one wake-up per frame. Same errors as
 * autd3__capture_tap_start; INVALID_ARGUMENT if neither is asked for. */
typedef struct autd3_tap_options {
  const char *capture_path;  /* NULL: no file */
  const uint8_t *master_mac; /* NULL: no watch */
  /* RT policy of the tap thread (the link's own thread; the ethercat option's
   * rt_priority/rt_cpu): 0 / -1 = leave. A refusal fails the start with the
   * OS's PERMISSION message. Zero-initialised options leave rt_cpu at 0: set
   * it to -1 unless you mean CPU 0. */
  int rt_priority;
  int rt_cpu;
} autd3_tap_options_t;
autd3_err_t autd3__tap_start(const char *ifname, const autd3_tap_options_t *o, autd3_capture_tap_t **out);
/* Frames from another master seen so far (0 for NULL or without a watch);
 * `mac` (if not NULL and the count is not 0) gets the first one's source.
 * Lock-free, any thread: fit for a bus thread's cycle. */
uint64_t autd3__tap_foreign(autd3_capture_tap_t *tap, uint8_t mac[6]);
/* Frames written so far (0 for NULL). Any thread. */
uint64_t autd3__capture_tap_frames(const autd3_capture_tap_t *tap);
/* Write what the kernel has already queued for the tap (the link's last
 * frames, e.g. its INIT request at close), then stop the thread, close the
 * socket and the file, free. NULL is fine. Close time only. */
void autd3__capture_tap_stop(autd3_capture_tap_t *tap);

#endif
