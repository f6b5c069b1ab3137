/**
 * @file link.h
 * @brief Links: the physical path from the host to a chain of AUTD3 devices.
 *
 * Every link offers the same interface: one call to autd3_link_cycle() is one
 * bus cycle for all devices (N × 626 bytes out, N × 2 bytes in, device 0
 * first in bus order). A link is opened from a tagged ::autd3_link_option_t;
 * swapping the link changes no caller code.
 *
 * Most users never touch a link directly: autd3_client_open() opens one and
 * drives it from the client's bus thread. Tools such as autd3-remote-server
 * drive a link themselves.
 * @since 0.1.0
 */
#ifndef AUTD3_LINK_H
#define AUTD3_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autd3/error.h"
#include "autd3/geometry.h"
#include "autd3/link_echocat.h"
#include "autd3/link_emulator.h"
#include "autd3/link_ethercat.h"
#include "autd3/link_ethercrab.h"
#include "autd3/link_remote.h"
#include "autd3/link_soem.h"
#include "autd3/link_twincat.h"
#include "autd3/proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Link kinds: XX(NAME, value, "name", "CMake option that builds it"). */
#define AUTD3_LINK_KIND_MAP(XX)                               \
  XX(EMULATOR, 0, "emulator", "(always built)")               \
  XX(ECHOCAT, 1, "echocat", "AUTD3_LINK_ECHOCAT")             \
  XX(SOEM, 2, "soem", "AUTD3_LINK_SOEM")                      \
  XX(ETHERCRAB, 3, "ethercrab", "AUTD3_LINK_ETHERCRAB")       \
  XX(TWINCAT, 4, "twincat", "AUTD3_LINK_TWINCAT")             \
  XX(REMOTE, 5, "remote", "AUTD3_LINK_REMOTE")

/** Link kind tag. */
typedef enum autd3_link_kind {
#define AUTD3_LINK_KIND_ENUM_(name, val, str, opt) AUTD3_LINK_##name = (val),
  AUTD3_LINK_KIND_MAP(AUTD3_LINK_KIND_ENUM_)
#undef AUTD3_LINK_KIND_ENUM_
  AUTD3_LINK_KIND_COUNT_
} autd3_link_kind_t;

/**
 * Tagged link option: `kind` selects the member of the union that is read.
 *
 * Size-tagged (docs/api.md "Structs that can grow"): start from
 * autd3_link_option_default(), which sets `size`, then change fields. A kind's
 * option grows by appending fields inside the union, whose reserved room keeps
 * sizeof(autd3_link_option_t) fixed; `size` says how much of the kind's member
 * the caller knew, and autd3_link_open() gives every field past it its
 * default. A size the library does not know (0: the struct was not started
 * from a default) is refused with AUTD3_E_INVALID_OPTION.
 * @since 0.1.0; `size` and the reserved room since 0.3.0
 */
typedef struct autd3_link_option {
  uint32_t size; /**< AUTD3_LINK_OPTION_SIZE(the kind's member type); set by autd3_link_option_default() */
  autd3_link_kind_t kind;
  union {
    autd3_emulator_option_t emulator;
    autd3_echocat_option_t echocat;
    autd3_soem_option_t soem;
    autd3_ethercrab_option_t ethercrab;
    autd3_twincat_option_t twincat;
    autd3_remote_option_t remote;
    uint64_t reserved_[32]; /**< room to grow: every member fits in 256 bytes, so the union's size never changes */
  } u;
} autd3_link_option_t;

/**
 * The `size` of a link option whose kind's member is `T` (e.g. autd3_echocat_option_t) as the caller's header
 * defines it: what autd3_link_option_default() stores. Only needed to build an option without that function.
 */
#define AUTD3_LINK_OPTION_SIZE(T) ((uint32_t)(offsetof(autd3_link_option_t, u) + sizeof(T)))

