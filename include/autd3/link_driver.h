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
   * autd3_link_count_cycle(), and, if the link can tell, which devices'
   * inputs are valid through autd3_link_report_inputs().
   */
  autd3_err_t (*cycle)(struct autd3_link *link, const uint8_t *tx, uint8_t *rx, bool *rx_valid);
  /**
   * State check and recovery (see autd3_link_check_state()); may run concurrently with cycle. Fills state,
   * al_state, recoveries and `measured` (AUTD3_LINK_STATUS_STATES / _RECOVERIES for what it observes);
   * libautd3 derives device_recoveries from consecutive checks.
   */
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
   * cycle (no allocation, bus thread only). The client skips it before a
   * cycle when more frames are queued than that cycle takes: nobody then
   * waits for that cycle's inputs before the next frame, and a link may
   * return older inputs to save a wake-up (echocat: the previous read's).
   */
  autd3_err_t (*wait_next_cycle)(struct autd3_link *link);
} autd3_link_vtable_t;

/**
 * Header of every link object.
 *
 * It grows at its end only. `header_size_` (in what was padding before 0.5.0, so no field moved) holds how
 * much of it the link's object has: autd3_link_init() (a macro passing sizeof *link) stores the caller's
 * sizeof; the exported function of that name, which a link built against an older header calls, stores the
 * 0.3.0 size. libautd3 touches a field past that size only if the link has it: an older link simply has no
 * phase, exchange or per-device statistics (their `measured` bits stay clear).
 */
struct autd3_link {
  const autd3_link_vtable_t *vt;
  autd3_link_kind_t kind;
  uint16_t num_devices;
  uint16_t header_size_; /**< set by autd3_link_init(); @since 0.5.0 */
  /* Owned by libautd3 (atomics in C, opaque storage in C++; see above). */
  AUTD3_LINK_ATOMIC_(uint64_t) cycles;
  AUTD3_LINK_ATOMIC_(uint64_t) stale_cycles;
  AUTD3_LINK_ATOMIC_(uint64_t) lost_cycles;
  /* Evidence of device resets (autd3_link_report_device_reset()): a count per
   * device and their sum, bumped after the per-device count. */
  AUTD3_LINK_ATOMIC_(uint32_t) device_resets[AUTD3_MAX_DEVICES];
  AUTD3_LINK_ATOMIC_(uint32_t) device_resets_any;
  /* @since 0.5.0: the statistics the link reports samples of (autd3_link_report_*) */
  AUTD3_LINK_ATOMIC_(uint32_t) measured;
  AUTD3_LINK_ATOMIC_(uint64_t) phase_excursions;
  AUTD3_LINK_ATOMIC_(uint64_t) phase_worst_ns;
  AUTD3_LINK_ATOMIC_(uint64_t) exchanges;
  AUTD3_LINK_ATOMIC_(uint64_t) exchange_ns_total;
  AUTD3_LINK_ATOMIC_(uint64_t) exchange_worst_ns;
  AUTD3_LINK_ATOMIC_(uint64_t) device_stale[AUTD3_MAX_DEVICES];
  /* the EtherCAT recovery helper of the link, if it made one (autd3_link_device_info() reads registers through it) */
  AUTD3_LINK_ATOMIC_(uintptr_t) ecat_recovery_;
  /* the last DC time sample (autd3_link_report_dc_time): a sequence count, odd while it is written */
  AUTD3_LINK_ATOMIC_(uint32_t) dc_seq_;
  AUTD3_LINK_ATOMIC_(uint64_t) dc_host_ns_;
  AUTD3_LINK_ATOMIC_(uint64_t) dc_time_ns_;
  /* per-device recoveries, derived from consecutive state checks (the checker's thread only) */
  uint8_t checked_state_[AUTD3_MAX_DEVICES];
  uint32_t device_recoveries_[AUTD3_MAX_DEVICES];
};

/**
 * Initialise a link header (counters zero) of `header_size` bytes (sizeof(struct autd3_link) as the link was
 * compiled). In source, autd3_link_init(link, vt, kind, n) is a macro passing sizeof *(link); the exported
 * function of that name is for links built against an older header.
 * Context: the implementation's open function, before the link is published; no allocation. @since 0.5.0
 */
AUTD3_EXTERN void autd3_link_init_sized(struct autd3_link *link, const autd3_link_vtable_t *vt, autd3_link_kind_t kind,
                                        uint16_t num_devices, size_t header_size);
