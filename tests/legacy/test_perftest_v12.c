/*
 * autd3-perftest --protocol v12 over the in-process emulator (which then runs
 * firmware v12): the same report, every send a success, the mode labelled
 * v12; and --protocol auto picks v12 by itself. No timing is asserted.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/test.h"

static void run(const char *args, const char *want_mode) {
  const char *exe = AUTD3_BINARY_DIR "/tools/perftest/autd3-perftest";
  if (access(exe, X_OK) != 0) SKIP("%s not built (AUTD3_BUILD_TOOLS=OFF)", exe);
  char cmd[512], json[128];
  snprintf(json, sizeof json, "/tmp/autd3-perftest-v12-%d.json", (int)getpid());
  snprintf(cmd, sizeof cmd, "%s %s --json %s 2>/dev/null", exe, args, json);
  FILE *p = popen(cmd, "r");
  ASSERT_TRUE(p != NULL);
  char line[256];
  bool success = false, mode = false, summary = false;
  while (fgets(line, sizeof line, p)) {
    summary |= strncmp(line, "=== perftest summary ===", 24) == 0;
    success |= strncmp(line, "  success       : 40\n", 21) == 0;
  }
  ASSERT_EQ(pclose(p), 0);
  FILE *f = fopen(json, "r");
  ASSERT_TRUE(f != NULL);
  char want[64];
  snprintf(want, sizeof want, "\"mode\": \"%s\"", want_mode);
  while (fgets(line, sizeof line, f)) mode |= strstr(line, want) != NULL;
  fclose(f);
  unlink(json);
  ASSERT_TRUE(summary);
  ASSERT_TRUE(success);
  ASSERT_TRUE(mode);
}

TEST(stop_and_wait_v12) { run("--protocol v12 --devices 2 --count 40 --cycle-us 500", "stop-and-wait/v12"); }
TEST(streaming_v12) { run("--protocol v12 --devices 2 --count 40 --cycle-us 500 --mode streaming", "streaming/v12"); }
TEST(auto_over_v12_emulator) { run("--protocol auto --firmware v12 --count 40 --cycle-us 500", "stop-and-wait/v12"); }

TEST(rejects_bad_protocol_and_firmware) {
  const char *exe = AUTD3_BINARY_DIR "/tools/perftest/autd3-perftest";
  if (access(exe, X_OK) != 0) SKIP("%s not built (AUTD3_BUILD_TOOLS=OFF)", exe);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s --protocol v9 --count 1 >/dev/null 2>&1", exe);
  int st = system(cmd);
  ASSERT_EQ(WEXITSTATUS(st), 2);
  snprintf(cmd, sizeof cmd, "%s --firmware v11 --count 1 >/dev/null 2>&1", exe);
  st = system(cmd);
  ASSERT_EQ(WEXITSTATUS(st), 2);
}