/**
 * A tagged option for `kind` holding that kind's defaults, `size` set.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_link_option_t autd3_link_option_default(autd3_link_kind_t kind);
/*
 * The per-kind defaults (autd3_echocat_option_default(), ...) return a struct that may grow, and a struct
 * returned by value can't carry the caller's size. So in source they are macros that take the kind's member
 * out of autd3_link_option_default() (fixed size) and copy only what the caller's header defines; the exported
 * functions of these names stay for binaries and FFI and keep the 0.3.0 layout.
 */
#define autd3_emulator_option_default() (autd3_link_option_default(AUTD3_LINK_EMULATOR).u.emulator)
#define autd3_echocat_option_default() (autd3_link_option_default(AUTD3_LINK_ECHOCAT).u.echocat)
#define autd3_soem_option_default() (autd3_link_option_default(AUTD3_LINK_SOEM).u.soem)
#define autd3_ethercrab_option_default() (autd3_link_option_default(AUTD3_LINK_ETHERCRAB).u.ethercrab)
#define autd3_twincat_option_default() (autd3_link_option_default(AUTD3_LINK_TWINCAT).u.twincat)
#define autd3_remote_option_default() (autd3_link_option_default(AUTD3_LINK_REMOTE).u.remote)
/**
 * The common EtherCAT section of an echocat/SOEM/EtherCrab option, NULL for other kinds.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_ethercat_option_t *autd3_link_option_ethercat(autd3_link_option_t *o);
/**
 * Kind from its name ("echocat", "soem", ...); AUTD3_E_UNKNOWN_LINK if none.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_err_t autd3_link_kind_parse(const char *name, autd3_link_kind_t *out);
/**
 * Name of a kind ("unknown" if out of range).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN const char *autd3_link_kind_name(autd3_link_kind_t kind);
/**
 * Whether `kind` is available in this process (built in, or its library registered).
 * Context: any thread; RT-safe (reads the registry atomically).
 */
AUTD3_EXTERN bool autd3_link_kind_available(autd3_link_kind_t kind);

/** Opaque link handle. */
typedef struct autd3_link autd3_link_t;

/**
 * Which statistics a link measures (autd3_link_stats_t.measured, autd3_link_device_info_t.measured): a field
 * whose bit is clear is 0 and means "this link cannot know", never "none happened" (DEVICE_STALE: see its line).
 * docs/architecture.md "Link statistics" says what each link measures and how.
 * @since 0.5.0
 */
#define AUTD3_LINK_MEASURES_STALE 0x01u    /**< stale_cycles (every link) */
#define AUTD3_LINK_MEASURES_LOST 0x02u     /**< lost_cycles */
#define AUTD3_LINK_MEASURES_PHASE 0x04u    /**< phase_excursions, worst_phase_deviation_ns */
#define AUTD3_LINK_MEASURES_EXCHANGE 0x08u /**< exchanges, exchange_ns_total, worst_exchange_ns */
#define AUTD3_LINK_MEASURES_DEVICE_STALE 0x10u /**< the link tells which device's inputs are stale (else a stale cycle counts for every device) */
#define AUTD3_LINK_MEASURES_ESC_COUNTERS 0x20u /**< autd3_link_device_info_t: the ESC error counters */
#define AUTD3_LINK_MEASURES_DC 0x40u           /**< autd3_link_device_info_t: the DC system-time difference */
#define AUTD3_LINK_MEASURES_DC_TIME 0x80u      /**< dc_sample_host_ns, dc_sample_time_ns: the reference clock against the host's */

/**
 * Link statistics, counted since open (the reference's LinkStats: crate autd3-rs-core 0.9.0 src/link/stats.rs).
 * A lost cycle (no reply) is also stale (inputs not valid). The fields after `lost_cycles` were appended in
 * 0.5.0; `measured` says which of them (and which of stale/lost) the link measures.
 * Each field is read atomically, the set is not one snapshot: read while the link runs, a count of the cycle
 * in progress may already be in (a link times its exchange before the cycle returns, so exchanges can be
 * cycles + 1).
 */
