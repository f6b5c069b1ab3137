/* libpcap loaded at run time (see pcap_load.h): the portable part. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "nic/pcap_load.h"

static autd3__pcap_api_t api;
static autd3__dl_t *_Atomic loaded;
/* Loading is rare (once per process, or a test's probe): a flag taken with
 * short sleeps serialises it without an OS lock that would need its own
 * one-time initialisation. */
static atomic_flag loading = ATOMIC_FLAG_INIT;

/* The calls every libpcap, Npcap and WinPcap have (pcap_api.h's table). */
static bool bind_portable(autd3__dl_t *dl, autd3__pcap_api_t *t) {
  static const struct {
    size_t off;
    const char *sym;
  } calls[] = {
#define CALL(field, sym) {offsetof(autd3__pcap_api_t, field), sym}
      CALL(create, "pcap_create"),           CALL(set_snaplen, "pcap_set_snaplen"),
      CALL(set_promisc, "pcap_set_promisc"), CALL(set_timeout, "pcap_set_timeout"),
      CALL(activate, "pcap_activate"),       CALL(compile, "pcap_compile"),
      CALL(setfilter, "pcap_setfilter"),     CALL(freecode, "pcap_freecode"),
      CALL(setnonblock, "pcap_setnonblock"), CALL(sendpacket, "pcap_sendpacket"),
      CALL(next_ex, "pcap_next_ex"),         CALL(geterr, "pcap_geterr"),
      CALL(statustostr, "pcap_statustostr"), CALL(close, "pcap_close"),
      CALL(findalldevs, "pcap_findalldevs"), CALL(freealldevs, "pcap_freealldevs"),
      CALL(lib_version, "pcap_lib_version"),
#undef CALL
  };
  memset(t, 0, sizeof *t);
  for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
    autd3__dl_fn_t f = autd3__dl_fn(dl, calls[i].sym);
    if (f == NULL)
      return false;
    /* every field is a function pointer: store the one looked up as its type */
    memcpy((char *)t + calls[i].off, &f, sizeof f);
  }
  return true;
}

/* Load `lib`, or the OS part's libraries in turn; bind; publish unless a probe. */
static autd3_err_t load(const char *lib) {
  char name[320], why[256] = "", tried[600] = "";
  autd3__dl_t *dl = NULL;
  for (size_t i = 0; dl == NULL; i++) {
    if (lib != NULL) {
      if (i > 0)
        break;
      snprintf(name, sizeof name, "%s", lib);
    } else if (!autd3__pcap_os_library(i, name, sizeof name)) {
      break;
    }
    size_t l = strlen(tried);
    snprintf(tried + l, sizeof tried - l, "%s%s", l ? ", " : "", name);
    dl = autd3__dl_open(name, why, sizeof why);
  }
  if (dl == NULL)
    return autd3_set_error(AUTD3_E_NOT_BUILT, "raw Ethernet through libpcap needs %s, which cannot be loaded (%s: %s): %s",
                           lib ? lib : "libpcap", tried, why, autd3__pcap_os_hint());
  autd3__pcap_api_t t;
  if (!bind_portable(dl, &t)) {
    autd3__dl_close(dl);
    return autd3_set_error(AUTD3_E_NOT_BUILT, "%s lacks the libpcap API: %s", name, autd3__pcap_os_hint());
  }
  if (lib != NULL) {
    autd3__dl_close(dl); /* a probe of another library: the process-wide table stays as it is */
    return AUTD3_OK;
  }
  autd3__pcap_os_complete(dl, &t);
  api = t;
  atomic_store(&loaded, dl);
  return AUTD3_OK;
}

autd3_err_t autd3__pcap_load(const char *lib, const autd3__pcap_api_t **out) {
  if (lib == NULL && atomic_load(&loaded) != NULL) {
    *out = &api;
    return AUTD3_OK;
  }
  while (atomic_flag_test_and_set(&loading))
    autd3__sleep_ns(100000);
  autd3_err_t err = AUTD3_OK;
  if (lib != NULL || atomic_load(&loaded) == NULL)
    err = load(lib);
  atomic_flag_clear(&loading);
  if (err == AUTD3_OK && lib == NULL)
    *out = &api;
  return err;
}

autd3_err_t autd3__pcap_api(const autd3__pcap_api_t **out) { return autd3__pcap_load(NULL, out); }
