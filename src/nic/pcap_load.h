/*
 * Npcap (or WinPcap) on Windows, loaded at run time: libautd3 starts on a
 * machine without it, and opening or listing an adapter then says what to
 * install. wpcap.c fills the pcap back end's table (pcap_api.h) from the DLL
 * and is the NIC layer's OS part on Windows (nic_impl.h: names, MAC, list).
 *
 * Npcap installs wpcap.dll in System32\Npcap (its own mode) and, when
 * installed "in WinPcap API-compatible Mode", also in System32; we try the
 * former first (Npcap's guide for applications), then the plain name.
 * Npcap-only calls (pcap_set_immediate_mode, pcap_setdirection,
 * pcap_getevent, pcap_setmintocopy) are looked up, never required, and not
 * used under wine, whose wpcap.dll exports some of them as stubs that abort
 * when called.
 */
#ifndef AUTD3_NIC_WPCAP_H
#define AUTD3_NIC_WPCAP_H

#include "nic/pcap_api.h"

/* Load wpcap.dll once (thread-safe) and return its table. Error:
 * AUTD3_E_NOT_BUILT naming Npcap and its WinPcap API-compatible mode. `dll`
 * overrides the library tried (tests; NULL = Npcap's, then wpcap.dll): such
 * a probe is unloaded again and *out is left alone. */
autd3_err_t autd3__wpcap_load(const char *dll, const autd3__pcap_api_t **out);

#endif