typedef struct autd3_link_stats {
  uint64_t cycles;       /**< cycles run (autd3_link_cycle() calls that returned AUTD3_OK) */
  uint64_t stale_cycles; /**< cycles whose inputs were not valid (rx_valid false) */
  uint64_t lost_cycles;  /**< cycles whose frame never came back (no reply, timeout) */
  /* @since 0.5.0 */
  uint32_t measured;  /**< AUTD3_LINK_MEASURES_* bits */
  uint32_t reserved_; /**< 0 */
  /** Cyclic frames that reached the devices in another SYNC0 interval than the one the link aimed them at. */
  uint64_t phase_excursions;
  uint64_t worst_phase_deviation_ns; /**< largest |deviation| of a frame's phase from where the link aimed it */
  uint64_t exchanges;                /**< exchanges timed (the link's own measure: e.g. a cyclic frame's send to receive) */
  uint64_t exchange_ns_total;        /**< their sum: the mean exchange time is exchange_ns_total / exchanges */
  uint64_t worst_exchange_ns;        /**< the longest */
  /**
   * The last sample of the devices' clock: the reference clock's DC system time (ns since 2000-01-01) was
   * dc_sample_time_ns at host monotonic time dc_sample_host_ns (the middle of the frame's round trip). One
   * consistent pair. Two reads give the drift of the DC clock against the host's:
   * ((time1 - time0) - (host1 - host0)) / (host1 - host0), within the round trips' asymmetry over the interval.
   */
  uint64_t dc_sample_host_ns;
  uint64_t dc_sample_time_ns;
} autd3_link_stats_t;

/**
 * EtherCAT-level state of one device as seen by the state checker. UNKNOWN is
 * zero on purpose: a status nobody filled in (a link that cannot observe its
 * devices, such as Remote) never reads as operational.
 */
typedef enum autd3_device_state {
  AUTD3_DEVICE_UNKNOWN = 0,        /**< the link cannot observe the device's state */
  AUTD3_DEVICE_OP = 1,             /**< operational */
  AUTD3_DEVICE_SAFE_OP = 2,        /**< SAFE-OP without error (being brought back to OP) */
  AUTD3_DEVICE_SAFE_OP_ERROR = 3,  /**< SAFE-OP with the error flag (e.g. a watchdog expired) */
  AUTD3_DEVICE_LOST = 4,           /**< no answer (unplugged, powered off) */
  AUTD3_DEVICE_OTHER = 5           /**< any other AL state; see al_state */
} autd3_device_state_t;

/** What a state check observed (autd3_link_status_t.measured). @since 0.5.0 */
#define AUTD3_LINK_STATUS_STATES 0x01u            /**< state[] and al_state[] */
#define AUTD3_LINK_STATUS_RECOVERIES 0x02u        /**< recoveries */
#define AUTD3_LINK_STATUS_DEVICE_RECOVERIES 0x04u /**< device_recoveries[] */

/** Result of a state check. */
typedef struct autd3_link_status {
  uint16_t num_devices;
  uint8_t state[AUTD3_MAX_DEVICES];    /**< autd3_device_state_t per device; UNKNOWN where the link cannot tell */
  uint8_t al_state[AUTD3_MAX_DEVICES]; /**< raw AL status low byte where known (OTHER), else 0 */
  uint64_t recoveries;                 /**< times every device came back to OP after a problem */
  /* @since 0.5.0 */
  uint32_t measured;                              /**< AUTD3_LINK_STATUS_* bits: what the link's checker observes */
  uint32_t device_recoveries[AUTD3_MAX_DEVICES]; /**< per device: times a check found it back in OP after one that found it elsewhere */
} autd3_link_status_t;

/**
 * One device as the link sees it (autd3_link_device_info()). Size-tagged output struct (append only).
 * @since 0.5.0
 */
