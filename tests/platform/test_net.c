/* The network layer's contract (src/net/net.h) on loopback, the same cases
 * on every back end: POSIX natively and under qemu-user, Winsock (src/net/
 * win.c) under wine. Only net.h, the seam, the harness and libc. */
#include <stdatomic.h>
#include <string.h>

#include "autd3/error.h"
#include "harness/test.h"
#include "net/net.h"
#include "platform/platform.h"

static uint64_t in_ms(uint32_t ms) { return autd3__now_ns() + (uint64_t)ms * 1000000u; }

TEST(split_addresses) {
  char h[64], p[8];
  ASSERT_OK(autd3__net_split("127.0.0.1:8080", h, sizeof h, p, sizeof p, "t"));
  ASSERT_STREQ(h, "127.0.0.1");
  ASSERT_STREQ(p, "8080");
  ASSERT_OK(autd3__net_split("[::1]:0", h, sizeof h, p, sizeof p, "t"));
  ASSERT_STREQ(h, "::1");
  ASSERT_STREQ(p, "0");
  ASSERT_ERR(autd3__net_split("::1:80", h, sizeof h, p, sizeof p, "t"), AUTD3_E_INVALID_OPTION);
  ASSERT_ERR(autd3__net_split("host", h, sizeof h, p, sizeof p, "t"), AUTD3_E_INVALID_OPTION);
  ASSERT_ERR(autd3__net_split("host:70000", h, sizeof h, p, sizeof p, "t"), AUTD3_E_INVALID_OPTION);
}

/* Listen on an ephemeral loopback port, connect, accept: both ends. */
static void pair(int *ls, int *cl, int *sv, uint16_t *port) {
  ASSERT_OK(autd3__net_listen("127.0.0.1:0", ls, port));
  ASSERT_GT(*port, 0);
  char addr[32];
  snprintf(addr, sizeof addr, "127.0.0.1:%u", *port);
  ASSERT_OK(autd3__net_connect_addr(addr, 5000, "test", NULL, cl));
  *sv = -1;
  for (int i = 0; i < 5000 && *sv < 0; i++) {
    autd3_net_poll_t p = {.fd = *ls, .events = AUTD3_NET_IN};
    ASSERT_GE(autd3__net_poll(&p, 1, 1000), 0);
    char peer[AUTD3_NET_PEER_MAX];
    *sv = autd3__net_accept(*ls, peer, sizeof peer);
    if (*sv >= 0) ASSERT_CONTAINS(peer, "127.0.0.1:");
  }
  ASSERT_GE(*sv, 0);
}

TEST(round_trip_and_eof) {
  int ls, cl, sv;
  uint16_t port;
  pair(&ls, &cl, &sv, &port);
  uint8_t ip[4];
  ASSERT_TRUE(autd3__net_local_ipv4(cl, ip));
  ASSERT_EQ(ip[0], 127);
  ASSERT_TRUE(autd3__net_peer_ipv4(sv, ip));
  ASSERT_EQ(ip[0], 127);
  char name[AUTD3_NET_PEER_MAX];
  autd3__net_peer_name(cl, name, sizeof name);
  char want[32];
  snprintf(want, sizeof want, "127.0.0.1:%u", port);
  ASSERT_STREQ(name, want);

  /* Nothing sent yet: a non-blocking receive moves nothing, and a bounded read times out. */
  uint8_t buf[3000];
  ASSERT_EQ(autd3__net_recv(sv, buf, sizeof buf), 0);
  ASSERT_FALSE(autd3__net_readable(sv));
  size_t got = 0;
  ASSERT_ERR(autd3__net_read_all(sv, buf, 10, in_ms(30), &got), AUTD3_E_TIMEOUT);
  ASSERT_EQ(got, 0);

  uint8_t a[1000], b[2000];
  for (size_t i = 0; i < sizeof a; i++) a[i] = (uint8_t)i;
  for (size_t i = 0; i < sizeof b; i++) b[i] = (uint8_t)(i * 7);
  ASSERT_OK(autd3__net_write2(cl, a, sizeof a, b, sizeof b, in_ms(5000)));
  ASSERT_OK(autd3__net_read_all(sv, buf, sizeof a + sizeof b, in_ms(5000), &got));
  ASSERT_EQ(got, sizeof a + sizeof b);
  ASSERT_MEMEQ(buf, a, sizeof a);
  ASSERT_MEMEQ(buf + sizeof a, b, sizeof b);

  ASSERT_OK(autd3__net_write_all(sv, "pong", 4, in_ms(5000), NULL));
  ASSERT_OK(autd3__net_wait(cl, false, in_ms(5000)));
  ASSERT_TRUE(autd3__net_readable(cl));
  ASSERT_EQ(autd3__net_recv(cl, buf, sizeof buf), 4);
  ASSERT_MEMEQ(buf, "pong", 4);

  /* Half-close: the peer reads EOF, and can still answer. */
  autd3__net_shutdown_write(cl);
  ASSERT_OK(autd3__net_wait(sv, false, in_ms(5000)));
  ASSERT_EQ(autd3__net_recv(sv, buf, sizeof buf), AUTD3_NET_EOF);
  ASSERT_GT(autd3__net_send(sv, "bye", 3), 0);
  ASSERT_OK(autd3__net_read_all(cl, buf, 3, in_ms(5000), NULL));
  ASSERT_MEMEQ(buf, "bye", 3);
  autd3__net_close(sv);
  ASSERT_ERR(autd3__net_read_all(cl, buf, 1, in_ms(5000), NULL), AUTD3_E_PEER_CLOSED);
  autd3__net_close(cl);
  autd3__net_close(ls);
}

