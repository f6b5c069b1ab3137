/**
 * @file link_ethercat.h
 * @brief Options shared by the three EtherCAT links (echocat, SOEM, EtherCrab).
 *
 * The same field means the same thing in every EtherCAT link, so switching
 * link changes the kind and nothing else.
 * @since 0.1.0
 */
#ifndef AUTD3_LINK_ETHERCAT_H
#define AUTD3_LINK_ETHERCAT_H

#include <stdbool.h>
#include <stdint.h>

#include "autd3/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Options common to every EtherCAT link. Times in nanoseconds or milliseconds as named.
 * Frozen for the soname: it sits at the start of the echocat, SOEM and EtherCrab options, so a field added
 * here would move theirs. A new common field is appended to each of those three instead (docs/api.md).
 */
/* <windows.h> (through objbase.h, unless WIN32_LEAN_AND_MEAN) defines
 * `interface` as `struct`: undone for this definition, and the field has a
 * second name, `adapter`, for code that includes <windows.h>. */
#ifdef interface
#pragma push_macro("interface")
#undef interface
#define AUTD3_INTERFACE_MACRO_PUSHED_
#endif
typedef struct autd3_ethercat_option {
  /** Adapter, or NULL / "auto": the first adapter whose slaves are all AUTD3. Linux: the interface name
   * ("eth0"). Windows: the Npcap name ("\Device\NPF_{GUID}"), or the adapter's description or friendly
   * name, whole or a part that only it has, ignoring case (docs/platforms.md). Two names, one field:
   * `adapter` is for code that includes <windows.h>, where `interface` is a macro. */
  union {
    const char *interface;
    const char *adapter;
  };
  uint32_t sync0_period_ns;   /**< SYNC0 period, a multiple of 500 000; default 1 000 000 */
  int32_t sync0_shift_ns;     /**< SYNC0 shift and host send phase; default 0 */
  uint32_t send_cycle_ns;     /**< host process-data period; 0 = sync0_period_ns (default) */
  uint32_t sync_tolerance_ns; /**< DC alignment threshold; default 1 000 (1 µs) */
  uint32_t sync_timeout_ms;   /**< DC alignment timeout; default 10 000 */
  uint32_t state_timeout_ms;  /**< wait for SAFE-OP; default 10 000 */
  uint32_t op_wait_timeout_ms;/**< wait for OP, from the OP request after the warm-up; default 10 000 */
  int rt_priority;            /**< SCHED_FIFO priority of the link's own threads, 0 = none (default) */
  int rt_cpu;                 /**< CPU to pin the link's threads to, -1 = none (default) */
  const char *capture_path;   /**< write every bus frame to this pcap file; NULL = off (default) */
} autd3_ethercat_option_t;
#ifdef AUTD3_INTERFACE_MACRO_PUSHED_
#pragma pop_macro("interface")
#undef AUTD3_INTERFACE_MACRO_PUSHED_
#endif

/**
 * Defaults as documented per field.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_ethercat_option_t autd3_ethercat_option_default(void);
/**
 * Check the common fields; AUTD3_E_INVALID_OPTION with a message naming the field.
 * Context: any thread; RT-safe. Errors set the calling thread's message.
 */
AUTD3_EXTERN autd3_err_t autd3_ethercat_option_validate(const autd3_ethercat_option_t *o);

#ifdef __cplusplus
}
#endif
#endif
