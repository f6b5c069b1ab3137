/**
 * @file link_ethercrab.h
 * @brief Options of the EtherCrab link (a Rust shim over the ethercrab crate,
 * in the separate library libautd3-link-ethercrab, CMake option AUTD3_LINK_ETHERCRAB).
 * @since 0.1.0
 */
#ifndef AUTD3_LINK_ETHERCRAB_H
#define AUTD3_LINK_ETHERCRAB_H

#include "autd3/link_ethercat.h"

#ifdef __cplusplus
extern "C" {
#endif

/** EtherCrab options. */
/* Grows by appending fields (see autd3_link_option_t). */
typedef struct autd3_ethercrab_option {
  autd3_ethercat_option_t ethercat; /**< common EtherCAT options */
  uint32_t pdu_timeout_ms;          /**< EtherCrab PDU timeout; default 100 */
} autd3_ethercrab_option_t;

/**
 * Defaults. In source (with autd3/link.h) a macro over autd3_link_option_default() that is safe when this struct
 * grows; this function keeps the 0.3.0 layout for binaries and FFI that call it.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_ethercrab_option_t autd3_ethercrab_option_default(void);

/**
 * Register the EtherCrab link (defined in libautd3-link-ethercrab). Portable code
 * calls it once before opening an EtherCrab link; built with GCC or Clang it is
 * also automatic when the shared library is linked.
 * Context: any thread; RT-safe (an atomic store); call before opening an EtherCrab link.
 */
AUTD3_EXTERN void autd3_link_ethercrab_register(void);

#ifdef __cplusplus
}
#endif
#endif