/**
 * Initialise a link header of the 0.3.0 layout (counters zero). See autd3_link_init_sized().
 * Context: the implementation's open function, before the link is published; no allocation.
 */
AUTD3_EXTERN void autd3_link_init(struct autd3_link *link, const autd3_link_vtable_t *vt, autd3_link_kind_t kind, uint16_t num_devices);
#define autd3_link_init(link, vt, kind, n) autd3_link_init_sized((link), (vt), (kind), (n), sizeof *(link))
/**
 * Count one cycle: stale if !rx_valid, lost (and stale) if `lost`. Lock-free.
 * Context: the bus thread (from cycle); RT-safe.
 */
AUTD3_EXTERN void autd3_link_count_cycle(struct autd3_link *link, bool rx_valid, bool lost);

/**
 * Declare, at open, which statistics the link measures (AUTD3_LINK_MEASURES_* bits; STALE is always set).
 * A report below also sets its bit. Lock-free.
 * Context: any thread; RT-safe. @since 0.5.0
 */
AUTD3_EXTERN void autd3_link_set_measured(struct autd3_link *link, uint32_t measured);
/**
 * One exchange took `elapsed_ns` (the link's own measure, e.g. its cyclic frame from send to receive):
 * exchanges, their total and the worst. Lock-free.
 * Context: the bus thread (from cycle); RT-safe. @since 0.5.0
 */
AUTD3_EXTERN void autd3_link_report_exchange(struct autd3_link *link, uint64_t elapsed_ns);
/**
 * One phase sample: the cyclic frame reached the devices `deviation_ns` after (negative: before) the point the
 * link aimed it at; it stayed in the SYNC0 interval it was aimed at if it came at most `early_ns` before and
 * less than `late_ns` after that point, otherwise it is a phase excursion. Keeps the worst |deviation|.
 * Lock-free.
 * Context: the bus thread (from cycle); RT-safe. @since 0.5.0
 */
AUTD3_EXTERN void autd3_link_report_phase(struct autd3_link *link, int64_t deviation_ns, uint64_t early_ns, uint64_t late_ns);
/**
 * One sample of the devices' clock: the reference clock's DC system time was `dc_ns` at host monotonic time
 * `host_ns` (e.g. the middle of the round trip of a frame whose FRMW read it). Keeps the last one, as a
 * consistent pair for readers (autd3_link_stats_t.dc_sample_*). Lock-free, one writer.
 * Context: the bus thread (from cycle); RT-safe. @since 0.5.0
 */
AUTD3_EXTERN void autd3_link_report_dc_time(struct autd3_link *link, uint64_t host_ns, uint64_t dc_ns);
/**
 * Counts measured elsewhere, added as they are (a link relaying another: the Remote link adds the phase
 * excursions its server's link counted since the previous reply): stale and lost cycles (a lost one is also
 * stale: `stale` includes `lost`), phase excursions, and a worst phase deviation to keep if larger. Lock-free.
 * Context: the bus thread (from cycle); RT-safe. @since 0.5.0
 */
AUTD3_EXTERN void autd3_link_add_counts(struct autd3_link *link, uint64_t stale, uint64_t lost, uint64_t phase_excursions,
                                        uint64_t worst_phase_deviation_ns);

/**
 * Optional: the validity of this cycle's inputs per device, for a link that
 * can tell which devices answered (e.g. a working counter per device).
 * `valid[d]` for each of the link's devices: device d's bytes in rx are its
 * answer to this cycle. Call it from cycle(), before cycle returns; the
 * cycle's own `*rx_valid` keeps its meaning (every device valid, and
 * whatever else the link requires of a whole cycle). A link that never calls
 * it reports every device as its `*rx_valid` says, so a cycle with one
 * device missing costs every device its inputs (docs/reliability.md "A fault
 * costs only its device"). Copies num_devices bools into the caller's buffer
 * of autd3_link_cycle_devices(); outside such a call it does nothing.
 * Context: the bus thread (from cycle); RT-safe; no allocation. @since 0.4.0
 */
AUTD3_EXTERN void autd3_link_report_inputs(struct autd3_link *link, const bool *valid);

