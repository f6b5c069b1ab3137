/**
 * @file link_remote.h
 * @brief Options of the Remote link (ARMT protocol v7 or v3 over TCP to autd3-remote-server or another ARMT server).
 * @since 0.1.0
 */
#ifndef AUTD3_LINK_REMOTE_H
#define AUTD3_LINK_REMOTE_H

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
 * latency. Any ARMT v3 server accepts both (replies come in order).
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

/** Remote options. */
typedef struct autd3_remote_option {
  const char *address; /**< "host:port", "[v6]:port"; names are resolved; default "127.0.0.1:8080" */
  uint32_t timeout_ms; /**< connect, read and write timeout; 0 = none (default) */
  autd3_remote_pipeline_t pipeline; /**< default AUTD3_REMOTE_PIPELINE_AUTO */
  /** ARMT version: AUTD3_REMOTE_PROTOCOL_NEWEST (0, default = 7), _V3 or _V7. No fallback: a server of the other
   * version is reported (AUTD3_E_VERSION) with the version it speaks. @since 0.3.0 */
  uint32_t protocol;
} autd3_remote_option_t;

/** Defaults. */
AUTD3_EXTERN autd3_remote_option_t autd3_remote_option_default(void);

#ifdef __cplusplus
}
#endif
#endif
