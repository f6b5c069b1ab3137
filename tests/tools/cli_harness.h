/*
 * The shared pieces of the `autd3` command's tests (test_autd3_cli.c: the chain subcommands, adapters and doctor;
 * test_autd3_live.c: watch and synctune, which run a bus): the tool's path, running it, the emulator's control
 * socket, reading its JSON and a capture file. Header-only, one test file per executable.
 */
#ifndef AUTD3_TESTS_TOOLS_CLI_HARNESS_H
#define AUTD3_TESTS_TOOLS_CLI_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/emuctl.h"
#include "harness/test.h"

#define CLI AUTD3_BINARY_DIR "/tools/autd3/autd3"

static char g_out[1 << 20];

/* Run `autd3 ARGS` under `prefix` (a command such as setpriv, or ""): ARGS is a shell line, @IF@ = the
 * master-side interface; stdout into g_out; the exit code. Skips when the tool is not built. */
static inline int run_under(const char *prefix, const char *args) {
  if (access(CLI, X_OK) != 0)
    SKIP("%s is not built", CLI);
  char line[2048], cmd[2400];
  const char *ifn = getenv("AUTD3_TEST_IFNAME");
  const char *at = strstr(args, "@IF@");
  if (at)
    snprintf(line, sizeof line, "%.*s%s%s", (int)(at - args), args, ifn ? ifn : "none", at + 4);
  else
    snprintf(line, sizeof line, "%s", args);
  snprintf(cmd, sizeof cmd, "%s '%s' %s", prefix, CLI, line);
  FILE *p = popen(cmd, "r");
  ASSERT_TRUE(p != NULL);
  size_t n = fread(g_out, 1, sizeof g_out - 1, p);
  g_out[n] = 0;
  int st = pclose(p);
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  fprintf(stderr, "$ %s autd3 %s -> %d\n%.*s\n", prefix, line, code, 2000, g_out);
  return code;
}

/* `autd3 ARGS` (see run_under). */
static inline int run(const char *args) { return run_under("", args); }

static inline void ctl(const char *cmd, char *r, size_t cap) {
  if (autd3_emuctl(cmd, r, cap) != 0)
    TEST_FAIL_("emuctl '%s': %s", cmd, r);
}

/* The integer after "key": in the JSON object of device `pos` (and inside
 * its port `port` object when port >= 0). The tool's JSON has a fixed member
 * order: "position" opens a device, "port" a port. -1 if not found. */
static inline long long jfield(const char *json, int pos, int port, const char *key) {
  char tag[64];
  snprintf(tag, sizeof tag, "{\"position\":%d,", pos);
  const char *d = strstr(json, tag);
  if (!d)
    return -1;
  const char *end = strstr(d + 1, "{\"position\":");
  if (port >= 0) {
    snprintf(tag, sizeof tag, "{\"port\":%d,", port);
    d = strstr(d, tag);
    if (!d || (end && d > end))
      return -1;
    end = strchr(d, '}');
  }
  snprintf(tag, sizeof tag, "\"%s\":", key);
  const char *k = strstr(d, tag);
  if (!k || (end && k > end))
    return -1;
  return strtoll(k + strlen(tag), NULL, 10);
}

/* Count the frames of pcap file `path` the master sent / the chain returned (and remove it). */
static inline void pcap_count(const char *path, int *sent, int *back) {
  FILE *f = fopen(path, "rb");
  ASSERT_TRUE(f != NULL);
  static uint8_t fr[2048];
  uint8_t h[24], rec[16];
  ASSERT_EQ(fread(h, 1, 24, f), 24);
  ASSERT_EQ(h[0] | h[1] << 8 | h[2] << 16 | (uint32_t)h[3] << 24, 0xa1b23c4du);
  *sent = *back = 0;
  while (fread(rec, 1, 16, f) == 16) {
    uint32_t incl = rec[8] | rec[9] << 8 | rec[10] << 16 | (uint32_t)rec[11] << 24;
    ASSERT_LE(incl, sizeof fr);
    ASSERT_EQ(fread(fr, 1, incl, f), incl);
    ASSERT_EQ(fr[12], 0x88);
    ASSERT_EQ(fr[13], 0xA4);
    if (fr[6] & 0x02)
      (*back)++; /* the first ESC sets the locally-administered bit in what it returns */
    else
      (*sent)++;
  }
  fclose(f);
  unlink(path);
}

#endif
