/*
 * AMS/ADS codec: framing, request parameters, reply and notification
 * parsing, return-code texts. Layouts: Beckhoff infosys "ADS/AMS
 * specification".
 * Every parser bounds-checks against the bytes it was given: the same code
 * parses a hostile peer's frames (fuzz/fuzz_ads.c).
 */
#include "link/twincat/ads.h"

#include <stdio.h>
#include <string.h>

autd3_err_t autd3__ams_netid_parse(const char *s, ams_netid_t *out) {
  if (s == NULL || out == NULL) return AUTD3_E_INVALID_ARGUMENT;
  const char *p = s;
  for (int i = 0; i < 6; i++) {
    unsigned v = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 4) {
      v = v * 10 + (unsigned)(*p - '0');
      p++;
      digits++;
    }
    if (digits == 0 || v > 255) return AUTD3_E_INVALID_ARGUMENT;
    out->b[i] = (uint8_t)v;
    if (i < 5) {
      if (*p != '.') return AUTD3_E_INVALID_ARGUMENT;
      p++;
    }
  }
  return *p == 0 ? AUTD3_OK : AUTD3_E_INVALID_ARGUMENT;
}

char *autd3__ams_netid_format(const ams_netid_t *id, char *buf, size_t cap) {
  snprintf(buf, cap, "%u.%u.%u.%u.%u.%u", id->b[0], id->b[1], id->b[2], id->b[3], id->b[4], id->b[5]);
  return buf;
}

bool autd3__ams_netid_eq(const ams_netid_t *a, const ams_netid_t *b) { return memcmp(a->b, b->b, 6) == 0; }

int autd3__ams_frame_peek(const uint8_t *buf, size_t len, size_t max_frame, uint16_t *tcp_cmd, size_t *frame_len) {
  if (len < AMS_TCP_HDR_LEN) return 0;
  uint32_t body = ads_get_u32(buf + 2);
  *tcp_cmd = ads_get_u16(buf);
  *frame_len = (size_t)body + AMS_TCP_HDR_LEN;
  if ((uint64_t)body + AMS_TCP_HDR_LEN > max_frame) return AUTD3_E_PROTOCOL;
  return len >= *frame_len ? 1 : 0;
}

static void addr_get(const uint8_t *p, ams_addr_t *a) {
  memcpy(a->netid.b, p, 6);
  a->port = ads_get_u16(p + 6);
}

static void addr_put(uint8_t *p, const ams_addr_t *a) {
  memcpy(p, a->netid.b, 6);
  ads_put_u16(p + 6, a->port);
}

autd3_err_t autd3__ams_header_peek(const uint8_t *frame, size_t len, ams_header_t *h) {
  if (len < AMS_FRAME_HDR_LEN) return AUTD3_E_PROTOCOL;
  const uint8_t *p = frame + AMS_TCP_HDR_LEN;
  addr_get(p, &h->target);
  addr_get(p + 8, &h->source);
  h->cmd = ads_get_u16(p + 16);
  h->flags = ads_get_u16(p + 18);
  h->length = ads_get_u32(p + 20);
  h->error = ads_get_u32(p + 24);
  h->invoke = ads_get_u32(p + 28);
  return AUTD3_OK;
}

autd3_err_t autd3__ams_frame_decode(const uint8_t *frame, size_t len, ams_header_t *h, const uint8_t **data) {
  if (autd3__ams_header_peek(frame, len, h) != AUTD3_OK) return AUTD3_E_PROTOCOL;
  uint32_t body = ads_get_u32(frame + 2);
  const uint8_t *p = frame + AMS_TCP_HDR_LEN;
  /* The AMS/TCP length must cover exactly the AMS header plus its data. */
  if ((uint64_t)body != (uint64_t)AMS_HDR_LEN + h->length || (uint64_t)body + AMS_TCP_HDR_LEN > len) return AUTD3_E_PROTOCOL;
  *data = p + AMS_HDR_LEN;
  return AUTD3_OK;
}

