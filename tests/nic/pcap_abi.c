/* Compile-time check: the declarations of src/nic/pcap_api.h are libpcap's
 * ABI as the build host's pcap/pcap.h states it (the library is loaded at run
 * time, so nothing else compares them). Built when pcap.h is found. */
#define _DEFAULT_SOURCE /* u_int, u_char of pcap.h */
#include <pcap/pcap.h>
#include <stddef.h>

#include "nic/pcap_api.h"

_Static_assert(offsetof(struct pcap_pkthdr, caplen) == offsetof(autd3__pcap_pkthdr_t, caplen), "pcap_pkthdr layout");
_Static_assert(offsetof(struct pcap_pkthdr, len) == offsetof(autd3__pcap_pkthdr_t, len), "pcap_pkthdr layout");
_Static_assert(sizeof(struct bpf_program) == sizeof(autd3__bpf_program_t), "bpf_program layout");
_Static_assert(offsetof(struct bpf_program, bf_insns) == offsetof(autd3__bpf_program_t, bf_insns), "bpf_program layout");
_Static_assert(offsetof(pcap_if_t, next) == offsetof(autd3__pcap_if_t, next), "pcap_if_t layout");
_Static_assert(offsetof(pcap_if_t, name) == offsetof(autd3__pcap_if_t, name), "pcap_if_t layout");
_Static_assert(offsetof(pcap_if_t, description) == offsetof(autd3__pcap_if_t, description), "pcap_if_t layout");
_Static_assert(offsetof(pcap_if_t, flags) == offsetof(autd3__pcap_if_t, flags), "pcap_if_t layout");
_Static_assert(PCAP_ERRBUF_SIZE == AUTD3_PCAP_ERRBUF_SIZE && PCAP_D_IN == AUTD3_PCAP_D_IN &&
                   PCAP_ERROR_NO_SUCH_DEVICE == AUTD3_PCAP_ERROR_NO_SUCH_DEVICE &&
                   PCAP_ERROR_PERM_DENIED == AUTD3_PCAP_ERROR_PERM_DENIED &&
                   PCAP_ERROR_PROMISC_PERM_DENIED == AUTD3_PCAP_ERROR_PROMISC_PERM_DENIED &&
                   PCAP_NETMASK_UNKNOWN == AUTD3_PCAP_NETMASK_UNKNOWN,
               "pcap constants");

/* An object file needs something in it. */
int autd3_test_pcap_abi_checked(void) { return 1; }
