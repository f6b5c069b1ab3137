/* echocat's bus for the tools (see bus.h). */
#define _GNU_SOURCE
#include "link/echocat/bus.h"

#include "link/echocat/echocat_internal.h"

autd3_err_t autd3__echocat_bus_open(const char *ifname, autd3_nic_backend_t backend, const char *capture_path, echocat_t **out) {
  *out = NULL;
  echocat_t *ec = calloc(1, sizeof *ec);
  if (!ec)
    return autd3_set_error(AUTD3_E_NOMEM, "echocat: out of memory");
  ec->by_pos = true;
  ec->opt.backend = backend;
  autd3_err_t e = autd3__nic_resolve(ifname, &ec->ifname);
  if (e == AUTD3_OK)
    e = autd3__master_guard_take(ec->ifname, backend, "autd3", &ec->guard);
  if (e == AUTD3_OK)
    e = autd3__nic_open(ec->ifname, backend, &ec->nic);
  if (e == AUTD3_OK) {
    autd3__master_guard_mac(ec->guard, ec->mac);
    if (capture_path) {
      const autd3_tap_options_t to = {capture_path, NULL, 0, -1};
      e = autd3__tap_start(ec->ifname, &to, &ec->cap);
      if (e == AUTD3_OK)
        autd3__nic_sends_to_taps(ec->nic);
    }
  }
  uint8_t v[2];
  uint16_t wkc = 0;
  if (e == AUTD3_OK)
    e = autd3__echocat_bus_dg(ec, ECAT_BRD, 0, REG_TYPE, NULL, 2, v, &wkc);
  if (e == AUTD3_OK && wkc == 0)
    e = autd3_set_error(AUTD3_E_NO_DEVICE, "autd3 %s: no EtherCAT device answered", ec->ifname);
  if (e == AUTD3_OK && wkc > AUTD3_MAX_DEVICES)
    e = autd3_set_error(AUTD3_E_DEVICE_COUNT_RANGE, "autd3 %s: %u devices, at most %d are supported", ec->ifname, wkc,
                        AUTD3_MAX_DEVICES);
  if (e != AUTD3_OK) {
    autd3__echocat_bus_close(ec);
    return e;
  }
  ec->n = wkc;
  *out = ec;
  return AUTD3_OK;
}

uint16_t autd3__echocat_bus_count(const echocat_t *ec) { return ec->n; }
const char *autd3__echocat_bus_ifname(const echocat_t *ec) { return ec->ifname; }
uint64_t autd3__echocat_bus_captured(const echocat_t *ec) { return autd3__capture_tap_frames(ec->cap); }

autd3_err_t autd3__echocat_bus_dg(echocat_t *ec, uint8_t cmd, uint16_t adp, uint16_t ado, const void *data, uint16_t len,
                            void *out, uint16_t *wkc) {
  if (len > ECAT_MAX_PAYLOAD - ECAT_DG_OVERHEAD)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3: %u bytes do not fit one datagram (at most %u)", len,
                           ECAT_MAX_PAYLOAD - ECAT_DG_OVERHEAD);
  autd3_err_t e = autd3__echocat_dg1(ec, cmd, adp, ado, data, len, out, wkc);
  if (e == AUTD3_E_TIMEOUT) { /* the frame did not come back: nobody answered */
    *wkc = 0;
    if (out)
      memset(out, 0, len);
    return AUTD3_OK;
  }
  return e;
}

autd3_err_t autd3__echocat_bus_identity(echocat_t *ec, uint16_t pos, echocat_bus_identity_t *id) {
  memset(id, 0, sizeof *id);
  if (pos >= ec->n)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3 %s: position %u: the chain has %u devices", ec->ifname, pos, ec->n);
  uint16_t one[1] = {pos};
  uint8_t tmp[AUTD3_MAX_DEVICES * 8];
  autd3_err_t e = autd3__echocat_sii_read(ec, one, 1);
  if (e == AUTD3_OK)
    e = autd3__echocat_eep_read(ec, one, 1, 0x0E, tmp);
  if (e != AUTD3_OK)
    return e;
  const slave_t *s = &ec->sl[pos];
  id->vendor = s->vendor, id->product = s->product, id->revision = s->revision;
  id->serial = ecat_get32(tmp + (size_t)pos * 8);
  memcpy(id->name, s->name, sizeof id->name);
  return AUTD3_OK;
}

autd3_err_t autd3__echocat_bus_sii(echocat_t *ec, uint16_t pos, uint8_t *buf, size_t cap, size_t *len) {
  *len = 0;
  if (pos >= ec->n)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "autd3 %s: position %u: the chain has %u devices", ec->ifname, pos, ec->n);
  uint16_t one[1] = {pos};
  uint8_t blk[AUTD3_MAX_DEVICES * 8];
  cap &= ~(size_t)7;
  /* the header (64 words), then category by category: each one's header
   * says where the next begins; stop after the end marker 0xFFFF */
  size_t want = 0x80 + 4, cat = 0x80;
  bool end = false;
  while (*len < want) {
    if (*len + 8 > cap)
      return autd3_set_error(AUTD3_E_IO, "autd3 %s: device %u: no SII end marker within %zu bytes", ec->ifname, pos, cap);
    autd3_err_t e = autd3__echocat_eep_read(ec, one, 1, (uint16_t)(*len / 2), blk);
    if (e != AUTD3_OK)
      return e;
    memcpy(buf + *len, blk + (size_t)pos * 8, 8);
    *len += 8;
    while (!end && cat + 4 <= *len) {
      uint16_t type = ecat_get16(buf + cat), words = ecat_get16(buf + cat + 2);
      if (type == 0xFFFF) {
        end = true;
        want = cat + 4;
      } else {
        cat += 4u + (size_t)words * 2u;
        want = cat + 4;
      }
    }
  }
  *len = want;
  return AUTD3_OK;
}

void autd3__echocat_bus_close(echocat_t *ec) {
  if (!ec)
    return;
  if (ec->nic)
    autd3__nic_close(ec->nic);
  autd3__capture_tap_stop(ec->cap);
  autd3__master_guard_release(ec->guard);
  free(ec->ifname);
  free(ec);
}
