/*
 * Windows' part of the NIC layer: Npcap (or WinPcap) as the pcap back end's
 * libpcap (pcap_load.h), and the adapters (nic_impl.h: names, MAC, list).
 *
 * Npcap installs wpcap.dll in System32\Npcap (its own mode) and, when
 * installed "in WinPcap API-compatible Mode", also in System32; we try the
 * former first (Npcap's guide for applications), then the plain name.
 * Npcap-only calls (pcap_set_immediate_mode, pcap_setdirection,
 * pcap_getevent, pcap_setmintocopy) are looked up, never required, and not
 * used under wine, whose wpcap.dll exports some of them as stubs that abort
 * when called.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ours before Windows' headers: iphlpapi.h pulls in objbase.h, whose
 * `#define interface struct` would break autd3_ethercat_option_t.interface. */
#include "autd3/link_driver.h"
#include "nic/nic_impl.h"
#include "nic/pcap_load.h"

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <winsock2.h>
#include <windows.h>
#include <iphlpapi.h>

/* The Npcap/WinPcap calls behind the table's wait and immediate mode
 * (NULL: not offered, or under wine). Set once, before the table is published. */
static struct {
  void *(*getevent)(autd3__pcap_t *p);
  int (*setmintocopy)(autd3__pcap_t *p, int size);
} ext;

bool autd3__pcap_os_library(size_t i, char *out, size_t cap) {
  if (i == 0) { /* "C:\Windows\System32\Npcap\wpcap.dll" */
    char sys[MAX_PATH];
    UINT n = GetSystemDirectoryA(sys, sizeof sys);
    if (n == 0 || n >= sizeof sys) snprintf(sys, sizeof sys, "C:\\Windows\\System32");
    snprintf(out, cap, "%s\\Npcap\\wpcap.dll", sys);
    return true;
  }
  if (i == 1) {
    snprintf(out, cap, "wpcap.dll");
    return true;
  }
  return false;
}

const char *autd3__pcap_os_hint(void) {
  return "install Npcap (https://npcap.com) with \"Install Npcap in WinPcap API-compatible Mode\" checked, or WinPcap";
}

const char *autd3__pcap_os_permission_hint(void) {
  return "Npcap's driver for this user: reinstall Npcap without \"Restrict Npcap driver's access to Administrators "
         "only\", or run as administrator";
}

/* Wine's ntdll exports wine_get_version; Windows' does not. */
static bool under_wine(void) {
  HMODULE nt = GetModuleHandleA("ntdll.dll");
  return nt != NULL && GetProcAddress(nt, "wine_get_version") != NULL;
}

/* Without immediate mode (WinPcap): a minimum of 0 bytes to copy wakes the
 * reader for every frame (Npcap's immediate mode does the same). */
static int immediate_by_mintocopy(autd3__pcap_t *p, int on) { return ext.setmintocopy(p, on ? 0 : 16000); }

/* Npcap's read event is signalled when frames are ready; wait for whole
 * milliseconds on it and poll below that, so a deadline is not overshot. */
static autd3_err_t win_wait(autd3__pcap_t *p, const char *ifname, uint64_t ns) {
  (void)ifname;
  void *ev = ext.getevent ? ext.getevent(p) : NULL;
  if (ev != NULL && ns >= 1000000u) {
    DWORD ms = (DWORD)(ns / 1000000u);
    (void)WaitForSingleObject((HANDLE)ev, ms);
    return AUTD3_OK;
  }
  autd3__sleep_ns(ns < 50000 ? ns : 50000);
  return AUTD3_OK;
}

static int win_fd(autd3__pcap_t *p) {
  (void)p;
  return -1;
}

void autd3__pcap_os_complete(autd3__dl_t *dl, autd3__pcap_api_t *t) {
  autd3__dl_fn_t f;
  t->wait = win_wait;
  t->selectable_fd = win_fd;
  if (under_wine())
    return;
  if ((f = autd3__dl_fn(dl, "pcap_set_immediate_mode")) != NULL) memcpy(&t->set_immediate_mode, &f, sizeof f);
  if ((f = autd3__dl_fn(dl, "pcap_setdirection")) != NULL) memcpy(&t->setdirection, &f, sizeof f);
  if ((f = autd3__dl_fn(dl, "pcap_getevent")) != NULL) memcpy(&ext.getevent, &f, sizeof f);
  if (t->set_immediate_mode == NULL && (f = autd3__dl_fn(dl, "pcap_setmintocopy")) != NULL) {
    memcpy(&ext.setmintocopy, &f, sizeof f);
    t->set_immediate_mode = immediate_by_mintocopy;
  }
}

