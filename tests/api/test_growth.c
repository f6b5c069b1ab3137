/* Structs that can grow (docs/api.md "Structs that can grow"): an option
 * whose `size` is an older one gets the library's defaults past it, an
 * unknown size is refused naming it, and an output struct is written exactly
 * up to the caller's size, never past it. An "old caller" is simulated by
 * setting `size` (or the size argument) to what an older header had. */
#include <stddef.h>
#include <string.h>

#include "autd3/autd3.h"
#include "autd3/link_driver.h"
#include "autd3/remote_server.h"
#include "harness/test.h"
#include "link/link_internal.h"

#define CANARY 0xA5

static autd3_geometry_t *geom(size_t n) {
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(n, NULL, &g));
  return g;
}

/* Every byte of buf[from, to) is still the canary. */
static void assert_untouched(const uint8_t *buf, size_t from, size_t to) {
  for (size_t i = from; i < to; i++)
    if (buf[i] != CANARY) TEST_FAIL_("byte %zu past the caller's size was written (0x%02x)", i, buf[i]);
}

/* The link option's size never changes (the union's reserved room), and each
 * kind's default carries the size of that kind's member. */
TEST(link_option_default_sets_size) {
  ASSERT_EQ(sizeof(autd3_link_option_t), offsetof(autd3_link_option_t, u) + 256);
  ASSERT_EQ(autd3_link_option_default(AUTD3_LINK_EMULATOR).size, AUTD3_LINK_OPTION_SIZE(autd3_emulator_option_t));
  ASSERT_EQ(autd3_link_option_default(AUTD3_LINK_ECHOCAT).size, AUTD3_LINK_OPTION_SIZE(autd3_echocat_option_t));
  ASSERT_EQ(autd3_link_option_default(AUTD3_LINK_SOEM).size, AUTD3_LINK_OPTION_SIZE(autd3_soem_option_t));
  ASSERT_EQ(autd3_link_option_default(AUTD3_LINK_ETHERCRAB).size, AUTD3_LINK_OPTION_SIZE(autd3_ethercrab_option_t));
  ASSERT_EQ(autd3_link_option_default(AUTD3_LINK_TWINCAT).size, AUTD3_LINK_OPTION_SIZE(autd3_twincat_option_t));
  ASSERT_EQ(autd3_link_option_default(AUTD3_LINK_REMOTE).size, AUTD3_LINK_OPTION_SIZE(autd3_remote_option_t));
  /* The per-kind macros and the exported functions give the same defaults. */
  ASSERT_EQ(autd3_echocat_option_default().warmup_cycles, 200);
  ASSERT_EQ((autd3_echocat_option_default)().warmup_cycles, 200);
  ASSERT_EQ(autd3_twincat_option_default().server_port, 48898);
  ASSERT_EQ(autd3_client_config_default().size, sizeof(autd3_client_config_t));
  ASSERT_EQ(autd3_remote_server_option_default().size, sizeof(autd3_remote_server_option_t));
  ASSERT_EQ(autd3_remote_server_option_default().link.size, AUTD3_LINK_OPTION_SIZE(autd3_emulator_option_t));
}

/* A Remote option from a header without `protocol` (the field appended last):
 * whatever lies past the caller's size is replaced by the default. */
