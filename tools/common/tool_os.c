/* The tools' OS services (tool_os.h): Win32 or POSIX. */
#if !defined(_WIN32) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include "tool_os.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#include <io.h>
#include <process.h>

uint64_t tool_now_ns(void) {
  static LARGE_INTEGER f;
  LARGE_INTEGER c;
  if (f.QuadPart == 0) QueryPerformanceFrequency(&f);
  QueryPerformanceCounter(&c);
  return (uint64_t)(c.QuadPart / f.QuadPart) * 1000000000u + (uint64_t)(c.QuadPart % f.QuadPart) * 1000000000u / (uint64_t)f.QuadPart;
}

void tool_sleep_ms(uint32_t ms) { Sleep(ms); }

typedef struct start {
  void *(*fn)(void *);
  void *arg;
} start_t;

static unsigned __stdcall trampoline(void *p) {
  start_t s = *(start_t *)p;
  free(p);
  s.fn(s.arg);
  return 0;
}

bool tool_thread_start(tool_thread_t *t, void *(*fn)(void *), void *arg) {
  start_t *s = malloc(sizeof *s);
  if (s == NULL) return false;
  s->fn = fn, s->arg = arg;
  uintptr_t h = _beginthreadex(NULL, 0, trampoline, s, 0, NULL);
  if (h == 0) {
    free(s);
    return false;
  }
  t->handle = (void *)h;
  return true;
}

void tool_thread_join(tool_thread_t *t) {
  WaitForSingleObject((HANDLE)t->handle, INFINITE);
  CloseHandle((HANDLE)t->handle);
}

void (*tool_dl_fn(const char *stem, const char *sym, char *why, size_t why_cap))(void) {
  /* MinGW names a library libNAME.dll, MSVC NAME.dll: the first that loads.
   * Error 126 is the library or a DLL it needs missing (libautd3-link-soem.dll
   * needs Npcap's wpcap.dll). */
  char name[256], other[256];
  snprintf(name, sizeof name, "lib%s.dll", stem);
  snprintf(other, sizeof other, "%s.dll", stem);
  HMODULE h = LoadLibraryA(name);
  unsigned long e = h == NULL ? (unsigned long)GetLastError() : 0;
  if (h == NULL && (h = LoadLibraryA(other)) != NULL) memcpy(name, other, sizeof name);
  if (h == NULL) {
    snprintf(why, why_cap, "cannot load %s (nor %s): Windows error %lu%s", name, other, e,
             e == ERROR_MOD_NOT_FOUND ? ": it, or a DLL it needs (SOEM: Npcap's wpcap.dll), was not found" : "");
    return NULL;
  }
  FARPROC p = GetProcAddress(h, sym);
  if (p == NULL) snprintf(why, why_cap, "%s has no %s", name, sym);
  void (*f)(void);
  memcpy(&f, &p, sizeof f);
  return f;
}

void tool_on_sigint(void (*fn)(int)) { signal(SIGINT, fn); }

bool tool_isatty_stdout(void) { return _isatty(_fileno(stdout)) != 0; }

void tool_on_stop_signals(void (*fn)(int)) {
  /* SIGTERM is never raised by Windows itself, but raise() and some
   * runtimes' kill emulations send it. */
  signal(SIGINT, fn);
  signal(SIGTERM, fn);
}

bool tool_exit_with_parent(void) { return false; /* no parent-death signal on Windows */ }

#else
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

uint64_t tool_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void tool_sleep_ms(uint32_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

bool tool_thread_start(tool_thread_t *t, void *(*fn)(void *), void *arg) {
  pthread_t *th = malloc(sizeof *th);
  if (th == NULL) return false;
  if (pthread_create(th, NULL, fn, arg) != 0) {
    free(th);
    return false;
  }
  t->handle = th;
  return true;
}

void tool_thread_join(tool_thread_t *t) {
  pthread_join(*(pthread_t *)t->handle, NULL);
  free(t->handle);
}

void (*tool_dl_fn(const char *stem, const char *sym, char *why, size_t why_cap))(void) {
  char name[256];
#ifdef __APPLE__
  snprintf(name, sizeof name, "lib%s.dylib", stem);
#else
  snprintf(name, sizeof name, "lib%s.so", stem);
#endif
  void *h = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
  if (h == NULL) {
    snprintf(why, why_cap, "cannot load %s: %s", name, dlerror());
    return NULL;
  }
  void *p = dlsym(h, sym);
  if (p == NULL) snprintf(why, why_cap, "%s has no %s", name, sym);
  void (*f)(void);
  memcpy(&f, &p, sizeof f); /* object to function pointer without a cast ISO C forbids */
  return f;
}

static void on(int sig, void (*fn)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
}

void tool_on_sigint(void (*fn)(int)) { on(SIGINT, fn); }

bool tool_isatty_stdout(void) { return isatty(STDOUT_FILENO) != 0; }

void tool_on_stop_signals(void (*fn)(int)) {
  on(SIGINT, fn);
  on(SIGTERM, fn);
  signal(SIGPIPE, SIG_IGN);
}

bool tool_exit_with_parent(void) {
#ifdef __linux__
  /* prctl(2) PR_SET_PDEATHSIG; a parent already gone has left us to init (pid 1) */
  return prctl(PR_SET_PDEATHSIG, SIGTERM) == 0 && getppid() != 1;
#else
  return false;
#endif
}
#endif