/**
 * Report evidence that device `dev` lost its firmware state (power-cycled and
 * re-configured from INIT, an emulated power-cycle, a runtime that re-inited
 * the slave). Call it before the first cycle whose valid inputs carry that
 * device's post-reset answer, so the client never reads a rebooted device's
 * ack 0xFF as an acknowledgement. Lock-free; any thread.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN void autd3_link_report_device_reset(struct autd3_link *link, uint16_t dev);

/**
 * Optional, from wait_next_cycle: the latest monotonic time (ns, the clock of the services' now_ns) at which the
 * cycle() that follows still carries its tx to the exchange this wait prepared. wait_next_cycle returns early
 * enough for a caller that still has to wake up and stage; a caller whose staging is only a pointer swap (the
 * remote server's bus thread, waiting for its network thread's next request) may keep waiting for a new tx until
 * shortly before this point. A link that never calls it leaves every caller to stage at once, as before. Only the
 * wait_next_cycle call in progress on the calling thread hears it.
 * Context: the bus thread (from wait_next_cycle); RT-safe; no allocation. @since 0.4.0
 */
AUTD3_EXTERN void autd3_link_report_stage_deadline(struct autd3_link *link, uint64_t deadline_ns);

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

/* ------------------------------------------------------------------ services */

/**
 * Version of the services table this header describes. The table only grows:
 * version N+1 appends members after those of N and changes none, so a link
 * built against version N works with every libautd3 that offers N or later.
 * Version 1: errors, time, the pacer, threads, NIC, capture tap, one master
 * per chain, the AUTD3 identity check.
 * Version 2: EtherCAT device recovery (autd3_link_ecat_recovery_t) and the
 * distributed-clock re-alignment arithmetic.
 * Version 3: the EtherCAT bring-up's OP wait (autd3_link_ecat_bringup_ops_t)
 * and the adapter checks of a link whose master library opens the adapter
 * itself (nic_probe, nic_is_loopback).
 */
#define AUTD3_LINK_SERVICES_VERSION 3u

/** A thread started through the services (opaque to the link). */
typedef struct autd3_link_thread {
  uintptr_t handle;
} autd3_link_thread_t;
/** A raw EtherCAT socket on one adapter (opaque). */
typedef struct autd3_link_nic autd3_link_nic_t;
/** A passive tap of one adapter: capture file and/or foreign-master watch (opaque). */
typedef struct autd3_link_tap autd3_link_tap_t;
/** One master per chain: the per-interface lock of an open link (opaque). */
typedef struct autd3_link_master_guard autd3_link_master_guard_t;

/**
 * The pacer: absolute deadlines on a grid of `period_ns`, the one pacing
 * mechanism of the links (docs/architecture.md "Pacing").
 *
 * Lateness policy (the same for every link that paces with it): a wake-up
 * after its point is *late* (counted, and the worst lateness kept, both
 * against the point it was due at); the exchange then runs at once and keeps
 * the grid. Late by a whole period or
 * more, the missed points are *skipped* (counted) and the exchange takes the
 * latest point not after now: a late caller never bursts through the points
 * it missed. Lateness below AUTD3_LINK_PACER_LATE_NS is the OS's wake-up
 * granularity, not a late cycle, and is not counted.
 *
 * Fields are the link's (written by the bus thread); the counters may be read
 * from any thread. Zero-initialised = unanchored with period 0.
 */
typedef struct autd3_link_pacer {
  uint64_t period_ns;
  uint64_t next_ns; /**< next point (monotonic ns); 0 = unanchored: the next wait returns at once */
  uint32_t spin_ns; /**< busy-wait the last spin_ns before a point (0 = sleep only) */
  AUTD3_LINK_ATOMIC_(uint64_t) late;        /**< wake-ups at least AUTD3_LINK_PACER_LATE_NS after their point */
  AUTD3_LINK_ATOMIC_(uint64_t) skipped;     /**< points skipped because the caller came a period or more late */
  AUTD3_LINK_ATOMIC_(uint64_t) max_late_ns; /**< worst lateness of a wake-up */
} autd3_link_pacer_t;

/** Lateness the pacer counts (see autd3_link_pacer_t): 50 µs, the default timer slack of Linux. */
#define AUTD3_LINK_PACER_LATE_NS 50000u