/* ---- the OS's adapters (nic_impl.h) ---- */

#define PCAP_IF_LOOPBACK 0x00000001u

/* One adapter: Npcap's name and description, Windows' friendly name and MAC. */
typedef struct adapter {
  const char *name, *desc;
  char friendly[256];
  uint8_t mac[6];
} adapter_t;

/* The friendly name and MAC of each adapter, by the GUID at the end of its
 * Npcap name ("\Device\NPF_{GUID}" is IP_ADAPTER_ADDRESSES' "{GUID}"). */
static void add_os_details(adapter_t *a, size_t n) {
  ULONG size = 16384;
  IP_ADAPTER_ADDRESSES *list = NULL;
  ULONG r = ERROR_BUFFER_OVERFLOW;
  for (int tries = 0; tries < 3 && r == ERROR_BUFFER_OVERFLOW; tries++) {
    free(list);
    if ((list = malloc(size)) == NULL) return;
    r = GetAdaptersAddresses(AF_UNSPEC, GAA_FLAG_SKIP_ANYCAST | GAA_FLAG_SKIP_MULTICAST | GAA_FLAG_SKIP_DNS_SERVER, NULL,
                             list, &size);
  }
  if (r == NO_ERROR) {
    for (IP_ADAPTER_ADDRESSES *w = list; w != NULL; w = w->Next) {
      for (size_t i = 0; i < n; i++) {
        const char *g = strchr(a[i].name, '{');
        if (g == NULL || w->AdapterName == NULL || _stricmp(g, w->AdapterName) != 0) continue;
        if (w->FriendlyName != NULL &&
            WideCharToMultiByte(CP_UTF8, 0, w->FriendlyName, -1, a[i].friendly, (int)sizeof a[i].friendly, NULL, NULL) == 0)
          a[i].friendly[0] = 0;
        if (strcmp(a[i].friendly, a[i].desc) == 0) a[i].friendly[0] = 0; /* said once is enough (wine) */
        if (w->PhysicalAddressLength == 6) memcpy(a[i].mac, w->PhysicalAddress, 6);
      }
    }
  }
  free(list);
}

/* Npcap's adapters with their details: *all is pcap's list (free it with
 * api.freealldevs), *out an array of *n entries pointing into it (free()). */
static autd3_err_t adapters(autd3__pcap_if_t **all, adapter_t **out, size_t *n) {
  *all = NULL, *out = NULL, *n = 0;
  const autd3__pcap_api_t *p;
  autd3_err_t err = autd3__pcap_api(&p);
  if (err != AUTD3_OK) return err;
  char eb[AUTD3_PCAP_ERRBUF_SIZE] = "";
  if (p->findalldevs(all, eb) != 0) return autd3_set_error(AUTD3_E_IO, "nic: cannot list adapters (Npcap): %s", eb);
  size_t count = 0;
  for (autd3__pcap_if_t *d = *all; d != NULL; d = d->next) count++;
  adapter_t *a = calloc(count ? count : 1, sizeof *a);
  if (a == NULL) {
    p->freealldevs(*all);
    *all = NULL;
    return autd3_set_error(AUTD3_E_NOMEM, "nic: out of memory listing adapters");
  }
  for (autd3__pcap_if_t *d = *all; d != NULL; d = d->next) {
    if (d->name == NULL || (d->flags & PCAP_IF_LOOPBACK)) continue;
    a[*n].name = d->name;
    a[*n].desc = d->description ? d->description : "";
    (*n)++;
  }
  add_os_details(a, *n);
  *out = a;
  return AUTD3_OK;
}

static void adapters_free(autd3__pcap_if_t *all, adapter_t *a) {
  const autd3__pcap_api_t *p;
  if (all != NULL && autd3__pcap_api(&p) == AUTD3_OK) p->freealldevs(all);
  free(a);
}

/* Case-insensitive (ASCII) substring search. */
static bool contains_ci(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (; *hay; hay++)
    if (_strnicmp(hay, needle, n) == 0) return true;
  return n == 0;
}

/* Does `a` match `user` at `step`: 0 its Npcap name exactly, 1 its
 * description or friendly name ignoring case, 2 either contains it? */
static bool matches(const adapter_t *a, const char *user, int step) {
  switch (step) {
  case 0: return strcmp(a->name, user) == 0;
  case 1: return _stricmp(a->desc, user) == 0 || (a->friendly[0] && _stricmp(a->friendly, user) == 0);
  default: return contains_ci(a->desc, user) || contains_ci(a->friendly, user);
  }
}

