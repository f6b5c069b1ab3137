#include "link_flags.h"

#include <stdio.h>

#include "autd3/error.h"

#define FAIL(...) return (snprintf(err, cap, __VA_ARGS__), false)

bool autd3_tool_link_option(const autd3_tool_link_flags_t *f, autd3_link_option_t *out, char *err, size_t cap) {
  autd3_link_kind_t kind;
  if (autd3_link_kind_parse(f->link, &kind) != AUTD3_OK) FAIL("--link: %s", autd3_last_error());
  autd3_link_option_t o = autd3_link_option_default(kind);
  autd3_ethercat_option_t *ec = autd3_link_option_ethercat(&o);
  if (!ec && (f->interface || f->shift_set || f->capture))
    FAIL("--interface / --shift-us / --capture are only valid with an EtherCAT link (echocat, soem, ethercrab), not %s", f->link);
  if (kind != AUTD3_LINK_EMULATOR && f->timing) FAIL("--timing is only valid with --link emulator, not %s", f->link);
  if (kind != AUTD3_LINK_REMOTE && f->address) FAIL("--address is only valid with --link remote, not %s", f->link);
  if (kind != AUTD3_LINK_TWINCAT && (f->twincat_server || f->twincat_port >= 0 || f->ams_net_id || f->client_ams_net_id))
    FAIL("--twincat-server / --twincat-port / --ams-net-id / --client-ams-net-id are only valid with --link twincat, not %s",
         f->link);
  if (ec) {
    ec->interface = f->interface;
    ec->capture_path = f->capture; /* both directions in one pcap file (src/nic/capture.h) */
    ec->sync0_period_ns = f->cycle_us * 1000u;
    ec->send_cycle_ns = 0; /* = sync0 period */
    ec->sync0_shift_ns = f->shift_us * 1000;
  }
  switch (kind) {
    case AUTD3_LINK_EMULATOR:
      o.u.emulator.cycle_ns = f->cycle_us * 1000u;
      if (f->timing && autd3_timing_model_parse(f->timing, &o.u.emulator.timing) != AUTD3_OK)
        FAIL("--timing: %s", autd3_last_error());
      break;
    case AUTD3_LINK_REMOTE:
      if (f->address) o.u.remote.address = f->address;
      break;
    case AUTD3_LINK_TWINCAT:
      o.u.twincat.server_ip = f->twincat_server;
      if (f->twincat_port >= 0) o.u.twincat.server_port = (uint16_t)f->twincat_port;
      o.u.twincat.server_ams_net_id = f->ams_net_id;
      o.u.twincat.client_ams_net_id = f->client_ams_net_id;
      o.u.twincat.task_cycle_us = f->cycle_us;
      break;
    default: break;
  }
  *out = o;
  return true;
}
