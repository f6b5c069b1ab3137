/*
 * echocat's bus without a link: the EtherCAT access the `autd3` tool's
 * scan, sii and reg subcommands need (tools/autd3, docs/tools.md), on
 * echocat's own frame slots, SII reader and one-master guard — one
 * mechanism with the link. Internal, not public API.
 *
 * Unlike a link's open, opening the bus changes nothing on the chain: no
 * AL state request, no station address, no SM/FMMU reset. Devices are
 * addressed by ring position (APRD/APWR), so a chain left by another
 * master (or by a crash) is seen as it is.
 * Calling context: one thread per bus; open/close allocate.
 */
#ifndef AUTD3_LINK_ECHOCAT_BUS_H
#define AUTD3_LINK_ECHOCAT_BUS_H

#include <stddef.h>
#include <stdint.h>

#include "autd3/error.h"
#include "autd3/link_echocat.h"

typedef struct echocat echocat_t;

/* Resolve and lock `ifname` (nic/master_guard.h: SECOND_MASTER while another
 * master holds or drives it), open it, start a capture of both directions
 * into `capture_path` (NULL: none) and count the devices (BRD of 0x0000).
 * Errors: those of autd3__nic_resolve / autd3__master_guard_take /
 * autd3__nic_open / autd3__capture_tap_start; NO_DEVICE (nothing answered),
 * DEVICE_COUNT_RANGE. */
autd3_err_t autd3__echocat_bus_open(const char *ifname, autd3_nic_backend_t backend, const char *capture_path, echocat_t **out);
uint16_t autd3__echocat_bus_count(const echocat_t *ec);
/* The adapter's OS name. */
const char *autd3__echocat_bus_ifname(const echocat_t *ec);
/* One datagram (cmd, adp, ado, len bytes of `data`, NULL = zeros); the
 * returned data into `out` (may be NULL), its working counter into *wkc
 * (0 when the frame did not come back). Errors: IO. */
autd3_err_t autd3__echocat_bus_dg(echocat_t *ec, uint8_t cmd, uint16_t adp, uint16_t ado, const void *data, uint16_t len,
                            void *out, uint16_t *wkc);
/* Identity words and SII strings of the device at position `pos`, read the
 * way echocat's open reads them (scan.c autd3__echocat_sii_read). */
typedef struct echocat_bus_identity {
  uint32_t vendor, product, revision, serial;
  char name[33]; /* SII string 1 */
} echocat_bus_identity_t;
autd3_err_t autd3__echocat_bus_identity(echocat_t *ec, uint16_t pos, echocat_bus_identity_t *id);
/* The SII image of device `pos` from word 0: the header and every category
 * up to and including the end marker (0xFFFF), at most `cap` bytes (even).
 * *len = bytes read. Errors: IO (no answer, NACK), TIMEOUT. */
autd3_err_t autd3__echocat_bus_sii(echocat_t *ec, uint16_t pos, uint8_t *buf, size_t cap, size_t *len);
/* Frames the capture wrote (0 without). */
uint64_t autd3__echocat_bus_captured(const echocat_t *ec);
/* Stop the capture (writing what is queued), release the lock, free. NULL is fine. */
void autd3__echocat_bus_close(echocat_t *ec);

#endif
