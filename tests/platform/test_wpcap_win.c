/* The NIC layer on Windows (src/nic: nic.c, nic_pcap.c on pcap_load.c and wpcap.c), under
 * wine: wine 8's wpcap.dll forwards to the host's libpcap and names adapters
 * "\Device\NPF_{...}" with the Linux interface name as description.
 * win_run.sh makes the veth pair autd3w0/autd3w1 in the case's namespace
 * (AUTD3_TEST_PEER). Registered for wine only (tests/platform/CMakeLists.txt). */
#include <stdlib.h>
#include <string.h>

#include "autd3/error.h"
#include "harness/test.h"
#include "nic/nic.h"
#include "nic/pcap_load.h"
#include "platform/platform.h"

TEST(missing_dll_names_npcap) {
  const autd3__pcap_api_t *p = NULL;
  ASSERT_ERR(autd3__pcap_load("autd3-no-such-wpcap.dll", &p), AUTD3_E_NOT_BUILT);
  ASSERT_CONTAINS(autd3_last_error(), "Npcap");
  ASSERT_CONTAINS(autd3_last_error(), "WinPcap API-compatible Mode");
}

/* The Npcap name of the adapter whose description starts with `linux_name`
 * (allocated), waiting for the pair the peer makes just before us. */
static char *npf_name_of(const char *linux_name) {
  if (getenv("AUTD3_TEST_PEER") == NULL) SKIP("needs the veth pair that tests/platform/win_run.sh makes");
  for (int round = 0; round < 200; round++) {
    autd3_nic_names_t l;
    ASSERT_OK(autd3__nic_names(&l));
    char *found = NULL;
    for (size_t i = 0; i < l.count; i++)
      if (strncmp(l.desc[i], linux_name, strlen(linux_name)) == 0 && !found) {
        found = malloc(strlen(l.name[i]) + 1);
        strcpy(found, l.name[i]);
      }
    autd3__nic_names_free(&l);
    if (found) return found;
    autd3__sleep_ns(50000000);
  }
  TEST_FAIL_("no adapter described as %s", linux_name);
  return NULL;
}

TEST(lists_npf_adapters) {
  char *n = npf_name_of("autd3w0");
  ASSERT_TRUE(strncmp(n, "\\Device\\NPF_{", 13) == 0);
  ASSERT_GT(strlen(n), 31); /* longer than the 32 bytes the services' nic_list allows */
  free(n);
}

/* nic.h's match rule: Npcap name, else description/friendly name ignoring
 * case, else a unique part of one; several is NO_INTERFACE naming them. */
TEST(selects_by_name_or_description) {
  char *w0 = npf_name_of("autd3w0"), *w1 = npf_name_of("autd3w1"), *r = NULL;
  ASSERT_OK(autd3__nic_resolve(w0, &r));
  ASSERT_STREQ(r, w0);
  free(r);
  ASSERT_OK(autd3__nic_resolve("AUTD3W1", &r));
  ASSERT_STREQ(r, w1);
  free(r);
  ASSERT_OK(autd3__nic_resolve("3w0", &r));
  ASSERT_STREQ(r, w0);
  free(r);
  ASSERT_ERR(autd3__nic_resolve("autd3w", &r), AUTD3_E_NO_INTERFACE);
  ASSERT_CONTAINS(autd3_last_error(), "matches 2 adapters");
  ASSERT_CONTAINS(autd3_last_error(), w0);
  ASSERT_CONTAINS(autd3_last_error(), w1);
  ASSERT_TRUE(r == NULL);
  ASSERT_ERR(autd3__nic_resolve("no-such-adapter", &r), AUTD3_E_NO_INTERFACE);
  ASSERT_CONTAINS(autd3_last_error(), "no-such-adapter");
  ASSERT_CONTAINS(autd3_last_error(), w0); /* the adapters there are */
  autd3_nic_t *nic = (autd3_nic_t *)&nic;
  ASSERT_ERR(autd3__nic_open("no-such-adapter", AUTD3_NIC_AUTO, &nic), AUTD3_E_NO_INTERFACE);
  ASSERT_TRUE(nic == NULL);
  ASSERT_ERR(autd3__nic_open(w0, AUTD3_NIC_AF_PACKET, &nic), AUTD3_E_NOT_BUILT);
  free(w0);
  free(w1);
}