/**
 * EtherCAT device recovery (services version 2): the one state checker and
 * recovery of the EtherCAT links (echocat, SOEM, EtherCrab). Per device, a
 * check reads the AL status and
 *  - OP: operational (the error flag alone does not stop OP); ends an episode;
 *  - SAFE-OP+ERROR: acknowledges the error; SAFE-OP: requests OP;
 *  - INIT (its firmware state is gone: power-cycled) or PRE-OP: reports the
 *    reset (INIT, once per episode, through autd3_link_report_device_reset())
 *    and brings it back: INIT -> restore -> PRE-OP -> DC re-alignment ->
 *    SAFE-OP, then requests OP;
 *  - no answer: LOST; if an ESC answers at its ring position with the
 *    power-on station address 0 (power-cycled), it is re-addressed, its reset
 *    reported and it is brought back as above;
 *  - a bring-up that failed is retried after a back-off that doubles from
 *    100 ms to 1.6 s (a device that keeps failing is not hammered every check).
 * It counts a recovery each time every device is back in OP after a problem.
 * The link supplies the bus primitives below; the steps it leaves NULL are
 * done generically from them.
 */
typedef struct autd3_link_ecat_recovery autd3_link_ecat_recovery_t;

/** The link's bus primitives for autd3_link_ecat_recovery_t (called on the checking thread). */
typedef struct autd3_link_ecat_ops {
  void *ctx; /**< passed to every primitive */
  /**
   * Read `len` bytes of ESC register `reg` of device `dev` (0-based), at its
   * station address, or at its ring position if `by_position`. *wkc = the
   * working counter (0: nobody answered, which is AUTD3_OK). Another error
   * means the link itself failed (the check returns it). Required.
   */
  autd3_err_t (*read)(void *ctx, uint16_t dev, bool by_position, uint16_t reg, void *buf, uint16_t len, uint16_t *wkc);
  /** Write, as read. Required. */
  autd3_err_t (*write)(void *ctx, uint16_t dev, bool by_position, uint16_t reg, const void *buf, uint16_t len,
                       uint16_t *wkc);
  /** Optional: every device's AL status (0x0130) at once; answered[d] false = no reply. NULL: one read per device. */
  autd3_err_t (*read_states)(void *ctx, uint16_t *al, bool *answered);
  /**
   * Optional: device `dev` did not answer at its station address; if the ESC
   * at its ring position has the power-on address 0 (power-cycled), give it
   * its station address back and set *readdressed. NULL: read 0x0010 by
   * position; if 0, write the configured station address.
   */
  autd3_err_t (*readdress)(void *ctx, uint16_t dev, bool *readdressed);
  /** Optional: in INIT, what the device lost besides DC (identity, mailbox, SM, FMMU). NULL: SM and FMMU as read at creation. */
  autd3_err_t (*restore)(void *ctx, uint16_t dev);
  /**
   * Optional: in PRE-OP, the device's DC system-time offset, delay and SYNC0
   * (and whatever else the link configures in PRE-OP). NULL: delay and SYNC0
   * as read at creation, offset from a device in OP (services autd3__ecat_dc_offset),
   * SYNC0 on the chain's grid (services autd3__ecat_dc_sync0_restart).
   */
  autd3_err_t (*realign_dc)(void *ctx, uint16_t dev);
  /**
   * Optional: replaces the whole INIT -> SAFE-OP walk (restore, DC) for a
   * master whose own library re-configures a slave (SOEM's ecx_reconfig_slave).
   * Must leave the device in SAFE-OP; OP is requested after it.
   */
  autd3_err_t (*reconfigure)(void *ctx, uint16_t dev);
} autd3_link_ecat_ops_t;

/** Configuration of autd3_link_ecat_recovery_t. */
typedef struct autd3_link_ecat_recovery_config {
  uint32_t size;             /**< sizeof(autd3_link_ecat_recovery_config_t) */
  uint32_t state_timeout_ms; /**< per state transition of a bring-up */
  const uint16_t *stations;  /**< configured station address per device (copied); NULL only with a readdress primitive */
} autd3_link_ecat_recovery_config_t;