static void describe(const adapter_t *a, char *out, size_t cap) {
  snprintf(out, cap, "%s \"%s\"%s%s%s", a->name, a->desc, a->friendly[0] ? " (" : "", a->friendly, a->friendly[0] ? ")" : "");
}

autd3_err_t autd3__nic_os_resolve(const char *user, char **os_name) {
  *os_name = NULL;
  autd3__pcap_if_t *all;
  adapter_t *a;
  size_t n;
  autd3_err_t e = adapters(&all, &a, &n);
  if (e != AUTD3_OK) return e;
  char list[1024] = "", one[400];
  int step = 0;
  size_t hits = 0, hit = 0;
  for (; step < 3 && hits == 0; step++)
    for (size_t i = 0; i < n; i++)
      if (matches(&a[i], user, step)) hits++, hit = i;
  step--;
  /* the candidates (several hits), or every adapter (none) */
  for (size_t i = 0; hits != 1 && i < n; i++) {
    if (hits > 1 && !matches(&a[i], user, step)) continue;
    describe(&a[i], one, sizeof one);
    size_t l = strlen(list);
    snprintf(list + l, sizeof list - l, "%s%s", l ? "; " : "", one);
  }
  if (hits == 1) {
    size_t len = strlen(a[hit].name) + 1;
    if ((*os_name = malloc(len)) == NULL) e = autd3_set_error(AUTD3_E_NOMEM, "nic: out of memory");
    else memcpy(*os_name, a[hit].name, len);
  } else if (hits > 1) {
    e = autd3_set_error(AUTD3_E_NO_INTERFACE,
                        "nic: \"%s\" matches %zu adapters: %s; name one by its Npcap name (\\Device\\NPF_{...}) or a "
                        "description or friendly name that only it has",
                        user, hits, list);
  } else {
    e = autd3_set_error(AUTD3_E_NO_INTERFACE,
                        "nic: no network adapter \"%s\" (neither an Npcap name nor in a description or friendly "
                        "name); adapters: %s",
                        user, n ? list : "none (is Npcap's driver running?)");
  }
  adapters_free(all, a);
  return e;
}

void autd3__nic_os_mac(const char *os_name, uint8_t mac[6]) {
  memset(mac, 0, 6);
  autd3__pcap_if_t *all;
  adapter_t *a;
  size_t n;
  if (adapters(&all, &a, &n) != AUTD3_OK) return;
  for (size_t i = 0; i < n; i++)
    if (strcmp(a[i].name, os_name) == 0) memcpy(mac, a[i].mac, 6);
  adapters_free(all, a);
}

autd3_err_t autd3__nic_os_list(autd3_nic_names_t *out, bool include_down) {
  (void)include_down; /* every Npcap adapter is listed: Npcap opens one whatever its connection status */
  autd3__pcap_if_t *all;
  adapter_t *a;
  size_t n;
  autd3_err_t e = adapters(&all, &a, &n);
  char one[400];
  for (size_t i = 0; e == AUTD3_OK && i < n; i++) {
    snprintf(one, sizeof one, "%s%s%s%s", a[i].desc, a[i].friendly[0] ? " (" : "", a[i].friendly, a[i].friendly[0] ? ")" : "");
    e = autd3__nic_names_add(out, a[i].name, one, false);
  }
  adapters_free(all, a);
  return e;
}

/* Npcap's flags for the adapter (PCAP_IF_LOOPBACK); false if unknown. */
bool autd3__nic_is_loopback(const char *os_name) {
  const autd3__pcap_api_t *p;
  if (autd3__pcap_api(&p) != AUTD3_OK) return false;
  autd3__pcap_if_t *all = NULL;
  char eb[AUTD3_PCAP_ERRBUF_SIZE] = "";
  if (p->findalldevs(&all, eb) != 0) return false;
  bool lo = false;
  for (autd3__pcap_if_t *d = all; d != NULL; d = d->next)
    if (d->name != NULL && strcmp(d->name, os_name) == 0) lo = (d->flags & PCAP_IF_LOOPBACK) != 0;
  p->freealldevs(all);
  return lo;
}

/* The adapter was resolved through Npcap, so Npcap is there and lists it; a
 * master library opening it through Npcap needs no other permission and sets
 * promiscuous mode through Npcap itself. Whether its link is up is left to
 * that library's first frames (no device answering them: NO_DEVICE). */
autd3_err_t autd3__nic_os_probe(const char *os_name, const char *who, bool promiscuous) {
  (void)os_name, (void)who, (void)promiscuous;
  return AUTD3_OK;
}
