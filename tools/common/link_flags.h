/*
 * The per-link command-line flags that autd3-perftest and autd3-remote-server
 * share (--link, --cycle-us, --shift-us, --interface, --timing, --address,
 * --twincat-*), turned into a tagged link option in one place so the two
 * tools cannot drift apart. Public API only.
 */
#ifndef AUTD3_TOOLS_LINK_FLAGS_H
#define AUTD3_TOOLS_LINK_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autd3/link.h"

typedef struct autd3_tool_link_flags {
  const char *link;                 /* link kind name */
  uint32_t cycle_us;                /* emulator cycle, EtherCAT SYNC0 period, TwinCAT task cycle */
  int32_t shift_us;                 /* EtherCAT SYNC0 shift */
  bool shift_set;                   /* --shift-us was given */
  const char *interface, *timing, *address, *twincat_server, *ams_net_id, *client_ams_net_id;
  int twincat_port;                 /* -1 = default */
  const char *capture;              /* EtherCAT links: capture_path (--capture FILE.pcap), NULL = none */
} autd3_tool_link_flags_t;

/*
 * Fill `*out` with the defaults of the named kind and apply the flags. A flag
 * that belongs to another link is refused rather than silently ignored.
 * Returns false with a message in `err` (without the tool's name).
 */
bool autd3_tool_link_option(const autd3_tool_link_flags_t *f, autd3_link_option_t *out, char *err, size_t cap);

#endif
