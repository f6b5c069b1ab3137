/* One master per chain: the per-interface lock and the pre-open listen (master_guard.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "nic/master_guard.h"
#include "platform/platform.h"

struct autd3_master_guard {
  autd3__filelock_t lock;
  uint8_t mac[6];
};

void autd3__mac_format(const uint8_t mac[6], char out[18]) {
  snprintf(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
}

autd3_err_t autd3__foreign_master_error(const char *who, const char *ifname, const char *when, uint64_t frames,
                                        const uint8_t mac[6]) {
  char m[18];
  autd3__mac_format(mac, m);
  return autd3_set_error(AUTD3_E_SECOND_MASTER,
                         "%s: another EtherCAT master appeared on interface %s %s: %llu EtherCAT frame%s from source "
                         "MAC %s that %s did not send; one master per chain: the link stops",
                         who, ifname, when, (unsigned long long)frames, frames == 1 ? "" : "s", m, who);
}

/* The lock's name. An interface name is unique per network namespace only
 * (every test namespace has its own "autd3m0"), so the namespace's id is part
 * of it where the OS has one. Characters a file name may not carry (Npcap's
 * "\Device\NPF_{...}") become '_'; a long name keeps its end, where the
 * GUID is. */
static void lock_name(const char *ifname, char *out, size_t cap) {
  char safe[64];
  size_t n = strlen(ifname), skip = n >= sizeof safe ? n - (sizeof safe - 1) : 0, k = 0;
  for (const char *p = ifname + skip; *p; p++)
    safe[k++] = (char)((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
                               *p == '.' || *p == '{' || *p == '}'
                           ? *p
                           : '_');
  safe[k] = 0;
  uint64_t ns = autd3__net_namespace_id();
  if (ns != 0)
    snprintf(out, cap, "autd3-%s-net%llu.lock", safe, (unsigned long long)ns);
  else
    snprintf(out, cap, "autd3-%s.lock", safe);
}

/* Listen on `ifname` for up to `ns` for any EtherCAT frame: nothing of ours
 * is on the wire yet, so whatever arrives belongs to another master. */
static autd3_err_t listen_for_master(const char *ifname, autd3_nic_backend_t backend, const char *who, uint64_t ns) {
  autd3_nic_t *nic = NULL;
  autd3_err_t e = autd3__nic_open(ifname, backend, &nic);
  if (e != AUTD3_OK)
    return e;
  uint8_t buf[AUTD3_NIC_MAX_FRAME];
  size_t len = 0;
  uint64_t deadline = autd3__now_ns() + ns;
  e = autd3__nic_recv(nic, buf, sizeof buf, &len, deadline);
  autd3__nic_close(nic);
  if (e == AUTD3_E_TIMEOUT)
    return AUTD3_OK;
  if (e != AUTD3_OK)
    return e;
  char mac[18];
  autd3__mac_format(buf + 6, mac);
  return autd3_set_error(AUTD3_E_SECOND_MASTER,
                         "%s: another EtherCAT master is active on interface %s: EtherCAT frames from source MAC %s "
                         "arrived before our first frame; one master per chain: stop the other master first",
                         who, ifname, mac);
}

autd3_err_t autd3__master_guard_take(const char *ifname, autd3_nic_backend_t backend, const char *who,
                                     autd3_master_guard_t **out) {
  *out = NULL;
  if (!ifname || !*ifname)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "%s: interface name is empty", who);
  autd3_master_guard_t *g = calloc(1, sizeof *g);
  if (!g)
    return autd3_set_error(AUTD3_E_NOMEM, "%s: out of memory", who);
  char name[128];
  lock_name(ifname, name, sizeof name);
  bool busy = false;
  long holder = 0;
  autd3_err_t e = autd3__filelock_try(name, &g->lock, &busy, &holder);
  if (e == AUTD3_OK && busy) {
    char pid[48] = "a process that did not say its pid";
    if (holder > 0)
      snprintf(pid, sizeof pid, "process %ld", holder);
    e = autd3_set_error(AUTD3_E_SECOND_MASTER,
                        "%s: another EtherCAT master (%s) already drives interface %s (lock file %s); one master "
                        "per chain: close it first",
                        who, pid, ifname, g->lock.path);
  }
  if (e == AUTD3_OK)
    e = listen_for_master(ifname, backend, who, AUTD3_MASTER_LISTEN_NS);
  if (e != AUTD3_OK) {
    autd3__filelock_release(&g->lock);
    free(g);
    return e;
  }
  /* Unique per process (pid) and per open (time, address of the guard). */
  uint64_t h = autd3__process_id() * 0x9E3779B97F4A7C15ull ^ autd3__now_ns() ^ (uint64_t)(uintptr_t)g;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  const uint8_t mac[6] = {0x0C, 0xEC, 0xA7, (uint8_t)h, (uint8_t)(h >> 8), (uint8_t)(h >> 16)};
  memcpy(g->mac, mac, 6);
  *out = g;
  return AUTD3_OK;
}

void autd3__master_guard_mac(const autd3_master_guard_t *g, uint8_t mac[6]) { memcpy(mac, g->mac, 6); }

void autd3__master_guard_release(autd3_master_guard_t *g) {
  if (!g)
    return;
  autd3__filelock_release(&g->lock);
  free(g);
}
