/*
 * autd3 sii: one device's SII EEPROM, read through echocat's SII reader
 * (src/link/echocat/bus.h), decoded per ETG.2010 (header words, then the
 * categories: strings 10, general 30, FMMU 40, SyncManager 41, TxPDO 50,
 * RxPDO 51, DC 60; others are listed by type and size), or written as the
 * raw image to a file (--raw FILE: the bytes from word 0 up to and including
 * the end marker, as SOEM's eepromtool or IgH's `sii_read` give them).
 */
#include <inttypes.h>
#include <string.h>

#include "cli.h"
#include "link/echocat/ecat.h"

#define SII_MAX 65536

typedef struct sii_opts {
  uint64_t position;
  bool have_pos;
  const char *raw;
  bool entries;
} sii_opts_t;

void help_sii(FILE *o) {
  fprintf(o, "usage: " TOOL " sii --interface IF --position N [--json] [--entries] [--raw FILE] [--capture FILE.pcap]\n"
             "  The SII EEPROM of the device at ring position N (0 = next to the master), decoded\n"
             "  (ETG.2010): identity, configuration words and checksum, mailboxes, strings, general,\n"
             "  FMMU, SyncManager, TxPDO/RxPDO (with --entries every PDO entry), DC.\n"
             "  --raw FILE   write the raw image (word 0 to the end marker) to FILE instead\n"
             "  --json       one JSON object (PDO entries always included)\n");
}

static int own(void *ctx, int argc, char **argv, int i) {
  sii_opts_t *s = ctx;
  if (!strcmp(argv[i], "--entries")) {
    s->entries = true;
    return 1;
  }
  if (!strcmp(argv[i], "--position") || !strcmp(argv[i], "-p") || !strcmp(argv[i], "--raw")) {
    const char *v = cli_value("sii", argc, argv, i);
    if (!v)
      return -1;
    if (!strcmp(argv[i], "--raw")) {
      s->raw = v;
      return 2;
    }
    if (!cli_u64("sii", argv[i], v, 0, 127, &s->position))
      return -1;
    s->have_pos = true;
    return 2;
  }
  return 0;
}

/* CRC-8 (x^8+x^2+x+1, init 0xFF, MSB first) over bytes 0..13: the header checksum (ETG.2010). */
static uint8_t sii_crc(const uint8_t *b) {
  uint8_t crc = 0xFF;
  for (int i = 0; i < 14; i++) {
    crc ^= b[i];
    for (int k = 0; k < 8; k++)
      crc = (uint8_t)((crc & 0x80) ? (crc << 1) ^ 0x07 : crc << 1);
  }
  return crc;
}

static const char *cat_name(uint16_t t) {
  switch (t) {
  case 0: return "NOP";
  case 10: return "strings";
  case 20: return "data types";
  case 30: return "general";
  case 40: return "FMMU";
  case 41: return "SyncManager";
  case 42: return "FMMU extended";
  case 43: return "sync unit";
  case 50: return "TxPDO";
  case 51: return "RxPDO";
  case 60: return "DC";
  default: return t >= 0x0800 ? "vendor specific" : (t >= 1 && t <= 9 ? "device specific" : "unknown");
  }
}

static const char *sm_type(uint8_t t) {
  switch (t) {
  case 1: return "mailbox out";
  case 2: return "mailbox in";
  case 3: return "outputs";
  case 4: return "inputs";
  default: return "unused";
  }
}

static const char *fmmu_use(uint8_t u) {
  switch (u) {
  case 1: return "outputs";
  case 2: return "inputs";
  case 3: return "SM status";
  default: return "unused";
  }
}

/* The strings category: string i (1-based) of the image, or "" (index 0, out of range, no strings). */
typedef struct strtab {
  const uint8_t *p; /* category data */
  size_t len;
} strtab_t;

