/**
 * @file remote_server.h
 * @brief The server side of the Remote link (ARMT v7 and v3, each client answered
 * in the version of its hello): serves any link to one TCP client at a time,
 * optionally advertised by DNS-SD. Used by the tool autd3-remote-server; embeddable.
 *
 * A server owns a listening socket, the wrapped link and a bus thread that
 * paces it. Each client request (tag 0x01 + N × 626) is carried by exactly one
 * cycle of the wrapped link and answered with that cycle's rx; between
 * requests the bus thread keeps cycling with the last tx.
 *
 * Device count: with `devices` = 0 (default, like the reference
 * RemoteServer::serve_with_factory) the link is opened when a client's
 * geometry arrives, with that many devices, and closed when the client
 * leaves. With `devices` = N the link is opened by autd3_remote_server_create()
 * and keeps cycling between clients (like RemoteServer::with_link); a client
 * whose geometry has another count is answered with N (v3) or the session
 * code "device count" (v7) and disconnected.
 *
 * Limits (docs/remote.md "Limits"): at most `max_connections` connections
 * (the session plus clients still in their handshake; beyond it a connection
 * is refused at once with BUSY); each handshake has its own deadline, so a
 * slow client delays nobody; a session that has sent nothing for
 * `idle_timeout_ms` yields to the next client that completes a handshake
 * (a busy session refuses it with BUSY); log lines are rate limited.
 * @since 0.1.0
 */
#ifndef AUTD3_REMOTE_SERVER_H
#define AUTD3_REMOTE_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "autd3/link.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest accepted `max_connections`. */
#define AUTD3_REMOTE_SERVER_MAX_CONNECTIONS 256

/**
 * Server options. Strings (and those inside `link`) must outlive the server.
 * Size-tagged (docs/api.md "Structs that can grow"): start from autd3_remote_server_option_default(), which sets
 * `size` to the caller's sizeof; new fields are appended and get their defaults when an older caller's `size`
 * ends before them. An unknown `size` (0: not started from the default) is refused with AUTD3_E_INVALID_OPTION.
 */
typedef struct autd3_remote_server_option {
  uint32_t size;                 /**< sizeof(autd3_remote_server_option_t); set by the default. @since 0.3.0 */
  const char *listen;            /**< "host:port" or "[v6]:port"; default "127.0.0.1:8080" (loopback only); port 0 = any */
  autd3_link_option_t link;      /**< the wrapped link; default emulator */
  uint16_t devices;              /**< 0 = open the link per client from its geometry (default); N = open at start */
  uint32_t handshake_timeout_ms; /**< hello + geometry must arrive within this after connecting; 1..3 600 000, default 10 000 */
  uint32_t stall_timeout_ms;     /**< a started request must complete, and a reply be taken, within this (a client that keeps sending requests ahead of its replies for this long is not taking them); 1..3 600 000, default 5 000 */
  /** A session that has sent nothing for this long yields to the next client that completes a handshake (it is not
   * dropped while nobody else wants the bus); 1..3 600 000, default 10 000. @since 0.2.0 */
  uint32_t idle_timeout_ms;
  /** Connections at once: the session plus handshakes (at least one, so that an idle session can be taken over); more
   * are refused at once (BUSY); 2..256, default 8. @since 0.2.0 */
  uint32_t max_connections;
  /** Log lines per second on average (bursts of 10 s worth); lines beyond are counted and the count is logged with the
   * next line; 0 = no limit; 0..100 000, default 10. @since 0.2.0 */
  uint32_t log_lines_per_s;
  uint32_t min_period_us;        /**< shortest bus cycle for links that do not pace themselves; default 250 (as the reference) */
  /** For links without wait_next_cycle (SOEM, which sleeps to its deadline inside cycle): with no request pending,
   * wait up to this % of the measured cycle after the last cycle returned for one (taken at once when it comes)
   * before the next cycle; default 50, 0 = never wait (the reference's behaviour). Links with wait_next_cycle
   * decide the staging point themselves and ignore it (docs/remote.md "Bus thread and pacing"). */
  uint32_t pickup_percent;
  /** Advertise the server by mDNS / DNS-SD as AUTD3_REMOTE_SERVICE_TYPE (autd3-rs-link-remote 0.9.0's service type,
   * TXT "wire=7" and "sdk=libautd3-x.y.z"), so that autd3_remote_discover() and the published clients find it.
   * Addresses advertised: the listen address if it is a specific IPv4 one, else every up multicast IPv4 interface's
   * (127.0.0.1 if there is none). Uses UDP 5353. Default 0 (off). @since 0.3.0 */
  uint8_t advertise;
  /** Instance name to advertise (a DNS label, 1..63 bytes, no dots); NULL = "autd3-<hostname>-<port>". @since 0.3.0 */
  const char *advertise_instance;
  /** Log sink for connection events (one line, no newline); NULL = stderr. Called from the thread in autd3_remote_server_run(). */
  void (*log)(void *ctx, const char *line);
  void *log_ctx;
  /** SCHED_FIFO priority of the bus thread (1..99), 0 = leave the OS's default (default). Set once when the bus thread
   * starts, by the owner that sets the client's bus thread (with a timer slack of 1 ns on Linux in any case). The OS
   * refusing it (Linux: without CAP_SYS_NICE or an RLIMIT_RTPRIO that allows it) fails the link's open with
   * AUTD3_E_PERMISSION and the OS's reason: at create with `devices` > 0, else the client is refused and the reason
   * logged. @since 0.4.0 */
  int rt_priority;
  /** CPU the bus thread is pinned to, -1 = none (default); refused as rt_priority. @since 0.4.0 */
  int rt_cpu;
} autd3_remote_server_option_t;

