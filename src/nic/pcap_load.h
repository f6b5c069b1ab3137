/*
 * libpcap loaded at run time, the one way the pcap back end (nic_pcap.c)
 * reaches libpcap on every OS: libautd3 starts on a machine without it, and
 * opening or listing through it then says what to install. pcap_load.c binds
 * the portable libpcap calls into the table of pcap_api.h once per process;
 * the OS part (wpcap.c: Npcap's wpcap.dll on Windows; pcap_posix.c: libpcap
 * on Linux and macOS) names the libraries to try and completes the table
 * with its way of waiting for a frame and its own extras.
 */
#ifndef AUTD3_NIC_PCAP_LOAD_H
#define AUTD3_NIC_PCAP_LOAD_H

#include "nic/pcap_api.h"
#include "platform/platform.h"

/* Load libpcap once (thread-safe) and return its table; autd3__pcap_api()
 * is this with `lib` NULL. Error: AUTD3_E_NOT_BUILT naming the libraries
 * tried and what to install. `lib` overrides the libraries tried (tests):
 * such a probe is unloaded again and *out is left alone. */
autd3_err_t autd3__pcap_load(const char *lib, const autd3__pcap_api_t **out);

/* ---- the OS part ---- */
/* The i-th library to try (0, 1, ...) into `out`; false past the last. */
bool autd3__pcap_os_library(size_t i, char *out, size_t cap);
/* What to install when none loads (static text, for the error message). */
const char *autd3__pcap_os_hint(void);
/* What capturing needs when libpcap says permission denied (static text). */
const char *autd3__pcap_os_permission_hint(void);
/* Complete `t`, whose portable calls are bound from `dl`: wait and
 * selectable_fd, and where the OS offers them (and they work) the optional
 * calls (set_immediate_mode, setdirection), which it may leave NULL. */
void autd3__pcap_os_complete(autd3__dl_t *dl, autd3__pcap_api_t *t);

#endif
