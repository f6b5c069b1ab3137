/**
 * @file client.h
 * @brief The client: speaks the seq/cmd frame protocol over any link.
 *
 * autd3_client_open() opens the link, starts the client's bus thread and
 * runs the open sequence of the reference client autd3-rs 0.9.0: Reset (seq 0
 * then 1), SetMode (FIFO, or low latency when asked), the firmware identity
 * reads (CPU and FPGA versions, FPGA function bits, each checked through the
 * error detail), the optional firmware series check, then Clear and
 * Synchronize. From then on the bus thread stages at most one new frame per
 * bus cycle, keeps up to `max_inflight` frames in flight, routes the devices'
 * cumulative acks, and retransmits (resync) or resets when a frame is not
 * acked in time. autd3_client_close() silences every device first (a zero
 * output pattern, as the reference's close) and reports a device that did not
 * confirm it.
 *
 * Thread-safety: every function may be called from any thread; send and the
 * reads may be called concurrently. Nothing here runs on the bus thread.
 * @since 0.1.0
 */
#ifndef AUTD3_CLIENT_H
#define AUTD3_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autd3/error.h"
#include "autd3/geometry.h"
#include "autd3/link.h"
#include "autd3/proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Client configuration (mirrors the reference ClientConfig). */
/*
 * Size-tagged (docs/api.md "Structs that can grow"): start from autd3_client_config_default(), which sets `size`
 * to the caller's sizeof; new fields are appended and get their defaults when an older caller's `size` ends
 * before them. To append one: add it at the end and add the old sizeof to the known sizes in src/client/client.c.
 */
typedef struct autd3_client_config {
  uint32_t size;                /**< sizeof(autd3_client_config_t); set by the default; unknown → INVALID_CONFIG. @since 0.3.0 */
  uint32_t timeout_cycles;      /**< cycles a head frame may stay unacked before resync; default 10, ≥ 1 */
  uint32_t max_inflight;        /**< frames in flight, 1..127; default 127 */
  uint32_t max_resync_rounds;   /**< resync rounds before reset, and again before giving up; default 8, ≥ 1 */
  bool low_latency;             /**< ask the firmware to process frames inline; default false */
  uint32_t reset_resend_cycles; /**< cycles of Reset during recovery; default 2, ≥ 1 */
  int rt_priority;              /**< SCHED_FIFO priority of the bus thread (1..99), 0 = none (default) */
  int rt_cpu;                   /**< CPU for the bus thread, -1 = none (default) */
  /* appended in 0.2.0 (the 0.9 open/close sequence) */
  bool require_supported_firmware; /**< open fails (AUTD3_E_VERSION, naming the device and its versions) unless every device runs CPU and FPGA
                                        firmware of the series AUTD3_FW_SERIES_MAJOR.AUTD3_FW_SERIES_MINOR; default false */
  uint32_t close_timeout_ms;    /**< how long close may take to silence the devices, 1..60000; default 1000 */
  /* appended in 0.3.0 (devices running firmware v12: docs/legacy.md) */
  uint32_t protocol;            /**< autd3_protocol_t: the devices' protocol generation; default AUTD3_PROTOCOL_NEW */
} autd3_client_config_t;

/**
 * Protocol generation of the devices (autd3_client_config_t.protocol).
 * NEW: the seq/cmd protocol (firmware 0.x, this client's own). V12: the
 * msg_id protocol of firmware v10–v12 (shinolab/autd3-firmware v12.1.0), driven
 * by the legacy client: stop-and-wait, msg_id 1..15 cycling, the legacy open
 * sequence and errors (docs/legacy.md). With V12, frames are built with
 * autd3_v12_frame(); max_inflight, timeout_cycles, max_resync_rounds,
 * reset_resend_cycles and low_latency do not apply, the ack timeout is the
 * reference's 200 ms. AUTO: probe at open with frames both generations read
 * as harmless (a v12 Nop is a Reset to a new-generation device) and use what
 * the devices speak; a chain mixing both is refused (AUTD3_E_VERSION).
 */
typedef enum autd3_protocol {
  AUTD3_PROTOCOL_NEW = 0,
  AUTD3_PROTOCOL_V12 = 1,
  AUTD3_PROTOCOL_AUTO = 2
} autd3_protocol_t;

