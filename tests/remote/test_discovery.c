/*
 * DNS-SD discovery of Remote servers: the mDNS codec (net/mdns.c) on fixed and
 * hostile bytes, and autd3_remote_discover() finding a server that advertises
 * itself. Multicast stays in a private network namespace (unshare -rn, loopback
 * with multicast on and a 224.0.0.0/4 route).
 */
#include <string.h>

#include "harness/netns.h"
#include "net/mdns.h"
#include "remote_helpers.h"

typedef struct seen {
  int ptr, srv, txt, a, q;
  char target[MDNS_NAME_MAX], wire[8];
  uint16_t port;
  uint8_t addr[4];
} seen_t;

static void collect(void *ctx, const mdns_record_t *r) {
  seen_t *s = ctx;
  if (r->is_question) {
    s->q++;
    return;
  }
  if (r->type == MDNS_TYPE_PTR) s->ptr++, snprintf(s->target, sizeof s->target, "%s", r->target);
  if (r->type == MDNS_TYPE_SRV) s->srv++, s->port = r->port;
  if (r->type == MDNS_TYPE_TXT) s->txt++, (void)autd3__mdns_txt_get(r->txt, r->txt_len, "WIRE", s->wire, sizeof s->wire);
  if (r->type == MDNS_TYPE_A) s->a++, memcpy(s->addr, r->a, 4);
}

TEST(mdns_codec_roundtrip) {
  uint8_t b[MDNS_PACKET_MAX];
  size_t n = autd3__mdns_build_query(b, sizeof b, 0, "_autd3._tcp.local", MDNS_TYPE_PTR);
  static const uint8_t q[] = {0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 6, '_', 'a', 'u', 't', 'd', '3', 4, '_', 't', 'c', 'p',
                              5, 'l', 'o', 'c', 'a', 'l', 0, 0, 12, 0, 1};
  ASSERT_EQ(n, sizeof q);
  ASSERT_MEMEQ(b, q, n);
  const char *txt[] = {"wire=7", "sdk=libautd3-0.3.0"};
  const uint8_t addr[1][4] = {{192, 168, 1, 5}};
  mdns_service_t sv = {.service = "_autd3._tcp.local", .instance = "autd3-lab", .host = "autd3-lab.local", .port = 8080,
                       .txt = txt, .ntxt = 2, .addr = addr, .naddr = 1, .ttl = 120};
  n = autd3__mdns_build_response(b, sizeof b, 0, &sv);
  ASSERT_TRUE(n > 12);
  seen_t s = {0};
  ASSERT_TRUE(autd3__mdns_parse(b, n, collect, &s));
  ASSERT_EQ(s.ptr, 1);
  ASSERT_EQ(s.srv, 1);
  ASSERT_EQ(s.txt, 1);
  ASSERT_EQ(s.a, 1);
  ASSERT_STREQ(s.target, "autd3-lab._autd3._tcp.local");
  ASSERT_EQ(s.port, 8080);
  ASSERT_STREQ(s.wire, "7");
  ASSERT_EQ(s.addr[0], 192);
  ASSERT_EQ(autd3__mdns_build_response(b, 40, 0, &sv), 0); /* does not fit: nothing */
  ASSERT_TRUE(autd3__mdns_name_eq("_AUTD3._tcp.LOCAL", "_autd3._tcp.local"));
}