typedef struct autd3_link_device_info {
  uint32_t measured;     /**< AUTD3_LINK_MEASURES_DEVICE_STALE, _ESC_COUNTERS, _DC: which fields below are known */
  uint32_t resets;       /**< = autd3_link_device_resets() */
  uint64_t stale_cycles; /**< cycles whose inputs from this device were not valid (all of the link's when it cannot tell devices apart) */
  /** ESC error counters (ETG.1000.4 / the ESC datasheets, registers 0x0300-0x0313), saturating at 255. */
  uint8_t crc_errors[4];          /**< 0x0300 + 2p: invalid frames received at port p */
  uint8_t phy_errors[4];          /**< 0x0301 + 2p: RX errors (PHY) at port p */
  uint8_t forwarded_errors[4];    /**< 0x0308 + p: frames someone upstream had already damaged */
  uint8_t lost_links[4];          /**< 0x0310 + p: link lost at port p */
  uint8_t processing_unit_errors; /**< 0x030C */
  uint8_t pdi_errors;             /**< 0x030D */
  uint8_t reserved_[2];           /**< 0 */
  /** DC: the device's system time minus the reference's as its last time-control frame found it (0x092C, ns, signed). */
  int32_t dc_deviation_ns;
} autd3_link_device_info_t;

/**
 * Open a link for `geometry`'s device count. Blocks for as long as bring-up
 * takes (EtherCAT scan, DC alignment, OP). Allocates. Errors: INVALID_ARGUMENT,
 * INVALID_OPTION, NOT_BUILT (message names the CMake option), and the link's own.
 * Context: any thread; blocks for the bring-up (seconds for EtherCAT, a TCP connect for Remote/TwinCAT); allocates; may start the link's own threads.
 */
AUTD3_EXTERN autd3_err_t autd3_link_open(const autd3_link_option_t *option, const autd3_geometry_t *geometry, autd3_link_t **out);
/**
 * Number of devices on the bus (fixed after open).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN size_t autd3_link_num_devices(const autd3_link_t *link);
/**
 * Kind of an open link.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_link_kind_t autd3_link_kind(const autd3_link_t *link);
/**
 * One bus cycle: blocks until the cycle's deadline, sends `tx` (N × 626) and
 * fills `rx` (N × 2). `*rx_valid` false means this cycle's inputs are stale
 * (working counter mismatch or lost frame) and `rx` must be ignored. An error
 * is fatal for the link. Call from one thread at a time. No allocation.
 * Context: one thread at a time (the bus thread); blocks only on the link's own timer and socket; no allocation; takes no lock a caller can hold.
 */
AUTD3_EXTERN autd3_err_t autd3_link_cycle(autd3_link_t *link, const uint8_t *tx, uint8_t *rx, bool *rx_valid);
/**
 * autd3_link_cycle() with the inputs' validity per device: `dev_valid[d]`
 * (d < the link's device count) true = device d's 2 bytes in `rx` are its
 * answer to this cycle, even when `*rx_valid` is false because another
 * device's are not (docs/reliability.md "A fault costs only its device").
 * A link that cannot tell devices apart reports every device as
 * `*rx_valid` says. `*rx_valid` is true only if every device's inputs are.
 * Context: as autd3_link_cycle(). @since 0.4.0
 */
AUTD3_EXTERN autd3_err_t autd3_link_cycle_devices(autd3_link_t *link, const uint8_t *tx, uint8_t *rx, bool *rx_valid,
                                                  bool *dev_valid);
/**
 * Optional pacing step: block until shortly before the next exchange (links
 * that do not implement it return at once). A bus loop that calls this, then
 * prepares `tx`, then calls autd3_link_cycle() sends what was staged latest.
 * Same thread and rules as autd3_link_cycle().
 * Context: as autd3_link_cycle(): the bus thread; blocks on the link's own timer; no allocation.
 */