/**
 * The EtherCAT bring-up's OP wait (services version 3), once for every
 * EtherCAT link (echocat, SOEM, EtherCrab). With every device in SAFE-OP and
 * its process data mapped, it runs the link's cycle with zero outputs:
 *  - warm-up: `warmup_cycles` cycles in SAFE-OP (SYNC0 and the link's pacing
 *    settle; the devices see outputs before OP), then OP is requested;
 *  - OP counts once 5 consecutive cycles came back whole, with the working
 *    counter the link expects (the same value each of those cycles) and every
 *    device reading OP, and a state read then finds every device in OP;
 *  - while no cycle is good, every 100 ms: a device in SAFE-OP+ERROR gets its
 *    error acknowledged, one in SAFE-OP OP requested again;
 *  - no OP within `op_wait_timeout_ms` of the OP request: STATE_TIMEOUT
 *    naming each device not in OP with its AL status code (or, all in OP, the
 *    last working counter).
 * A link's cycle error ends it with that error. The rules are those of the
 * new-generation AUTD3 links (crate autd3-rs-link-soem 0.6.1 src/link.rs,
 * crate autd3-rs-link-ethercrab 0.7.0 src/link/open.rs).
 */
/** Process-data cycles in SAFE-OP before OP is requested: the EtherCAT links' default. */
#define AUTD3_LINK_ECAT_WARMUP_CYCLES 200u

/** One process-data cycle of the bring-up, as the link saw it. */
typedef struct autd3_link_ecat_cycle {
  uint16_t wkc; /**< working counter of the process data (a link that judges several frames: any value constant while good) */
  bool wkc_ok;  /**< the working counter(s) are those of every device in OP (a link that cannot know in advance: it came back) */
  bool lost;    /**< a frame of the cycle did not come back */
  bool all_op;  /**< every device read OP in this cycle's frames (a cycle that reads no AL status: true, the final state read checks) */
} autd3_link_ecat_cycle_t;

/** The link's primitives for the OP wait (called on the opening thread). All required. */
typedef struct autd3_link_ecat_bringup_ops {
  void *ctx; /**< passed to every primitive */
  /** One process-data cycle with zero outputs, paced as the link's cycle is (it sleeps to its send point). */
  autd3_err_t (*exchange)(void *ctx, autd3_link_ecat_cycle_t *out);
  /** Request OP from every device. */
  autd3_err_t (*request_op)(void *ctx);
  /** Every device's AL status (0x0130) and AL status code (0x0134); answered[d] false: no reply. */
  autd3_err_t (*read_states)(void *ctx, uint16_t *al, uint16_t *code, bool *answered);
  /** Write AL control (0x0120) of device `dev` (0-based). */
  autd3_err_t (*write_control)(void *ctx, uint16_t dev, uint16_t value);
} autd3_link_ecat_bringup_ops_t;

/** Configuration of the OP wait. */
typedef struct autd3_link_ecat_bringup_config {
  uint32_t size;               /**< sizeof(autd3_link_ecat_bringup_config_t) */
  uint16_t devices;            /**< devices on the bus (1..AUTD3_MAX_DEVICES) */
  uint32_t warmup_cycles;      /**< cycles before OP is requested (AUTD3_LINK_ECAT_WARMUP_CYCLES) */
  uint32_t op_wait_timeout_ms; /**< from the OP request (autd3_ethercat_option_t.op_wait_timeout_ms) */
  const char *who;             /**< message prefix ("soem") */
  const char *ifname;          /**< the adapter, for messages */
} autd3_link_ecat_bringup_config_t;

/**
 * What libautd3 offers a link built outside it (the SOEM and EtherCrab
 * libraries use nothing else of libautd3's insides), so that such a library
 * never compiles its own copy of libautd3's platform, NIC or EtherCAT code.
 * The members behave as documented for libautd3's own links; "open time"
 * members may allocate and block, the others are fit for a bus thread's
 * cycle (no allocation, no lock a user thread can hold).
 */