static void str_get(const strtab_t *s, unsigned idx, char *out, size_t cap) {
  out[0] = 0;
  if (!s->p || idx == 0 || s->len == 0 || idx > s->p[0])
    return;
  size_t o = 1;
  for (unsigned i = 1; o < s->len; i++) {
    size_t l = s->p[o];
    if (o + 1 + l > s->len)
      return;
    if (i == idx) {
      if (l >= cap)
        l = cap - 1;
      memcpy(out, s->p + o + 1, l);
      out[l] = 0;
      return;
    }
    o += 1 + l;
  }
}

typedef struct out {
  json_t j;
  bool json, entries;
} out_t;

static void header(out_t *o, const uint8_t *b) {
  uint8_t crc = sii_crc(b);
  uint16_t kbit = (uint16_t)(ecat_get16(b + 0x7C) + 1u);
  if (o->json) {
    json_obj(&o->j, "header");
    json_u64(&o->j, "pdi_control", ecat_get16(b));
    json_u64(&o->j, "pdi_configuration", ecat_get16(b + 2));
    json_u64(&o->j, "sync_impulse_10ns", ecat_get16(b + 4));
    json_u64(&o->j, "pdi_configuration2", ecat_get16(b + 6));
    json_u64(&o->j, "alias", ecat_get16(b + 8));
    json_u64(&o->j, "checksum", b[14]);
    json_bool(&o->j, "checksum_ok", crc == b[14]);
    json_u64(&o->j, "vendor", ecat_get32(b + 0x10));
    json_u64(&o->j, "product", ecat_get32(b + 0x14));
    json_u64(&o->j, "revision", ecat_get32(b + 0x18));
    json_u64(&o->j, "serial", ecat_get32(b + 0x1C));
    json_u64(&o->j, "bootstrap_rx_offset", ecat_get16(b + 0x28));
    json_u64(&o->j, "bootstrap_rx_size", ecat_get16(b + 0x2A));
    json_u64(&o->j, "bootstrap_tx_offset", ecat_get16(b + 0x2C));
    json_u64(&o->j, "bootstrap_tx_size", ecat_get16(b + 0x2E));
    json_u64(&o->j, "mailbox_rx_offset", ecat_get16(b + 0x30));
    json_u64(&o->j, "mailbox_rx_size", ecat_get16(b + 0x32));
    json_u64(&o->j, "mailbox_tx_offset", ecat_get16(b + 0x34));
    json_u64(&o->j, "mailbox_tx_size", ecat_get16(b + 0x36));
    json_u64(&o->j, "mailbox_protocols", ecat_get16(b + 0x38));
    json_u64(&o->j, "size_kbit", kbit);
    json_u64(&o->j, "version", ecat_get16(b + 0x7E));
    json_end_obj(&o->j);
    return;
  }
  uint16_t mp = ecat_get16(b + 0x38);
  printf("identity        vendor 0x%08" PRIx32 " product 0x%08" PRIx32 " revision 0x%08" PRIx32 " serial 0x%08" PRIx32 "\n",
         ecat_get32(b + 0x10), ecat_get32(b + 0x14), ecat_get32(b + 0x18), ecat_get32(b + 0x1C));
  printf("configuration   PDI control 0x%04x, PDI configuration 0x%04x, SYNC impulse %u x 10 ns, PDI configuration 2 "
         "0x%04x, alias %u\n",
         ecat_get16(b), ecat_get16(b + 2), ecat_get16(b + 4), ecat_get16(b + 6), ecat_get16(b + 8));
  printf("checksum        0x%02x (%s, computed 0x%02x)\n", b[14], crc == b[14] ? "ok" : "WRONG", crc);
  printf("bootstrap mbx   out 0x%04x/%u, in 0x%04x/%u\n", ecat_get16(b + 0x28), ecat_get16(b + 0x2A), ecat_get16(b + 0x2C),
         ecat_get16(b + 0x2E));
  if (ecat_get16(b + 0x32) == 0)
    printf("mailbox         none\n");
  else
    printf("mailbox         out 0x%04x/%u, in 0x%04x/%u, protocols 0x%04x%s%s%s%s%s%s\n", ecat_get16(b + 0x30),
           ecat_get16(b + 0x32), ecat_get16(b + 0x34), ecat_get16(b + 0x36), mp, (mp & 1) ? " AoE" : "",
           (mp & 2) ? " EoE" : "", (mp & 4) ? " CoE" : "", (mp & 8) ? " FoE" : "", (mp & 0x10) ? " SoE" : "",
           (mp & 0x20) ? " VoE" : "");
  printf("EEPROM          %u Kbit, version %u\n", kbit, ecat_get16(b + 0x7E));
}

