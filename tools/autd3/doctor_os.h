/*
 * What `autd3 doctor` asks the operating system, in one file (doctor_os.c:
 * Linux; elsewhere every probe answers "not readable here"), so doctor.c
 * stays portable, as tools/common/tool_os.c does for the other tools.
 * Every probe returns 1 = answered, 0 = not readable here (not supported,
 * no such file, the driver does not say), -1 = error (errno-style text in
 * `why` where there is a buffer).
 */
#ifndef AUTD3_TOOLS_AUTD3_DOCTOR_OS_H
#define AUTD3_TOOLS_AUTD3_DOCTOR_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Effective capabilities of this process; root = effective uid 0. */
int dos_caps(bool *net_raw, bool *net_admin, bool *sys_nice, bool *root);
/* RLIMIT_RTPRIO soft limit (UINT64_MAX = unlimited). */
int dos_rtprio(uint64_t *soft);
/* This program's path (for the setcap line). */
int dos_self_path(char *buf, size_t cap);
/* The interface: up (IFF_UP and carrier), IPv4 address count, IPv6 enabled / autoconf / router advertisements. */
int dos_if_up(const char *ifname, bool *up, bool *carrier);
int dos_if_ipv4(const char *ifname, int *addresses);
int dos_if_ipv6(const char *ifname, bool *enabled, bool *autoconf, bool *accept_ra);
/* ethtool: interrupt coalescing (rx-usecs, rx-frames), EEE, pause frames. */
int dos_coalesce(const char *ifname, uint32_t *rx_usecs, uint32_t *rx_frames, char *why, size_t cap);
int dos_eee(const char *ifname, bool *enabled, char *why, size_t cap);
int dos_pause(const char *ifname, bool *rx, bool *tx, char *why, size_t cap);
/* Frames on the interface for `ms` milliseconds that are not EtherCAT (EtherType 0x88A4): those this host sent
 * (its IP stack talking on the EtherCAT line) and those it received; `kinds` gets their EtherTypes by name
 * ("IPv6, ARP"). Needs a raw socket (0 without one: `why` says). */
int dos_foreign_frames(const char *ifname, uint32_t ms, uint64_t *sent, uint64_t *received, char *kinds, size_t kcap,
                       char *why, size_t cap);
/* Windows: whether Npcap's own wpcap.dll (System32\Npcap) and the one of its WinPcap API-compatible mode
 * (System32) are installed; `sysdir` gets the system directory. 0 elsewhere. */
int dos_npcap_files(bool *npcap_dir, bool *system32, char *sysdir, size_t cap);
/* CPU frequency governors: the distinct ones over all CPUs, comma-separated. */
int dos_governors(char *buf, size_t cap);
/* Timer slack of the calling thread, ns. */
int dos_timer_slack(uint64_t *ns);

#endif
