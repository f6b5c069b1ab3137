/*
 * autd3 scan: the chain as it is, without taking it anywhere (the IgH
 * `ethercat slaves` + `crc` view): per device its position, station address
 * and alias, identity from the SII (echocat's reader, src/link/echocat/bus.h),
 * AL state and status code with its text, ESC type and DC support, DL
 * status per port, DC registers (delay, offset, system-time difference,
 * SYNC0) with the delays measured from one latching frame, and the ESC error
 * counters (0x0300-0x0313); --reset-counters clears them afterwards.
 * Registers: Beckhoff ESC datasheet section II; AL codes: ETG.1000.6.
 * Every access is by ring position: nothing on the chain is changed except
 * the DC receive-time latch (a write to 0x0900, which only stores port
 * arrival times) and, when asked, the error counters.
 */
#include <inttypes.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "cli.h"
#include "ecat/dc.h"
#include "ecat/regs.h"
#include "link/echocat/ecat.h"

#define MAXDEV 128

/* The register groups read per device (read_dev), one bit each in scan_dev_t.answered. */
enum { G_ESC, G_STATION, G_DL, G_AL, G_ERR, G_SM, G_FMMU, G_DC, G_SII, G_COUNT };
static const char *const group_name[G_COUNT] = {"ESC type/features", "station address", "DL status", "AL status",
                                                "error counters", "SyncManagers", "FMMUs", "DC", "SII identity"};

typedef struct dev {
  uint16_t read, answered; /* groups read, groups whose read came back with working counter 1 */
  uint8_t esc[10];   /* 0x0000..0x0009 */
  uint16_t station, alias;
  uint16_t dl, al, code;
  uint8_t err[0x14]; /* 0x0300..0x0313 */
  uint8_t fmmu[16 * 16]; /* 0x0600..: 16 bytes per FMMU, as many as the ESC has (at most 16) */
  uint8_t sm[16 * 8];    /* 0x0800..: 8 bytes per SyncManager (at most 16) */
  uint8_t dcr[0x30]; /* 0x0900..0x092F */
  uint8_t act;       /* 0x0981 */
  uint32_t cycle0;   /* 0x09A0 */
  echocat_bus_identity_t id;
  autd3_err_t id_err;
} scan_dev_t;

typedef struct scan_opts {
  bool reset;
} scan_opts_t;

void help_scan(FILE *o) {
  fprintf(o, "usage: " TOOL " scan --interface IF [--json] [--reset-counters] [--capture FILE.pcap]\n"
             "  The chain as it is, without changing its state: per device position, station address,\n"
             "  identity (SII: vendor, product, revision, serial, name), AL state and status code,\n"
             "  ESC type and DC support, DL status per port (link, loop, communication), DC registers\n"
             "  (delay, offset, system-time difference, SYNC0) and delays measured from one latch, and\n"
             "  the ESC error counters 0x0300-0x0313 (per port: invalid frames/CRC, PHY RX errors,\n"
             "  forwarded errors, lost links; processing unit and PDI errors).\n"
             "  --reset-counters   clear the error counters after reading them\n"
             "  --json             one JSON object (docs/tools.md)\n"
             "  --capture FILE     every frame of the scan, both directions, into a pcap file\n");
}

static int own(void *ctx, int argc, char **argv, int i) {
  (void)argc;
  scan_opts_t *s = ctx;
  if (!strcmp(argv[i], "--reset-counters")) {
    s->reset = true;
    return 1;
  }
  return 0;
}

static const char *port_type(uint8_t desc, int p) {
  switch ((desc >> (2 * p)) & 3) {
  case 1: return "not configured";
  case 2: return "EBUS";
  case 3: return "MII";
  default: return "none";
  }
}

static bool has_dc(const scan_dev_t *d) { return (ecat_get16(d->esc + 8) & 0x0004) != 0; }

/* Group g was read and answered. */
static bool got(const scan_dev_t *d, int g) { return ((d->read & d->answered) >> g) & 1; }
static uint8_t n_fmmu(const scan_dev_t *d) { return d->esc[4] > 16 ? 16 : d->esc[4]; }
static uint8_t n_sm(const scan_dev_t *d) { return d->esc[5] > 16 ? 16 : d->esc[5]; }

/* Every group by ring position; a group whose read nobody answered (the device stopped answering mid-scan)
 * keeps its bit clear in `answered`, and its values are shown as unknown, never as zeros. */