static void general(out_t *o, const uint8_t *d, size_t len, const strtab_t *st) {
  if (len < 18)
    return;
  char g[64], img[64], ord[64], nm[64];
  str_get(st, d[0], g, sizeof g), str_get(st, d[1], img, sizeof img), str_get(st, d[2], ord, sizeof ord),
      str_get(st, d[3], nm, sizeof nm);
  uint16_t ports = ecat_get16(d + 16);
  if (o->json) {
    json_obj(&o->j, "general");
    json_str(&o->j, "group", g), json_str(&o->j, "image", img), json_str(&o->j, "order", ord), json_str(&o->j, "name", nm);
    json_u64(&o->j, "coe_details", d[5]), json_u64(&o->j, "foe_details", d[6]), json_u64(&o->j, "eoe_details", d[7]);
    json_u64(&o->j, "soe_channels", d[8]), json_u64(&o->j, "ds402_channels", d[9]), json_u64(&o->j, "sysman_class", d[10]);
    json_u64(&o->j, "flags", d[11]);
    json_i64(&o->j, "current_on_ebus_ma", (int16_t)ecat_get16(d + 12));
    json_u64(&o->j, "physical_ports", ports);
    json_end_obj(&o->j);
    return;
  }
  printf("general         name \"%s\", group \"%s\", order \"%s\"%s%s%s\n", nm, g, ord, img[0] ? ", image \"" : "", img,
         img[0] ? "\"" : "");
  printf("                CoE 0x%02x, FoE 0x%02x, EoE 0x%02x, SoE channels %u, flags 0x%02x%s%s, EBus current %d mA, "
         "ports 0x%04x\n",
         d[5], d[6], d[7], d[8], d[11], (d[11] & 0x01) ? " SafeOp" : "", (d[11] & 0x02) ? " not-LRW" : "",
         (int16_t)ecat_get16(d + 12), ports);
}

static void pdos(out_t *o, uint16_t type, const uint8_t *d, size_t len, const strtab_t *st) {
  const char *kind = type == 50 ? "TxPDO" : "RxPDO";
  if (o->json)
    json_arr(&o->j, type == 50 ? "txpdo" : "rxpdo");
  for (size_t off = 0; off + 8 <= len;) {
    uint8_t n = d[off + 2];
    char nm[64];
    str_get(st, d[off + 5], nm, sizeof nm);
    unsigned bits = 0;
    size_t e0 = off + 8;
    for (unsigned i = 0; i < n && e0 + 8 * (i + 1) <= len; i++)
      bits += d[e0 + 8 * i + 5];
    if (o->json) {
      json_obj(&o->j, NULL);
      json_u64(&o->j, "index", ecat_get16(d + off));
      json_str(&o->j, "name", nm);
      json_u64(&o->j, "sm", d[off + 3]);
      json_u64(&o->j, "dc_sync", d[off + 4]);
      json_u64(&o->j, "flags", ecat_get16(d + off + 6));
      json_u64(&o->j, "bits", bits);
      json_arr(&o->j, "entries");
    } else {
      printf("%-15s 0x%04x \"%s\" SM%u, %u entries, %u bits (%u bytes)\n", kind, ecat_get16(d + off), nm, d[off + 3], n,
             bits, (bits + 7) / 8);
    }
    for (unsigned i = 0; i < n && e0 + 8 * (i + 1) <= len; i++) {
      const uint8_t *e = d + e0 + 8 * i;
      char en[64];
      str_get(st, e[3], en, sizeof en);
      if (o->json) {
        json_obj(&o->j, NULL);
        json_u64(&o->j, "index", ecat_get16(e));
        json_u64(&o->j, "subindex", e[2]);
        json_str(&o->j, "name", en);
        json_u64(&o->j, "data_type", e[4]);
        json_u64(&o->j, "bits", e[5]);
        json_end_obj(&o->j);
      } else if (o->entries) {
        printf("                  0x%04x:%02x \"%s\" type 0x%02x, %u bits\n", ecat_get16(e), e[2], en, e[4], e[5]);
      }
    }
    if (o->json) {
      json_end_arr(&o->j);
      json_end_obj(&o->j);
    }
    off = e0 + 8u * n;
  }
  if (o->json)
    json_end_arr(&o->j);
}