TEST(old_remote_option_gets_new_defaults) {
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_REMOTE);
  o.size = (uint32_t)(offsetof(autd3_link_option_t, u) + offsetof(autd3_remote_option_t, protocol));
  o.u.remote.address = "127.0.0.1:1";
  o.u.remote.timeout_ms = 1000;
  o.u.remote.protocol = 99; /* not the caller's: garbage past its struct */
  autd3_link_option_t full;
  ASSERT_OK(autd3__link_option_full(&o, &full));
  ASSERT_STREQ(full.u.remote.address, "127.0.0.1:1");
  ASSERT_EQ(full.u.remote.timeout_ms, 1000);
  ASSERT_EQ(full.u.remote.protocol, AUTD3_REMOTE_PROTOCOL_NEWEST);

  /* Through the public path: with the new size the link refuses protocol 99;
   * with the old one it never sees it and gets as far as connecting (port 1
   * on loopback: refused at once). */
  autd3_geometry_t *g = geom(1);
  autd3_link_t *l = NULL;
  autd3_link_option_t now = o;
  now.size = AUTD3_LINK_OPTION_SIZE(autd3_remote_option_t);
  ASSERT_ERR(autd3_link_open(&now, g, &l), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "protocol");
  autd3_err_t err = autd3_link_open(&o, g, &l);
  ASSERT_NE(err, AUTD3_E_INVALID_OPTION);
  ASSERT_NE(err, AUTD3_OK);
  ASSERT_TRUE(l == NULL);
  autd3_geometry_free(g);
}

/* The emulator option a current caller sets is used as set (the prefix is the whole member). */
TEST(current_size_keeps_every_field) {
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_ECHOCAT);
  o.u.echocat.warmup_cycles = 7;
  o.u.echocat.ethercat.sync0_period_ns = 2000000;
  autd3_link_option_t full;
  ASSERT_OK(autd3__link_option_full(&o, &full));
  ASSERT_EQ(full.u.echocat.warmup_cycles, 7);
  ASSERT_EQ(full.u.echocat.ethercat.sync0_period_ns, 2000000);
}

/* A size the library doesn't know is refused by name: 0 (a struct not started
 * from the default), one byte off, larger than this library's (a newer
 * header), and a size that belongs to another kind. */
TEST(unknown_link_option_size_refused) {
  autd3_geometry_t *g = geom(1);
  const uint32_t good = AUTD3_LINK_OPTION_SIZE(autd3_emulator_option_t);
  const uint32_t bad[] = {0, good - 1, good + 8, (uint32_t)sizeof(autd3_link_option_t) + 64,
                          AUTD3_LINK_OPTION_SIZE(autd3_echocat_option_t)};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_EMULATOR);
    o.size = bad[i];
    autd3_link_t *l = (autd3_link_t *)&o; /* must be reset to NULL */
    ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_INVALID_OPTION);
    ASSERT_TRUE(l == NULL);
    ASSERT_CONTAINS(autd3_last_error(), "size");
    ASSERT_CONTAINS(autd3_last_error(), "emulator");
  }
  /* The client opens its link through the same check. */
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  o.size = 0;
  autd3_client_t *c = NULL;
  ASSERT_ERR(autd3_client_open(g, &o, NULL, &c), AUTD3_E_INVALID_OPTION);
  ASSERT_TRUE(c == NULL);
  autd3_geometry_free(g);
}

TEST(unknown_config_and_server_sizes_refused) {
  autd3_client_config_t cfg = autd3_client_config_default();
  ASSERT_OK(autd3_client_config_validate(&cfg));
  cfg.size = 0;
  ASSERT_ERR(autd3_client_config_validate(&cfg), AUTD3_E_INVALID_CONFIG);
  ASSERT_CONTAINS(autd3_last_error(), "size");
  cfg.size = sizeof cfg + 4;
  ASSERT_ERR(autd3_client_config_validate(&cfg), AUTD3_E_INVALID_CONFIG);
  autd3_geometry_t *g = geom(1);
  autd3_link_option_t lo = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  autd3_client_t *c = NULL;
  ASSERT_ERR(autd3_client_open(g, &lo, &cfg, &c), AUTD3_E_INVALID_CONFIG);
  ASSERT_TRUE(c == NULL);
  autd3_geometry_free(g);

  autd3_remote_server_option_t so = autd3_remote_server_option_default();
  so.listen = "127.0.0.1:0";
  autd3_remote_server_t *s = NULL;
  so.size = 0;
  ASSERT_ERR(autd3_remote_server_create(&so, &s), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "remote server option: size");
  so.size = sizeof so;
  so.link.size = 3; /* the wrapped link's option is checked at create, not at the first client */
  ASSERT_ERR(autd3_remote_server_create(&so, &s), AUTD3_E_INVALID_OPTION);
  ASSERT_CONTAINS(autd3_last_error(), "link option: size");
  ASSERT_TRUE(s == NULL);
}

