/**
 * @file error.h
 * @brief Status codes and error messages of libautd3.
 *
 * Every fallible function returns an ::autd3_err_t. ::AUTD3_OK is zero, every
 * error is negative. A code says *what kind* of failure happened; the detailed
 * message (which device, which interface, which option) is kept per thread and
 * read with autd3_last_error() right after the failing call.
 *
 * Calling context: all functions here are thread-safe, never block and never
 * allocate.
 * @since 0.1.0
 */
#ifndef AUTD3_ERROR_H
#define AUTD3_ERROR_H

#include "autd3/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X-macro table: XX(NAME, value, generic message). One place defines the
 * enum, autd3_err_name() and autd3_strerror(). Append only: values are ABI. */
#define AUTD3_ERR_MAP(XX)                                                              \
  /* argument / configuration errors (caller bugs) */                                  \
  XX(INVALID_ARGUMENT, -1, "invalid argument")                                         \
  XX(INVALID_OPTION, -2, "invalid link option")                                        \
  XX(INVALID_CONFIG, -3, "invalid client configuration")                               \
  XX(DEVICE_COUNT_RANGE, -4, "device count out of range (1..128)")                     \
  XX(GEOMETRY_MISMATCH, -5, "geometry and link device counts differ")                  \
  XX(UNKNOWN_LINK, -6, "unknown link kind")                                            \
  XX(NOT_BUILT, -7, "link kind not built into this library")                           \
  XX(NOMEM, -8, "out of memory")                                                       \
  XX(PAYLOAD, -9, "invalid payload")                                                   \
  /* link / NIC / network errors */                                                    \
  XX(NO_INTERFACE, -20, "network interface not found")                                 \
  XX(PERMISSION, -21, "permission denied (raw sockets need CAP_NET_RAW and CAP_NET_ADMIN)") \
  XX(NO_DEVICE, -22, "no device found")                                                \
  XX(NOT_AUTD, -23, "a slave on the bus is not an AUTD3 device")                       \
  XX(DEVICE_COUNT_MISMATCH, -24, "device count on the bus differs from the expected")  \
  XX(SYNC_TIMEOUT, -25, "distributed clocks did not converge in time")                 \
  XX(STATE_TIMEOUT, -26, "devices did not reach the requested EtherCAT state")         \
  XX(IO, -27, "I/O error")                                                             \
  XX(CONNECT, -28, "connection failed")                                                \
  XX(PROTOCOL, -29, "malformed or unexpected message from the peer")                   \
  XX(VERSION, -30, "protocol version mismatch")                                        \
  XX(REMOTE, -31, "the remote peer reported an error")                                 \
  XX(ADS, -32, "ADS error")                                                            \
  XX(PEER_CLOSED, -33, "the peer closed the connection")                               \
  XX(LINK, -34, "link failure")                                                        \
  XX(SECOND_MASTER, -35, "another master is driving the same devices")                \
  /* protocol-level results */                                                         \
  XX(TIMEOUT, -40, "timed out")                                                        \
  XX(DEVICE, -41, "a device reported an error")                                        \
  XX(CLOSED, -42, "closed")                                                            \
  XX(PENDING, -43, "not finished yet")                                                 \
  XX(BUSY, -44, "busy")                                                                \
  XX(DEVICE_RESET, -45, "a device lost its state (rebooted or reset) and did not execute the frame") \
  XX(OUTCOME_UNKNOWN, -46, "whether a device executed the frame cannot be known")    \
  XX(INVALID_HANDLE, -47, "invalid, stale or already released handle")              \
  XX(INTERNAL, -99, "internal error")

/** Status code returned by every fallible libautd3 function. */
typedef enum autd3_err {
  AUTD3_OK = 0, /**< success */
#define AUTD3_ERR_ENUM_(name, val, msg) AUTD3_E_##name = (val),
  AUTD3_ERR_MAP(AUTD3_ERR_ENUM_)
#undef AUTD3_ERR_ENUM_
} autd3_err_t;

/**
 * Generic, static message for a code ("unknown error" for unknown codes).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN const char *autd3_strerror(autd3_err_t err);

/**
 * The code's name without prefix, e.g. "TIMEOUT"; "UNKNOWN" for unknown codes.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN const char *autd3_err_name(autd3_err_t err);

/**
 * Detailed message of the last error raised on the calling thread, e.g.
 * "echocat: slave 1 (vendor 0x00000002, product 0x044c2c52, name \"EL1004\") is not an AUTD3 device".
 * Valid until the next libautd3 call on this thread. Never NULL ("" if none).
 * Context: any thread; RT-safe. Reads the calling thread's message.
 */
AUTD3_EXTERN const char *autd3_last_error(void);

#ifdef __cplusplus
}
#endif
#endif /* AUTD3_ERROR_H */