/** The firmware series this client speaks (autd3-rs 0.9.0, crate autd3-cpu-wire params VERSION_NUM_MAJOR/MINOR). */
#define AUTD3_FW_SERIES_MAJOR 0
#define AUTD3_FW_SERIES_MINOR 9

/** Fill the first `size` bytes of `*c` with the defaults, `c->size = size`; nothing past `size`. RT-safe. @since 0.3.0 */
AUTD3_EXTERN void autd3_client_config_init(autd3_client_config_t *c, size_t size);
/**
 * Defaults. RT-safe. The exported function keeps the 0.3.0 layout for binaries and FFI that call it; in source it
 * is the inline below, which passes the caller's sizeof, so that a struct returned by value can grow.
 */
AUTD3_EXTERN autd3_client_config_t autd3_client_config_default(void);
static inline autd3_client_config_t autd3_client_config_default_(void) {
  autd3_client_config_t c;
  autd3_client_config_init(&c, sizeof c);
  return c;
}
#define autd3_client_config_default() autd3_client_config_default_()
/** Validate; AUTD3_E_INVALID_CONFIG with a message naming the field. RT-safe. */
AUTD3_EXTERN autd3_err_t autd3_client_config_validate(const autd3_client_config_t *c);

/** Opaque client. */
typedef struct autd3_client autd3_client_t;
/** Opaque handle of one streaming send (a value, not an address: never dereference it). */
typedef struct autd3_request autd3_request_t;

/*
 * Lifetime
 * ========
 * A client lives from autd3_client_open() until its memory is freed, which
 * happens in the call that ends its last use: autd3_client_close() when no
 * request handle is outstanding, otherwise the wait, poll, wait_for or detach
 * that releases the last handle still outstanding after close.
 *
 * A request handle (from autd3_client_send()) is outstanding until one call
 * ends it: autd3_request_wait(), autd3_request_poll() or
 * autd3_request_wait_for() returning anything but AUTD3_E_PENDING or
 * AUTD3_E_INVALID_HANDLE, or autd3_request_detach() returning AUTD3_OK.
 * After that it is stale. Fire-and-forget sends (`req` NULL) give no handle.
 *
 * With a handle:
 *  - outstanding: exactly one call at a time owns it; another wait, poll,
 *    wait_for or detach on it from another thread meanwhile returns
 *    AUTD3_E_INVALID_HANDLE (never a second owner, never a hang). PENDING
 *    from poll or wait_for leaves it outstanding.
 *  - stale (already waited on or detached, its slot since reused by later
 *    sends, or its client freed): every call returns AUTD3_E_INVALID_HANDLE
 *    and never another request's result. A handle is an integer: a call
 *    reads no memory of a freed client through it. It would match a later
 *    request of the same slot only after 2^32 further sends on that slot
 *    (2^15 on a 32-bit platform). Using a stale handle while, on another
 *    thread, its client is being freed is undefined.
 *  - outstanding at close: still valid, for one call as above; the request
 *    ended as it did (OK or a device's error) or, if it was still in flight
 *    when the bus thread stopped, with AUTD3_E_CLOSED (LINK if the link had
 *    failed). poll never answers PENDING then.
 *
 * With the client, after autd3_client_close() returned and while the client
 * is not yet freed (handles outstanding): a second close, send,
 * send_checked and the reads return AUTD3_E_CLOSED; senders that were
 * blocked on back-pressure wake with AUTD3_E_CLOSED; num_devices, protocol,
 * stats, device_resets and device_status answer with the last values;
 * autd3_client_link() returns NULL (the link is closed: a link pointer taken
 * before must not be used). Once the client is freed, every call with it is
 * undefined (an AUTD3_SANITIZE build reports it).
 *
 * Tests: tests/client/test_handle.c (each statement above), test_client.c
 * (close_wakes_blocked_sender, link_error_fails_pending, close_twice_is_refused).
 */

/**
 * What one device did with one frame (autd3_response_t.outcome[]).
 * EXECUTED: the device acked it (its data byte is in data[]). NOT_EXECUTED:
 * the client knows the device did not execute it (it never accepted it, or it
 * lost its state before it could). UNKNOWN: the protocol cannot tell (e.g.
 * the device was reset while the frame may have been in its queue); the
 * client never guesses. NONE: no outcome recorded (request not finished).
 */
