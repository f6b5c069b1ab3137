/**
 * @file link_remote.h
 * @brief Options of the Remote link (ARMT protocol v7 or v3 over TCP to autd3-remote-server or another ARMT server).
 * @since 0.1.0
 */
#ifndef AUTD3_LINK_REMOTE_H
#define AUTD3_LINK_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "autd3/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Whether the Remote link keeps a second request in flight. Strict
 * request/response (the reference client's way) costs nothing with a server
 * whose link sends at its deadline (emulator, SOEM, EtherCrab, TwinCAT), but
 * halves the bus rate when the server's link sends at call time (echocat):
 * the next request cannot arrive before that link's next call. Pipelined:
 * cycle() sends its tx and returns the reply to the previous call's (one
 * stale cycle when it starts), full rate for every link, one cycle more
 * latency. Any ARMT server (v3 or v7) accepts both (replies come in order).
 */
typedef enum autd3_remote_pipeline {
  AUTD3_REMOTE_PIPELINE_AUTO = 0, /**< default: time both for ~70 cycles after open, keep pipelining only if it is >25 % faster;
                                       otherwise strict, but pipelined while consecutive calls bring new tx (streaming) */
  AUTD3_REMOTE_PIPELINE_OFF = 1,  /**< always strict request/response */
  AUTD3_REMOTE_PIPELINE_ON = 2    /**< always one request ahead */
} autd3_remote_pipeline_t;

/** ARMT protocol versions the link speaks. @since 0.3.0 */
#define AUTD3_REMOTE_PROTOCOL_NEWEST 0u /**< the newest (7) */
#define AUTD3_REMOTE_PROTOCOL_V3 3u    /**< autd3-rs-link-remote 0.1-0.4, PyPI autd3-link-remote 0.2 */
#define AUTD3_REMOTE_PROTOCOL_V7 7u    /**< autd3-rs-link-remote 0.5-0.9, PyPI autd3-link-remote 0.8/0.9 */

/** Remote options. autd3_link_check_state() reports the states of the last v7 reply, AUTD3_DEVICE_UNKNOWN over v3 (it carries no device state). */
/* Grows by appending fields (see autd3_link_option_t). */
typedef struct autd3_remote_option {
  const char *address; /**< "host:port", "[v6]:port"; names are resolved; default "127.0.0.1:8080" */
  uint32_t timeout_ms; /**< connect, read and write timeout; 0 = none (default) */
  autd3_remote_pipeline_t pipeline; /**< default AUTD3_REMOTE_PIPELINE_AUTO */
  /** ARMT version: AUTD3_REMOTE_PROTOCOL_NEWEST (0, default = 7), _V3 or _V7. No fallback: a server of the other
   * version is reported (AUTD3_E_VERSION) with the version it speaks. @since 0.3.0 */
  uint32_t protocol;
} autd3_remote_option_t;

/**
 * Defaults. In source (with autd3/link.h) a macro over autd3_link_option_default() that is safe when this struct
 * grows; this function keeps the 0.3.0 layout for binaries and FFI that call it.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_remote_option_t autd3_remote_option_default(void);

/** DNS-SD service types of Remote servers (autd3-rs-link-remote 0.9.0 src/discovery.rs). @since 0.3.0 */
#define AUTD3_REMOTE_SERVICE_TYPE "_autd3._tcp.local."
#define AUTD3_REMOTE_SIM_SERVICE_TYPE "_autd3-sim._tcp.local."

/** One Remote server found by autd3_remote_discover(). @since 0.3.0 */
typedef struct autd3_remote_found {
  char instance[64];     /**< service instance name, e.g. "autd3-lab-8080" */
  char host[128];        /**< the SRV target, e.g. "autd3-lab-8080.local" */
  char address[64];      /**< "a.b.c.d:port": pass it as autd3_remote_option_t.address */
  uint16_t port;         /**< TCP port of the Remote protocol */
  uint8_t wire;          /**< TXT "wire": the ARMT version it speaks (0 if not advertised) */
  char sdk[48];          /**< TXT "sdk": its software version ("" if not advertised) */
  uint16_t control_port; /**< TXT "ctrl": its control API port (0 if none) */
  uint8_t simulator;     /**< 1: found as AUTD3_REMOTE_SIM_SERVICE_TYPE, 0: an appliance */
} autd3_remote_found_t;

/**
 * Look for Remote servers by mDNS / DNS-SD (both service types) for `timeout_ms` (1..60 000; it waits the whole
 * time, as answers trickle in). Fills up to `cap` entries, appliances first, then simulators, each by instance name;
 * *n = how many. Uses UDP port 5353 (shared with other mDNS software on the host) on every multicast IPv4 interface.
 * Errors: INVALID_ARGUMENT, INVALID_OPTION (timeout), IO (no multicast), TIMEOUT (nobody answered; *n = 0).
 * @since 0.3.0
 */
AUTD3_EXTERN autd3_err_t autd3_remote_discover(uint32_t timeout_ms, autd3_remote_found_t *out, size_t cap, size_t *n);

#ifdef __cplusplus
}
#endif
#endif
