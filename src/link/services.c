/*
 * The services table for links built outside libautd3 (link_driver.h
 * autd3_link_services()): thin adapters from the public, opaque types to the
 * internal platform, NIC, capture, guard, identity, EtherCAT bring-up and recovery code, so that the SOEM
 * and EtherCrab libraries use the very mechanisms echocat uses instead of
 * compiling private copies of them.
 */
#include "autd3/link_driver.h"
#include "ecat/bringup.h"
#include "ecat/dc.h"
#include "ecat/identity.h"
#include "ecat/recovery.h"
#include "link/pacer.h"
#include "nic/capture.h"
#include "nic/master_guard.h"
#include "nic/nic.h"
#include "platform/platform.h"

/* The public handles are the internal ones under another name. */
_Static_assert(sizeof(autd3_link_thread_t) == sizeof(autd3__thread_t), "thread handle layout");

static autd3_err_t svc_thread_start(autd3_link_thread_t *t, void *(*fn)(void *), void *arg, const char *name) {
  autd3__thread_t th = {0};
  autd3_err_t e = autd3__thread_start(&th, fn, arg, name);
  t->handle = th.handle;
  return e;
}
static void svc_thread_join(autd3_link_thread_t *t) {
  autd3__thread_t th = {t->handle};
  autd3__thread_join(&th);
}

static autd3_err_t svc_nic_open(const char *ifname, autd3_link_nic_t **out) {
  autd3_nic_t *n = NULL;
  autd3_err_t e = autd3__nic_open(ifname, AUTD3_NIC_AUTO, &n);
  *out = (autd3_link_nic_t *)n;
  return e;
}
static autd3_err_t svc_nic_send(autd3_link_nic_t *nic, const uint8_t *frame, size_t len) {
  return autd3__nic_send((autd3_nic_t *)nic, frame, len);
}
static autd3_err_t svc_nic_recv(autd3_link_nic_t *nic, uint8_t *buf, size_t cap, size_t *len, uint64_t deadline_ns) {
  return autd3__nic_recv((autd3_nic_t *)nic, buf, cap, len, deadline_ns);
}
static void svc_nic_mac(const autd3_link_nic_t *nic, uint8_t mac[6]) { autd3__nic_mac((const autd3_nic_t *)nic, mac); }
static void svc_nic_close(autd3_link_nic_t *nic) {
  if (nic != NULL)
    autd3__nic_close((autd3_nic_t *)nic);
}

static autd3_err_t svc_tap_start(const char *ifname, const char *capture_path, const uint8_t *master_mac,
                                 int rt_priority, int rt_cpu, autd3_link_tap_t **out) {
  const autd3_tap_options_t o = {capture_path, master_mac, rt_priority, rt_cpu};
  autd3_capture_tap_t *t = NULL;
  autd3_err_t e = autd3__tap_start(ifname, &o, &t);
  *out = (autd3_link_tap_t *)t;
  return e;
}
static uint64_t svc_tap_foreign(autd3_link_tap_t *tap, uint8_t mac[6]) {
  return autd3__tap_foreign((autd3_capture_tap_t *)tap, mac);
}
static uint64_t svc_tap_frames(const autd3_link_tap_t *tap) {
  return autd3__capture_tap_frames((const autd3_capture_tap_t *)tap);
}
static void svc_tap_stop(autd3_link_tap_t *tap) { autd3__capture_tap_stop((autd3_capture_tap_t *)tap); }

static autd3_err_t svc_foreign_error(const char *who, const char *ifname, const char *when, autd3_link_tap_t *tap) {
  uint8_t mac[6] = {0};
  uint64_t n = autd3__tap_foreign((autd3_capture_tap_t *)tap, mac);
  return autd3__foreign_master_error(who, ifname, when, n, mac);
}

static autd3_err_t svc_guard_take(const char *ifname, const char *who, autd3_link_master_guard_t **out) {
  autd3_master_guard_t *g = NULL;
  autd3_err_t e = autd3__master_guard_take(ifname, AUTD3_NIC_AUTO, who, &g);
  *out = (autd3_link_master_guard_t *)g;
  return e;
}
static void svc_guard_release(autd3_link_master_guard_t *g) { autd3__master_guard_release((autd3_master_guard_t *)g); }

static const autd3_link_services_t services = {
    .version = AUTD3_LINK_SERVICES_VERSION,
    .size = (uint32_t)sizeof(autd3_link_services_t),
    .set_error = autd3_set_error,
    .now_ns = autd3__now_ns,
    .realtime_ns = autd3__realtime_ns,
    .sleep_until_ns = autd3__sleep_until_ns,
    .sleep_ns = autd3__sleep_ns,
    .pacer_init = autd3__pacer_init,
    .pacer_anchor = autd3__pacer_anchor,
    .pacer_wait = autd3__pacer_wait,
    .thread_start = svc_thread_start,
    .thread_join = svc_thread_join,
    .thread_set_rt = autd3__thread_set_rt,
    .nic_open = svc_nic_open,
    .nic_send = svc_nic_send,
    .nic_recv = svc_nic_recv,
    .nic_mac = svc_nic_mac,
    .nic_close = svc_nic_close,
    .nic_list = autd3__nic_list,
    .tap_start = svc_tap_start,
    .tap_foreign = svc_tap_foreign,
    .tap_frames = svc_tap_frames,
    .tap_stop = svc_tap_stop,
    .master_guard_take = svc_guard_take,
    .master_guard_release = svc_guard_release,
    .mac_format = autd3__mac_format,
    .foreign_master_error = svc_foreign_error,
    .ecat_is_autd = autd3__ecat_is_autd,
    .ecat_check_identity = autd3__ecat_check_identity,
    .ecat_recovery_create = autd3__ecat_recovery_create,
    .ecat_recovery_check = autd3__ecat_recovery_check,
    .ecat_recovery_free = autd3__ecat_recovery_free,
    .autd3__ecat_dc_offset = autd3__ecat_dc_offset,
    .autd3__ecat_dc_rebase_offset = autd3__ecat_dc_rebase_offset,
    .autd3__ecat_dc_sync0_restart = autd3__ecat_dc_sync0_restart,
    .ecat_bringup = autd3__ecat_bringup_run,
    .nic_probe = autd3__nic_probe,
    .nic_is_loopback = autd3__nic_is_loopback,
};

const autd3_link_services_t *autd3_link_services(uint32_t version) {
  if (version == 0 || version > AUTD3_LINK_SERVICES_VERSION) {
    autd3_set_error(AUTD3_E_INVALID_ARGUMENT,
                    "autd3_link_services: the link asks for services version %u, this libautd3 offers 1..%u "
                    "(link built against a newer libautd3?)",
                    (unsigned)version, (unsigned)AUTD3_LINK_SERVICES_VERSION);
    return NULL;
  }
  return &services;
}