size_t autd3__ams_frame_encode(uint8_t *out, size_t cap, ams_header_t *h, const void *a, size_t na, const void *b, size_t nb) {
  /* Check before adding: na + nb could wrap around size_t and pass a check made on the sum. */
  if (cap < AMS_FRAME_HDR_LEN || na > cap - AMS_FRAME_HDR_LEN || nb > cap - AMS_FRAME_HDR_LEN - na) return 0;
  if ((uint64_t)na + nb > (uint64_t)UINT32_MAX - AMS_HDR_LEN) return 0; /* the AMS/TCP length field is a u32 */
  size_t total = AMS_FRAME_HDR_LEN + na + nb;
  h->length = (uint32_t)(na + nb);
  ads_put_u16(out, AMS_TCP_ADS);
  ads_put_u32(out + 2, AMS_HDR_LEN + h->length);
  uint8_t *p = out + AMS_TCP_HDR_LEN;
  addr_put(p, &h->target);
  addr_put(p + 8, &h->source);
  ads_put_u16(p + 16, h->cmd);
  ads_put_u16(p + 18, h->flags);
  ads_put_u32(p + 20, h->length);
  ads_put_u32(p + 24, h->error);
  ads_put_u32(p + 28, h->invoke);
  if (na) memcpy(p + AMS_HDR_LEN, a, na);
  if (nb) memcpy(p + AMS_HDR_LEN + na, b, nb);
  return total;
}

size_t autd3__ams_router_encode(uint8_t *out, size_t cap, uint16_t cmd, const void *payload, size_t n) {
  if (AMS_TCP_HDR_LEN + n > cap) return 0;
  ads_put_u16(out, cmd);
  ads_put_u32(out + 2, (uint32_t)n);
  if (n) memcpy(out + AMS_TCP_HDR_LEN, payload, n);
  return AMS_TCP_HDR_LEN + n;
}

size_t autd3__ads_params_rw(uint8_t *p, uint32_t group, uint32_t offset, uint32_t len) {
  ads_put_u32(p, group);
  ads_put_u32(p + 4, offset);
  ads_put_u32(p + 8, len);
  return 12;
}

size_t autd3__ads_params_readwrite(uint8_t *p, uint32_t group, uint32_t offset, uint32_t rlen, uint32_t wlen) {
  autd3__ads_params_rw(p, group, offset, rlen);
  ads_put_u32(p + 12, wlen);
  return 16;
}

size_t autd3__ads_params_add_notification(uint8_t *p, uint32_t group, uint32_t offset, uint32_t len, uint32_t mode,
                                   uint32_t max_delay_100ns, uint32_t cycle_100ns) {
  autd3__ads_params_rw(p, group, offset, len);
  ads_put_u32(p + 12, mode);
  ads_put_u32(p + 16, max_delay_100ns);
  ads_put_u32(p + 20, cycle_100ns);
  memset(p + 24, 0, 16); /* reserved */
  return 40;
}

autd3_err_t autd3__ads_reply_parse(uint16_t cmd, const uint8_t *data, size_t len, uint32_t *result, const uint8_t **payload,
                            uint32_t *payload_len, uint32_t *aux) {
  if (len < 4) return AUTD3_E_PROTOCOL;
  *result = ads_get_u32(data);
  if (payload) *payload = NULL;
  if (payload_len) *payload_len = 0;
  /* A failed request may carry only the result word. */
  if (*result != 0) return AUTD3_OK;
  switch (cmd) {
    case ADS_CMD_READ:
    case ADS_CMD_READ_WRITE: {
      if (len < 8) return AUTD3_E_PROTOCOL;
      uint32_t n = ads_get_u32(data + 4);
      if ((uint64_t)n + 8 > len) return AUTD3_E_PROTOCOL;
      if (payload) *payload = data + 8;
      if (payload_len) *payload_len = n;
      return AUTD3_OK;
    }
    case ADS_CMD_READ_STATE:
      if (len < 8) return AUTD3_E_PROTOCOL;
      if (aux) *aux = ((uint32_t)ads_get_u16(data + 4) << 16) | ads_get_u16(data + 6);
      return AUTD3_OK;
    case ADS_CMD_ADD_NOTIFICATION:
      if (len < 8) return AUTD3_E_PROTOCOL;
      if (aux) *aux = ads_get_u32(data + 4);
      return AUTD3_OK;
    case ADS_CMD_READ_DEVICE_INFO:
      /* 24 bytes from TwinCAT; pyads' test server sends the name unpadded */
      return len < 8 ? AUTD3_E_PROTOCOL : AUTD3_OK;
    default:
      return AUTD3_OK; /* Write, WriteControl, DeleteDeviceNotification: result only */
  }
}

