/*
 * One master per chain (docs/echocat.md "One master per chain"), the one
 * mechanism every EtherCAT link (echocat, SOEM, EtherCrab) uses at open:
 *  1. an advisory per-interface lock (platform.h autd3__filelock_*), taken
 *     before any traffic and held until close, so a second master process on
 *     this host is refused at once, naming the holder's pid; the kernel drops
 *     it when the holder dies, kill -9 included;
 *  2. a bounded listen (AUTD3_MASTER_LISTEN_NS) for EtherCAT frames nobody
 *     here has sent yet: a master on another host, or one that does not take
 *     the lock, that is already cycling on the segment.
 * Both refuse with AUTD3_E_SECOND_MASTER and a message naming the interface.
 * A master that starts after the listen can only be seen in the traffic
 * itself: echocat checks the source MAC of every frame it receives against
 * the per-open source MAC the guard gives it (autd3__master_guard_mac).
 */
#ifndef AUTD3_NIC_MASTER_GUARD_H
#define AUTD3_NIC_MASTER_GUARD_H

#include <stdbool.h>
#include <stdint.h>

#include "autd3/error.h"
#include "nic/nic.h"

/* How long open listens for a foreign master before its first frame: 20 SYNC0
 * periods at the default 1 ms, so a master cycling at >= 100 Hz sends at
 * least one frame meanwhile (and each frame's reply comes back too). */
#define AUTD3_MASTER_LISTEN_NS 20000000ull

typedef struct autd3_master_guard autd3_master_guard_t;

/* Lock `ifname` for this open and listen for a foreign master (through a
 * short-lived `backend` NIC handle). `who` prefixes messages ("echocat").
 * Errors: SECOND_MASTER (lock held: names the interface, the holder's pid
 * when known and the lock file; or foreign frames heard: names the interface
 * and their source MAC), and those of autd3__nic_open (NO_INTERFACE,
 * PERMISSION, ...) and of the lock (IO). On error *out is NULL and nothing is
 * held. Open-time only (allocates, blocks ~AUTD3_MASTER_LISTEN_NS). */
autd3_err_t autd3__master_guard_take(const char *ifname, autd3_nic_backend_t backend, const char *who,
                                     autd3_master_guard_t **out);
/* A source MAC for this open's frames: locally administered prefix
 * 0C:EC:A7, three bytes unique to this process and open, so two echocat
 * masters never share one. */
void autd3__master_guard_mac(const autd3_master_guard_t *g, uint8_t mac[6]);
/* Give the interface up (lock released). NULL is fine. */
void autd3__master_guard_release(autd3_master_guard_t *g);

/* Was this Ethernet frame sent with source MAC `mine`? Bit 0x02 of the first
 * byte is ignored: the first ESC of a chain sets it in every frame it returns
 * (ETG.1000.4; SOEM and EtherCrab rely on it too). */
static inline bool autd3__frame_from(const uint8_t *frame, const uint8_t mine[6]) {
  return (frame[6] & (uint8_t)~0x02u) == (mine[0] & (uint8_t)~0x02u) && frame[7] == mine[1] && frame[8] == mine[2] &&
         frame[9] == mine[3] && frame[10] == mine[4] && frame[11] == mine[5];
}

/* The one message every EtherCAT link gives when another master's frames
 * reached the chain after open (`when`: "mid-run", "during open"): sets
 * SECOND_MASTER "<who>: another EtherCAT master appeared on interface <ifname>
 * <when>: <frames> EtherCAT frame(s) from source MAC <mac> that <who> did not
 * send; one master per chain: the link stops" and returns it. */
autd3_err_t autd3__foreign_master_error(const char *who, const char *ifname, const char *when, uint64_t frames,
                                        const uint8_t mac[6]);

/* "aa:bb:cc:dd:ee:ff" into out (18 bytes). */
void autd3__mac_format(const uint8_t mac[6], char out[18]);

#endif
