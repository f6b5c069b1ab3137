/* Npcap / WinPcap loaded at run time (see wpcap.h). Windows only. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "nic/wpcap.h"
#include "platform/platform.h"

static autd3__wpcap_t api;
static autd3__dl_t *_Atomic loaded;

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

/* "C:\Windows\System32\Npcap\wpcap.dll" */
static void npcap_path(char *out, size_t cap) {
  char sys[MAX_PATH];
  UINT n = GetSystemDirectoryA(sys, sizeof sys);
  if (n == 0 || n >= sizeof sys) snprintf(sys, sizeof sys, "C:\\Windows\\System32");
  snprintf(out, cap, "%s\\Npcap\\wpcap.dll", sys);
}

static INIT_ONCE lock_once = INIT_ONCE_STATIC_INIT;
static autd3__mutex_t load_lock;

static BOOL CALLBACK init_lock(PINIT_ONCE o, PVOID p, PVOID *c) {
  (void)o;
  (void)p;
  (void)c;
  return autd3__mutex_init(&load_lock) == AUTD3_OK;
}

static autd3__mutex_t *load_lock_ptr(void) {
  return InitOnceExecuteOnce(&lock_once, init_lock, NULL, NULL) ? &load_lock : NULL;
}

#define NPCAP_HINT                                                                                                   \
  "install Npcap (https://npcap.com) with \"Install Npcap in WinPcap API-compatible Mode\" checked, or WinPcap"

static bool bind_all(autd3__dl_t *dl, autd3__wpcap_t *t) {
  autd3__dl_fn_t f;
#define BIND(field, sym)                                 \
  if ((f = autd3__dl_fn(dl, sym)) == NULL) return false; \
  memcpy(&t->field, &f, sizeof f);
  BIND(findalldevs, "pcap_findalldevs")
  BIND(freealldevs, "pcap_freealldevs")
  BIND(lib_version, "pcap_lib_version")
#undef BIND
  return true;
}

autd3_err_t autd3__wpcap_load(const char *dll, const autd3__wpcap_t **out) {
  if (atomic_load(&loaded) != NULL && dll == NULL) {
    *out = &api;
    return AUTD3_OK;
  }
  autd3__mutex_t *m = load_lock_ptr();
  if (m == NULL) return AUTD3_E_INTERNAL; /* the seam set the message */
  autd3__mutex_lock(m);
  autd3_err_t err = AUTD3_OK;
  if (atomic_load(&loaded) == NULL || dll != NULL) {
    char first[300], why[256] = "";
    if (dll) snprintf(first, sizeof first, "%s", dll);
    else npcap_path(first, sizeof first);
    autd3__dl_t *dl = autd3__dl_open(first, why, sizeof why);
    if (dl == NULL && dll == NULL) dl = autd3__dl_open("wpcap.dll", why, sizeof why);
    autd3__wpcap_t t;
    if (dl == NULL) {
      err = autd3_set_error(AUTD3_E_NOT_BUILT, "raw Ethernet needs Npcap, whose wpcap.dll cannot be loaded (%s): " NPCAP_HINT, why);
    } else if (!bind_all(dl, &t)) {
      autd3__dl_close(dl);
      err = autd3_set_error(AUTD3_E_NOT_BUILT, "%s lacks the libpcap API: " NPCAP_HINT, dll ? dll : "wpcap.dll");
    } else if (dll != NULL) {
      autd3__dl_close(dl); /* a probe of another library: the process-wide table stays as it is */
    } else {
      api = t;
      atomic_store(&loaded, dl);
    }
  }
  autd3__mutex_unlock(m);
  if (err == AUTD3_OK) *out = &api;
  return err;
}

autd3_err_t autd3__wpcap_list(char *names, size_t name_cap, char *descs, size_t desc_cap, size_t cap, size_t *count) {
  *count = 0;
  const autd3__wpcap_t *p;
  autd3_err_t err = autd3__wpcap_load(NULL, &p);
  if (err != AUTD3_OK) return err;
  autd3__pcap_if_t *all = NULL;
  char eb[AUTD3_WPCAP_ERRBUF_SIZE] = "";
  if (p->findalldevs(&all, eb) != 0) return autd3_set_error(AUTD3_E_IO, "nic: cannot list adapters (Npcap): %s", eb);
  for (autd3__pcap_if_t *d = all; d != NULL && *count < cap; d = d->next) {
    const char *desc = d->description ? d->description : "";
    if (d->name == NULL || strlen(d->name) >= name_cap || strlen(desc) >= desc_cap) continue;
    snprintf(names + *count * name_cap, name_cap, "%s", d->name);
    snprintf(descs + *count * desc_cap, desc_cap, "%s", desc);
    (*count)++;
  }
  p->freealldevs(all);
  return AUTD3_OK;
}
