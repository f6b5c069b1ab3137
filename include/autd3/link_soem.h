/**
 * @file link_soem.h
 * @brief Options of the SOEM link. The link itself lives in the separate
 * GPL-3.0-only library libautd3-link-soem (CMake option AUTD3_LINK_SOEM);
 * libautd3 never links SOEM.
 * @since 0.1.0
 */
#ifndef AUTD3_LINK_SOEM_H
#define AUTD3_LINK_SOEM_H

#include "autd3/link_ethercat.h"

#ifdef __cplusplus
extern "C" {
#endif

/** SOEM options (the common EtherCAT ones). */
/* Grows by appending fields (see autd3_link_option_t). */
typedef struct autd3_soem_option {
  autd3_ethercat_option_t ethercat; /**< common EtherCAT options */
} autd3_soem_option_t;

/**
 * Defaults. In source (with autd3/link.h) a macro over autd3_link_option_default() that is safe when this struct
 * grows; this function keeps the 0.3.0 layout for binaries and FFI that call it.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_soem_option_t autd3_soem_option_default(void);

/**
 * Register the SOEM link with libautd3 (declared here, defined in
 * libautd3-link-soem). Portable code calls it once before opening a SOEM link.
 * Built with GCC or Clang (MinGW included), linking the shared library also
 * registers it automatically; with MSVC, or when a static link dropped that
 * load-time hook, this call is required.
 * Context: any thread; RT-safe (an atomic store); call before opening a SOEM link.
 */
AUTD3_EXTERN void autd3_link_soem_register(void);

#ifdef __cplusplus
}
#endif
#endif