static autd3_err_t read_dev(echocat_t *bus, uint16_t k, scan_dev_t *d) {
  uint16_t adp = (uint16_t)(0u - k), w = 0;
  uint8_t b[8];
  autd3_err_t e;
#define RD(g, ado, buf, len)                                                                            \
  do {                                                                                                  \
    if ((e = autd3__echocat_bus_dg(bus, ECAT_APRD, adp, (ado), NULL, (len), (buf), &w)) != AUTD3_OK)    \
      return e;                                                                                         \
    d->read |= (uint16_t)(1u << (g));                                                                   \
    if (w != 1)                                                                                         \
      d->answered &= (uint16_t) ~(1u << (g));                                                           \
  } while (0)
  d->answered = (1u << G_COUNT) - 1;
  RD(G_ESC, REG_TYPE, d->esc, 10);
  RD(G_STATION, REG_STADR, b, 4);
  d->station = ecat_get16(b), d->alias = ecat_get16(b + 2);
  RD(G_DL, REG_DLSTAT, b, 2);
  d->dl = ecat_get16(b);
  RD(G_AL, REG_ALSTAT, b, 6);
  d->al = ecat_get16(b), d->code = ecat_get16(b + 4);
  RD(G_ERR, 0x0300, d->err, 0x14);
  if (got(d, G_ESC) && n_fmmu(d))
    RD(G_FMMU, REG_FMMU0, d->fmmu, (uint16_t)(16u * n_fmmu(d)));
  if (got(d, G_ESC) && n_sm(d))
    RD(G_SM, REG_SM0, d->sm, (uint16_t)(8u * n_sm(d)));
  if (got(d, G_ESC) && has_dc(d)) {
    RD(G_DC, REG_DCRT0, d->dcr, 0x30);
    RD(G_DC, REG_DCACT, &d->act, 1);
    RD(G_DC, REG_DCCYC0, b, 4);
    d->cycle0 = ecat_get32(b);
  }
#undef RD
  d->id_err = autd3__echocat_bus_identity(bus, k, &d->id);
  d->read |= 1u << G_SII;
  if (d->id_err != AUTD3_OK)
    d->answered &= (uint16_t) ~(1u << G_SII);
  return AUTD3_OK;
}

/* The groups a device did not answer, as text ("" when it answered every read). */
static void missing_text(const scan_dev_t *d, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  for (int g = 0; g < G_COUNT; g++)
    if (((d->read >> g) & 1) && !got(d, g)) {
      int k = snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", group_name[g]);
      if (k < 0 || (size_t)k >= cap - len)
        break;
      len += (size_t)k;
    }
}

static void print_sm_fmmu_text(const scan_dev_t *d) {
  if (got(d, G_SM)) {
    printf("     SM    ");
    int shown = 0;
    for (int i = 0; i < n_sm(d); i++) {
      const uint8_t *m = d->sm + 8 * i;
      if (!(m[6] & 1))
        continue;
      printf("%s %d: 0x%04x+%u ctl 0x%02x status 0x%02x", shown++ ? " |" : "", i, ecat_get16(m), ecat_get16(m + 2), m[4], m[5]);
    }
    printf("%s\n", shown ? "" : " none enabled");
  }
  if (got(d, G_FMMU)) {
    printf("     FMMU  ");
    int shown = 0;
    for (int i = 0; i < n_fmmu(d); i++) {
      const uint8_t *f = d->fmmu + 16 * i;
      if (!(f[12] & 1))
        continue;
      printf("%s %d: logical 0x%08" PRIx32 "+%u bits %u..%u -> 0x%04x.%u %s", shown++ ? " |" : "", i, ecat_get32(f),
             ecat_get16(f + 4), f[6], f[7], ecat_get16(f + 8), f[10], f[11] == 1 ? "read" : f[11] == 2 ? "write" : "other");
    }
    printf("%s\n", shown ? "" : " none active");
  }
}

