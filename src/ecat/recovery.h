/*
 * EtherCAT device recovery, once for every EtherCAT link (echocat, SOEM,
 * EtherCrab): the per-device state machine of the state checker (AL status ->
 * acknowledge / request OP / report the reset and bring the device back /
 * re-address a re-plugged one; back-off between failed bring-ups; the
 * recovery count) and the generic bring-up steps (SM/FMMU restore, DC
 * re-alignment) built on the link's bus primitives. The rules and the
 * primitives: include/autd3/link_driver.h autd3_link_ecat_recovery_t; links
 * outside libautd3 reach it through the services table (version 2).
 *
 * Context: create/free at open/close (allocate); check on a user thread (the
 * client's state checker), never on the bus thread's cycle path; it blocks for
 * the primitives and allocates nothing.
 */
#ifndef AUTD3_ECAT_RECOVERY_H
#define AUTD3_ECAT_RECOVERY_H

#include "autd3/link_driver.h"

/* Explicit per-device states of the recovery state machine. */
typedef enum autd3__ecat_rec_phase {
  AUTD3__REC_OP = 0,        /* in OP (at creation: open left every device in OP) */
  AUTD3__REC_ACKED,         /* SAFE-OP+ERROR seen: the error was acknowledged */
  AUTD3__REC_OP_REQUESTED,  /* SAFE-OP seen, or a bring-up finished: OP was requested */
  AUTD3__REC_LOST,          /* no answer at its station address, nothing re-addressed */
  AUTD3__REC_FAILED,        /* a bring-up failed: the next one waits for the back-off */
  AUTD3__REC_OTHER          /* BOOT or an unknown AL state: left alone */
} autd3__ecat_rec_phase_t;

/* Back-off after the k-th consecutive failed bring-up (k >= 1): 100 ms doubling, at most 1.6 s. */
uint64_t autd3__ecat_rec_backoff_ns(uint32_t failures);

autd3_err_t autd3__ecat_recovery_create(struct autd3_link *link, const autd3_link_ecat_ops_t *ops,
                                        const autd3_link_ecat_recovery_config_t *config, autd3_link_ecat_recovery_t **out);
/* autd3_link_services_t.ecat_recovery_check: _check_at at the monotonic now. */
autd3_err_t autd3__ecat_recovery_check(autd3_link_ecat_recovery_t *rec, autd3_link_status_t *out);
/* The check with the time it runs at given (the back-off's clock; tests). */
autd3_err_t autd3__ecat_recovery_check_at(autd3_link_ecat_recovery_t *rec, autd3_link_status_t *out, uint64_t now_ns);
void autd3__ecat_recovery_free(autd3_link_ecat_recovery_t *rec);
/* create also registers the helper as the link's device reader (autd3_link_device_info(): a device's ESC
 * error counters 0x0300-0x0313 and DC system-time difference 0x092C, read on the caller's thread and
 * serialised with the checks); free unregisters it. */
/* Device dev's state-machine phase (tests, diagnostics). */
autd3__ecat_rec_phase_t autd3__ecat_recovery_phase(const autd3_link_ecat_recovery_t *rec, uint16_t dev);
/* Bring-ups started for device dev so far (tests). */
uint32_t autd3__ecat_recovery_attempts(const autd3_link_ecat_recovery_t *rec, uint16_t dev);

#endif
