/*
 * The libpcap back end's table when the library was built without libpcap
 * (AUTD3_WITH_PCAP=OFF). Callers that only report on the back end
 * (the `autd3 doctor` tool) link the same symbol on every build; the links
 * never reach it, since nic.c offers no pcap back end in such a build.
 */
#include "autd3/link_driver.h"
#include "nic/pcap_api.h"

autd3_err_t autd3__pcap_api(const autd3__pcap_api_t **out) {
  *out = NULL;
  return autd3_set_error(AUTD3_E_NOT_BUILT, "nic: this build of libautd3 has no libpcap back end (configured with AUTD3_WITH_PCAP=OFF)");
}