static void print_text(const char *ifname, uint16_t n, const scan_dev_t *dv, const uint32_t *meas, bool reset) {
  printf(TOOL " scan %s: %u device%s\n", ifname, n, n == 1 ? "" : "s");
  for (uint16_t k = 0; k < n; k++) {
    const scan_dev_t *d = &dv[k];
    if (got(d, G_STATION))
      printf("#%-3u station 0x%04x alias %u  ", k, d->station, d->alias);
    else
      printf("#%-3u station ?  ", k);
    if (d->id_err == AUTD3_OK)
      printf("\"%s\" vendor 0x%08" PRIx32 " product 0x%08" PRIx32 " revision 0x%08" PRIx32 " serial 0x%08" PRIx32 "\n",
             d->id.name, d->id.vendor, d->id.product, d->id.revision, d->id.serial);
    else
      printf("SII unreadable (%s)\n", autd3_err_name(d->id_err));
    char miss[160];
    missing_text(d, miss, sizeof miss);
    if (miss[0])
      printf("     !      no answer to: %s (the device stopped answering during the scan; not shown)\n", miss);
    if (got(d, G_AL))
      printf("     AL     %s%s, status code 0x%04x (%s)\n", al_state_name((uint8_t)d->al), (d->al & 0x10) ? " + ERROR" : "",
             d->code, al_code_text(d->code));
    if (got(d, G_ESC)) {
      uint16_t feat = ecat_get16(d->esc + 8);
      printf("     ESC    type 0x%02x revision %u build %u, %u FMMUs, %u SMs, %u KiB RAM, DC %s\n", d->esc[0], d->esc[1],
             ecat_get16(d->esc + 2), d->esc[4], d->esc[5], d->esc[6],
             (feat & 0x0004) ? ((feat & 0x0008) ? "yes (64-bit)" : "yes (32-bit)") : "no");
    }
    if (got(d, G_ESC) && got(d, G_DL)) {
      printf("     ports  DL status 0x%04x:", d->dl);
      for (int p = 0; p < 4; p++) {
        if (((d->esc[7] >> (2 * p)) & 3) == 0)
          continue;
        bool link = (d->dl >> (4 + p)) & 1, closed = (d->dl >> (8 + 2 * p)) & 1, comm = (d->dl >> (9 + 2 * p)) & 1;
        printf("%s %d %s link %s, loop %s, %s", p ? " |" : "", p, port_type(d->esc[7], p), link ? "up" : "down",
               closed ? "closed" : "open", comm ? "communication" : "no communication");
      }
      printf("\n");
    }
    print_sm_fmmu_text(d);
    if (got(d, G_ESC) && has_dc(d) && got(d, G_DC)) {
      printf("     DC     delay 0x0928 %" PRIu32 " ns (measured %" PRIu32 " ns), offset 0x0920 %" PRId64
             " ns, system-time difference %" PRId64 " ns, SYNC0 %s",
             ecat_get32(d->dcr + 0x28), meas[k], (int64_t)ecat_get64(d->dcr + 0x20),
             autd3__ecat_dc_diff_decode(ecat_get32(d->dcr + 0x2C)), (d->act & 0x03) == 0x03 ? "on" : "off");
      if ((d->act & 0x03) == 0x03)
        printf(" (cycle %" PRIu32 " ns)", d->cycle0);
      printf("\n");
    }
    if (got(d, G_ESC) && got(d, G_ERR)) {
      printf("     errors");
      for (int p = 0; p < 4; p++) {
        if (((d->esc[7] >> (2 * p)) & 3) == 0)
          continue;
        printf("%s port %d: CRC %u PHY %u forwarded %u lost link %u", p ? " |" : "", p, d->err[2 * p], d->err[2 * p + 1],
               d->err[8 + p], d->err[0x10 + p]);
      }
      printf(" | processing unit %u, PDI %u\n", d->err[0x0C], d->err[0x0D]);
    }
  }
  if (reset)
    printf("error counters reset\n");
}

/* A register block of the ESC datasheet's layout, as JSON members: name, byte offset, width in bytes. */
typedef struct reg_field {
  const char *name;
  uint8_t off, width;
} reg_field_t;
static const reg_field_t sm_fields[] = {{"start", 0, 2},  {"length", 2, 2},   {"control", 4, 1},
                                        {"status", 5, 1}, {"activate", 6, 1}, {"pdi_control", 7, 1}};
static const reg_field_t fmmu_fields[] = {{"logical_start", 0, 4},      {"length", 4, 2},  {"logical_start_bit", 6, 1},
                                          {"logical_end_bit", 7, 1},    {"physical_start", 8, 2},
                                          {"physical_start_bit", 10, 1}, {"type", 11, 1}, {"activate", 12, 1}};