/* Decode the image (len bytes from word 0) to stdout. */
static void decode(out_t *o, const uint8_t *b, size_t len) {
  header(o, b);
  strtab_t st = {NULL, 0};
  /* strings first: the other categories refer to them */
  for (size_t a = 0x80; a + 4 <= len;) {
    uint16_t t = ecat_get16(b + a), w = ecat_get16(b + a + 2);
    if (t == 0xFFFF)
      break;
    size_t dl = (size_t)w * 2;
    if (a + 4 + dl > len)
      dl = len - a - 4;
    if (t == 10) {
      st.p = b + a + 4, st.len = dl;
      break;
    }
    a += 4 + (size_t)w * 2;
  }
  if (o->json)
    json_arr(&o->j, "categories");
  else
    printf("categories     ");
  for (size_t a = 0x80; a + 4 <= len;) {
    uint16_t t = ecat_get16(b + a), w = ecat_get16(b + a + 2);
    if (t == 0xFFFF)
      break;
    if (o->json) {
      json_obj(&o->j, NULL);
      json_u64(&o->j, "type", t), json_str(&o->j, "name", cat_name(t)), json_u64(&o->j, "words", w);
      json_u64(&o->j, "offset_words", a / 2);
      json_end_obj(&o->j);
    } else {
      printf(" %s (%u, %u words)", cat_name(t), t, w);
    }
    a += 4 + (size_t)w * 2;
  }
  if (o->json)
    json_end_arr(&o->j);
  else
    printf("\n");
  if (st.p) {
    if (o->json)
      json_arr(&o->j, "strings");
    else
      printf("strings        ");
    for (unsigned i = 1; i <= st.p[0]; i++) {
      char s[256];
      str_get(&st, i, s, sizeof s);
      if (o->json)
        json_str(&o->j, NULL, s);
      else
        printf(" %u \"%s\"", i, s);
    }
    if (o->json)
      json_end_arr(&o->j);
    else
      printf("\n");
  }
  for (size_t a = 0x80; a + 4 <= len;) {
    uint16_t t = ecat_get16(b + a), w = ecat_get16(b + a + 2);
    if (t == 0xFFFF)
      break;
    const uint8_t *d = b + a + 4;
    size_t dl = (size_t)w * 2;
    if (a + 4 + dl > len)
      dl = len - a - 4;
    if (t == 30) {
      general(o, d, dl, &st);
    } else if (t == 40) {
      if (o->json)
        json_arr(&o->j, "fmmu");
      else
        printf("FMMU           ");
      for (size_t i = 0; i < dl; i++) {
        if (o->json)
          json_str(&o->j, NULL, fmmu_use(d[i]));
        else if (d[i] != 0xFF || i + 1 < dl)
          printf(" %zu:%s", i, fmmu_use(d[i]));
      }
      if (o->json)
        json_end_arr(&o->j);
      else
        printf("\n");
    } else if (t == 41) {
      if (o->json)
        json_arr(&o->j, "sm");
      for (size_t i = 0; i + 8 <= dl; i += 8) {
        if (o->json) {
          json_obj(&o->j, NULL);
          json_u64(&o->j, "start", ecat_get16(d + i)), json_u64(&o->j, "length", ecat_get16(d + i + 2));
          json_u64(&o->j, "control", d[i + 4]), json_u64(&o->j, "enable", d[i + 6]);
          json_str(&o->j, "type", sm_type(d[i + 7]));
          json_end_obj(&o->j);
        } else {
          printf("SM%-13zu start 0x%04x length %u control 0x%02x %s, %s\n", i / 8, ecat_get16(d + i), ecat_get16(d + i + 2),
                 d[i + 4], (d[i + 6] & 1) ? "enabled" : "disabled", sm_type(d[i + 7]));
        }
      }
      if (o->json)
        json_end_arr(&o->j);
    } else if (t == 50 || t == 51) {
      pdos(o, t, d, dl, &st);
    } else if (t == 60) {
      if (o->json)
        json_arr(&o->j, "dc");
      for (size_t i = 0; i + 24 <= dl; i += 24) {
        char nm[64];
        str_get(&st, d[i + 18], nm, sizeof nm);
        if (o->json) {
          json_obj(&o->j, NULL);
          json_str(&o->j, "name", nm);
          json_u64(&o->j, "cycle0_ns", ecat_get32(d + i)), json_u64(&o->j, "shift0_ns", ecat_get32(d + i + 4));
          json_u64(&o->j, "assign_activate", ecat_get16(d + i + 14));
          json_end_obj(&o->j);
        } else {
          printf("DC mode         \"%s\" cycle %" PRIu32 " ns shift %" PRIu32 " ns, AssignActivate 0x%04x\n", nm,
                 ecat_get32(d + i), ecat_get32(d + i + 4), ecat_get16(d + i + 14));
        }
      }
      if (o->json)
        json_end_arr(&o->j);
    }
    a += 4 + (size_t)w * 2;
  }
}

