/**
 * @file link_driver.h
 * @brief For link implementers: the vtable every link implements and the
 * registry that maps a link kind to its open function.
 *
 * Built-in links (emulator, echocat, TwinCAT, Remote) register themselves in
 * libautd3. Links in separate libraries (SOEM: GPL-3.0-only; EtherCrab: Rust)
 * export an autd3_link_<kind>_register() the application calls (with
 * GCC/Clang builds they also register themselves when loaded).
 *
 * A link object starts with a `struct autd3_link` header; the library owns
 * the header's counters, the implementation everything after it.
 * @since 0.1.0
 */
#ifndef AUTD3_LINK_DRIVER_H
#define AUTD3_LINK_DRIVER_H

#include "autd3/link.h"

/*
 * The header's counters are C11 atomics, and C++ has no `_Atomic` (C++23's
 * <stdatomic.h> maps it to std::atomic, whose layout the standard does not tie
 * to C's). Only libautd3's C code touches them (through autd3_link_init(),
 * autd3_link_count_cycle(), autd3_link_report_device_reset()), so C++ sees
 * opaque storage of the same size and alignment: a lock-free C11 atomic of a
 * 4- or 8-byte integer has the integer's size and is aligned to it, which
 * tests/api checks by comparing offsetof/sizeof from both languages. A C++
 * link implementation derives nothing else from these fields.
 */
#ifdef __cplusplus
#  define AUTD3_LINK_ATOMIC_(T) alignas(sizeof(T)) T
#else
#  include <stdatomic.h>
#  define AUTD3_LINK_ATOMIC_(T) _Atomic T
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Operations of one link implementation. */
typedef struct autd3_link_vtable {
  /**
   * One bus cycle (see autd3_link_cycle()). Paces itself. Must not allocate,
   * must not take a lock that another thread can hold for long, must not block
   * on anything but its own I/O. Report stale/lost cycles through
   * autd3_link_count_cycle().
   */
  autd3_err_t (*cycle)(struct autd3_link *link, const uint8_t *tx, uint8_t *rx, bool *rx_valid);
  /** State check and recovery (see autd3_link_check_state()); may run concurrently with cycle. */
  autd3_err_t (*check_state)(struct autd3_link *link, autd3_link_status_t *out);
  /** Close and free everything, including the object itself. */
  void (*close)(struct autd3_link *link);
  /**
   * Optional (may be NULL): link-specific diagnostics as text lines
   * ("name : value"), e.g. echocat's departure jitter; see autd3_link_diagnostics().
   */
  size_t (*diagnostics)(struct autd3_link *link, char *buf, size_t cap);
  /**
   * Optional (may be NULL): block until shortly before the next exchange, so
   * that the caller stages its tx as late as possible; the cycle() that
   * follows then sends at that exchange's deadline without another full
   * sleep. Lets a link cut up to one cycle of pick-up latency. Same rules as
   * cycle (no allocation, bus thread only).
   */
  autd3_err_t (*wait_next_cycle)(struct autd3_link *link);
} autd3_link_vtable_t;

/** Header of every link object. */
struct autd3_link {
  const autd3_link_vtable_t *vt;
  autd3_link_kind_t kind;
  uint16_t num_devices;
  /* Owned by libautd3 (atomics in C, opaque storage in C++; see above). */
  AUTD3_LINK_ATOMIC_(uint64_t) cycles;
  AUTD3_LINK_ATOMIC_(uint64_t) stale_cycles;
  AUTD3_LINK_ATOMIC_(uint64_t) lost_cycles;
  /* Evidence of device resets (autd3_link_report_device_reset()): a count per
   * device and their sum, bumped after the per-device count. */
  AUTD3_LINK_ATOMIC_(uint32_t) device_resets[AUTD3_MAX_DEVICES];
  AUTD3_LINK_ATOMIC_(uint32_t) device_resets_any;
};

/**
 * Initialise a link header (counters zero).
 * Context: the implementation's open function, before the link is published; no allocation.
 */
AUTD3_EXTERN void autd3_link_init(struct autd3_link *link, const autd3_link_vtable_t *vt, autd3_link_kind_t kind, uint16_t num_devices);
/**
 * Count one cycle: stale if !rx_valid, lost (and stale) if `lost`. Lock-free.
 * Context: the bus thread (from cycle); RT-safe.
 */
AUTD3_EXTERN void autd3_link_count_cycle(struct autd3_link *link, bool rx_valid, bool lost);

/**
 * Report evidence that device `dev` lost its firmware state (power-cycled and
 * re-configured from INIT, an emulated power-cycle, a runtime that re-inited
 * the slave). Call it before the first cycle whose valid inputs carry that
 * device's post-reset answer, so the client never reads a rebooted device's
 * ack 0xFF as an acknowledgement. Lock-free; any thread.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN void autd3_link_report_device_reset(struct autd3_link *link, uint16_t dev);

/** Open function of a link kind. `option->kind` is the registered kind. */
typedef autd3_err_t (*autd3_link_open_fn)(const autd3_link_option_t *option, const autd3_geometry_t *geometry, struct autd3_link **out);

/**
 * Register (or replace) the open function of `kind`. Thread-safe; call before opening.
 * Context: any thread; RT-safe (an atomic store); call before opening a link of `kind`.
 */
AUTD3_EXTERN autd3_err_t autd3_link_register(autd3_link_kind_t kind, autd3_link_open_fn open);

/**
 * Set the calling thread's detailed error message (printf format) and return
 * `err`, so a link can write `return autd3_set_error(AUTD3_E_NO_DEVICE, "echocat: no slave on %s", ifname);`.
 * Context: any thread; never blocks; no allocation (formats into the calling thread's 512-byte buffer, truncating).
 */
AUTD3_EXTERN autd3_err_t autd3_set_error(autd3_err_t err, const char *fmt, ...)
#if defined(__MINGW32__)
    /* MinGW: libautd3 formats with the C99 printf (%zu, %lld), not msvcrt's */
    __attribute__((format(gnu_printf, 2, 3)))
#elif defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif
