/* POSIX run-time loading (dlopen); also macOS. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "platform/platform.h"

autd3__dl_t *autd3__dl_open(const char *path, char *why, size_t why_cap) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL && why != NULL && why_cap > 0) {
    const char *e = dlerror();
    snprintf(why, why_cap, "%s", e ? e : "cannot load");
  }
  return (autd3__dl_t *)h;
}

autd3__dl_fn_t autd3__dl_fn(autd3__dl_t *dl, const char *symbol) {
  void *p = dlsym((void *)dl, symbol);
  autd3__dl_fn_t f;
  memcpy(&f, &p, sizeof f); /* object to function pointer, as POSIX allows and ISO C does not spell */
  return f;
}

void autd3__dl_close(autd3__dl_t *dl) {
  if (dl) dlclose((void *)dl);
}
