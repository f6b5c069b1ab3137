/* One master per chain (src/nic/master_guard.h) and the advisory file lock
 * under it (platform.h autd3__filelock_*): the lock is exclusive across open
 * files (so across processes), names its holder and goes away with its file;
 * the guard refuses an interface that is locked or where another master's
 * frames arrive, over a veth pair in a private network namespace. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "autd3/link_driver.h"
#include "harness/netns.h"
#include "harness/test.h"
#include "nic/master_guard.h"
#include "nic/nic.h"
#include "platform/platform.h"

TEST(filelock_exclusive_and_released) {
  char name[64];
  snprintf(name, sizeof name, "autd3-test-lock-%ld.lock", (long)getpid());
  autd3__filelock_t a, b;
  bool busy = true;
  long pid = -1;
  ASSERT_OK(autd3__filelock_try(name, &a, &busy, &pid));
  ASSERT_FALSE(busy);
  ASSERT_TRUE(a.handle >= 0);
  ASSERT_EQ(access(a.path, F_OK), 0);
  /* a second open of the lock (another process would be no different) is refused and told the holder */
  ASSERT_OK(autd3__filelock_try(name, &b, &busy, &pid));
  ASSERT_TRUE(busy);
  ASSERT_EQ(pid, getpid());
  ASSERT_EQ(b.handle, -1);
  autd3__filelock_release(&b); /* not held: no-op */
  autd3__filelock_release(&a);
  ASSERT_EQ(a.handle, -1);
  ASSERT_NE(access(a.path, F_OK), 0); /* the file went with the lock */
  ASSERT_OK(autd3__filelock_try(name, &b, &busy, &pid));
  ASSERT_FALSE(busy);
  autd3__filelock_release(&b);
}

TEST(filelock_bad_name) {
  autd3__filelock_t a;
  bool busy;
  long pid;
  ASSERT_ERR(autd3__filelock_try("a/b", &a, &busy, &pid), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_ERR(autd3__filelock_try("", &a, &busy, &pid), AUTD3_E_INVALID_ARGUMENT);
}

TEST(frame_from_ignores_the_first_esc_bit) {
  const uint8_t mine[6] = {0x0C, 0xEC, 0xA7, 1, 2, 3};
  uint8_t f[14] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0C, 0xEC, 0xA7, 1, 2, 3, 0x88, 0xA4};
  ASSERT_TRUE(autd3__frame_from(f, mine));
  f[6] |= 0x02; /* as returned by the first ESC */
  ASSERT_TRUE(autd3__frame_from(f, mine));
  f[11] = 4;
  ASSERT_FALSE(autd3__frame_from(f, mine));
  char s[18];
  autd3__mac_format(f + 6, s);
  ASSERT_STREQ(s, "0e:ec:a7:01:02:04");
}

/* A quiet interface is taken; a second take is refused by the lock with the
 * holder's pid; after release it is free again; two opens get different MACs. */
TEST(guard_lock) {
  autd3_test_netns_veth("guard_lock", "g3a", "g3b");
  autd3_master_guard_t *g = NULL, *h = NULL;
  ASSERT_OK(autd3__master_guard_take("g3a", AUTD3_NIC_AUTO, "test", &g));
  ASSERT_ERR(autd3__master_guard_take("g3a", AUTD3_NIC_AUTO, "test", &h), AUTD3_E_SECOND_MASTER);
  ASSERT_TRUE(h == NULL);
  ASSERT_CONTAINS(autd3_last_error(), "g3a");
  char pid[32];
  snprintf(pid, sizeof pid, "process %ld", (long)getpid());
  ASSERT_CONTAINS(autd3_last_error(), pid);
  ASSERT_OK(autd3__master_guard_take("g3b", AUTD3_NIC_AUTO, "test", &h)); /* another interface: its own lock */
  uint8_t m1[6], m2[6];
  autd3__master_guard_mac(g, m1);
  autd3__master_guard_mac(h, m2);
  ASSERT_TRUE(memcmp(m1, m2, 6) != 0);
  ASSERT_EQ(m1[0], 0x0C);
  autd3__master_guard_release(h);
  autd3__master_guard_release(g);
  ASSERT_OK(autd3__master_guard_take("g3a", AUTD3_NIC_AUTO, "test", &g));
  autd3__master_guard_release(g);
  autd3__master_guard_release(NULL);
}

typedef struct {
  autd3_nic_t *nic;
  atomic_bool stop;
} sender_t;

static void *send_loop(void *arg) {
  sender_t *s = arg;
  uint8_t f[60] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0xfe, 0xed, 0x00, 0x00, 0x02, 0x88, 0xa4, 2, 0x10};
  while (!atomic_load(&s->stop)) {
    autd3__nic_send(s->nic, f, sizeof f);
    autd3__sleep_ns(1000000u);
  }
  return NULL;
}

/* Another master's frames arrive during the listen: refused, naming the
 * interface and their source MAC; nothing is held afterwards. */
TEST(guard_hears_another_master) {
  autd3_test_netns_veth("guard_hears_another_master", "g4a", "g4b");
  sender_t s = {0};
  ASSERT_OK(autd3__nic_open("g4b", AUTD3_NIC_AUTO, &s.nic));
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, send_loop, &s), 0);
  autd3_master_guard_t *g = NULL;
  autd3_err_t e = autd3__master_guard_take("g4a", AUTD3_NIC_AUTO, "test", &g);
  atomic_store(&s.stop, true);
  pthread_join(th, NULL);
  autd3__nic_close(s.nic);
  ASSERT_ERR(e, AUTD3_E_SECOND_MASTER);
  ASSERT_TRUE(g == NULL);
  printf("message: %s\n", autd3_last_error());
  ASSERT_CONTAINS(autd3_last_error(), "g4a");
  ASSERT_CONTAINS(autd3_last_error(), "02:fe:ed:00:00:02");
  autd3__sleep_ns(20000000u); /* its last frame is read */
  autd3_nic_t *drain = NULL;
  ASSERT_OK(autd3__nic_open("g4a", AUTD3_NIC_AUTO, &drain));
  autd3__nic_close(drain);
  ASSERT_OK(autd3__master_guard_take("g4a", AUTD3_NIC_AUTO, "test", &g)); /* the failed take held nothing */
  autd3__master_guard_release(g);
}

TEST(guard_no_interface) {
  autd3_master_guard_t *g = NULL;
  ASSERT_ERR(autd3__master_guard_take("autd3-nosuchif", AUTD3_NIC_AUTO, "test", &g), AUTD3_E_NO_INTERFACE);
  ASSERT_TRUE(g == NULL);
}