typedef enum autd3_outcome {
  AUTD3_OUTCOME_NONE = 0,
  AUTD3_OUTCOME_EXECUTED = 1,
  AUTD3_OUTCOME_NOT_EXECUTED = 2,
  AUTD3_OUTCOME_UNKNOWN = 3
} autd3_outcome_t;

/** Response of one frame: per device, the data byte returned with its ack and what the device did with the frame. */
typedef struct autd3_response {
  uint16_t num_devices;
  uint8_t data[AUTD3_MAX_DEVICES];
  uint8_t outcome[AUTD3_MAX_DEVICES]; /**< autd3_outcome_t per device */
} autd3_response_t;

/**
 * First non-zero data byte → AUTD3_E_DEVICE (message names the device index
 * and the code; `*device`/`*code` set if non-NULL), else AUTD3_OK. RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_response_check(const autd3_response_t *r, int *device, uint8_t *code);

/**
 * Open the link described by `link`, check that its device count equals the
 * geometry's (1..128), start the bus thread and run the handshake, Clear and
 * Synchronize. Blocks (a few bus cycles), allocates. `config` NULL → defaults.
 */
AUTD3_EXTERN autd3_err_t autd3_client_open(const autd3_geometry_t *geometry, const autd3_link_option_t *link,
                                           const autd3_client_config_t *config, autd3_client_t **out);

/**
 * Queue one frame (streaming). Blocks only while all `max_inflight` slots are
 * in use (back-pressure); takes a short lock shared with other senders; no
 * allocation. On success `*req` is a handle to wait on, poll or detach
 * exactly once (a second use → AUTD3_E_INVALID_HANDLE); pass `req` NULL to
 * fire and forget (the frame is still tracked and acked). A closed client
 * (closed but not yet freed, see Lifetime above) → AUTD3_E_CLOSED.
 */
AUTD3_EXTERN autd3_err_t autd3_client_send(autd3_client_t *c, const autd3_frame_t *frame, autd3_request_t **req);

/**
 * Wait for a request to complete and release the handle. Blocks; no lock, no
 * allocation. `resp` (if non-NULL) gets every device's data byte and outcome
 * in any case. Result: AUTD3_OK iff every device executed the frame (data
 * bytes not checked: see autd3_response_check()); otherwise the error of the
 * lowest-index device that did not, named in autd3_last_error():
 * DEVICE_RESET (the device lost its state and did not execute it), TIMEOUT
 * (the device did not ack it; the client resets it), OUTCOME_UNKNOWN (it may
 * or may not have run it: reset or stale inputs while the frame was in its
 * queue), SECOND_MASTER (another master drives the device); CLOSED or LINK
 * when the client stopped first. A handle already waited on or detached, or
 * one another call owns → AUTD3_E_INVALID_HANDLE (never a hang, never another
 * request's result: see Lifetime).
 */
AUTD3_EXTERN autd3_err_t autd3_request_wait(autd3_request_t *req, autd3_response_t *resp);
/** Like autd3_request_wait() with a deadline: AUTD3_E_PENDING (handle still valid) if not done within `timeout_ms`. Blocks. */
AUTD3_EXTERN autd3_err_t autd3_request_wait_for(autd3_request_t *req, uint32_t timeout_ms, autd3_response_t *resp);
/**
 * Non-blocking, no lock, no allocation: AUTD3_E_PENDING (handle still valid)
 * if not done, else as autd3_request_wait(). RT-safe, except that the call
 * releasing the last handle of a closed client frees the client.
 */
AUTD3_EXTERN autd3_err_t autd3_request_poll(autd3_request_t *req, autd3_response_t *resp);
/**
 * Give the handle up without waiting (the frame stays in flight). Never
 * blocks for long, no allocation. AUTD3_E_INVALID_HANDLE if the handle was
 * already waited on or detached (see Lifetime).
 */
AUTD3_EXTERN autd3_err_t autd3_request_detach(autd3_request_t *req);

/** Stop-and-wait: send, wait, then autd3_response_check() (not with protocol V12, whose data byte is a value and whose device errors fail the request itself). `resp` may be NULL. Blocks. */
AUTD3_EXTERN autd3_err_t autd3_client_send_checked(autd3_client_t *c, const autd3_frame_t *frame, autd3_response_t *resp);