typedef struct autd3_link_services {
  uint32_t version; /**< AUTD3_LINK_SERVICES_VERSION of the library that made the table */
  uint32_t size;    /**< sizeof the table in that library */

  /* ---- errors (version 1) */
  /** autd3_set_error(). */
  autd3_err_t (*set_error)(autd3_err_t err, const char *fmt, ...)
#if defined(__GNUC__)
      __attribute__((format(printf, 2, 3)))
#endif
      ;

  /* ---- time (version 1) */
  /** Monotonic clock, ns. Never goes back. */
  uint64_t (*now_ns)(void);
  /** Wall clock, ns since the Unix epoch. */
  uint64_t (*realtime_ns)(void);
  /** Sleep until monotonic `deadline_ns` (returns at once if past); busy-wait the last `spin_ns`. */
  void (*sleep_until_ns)(uint64_t deadline_ns, uint32_t spin_ns);
  /** Relative sleep. */
  void (*sleep_ns)(uint64_t ns);

  /* ---- the pacer (version 1; see autd3_link_pacer_t) */
  /** Period and spin; unanchored, counters zero. */
  void (*pacer_init)(autd3_link_pacer_t *p, uint64_t period_ns, uint32_t spin_ns);
  /** Put the next point at `point_ns` (the grid follows it); 0 = unanchored. */
  void (*pacer_anchor)(autd3_link_pacer_t *p, uint64_t point_ns);
  /** Sleep until the next point (lateness policy above), advance the grid by a period; returns the point (now if unanchored). */
  uint64_t (*pacer_wait)(autd3_link_pacer_t *p);

  /* ---- threads (version 1). The bus thread is the client's: a link never
   * changes the RT policy of the thread that calls its vtable; set_rt is for
   * the link's own threads (e.g. the ethercat option's rt_priority/rt_cpu). */
  /** Start fn(arg) on a new thread named `name` (open time). */
  autd3_err_t (*thread_start)(autd3_link_thread_t *t, void *(*fn)(void *), void *arg, const char *name);
  /** Join it. */
  void (*thread_join)(autd3_link_thread_t *t);
  /** SCHED_FIFO `priority` (1..99, 0 = leave) and CPU `cpu` (-1 = leave) for the calling (link-owned) thread. PERMISSION with a message if refused. */
  autd3_err_t (*thread_set_rt)(int priority, int cpu);

  /* ---- NIC (version 1): raw EtherCAT frames (EtherType 0x88A4) on one adapter */
  /** Open `ifname` (open time). NO_INTERFACE, PERMISSION (names CAP_NET_RAW), IO. */
  autd3_err_t (*nic_open)(const char *ifname, autd3_link_nic_t **out);
  /** Send one Ethernet frame (header included). */
  autd3_err_t (*nic_send)(autd3_link_nic_t *nic, const uint8_t *frame, size_t len);
  /** Next EtherCAT frame not sent by this handle, waiting until monotonic `deadline_ns` (0 = no wait); TIMEOUT if none. */
  autd3_err_t (*nic_recv)(autd3_link_nic_t *nic, uint8_t *buf, size_t cap, size_t *len, uint64_t deadline_ns);
  /** The adapter's MAC address. */
  void (*nic_mac)(const autd3_link_nic_t *nic, uint8_t mac[6]);
  /** Close (NULL is fine). */
  void (*nic_close)(autd3_link_nic_t *nic);
  /** Names of the adapters that are up, loopback excluded (open time). */
  autd3_err_t (*nic_list)(char (*names)[32], size_t cap, size_t *count);

  /* ---- capture tap (version 1): the one capture path (docs/architecture.md "Capture") */
  /**
   * Start a passive tap of `ifname` on its own thread, before the link's
   * first frame: every EtherCAT frame of the adapter, both directions, into
   * the pcap file `capture_path` (NULL: none), and, with `master_mac`, a
   * count of frames from any other source (another master). The tap thread
   * gets `rt_priority`/`rt_cpu` (0/-1: leave). Open time.
   */
  autd3_err_t (*tap_start)(const char *ifname, const char *capture_path, const uint8_t *master_mac, int rt_priority,
                           int rt_cpu, autd3_link_tap_t **out);
  /** Frames from another master so far; `mac` (may be NULL) gets the first one's source. Lock-free. */
  uint64_t (*tap_foreign)(autd3_link_tap_t *tap, uint8_t mac[6]);
  /** Frames written to the file so far. */
  uint64_t (*tap_frames)(const autd3_link_tap_t *tap);
  /** Write what is queued, stop, close, free (NULL is fine). Close time. */
  void (*tap_stop)(autd3_link_tap_t *tap);

  /* ---- one master per chain (version 1; docs/echocat.md "One master per chain") */
  /** Lock `ifname` and listen for a foreign master (open time); SECOND_MASTER names the holder. `who` prefixes messages. */
  autd3_err_t (*master_guard_take)(const char *ifname, const char *who, autd3_link_master_guard_t **out);
  /** Release (NULL is fine). */
  void (*master_guard_release)(autd3_link_master_guard_t *g);
  /** "aa:bb:cc:dd:ee:ff" into out. */
  void (*mac_format)(const uint8_t mac[6], char out[18]);
  /** The tap saw another master's frames (tap_foreign != 0): set and return SECOND_MASTER with the message every EtherCAT link gives. */
  autd3_err_t (*foreign_master_error)(const char *who, const char *ifname, const char *when, autd3_link_tap_t *tap);

  /* ---- AUTD3 identity (version 1) */
  /** Vendor, product and name are an AUTD3's. */
  bool (*ecat_is_autd)(uint32_t vendor, uint32_t product, const char *name);
  /** AUTD3_OK, or NOT_AUTD with the one message every EtherCAT link gives. */
  autd3_err_t (*ecat_check_identity)(const char *who, const char *ifname, uint16_t position, uint32_t vendor,
                                     uint32_t product, const char *name);

  /* ---- EtherCAT recovery and DC re-alignment (version 2) */
  /**
   * Create the recovery helper of `link` (its num_devices devices, all in OP
   * now). Reads each device's SM, FMMU and DC setup through ops->read when
   * the generic restore or DC step is used. Open time (allocates, blocks).
   */
  autd3_err_t (*ecat_recovery_create)(struct autd3_link *link, const autd3_link_ecat_ops_t *ops,
                                      const autd3_link_ecat_recovery_config_t *config, autd3_link_ecat_recovery_t **out);
  /**
   * One state check with recovery (the rules at autd3_link_ecat_recovery_t)
   * into `out` (state, al_state, recoveries). Serialised internally; blocks
   * for the bus primitives; no allocation. The link's check_state.
   */
  autd3_err_t (*ecat_recovery_check)(autd3_link_ecat_recovery_t *rec, autd3_link_status_t *out);
  /** Free (NULL is fine). Close time. */
  void (*ecat_recovery_free)(autd3_link_ecat_recovery_t *rec);
  /** DC offset (0x0920) making a clock whose local time read `local` agree with `ref_system` plus `delay` (src/ecat/dc.h). */
  uint64_t (*autd3__ecat_dc_offset)(uint64_t ref_system, uint64_t local, uint32_t delay);
  /** Offset that continues the old time base for a restarted reference clock (src/ecat/dc.h). */
  uint64_t (*autd3__ecat_dc_rebase_offset)(uint64_t ref_offset, uint64_t ref_system, uint64_t other_system);
  /** SYNC0 start for a re-joining slave: the chain grid's next edge >= 100 ms after `systime` (src/ecat/dc.h). */
  uint64_t (*autd3__ecat_dc_sync0_restart)(uint64_t grid_start, uint32_t cycle_ns, int32_t shift_ns, uint64_t systime);

  /* ---- EtherCAT bring-up (version 3) */
  /**
   * The OP wait (the rules at autd3_link_ecat_bringup_ops_t); *wkc = the
   * working counter of the good cycles. Open time (blocks; no allocation).
   */
  autd3_err_t (*ecat_bringup)(const autd3_link_ecat_bringup_ops_t *ops, const autd3_link_ecat_bringup_config_t *config,
                              uint16_t *wkc);

  /* ---- the adapter, for a link whose master library opens it itself (version 3) */
  /**
   * The OS name of the adapter `ifname` names (matched as nic_open does) into
   * `os_name` (`cap` bytes), checked as a master library opening it itself
   * will use it: NO_INTERFACE (none, ambiguous, or its name does not fit),
   * PERMISSION (raw EtherCAT frames refused; with `promiscuous`, where the
   * library switches the adapter to promiscuous mode through the OS itself
   * (SOEM's Linux port), also the OS refusing this process that change: the
   * message names what grants it), NO_DEVICE (the adapter is down). `who`
   * prefixes messages. Open time.
   */
  autd3_err_t (*nic_probe)(const char *ifname, const char *who, bool promiscuous, char *os_name, size_t cap);
  /** The adapter (OS name) is a loopback one (false if unknown). Open time. */
  bool (*nic_is_loopback)(const char *os_name);
} autd3_link_services_t;

/**
 * The services table, if this library offers at least `version` (pass
 * AUTD3_LINK_SERVICES_VERSION); NULL, with AUTD3_E_INVALID_ARGUMENT's message
 * naming both versions, if it is older. The table is static: keep the pointer.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN const autd3_link_services_t *autd3_link_services(uint32_t version);

#ifdef __cplusplus
}
#endif
#endif
