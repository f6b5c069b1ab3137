/*
 * The remote server's discovery (server_internal.h): the DNS-SD advertisement (option advertise) over
 * net/mdns.h.
 */
#include "remote_server/server_internal.h"

const char autd3__rsrv_mdns_service[] = "_autd3._tcp.local"; /* AUTD3_REMOTE_SERVICE_TYPE without the root dot */

static size_t mdns_answer(const autd3_remote_server_t *s, uint8_t *b, size_t cap, uint16_t id, uint32_t ttl) {
  const char *txt[2] = {"wire=7", s->mdns_txt_sdk}; /* discovery.rs service_info: TXT_WIRE_VERSION, TXT_SDK_VERSION */
  mdns_service_t sv = {.service = autd3__rsrv_mdns_service, .instance = s->mdns_instance, .host = s->mdns_host, .port = s->port,
                       .txt = txt, .ntxt = 2, .addr = (const uint8_t(*)[4])s->mdns_addr, .naddr = s->mdns_naddr, .ttl = ttl};
  return autd3__mdns_build_response(b, cap, id, &sv);
}

/* Does a question ask for what we announce? (the service's PTR, our instance's SRV/TXT, our host's A, or ANY) */
typedef struct mdns_q {
  const autd3_remote_server_t *s;
  char fullname[MDNS_NAME_MAX];
  bool ours;
} mdns_q_t;

static void mdns_question(void *ctx, const mdns_record_t *r) {
  mdns_q_t *q = ctx;
  if (!r->is_question) return;
  bool any = r->type == MDNS_TYPE_ANY;
  if ((any || r->type == MDNS_TYPE_PTR) && autd3__mdns_name_eq(r->name, autd3__rsrv_mdns_service)) q->ours = true;
  if ((any || r->type == MDNS_TYPE_SRV || r->type == MDNS_TYPE_TXT) && autd3__mdns_name_eq(r->name, q->fullname)) q->ours = true;
  if ((any || r->type == MDNS_TYPE_A) && autd3__mdns_name_eq(r->name, q->s->mdns_host)) q->ours = true;
}

void autd3__rsrv_mdns_announce(autd3_remote_server_t *s, uint32_t ttl) {
  uint8_t b[MDNS_PACKET_MAX];
  size_t n = mdns_answer(s, b, sizeof b, 0, ttl);
  if (n && autd3__net_udp_send4(s->mdns_fd, b, n, NULL, MDNS_PORT) != AUTD3_OK) autd3__rsrv_log(s, "advertise: %s", autd3_last_error());
}

/* Answer every question about us that is waiting (multicast; a legacy unicast query - source port not 5353, RFC 6762
 * 6.7 - also gets a unicast copy with its id). Bounded per turn so a flood cannot starve the session. */
void autd3__rsrv_on_mdns(autd3_remote_server_t *s) {
  static uint8_t pkt[9000];
  mdns_q_t q = {.s = s};
  snprintf(q.fullname, sizeof q.fullname, "%s.%s", s->mdns_instance, autd3__rsrv_mdns_service);
  for (int k = 0; k < 32; k++) {
    uint8_t ip[4];
    uint16_t port = 0;
    long r = autd3__net_udp_recv4(s->mdns_fd, pkt, sizeof pkt, ip, &port);
    if (r <= 0) return;
    if (r < 12 || (pkt[2] & 0x80)) continue; /* a response (ours looped back, or another responder's) */
    q.ours = false;
    (void)autd3__mdns_parse(pkt, (size_t)r, mdns_question, &q);
    if (!q.ours) continue;
    uint8_t b[MDNS_PACKET_MAX];
    size_t n = mdns_answer(s, b, sizeof b, 0, 120);
    if (n) (void)autd3__net_udp_send4(s->mdns_fd, b, n, NULL, MDNS_PORT);
    if (port != MDNS_PORT && (n = mdns_answer(s, b, sizeof b, (uint16_t)(pkt[0] << 8 | pkt[1]), 10)) != 0)
      (void)autd3__net_udp_send4(s->mdns_fd, b, n, ip, port);
  }
}

autd3_err_t autd3__rsrv_mdns_setup(autd3_remote_server_t *s, const char *listen) {
  if (s->o.advertise_instance) {
    size_t l = strlen(s->o.advertise_instance);
    if (l == 0 || l > 63 || strchr(s->o.advertise_instance, '.'))
      return autd3_set_error(AUTD3_E_INVALID_OPTION, "remote server: advertise_instance \"%s\": must be 1..63 bytes without dots",
                             s->o.advertise_instance);
    snprintf(s->mdns_instance, sizeof s->mdns_instance, "%s", s->o.advertise_instance);
  } else {
    char h[40];
    autd3__net_hostname(h, sizeof h);
    for (char *c = h; *c; c++)
      if (*c == '.' || *c == ' ') *c = '-';
    snprintf(s->mdns_instance, sizeof s->mdns_instance, "autd3-%s-%u", h, s->port);
  }
  snprintf(s->mdns_host, sizeof s->mdns_host, "%s.local", s->mdns_instance);
  snprintf(s->mdns_txt_sdk, sizeof s->mdns_txt_sdk, "sdk=libautd3-%s", autd3_version_string());
  /* Addresses: a specific IPv4 listen address is the only one that serves; a wildcard serves every interface. */
  char host[AUTD3_NET_HOST_MAX], port[16];
  uint8_t a[4];
  if (autd3__net_split(listen, host, sizeof host, port, sizeof port, "listen") == AUTD3_OK && strcmp(host, "0.0.0.0") != 0 &&
      strchr(host, ':') == NULL) {
    unsigned x[4];
    if (sscanf(host, "%u.%u.%u.%u", &x[0], &x[1], &x[2], &x[3]) == 4 && x[0] < 256 && x[1] < 256 && x[2] < 256 && x[3] < 256) {
      for (int i = 0; i < 4; i++) a[i] = (uint8_t)x[i];
      memcpy(s->mdns_addr[0], a, 4);
      s->mdns_naddr = 1;
    }
  }
  if (s->mdns_naddr == 0) s->mdns_naddr = autd3__net_ipv4_addrs(s->mdns_addr, 8);
  if (s->mdns_naddr == 0) {
    static const uint8_t lo[4] = {127, 0, 0, 1};
    memcpy(s->mdns_addr[0], lo, 4);
    s->mdns_naddr = 1;
  }
  autd3_err_t err = autd3__net_mdns_open(&s->mdns_fd);
  if (err != AUTD3_OK) return autd3__error_context(err, "remote server: --advertise");
  return AUTD3_OK;
}
