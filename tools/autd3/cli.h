/*
 * The `autd3` command's shared pieces (docs/tools.md): the subcommand
 * table, exit codes, option parsing, the bus every chain subcommand opens
 * (src/link/echocat/bus.h) and a small JSON writer. Portable C: OS calls
 * live in doctor_os.c (the tools' OS seam, as tools/common/tool_os.c).
 */
#ifndef AUTD3_TOOLS_AUTD3_CLI_H
#define AUTD3_TOOLS_AUTD3_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "autd3/error.h"
#include "link/echocat/bus.h"

#define TOOL "autd3"

/* Exit codes (docs/tools.md "Exit codes"). */
enum {
  EXIT_OK = 0,         /* done; doctor: every check passed (or was skipped) */
  EXIT_FAIL = 1,       /* the operation failed (I/O, timeout, a device refused); doctor: a check failed */
  EXIT_USAGE = 2,      /* bad command line */
  EXIT_WARN = 3,       /* doctor: warnings, no failure */
  EXIT_PERMISSION = 4, /* raw sockets refused: CAP_NET_RAW / CAP_NET_ADMIN missing */
  EXIT_NO_IF = 5,      /* no such network interface */
  EXIT_NO_DEVICE = 6,  /* no EtherCAT device answered, or no device at that position */
  EXIT_BUSY = 7        /* another EtherCAT master holds or drives the interface */
};

typedef struct cmd {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv); /* argv[0] = the subcommand's name */
  void (*help)(FILE *o);
} cmd_t;

int cmd_adapters(int argc, char **argv);
void help_adapters(FILE *o);
int cmd_scan(int argc, char **argv);
void help_scan(FILE *o);
int cmd_sii(int argc, char **argv);
void help_sii(FILE *o);
int cmd_reg(int argc, char **argv);
void help_reg(FILE *o);
int cmd_doctor(int argc, char **argv);
void help_doctor(FILE *o);
int cmd_watch(int argc, char **argv);
void help_watch(FILE *o);
int cmd_synctune(int argc, char **argv);
void help_synctune(FILE *o);

/* Options common to the chain subcommands. */
typedef struct cli_opts {
  const char *interface; /* --interface IF */
  const char *capture;   /* --capture FILE.pcap */
  bool json;             /* --json */
  bool help;             /* -h / --help */
} cli_opts_t;

/* Parse argv[1..]: the common options into *o, the rest handed to `own`
 * (returns the number of arguments it used, 0 = not its option, -1 = bad:
 * it printed why). Returns false on a usage error (message printed). */
typedef int (*cli_own_fn)(void *ctx, int argc, char **argv, int i);
bool cli_parse(const char *sub, int argc, char **argv, cli_opts_t *o, cli_own_fn own, void *ctx);
/* The value after option argv[i], or NULL with a message (missing). */
const char *cli_value(const char *sub, int argc, char **argv, int i);
/* Unsigned number in [lo, hi] (decimal or 0x-hex, tools/common/numopt.h), or false with a message. */
bool cli_u64(const char *sub, const char *opt, const char *v, uint64_t lo, uint64_t hi, uint64_t *out);

/* The exit code for a libautd3 error (PERMISSION, NO_INTERFACE, ...). */
int cli_exit_for(autd3_err_t e);
/* Print "autd3 SUB: <last error>" (+ the fix where there is one) and return cli_exit_for(e). */
int cli_fail(const char *sub, autd3_err_t e);
/* Open a client over `lo` for `devices` devices at their default poses with the
 * default client config (watch, synctune); autd3_last_error() says why not. */
struct autd3_link_option;
struct autd3_client;
autd3_err_t cli_client_open(const struct autd3_link_option *lo, uint64_t devices, struct autd3_client **out);
/* Open the bus on o->interface (required: usage error without it). */
int cli_bus_open(const char *sub, const cli_opts_t *o, echocat_t **bus);
/* Close it, telling how many frames went to the capture file. */
void cli_bus_close(const cli_opts_t *o, echocat_t *bus);

/* JSON writer: comma placement for one nesting level at a time. */
typedef struct json {
  FILE *o;
  int depth;
  bool first[16];
} json_t;
void json_begin(json_t *j, FILE *o);
void json_obj(json_t *j, const char *key); /* key NULL inside arrays / at the top */
void json_arr(json_t *j, const char *key);
void json_end_obj(json_t *j);
void json_end_arr(json_t *j);
void json_str(json_t *j, const char *key, const char *v);
void json_u64(json_t *j, const char *key, uint64_t v);
void json_i64(json_t *j, const char *key, int64_t v);
void json_bool(json_t *j, const char *key, bool v);
void json_null(json_t *j, const char *key);
void json_raw(json_t *j, const char *key, const char *json); /* a value already in JSON (an object from link_view.h) */
void json_finish(json_t *j); /* newline */

/* AL status code text (ETG.1000.6 table "AL Status Codes"). */
const char *al_code_text(uint16_t code);
const char *al_state_name(uint8_t st);

#endif
