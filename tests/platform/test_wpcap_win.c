/* Npcap's wpcap.dll loaded at run time (src/nic/wpcap.c), under wine: wine
 * 8's wpcap.dll forwards to the host's libpcap and names adapters
 * "\Device\NPF_{...}" with the Linux interface name as description.
 * win_run.sh makes the veth pair autd3w0/autd3w1 in the case's namespace
 * (AUTD3_TEST_PEER). Registered for wine only (tests/platform/CMakeLists.txt). */
#include <stdlib.h>
#include <string.h>

#include "autd3/error.h"
#include "harness/test.h"
#include "nic/wpcap.h"
#include "platform/platform.h"

TEST(missing_dll_names_npcap) {
  const autd3__wpcap_t *p = NULL;
  ASSERT_ERR(autd3__wpcap_load("autd3-no-such-wpcap.dll", &p), AUTD3_E_NOT_BUILT);
  ASSERT_CONTAINS(autd3_last_error(), "Npcap");
  ASSERT_CONTAINS(autd3_last_error(), "WinPcap API-compatible Mode");
}

#define N 32
#define NAME 128
#define DESC 256

TEST(lists_npf_adapters) {
  if (getenv("AUTD3_TEST_PEER") == NULL) SKIP("needs the veth pair that tests/platform/win_run.sh makes");
  const autd3__wpcap_t *p = NULL;
  ASSERT_OK(autd3__wpcap_load(NULL, &p));
  ASSERT_TRUE(p->lib_version() != NULL);
  static char names[N][NAME], descs[N][DESC];
  int found = -1;
  /* The pair is made just before us: look again for a while. */
  for (int round = 0; round < 100 && found < 0; round++) {
    size_t n = 0;
    ASSERT_OK(autd3__wpcap_list(&names[0][0], NAME, &descs[0][0], DESC, N, &n));
    for (size_t i = 0; i < n; i++)
      if (strcmp(descs[i], "autd3w0") == 0) found = (int)i;
    if (found < 0) autd3__sleep_ns(50000000);
  }
  ASSERT_GE(found, 0);
  ASSERT_TRUE(strncmp(names[found], "\\Device\\NPF_{", 13) == 0);
  ASSERT_GT(strlen(names[found]), 31); /* longer than the 32 bytes the Linux listing allows */
}
