/*
 * Windows advisory file locks (platform.h autd3__filelock_*): the lock is a
 * file in the temporary directory opened for writing with no write sharing,
 * so a second open for writing fails with a sharing violation until the
 * holder's handle closes, which the kernel does when the holder ends however
 * it ends. FILE_FLAG_DELETE_ON_CLOSE removes the file with the last handle.
 * Not a named mutex: a mutex belongs to the thread that took it, and a link
 * may be closed from another thread than the one that opened it. The holder
 * writes its pid; a refused opener reads it with a read-only open, which the
 * holder's share mode allows.
 */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "platform/platform.h"

static long read_pid(const char *path) {
  HANDLE h = CreateFileA(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, OPEN_EXISTING,
                         FILE_ATTRIBUTE_NORMAL, NULL);
  if (h == INVALID_HANDLE_VALUE) return 0;
  char buf[32];
  DWORD n = 0;
  BOOL ok = ReadFile(h, buf, sizeof buf - 1, &n, NULL);
  CloseHandle(h);
  if (!ok || n == 0) return 0;
  buf[n] = 0;
  long pid = strtol(buf, NULL, 10);
  return pid > 0 ? pid : 0;
}

autd3_err_t autd3__filelock_try(const char *name, autd3__filelock_t *lk, bool *busy, long *holder_pid) {
  lk->handle = -1;
  lk->path[0] = 0;
  *busy = false;
  *holder_pid = 0;
  if (!name || !*name || strpbrk(name, "/\\:") || strlen(name) > 100)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "lock: bad lock name \"%s\"", name ? name : "(null)");
  char dir[MAX_PATH + 1];
  DWORD n = GetTempPathA(sizeof dir, dir);
  if (n == 0 || n >= sizeof dir) snprintf(dir, sizeof dir, "C:\\Windows\\Temp\\");
  snprintf(lk->path, sizeof lk->path, "%s%s", dir, name);
  HANDLE h = CreateFileA(lk->path, GENERIC_READ | GENERIC_WRITE | DELETE, FILE_SHARE_READ | FILE_SHARE_DELETE, NULL,
                         OPEN_ALWAYS, FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE, NULL);
  if (h == INVALID_HANDLE_VALUE) {
    DWORD e = GetLastError();
    if (e == ERROR_SHARING_VIOLATION || e == ERROR_ACCESS_DENIED) {
      *busy = true;
      *holder_pid = read_pid(lk->path);
      return AUTD3_OK;
    }
    return autd3_set_error(AUTD3_E_IO, "lock: cannot open lock file %s: Windows error %lu", lk->path, (unsigned long)e);
  }
  char pid[32];
  int len = snprintf(pid, sizeof pid, "%lu\n", (unsigned long)GetCurrentProcessId());
  DWORD w = 0;
  (void)SetEndOfFile(h);
  (void)WriteFile(h, pid, (DWORD)len, &w, NULL);
  lk->handle = (intptr_t)h;
  return AUTD3_OK;
}

void autd3__filelock_release(autd3__filelock_t *lk) {
  if (!lk || lk->handle == -1) return;
  CloseHandle((HANDLE)lk->handle); /* FILE_FLAG_DELETE_ON_CLOSE removes the file */
  lk->handle = -1;
}

uint64_t autd3__process_id(void) { return GetCurrentProcessId(); }

uint64_t autd3__net_namespace_id(void) { return 0; }