int cmd_sii(int argc, char **argv) {
  cli_opts_t o;
  sii_opts_t so;
  memset(&so, 0, sizeof so);
  if (!cli_parse("sii", argc, argv, &o, own, &so))
    return EXIT_USAGE;
  if (o.help) {
    help_sii(stdout);
    return EXIT_OK;
  }
  if (!so.have_pos) {
    fprintf(stderr, TOOL " sii: --position N is required (`" TOOL " scan` lists the positions)\n");
    return EXIT_USAGE;
  }
  echocat_t *bus;
  int rc = cli_bus_open("sii", &o, &bus);
  if (rc != EXIT_OK)
    return rc;
  if (so.position >= autd3__echocat_bus_count(bus)) {
    fprintf(stderr, TOOL " sii: no device at position %" PRIu64 ": the chain on %s has %u\n", so.position,
            autd3__echocat_bus_ifname(bus), autd3__echocat_bus_count(bus));
    cli_bus_close(&o, bus);
    return EXIT_NO_DEVICE;
  }
  static uint8_t img[SII_MAX];
  size_t len = 0;
  autd3_err_t e = autd3__echocat_bus_sii(bus, (uint16_t)so.position, img, sizeof img, &len);
  if (e != AUTD3_OK) {
    rc = cli_fail("sii", e);
    cli_bus_close(&o, bus);
    return rc;
  }
  if (so.raw) {
    FILE *f = fopen(so.raw, "wb");
    if (!f || fwrite(img, 1, len, f) != len || fclose(f) != 0) {
      fprintf(stderr, TOOL " sii: cannot write %s\n", so.raw);
      if (f)
        fclose(f);
      cli_bus_close(&o, bus);
      return EXIT_FAIL;
    }
    fprintf(stderr, TOOL " sii: %zu bytes (%zu words) of device %" PRIu64 " written to %s\n", len, len / 2, so.position,
            so.raw);
  } else {
    out_t out;
    memset(&out, 0, sizeof out);
    out.json = o.json, out.entries = so.entries;
    if (o.json) {
      json_begin(&out.j, stdout);
      json_obj(&out.j, NULL);
      json_str(&out.j, "interface", autd3__echocat_bus_ifname(bus));
      json_u64(&out.j, "position", so.position);
      json_u64(&out.j, "bytes", len);
    } else {
      printf(TOOL " sii %s position %" PRIu64 ": %zu bytes\n", autd3__echocat_bus_ifname(bus), so.position, len);
    }
    decode(&out, img, len);
    if (o.json) {
      json_end_obj(&out.j);
      json_finish(&out.j);
    }
  }
  cli_bus_close(&o, bus);
  return EXIT_OK;
}