/* Raw EtherCAT frames both ways through wpcap.dll; a handle never reads back
 * its own frames (wine has no direction filter: nic_pcap.c's source MAC check
 * is there for captures that loop them back). */
TEST(raw_roundtrip) {
  char *w0 = npf_name_of("autd3w0"), *w1 = npf_name_of("autd3w1");
  autd3_nic_t *a = NULL, *b = NULL;
  ASSERT_OK(autd3__nic_open(w0, AUTD3_NIC_AUTO, &a));
  ASSERT_OK(autd3__nic_open("autd3w1", AUTD3_NIC_PCAP, &b));
  uint8_t f[60] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0c, 0xec, 0xa7, 1, 2, 3, 0x88, 0xa4}, buf[AUTD3_NIC_MAX_FRAME];
  for (int k = 0; k < 20; k++) {
    f[14] = (uint8_t)k;
    f[11] = 3; /* a's frames */
    ASSERT_OK(autd3__nic_send(a, f, sizeof f));
    size_t len = 0;
    /* generous: no timing is asserted (wine delivers after libpcap's 1 ms timeout) */
    ASSERT_OK(autd3__nic_recv(b, buf, sizeof buf, &len, autd3__now_ns() + 10000000000ull));
    ASSERT_EQ(len, sizeof f);
    ASSERT_EQ(buf[14], k);
    f[11] = 4; /* b answers from another source, as a device does */
    ASSERT_OK(autd3__nic_send(b, f, sizeof f));
    ASSERT_OK(autd3__nic_recv(a, buf, sizeof buf, &len, autd3__now_ns() + 10000000000ull));
    ASSERT_EQ(buf[11], 4); /* not a's own frame read back */
    ASSERT_EQ(buf[14], k);
  }
  size_t len = 0;
  ASSERT_ERR(autd3__nic_recv(a, buf, sizeof buf, &len, autd3__now_ns() + 50000000ull), AUTD3_E_TIMEOUT);
  autd3__nic_close(a);
  autd3__nic_close(b);
  free(w0);
  free(w1);
}

/* The passive tap (capture files, the SOEM link's watch for another master)
 * on libpcap: it sees the frames this process sends on the adapter through
 * another handle and the ones arriving, never sends itself. */
TEST(tap_sees_both_directions) {
  char *w0 = npf_name_of("autd3w0");
  autd3_nic_t *a = NULL, *b = NULL, *tap = NULL;
  ASSERT_OK(autd3__nic_open_tap("autd3w0", &tap));
  ASSERT_STREQ(autd3__nic_io_path(tap), "libpcap (tap)");
  ASSERT_OK(autd3__nic_open(w0, AUTD3_NIC_AUTO, &a));
  ASSERT_OK(autd3__nic_open("autd3w1", AUTD3_NIC_PCAP, &b));
  uint8_t f[60] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0c, 0xec, 0xa7, 1, 2, 3, 0x88, 0xa4}, buf[AUTD3_NIC_MAX_FRAME];
  f[11] = 3; /* out of autd3w0, through another handle */
  ASSERT_OK(autd3__nic_send(a, f, sizeof f));
  f[11] = 4; /* into autd3w0 */
  ASSERT_OK(autd3__nic_send(b, f, sizeof f));
  bool out = false, in = false;
  size_t len = 0;
  uint64_t end = autd3__now_ns() + 10000000000ull;
  while (!(out && in) && autd3__nic_recv(tap, buf, sizeof buf, &len, end) == AUTD3_OK) {
    ASSERT_EQ(len, sizeof f);
    out |= buf[11] == 3, in |= buf[11] == 4;
  }
  ASSERT_TRUE(out);
  ASSERT_TRUE(in);
  autd3__nic_close(tap);
  autd3__nic_close(a);
  autd3__nic_close(b);
  free(w0);
}