/* "key": [{"index", fields...} x n] from n blocks of `stride` bytes, or null when the group was not read. */
static void json_regs(json_t *j, const char *key, bool ok, const uint8_t *base, int n, int stride, const reg_field_t *f,
                      size_t nf) {
  if (!ok) {
    json_null(j, key);
    return;
  }
  json_arr(j, key);
  for (int i = 0; i < n; i++) {
    const uint8_t *b = base + stride * i;
    json_obj(j, NULL);
    json_u64(j, "index", (uint64_t)i);
    for (size_t k = 0; k < nf; k++)
      json_u64(j, f[k].name, f[k].width == 4 ? ecat_get32(b + f[k].off) : f[k].width == 2 ? ecat_get16(b + f[k].off) : b[f[k].off]);
    json_end_obj(j);
  }
  json_end_arr(j);
}

static void json_sm_fmmu(json_t *j, const scan_dev_t *d) {
  json_regs(j, "sm", got(d, G_SM), d->sm, n_sm(d), 8, sm_fields, sizeof sm_fields / sizeof sm_fields[0]);
  json_regs(j, "fmmu", got(d, G_FMMU), d->fmmu, n_fmmu(d), 16, fmmu_fields, sizeof fmmu_fields / sizeof fmmu_fields[0]);
}

static void json_ports(json_t *j, const scan_dev_t *d) {
  if (!got(d, G_ESC) || !got(d, G_DL) || !got(d, G_ERR)) {
    json_null(j, "ports");
    return;
  }
  json_arr(j, "ports");
  for (int p = 0; p < 4; p++) {
    json_obj(j, NULL);
    json_u64(j, "port", (uint64_t)p);
    json_str(j, "type", port_type(d->esc[7], p));
    json_bool(j, "link", (d->dl >> (4 + p)) & 1);
    json_bool(j, "loop_closed", (d->dl >> (8 + 2 * p)) & 1);
    json_bool(j, "communication", (d->dl >> (9 + 2 * p)) & 1);
    json_u64(j, "crc_errors", d->err[2 * p]);
    json_u64(j, "phy_errors", d->err[2 * p + 1]);
    json_u64(j, "forwarded_errors", d->err[8 + p]);
    json_u64(j, "lost_links", d->err[0x10 + p]);
    json_end_obj(j);
  }
  json_end_arr(j);
}

static void json_dc(json_t *j, const scan_dev_t *d, uint32_t meas) {
  if (!got(d, G_ESC) || !has_dc(d) || !got(d, G_DC)) {
    json_null(j, "dc");
    return;
  }
  json_obj(j, "dc");
  json_u64(j, "delay_ns", ecat_get32(d->dcr + 0x28));
  json_u64(j, "measured_delay_ns", meas);
  json_i64(j, "offset_ns", (int64_t)ecat_get64(d->dcr + 0x20));
  json_i64(j, "system_time_difference_ns", autd3__ecat_dc_diff_decode(ecat_get32(d->dcr + 0x2C)));
  json_u64(j, "receive_time_port0", ecat_get32(d->dcr));
  json_u64(j, "receive_time_port1", ecat_get32(d->dcr + 4));
  json_bool(j, "sync0", (d->act & 0x03) == 0x03);
  json_u64(j, "sync0_cycle_ns", d->cycle0);
  json_end_obj(j);
}

static void json_device(json_t *j, uint16_t k, const scan_dev_t *d, uint32_t meas) {
  json_obj(j, NULL);
  json_u64(j, "position", k);
  got(d, G_STATION) ? json_u64(j, "station", d->station) : json_null(j, "station");
  got(d, G_STATION) ? json_u64(j, "alias", d->alias) : json_null(j, "alias");
  if (d->id_err == AUTD3_OK) {
    json_str(j, "name", d->id.name);
    json_u64(j, "vendor", d->id.vendor);
    json_u64(j, "product", d->id.product);
    json_u64(j, "revision", d->id.revision);
    json_u64(j, "serial", d->id.serial);
  } else {
    json_null(j, "name");
    json_str(j, "sii_error", autd3_err_name(d->id_err));
  }
  json_bool(j, "answered", (d->answered & d->read) == d->read);
  json_arr(j, "unanswered");
  for (int g = 0; g < G_COUNT; g++)
    if (((d->read >> g) & 1) && !got(d, g))
      json_str(j, NULL, group_name[g]);
  json_end_arr(j);
  if (got(d, G_AL)) {
    json_obj(j, "al");
    json_str(j, "state", al_state_name((uint8_t)d->al));
    json_bool(j, "error", (d->al & 0x10) != 0);
    json_u64(j, "code", d->code);
    json_str(j, "text", al_code_text(d->code));
    json_end_obj(j);
  } else {
    json_null(j, "al");
  }
  if (got(d, G_ESC)) {
    uint16_t feat = ecat_get16(d->esc + 8);
    json_obj(j, "esc");
    json_u64(j, "type", d->esc[0]);
    json_u64(j, "revision", d->esc[1]);
    json_u64(j, "build", ecat_get16(d->esc + 2));
    json_u64(j, "fmmus", d->esc[4]);
    json_u64(j, "sms", d->esc[5]);
    json_u64(j, "ram_kib", d->esc[6]);
    json_u64(j, "features", feat);
    json_bool(j, "dc", (feat & 0x0004) != 0);
    json_bool(j, "dc64", (feat & 0x0008) != 0);
    json_end_obj(j);
  } else {
    json_null(j, "esc");
  }
  got(d, G_DL) ? json_u64(j, "dl_status", d->dl) : json_null(j, "dl_status");
  json_ports(j, d);
  got(d, G_ERR) ? json_u64(j, "processing_unit_errors", d->err[0x0C]) : json_null(j, "processing_unit_errors");
  got(d, G_ERR) ? json_u64(j, "pdi_errors", d->err[0x0D]) : json_null(j, "pdi_errors");
  json_sm_fmmu(j, d);
  json_dc(j, d, meas);
  json_end_obj(j);
}

