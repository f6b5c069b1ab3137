/*
 * autd3 reg read|write: raw ESC register access (the IgH `reg_read` /
 * `reg_write`), addressed by ring position (APRD/APWR), by station address
 * (FPRD/FPWR) or to every device (BRD/BWR). A write changes a device's
 * state behind any master's back, so it needs --yes-write.
 */
#include <inttypes.h>
#include <string.h>

#include "cli.h"
#include "ecat/regs.h"
#include "link/echocat/ecat.h"

typedef struct reg_opts {
  int op; /* 0 none, 'r', 'w' */
  uint64_t addr, size, value, position, station;
  bool have_addr, have_value, have_pos, have_station, broadcast, yes;
} reg_opts_t;

void help_reg(FILE *o) {
  fprintf(o, "usage: " TOOL " reg read  --interface IF (--position N | --station ADDR | --broadcast) REG [--size BYTES] [--json]\n"
             "       " TOOL " reg write --interface IF (--position N | --station ADDR | --broadcast) REG VALUE [--size BYTES] --yes-write\n"
             "  Raw ESC registers (Beckhoff ESC datasheet section II). REG and VALUE: decimal or 0x-hex.\n"
             "  read:  BYTES 1..1024 (default 2), printed as hex bytes and, up to 8 bytes, as a little-endian number\n"
             "  write: VALUE written little-endian in BYTES 1..8 (default 2); refused without --yes-write\n"
             "  --position N  ring position (APRD/APWR), --station ADDR configured address (FPRD/FPWR),\n"
             "  --broadcast   every device (BRD/BWR; a read ORs their values): the working counter says how many answered\n"
             "  exit 6 when no device answered (working counter 0)\n");
}

static int own(void *ctx, int argc, char **argv, int i) {
  reg_opts_t *r = ctx;
  const char *a = argv[i];
  if (!strcmp(a, "--yes-write")) {
    r->yes = true;
    return 1;
  }
  if (!strcmp(a, "--broadcast")) {
    r->broadcast = true;
    return 1;
  }
  if (!strcmp(a, "--position") || !strcmp(a, "-p") || !strcmp(a, "--station") || !strcmp(a, "--size")) {
    const char *v = cli_value("reg", argc, argv, i);
    if (!v)
      return -1;
    if (!strcmp(a, "--station")) {
      r->have_station = cli_u64("reg", a, v, 0, 0xFFFF, &r->station);
      return r->have_station ? 2 : -1;
    }
    if (!strcmp(a, "--size"))
      return cli_u64("reg", a, v, 1, 1024, &r->size) ? 2 : -1;
    r->have_pos = cli_u64("reg", a, v, 0, 0xFFFF, &r->position);
    return r->have_pos ? 2 : -1;
  }
  if (a[0] == '-' && a[1] != 0 && !(a[1] >= '0' && a[1] <= '9'))
    return 0;
  if (!r->op) {
    if (!strcmp(a, "read"))
      r->op = 'r';
    else if (!strcmp(a, "write"))
      r->op = 'w';
    else
      return 0;
    return 1;
  }
  if (!r->have_addr) {
    r->have_addr = cli_u64("reg", "REG", a, 0, 0xFFFF, &r->addr);
    return r->have_addr ? 1 : -1;
  }
  if (r->op == 'w' && !r->have_value) {
    r->have_value = cli_u64("reg", "VALUE", a, 0, UINT64_MAX, &r->value);
    return r->have_value ? 1 : -1;
  }
  return 0;
}

