/* The `autd3` command's shared pieces (see cli.h). */
#include "cli.h"

#include <inttypes.h>
#include <string.h>

#include "autd3/autd3.h"
#include "autd3/link_driver.h"
#include "numopt.h"

const char *cli_value(const char *sub, int argc, char **argv, int i) {
  if (i + 1 >= argc) {
    fprintf(stderr, TOOL " %s: %s needs a value (see `" TOOL " %s --help`)\n", sub, argv[i], sub);
    return NULL;
  }
  return argv[i + 1];
}

bool cli_u64(const char *sub, const char *opt, const char *v, uint64_t lo, uint64_t hi, uint64_t *out) {
  char err[160];
  if (autd3_numopt_u64(opt, v, lo, hi, out, err, sizeof err))
    return true;
  fprintf(stderr, TOOL " %s: %s\n", sub, err);
  return false;
}

bool cli_parse(const char *sub, int argc, char **argv, cli_opts_t *o, cli_own_fn own, void *ctx) {
  memset(o, 0, sizeof *o);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      o->help = true;
      continue;
    }
    if (!strcmp(a, "--json")) {
      o->json = true;
      continue;
    }
    if (!strcmp(a, "--interface") || !strcmp(a, "-i") || !strcmp(a, "--capture")) {
      const char *v = cli_value(sub, argc, argv, i);
      if (!v)
        return false;
      if (!strcmp(a, "--capture"))
        o->capture = v;
      else
        o->interface = v;
      i++;
      continue;
    }
    int used = own ? own(ctx, argc, argv, i) : 0;
    if (used < 0)
      return false;
    if (used == 0) {
      fprintf(stderr, TOOL " %s: unknown option or argument '%s' (see `" TOOL " %s --help`)\n", sub, a, sub);
      return false;
    }
    i += used - 1;
  }
  return true;
}

int cli_exit_for(autd3_err_t e) {
  switch (e) {
  case AUTD3_OK: return EXIT_OK;
  case AUTD3_E_PERMISSION: return EXIT_PERMISSION;
  case AUTD3_E_NO_INTERFACE: return EXIT_NO_IF;
  case AUTD3_E_NO_DEVICE: return EXIT_NO_DEVICE;
  case AUTD3_E_SECOND_MASTER: return EXIT_BUSY;
  case AUTD3_E_INVALID_ARGUMENT: return EXIT_USAGE;
  default: return EXIT_FAIL;
  }
}

int cli_fail(const char *sub, autd3_err_t e) {
  fprintf(stderr, TOOL " %s: %s (%s)\n", sub, autd3_last_error(), autd3_err_name(e));
  if (e == AUTD3_E_PERMISSION)
    fprintf(stderr, TOOL " %s: fix: run as root, or `sudo setcap cap_net_raw,cap_net_admin+ep \"$(command -v " TOOL ")\"`; "
                    "`" TOOL " doctor` checks it\n", sub);
  else if (e == AUTD3_E_NO_INTERFACE)
    fprintf(stderr, TOOL " %s: `" TOOL " adapters` lists the names this host has\n", sub);
  return cli_exit_for(e);
}

int cli_bus_open(const char *sub, const cli_opts_t *o, echocat_t **bus) {
  *bus = NULL;
  if (!o->interface) {
    fprintf(stderr, TOOL " %s: --interface IF is required (`" TOOL " adapters` lists them)\n", sub);
    return EXIT_USAGE;
  }
  autd3_err_t e = autd3__echocat_bus_open(o->interface, AUTD3_NIC_AUTO, o->capture, bus);
  return e == AUTD3_OK ? EXIT_OK : cli_fail(sub, e);
}

void cli_bus_close(const cli_opts_t *o, echocat_t *bus) {
  if (bus && o->capture) {
    autd3__echocat_bus_close(bus); /* the tap writes what is queued first */
    fprintf(stderr, TOOL ": capture written to %s\n", o->capture);
    return;
  }
  autd3__echocat_bus_close(bus);
}

/* ---------------------------------------------------------------- JSON */

static void write_string(FILE *o, const char *v) {
  fputc('"', o);
  for (const unsigned char *p = (const unsigned char *)(v ? v : ""); *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(o, "\\%c", *p);
    else if (*p < 0x20 || *p >= 0x7F)
      fprintf(o, "\\u%04x", *p); /* SII strings are ASCII; anything else shows as its byte */
    else
      fputc(*p, o);
  }
  fputc('"', o);
}

void json_begin(json_t *j, FILE *o) {
  memset(j, 0, sizeof *j);
  j->o = o;
  j->first[0] = true;
}

/* The comma before a member (not before the first), then "key": when there is one. */
static void key(json_t *j, const char *k) {
  if (!j->first[j->depth])
    fputc(',', j->o);
  j->first[j->depth] = false;
  if (k) {
    write_string(j->o, k);
    fputc(':', j->o);
  }
}

