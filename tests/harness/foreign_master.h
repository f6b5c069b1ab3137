/*
 * foreign_master.h: a foreign EtherCAT master for tests, one without our lock (another host, another program):
 * a raw sender of BRD frames (AL status) every millisecond from source MAC 02:fe:ed:00:00:01 on
 * $AUTD3_TEST_IFNAME, on its own thread, draining its replies. Used by the shared EtherCAT link scenarios and
 * the `autd3` tool's tests.
 *
 *   autd3_test_foreign_t f;
 *   autd3_test_foreign_start(&f);   // returns once 5 frames went out
 *   ...
 *   autd3_test_foreign_stop(&f);    // and 50 ms for its last replies to pass
 *
 * Header-only; needs the test harness (test.h), pthreads and libautd3's internal NIC layer.
 */
#ifndef AUTD3_TEST_FOREIGN_MASTER_H
#define AUTD3_TEST_FOREIGN_MASTER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "harness/test.h"
#include "nic/nic.h"
#include "platform/platform.h"

#define AUTD3_TEST_FOREIGN_MAC "02:fe:ed:00:00:01"

typedef struct autd3_test_foreign {
  pthread_t th;
  autd3_nic_t *nic;
  atomic_bool stop;
  atomic_long sent;
} autd3_test_foreign_t;

static inline void *autd3_test_foreign_run(void *arg) {
  autd3_test_foreign_t *f = arg;
  uint8_t fr[60] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0xfe, 0xed, 0x00, 0x00, 0x01, 0x88, 0xa4};
  /* EtherCAT header (length 14, type 1), then BRD AL status (0x0130), 2 bytes */
  fr[14] = 14, fr[15] = 0x10;
  fr[16] = 0x07, fr[17] = 0x42, fr[20] = 0x30, fr[21] = 0x01, fr[22] = 2;
  while (!atomic_load(&f->stop)) {
    if (autd3__nic_send(f->nic, fr, sizeof fr) == AUTD3_OK)
      atomic_fetch_add(&f->sent, 1);
    uint8_t buf[AUTD3_NIC_MAX_FRAME];
    size_t len;
    while (autd3__nic_recv(f->nic, buf, sizeof buf, &len, 0) == AUTD3_OK) {
    } /* drain its replies */
    autd3__sleep_ns(1000000u);
  }
  return NULL;
}

static inline void autd3_test_foreign_start(autd3_test_foreign_t *f) {
  memset(f, 0, sizeof *f);
  ASSERT_OK(autd3__nic_open(getenv("AUTD3_TEST_IFNAME"), AUTD3_NIC_AUTO, &f->nic));
  ASSERT_EQ(pthread_create(&f->th, NULL, autd3_test_foreign_run, f), 0);
  while (atomic_load(&f->sent) < 5)
    autd3__sleep_ns(1000000u);
}

static inline void autd3_test_foreign_stop(autd3_test_foreign_t *f) {
  atomic_store(&f->stop, true);
  pthread_join(f->th, NULL);
  autd3__nic_close(f->nic);
  autd3__sleep_ns(50000000u); /* its last replies are gone */
}

#endif
