/*
 * POSIX advisory file locks (platform.h autd3__filelock_*): flock() on a file
 * in /run/lock (the FHS place for lock files; world-writable with the sticky
 * bit on common distributions), or /tmp when /run/lock is missing or not
 * writable. flock() locks belong to the open file: the kernel drops them when
 * the holder closes the descriptor or dies, kill -9 included, so a crashed
 * holder never leaves a stale lock (a stale *file* is harmless: the next
 * owner locks it again). The holder writes its pid into the file so a refused
 * process can name it.
 *
 * The file is removed at release while still locked; a process that opened
 * the old file before the removal then locks an unlinked inode, so after
 * taking the lock we check that the path still names the inode we hold and
 * start again otherwise (the usual pattern for removable lock files).
 * Existing files are opened without O_CREAT: with fs.protected_regular a
 * create-open of another user's file in a sticky directory is refused.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "autd3/link_driver.h"
#include "platform/platform.h"

/* Open `path` for locking: an existing file (read-write, or read-only if
 * another user's file is not writable for us: flock works on either), else
 * a new one. -1 with errno on failure. */
static int open_lock_file(const char *path) {
  for (int tries = 0; tries < 4; tries++) {
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == EACCES)
      fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0 || errno != ENOENT)
      return fd;
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd >= 0) {
      (void)fchmod(fd, 0666); /* whatever the umask: the next user (root or not) can lock it too */
      return fd;
    }
    if (errno != EEXIST)
      return -1;
  }
  errno = EAGAIN;
  return -1;
}

static long read_pid(int fd) {
  char buf[32];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0)
    return 0;
  buf[n] = 0;
  long pid = strtol(buf, NULL, 10);
  return pid > 0 ? pid : 0;
}

autd3_err_t autd3__filelock_try(const char *name, autd3__filelock_t *lk, bool *busy, long *holder_pid) {
  lk->handle = -1;
  lk->path[0] = 0;
  *busy = false;
  *holder_pid = 0;
  if (!name || !*name || strchr(name, '/') || strlen(name) > 100)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "lock: bad lock name \"%s\"", name ? name : "(null)");
  const char *dir = access("/run/lock", W_OK | X_OK) == 0 ? "/run/lock" : "/tmp";
  snprintf(lk->path, sizeof lk->path, "%s/%s", dir, name);
  for (int round = 0; round < 8; round++) {
    int fd = open_lock_file(lk->path);
    if (fd < 0)
      return autd3_set_error(AUTD3_E_IO, "lock: cannot open lock file %s: %s", lk->path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int e = errno;
      if (e == EWOULDBLOCK) {
        *busy = true;
        *holder_pid = read_pid(fd);
        close(fd);
        return AUTD3_OK;
      }
      close(fd);
      return autd3_set_error(AUTD3_E_IO, "lock: flock on %s failed: %s", lk->path, strerror(e));
    }
    struct stat held, named;
    if (fstat(fd, &held) == 0 && stat(lk->path, &named) == 0 && held.st_ino == named.st_ino && held.st_dev == named.st_dev) {
      char pid[32];
      int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
      /* a read-only file (another user's): the lock holds, the pid stays unknown */
      ssize_t w = ftruncate(fd, 0) == 0 ? pwrite(fd, pid, (size_t)len, 0) : -1;
      (void)w;
      lk->handle = fd;
      return AUTD3_OK;
    }
    close(fd); /* the previous holder removed the file meanwhile: lock the new one */
  }
  return autd3_set_error(AUTD3_E_IO, "lock: lock file %s keeps being replaced", lk->path);
}

void autd3__filelock_release(autd3__filelock_t *lk) {
  if (!lk || lk->handle < 0)
    return;
  (void)unlink(lk->path); /* may fail (another user's file in a sticky directory): harmless */
  close((int)lk->handle);
  lk->handle = -1;
}

uint64_t autd3__process_id(void) { return (uint64_t)getpid(); }

uint64_t autd3__net_namespace_id(void) {
  struct stat st;
  return stat("/proc/self/ns/net", &st) == 0 ? (uint64_t)st.st_ino : 0;
}
