/* SPDX-License-Identifier: GPL-3.0-only */
/*
 * The SOEM link's internals, shared by its files (one concern each):
 *   link_soem.c      open (adapter, SOEM's configuration, DC alignment, the
 *                    shared bring-up's OP wait), the cycle, close, diagnostics
 *   soem_recovery.c  the state checker: libautd3's EtherCAT recovery on
 *                    SOEM's primitives, DC re-alignment of a returning device
 * Private to src/link/soem. Portable: SOEM's own OS ports (Linux, win32,
 * macOS) do the I/O, libautd3's services table everything else; no OS header.
 */
#ifndef AUTD3_LINK_SOEM_INTERNAL_H
#define AUTD3_LINK_SOEM_INTERNAL_H

#include <stdatomic.h>

#include <soem/soem.h>

#include "autd3/link_driver.h"
#include "ecat/regs.h" /* register numbers: the tree's one map (header-only constants) */

/* Everything this library needs of libautd3 (time, the pacer, the adapter
 * checks, the capture tap, the one-master guard, the identity check, the
 * bring-up and the recovery) comes through the versioned services table, so
 * that nothing of libautd3 is compiled in twice. Set by the first open (or
 * registration); the table is static. */
extern const autd3_link_services_t *autd3_soem_svc;
#define S autd3_soem_svc

#define TX_BYTES AUTD3_TX_FRAME_BYTES
#define RX_BYTES AUTD3_RX_FRAME_BYTES
/* Adapter names: Linux interface names, Npcap's "\Device\NPF_{GUID}", BSD names. */
#define SOEM_IFNAME_CAP 128

typedef struct soem_link {
  struct autd3_link hdr; /* must be first */
  ecx_contextt *ctx;     /* heap: the context is several hundred kB */
  uint8_t *iomap;        /* (1 + 626 + 2) bytes per device; SOEM keeps pointers into it */
  char ifname[SOEM_IFNAME_CAP];
  uint32_t sync0_period_ns;
  int32_t sync0_shift_ns;
  int64_t cycle_ns; /* send_cycle_ns, or sync0_period_ns when 0 */
  int expected_wkc;
  bool ctx_open;   /* ecx_init called: ecx_close needed */
  bool configured; /* slaves configured by us: stop SYNC0 and request INIT on close */
  /* cycle state, touched by the cycle thread only: the shared pacer,
   * re-anchored at the DC phase after every good cycle, unanchored (send at
   * once) before the first and after a lost one; its counters are read by
   * diagnostics */
  autd3_link_pacer_t pace;
  /* diagnostics, written by the cycle thread, read by anyone */
  _Atomic int64_t diag_last_wkc;
  _Atomic uint64_t diag_max_txrx_ns;  /* worst send+receive duration */
  _Atomic int64_t diag_dc_phase_ns;   /* DC time mod cycle at the last good cycle */
  int64_t aim_dc;                     /* the DC time the next frame is paced to (0: unpaced), for the phase statistics */
  /* SOEM owns its socket, so the shared passive tap (src/nic/capture.h)
   * watches the adapter for another master's frames and, with capture_path,
   * records every frame like tcpdump would */
  autd3_link_tap_t *cap;
  /* one master per chain: the interface's lock, taken before SOEM's first
   * frame and held until close (src/nic/master_guard.h) */
  autd3_link_master_guard_t *guard;
  /* the state checker: libautd3's EtherCAT recovery on SOEM's primitives
   * (services ecat_recovery_*; never touched by cycle) */
  autd3_link_ecat_recovery_t *rec;
  /* A device was last seen out of OP (by the state check's AL-status reads,
   * or by the cycle's own per-device read): the cycle reads every device's
   * AL status until one such read finds all in OP (link_soem.c
   * per_device_inputs). */
  atomic_bool out_of_op;
} soem_link_t;

/* link_soem.c */
/* "INIT", ..., "SAFE-OP+ERROR", "OP" for a SOEM slave state. */
const char *autd3_soem_al_name(uint16_t s);

/* soem_recovery.c: the state checker (every device in OP: open's last step) */
autd3_err_t autd3_soem_recovery_create(soem_link_t *l, uint32_t state_timeout_ms);
autd3_err_t autd3_soem_check_state(struct autd3_link *base, autd3_link_status_t *out);

#endif
