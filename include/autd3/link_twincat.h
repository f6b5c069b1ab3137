/**
 * @file link_twincat.h
 * @brief Options of the TwinCAT link (ADS/AMS over TCP, no Beckhoff library).
 * @since 0.1.0
 */
#ifndef AUTD3_LINK_TWINCAT_H
#define AUTD3_LINK_TWINCAT_H

#include <stdbool.h>
#include <stdint.h>

#include "autd3/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** TwinCAT options. Local when `server_ip` is NULL: the router at 127.0.0.1:48898. */
/* Grows by appending fields (see autd3_link_option_t). */
typedef struct autd3_twincat_option {
  const char *server_ip;         /**< remote TwinCAT host: IPv4 / IPv6 address or host name; NULL = local router (default) */
  uint16_t server_port;          /**< ADS TCP port; default 48898 */
  const char *server_ams_net_id; /**< "a.b.c.d.e.f" of the runtime; NULL = server_ip (the IPv4 address reached) + ".1.1"; required over IPv6 */
  const char *client_ams_net_id; /**< our net id; NULL = local IP + ".1.1" (remote) / asked from the router (local) */
  uint16_t ams_port;             /**< target AMS port; default 301 */
  uint32_t timeout_ms;           /**< per ADS request; default 1000 */
  /** Cycle time of the runtime's I/O task ("Task 1"), µs; 0 = 1000. cycle() paces itself to it. */
  uint32_t task_cycle_us;
  /** Do not register a device notification: read the inputs synchronously every cycle (the fallback). */
  bool no_notification;
} autd3_twincat_option_t;

/**
 * Defaults. In source (with autd3/link.h) a macro over autd3_link_option_default() that is safe when this struct
 * grows; this function keeps the 0.3.0 layout for binaries and FFI that call it.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_twincat_option_t autd3_twincat_option_default(void);

#ifdef __cplusplus
}
#endif
#endif
