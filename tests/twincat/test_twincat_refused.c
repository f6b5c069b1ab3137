/*
 * A TwinCAT connection closed right after it was accepted: the link's error
 * names the likely causes (the runtime at its connection limit, or no TwinCAT
 * router on that port) instead of a bare "closed the connection". Against the
 * emulated runtime with every place taken (tools/twincat-emu: max_conns) and
 * against a plain TCP listener that accepts and closes. Loopback only.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "autd3/link.h"
#include "autd3/link_driver.h"
#include "harness/test.h"
#include "link/twincat/ads.h"
#include "platform/platform.h"
#include "emulation/twincat/twincat_emu.h"

static void *emu_thread(void *arg) {
  autd3_tcemu_run(arg);
  return NULL;
}

static autd3_err_t open_link(uint16_t port, autd3_link_t **out) {
  autd3_geometry_t *g;
  ASSERT_OK(autd3_geometry_create(1, NULL, &g));
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_TWINCAT);
  o.u.twincat.server_ip = "127.0.0.1";
  o.u.twincat.server_port = port;
  o.u.twincat.server_ams_net_id = "127.0.0.1.1.1";
  o.u.twincat.timeout_ms = 2000;
  autd3_err_t e = autd3_link_open(&o, g, out);
  autd3_geometry_free(g);
  return e;
}

static void assert_hint(void) {
  const char *m = autd3_last_error();
  ASSERT_CONTAINS(m, "before answering anything");
  ASSERT_CONTAINS(m, "connection limit");
  ASSERT_CONTAINS(m, "not a TwinCAT router");
}

TEST(link_refused_at_connection_limit) {
  autd3_tcemu_config_t cfg = autd3_tcemu_config_default();
  cfg.devices = 1;
  cfg.listen_port = 0;
  cfg.max_conns = 1;
  cfg.idle_timeout_ms = 3600000; /* the client holding the place never gives it up within the test */
  autd3_tcemu_t *emu = NULL;
  ASSERT_OK(autd3_tcemu_create(&cfg, &emu));
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, emu_thread, emu), 0);
  /* One ADS client takes the only place. */
  ads_client_t holder;
  ASSERT_OK(autd3__ads_client_init(&holder, 64, 2000));
  ASSERT_OK(autd3__ads_client_connect(&holder, "127.0.0.1", autd3_tcemu_port(emu)));
  ams_addr_t t = {.port = 301};
  ASSERT_OK(autd3__ams_netid_parse("127.0.0.1.1.1", &t.netid));
  uint16_t as, ds;
  ASSERT_OK(autd3__ads_read_state(&holder, &t, &as, &ds));
  /* The link is accepted by TCP and closed at once by the runtime. */
  autd3_link_t *link = NULL;
  ASSERT_ERR(open_link(autd3_tcemu_port(emu), &link), AUTD3_E_PEER_CLOSED);
  assert_hint();
  fprintf(stderr, "error: %s\n", autd3_last_error());
  autd3_tcemu_conn_stats_t st;
  autd3_tcemu_conn_stats(emu, &st);
  ASSERT_GE(st.refused, 1); /* the fault happened: the emulator refused it for lack of a place */
  /* Once the place is free the link gets in: the hint was about the limit, not the link. */
  autd3__ads_client_free(&holder);
  autd3_err_t e = AUTD3_E_PEER_CLOSED;
  for (int i = 0; i < 200 && e != AUTD3_OK; i++) {
    e = open_link(autd3_tcemu_port(emu), &link);
    if (e != AUTD3_OK) usleep(20000); /* the emulator notices the holder's close at its next poll */
  }
  ASSERT_OK(e);
  autd3_link_close(link);
  autd3_tcemu_stop(emu);
  pthread_join(th, NULL);
  autd3_tcemu_free(emu);
}

/* A plain TCP listener that accepts every connection and closes it at once. */
static int lfd = -1;
static atomic_int accepted;
static atomic_bool stop_listener;
static void *accept_and_close(void *arg) {
  (void)arg;
  while (!atomic_load(&stop_listener)) {
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0) continue;
    atomic_fetch_add(&accepted, 1);
    close(fd);
  }
  return NULL;
}

TEST(link_refused_by_plain_tcp_listener) {
  lfd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_TRUE(lfd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
  ASSERT_EQ(listen(lfd, 8), 0);
  socklen_t al = sizeof a;
  ASSERT_EQ(getsockname(lfd, (struct sockaddr *)&a, &al), 0);
  struct timeval tv = {0, 100000}; /* accept() wakes to see stop_listener */
  setsockopt(lfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, accept_and_close, NULL), 0);
  autd3_link_t *link = NULL;
  ASSERT_ERR(open_link(ntohs(a.sin_port), &link), AUTD3_E_PEER_CLOSED);
  assert_hint();
  ASSERT_GE(atomic_load(&accepted), 1);
  atomic_store(&stop_listener, true);
  pthread_join(th, NULL);
  close(lfd);
}

/* A connection that answered before it closed is not blamed on the limit. */
TEST(closed_after_answering_has_no_hint) {
  autd3_tcemu_config_t cfg = autd3_tcemu_config_default();
  cfg.devices = 1;
  cfg.listen_port = 0;
  autd3_tcemu_t *emu = NULL;
  ASSERT_OK(autd3_tcemu_create(&cfg, &emu));
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, emu_thread, emu), 0);
  ads_client_t c;
  ASSERT_OK(autd3__ads_client_init(&c, 64, 2000));
  ASSERT_OK(autd3__ads_client_connect(&c, "127.0.0.1", autd3_tcemu_port(emu)));
  ams_addr_t t = {.port = 301};
  ASSERT_OK(autd3__ams_netid_parse("127.0.0.1.1.1", &t.netid));
  uint16_t as, ds;
  ASSERT_OK(autd3__ads_read_state(&c, &t, &as, &ds));
  autd3_tcemu_drop_connections(emu);
  autd3_err_t e = AUTD3_OK;
  for (int i = 0; i < 100 && e == AUTD3_OK; i++) {
    e = autd3__ads_read_state(&c, &t, &as, &ds);
    if (e == AUTD3_OK) usleep(20000);
  }
  ASSERT_ERR(e, AUTD3_E_PEER_CLOSED);
  /* FIN or, when a request was already on its way as the runtime dropped us, RST. */
  ASSERT_TRUE(strstr(autd3_last_error(), "closed the connection") != NULL ||
              strstr(autd3_last_error(), "reset the connection") != NULL);
  ASSERT_TRUE(strstr(autd3_last_error(), "connection limit") == NULL);
  autd3__ads_client_free(&c);
  autd3_tcemu_stop(emu);
  pthread_join(th, NULL);
  autd3_tcemu_free(emu);
}