/* The init functions behind the inline defaults write only the caller's size. */
TEST(init_writes_only_callers_size) {
  uint8_t buf[sizeof(autd3_remote_server_option_t) + 64];
  const size_t small = offsetof(autd3_client_config_t, max_inflight);
  memset(buf, CANARY, sizeof buf);
  autd3_client_config_init((autd3_client_config_t *)(void *)buf, small);
  assert_untouched(buf, small, sizeof buf);
  autd3_client_config_t cfg;
  memcpy(&cfg, buf, small);
  ASSERT_EQ(cfg.size, small);
  ASSERT_EQ(cfg.timeout_cycles, 10);
  /* A newer caller's larger struct: defaults, zeros past what this library knows, nothing past its size. */
  memset(buf, CANARY, sizeof buf);
  autd3_client_config_init((autd3_client_config_t *)(void *)buf, sizeof(autd3_client_config_t) + 8);
  assert_untouched(buf, sizeof(autd3_client_config_t) + 8, sizeof buf);
  for (size_t i = sizeof(autd3_client_config_t); i < sizeof(autd3_client_config_t) + 8; i++) ASSERT_EQ(buf[i], 0);

  const size_t ssmall = offsetof(autd3_remote_server_option_t, link);
  memset(buf, CANARY, sizeof buf);
  autd3_remote_server_option_init((autd3_remote_server_option_t *)(void *)buf, ssmall);
  assert_untouched(buf, ssmall, sizeof buf);
}

/* Every output struct, read with a smaller (older) size, a larger (newer) one
 * and through the exported compat function, never gets a byte past the size. */