TEST(mdns_parser_hostile) {
  seen_t s = {0};
  /* a name pointing at itself, and one pointing forward: refused, no loop */
  static const uint8_t self[] = {0, 0, 0x84, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4};
  ASSERT_FALSE(autd3__mdns_parse(self, sizeof self, collect, &s));
  static const uint8_t fwd[] = {0, 0, 0x84, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0xC0, 20, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4};
  ASSERT_FALSE(autd3__mdns_parse(fwd, sizeof fwd, collect, &s));
  /* counts promising more than the bytes hold; a label running past the end; a record whose rdata overruns */
  static const uint8_t many[] = {0, 0, 0x84, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0};
  ASSERT_FALSE(autd3__mdns_parse(many, sizeof many, collect, &s));
  static const uint8_t lab[] = {0, 0, 0x84, 0, 0, 1, 0, 0, 0, 0, 0, 0, 40, 'a', 'b'};
  ASSERT_FALSE(autd3__mdns_parse(lab, sizeof lab, collect, &s));
  static const uint8_t rd[] = {0, 0, 0x84, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0xFF, 0xFF, 1, 2};
  ASSERT_FALSE(autd3__mdns_parse(rd, sizeof rd, collect, &s));
  ASSERT_EQ(s.a, 0);
  /* a TXT string longer than the rdata */
  static const uint8_t t[] = {200, 'w', 'i'};
  char v[8];
  ASSERT_FALSE(autd3__mdns_txt_get(t, sizeof t, "wire", v, sizeof v));
}

/* Private namespace with multicast on loopback; returns in the child only. */
static void multicast_netns(const char *name) {
  autd3_test_reexec_unshare("-rn", name);
  if (system("ip link set lo up && ip link set lo multicast on && ip route add 224.0.0.0/4 dev lo") != 0)
    SKIP("cannot enable multicast on loopback in the private namespace (ip missing?)");
}

TEST(discover_finds_advertised_server) {
  multicast_netns("discover_finds_advertised_server");
  srv_t v;
  autd3_remote_server_option_t o = autd3_remote_server_option_default();
  o.advertise = 1;
  o.advertise_instance = "autd3-test-lab";
  srv_start_opt(&v, o);
  autd3_remote_found_t f[8];
  size_t n = 0;
  ASSERT_OK(autd3_remote_discover(1500, f, 8, &n));
  ASSERT_EQ(n, 1);
  ASSERT_STREQ(f[0].instance, "autd3-test-lab");
  ASSERT_STREQ(f[0].address, v.addr); /* the listen address, 127.0.0.1:PORT */
  ASSERT_EQ(f[0].port, v.port);
  ASSERT_EQ(f[0].wire, 7);
  ASSERT_CONTAINS(f[0].sdk, "libautd3-");
  ASSERT_EQ(f[0].simulator, 0);
  /* and the address found serves a session */
  autd3_link_option_t lo = autd3_link_option_default(AUTD3_LINK_REMOTE);
  lo.u.remote.address = f[0].address;
  lo.u.remote.timeout_ms = 5000;
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(1, NULL, &g));
  autd3_link_t *l = NULL;
  ASSERT_OK(autd3_link_open(&lo, g, &l));
  static uint8_t tx[626];
  uint8_t rx[2];
  bool valid;
  ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
  autd3_link_close(l);
  autd3_geometry_free(g);
  srv_stop(&v);
}

TEST(discover_nothing_is_a_timeout) {
  multicast_netns("discover_nothing_is_a_timeout");
  autd3_remote_found_t f[2];
  size_t n = 5;
  ASSERT_ERR(autd3_remote_discover(300, f, 2, &n), AUTD3_E_TIMEOUT);
  ASSERT_EQ(n, 0);
  ASSERT_CONTAINS(autd3_last_error(), "no AUTD3 server answered");
  ASSERT_ERR(autd3_remote_discover(0, f, 2, &n), AUTD3_E_INVALID_OPTION);
  ASSERT_ERR(autd3_remote_discover(100, NULL, 2, &n), AUTD3_E_INVALID_ARGUMENT);
}

TEST(advertise_instance_checked) {
  autd3_remote_server_option_t o = autd3_remote_server_option_default();
  o.listen = "127.0.0.1:0";
  o.advertise = 1;
  o.advertise_instance = "a.b";
  autd3_remote_server_t *s = NULL;
  ASSERT_ERR(autd3_remote_server_create(&o, &s), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "without dots");
}
