/*
 * The operating-system seam: monotonic time, absolute sleeps, threads, RT
 * priority and affinity, semaphores and mutexes. Everything OS-specific
 * outside the NIC lives behind this header; src/platform/posix/ implements it
 * for Linux (and other POSIX systems where noted), a win/ folder would
 * implement it for Windows.
 */
#ifndef AUTD3_PLATFORM_PLATFORM_H
#define AUTD3_PLATFORM_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autd3/error.h"

/* Monotonic clock in nanoseconds (CLOCK_MONOTONIC). Never goes back. */
uint64_t autd3__now_ns(void);
/* Wall-clock (CLOCK_REALTIME) in nanoseconds since the Unix epoch. */
uint64_t autd3__realtime_ns(void);
/* Sleep until the monotonic time `deadline_ns` (absolute; returns at once if past).
 * If spin_ns > 0, sleep until deadline - spin_ns and busy-wait the rest. */
void autd3__sleep_until_ns(uint64_t deadline_ns, uint32_t spin_ns);
/* Relative sleep. */
void autd3__sleep_ns(uint64_t ns);

typedef struct autd3__thread {
  uintptr_t handle; /* pthread_t on POSIX */
} autd3__thread_t;

/* Start a thread running fn(arg). */
autd3_err_t autd3__thread_start(autd3__thread_t *t, void *(*fn)(void *), void *arg, const char *name);
/* Join it. */
void autd3__thread_join(autd3__thread_t *t);
/* Apply SCHED_FIFO `priority` (1..99, 0 = leave) and pin to `cpu` (-1 = leave) for the calling thread.
 * Returns AUTD3_E_PERMISSION (with a message) if the OS refuses. */
autd3_err_t autd3__thread_set_rt(int priority, int cpu);

/* CPU time consumed by the calling thread, ns (CLOCK_THREAD_CPUTIME_ID). */
uint64_t autd3__thread_cpu_ns(void);
/* CPU time consumed so far by another, still running (not yet joined)
 * thread, read from the caller's side so the measured thread pays nothing;
 * 0 if the OS cannot tell. */
uint64_t autd3__thread_cpu_ns_of(const autd3__thread_t *t);

/* Advisory inter-process lock named by a file name (no directory), e.g. one
 * per network interface. Non-blocking; released at autd3__filelock_release()
 * or when the process dies however it dies (POSIX: flock() on a file in
 * /run/lock, falling back to /tmp when /run/lock is not writable; the lock
 * belongs to the open file, so the kernel drops it with the process;
 * Windows: a file in the temporary directory opened for exclusive writing and
 * deleted on close, which the kernel closes with the process too). */
typedef struct autd3__filelock {
  intptr_t handle; /* fd on POSIX; -1 = not held */
  char path[160];
} autd3__filelock_t;

/* Try to take lock `name` without waiting. AUTD3_OK: taken (*busy false) or
 * held by another open (*busy true, *holder_pid its process id when the
 * holder wrote it, else 0); the lock then is not held by `lk`. AUTD3_E_IO
 * (with a message naming the paths) when no lock directory is usable;
 * AUTD3_E_INVALID_ARGUMENT for a name with '/' or too long. Open-time only. */
autd3_err_t autd3__filelock_try(const char *name, autd3__filelock_t *lk, bool *busy, long *holder_pid);
/* Release (and remove the file while still holding it). Not held: no-op. */
void autd3__filelock_release(autd3__filelock_t *lk);
/* This process's id. */
uint64_t autd3__process_id(void);
/* An id of the network namespace this process runs in (Linux: the inode of
 * /proc/self/ns/net), 0 where the OS has none: adapter names are unique per
 * namespace only, so per-adapter lock names carry it. */
uint64_t autd3__net_namespace_id(void);

/* ---- synchronisation ----------------------------------------------------------
 * Storage is opaque and embedded (no allocation, so init fails only if the OS
 * refuses); each back end checks with a static assertion that its native
 * object fits. Aligned for any native type (8 bytes covers sem_t,
 * pthread_mutex_t, HANDLE and SRWLOCK on every target we build for). */
typedef struct autd3__sem {
  union {
    uint64_t align_;
    unsigned char bytes[64];
  } u;
} autd3__sem_t;

typedef struct autd3__mutex {
  union {
    uint64_t align_;
    unsigned char bytes[64];
  } u;
} autd3__mutex_t;

/* Counting semaphore starting at `initial`. AUTD3_E_INTERNAL (message set) if the OS refuses. */
autd3_err_t autd3__sem_init(autd3__sem_t *s, uint32_t initial);
void autd3__sem_destroy(autd3__sem_t *s);
/* Never blocks and takes no lock a waiter can hold: the bus thread posts
 * completions with it. */
void autd3__sem_post(autd3__sem_t *s);
/* Wait (retrying on signals). AUTD3_E_INTERNAL (message set) only if the OS fails. */
autd3_err_t autd3__sem_wait(autd3__sem_t *s);
/* Take it if available now. */
bool autd3__sem_trywait(autd3__sem_t *s);
/* Wait at most timeout_ns, measured on the monotonic clock (a wall-clock
 * step cannot stretch it). AUTD3_OK, AUTD3_E_PENDING on timeout (no message
 * set: the caller words it), or AUTD3_E_INTERNAL (message set). */
autd3_err_t autd3__sem_timedwait_ns(autd3__sem_t *s, uint64_t timeout_ns);

/* Plain non-recursive mutex, for user-side threads only (never the bus thread's cycle path). */
autd3_err_t autd3__mutex_init(autd3__mutex_t *m);
void autd3__mutex_destroy(autd3__mutex_t *m);
void autd3__mutex_lock(autd3__mutex_t *m);
void autd3__mutex_unlock(autd3__mutex_t *m);
bool autd3__mutex_trylock(autd3__mutex_t *m);

/* ---- shared libraries loaded at run time (Npcap's wpcap.dll) ------------------ */
typedef struct autd3__dl autd3__dl_t;
typedef void (*autd3__dl_fn_t)(void);
/* Load the library `path` (a bare file name is searched the OS's way). NULL
 * if it cannot be loaded; then `why` (may be NULL) holds the OS's reason. */
autd3__dl_t *autd3__dl_open(const char *path, char *why, size_t why_cap);
/* A function it exports (cast to its real type by the caller), or NULL. */
autd3__dl_fn_t autd3__dl_fn(autd3__dl_t *dl, const char *symbol);
void autd3__dl_close(autd3__dl_t *dl);

/* Ask the OS for exact timer wake-ups for the calling thread (Linux: 1 ns
 * timer slack instead of the default 50 µs). Best effort, no error. */
void autd3__thread_precise_timers(void);

#endif