/**
 * Read every device's CPU and FPGA firmware versions (exclusive reads, the
 * reference's sequence: each FPGA read checked through the error detail; an
 * FPGA that answers UnknownCmd reads as 0.0.0, "unknown"). `out` has N
 * entries. Blocks.
 */
AUTD3_EXTERN autd3_err_t autd3_client_read_firmware_version(autd3_client_t *c, autd3_fw_version_t *out);
/** Read every device's latched error detail (exclusive read). `out` has N bytes. Blocks. */
AUTD3_EXTERN autd3_err_t autd3_client_read_error_detail(autd3_client_t *c, uint8_t *out);
/** Read every device's FPGA state byte (exclusive read). `out` has N bytes. Blocks. */
AUTD3_EXTERN autd3_err_t autd3_client_read_fpga_state(autd3_client_t *c, uint8_t *out);

/** The protocol the client speaks (AUTO resolved at open); NEW for NULL. RT-safe. */
AUTD3_EXTERN autd3_protocol_t autd3_client_protocol(const autd3_client_t *c);
/** Number of devices. RT-safe. */
AUTD3_EXTERN size_t autd3_client_num_devices(const autd3_client_t *c);
/** The client's link (for stats, state checks, emulator fault injection). Owned by the client. RT-safe. */
AUTD3_EXTERN autd3_link_t *autd3_client_link(autd3_client_t *c);

/** Client-side counters (the last two appended in 0.1.0 for benchmarks). */
typedef struct autd3_client_stats {
  uint64_t sent;        /**< frames taken by the bus thread */
  uint64_t completed;   /**< frames acked by every device */
  uint64_t failed;      /**< frames failed (timeout, link error, close) */
  uint64_t resyncs;     /**< resync episodes entered */
  uint64_t resets;      /**< reset escalations */
  uint64_t retransmits; /**< cycles spent re-sending the head frame */
  uint64_t bus_cpu_ns;  /**< CPU time the bus thread has used so far (for CPU-use reports) */
  uint64_t bus_cycles;  /**< bus cycles the bus thread has run since the handshake */
  /* appended for exactly-once accounting */
  uint64_t device_resets;    /**< device reboots detected (link evidence or ack 0xFF) */
  uint64_t reinits;          /**< per-device re-establishments completed */
  uint64_t unknown_outcomes; /**< (frame, device) pairs resolved UNKNOWN */
  uint64_t second_master;    /**< devices found driven by another master */
  uint64_t device_timeouts;  /**< devices given up on after resync (TIMEOUT) */
} autd3_client_stats_t;

/** Read the client's counters (thread-safe, RT-safe). `resets` counts per-device recoveries started. */
AUTD3_EXTERN void autd3_client_stats(const autd3_client_t *c, autd3_client_stats_t *out);
/**
 * autd3_client_stats() writing exactly `size` bytes of `out` (a smaller, older struct gets its prefix; a larger
 * one zeros past what the library knows). The macro autd3_client_stats(c, out) passes the caller's sizeof; the
 * exported function of that name writes the 0.3.0 layout. RT-safe. @since 0.3.0
 */
AUTD3_EXTERN void autd3_client_stats_sized(const autd3_client_t *c, autd3_client_stats_t *out, size_t size);
#define autd3_client_stats(c, out) autd3_client_stats_sized((c), (out), sizeof *(out))

/** What the client is doing with one device (autd3_client_device_status_t.state). */
typedef enum autd3_client_device_state {
  AUTD3_CLIENT_DEVICE_READY = 0,      /**< in the stream: new frames are sent to it */
  AUTD3_CLIENT_DEVICE_RECOVERING = 1, /**< being re-established (Reset, SetMode, Clear, Synchronize); frames staged now are NOT_EXECUTED on it */
  AUTD3_CLIENT_DEVICE_FOREIGN = 2,    /**< another master drives it (SECOND_MASTER); left alone until the client is closed */
  /** its inputs were stale for timeout_cycles x max_resync_rounds cycles in a row (unplugged, silent, out of OP): frames
   * staged now are not sent to it (NOT_EXECUTED there); it rejoins the stream by itself, its state kept, once it answers
   * again (docs/reliability.md "A fault costs only its device"). @since 0.5.0 */
  AUTD3_CLIENT_DEVICE_AWAY = 3
} autd3_client_device_state_t;

