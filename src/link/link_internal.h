/* Open functions of the built-in links (one per src/link/<kind>/ folder). */
#ifndef AUTD3_LINK_LINK_INTERNAL_H
#define AUTD3_LINK_LINK_INTERNAL_H

#include "autd3/link_driver.h"

autd3_err_t autd3__link_open_emulator(const autd3_link_option_t *o, const autd3_geometry_t *g, struct autd3_link **out);
autd3_err_t autd3__link_open_echocat(const autd3_link_option_t *o, const autd3_geometry_t *g, struct autd3_link **out);
autd3_err_t autd3__link_open_twincat(const autd3_link_option_t *o, const autd3_geometry_t *g, struct autd3_link **out);
autd3_err_t autd3__link_open_remote(const autd3_link_option_t *o, const autd3_geometry_t *g, struct autd3_link **out);

#endif
