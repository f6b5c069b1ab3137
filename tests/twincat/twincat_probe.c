/*
 * Test helper driven by tests/twincat/peers.py: our ADS client and our
 * TwinCAT link against any ADS server (the emulated runtime, or pyads' test
 * server as an independent peer). Prints one "key value" line per result so
 * the Python side checks them; exit 0 only if every step succeeded.
 *
 *   twincat_probe ads  HOST PORT NETID       generic ADS services on port 301
 *   twincat_probe link HOST PORT NETID N CYCLES [--no-notification]
 *                                             open the link, drive Reset/Nop, count acks
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link.h"
#include "link/twincat/ads.h"

#define IG 0x03040030u

static int fail(const char *what) {
  printf("error %s: %s\n", what, autd3_last_error());
  return 1;
}

static int probe_ads(const char *host, uint16_t port, const char *netid) {
  ads_client_t c;
  ams_addr_t t = {.port = 301};
  if (autd3__ams_netid_parse(netid, &t.netid) != AUTD3_OK) return fail("netid");
  if (autd3__ads_client_init(&c, 4096, 3000) != AUTD3_OK || autd3__ads_client_connect(&c, host, port) != AUTD3_OK) return fail("connect");
  ads_device_info_t info;
  if (autd3__ads_read_device_info(&c, &t, &info) != AUTD3_OK) return fail("devinfo");
  printf("devinfo %s %u.%u.%u\n", info.name, info.major, info.minor, info.build);
  uint16_t as, ds;
  if (autd3__ads_read_state(&c, &t, &as, &ds) != AUTD3_OK) return fail("state");
  printf("state %u %u\n", as, ds);
  uint8_t w[8] = {1, 2, 3, 4, 5, 6, 7, 8}, r[8] = {0};
  uint32_t n = 0;
  if (autd3__ads_write(&c, &t, IG, 0x81000000, w, sizeof w) != AUTD3_OK) return fail("write");
  if (autd3__ads_read(&c, &t, IG, 0x81000000, r, sizeof r, &n) != AUTD3_OK) return fail("read");
  printf("readback %u %s\n", n, memcmp(r, w, sizeof w) == 0 ? "equal" : "different");
  if (autd3__ads_read(&c, &t, IG, 0x80000000, r, 2, &n) != AUTD3_OK) return fail("read-count");
  printf("count %u\n", ads_get_u16(r));
  uint32_t h;
  if (autd3__ads_add_notification(&c, &t, IG, 0x80000000, 2, ADS_TRANS_SERVER_ON_CHANGE, 0, 10000, &h) != AUTD3_OK) return fail("add-notification");
  printf("notification-handle %u\n", h);
  if (autd3__ads_del_notification(&c, &t, h) != AUTD3_OK) return fail("del-notification");
  printf("notification-deleted\n");
  autd3_err_t e = autd3__ads_read_write(&c, &t, IG, 0x81000000, r, 4, w, 4, &n);
  if (e == AUTD3_OK) printf("readwrite %u\n", n);
  else printf("readwrite-error %s\n", autd3_last_error());
  autd3__ads_client_free(&c);
  printf("done\n");
  return 0;
}

static int probe_link(const char *host, uint16_t port, const char *netid, int n, int cycles, bool no_notif) {
  autd3_geometry_t *g;
  if (autd3_geometry_create((size_t)n, NULL, &g) != AUTD3_OK) return fail("geometry");
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_TWINCAT);
  o.u.twincat.server_ip = host;
  o.u.twincat.server_port = port;
  o.u.twincat.server_ams_net_id = netid;
  o.u.twincat.no_notification = no_notif;
  o.u.twincat.timeout_ms = 3000;
  autd3_link_t *link;
  if (autd3_link_open(&o, g, &link) != AUTD3_OK) return fail("open");
  uint8_t *tx = calloc((size_t)n, 626), rx[2 * 128];
  int valid = 0, acked = 0;
  for (int k = 0; k < cycles; k++) {
    bool v;
    for (int i = 0; i < n; i++) tx[i * 626 + 1] = k < 3 ? 0x00 : 0x04; /* Reset, then Nop seq 0 */
    if (autd3_link_cycle(link, tx, rx, &v) != AUTD3_OK) {
      free(tx);
      return fail("cycle");
    }
    valid += v;
    if (v && k >= 3 && rx[0] == 0) acked++;
  }
  char diag[512];
  autd3_link_diagnostics(link, diag, sizeof diag);
  printf("cycles %d\nvalid %d\nacked %d\n%s", cycles, valid, acked, diag);
  autd3_link_close(link);
  autd3_geometry_free(g);
  free(tx);
  printf("done\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 5 && strcmp(argv[1], "ads") == 0) return probe_ads(argv[2], (uint16_t)atoi(argv[3]), argv[4]);
  if (argc >= 7 && strcmp(argv[1], "link") == 0)
    return probe_link(argv[2], (uint16_t)atoi(argv[3]), argv[4], atoi(argv[5]), atoi(argv[6]),
                      argc > 7 && strcmp(argv[7], "--no-notification") == 0);
  fprintf(stderr, "usage: twincat_probe ads HOST PORT NETID | link HOST PORT NETID N CYCLES [--no-notification]\n");
  return 2;
}