int cmd_reg(int argc, char **argv) {
  cli_opts_t o;
  reg_opts_t r;
  memset(&r, 0, sizeof r);
  if (!cli_parse("reg", argc, argv, &o, own, &r))
    return EXIT_USAGE;
  if (o.help) {
    help_reg(stdout);
    return EXIT_OK;
  }
  if (!r.op || !r.have_addr || (r.op == 'w' && !r.have_value)) {
    fprintf(stderr, TOOL " reg: need `read REG` or `write REG VALUE` (see `" TOOL " reg --help`)\n");
    return EXIT_USAGE;
  }
  if ((int)r.have_pos + (int)r.have_station + (int)r.broadcast != 1) {
    fprintf(stderr, TOOL " reg: give exactly one of --position N, --station ADDR, --broadcast\n");
    return EXIT_USAGE;
  }
  if (!r.size)
    r.size = 2;
  if (r.op == 'w') {
    if (r.size > 8) {
      fprintf(stderr, TOOL " reg: write --size is 1..8 bytes\n");
      return EXIT_USAGE;
    }
    if (r.size < 8 && r.value >> (8 * r.size)) {
      fprintf(stderr, TOOL " reg: VALUE 0x%" PRIx64 " does not fit %" PRIu64 " byte(s)\n", r.value, r.size);
      return EXIT_USAGE;
    }
    if (!r.yes) {
      fprintf(stderr, TOOL " reg: a register write changes the device behind any master's back; add --yes-write\n");
      return EXIT_USAGE;
    }
  }
  if (r.addr + r.size > 0x10000) {
    fprintf(stderr, TOOL " reg: 0x%04" PRIx64 " + %" PRIu64 " bytes runs past the 64 KiB address space\n", r.addr, r.size);
    return EXIT_USAGE;
  }
  echocat_t *bus;
  int rc = cli_bus_open("reg", &o, &bus);
  if (rc != EXIT_OK)
    return rc;
  uint8_t cmd;
  uint16_t adp;
  if (r.broadcast)
    cmd = r.op == 'r' ? ECAT_BRD : ECAT_BWR, adp = 0;
  else if (r.have_station)
    cmd = r.op == 'r' ? ECAT_FPRD : ECAT_FPWR, adp = (uint16_t)r.station;
  else
    cmd = r.op == 'r' ? ECAT_APRD : ECAT_APWR, adp = (uint16_t)(0u - (unsigned)r.position);
  uint8_t buf[1024] = {0};
  if (r.op == 'w')
    for (uint64_t i = 0; i < r.size; i++)
      buf[i] = (uint8_t)(r.value >> (8 * i));
  uint16_t wkc = 0;
  autd3_err_t e = autd3__echocat_bus_dg(bus, cmd, adp, (uint16_t)r.addr, buf, (uint16_t)r.size, r.op == 'r' ? buf : NULL, &wkc);
  if (e != AUTD3_OK) {
    rc = cli_fail("reg", e);
    cli_bus_close(&o, bus);
    return rc;
  }
  uint64_t num = 0;
  for (uint64_t i = 0; i < r.size && i < 8; i++)
    num |= (uint64_t)buf[i] << (8 * i);
  if (o.json) {
    json_t j;
    json_begin(&j, stdout);
    json_obj(&j, NULL);
    json_str(&j, "op", r.op == 'r' ? "read" : "write");
    json_u64(&j, "register", r.addr);
    json_u64(&j, "size", r.size);
    json_u64(&j, "wkc", wkc);
    if (r.op == 'r') {
      char hex[2049];
      for (uint64_t i = 0; i < r.size; i++)
        snprintf(hex + 2 * i, 3, "%02x", buf[i]);
      json_str(&j, "bytes", hex);
      if (r.size <= 8)
        json_u64(&j, "value", num);
    } else {
      json_u64(&j, "value", r.value);
    }
    json_end_obj(&j);
    json_finish(&j);
  } else if (r.op == 'r') {
    printf("0x%04" PRIx64 ":", r.addr);
    for (uint64_t i = 0; i < r.size; i++)
      printf("%s%02x", (i && i % 16 == 0) ? "\n       " : " ", buf[i]);
    if (r.size <= 8)
      printf("  = 0x%0*" PRIx64 " (%" PRIu64 ")", (int)(2 * r.size), num, num);
    printf("  wkc %u\n", wkc);
  } else {
    printf("0x%04" PRIx64 " <- 0x%0*" PRIx64 " (%" PRIu64 " byte%s)  wkc %u\n", r.addr, (int)(2 * r.size), r.value, r.size,
           r.size == 1 ? "" : "s", wkc);
  }
  cli_bus_close(&o, bus);
  if (wkc == 0) {
    fprintf(stderr, TOOL " reg: no device answered (working counter 0)\n");
    return EXIT_NO_DEVICE;
  }
  return EXIT_OK;
}