/**
 * The 0.3.0 layout of autd3_remote_server_option_t (through `log_ctx`): what the exported function
 * autd3_remote_server_option_default returns by value to binaries and FFI built against 0.3.0. Source code calls the
 * macro autd3_remote_server_option_default(), which returns the whole current struct. @since 0.4.0
 */
typedef struct autd3_remote_server_option_0_3 {
  uint32_t size;
  const char *listen;
  autd3_link_option_t link;
  uint16_t devices;
  uint32_t handshake_timeout_ms, stall_timeout_ms, idle_timeout_ms, max_connections, log_lines_per_s, min_period_us,
      pickup_percent;
  uint8_t advertise;
  const char *advertise_instance;
  void (*log)(void *ctx, const char *line);
  void *log_ctx;
} autd3_remote_server_option_0_3_t;

/** Server counters (read at any time). */
typedef struct autd3_remote_server_stats {
  uint64_t clients;   /**< sessions accepted */
  uint64_t refused;   /**< connections refused (busy, bad hello/geometry, link open failure) */
  uint64_t requests;  /**< frames answered */
  uint64_t dropped;   /**< sessions ended for malformed, stalled or timed-out input */
  /** Cycles of the wrapped link run by the bus thread (every link opened so far). @since 0.4.0 */
  uint64_t bus_cycles;
  /** CPU time of the bus thread (every link opened so far), ns; each thread samples it every 10 ms. With bus_cycles:
   * the server's CPU per bus cycle. @since 0.4.0 */
  uint64_t bus_cpu_ns;
  /** CPU time of the thread in autd3_remote_server_run() since it started (sockets, sessions, replies), ns; sampled
   * as bus_cpu_ns. @since 0.4.0 */
  uint64_t net_cpu_ns;
} autd3_remote_server_stats_t;

typedef struct autd3_remote_server autd3_remote_server_t;

/**
 * Fill the first `size` bytes of `*o` with the defaults and set `o->size = size` (zeros past what this library
 * knows). Writes nothing past `size`. @since 0.3.0
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN void autd3_remote_server_option_init(autd3_remote_server_option_t *o, size_t size);
/**
 * Defaults. The exported function keeps the 0.3.0 layout (autd3_remote_server_option_0_3_t) for binaries and FFI
 * that call it; in source it is the inline below, which passes the caller's sizeof to
 * autd3_remote_server_option_init(), so that a struct returned by value can grow.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_remote_server_option_0_3_t autd3_remote_server_option_default(void);
static inline autd3_remote_server_option_t autd3_remote_server_option_default_(void) {
  autd3_remote_server_option_t o;
  autd3_remote_server_option_init(&o, sizeof o);
  return o;
}
#define autd3_remote_server_option_default() autd3_remote_server_option_default_()
/**
 * Bind the listening socket (and with `devices` > 0 open the link and start the
 * bus thread). Allocates. Errors: INVALID_OPTION, CONNECT (cannot bind), the link's own.
 * Context: any thread; blocks (bind; with `devices` > 0 the link's bring-up); allocates; starts the bus thread.
 */
AUTD3_EXTERN autd3_err_t autd3_remote_server_create(const autd3_remote_server_option_t *o, autd3_remote_server_t **out);
/**
 * Port actually bound (useful with port 0).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN uint16_t autd3_remote_server_port(const autd3_remote_server_t *s);
/**
 * Serve clients until autd3_remote_server_stop(). Call from one thread. Returns AUTD3_OK after a stop.
 * Context: one thread; blocks until autd3_remote_server_stop(); allocates per client (the wrapped link).
 */
AUTD3_EXTERN autd3_err_t autd3_remote_server_run(autd3_remote_server_t *s);
/**
 * Ask run() to return. Async-signal-safe (call it from a SIGINT handler) and thread-safe.
 * Context: any thread or a signal handler; never blocks (one write to a pipe); no allocation.
 */
AUTD3_EXTERN void autd3_remote_server_stop(autd3_remote_server_t *s);
/**
 * Counters (thread-safe).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN void autd3_remote_server_stats(const autd3_remote_server_t *s, autd3_remote_server_stats_t *out);
/**
 * autd3_remote_server_stats() writing exactly `size` bytes of `out`: the prefix a smaller (older) struct has, zeros
 * past what the library knows for a larger one. The macro autd3_remote_server_stats(s, out) passes the caller's
 * sizeof; the exported function of that name writes the 0.3.0 layout. @since 0.3.0
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN void autd3_remote_server_stats_sized(const autd3_remote_server_t *s, autd3_remote_server_stats_t *out,
                                                  size_t size);
#define autd3_remote_server_stats(s, out) autd3_remote_server_stats_sized((s), (out), sizeof *(out))
/**
 * Close the client, stop the bus thread, close the link, free. Not while run() is running. NULL is fine.
 * Context: once, after run() returned; blocks (joins the bus thread, closes the link); frees.
 */
AUTD3_EXTERN void autd3_remote_server_destroy(autd3_remote_server_t *s);

#ifdef __cplusplus
}
#endif
#endif
