/*
 * autd3 adapters: the adapters the EtherCAT links can open (src/nic's list,
 * those that are down included: the name to give --interface / the link
 * option, as the OS wants it — "\Device\NPF_{GUID}" on Windows, "eth0" on
 * Linux — and a description),
 * and whether EtherCAT is on each now: the one-master guard
 * (src/nic/master_guard.h) says "in use" when another master holds the
 * adapter's lock or EtherCAT frames pass during its short listen (20 ms).
 */
#include <string.h>

#include "cli.h"
#include "nic/master_guard.h"
#include "nic/nic.h"

void help_adapters(FILE *o) {
  fprintf(o, "usage: " TOOL " adapters [--json] [--no-probe]\n"
             "  Every adapter (loopback excluded): the name --interface takes, whether it is up, a\n"
             "  description (Linux: driver, MAC, carrier; Windows: Npcap's description and the friendly name),\n"
             "  and its EtherCAT status: \"in use\" (another master holds it, or EtherCAT frames passed\n"
             "  during a 20 ms listen), \"free\", \"unknown\" (raw sockets refused: see `" TOOL " doctor`),\n"
             "  or \"down\" (not probed: bring it up first).\n"
             "  --no-probe   list only, do not listen (no raw socket needed)\n");
}

static int own(void *ctx, int argc, char **argv, int i) {
  (void)argc;
  if (!strcmp(argv[i], "--no-probe")) {
    *(bool *)ctx = true;
    return 1;
  }
  return 0;
}

int cmd_adapters(int argc, char **argv) {
  cli_opts_t o;
  bool no_probe = false;
  if (!cli_parse("adapters", argc, argv, &o, own, &no_probe))
    return EXIT_USAGE;
  if (o.help) {
    help_adapters(stdout);
    return EXIT_OK;
  }
  if (o.interface || o.capture) {
    fprintf(stderr, TOOL " adapters: takes no --interface/--capture (it lists them all)\n");
    return EXIT_USAGE;
  }
  autd3_nic_names_t l;
  autd3_err_t e = autd3__nic_names_all(&l);
  if (e != AUTD3_OK) {
    autd3__nic_names_free(&l);
    return cli_fail("adapters", e);
  }
  json_t j;
  if (o.json) {
    json_begin(&j, stdout);
    json_obj(&j, NULL);
    json_arr(&j, "adapters");
  } else if (l.count == 0) {
    printf("no adapter (loopback aside)\n");
  }
  bool denied = false;
  for (size_t i = 0; i < l.count; i++) {
    const char *status = l.down[i] ? "down" : "not probed";
    char detail[512] = "";
    if (!no_probe && !l.down[i]) {
      autd3_master_guard_t *g = NULL;
      autd3_err_t ge = autd3__master_guard_take(l.name[i], AUTD3_NIC_AUTO, TOOL, &g);
      autd3__master_guard_release(g);
      if (ge == AUTD3_OK) {
        status = "free";
      } else if (ge == AUTD3_E_SECOND_MASTER) {
        status = "in use";
        snprintf(detail, sizeof detail, "%s", autd3_last_error());
      } else {
        status = "unknown";
        denied = denied || ge == AUTD3_E_PERMISSION;
        snprintf(detail, sizeof detail, "%s", autd3_err_name(ge));
      }
    }
    if (o.json) {
      json_obj(&j, NULL);
      json_str(&j, "name", l.name[i]);
      json_bool(&j, "up", !l.down[i]);
      json_str(&j, "description", l.desc[i]);
      json_str(&j, "ethercat", status);
      if (detail[0])
        json_str(&j, "detail", detail);
      json_end_obj(&j);
    } else {
      printf("%-20s %-4s %-10s %s\n", l.name[i], l.down[i] ? "down" : "up", status, l.desc[i][0] ? l.desc[i] : "");
      if (detail[0])
        printf("%-20s                 %s\n", "", detail);
    }
  }
  if (o.json) {
    json_end_arr(&j);
    json_end_obj(&j);
    json_finish(&j);
  }
  if (denied)
    fprintf(stderr, TOOL " adapters: raw sockets refused: EtherCAT status unknown (`" TOOL " doctor` shows the fix)\n");
  autd3__nic_names_free(&l);
  return EXIT_OK;
}
