/*
 * Raw NIC I/O: the only contract EtherCAT code has with the operating system's
 * network stack. "Send these bytes / give me the next EtherCAT frame / MAC /
 * list adapters". Everything EtherCAT-specific is portable code above this.
 *
 * Back ends: nic_afpacket.c (Linux AF_PACKET, default on Linux) and
 * nic_pcap.c (libpcap: macOS, Windows/Npcap, also Linux), chosen at open.
 * Adapter names have no length limit. On Windows an adapter is named as
 * Npcap lists it ("\Device\NPF_{GUID}") or by its description or friendly
 * name (autd3__nic_open says how a name is matched).
 * Used by echocat (master side) and by autd3-emu (device side).
 *
 * Receive only returns EtherCAT frames (EtherType 0x88A4) that were not sent
 * by this handle itself; other traffic is dropped and counted.
 * Thread-safety: one thread sends and receives on a handle at a time.
 */
#ifndef AUTD3_NIC_NIC_H
#define AUTD3_NIC_NIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autd3/error.h"
#include "autd3/link_echocat.h" /* autd3_nic_backend_t */

#define AUTD3_ETHERTYPE_ECAT 0x88A4
#define AUTD3_NIC_MAX_FRAME 1518

typedef struct autd3_nic autd3_nic_t;

/* Open `ifname` with `backend` (AUTD3_NIC_AUTO: AF_PACKET on Linux, libpcap
 * elsewhere). Linux: `ifname` is the interface name. Windows: the Npcap name
 * (exactly), else the adapter whose description or friendly name equals
 * `ifname` (ignoring case), else the one whose description or friendly name
 * contains it (ignoring case); several candidates at one step is
 * NO_INTERFACE listing them.
 * Errors: NO_INTERFACE (no such adapter, or ambiguous), PERMISSION (message names
 * CAP_NET_RAW/CAP_NET_ADMIN and how to grant them: `sudo setcap
 * cap_net_raw,cap_net_admin+ep <binary>` or run as root), NOT_BUILT (pcap
 * back end missing), IO. */
autd3_err_t autd3__nic_open(const char *ifname, autd3_nic_backend_t backend, autd3_nic_t **out);
/* The OS name of the adapter `ifname` names (matched as autd3__nic_open
 * does), allocated (free()); same errors. Lets a caller key per-adapter state
 * (locks, messages) on one name whichever way the user named it. */
autd3_err_t autd3__nic_resolve(const char *ifname, char **os_name);
/* Open `ifname` as a passive tap (for capture files, src/nic/capture.h):
 * recv returns the EtherCAT frames of BOTH directions, including the ones
 * other sockets of this process send on the adapter (the tap itself never
 * sends). Linux: AF_PACKET; elsewhere libpcap without a direction filter.
 * Same errors as autd3__nic_open (NOT_BUILT: no libpcap to load). */
autd3_err_t autd3__nic_open_tap(const char *ifname, autd3_nic_t **out);
/* Send one Ethernet frame (header included); frames shorter than 60 bytes are sent as is. */
autd3_err_t autd3__nic_send(autd3_nic_t *nic, const uint8_t *frame, size_t len);
/* Receive the next EtherCAT frame into buf; waits until the monotonic
 * `deadline_ns` (0 = do not wait). AUTD3_E_TIMEOUT if none arrived. */
autd3_err_t autd3__nic_recv(autd3_nic_t *nic, uint8_t *buf, size_t cap, size_t *len, uint64_t deadline_ns);
/* Adapter MAC address. */
void autd3__nic_mac(const autd3_nic_t *nic, uint8_t mac[6]);
/* Pollable file descriptor (-1 if the back end has none). */
int autd3__nic_fd(const autd3_nic_t *nic);
/* Frames received and dropped because they were not EtherCAT or were our own. */
uint64_t autd3__nic_ignored(const autd3_nic_t *nic);
/* When the frame last returned by autd3__nic_recv arrived, on the monotonic
 * clock of autd3__now_ns(), never earlier than it really arrived (a lower
 * bound of elapsed time may rest on it); 0 when the back end cannot tell
 * (then the caller's own clock reading after recv is the bound). The RX ring
 * stamps every frame as the kernel stores it; the fallback does not. */
uint64_t autd3__nic_rx_ns(const autd3_nic_t *nic);
/* How frames reach us, for diagnostics: e.g. "AF_PACKET, PACKET_MMAP RX ring
 * (TPACKET_V2, 256 frames)", "AF_PACKET, recvfrom" (the fallback; also forced
 * by AUTD3_NIC_RING=0 in the environment), "libpcap". Static text. */
const char *autd3__nic_io_path(const autd3_nic_t *nic);
/* Make this handle's sends visible to the adapter's capture taps
 * (autd3__nic_open_tap): AF_PACKET sends bypass the qdisc for latency, and
 * such frames never reach a tap; a link that captures calls this once after
 * open (its sends then pay the qdisc's few µs). No-op where sends are
 * visible already (libpcap). Open time only. */
void autd3__nic_sends_to_taps(autd3_nic_t *nic);
void autd3__nic_close(autd3_nic_t *nic);

/* For a master library that opens the adapter itself (the SOEM link): the
 * OS name of the adapter `ifname` names (matched as autd3__nic_open does)
 * into `os_name` (`cap` bytes), checked as that library will use it:
 * NO_INTERFACE (none, ambiguous, or the name does not fit), PERMISSION (raw
 * EtherCAT frames refused; with `promiscuous`, where the library switches
 * the adapter to promiscuous mode through the OS itself (SOEM's Linux port:
 * SIOCSIFFLAGS), the OS refusing this process that change), NO_DEVICE (the
 * adapter is down). Messages start with `who` and name what grants a refused
 * permission. */
autd3_err_t autd3__nic_probe(const char *ifname, const char *who, bool promiscuous, char *os_name, size_t cap);
/* The adapter (OS name) is a loopback one; false if unknown. */
bool autd3__nic_is_loopback(const char *os_name);

/* Adapters that are up (loopback excluded), names of any length: name[i] is
 * what autd3__nic_open takes, desc[i] a human description ("" if none; on
 * Windows Npcap's description and the friendly name; on Linux the driver and
 * the MAC address), down[i] true for an adapter the OS says is down (only in
 * autd3__nic_names_all's list). Free with autd3__nic_names_free (also after
 * an error). */
typedef struct autd3_nic_names {
  size_t count;
  char **name;
  char **desc;
  bool *down;
} autd3_nic_names_t;
autd3_err_t autd3__nic_names(autd3_nic_names_t *out);
/* The same with the adapters that are down too (loopback excluded): what `autd3 adapters` lists. */
autd3_err_t autd3__nic_names_all(autd3_nic_names_t *out);
void autd3__nic_names_free(autd3_nic_names_t *l);
/* The services table's fixed-size form (link_driver.h nic_list, version 1):
 * at most `cap` names; names of 32 bytes or more are left out. */
autd3_err_t autd3__nic_list(char (*names)[32], size_t cap, size_t *count);

#endif
