/*
 * The EtherCAT device emulator served on a network interface (autd3-emu,
 * docs/emulator.md): a chain of emulated devices (emu.h) answering the frames
 * that arrive on the interface (raw socket, src/nic), so that unmodified
 * EtherCAT masters (SOEM/pysoem, EtherCrab, echocat) can drive it, plus a
 * local control socket whose text commands inject faults and read state
 * (docs/emulator.md "Control socket"). tools/emu is only its command line.
 *
 * One thread: wait (src/net) on the interface, the control socket and its
 * clients → process each frame through the chain → send the reply now, or
 * at its due time when the wire model or a reply delay is on.
 *
 * Not thread-safe, except autd3_emu_server_stop (async-signal-safe).
 */
#ifndef AUTD3_EMULATION_ETHERCAT_SERVER_H
#define AUTD3_EMULATION_ETHERCAT_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "autd3/error.h"
#include "emulation/ethercat/emu.h"

typedef struct autd3_emu_server_config {
  autd3_emu_config_t chain; /* the devices (emu.h) */
  const char *ifname;       /* the interface served (required) */
  const char *control_path; /* local control socket (commands: docs/emulator.md); NULL = none */
  const char *capture_path; /* pcap file of every received frame and reply; NULL = none */
  double drop, corrupt;     /* faults from the start: fractions of frames not answered / with one bit flipped */
  bool silence;             /* answer nothing (until "silence 0") */
  int unplug;               /* devices unplug.. unplugged at start; -1 = none */
  uint32_t delay_us;        /* every reply delayed by this */
  int verbose;              /* > 0: AL status changes and a summary at the end, on stderr */
} autd3_emu_server_config_t;

typedef struct autd3_emu_server autd3_emu_server_t;

/* The defaults: autd3_emu_config_default(), no control socket, no capture, no faults. */
autd3_emu_server_config_t autd3_emu_server_config_default(void);

/* Create the chain with the configured faults (nothing opened yet; allocates everything the loop uses).
 * Errors: the chain's (DEVICE_COUNT_RANGE, INVALID_OPTION naming the option), NOMEM; the message names autd3-emu. */
autd3_err_t autd3_emu_server_create(const autd3_emu_server_config_t *cfg, autd3_emu_server_t **out);
/* Open the interface, then the capture file, then the control socket (listening before anything is served, so
 * that a waiting script can start on its existence). Errors: the NIC's (IO, PERMISSION, NO_INTERFACE), IO
 * (capture file, control socket), INVALID_OPTION (control path too long). */
autd3_err_t autd3_emu_server_attach(autd3_emu_server_t *s);
/* Serve until autd3_emu_server_stop. Errors: IO (the wait failed). */
autd3_err_t autd3_emu_server_run(autd3_emu_server_t *s);
/* Make run return at its next loop turn. Async-signal-safe (one write to a pipe). */
void autd3_emu_server_stop(autd3_emu_server_t *s);
/* Close everything (the control socket's file is removed) and free. */
void autd3_emu_server_free(autd3_emu_server_t *s);

#endif