TEST(output_structs_never_written_past_size) {
  autd3_geometry_t *g = geom(2);
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  autd3_client_t *c = NULL;
  ASSERT_OK(autd3_client_open(g, &o, NULL, &c));
  autd3_link_t *l = autd3_client_link(c);
  uint8_t buf[1024];

  /* link stats: old caller knows only `cycles` */
  memset(buf, CANARY, sizeof buf);
  autd3_link_stats_sized(l, (autd3_link_stats_t *)(void *)buf, sizeof(uint64_t));
  assert_untouched(buf, sizeof(uint64_t), sizeof buf);
  uint64_t cycles;
  memcpy(&cycles, buf, sizeof cycles);
  ASSERT_GT(cycles, 0);
  /* newer caller: 16 bytes this library doesn't know come back zero */
  memset(buf, CANARY, sizeof buf);
  autd3_link_stats_sized(l, (autd3_link_stats_t *)(void *)buf, sizeof(autd3_link_stats_t) + 16);
  for (size_t i = sizeof(autd3_link_stats_t); i < sizeof(autd3_link_stats_t) + 16; i++) ASSERT_EQ(buf[i], 0);
  assert_untouched(buf, sizeof(autd3_link_stats_t) + 16, sizeof buf);
  memset(buf, CANARY, sizeof buf);
  (autd3_link_stats)(l, (autd3_link_stats_t *)(void *)buf);
  assert_untouched(buf, 24, sizeof buf);

  /* link status: old caller without `recoveries` */
  const size_t st_small = offsetof(autd3_link_status_t, recoveries);
  memset(buf, CANARY, sizeof buf);
  ASSERT_OK(autd3_link_check_state_sized(l, (autd3_link_status_t *)(void *)buf, st_small));
  assert_untouched(buf, st_small, sizeof buf);
  autd3_link_status_t st;
  memcpy(&st, buf, st_small);
  ASSERT_EQ(st.num_devices, 2);
  ASSERT_EQ(st.state[1], AUTD3_DEVICE_OP);

  /* link status: the 0.3.0 layout through the exported function */
  memset(buf, CANARY, sizeof buf);
  ASSERT_OK((autd3_link_check_state)(l, (autd3_link_status_t *)(void *)buf));
  assert_untouched(buf, offsetof(autd3_link_status_t, recoveries) + sizeof(uint64_t), sizeof buf);

  /* link device info: a caller that knows only up to `stale_cycles`, and a newer one */
  const size_t di_small = offsetof(autd3_link_device_info_t, crc_errors);
  memset(buf, CANARY, sizeof buf);
  ASSERT_OK(autd3_link_device_info_sized(l, 1, (autd3_link_device_info_t *)(void *)buf, di_small));
  assert_untouched(buf, di_small, sizeof buf);
  memset(buf, CANARY, sizeof buf);
  ASSERT_OK(autd3_link_device_info_sized(l, 1, (autd3_link_device_info_t *)(void *)buf, sizeof(autd3_link_device_info_t) + 8));
  for (size_t i = sizeof(autd3_link_device_info_t); i < sizeof(autd3_link_device_info_t) + 8; i++) ASSERT_EQ(buf[i], 0);
  assert_untouched(buf, sizeof(autd3_link_device_info_t) + 8, sizeof buf);

  /* emulator device counters: old caller without `errors` */
  const size_t dc_small = offsetof(autd3_device_counters_t, errors);
  memset(buf, CANARY, sizeof buf);
  ASSERT_OK(autd3_emulator_counters_sized(l, 0, (autd3_device_counters_t *)(void *)buf, dc_small));
  assert_untouched(buf, dc_small, sizeof buf);
  autd3_device_counters_t dc;
  memcpy(&dc, buf, dc_small);
  ASSERT_GT(dc.executed, 0);
  ASSERT_ERR(autd3_emulator_counters_sized(l, 0, NULL, sizeof dc), AUTD3_E_INVALID_ARGUMENT);

  /* client stats: old caller without the exactly-once counters */
  const size_t cs_small = offsetof(autd3_client_stats_t, device_resets);
  memset(buf, CANARY, sizeof buf);
  autd3_client_stats_sized(c, (autd3_client_stats_t *)(void *)buf, cs_small);
  assert_untouched(buf, cs_small, sizeof buf);
  memset(buf, CANARY, sizeof buf);
  (autd3_client_stats)(c, (autd3_client_stats_t *)(void *)buf);
  assert_untouched(buf, offsetof(autd3_client_stats_t, device_timeouts) + sizeof(uint64_t), sizeof buf);

  /* client device status: old caller without `state` */
  const size_t ds_small = offsetof(autd3_client_device_status_t, state);
  memset(buf, CANARY, sizeof buf);
  ASSERT_OK(autd3_client_device_status_sized(c, 1, (autd3_client_device_status_t *)(void *)buf, ds_small));
  assert_untouched(buf, ds_small, sizeof buf);
  ASSERT_CLOSE_OK(c);
  autd3_geometry_free(g);

  /* server stats (a server that is never run: counters zero) */
  autd3_remote_server_option_t so = autd3_remote_server_option_default();
  so.listen = "127.0.0.1:0";
  autd3_remote_server_t *s = NULL;
  ASSERT_OK(autd3_remote_server_create(&so, &s));
  const size_t ss_small = offsetof(autd3_remote_server_stats_t, requests);
  memset(buf, CANARY, sizeof buf);
  autd3_remote_server_stats_sized(s, (autd3_remote_server_stats_t *)(void *)buf, ss_small);
  for (size_t i = 0; i < ss_small; i++) ASSERT_EQ(buf[i], 0);
  assert_untouched(buf, ss_small, sizeof buf);
  autd3_remote_server_destroy(s);
}
