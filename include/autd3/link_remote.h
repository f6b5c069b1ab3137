/**
 * @file link_remote.h
 * @brief Options of the Remote link (ARMT protocol v3 over TCP to autd3-remote-server).
 * @since 0.1.0
 */
#ifndef AUTD3_LINK_REMOTE_H
#define AUTD3_LINK_REMOTE_H

#include <stdint.h>

#include "autd3/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Remote options. */
typedef struct autd3_remote_option {
  const char *address; /**< "host:port", "[v6]:port"; names are resolved; default "127.0.0.1:8080" */
  uint32_t timeout_ms; /**< connect, read and write timeout; 0 = none (default) */
} autd3_remote_option_t;

/** Defaults. */
AUTD3_EXTERN autd3_remote_option_t autd3_remote_option_default(void);

#ifdef __cplusplus
}
#endif
#endif