AUTD3_EXTERN autd3_err_t autd3_link_wait_next_cycle(autd3_link_t *link);
/**
 * Times the link has seen device `dev` lose its firmware state (power cycle,
 * re-initialisation); 0 for an out-of-range `dev`. Thread-safe, lock-free.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN uint32_t autd3_link_device_resets(const autd3_link_t *link, uint16_t dev);
/**
 * Statistics (thread-safe, lock-free), written as `size` bytes: pass `sizeof *out`. The library writes exactly
 * `size` bytes: a smaller (older) struct gets its prefix, a larger (newer) one zeros past what the library knows.
 * The macro autd3_link_stats(link, out) passes the caller's sizeof. @since 0.3.0
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN void autd3_link_stats_sized(const autd3_link_t *link, autd3_link_stats_t *out, size_t size);
/**
 * Statistics (thread-safe, lock-free). In source this is a macro over autd3_link_stats_sized(); the exported
 * function of this name (binaries, FFI) writes the 0.3.0 layout (24 bytes).
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN void autd3_link_stats(const autd3_link_t *link, autd3_link_stats_t *out);
#define autd3_link_stats(link, out) autd3_link_stats_sized((link), (out), sizeof *(out))
/**
 * Device `dev`'s counters as the link sees them, written as `size` bytes (the output rule of
 * autd3_link_stats_sized()): the stale cycles of its inputs (no I/O), and, on the EtherCAT links (echocat, SOEM,
 * EtherCrab), its ESC error counters and DC deviation read from the device (one or two bus round trips through
 * the link's state checker, so a bus thread must be cycling). Fields the link cannot read are 0 with their
 * `measured` bit clear. The macro autd3_link_device_info(link, dev, out) passes the caller's sizeof.
 * Errors: INVALID_ARGUMENT (NULL, dev out of range); a failed register read leaves the ESC/DC bits clear and
 * returns AUTD3_OK with the stale count (a device that does not answer has no counters to show).
 * Context: as autd3_link_check_state(): any thread but the bus thread; blocks for the reads; no allocation.
 * @since 0.5.0
 */
AUTD3_EXTERN autd3_err_t autd3_link_device_info_sized(autd3_link_t *link, uint16_t dev, autd3_link_device_info_t *out,
                                                      size_t size);
#define autd3_link_device_info(link, dev, out) autd3_link_device_info_sized((link), (dev), (out), sizeof *(out))
/**
 * Check the devices' states and try to recover the ones that are not in OP.
 * Thread-safe with respect to autd3_link_cycle() (may be called from another
 * thread while the bus thread cycles); may block for a few cycles.
 * Context: one checker thread at a time, concurrently with the bus thread; blocks for a few bus round trips; no allocation.
 */
AUTD3_EXTERN autd3_err_t autd3_link_check_state(autd3_link_t *link, autd3_link_status_t *out);
/**
 * autd3_link_check_state() writing exactly `size` bytes of `out` (see autd3_link_stats_sized()). The macro
 * autd3_link_check_state(link, out) passes the caller's sizeof; the exported function of that name writes the
 * 0.3.0 layout. @since 0.3.0
 * Context: as autd3_link_check_state().
 */
AUTD3_EXTERN autd3_err_t autd3_link_check_state_sized(autd3_link_t *link, autd3_link_status_t *out, size_t size);
#define autd3_link_check_state(link, out) autd3_link_check_state_sized((link), (out), sizeof *(out))
/**
 * Link-specific diagnostics as text lines "name : value" (e.g. departure
 * jitter against the DC deadline, late wake-ups), written to `buf`
 * (NUL-terminated). Returns the length; 0 if the link has none. Thread-safe.
 * Context: any thread; never blocks; no allocation.
 */
AUTD3_EXTERN size_t autd3_link_diagnostics(autd3_link_t *link, char *buf, size_t cap);
/**
 * Close the link (EtherCAT links return the devices to INIT) and free it. NULL is fine.
 * Context: once, after every other call on the link returned; blocks (joins the link's threads, EtherCAT INIT); frees.
 */
AUTD3_EXTERN void autd3_link_close(autd3_link_t *link);

#ifdef __cplusplus
}
#endif
#endif
