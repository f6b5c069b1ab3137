/*
 * autd3: see the bus (docs/tools.md). A thin dispatcher: each subcommand is
 * its own file (adapters.c, scan.c, sii.c, reg.c, watch.c, synctune.c, doctor.c) and prints its
 * own --help; `autd3 help [SUBCOMMAND]` shows the same.
 */
#include <stdio.h>
#include <string.h>

#include "autd3/version.h"
#include "cli.h"

static const cmd_t cmds[] = {
    {"adapters", "the network adapters the EtherCAT links can use, and which carry EtherCAT now", cmd_adapters,
     help_adapters},
    {"scan", "the chain as it is: identity, AL state, DL/port status, DC, ESC error counters", cmd_scan, help_scan},
    {"sii", "one device's SII EEPROM decoded (or dumped raw)", cmd_sii, help_sii},
    {"reg", "read or write raw ESC registers", cmd_reg, help_reg},
    {"watch", "a live view of a running link: cycles, stale/lost, per-device state and resets", cmd_watch, help_watch},
    {"synctune", "sweep SYNC0 period x shift, rank the settings by OP retention and stale/lost cycles", cmd_synctune,
     help_synctune},
    {"doctor", "check this host for what makes EtherCAT links fail, with the fix for each", cmd_doctor, help_doctor},
};
#define NCMDS (sizeof cmds / sizeof cmds[0])

static void usage(FILE *o) {
  fprintf(o, "usage: " TOOL " SUBCOMMAND [options]   (" TOOL " SUBCOMMAND --help for its options)\n\nsubcommands:\n");
  for (size_t i = 0; i < NCMDS; i++)
    fprintf(o, "  %-9s %s\n", cmds[i].name, cmds[i].summary);
  fprintf(o, "  %-9s this text, or a subcommand's help\n\n", "help");
  fprintf(o, "exit codes: 0 ok, 1 failed, 2 usage, 3 doctor warnings, 4 no permission (CAP_NET_RAW),\n"
             "            5 no such interface, 6 no device, 7 another master holds the interface (docs/tools.md)\n");
}

static const cmd_t *find(const char *name) {
  for (size_t i = 0; i < NCMDS; i++)
    if (!strcmp(cmds[i].name, name))
      return &cmds[i];
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return EXIT_USAGE;
  }
  const char *sub = argv[1];
  if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
    usage(stdout);
    return EXIT_OK;
  }
  if (!strcmp(sub, "--version")) {
    printf(TOOL " (libautd3 %s)\n", autd3_version_string());
    return EXIT_OK;
  }
  if (!strcmp(sub, "help")) {
    if (argc < 3) {
      usage(stdout);
      return EXIT_OK;
    }
    const cmd_t *c = find(argv[2]);
    if (!c) {
      fprintf(stderr, TOOL ": no subcommand '%s'\n", argv[2]);
      usage(stderr);
      return EXIT_USAGE;
    }
    c->help(stdout);
    return EXIT_OK;
  }
  const cmd_t *c = find(sub);
  if (!c) {
    fprintf(stderr, TOOL ": no subcommand '%s'\n", sub);
    usage(stderr);
    return EXIT_USAGE;
  }
  return c->run(argc - 1, argv + 1);
}
