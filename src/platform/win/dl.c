/* Windows run-time loading (LoadLibrary). */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#include <stdio.h>
#include <string.h>

#include "platform/platform.h"

autd3__dl_t *autd3__dl_open(const char *path, char *why, size_t why_cap) {
  HMODULE h = LoadLibraryA(path);
  if (h == NULL && why != NULL && why_cap > 0) {
    DWORD e = GetLastError();
    DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, e, 0, why, (DWORD)why_cap, NULL);
    while (n > 0 && (why[n - 1] == '\n' || why[n - 1] == '\r' || why[n - 1] == '.')) why[--n] = 0;
    if (n == 0) snprintf(why, why_cap, "Windows error %lu", (unsigned long)e);
  }
  return (autd3__dl_t *)h;
}

autd3__dl_fn_t autd3__dl_fn(autd3__dl_t *dl, const char *symbol) {
  FARPROC p = GetProcAddress((HMODULE)dl, symbol);
  autd3__dl_fn_t f;
  memcpy(&f, &p, sizeof f);
  return f;
}

void autd3__dl_close(autd3__dl_t *dl) {
  if (dl) FreeLibrary((HMODULE)dl);
}
