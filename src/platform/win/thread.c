/* Windows threads, priority, affinity and the timer resolution. */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#include <process.h>
#include <stdlib.h>
#include <string.h>
#include <timeapi.h>

#include "autd3/link_driver.h"
#include "platform/platform.h"
#include "platform/win/win_internal.h"

/* Whether this thread raised the system timer resolution (undone at exit). */
static _Thread_local bool raised_timer;

struct start {
  void *(*fn)(void *);
  void *arg;
};

static unsigned __stdcall trampoline(void *p) {
  struct start s = *(struct start *)p;
  free(p);
  s.fn(s.arg);
  autd3__win_sleep_timer_close();
  if (raised_timer) timeEndPeriod(1);
  return 0;
}

typedef HRESULT(WINAPI *set_desc_fn)(HANDLE, PCWSTR);

/* SetThreadDescription exists from Windows 10 1607 (and not in wine 8): looked up, best effort. */
static void set_name(HANDLE th, const char *name) {
  HMODULE k = GetModuleHandleW(L"kernel32.dll");
  FARPROC p = k ? GetProcAddress(k, "SetThreadDescription") : NULL;
  if (p == NULL || name == NULL) return;
  set_desc_fn f;
  memcpy(&f, &p, sizeof f);
  wchar_t w[64];
  int n = MultiByteToWideChar(CP_UTF8, 0, name, -1, w, 64);
  if (n > 0) f(th, w);
}

autd3_err_t autd3__thread_start(autd3__thread_t *t, void *(*fn)(void *), void *arg, const char *name) {
  struct start *s = malloc(sizeof *s);
  if (s == NULL) return autd3_set_error(AUTD3_E_NOMEM, "cannot start thread %s: out of memory", name ? name : "");
  s->fn = fn;
  s->arg = arg;
  /* _beginthreadex, not CreateThread: the thread may use the C runtime. */
  uintptr_t h = _beginthreadex(NULL, 0, trampoline, s, 0, NULL);
  if (h == 0) {
    free(s);
    return autd3_set_error(AUTD3_E_NOMEM, "cannot start thread %s (Windows error %lu)", name ? name : "",
                           (unsigned long)GetLastError());
  }
  set_name((HANDLE)h, name);
  t->handle = h;
  return AUTD3_OK;
}

void autd3__thread_join(autd3__thread_t *t) {
  WaitForSingleObject((HANDLE)t->handle, INFINITE);
  CloseHandle((HANDLE)t->handle);
}

/* Any priority 1..99 maps to THREAD_PRIORITY_TIME_CRITICAL, what the
 * reference uses for its bus thread on Windows (shinolab/autd3-sdk, link
 * thread set-up): Windows has no graded real-time priorities inside a
 * normal priority class. We leave the process class alone:
 * REALTIME_PRIORITY_CLASS needs administrator rights and can starve the
 * system's input and disk threads. */
autd3_err_t autd3__thread_set_rt(int priority, int cpu) {
  if (priority > 0 && !SetThreadPriority(GetCurrentThread(), THREAD_PRIORITY_TIME_CRITICAL))
    return autd3_set_error(AUTD3_E_PERMISSION, "cannot set a time-critical thread priority (Windows error %lu)",
                           (unsigned long)GetLastError());
  if (cpu >= 0) {
    if (cpu >= (int)(sizeof(DWORD_PTR) * 8))
      return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "cannot pin thread to CPU %d: beyond this processor group", cpu);
    if (SetThreadAffinityMask(GetCurrentThread(), (DWORD_PTR)1 << cpu) == 0)
      return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "cannot pin thread to CPU %d (Windows error %lu)", cpu,
                             (unsigned long)GetLastError());
  }
  return AUTD3_OK;
}

uint64_t autd3__thread_cpu_ns_of(const autd3__thread_t *t) {
  FILETIME c, e, k, u;
  if (!GetThreadTimes((HANDLE)t->handle, &c, &e, &k, &u)) return 0;
  return autd3__win_filetime_ns(&k, &u);
}

/* The default system tick is 15.6 ms; every wait that is not on a
 * high-resolution timer (time.c), every Sleep and the socket timeouts
 * follow it. timeBeginPeriod(1), as the reference does, for the life of the
 * bus thread only (it is process-wide, and costs power): undone when the
 * thread ends (trampoline above). */
void autd3__thread_precise_timers(void) {
  if (!raised_timer && timeBeginPeriod(1) == TIMERR_NOERROR) raised_timer = true;
}
