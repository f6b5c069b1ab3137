/*
 * Shared by the EtherCAT integration tests: run one test case inside
 * tools/netns/autd3-netns (private user + network namespace, veth pair,
 * autd3-emu on the far end). Test-only; needs AUTD3_SOURCE_DIR and
 * AUTD3_BINARY_DIR (defined by autd3_add_test) and _GNU_SOURCE.
 */
#ifndef AUTD3_TESTS_ETHERCAT_NETNS_H
#define AUTD3_TESTS_ETHERCAT_NETNS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "autd3/link.h"
#include "harness/test.h"

/* Run test `name` inside autd3-netns with `devices` emulated devices. Returns
 * in the inner process; the outer one exits with the inner one's status. */
static inline void in_netns_kind(autd3_link_kind_t kind, const char *name, int devices, const char *emu_args, bool no_emu) {
  if (!autd3_link_kind_available(kind))
    SKIP("the %s link is not built or not registered in this build", autd3_link_kind_name(kind));
  if (getenv("AUTD3_TEST_IFNAME"))
    return;
  const char *emu = AUTD3_BINARY_DIR "/tools/emu/autd3-emu";
  const char *netns = AUTD3_SOURCE_DIR "/tools/netns/autd3-netns";
  if (access(emu, X_OK) != 0)
    SKIP("device emulator %s is not built", emu);
  if (access(netns, X_OK) != 0)
    SKIP("%s is missing", netns);
  char self[4096];
  ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
  if (l <= 0)
    SKIP("cannot resolve /proc/self/exe");
  self[l] = 0;
  char nd[16];
  snprintf(nd, sizeof nd, "%d", devices);
  /* The SM watchdog (100 ms, as a real ESC) drops a device to SAFE-OP+ERROR
   * when the master stalls that long, which a loaded CI machine can cause in
   * any test. Tests that are not about recovery turn it off; the recovery
   * tests ask for it explicitly (--sm-watchdog-ms 100). */
  char args[512];
  snprintf(args, sizeof args, "%s%s", emu_args ? emu_args : "",
           emu_args && strstr(emu_args, "--sm-watchdog-ms") ? "" : " --sm-watchdog-ms 0");
  pid_t pid = fork();
  if (pid == 0) {
    if (no_emu)
      execl(netns, netns, "--devices", nd, "--build", AUTD3_BINARY_DIR, "--no-emu", "--", self, name, (char *)NULL);
    else
      execl(netns, netns, "--devices", nd, "--build", AUTD3_BINARY_DIR, "--emu-args", args, "--",
            self, name, (char *)NULL);
    _exit(126);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  if (code == 125 || code == 126)
    SKIP("autd3-netns could not set up the namespace (exit %d): unprivileged user namespaces unavailable?", code);
  exit(code);
}

#define in_netns(name, devices, emu_args, no_emu) in_netns_kind(LINK_KIND, name, devices, emu_args, no_emu)

#endif
