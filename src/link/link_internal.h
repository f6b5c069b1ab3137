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

/* Who reads a device's registers for autd3_link_device_info() (the EtherCAT recovery helper registers one at
 * create and clears it at free: src/ecat/recovery.c), called on the caller's thread. A function pointer, so
 * that the registry never calls into src/ecat (docs/architecture.md §9). Ignored for a link whose header
 * predates it. */
typedef struct autd3__link_device_reader {
  void (*read)(const struct autd3__link_device_reader *self, uint16_t dev, autd3_link_device_info_t *out);
} autd3__link_device_reader_t;
void autd3__link_set_device_reader(struct autd3_link *link, const autd3__link_device_reader_t *reader);

#endif