static void print_json(const char *ifname, uint16_t n, const scan_dev_t *dv, const uint32_t *meas, bool reset) {
  json_t j;
  json_begin(&j, stdout);
  json_obj(&j, NULL);
  json_str(&j, "interface", ifname);
  json_u64(&j, "count", n);
  json_arr(&j, "devices");
  for (uint16_t k = 0; k < n; k++)
    json_device(&j, k, &dv[k], meas[k]);
  json_end_arr(&j);
  json_bool(&j, "counters_reset", reset);
  json_end_obj(&j);
  json_finish(&j);
}

int cmd_scan(int argc, char **argv) {
  cli_opts_t o;
  scan_opts_t so = {false};
  if (!cli_parse("scan", argc, argv, &o, own, &so))
    return EXIT_USAGE;
  if (o.help) {
    help_scan(stdout);
    return EXIT_OK;
  }
  echocat_t *bus;
  int rc = cli_bus_open("scan", &o, &bus);
  if (rc != EXIT_OK)
    return rc;
  static scan_dev_t dv[MAXDEV];
  uint16_t n = autd3__echocat_bus_count(bus);
  autd3_err_t e = AUTD3_OK;
  /* latch every port's receive time with one frame first (Beckhoff ESC datasheet section I, "Distributed Clocks": a write to 0x0900 latches the receive times), then read */
  uint8_t z[4] = {0};
  uint16_t w;
  e = autd3__echocat_bus_dg(bus, ECAT_BWR, 0, REG_DCRT0, z, 4, NULL, &w);
  for (uint16_t k = 0; k < n && e == AUTD3_OK; k++)
    e = read_dev(bus, k, &dv[k]);
  if (e == AUTD3_OK && so.reset) {
    uint8_t clr[0x14] = {0};
    for (uint16_t k = 0; k < n && e == AUTD3_OK; k++) {
      e = autd3__echocat_bus_dg(bus, ECAT_APWR, (uint16_t)(0u - k), 0x0300, clr, sizeof clr, NULL, &w);
      if (e == AUTD3_OK && w != 1)
        e = autd3_set_error(AUTD3_E_IO, "device %u did not take the counter reset", k);
    }
  }
  if (e != AUTD3_OK) {
    rc = cli_fail("scan", e);
    cli_bus_close(&o, bus);
    return rc;
  }
  static uint32_t rt0[MAXDEV], rt1[MAXDEV], meas[MAXDEV];
  for (uint16_t k = 0; k < n; k++)
    rt0[k] = ecat_get32(dv[k].dcr), rt1[k] = ecat_get32(dv[k].dcr + 4);
  autd3__ecat_dc_line_delays(n, rt0, rt1, meas);
  if (o.json)
    print_json(autd3__echocat_bus_ifname(bus), n, dv, meas, so.reset);
  else
    print_text(autd3__echocat_bus_ifname(bus), n, dv, meas, so.reset);
  cli_bus_close(&o, bus);
  for (uint16_t k = 0; k < n; k++)
    if ((dv[k].answered & dv[k].read) != dv[k].read) {
      fprintf(stderr, TOOL " scan: device %u stopped answering during the scan (its missing values are not shown)\n", k);
      return EXIT_NO_DEVICE;
    }
  return EXIT_OK;
}