autd3_err_t autd3__ads_device_info_parse(const uint8_t *data, size_t len, uint32_t *result, ads_device_info_t *out) {
  autd3_err_t e = autd3__ads_reply_parse(ADS_CMD_READ_DEVICE_INFO, data, len, result, NULL, NULL, NULL);
  if (e != AUTD3_OK || *result != 0) return e;
  out->major = data[4];
  out->minor = data[5];
  out->build = ads_get_u16(data + 6);
  size_t n = len - 8 < 16 ? len - 8 : 16;
  memset(out->name, 0, sizeof out->name);
  memcpy(out->name, data + 8, n);
  return AUTD3_OK;
}

autd3_err_t autd3__ads_notification_parse(const uint8_t *data, size_t len, ads_sample_fn fn, void *ctx) {
  if (len < 8) return AUTD3_E_PROTOCOL;
  uint32_t total = ads_get_u32(data);
  /* `length` counts the bytes after itself. */
  if ((uint64_t)total + 4 > len) return AUTD3_E_PROTOCOL;
  const uint8_t *p = data + 4, *end = data + 4 + total;
  if (end - p < 4) return AUTD3_E_PROTOCOL;
  uint32_t stamps = ads_get_u32(p);
  p += 4;
  for (uint32_t s = 0; s < stamps; s++) {
    if (end - p < 12) return AUTD3_E_PROTOCOL;
    uint64_t ft = ads_get_u64(p);
    uint32_t samples = ads_get_u32(p + 8);
    p += 12;
    for (uint32_t k = 0; k < samples; k++) {
      if (end - p < 8) return AUTD3_E_PROTOCOL;
      uint32_t handle = ads_get_u32(p), size = ads_get_u32(p + 4);
      p += 8;
      if ((uint64_t)(end - p) < size) return AUTD3_E_PROTOCOL;
      if (fn) fn(ctx, ft, handle, p, size);
      p += size;
    }
  }
  return AUTD3_OK;
}

