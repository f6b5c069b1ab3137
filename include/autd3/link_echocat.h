/**
 * @file link_echocat.h
 * @brief Options of echocat, the EtherCAT master dedicated to AUTD3.
 * @since 0.1.0
 */
#ifndef AUTD3_LINK_ECHOCAT_H
#define AUTD3_LINK_ECHOCAT_H

#include "autd3/link_ethercat.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Raw NIC back end. */
typedef enum autd3_nic_backend {
  AUTD3_NIC_AUTO = 0,     /**< AF_PACKET on Linux, else libpcap */
  AUTD3_NIC_AF_PACKET = 1,/**< Linux raw socket */
  AUTD3_NIC_PCAP = 2      /**< libpcap (macOS, Windows/Npcap, also works on Linux) */
} autd3_nic_backend_t;

/** echocat options. */
/* Grows by appending fields (see autd3_link_option_t). */
typedef struct autd3_echocat_option {
  autd3_ethercat_option_t ethercat; /**< common EtherCAT options */
  autd3_nic_backend_t backend;      /**< default AUTD3_NIC_AUTO */
  uint32_t spin_ns;                 /**< busy-wait this long before each deadline; default 0 (sleep only) */
  uint32_t warmup_cycles;           /**< process-data cycles in SAFE-OP before requesting OP; default 200 */
} autd3_echocat_option_t;

/**
 * Defaults. In source (with autd3/link.h) a macro over autd3_link_option_default() that is safe when this struct
 * grows; this function keeps the 0.3.0 layout for binaries and FFI that call it.
 * Context: any thread; RT-safe.
 */
AUTD3_EXTERN autd3_echocat_option_t autd3_echocat_option_default(void);

#ifdef __cplusplus
}
#endif
#endif
