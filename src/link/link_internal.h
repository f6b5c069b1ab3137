/* Open functions of the built-in links (one per src/link/<kind>/ folder). */
#ifndef AUTD3_LINK_LINK_INTERNAL_H
#define AUTD3_LINK_LINK_INTERNAL_H

#include "autd3/link_driver.h"

autd3_err_t autd3__link_open_emulator(const autd3_link_option_t *o, const autd3_geometry_t *g, struct autd3_link **out);
autd3_err_t autd3__link_open_echocat(const autd3_link_option_t *o, const autd3_geometry_t *g, struct autd3_link **out);
autd3_err_t autd3__link_open_twincat(const autd3_link_option_t *o, const autd3_geometry_t *g, struct autd3_link **out);
autd3_err_t autd3__link_open_remote(const autd3_link_option_t *o, const autd3_geometry_t *g, struct autd3_link **out);

/* The caller's option as this library's full struct: its `size` checked
 * against the sizes the kind's member had, its prefix copied over the
 * defaults (autd3_link_open() and the Remote server use it). */
autd3_err_t autd3__link_option_full(const autd3_link_option_t *option, autd3_link_option_t *out);

/* autd3_link_wait_next_cycle(), and the stage deadline the link reported from
 * it (autd3_link_report_stage_deadline) into *deadline_ns: 0 if it reported
 * none (or the wait failed), then the caller stages at once (src/link/stage.c). */
autd3_err_t autd3__link_wait_stage(autd3_link_t *link, uint64_t *deadline_ns);

/* The EtherCAT recovery helper of `link` (ecat_recovery_create registers it, free clears it), through which
 * autd3_link_device_info() reads a device's registers; ignored for a link whose header predates it. */
void autd3__link_set_ecat_recovery(struct autd3_link *link, autd3_link_ecat_recovery_t *rec);

#endif