/* Beckhoff infosys "ADS Return Codes" (also birkenfeld/ads-rs src/errors.rs). */
static const struct {
  uint32_t code;
  const char *text;
} ads_errors[] = {
    {0x0000, "no error"},
    {0x0001, "internal error"},
    {0x0002, "no real-time"},
    {0x0003, "allocation locked memory error"},
    {0x0004, "mailbox full, the ADS message could not be sent"},
    {0x0005, "wrong receive HMSG"},
    {0x0006, "target port not found: ADS server not started (TwinCAT not in Run mode, or the task is not there)"},
    {0x0007, "target machine not found: missing ADS route"},
    {0x0008, "unknown command id"},
    {0x0009, "invalid task id"},
    {0x000A, "no IO"},
    {0x000B, "unknown AMS command"},
    {0x000C, "Win32 error"},
    {0x000D, "port not connected"},
    {0x000E, "invalid AMS length"},
    {0x000F, "invalid AMS NetId"},
    {0x0010, "installation level too low"},
    {0x0011, "no debugging available"},
    {0x0012, "port disabled: TwinCAT system service not started"},
    {0x0013, "port already connected"},
    {0x0014, "AMS sync Win32 error"},
    {0x0015, "AMS sync timeout"},
    {0x0016, "AMS sync error"},
    {0x0017, "no index map for AMS sync"},
    {0x0018, "invalid AMS port"},
    {0x0019, "no memory"},
    {0x001A, "TCP send error"},
    {0x001B, "host unreachable"},
    {0x001C, "invalid AMS fragment"},
    {0x0500, "router: no locked memory"},
    {0x0501, "router: memory size could not be changed"},
    {0x0502, "router: mailbox full"},
    {0x0503, "router: debug mailbox full"},
    {0x0504, "router: unknown port type"},
    {0x0505, "router: not initialised"},
    {0x0506, "router: port number already assigned"},
    {0x0507, "router: port not registered"},
    {0x0508, "router: maximum number of ports reached"},
    {0x0509, "router: invalid port"},
    {0x050A, "router: not active"},
    {0x050B, "router: fragment mailbox full"},
    {0x050C, "router: fragment timeout"},
    {0x050D, "router: port removed"},
    {0x0700, "general device error"},
    {0x0701, "service not supported by the server"},
    {0x0702, "invalid index group"},
    {0x0703, "invalid index offset"},
    {0x0704, "reading or writing not permitted"},
    {0x0705, "parameter size not correct (for AUTD3: the device count does not match the TwinCAT project)"},
    {0x0706, "invalid parameter value"},
    {0x0707, "device not in a ready state"},
    {0x0708, "device busy"},
    {0x0709, "invalid operating system context"},
    {0x070A, "out of memory"},
    {0x070B, "invalid parameter values"},
    {0x070C, "not found (files, ...)"},
    {0x070D, "syntax error in command or file"},
    {0x070E, "objects do not match"},
    {0x070F, "object already exists"},
    {0x0710, "symbol not found"},
    {0x0711, "invalid symbol version"},
    {0x0712, "server is in an invalid state"},
    {0x0713, "ADS transmission mode not supported"},
    {0x0714, "notification handle is invalid"},
    {0x0715, "notification client not registered"},
    {0x0716, "no further notification handle"},
    {0x0717, "notification size too large"},
    {0x0718, "device not initialised"},
    {0x0719, "device has a timeout"},
    {0x071A, "query interface failed"},
    {0x071B, "wrong interface requested"},
    {0x071C, "class id is invalid"},
    {0x071D, "object id is invalid"},
    {0x071E, "request pending"},
    {0x071F, "request aborted"},
    {0x0720, "signal warning"},
    {0x0721, "invalid array index"},
    {0x0722, "symbol not active"},
    {0x0723, "access denied"},
    {0x0724, "missing license"},
    {0x0740, "general client error"},
    {0x0741, "invalid parameter at service"},
    {0x0742, "polling list is empty"},
    {0x0743, "variable connection already in use"},
    {0x0744, "invoke id in use"},
    {0x0745, "timeout elapsed: check the ADS route"},
    {0x0746, "error in Win32 subsystem"},
    {0x0747, "invalid client timeout value"},
    {0x0748, "ADS port not opened"},
    {0x0749, "no AMS address"},
    {0x0750, "internal error in ADS sync"},
    {0x0751, "hash table overflow"},
    {0x0752, "key not found in hash"},
    {0x0753, "no more symbols in cache"},
    {0x0754, "invalid response received"},
    {0x0755, "sync port is locked"},
    {0x1000, "real-time system: internal error"},
};

const char *autd3__ads_strerror(uint32_t code) {
  for (size_t i = 0; i < sizeof ads_errors / sizeof ads_errors[0]; i++)
    if (ads_errors[i].code == code) return ads_errors[i].text;
  if (code > 0x1000 && code < 0x1100) return "real-time system error";
  return "unknown ADS error";
}

const char *autd3__ads_cmd_name(uint16_t cmd) {
  static const char *const names[] = {"Invalid", "ReadDeviceInfo", "Read", "Write", "ReadState",
                                      "WriteControl", "AddDeviceNotification", "DeleteDeviceNotification",
                                      "DeviceNotification", "ReadWrite"};
  return cmd < sizeof names / sizeof names[0] ? names[cmd] : "unknown command";
}