TEST(refused_names_the_hint) {
  int ls;
  uint16_t port;
  ASSERT_OK(autd3__net_listen("127.0.0.1:0", &ls, &port));
  autd3__net_close(ls); /* nobody listens there now */
  char addr[32];
  snprintf(addr, sizeof addr, "127.0.0.1:%u", port);
  int fd = -1;
  autd3_err_t e = autd3__net_connect_addr(addr, 5000, "test", " (is the server running?)", &fd);
  ASSERT_EQ(e, AUTD3_E_CONNECT);
  ASSERT_CONTAINS(autd3_last_error(), "is the server running?");
  ASSERT_ERR(autd3__net_connect_addr("nonsense", 100, "test", NULL, &fd), AUTD3_E_INVALID_OPTION);
}

struct poker {
  autd3_net_wake_t *wk;
  autd3__sem_t go;
};

static void *poke_later(void *p) {
  struct poker *k = p;
  if (autd3__sem_wait(&k->go) == AUTD3_OK) autd3__net_wake_poke(k->wk);
  return NULL;
}

/* A poll loop sleeps on the wake socket/pipe until another thread pokes it. */
TEST(wake_from_another_thread) {
  autd3_net_wake_t wk;
  ASSERT_OK(autd3__net_wake_open(&wk));
  autd3_net_poll_t p = {.fd = wk.r, .events = AUTD3_NET_IN};
  ASSERT_EQ(autd3__net_poll(&p, 1, 0), 0);
  struct poker k = {.wk = &wk};
  ASSERT_OK(autd3__sem_init(&k.go, 0));
  autd3__thread_t th;
  ASSERT_OK(autd3__thread_start(&th, poke_later, &k, "poker"));
  autd3__sem_post(&k.go);
  int r = 0;
  for (int i = 0; i < 100 && r == 0; i++) r = autd3__net_poll(&p, 1, 100);
  ASSERT_EQ(r, 1);
  ASSERT_EQ(p.revents & AUTD3_NET_IN, AUTD3_NET_IN);
  autd3__thread_join(&th);
  autd3__net_wake_drain(&wk);
  ASSERT_EQ(autd3__net_poll(&p, 1, 0), 0); /* drained */
  autd3__net_wake_poke(&wk);
  autd3__net_wake_poke(&wk);
  ASSERT_EQ(autd3__net_poll(&p, 1, 1000), 1);
  autd3__net_wake_drain(&wk);
  ASSERT_EQ(autd3__net_poll(&p, 1, 0), 0);
  autd3__net_wake_close(&wk);
  autd3__sem_destroy(&k.go);
}
