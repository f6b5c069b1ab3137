/*
 * emuctl.h: send one control command to the autd3-emu that autd3-netns
 * started ($AUTD3_EMU_CONTROL, a UNIX stream socket; commands in
 * docs/emulator.md: status, unplug K, replug, power-cycle K, drop P,
 * corrupt P, delay US, silence 1|0, al K, output K, ping).
 *
 *   char r[256];
 *   if (autd3_emuctl("unplug 1", r, sizeof r) != 0) TEST_FAIL_("emuctl: %s", r);
 *
 * Returns 0 when the emulator answered "ok ...", 1 for "err ...", -1 when it
 * could not be reached (reply then holds the reason). The reply line is
 * copied without its newline, truncated to cap-1. Blocking, at most ~2 s.
 * Header-only; needs POSIX (_GNU_SOURCE or _DEFAULT_SOURCE before includes).
 */
#ifndef AUTD3_TEST_EMUCTL_H
#define AUTD3_TEST_EMUCTL_H

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static inline int autd3_emuctl_at(const char *path, const char *cmd, char *reply, size_t cap) {
  char dummy[8];
  if (!reply || cap == 0) {
    reply = dummy;
    cap = sizeof dummy;
  }
  reply[0] = 0;
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  if (!path || strlen(path) >= sizeof sa.sun_path) {
    snprintf(reply, cap, "no control socket (AUTD3_EMU_CONTROL unset or too long)");
    return -1;
  }
  strcpy(sa.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    snprintf(reply, cap, "connect %s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  size_t cl = strlen(cmd);
  if (write(fd, cmd, cl) != (ssize_t)cl || write(fd, "\n", 1) != 1) {
    snprintf(reply, cap, "write %s: %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  size_t n = 0;
  int rc = -1;
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 2000) <= 0) {
      snprintf(reply, cap, "no answer from %s", path);
      break;
    }
    char c;
    ssize_t got = read(fd, &c, 1);
    if (got <= 0) {
      snprintf(reply, cap, "%s closed the connection", path);
      break;
    }
    if (c == '\n') {
      rc = strncmp(reply, "ok", 2) == 0 ? 0 : 1;
      break;
    }
    if (n + 1 < cap) {
      reply[n++] = c;
      reply[n] = 0;
    }
  }
  close(fd);
  return rc;
}

/* The same for $AUTD3_EMU_CONTROL. */
static inline int autd3_emuctl(const char *cmd, char *reply, size_t cap) {
  return autd3_emuctl_at(getenv("AUTD3_EMU_CONTROL"), cmd, reply, cap);
}

#endif