static void open_(json_t *j, const char *k, char c) {
  key(j, k);
  fputc(c, j->o);
  if (j->depth < 15)
    j->depth++;
  j->first[j->depth] = true;
}

void json_obj(json_t *j, const char *k) { open_(j, k, '{'); }
void json_arr(json_t *j, const char *k) { open_(j, k, '['); }
void json_end_obj(json_t *j) {
  fputc('}', j->o);
  if (j->depth > 0)
    j->depth--;
}
void json_end_arr(json_t *j) {
  fputc(']', j->o);
  if (j->depth > 0)
    j->depth--;
}
void json_str(json_t *j, const char *k, const char *v) {
  key(j, k);
  write_string(j->o, v);
}
void json_u64(json_t *j, const char *k, uint64_t v) {
  key(j, k);
  fprintf(j->o, "%" PRIu64, v);
}
void json_i64(json_t *j, const char *k, int64_t v) {
  key(j, k);
  fprintf(j->o, "%" PRId64, v);
}
void json_bool(json_t *j, const char *k, bool v) {
  key(j, k);
  fputs(v ? "true" : "false", j->o);
}
void json_null(json_t *j, const char *k) {
  key(j, k);
  fputs("null", j->o);
}
void json_raw(json_t *j, const char *k, const char *json) {
  key(j, k);
  fputs(json, j->o);
}
void json_finish(json_t *j) { fputc('\n', j->o); }

/* ---------------------------------------------------------------- AL */

const char *al_state_name(uint8_t st) {
  switch (st & 0x0F) {
  case 1: return "INIT";
  case 2: return "PRE-OP";
  case 3: return "BOOT";
  case 4: return "SAFE-OP";
  case 8: return "OP";
  default: return "UNKNOWN";
  }
}

/* ETG.1000.6, AL Status Codes (the ones an AUTD3 link and its tools meet). */
const char *al_code_text(uint16_t code) {
  switch (code) {
  case 0x0000: return "no error";
  case 0x0001: return "unspecified error";
  case 0x0002: return "no memory";
  case 0x0011: return "invalid requested state change";
  case 0x0012: return "unknown requested state";
  case 0x0013: return "bootstrap not supported";
  case 0x0014: return "no valid firmware";
  case 0x0015: return "invalid mailbox configuration (bootstrap)";
  case 0x0016: return "invalid mailbox configuration";
  case 0x0017: return "invalid sync manager configuration";
  case 0x0018: return "no valid inputs available";
  case 0x0019: return "no valid outputs";
  case 0x001A: return "synchronization error";
  case 0x001B: return "sync manager watchdog";
  case 0x001C: return "invalid sync manager types";
  case 0x001D: return "invalid output configuration";
  case 0x001E: return "invalid input configuration";
  case 0x001F: return "invalid watchdog configuration";
  case 0x0020: return "slave needs cold start";
  case 0x0021: return "slave needs INIT";
  case 0x0022: return "slave needs PRE-OP";
  case 0x0023: return "slave needs SAFE-OP";
  case 0x0024: return "invalid input mapping";
  case 0x0025: return "invalid output mapping";
  case 0x0026: return "inconsistent settings";
  case 0x0027: return "free run not supported";
  case 0x0028: return "sync mode not supported";
  case 0x0029: return "free run needs 3-buffer mode";
  case 0x002A: return "background watchdog";
  case 0x002B: return "no valid inputs and outputs";
  case 0x002C: return "fatal sync error";
  case 0x002D: return "no sync error";
  case 0x0030: return "invalid DC SYNC configuration";
  case 0x0031: return "invalid DC latch configuration";
  case 0x0032: return "PLL error";
  case 0x0033: return "DC sync IO error";
  case 0x0034: return "DC sync timeout error";
  case 0x0035: return "DC invalid sync cycle time";
  case 0x0036: return "DC SYNC0 cycle time";
  case 0x0037: return "DC SYNC1 cycle time";
  case 0x0041: return "MBX_AOE";
  case 0x0042: return "MBX_EOE";
  case 0x0043: return "MBX_COE";
  case 0x0044: return "MBX_FOE";
  case 0x0045: return "MBX_SOE";
  case 0x004F: return "MBX_VOE";
  case 0x0050: return "EEPROM no access";
  case 0x0051: return "EEPROM error";
  case 0x0060: return "slave restarted locally";
  default: return code >= 0x8000 ? "vendor specific" : "unknown code";
  }
}

autd3_err_t cli_client_open(const autd3_link_option_t *lo, uint64_t devices, autd3_client_t **out) {
  autd3_geometry_t *g = NULL;
  autd3_err_t e = autd3_geometry_create((size_t)devices, NULL, &g);
  if (e != AUTD3_OK)
    return e;
  autd3_client_config_t cfg = autd3_client_config_default();
  e = autd3_client_open(g, lo, &cfg, out);
  autd3_geometry_free(g);
  return e;
}
