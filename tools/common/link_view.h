/*
 * What the tools show of a link, in one place so that autd3-perftest, `autd3 watch` and `autd3 synctune` say
 * the same thing the same way: device state names, the link statistics (autd3_link_stats_t) and one device's
 * counters (autd3_link_device_info_t) as text lines and as JSON, with "not measured" (JSON null) wherever the
 * link's `measured` bits say it cannot know (docs/architecture.md "Link statistics"). Public API only.
 */
#ifndef AUTD3_TOOLS_LINK_VIEW_H
#define AUTD3_TOOLS_LINK_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "autd3/link.h"

/* OP, SAFE-OP, SAFE-OP+ERR, LOST, OTHER or UNKNOWN. */
const char *autd3_tool_device_state_name(uint8_t state);

/* Mean exchange time in ns (0 without exchanges). */
uint64_t autd3_tool_mean_exchange_ns(const autd3_link_stats_t *s);

/* The statistics as "name : value" lines, each prefixed by `indent`: cycles, stale, lost, phase, exchange. */
void autd3_tool_link_stats_text(FILE *f, const autd3_link_stats_t *s, const char *indent);

/* The statistics as one JSON object: {"cycles","stale_cycles","lost_cycles","phase_excursions",
 * "worst_phase_deviation_ns","exchanges","mean_exchange_ns","worst_exchange_ns"}, null where not measured.
 * Returns the length written (truncated to cap - 1, NUL-terminated). */
size_t autd3_tool_link_stats_json(const autd3_link_stats_t *s, char *buf, size_t cap);

/* One device's counters as one JSON object: {"stale_cycles","resets","esc":{"crc_errors":[4],"phy_errors":[4],
 * "forwarded_errors":[4],"lost_links":[4],"processing_unit_errors","pdi_errors"}|null,"dc_deviation_ns"|null}. */
size_t autd3_tool_device_info_json(const autd3_link_device_info_t *d, char *buf, size_t cap);

/* The ESC error counters of one device in one short text: the non-zero ones as KIND@PORT=N ("crc@1=3 lost@0=2
 * pdi=4"; KIND crc, phy, fwd, lost, and pu, pdi without a port), "none" when all are zero, "-" when not read. */
void autd3_tool_device_counters_text(const autd3_link_device_info_t *d, char *buf, size_t cap);

#endif
