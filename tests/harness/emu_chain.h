/*
 * The one emulated-chain harness of the tests: run one test case inside
 * tools/netns/autd3-netns (private user + network namespace, a veth pair,
 * autd3-emu with N devices on the far end). In the inner run the master side
 * is $AUTD3_TEST_IFNAME and harness/emuctl.h drives the emulator
 * ($AUTD3_EMU_CONTROL). Used by the shared EtherCAT scenarios
 * (tests/ethercat), the link-specific suites (tests/echocat, tests/soem,
 * tests/ethercrab) and the emulator tool's own tests (tests/emu).
 * Test-only; needs AUTD3_SOURCE_DIR and AUTD3_BINARY_DIR (autd3_add_test)
 * and _GNU_SOURCE.
 */
#ifndef AUTD3_TESTS_HARNESS_EMU_CHAIN_H
#define AUTD3_TESTS_HARNESS_EMU_CHAIN_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "autd3/link.h"
#include "harness/test.h"

/* Run test `name` inside autd3-netns with `devices` emulated devices started
 * with `emu_args` (verbatim; NULL = none), or none with `no_emu`. Returns in
 * the inner process; the outer one exits with the inner one's status. */
static inline void autd3_test_in_emu_chain(const char *name, int devices, const char *emu_args, bool no_emu) {
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
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    if (no_emu)
      execl(netns, netns, "--devices", nd, "--build", AUTD3_BINARY_DIR, "--no-emu", "--", self, name, (char *)NULL);
    else
      execl(netns, netns, "--devices", nd, "--build", AUTD3_BINARY_DIR, "--emu-args", emu_args ? emu_args : "", "--",
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

/* For a link's test: SKIP when `kind` is not built, and run without the SM
 * watchdog unless `emu_args` asks for it. The watchdog (100 ms, as a real ESC)
 * drops a device to SAFE-OP+ERROR when the master stalls that long, which a
 * loaded CI machine can cause in any test; tests that are not about recovery
 * turn it off, the recovery tests ask for it (--sm-watchdog-ms 100). */
static inline void in_netns_kind(autd3_link_kind_t kind, const char *name, int devices, const char *emu_args, bool no_emu) {
  if (!autd3_link_kind_available(kind))
    SKIP("the %s link is not built or not registered in this build", autd3_link_kind_name(kind));
  char args[512];
  snprintf(args, sizeof args, "%s%s", emu_args ? emu_args : "",
           emu_args && strstr(emu_args, "--sm-watchdog-ms") ? "" : " --sm-watchdog-ms 0");
  autd3_test_in_emu_chain(name, devices, args, no_emu);
}

/* The same for the file's LINK_KIND. */
#define in_netns(name, devices, emu_args, no_emu) in_netns_kind(LINK_KIND, name, devices, emu_args, no_emu)

#endif
