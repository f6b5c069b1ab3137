/*
 * autd3-twincat-emu: the emulated TwinCAT 3 runtime's command line
 * (src/emulation/twincat/twincat_emu.h is the runtime; docs/twincat.md).
 *
 *   autd3-twincat-emu --devices N [--listen 127.0.0.1:48898] [--task-us 1000]
 *                     [--net-id 127.0.0.1.1.1] [--timing MODEL] [--log-file FILE] [--verbose]
 *                     [--max-conns 16] [--handshake-timeout-ms 10000] [--idle-timeout-ms 10000]
 *                     [--log-lines-per-s 10]
 *
 * Only the options are parsed here; the runtime and its --log-file writer
 * (autd3_tcemu_log_file_open: the format is there) are the library's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emulation/twincat/twincat_emu.h"
#include "net/net.h"
#include "numopt.h"
#include "tool_os.h"

static autd3_tcemu_t *g_emu;

static void on_signal(int sig) {
  (void)sig;
  if (g_emu) autd3_tcemu_stop(g_emu); /* an atomic store: async-signal-safe */
}

static int usage(const char *msg) {
  if (msg) fprintf(stderr, "autd3-twincat-emu: %s\n", msg);
  fprintf(stderr,
          "usage: autd3-twincat-emu --devices N [--listen HOST:PORT] [--task-us US] [--net-id A.B.C.D.E.F]\n"
          "                         [--timing default|pessimistic|ideal|take=..,fifo=..,ll=..,publish=..]\n"
          "                         [--firmware new|v12|mixed] [--legacy-image] [--serve-immediately] [--log-file FILE]\n"
          "                         [--verbose] [--max-conns N] [--handshake-timeout-ms MS] [--idle-timeout-ms MS]\n"
          "                         [--log-lines-per-s N]\n"
          "  --firmware F              what the devices run: new (default), v12 (firmware v12.1.0) or mixed\n"
          "  --legacy-image            inputs at 0x80000000 without the CfgSlaveCount prefix, as the previous\n"
          "                            generation's TwinCAT project (pyautd3 36's RemoteTwinCAT reads it so)\n"
          "  --log-file FILE           the devices' execution logs (docs/reliability.md)\n"
          "  --max-conns N             ADS connections at once (default 16, 1..1024)\n"
          "  --handshake-timeout-ms MS a connection must send a complete frame within MS (default 10000)\n"
          "  --idle-timeout-ms MS      when all places are taken, a connection quiet for MS gives its place\n"
          "                            to a new one; a client that takes none of its replies for MS is dropped\n"
          "                            (default 10000)\n"
          "  --log-lines-per-s N       --verbose log rate limit, bursts of 10 s worth (default 10; 0 = none)\n");
  return 2;
}

/* Numeric options: the tools' shared parser (tools/common/numopt.h). */
static uint64_t u(const char *opt, const char *s, uint64_t lo, uint64_t hi) {
  return autd3_numopt_u64_or_exit("autd3-twincat-emu", opt, s, lo, hi);
}

int main(int argc, char **argv) {
  autd3_tcemu_config_t cfg = autd3_tcemu_config_default();
  static char host[AUTD3_NET_HOST_MAX];
  const char *log_path = NULL;
  bool have_devices = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--verbose") == 0) { cfg.verbose = true; continue; }
    if (strcmp(a, "--serve-immediately") == 0) { cfg.serve_immediately = true; continue; }
    if (strcmp(a, "--legacy-image") == 0) { cfg.legacy_image = true; continue; }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return usage(NULL), 0;
    if (v == NULL) return usage("missing value");
    i++;
    if (strcmp(a, "--devices") == 0) {
      cfg.devices = (uint16_t)u("--devices", v, 1, 128);
      have_devices = true;
    } else if (strcmp(a, "--listen") == 0) {
      static char port[8];
      if (autd3__net_split(v, host, sizeof host, port, sizeof port, "--listen") != AUTD3_OK) return usage(autd3_last_error());
      cfg.listen_host = host;
      cfg.listen_port = (uint16_t)u("--listen", port, 0, 65535); /* net_split checked it already */
    } else if (strcmp(a, "--max-conns") == 0 || strcmp(a, "--handshake-timeout-ms") == 0 || strcmp(a, "--idle-timeout-ms") == 0 ||
               strcmp(a, "--log-lines-per-s") == 0) {
      /* the exact ranges are checked by autd3_tcemu_create, with the option's name */
      uint32_t n = (uint32_t)u(a, v, 0, UINT32_MAX);
      if (a[2] == 'm') cfg.max_conns = (uint32_t)n;
      else if (a[2] == 'h') cfg.handshake_timeout_ms = (uint32_t)n;
      else if (a[2] == 'i') cfg.idle_timeout_ms = (uint32_t)n;
      else cfg.log_lines_per_s = (uint32_t)n;
    } else if (strcmp(a, "--task-us") == 0) {
      cfg.task_us = (uint32_t)u("--task-us", v, 50, 1000000); /* autd3_tcemu_create's range */
    } else if (strcmp(a, "--net-id") == 0) {
      if (autd3__ams_netid_parse(v, &cfg.netid) != AUTD3_OK) return usage("--net-id takes a.b.c.d.e.f");
    } else if (strcmp(a, "--log-file") == 0) {
      log_path = v;
    } else if (strcmp(a, "--firmware") == 0) {
      autd3_emu_firmware_t fw;
      if (autd3_emu_firmware_parse(v, &fw) != AUTD3_OK) return usage(autd3_last_error());
      cfg.firmware = fw;
    } else if (strcmp(a, "--timing") == 0) {
      if (autd3_timing_model_parse(v, &cfg.timing) != AUTD3_OK) return usage(autd3_last_error());
    } else {
      return usage("unknown option");
    }
  }
  if (!have_devices) return usage("--devices is required");
  autd3_tcemu_t *emu;
  if (autd3_tcemu_create(&cfg, &emu) != AUTD3_OK) {
    fprintf(stderr, "autd3-twincat-emu: %s\n", autd3_last_error());
    return 1;
  }
  autd3_tcemu_log_file_t *lf = NULL;
  if (log_path && autd3_tcemu_log_file_open(emu, log_path, &lf) != AUTD3_OK) {
    fprintf(stderr, "autd3-twincat-emu: %s\n", autd3_last_error());
    autd3_tcemu_free(emu);
    return 1;
  }
  g_emu = emu;
  tool_on_stop_signals(on_signal);
  char id[24];
  fprintf(stderr, "autd3-twincat-emu: %u devices, AMS NetId %s, task port 301, task cycle %u us, listening on %s%s%s:%u\n", cfg.devices,
          autd3__ams_netid_format(&cfg.netid, id, sizeof id), cfg.task_us, strchr(cfg.listen_host, ':') ? "[" : "", cfg.listen_host,
          strchr(cfg.listen_host, ':') ? "]" : "", autd3_tcemu_port(emu));
  printf("port %u\n", autd3_tcemu_port(emu));
  fflush(stdout);
  autd3_tcemu_run(emu);
  int rc = 0;
  if (autd3_tcemu_log_file_close(lf) != AUTD3_OK) {
    fprintf(stderr, "autd3-twincat-emu: %s\n", autd3_last_error());
    rc = 1;
  }
  autd3_tcemu_free(emu);
  return rc;
}