/** One device as the client sees it. */
typedef struct autd3_client_device_status {
  uint32_t resets;            /**< times the device's state was lost or discarded (= autd3_client_device_resets()) */
  uint32_t reinits;           /**< the `resets` count the last completed re-establishment covers; == resets and READY: fully re-established */
  autd3_client_device_state_t state;
  /* @since 0.5.0: the frames completed so far (the open sequence's included) by what this device did with them */
  uint32_t reserved_;    /**< 0 */
  uint64_t executed;     /**< it executed them (acked) */
  uint64_t not_executed; /**< they never ran on it (e.g. staged while it was being re-established) */
  uint64_t unknown;      /**< their outcome on it is unknown (it rebooted or stopped answering with them in flight) */
  uint64_t aways;        /**< times it went AWAY (its inputs stale for the whole budget; the cycles: autd3_link_device_info()) @since 0.5.0 */
} autd3_client_device_status_t;

/**
 * How many times device `dev`'s firmware state was lost (it rebooted) or
 * discarded (the client reset it after it stopped acking).
 * When this changes, everything the device executed before (patterns,
 * modulation, silencer, ...) is gone: the client re-establishes only its
 * open sequence (Reset, SetMode, Clear, Synchronize), the
 * application must re-send its own state. 0 for a NULL client or a bad
 * index. Thread-safe, RT-safe.
 */
AUTD3_EXTERN uint32_t autd3_client_device_resets(const autd3_client_t *c, uint16_t dev);
/** Device `dev`'s status (thread-safe, RT-safe). AUTD3_E_INVALID_ARGUMENT for NULL or a bad index. */
AUTD3_EXTERN autd3_err_t autd3_client_device_status(const autd3_client_t *c, uint16_t dev, autd3_client_device_status_t *out);
/** autd3_client_device_status() writing exactly `size` bytes of `out`; the macro passes the caller's sizeof. @since 0.3.0 */
AUTD3_EXTERN autd3_err_t autd3_client_device_status_sized(const autd3_client_t *c, uint16_t dev,
                                                          autd3_client_device_status_t *out, size_t size);
#define autd3_client_device_status(c, dev, out) autd3_client_device_status_sized((c), (dev), (out), sizeof *(out))

/**
 * Silence every device, then stop the bus thread, fail every request still in
 * flight with AUTD3_E_CLOSED (their handles stay valid until waited on or
 * detached), close the link and free the client (frees; not RT-safe).
 *
 * Silencing: first, a zero output pattern (WritePatternFused, raw, bank 0,
 * all 249 emissions zero, immediate transition: what the reference client
 * autd3-rs 0.9.0 sends at close) queued behind the frames already sent, so
 * every device ends silent whatever it was told before. A device being
 * re-established is silenced once it is back (its re-establishment's Clear
 * already zeroes its output). Bounded by `close_timeout_ms`: the client is
 * closed in any case.
 *
 * Returns AUTD3_OK if every device executed the silencing frame. Otherwise
 * the client is closed all the same and the result names the devices that may
 * still be emitting (autd3_last_error()): AUTD3_E_TIMEOUT (no ack within
 * close_timeout_ms, or its frame failed), AUTD3_E_SECOND_MASTER (another
 * master drives it: left alone), AUTD3_E_LINK (the link had failed: nothing
 * could be sent), AUTD3_E_DEVICE (the device answered the silencing frame
 * with an error code). NULL → AUTD3_OK.
 *
 * Blocks: one round trip of the silencing frame (a few bus cycles) after the
 * frames in flight, at most close_timeout_ms, then about one bus cycle plus
 * the link's close. Senders blocked on back-pressure in other threads wake
 * and fail with AUTD3_E_CLOSED. A second close while the client is still
 * alive (handles outstanding, see Lifetime above) is ignored
 * (AUTD3_E_CLOSED); once the client is freed it is undefined. @since 0.1.0; returns a result since 0.2.0.
 */
AUTD3_EXTERN autd3_err_t autd3_client_close(autd3_client_t *c);

#ifdef __cplusplus
}
#endif
#endif
