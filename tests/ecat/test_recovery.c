/* The shared EtherCAT recovery (src/ecat/recovery.h) and DC arithmetic
 * (src/ecat/dc.h), driven through a fake chain in memory: each fake device has
 * a station address, an AL state that follows AL control at once, a register
 * file and a clock. No network, no timing: the back-off's clock is passed in. */
#include <stdatomic.h>
#include <string.h>

#include "autd3/autd3.h"
#include "autd3/link_driver.h"
#include "ecat/dc.h"
#include "ecat/recovery.h"
#include "ecat/regs.h"
#include "harness/test.h"

#define N 3
#define CYCLE 1000000u
#define GRID 5000123456ull /* the chain's SYNC0 start at open */

typedef struct fake_dev {
  bool present;      /* an ESC at this ring position */
  uint16_t station;  /* 0x0010 */
  uint8_t al;        /* AL status */
  bool refuse_preop; /* PRE-OP request -> INIT + ERROR */
  uint64_t clock;    /* local time: advances 10 ns per read of 0x0910 */
  uint8_t regs[0x1000];
} fake_dev_t;

typedef struct fake {
  fake_dev_t d[N];
  int alctl_writes[N];
  int reconfigures[N];
} fake_t;

static uint16_t station_of(uint16_t dev) { return (uint16_t)(0x1001 + dev); }
static uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}
static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static fake_dev_t *find(fake_t *f, uint16_t dev, bool pos, int *idx) {
  if (pos) {
    *idx = dev;
    return dev < N && f->d[dev].present ? &f->d[dev] : NULL;
  }
  for (int i = 0; i < N; i++)
    if (f->d[i].present && f->d[i].station == station_of(dev)) {
      *idx = i;
      return &f->d[i];
    }
  return NULL;
}

static autd3_err_t f_read(void *c, uint16_t dev, bool pos, uint16_t reg, void *buf, uint16_t len, uint16_t *wkc) {
  int i;
  fake_dev_t *d = find(c, dev, pos, &i);
  *wkc = 0;
  if (d == NULL)
    return AUTD3_OK;
  *wkc = 1;
  if (reg == REG_ALSTAT) {
    memset(buf, 0, len);
    ((uint8_t *)buf)[0] = d->al;
  } else if (reg == REG_STADR) {
    ((uint8_t *)buf)[0] = (uint8_t)d->station, ((uint8_t *)buf)[1] = (uint8_t)(d->station >> 8);
  } else if (reg == REG_DCSYS) {
    d->clock += 10;
    put64(buf, d->clock + get64(d->regs + REG_DCOFS));
  } else {
    memcpy(buf, d->regs + reg, len);
  }
  return AUTD3_OK;
}

static autd3_err_t f_write(void *c, uint16_t dev, bool pos, uint16_t reg, const void *buf, uint16_t len, uint16_t *wkc) {
  fake_t *f = c;
  int i;
  fake_dev_t *d = find(f, dev, pos, &i);
  *wkc = 0;
  if (d == NULL)
    return AUTD3_OK;
  *wkc = 1;
  const uint8_t *b = buf;
  if (reg == REG_ALCTL) {
    f->alctl_writes[i]++;
    uint8_t st = b[0] & 0x0F;
    d->al = (d->refuse_preop && st == AL_PREOP) ? (uint8_t)(AL_INIT | AL_ERROR) : st;
  } else if (reg == REG_STADR) {
    d->station = (uint16_t)(b[0] | (b[1] << 8));
  } else {
    memcpy(d->regs + reg, buf, len);
  }
  return AUTD3_OK;
}

static const autd3_link_vtable_t vt = {0};
static struct autd3_link link_hdr;
static fake_t F;
static uint16_t stations[N];

/* N devices in OP with a mapping and DC setup as a link leaves them at open. */
static void chain_up(void) {
  memset(&F, 0, sizeof F);
  autd3_link_init(&link_hdr, &vt, AUTD3_LINK_ECHOCAT, N);
  for (uint16_t k = 0; k < N; k++) {
    fake_dev_t *d = &F.d[k];
    d->present = true;
    d->station = stations[k] = station_of(k);
    d->al = AL_OP;
    d->clock = 1000000000ull * (k + 1);
    uint8_t *r = d->regs;
    /* SM2 (outputs) and SM3 (inputs) configured, SM0/1 not; FMMU0/1 enabled */
    r[REG_SM2 + 0] = 0x00, r[REG_SM2 + 1] = 0x10, r[REG_SM2 + 2] = 0x72, r[REG_SM2 + 3] = 0x02, r[REG_SM2 + 4] = 0x64;
    r[REG_SM2 + 8] = 0x00, r[REG_SM2 + 9] = 0x18, r[REG_SM2 + 10] = 0x02, r[REG_SM2 + 12] = 0x20;
    for (int j = 0; j < 2; j++) {
      r[REG_FMMU0 + 16 * j + 0] = (uint8_t)(k * 7 + j);
      r[REG_FMMU0 + 16 * j + 12] = 1;
    }
    r[REG_DCDELAY] = (uint8_t)(40 * k);
    put64(r + REG_DCSTART0, GRID);
    r[REG_DCCYC0 + 0] = (uint8_t)CYCLE, r[REG_DCCYC0 + 1] = (uint8_t)(CYCLE >> 8), r[REG_DCCYC0 + 2] = (uint8_t)(CYCLE >> 16);
    r[REG_DCACT] = 3;
    /* system times agree: offset = reference local - own local */
    put64(r + REG_DCOFS, F.d[0].clock - d->clock);
  }
}

/* Power cycle: firmware state, ESC configuration and clock gone; `keep_address` = an ESC that kept 0x0010. */
static fake_dev_t saved;
static void power_cycle(uint16_t k, bool keep_address) {
  fake_dev_t *d = &F.d[k];
  saved = *d;
  memset(d->regs, 0, sizeof d->regs);
  d->al = AL_INIT;
  d->clock = 77;
  if (!keep_address)
    d->station = 0;
}

static autd3_link_ecat_recovery_t *create(const autd3_link_ecat_ops_t *ops) {
  autd3_link_ecat_recovery_config_t cfg = {sizeof cfg, 50, stations};
  autd3_link_ecat_recovery_t *r = NULL;
  autd3_err_t e = autd3__ecat_recovery_create(&link_hdr, ops, &cfg, &r);
  if (e != AUTD3_OK)
    fprintf(stderr, "create: %s\n", autd3_last_error());
  return r;
}

static const autd3_link_ecat_ops_t generic_ops = {.ctx = &F, .read = f_read, .write = f_write};

static uint32_t resets(uint16_t k) { return atomic_load(&link_hdr.device_resets[k]); }

TEST(all_op_touches_nothing) {
  chain_up();
  autd3_link_ecat_recovery_t *r = create(&generic_ops);
  ASSERT_TRUE(r != NULL);
  autd3_link_status_t st;
  memset(&st, 0xEE, sizeof st);
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, 1000), AUTD3_OK);
  for (int k = 0; k < N; k++) {
    ASSERT_EQ(st.state[k], AUTD3_DEVICE_OP);
    ASSERT_EQ(st.al_state[k], 0);
    ASSERT_EQ(F.alctl_writes[k], 0);
    ASSERT_EQ(resets(k), 0);
  }
  ASSERT_EQ(st.recoveries, 0);
  autd3__ecat_recovery_free(r);
}

TEST(safe_op_gets_op_and_counts_one_recovery) {
  chain_up();
  autd3_link_ecat_recovery_t *r = create(&generic_ops);
  autd3_link_status_t st;
  F.d[1].al = AL_SAFEOP;
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, 1000), AUTD3_OK);
  ASSERT_EQ(st.state[1], AUTD3_DEVICE_SAFE_OP);
  ASSERT_EQ(autd3__ecat_recovery_phase(r, 1), AUTD3__REC_OP_REQUESTED);
  ASSERT_EQ(F.d[1].al, AL_OP); /* OP was requested */
  ASSERT_EQ(st.recoveries, 0);
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, 2000), AUTD3_OK);
  ASSERT_EQ(st.state[1], AUTD3_DEVICE_OP);
  ASSERT_EQ(st.recoveries, 1);
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, 3000), AUTD3_OK);
  ASSERT_EQ(st.recoveries, 1); /* staying in OP is no new recovery */
  ASSERT_EQ(resets(1), 0);     /* SAFE-OP is no evidence of a reset */
  autd3__ecat_recovery_free(r);
}

TEST(safe_op_error_is_acknowledged) {
  chain_up();
  autd3_link_ecat_recovery_t *r = create(&generic_ops);
  autd3_link_status_t st;
  F.d[2].al = AL_SAFEOP | AL_ERROR;
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, 1000), AUTD3_OK);
  ASSERT_EQ(st.state[2], AUTD3_DEVICE_SAFE_OP_ERROR);
  ASSERT_EQ(autd3__ecat_recovery_phase(r, 2), AUTD3__REC_ACKED);
  ASSERT_EQ(F.d[2].al, AL_SAFEOP); /* acknowledged: the error flag is gone */
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, 2000), AUTD3_OK);
  ASSERT_EQ(st.state[2], AUTD3_DEVICE_SAFE_OP);
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, 3000), AUTD3_OK);
  ASSERT_EQ(st.state[2], AUTD3_DEVICE_OP);
  ASSERT_EQ(st.recoveries, 1);
  autd3__ecat_recovery_free(r);
}

/* The generic bring-up restores what the device had: SM/FMMU, delay, SYNC0 on
 * the chain's grid, an offset that makes its clock agree with the others. */
static void assert_restored(uint16_t k) {
  const uint8_t *now = F.d[k].regs, *was = saved.regs;
  ASSERT_MEMEQ(now + REG_SM0, was + REG_SM0, 64);
  ASSERT_MEMEQ(now + REG_FMMU0, was + REG_FMMU0, 32);
  ASSERT_MEMEQ(now + REG_DCDELAY, was + REG_DCDELAY, 4);
  ASSERT_MEMEQ(now + REG_DCCYC0, was + REG_DCCYC0, 4);
  ASSERT_EQ(now[REG_DCACT], 3);
  uint64_t start = get64(now + REG_DCSTART0);
  ASSERT_EQ((start - GRID) % CYCLE, 0);                             /* on the grid */
  ASSERT_GE(start, F.d[k].clock + get64(now + REG_DCOFS) + 99000000u); /* far enough ahead of its time */
  /* its system time is the source's: they read within a few ticks of the fake clocks */
  int64_t diff = (int64_t)((F.d[k].clock + get64(now + REG_DCOFS)) - (F.d[0].clock + get64(F.d[0].regs + REG_DCOFS)));
  ASSERT_LE(diff < 0 ? -diff : diff, 100);
  ASSERT_EQ(now[REG_DCFILT + 1], 0x0C); /* drift filters restarted */
  ASSERT_EQ(now[REG_DCSPEED + 1], 0x10);
}

TEST(power_cycle_in_place_reported_once_and_brought_back) {
  chain_up();
  autd3_link_ecat_recovery_t *r = create(&generic_ops);
  autd3_link_status_t st;
  power_cycle(1, true);
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, 1000), AUTD3_OK);
  ASSERT_EQ(st.state[1], AUTD3_DEVICE_OTHER); /* what the check saw */
  ASSERT_EQ(st.al_state[1], AL_INIT);
  ASSERT_EQ(resets(1), 1);
  ASSERT_EQ(autd3__ecat_recovery_attempts(r, 1), 1);
  ASSERT_EQ(F.d[1].al, AL_OP); /* walked INIT -> PRE-OP -> SAFE-OP, then OP requested */
  assert_restored(1);
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, 2000), AUTD3_OK);
  ASSERT_EQ(st.state[1], AUTD3_DEVICE_OP);
  ASSERT_EQ(st.recoveries, 1);
  ASSERT_EQ(resets(1), 1);
  /* a later power cycle is a new episode */
  power_cycle(1, true);
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, 3000), AUTD3_OK);
  ASSERT_EQ(resets(1), 2);
  ASSERT_EQ(resets(0), 0);
  ASSERT_EQ(resets(2), 0);
  autd3__ecat_recovery_free(r);
}

TEST(lost_address_is_readdressed_reported_and_brought_back) {
  chain_up();
  autd3_link_ecat_recovery_t *r = create(&generic_ops);
  autd3_link_status_t st;
  power_cycle(2, false);
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, 1000), AUTD3_OK);
  ASSERT_EQ(F.d[2].station, station_of(2));
  ASSERT_EQ(resets(2), 1);
  ASSERT_EQ(F.d[2].al, AL_OP);
  assert_restored(2);
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, 2000), AUTD3_OK);
  ASSERT_EQ(st.state[2], AUTD3_DEVICE_OP);
  ASSERT_EQ(st.recoveries, 1);
  autd3__ecat_recovery_free(r);
}

TEST(unplugged_is_lost_and_untouched) {
  chain_up();
  autd3_link_ecat_recovery_t *r = create(&generic_ops);
  autd3_link_status_t st;
  F.d[1].present = false;
  F.d[2].present = false; /* everything behind it is gone too */
  for (uint64_t t = 1; t <= 3; t++) {
    ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, t * 1000000000ull), AUTD3_OK);
    ASSERT_EQ(st.state[0], AUTD3_DEVICE_OP);
    ASSERT_EQ(st.state[1], AUTD3_DEVICE_LOST);
    ASSERT_EQ(st.state[2], AUTD3_DEVICE_LOST);
    ASSERT_EQ(autd3__ecat_recovery_phase(r, 1), AUTD3__REC_LOST);
  }
  ASSERT_EQ(resets(1), 0);
  ASSERT_EQ(resets(2), 0);
  /* re-plugged with its address and state kept: back by itself */
  F.d[1].present = F.d[2].present = true;
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, 4000000000ull), AUTD3_OK);
  ASSERT_EQ(st.state[1], AUTD3_DEVICE_OP);
  ASSERT_EQ(st.recoveries, 1);
  ASSERT_EQ(F.alctl_writes[1], 0);
  autd3__ecat_recovery_free(r);
}

TEST(another_devices_address_is_left_alone) {
  chain_up();
  autd3_link_ecat_recovery_t *r = create(&generic_ops);
  autd3_link_status_t st;
  /* device 1 removed and the chain closed: device 2 (its address kept) now sits at position 1 */
  F.d[1].station = station_of(2);
  F.d[2].present = false;
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, 1000), AUTD3_OK);
  ASSERT_EQ(st.state[1], AUTD3_DEVICE_LOST);
  ASSERT_EQ(st.state[2], AUTD3_DEVICE_OP);
  ASSERT_EQ(F.d[1].station, station_of(2)); /* not given device 1's address too */
  ASSERT_EQ(resets(1), 0);
  autd3__ecat_recovery_free(r);
}

TEST(failed_bring_up_backs_off_and_reports_once) {
  chain_up();
  autd3_link_ecat_recovery_t *r = create(&generic_ops);
  autd3_link_status_t st;
  power_cycle(1, true);
  F.d[1].refuse_preop = true;
  const uint64_t t0 = 10000000000ull, ms = 1000000ull;
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, t0), AUTD3_OK);
  ASSERT_EQ(autd3__ecat_recovery_attempts(r, 1), 1);
  ASSERT_EQ(autd3__ecat_recovery_phase(r, 1), AUTD3__REC_FAILED);
  ASSERT_EQ(st.state[1], AUTD3_DEVICE_OTHER);
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, t0 + 50 * ms), AUTD3_OK);
  ASSERT_EQ(autd3__ecat_recovery_attempts(r, 1), 1); /* within the first 100 ms back-off */
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, t0 + 100 * ms), AUTD3_OK);
  ASSERT_EQ(autd3__ecat_recovery_attempts(r, 1), 2);
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, t0 + 250 * ms), AUTD3_OK);
  ASSERT_EQ(autd3__ecat_recovery_attempts(r, 1), 2); /* second back-off: 200 ms */
  F.d[1].refuse_preop = false;
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, t0 + 300 * ms), AUTD3_OK);
  ASSERT_EQ(autd3__ecat_recovery_attempts(r, 1), 3);
  ASSERT_EQ(F.d[1].al, AL_OP);
  ASSERT_EQ(resets(1), 1); /* one episode, however many attempts */
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, t0 + 301 * ms), AUTD3_OK);
  ASSERT_EQ(st.state[1], AUTD3_DEVICE_OP);
  ASSERT_EQ(st.recoveries, 1);
  autd3__ecat_recovery_free(r);
}

TEST(backoff_doubles_and_is_capped) {
  ASSERT_EQ(autd3__ecat_rec_backoff_ns(0), 0);
  ASSERT_EQ(autd3__ecat_rec_backoff_ns(1), 100000000ll);
  ASSERT_EQ(autd3__ecat_rec_backoff_ns(2), 200000000ll);
  ASSERT_EQ(autd3__ecat_rec_backoff_ns(5), 1600000000ll);
  ASSERT_EQ(autd3__ecat_rec_backoff_ns(6), 1600000000ll);
  ASSERT_EQ(autd3__ecat_rec_backoff_ns(4000000000u), 1600000000ll);
}

/* A link whose library re-configures a slave itself (SOEM): its reconfigure
 * replaces the walk, the helper still reports, requests OP and counts. */
static autd3_err_t f_reconfigure(void *c, uint16_t dev) {
  fake_t *f = c;
  f->reconfigures[dev]++;
  f->d[dev].al = AL_SAFEOP;
  return AUTD3_OK;
}

TEST(link_reconfigure_replaces_the_walk) {
  chain_up();
  autd3_link_ecat_ops_t ops = generic_ops;
  ops.reconfigure = f_reconfigure;
  autd3_link_ecat_recovery_t *r = create(&ops);
  ASSERT_TRUE(r != NULL);
  autd3_link_status_t st;
  power_cycle(0, true);
  ASSERT_EQ(autd3__ecat_recovery_check_at(r, &st, 1000), AUTD3_OK);
  ASSERT_EQ(F.reconfigures[0], 1);
  ASSERT_EQ(F.alctl_writes[0], 1); /* only the OP request: the walk was the link's */
  ASSERT_EQ(F.d[0].al, AL_OP);
  ASSERT_EQ(resets(0), 1);
  ASSERT_EQ(get64(F.d[0].regs + REG_DCSTART0), 0); /* no generic DC step */
  autd3__ecat_recovery_free(r);
}

TEST(bad_arguments_are_refused_with_a_message) {
  chain_up();
  autd3_link_ecat_recovery_t *r = NULL;
  autd3_link_ecat_recovery_config_t cfg = {sizeof cfg, 50, NULL};
  ASSERT_EQ(autd3__ecat_recovery_create(&link_hdr, &generic_ops, &cfg, &r), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_CONTAINS(autd3_last_error(), "stations");
  cfg.stations = stations;
  cfg.size = 4;
  ASSERT_EQ(autd3__ecat_recovery_create(&link_hdr, &generic_ops, &cfg, &r), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_CONTAINS(autd3_last_error(), "config.size");
  autd3_link_ecat_ops_t no_read = {.ctx = &F, .write = f_write};
  cfg.size = sizeof cfg;
  ASSERT_EQ(autd3__ecat_recovery_create(&link_hdr, &no_read, &cfg, &r), AUTD3_E_INVALID_ARGUMENT);
  ASSERT_TRUE(r == NULL);
  F.d[2].present = false; /* the snapshot needs every device */
  ASSERT_EQ(autd3__ecat_recovery_create(&link_hdr, &generic_ops, &cfg, &r), AUTD3_E_IO);
  ASSERT_CONTAINS(autd3_last_error(), "device 2");
  ASSERT_TRUE(r == NULL);
  ASSERT_EQ(autd3__ecat_recovery_check(NULL, NULL), AUTD3_E_INVALID_ARGUMENT);
  autd3__ecat_recovery_free(NULL);
}

TEST(services_offer_recovery_from_version_2) {
  const autd3_link_services_t *s = autd3_link_services(2);
  ASSERT_TRUE(s != NULL);
  ASSERT_GE(s->version, 2);
  ASSERT_GE(s->size, sizeof(autd3_link_services_t));
  ASSERT_TRUE(s->ecat_recovery_create == autd3__ecat_recovery_create);
  ASSERT_TRUE(s->ecat_recovery_check == autd3__ecat_recovery_check);
  ASSERT_TRUE(s->ecat_recovery_free != NULL && s->autd3__ecat_dc_offset != NULL && s->autd3__ecat_dc_rebase_offset != NULL &&
              s->autd3__ecat_dc_sync0_restart != NULL);
  ASSERT_TRUE(autd3_link_services(1) == s); /* a version-1 link gets the same table: it only grew */
  ASSERT_TRUE(autd3_link_services(AUTD3_LINK_SERVICES_VERSION + 1) == NULL);
}

/* ---- DC arithmetic ---- */

TEST(dc_offset_makes_the_clock_agree) {
  /* reference system time 5000 when the slave's local clock read 1200, 30 ns downstream */
  uint64_t o = autd3__ecat_dc_offset(5000, 1200, 30);
  ASSERT_EQ(1200 + o, 5030);
  /* wraps modulo 2^64: a local clock ahead of the reference */
  o = autd3__ecat_dc_offset(100, 900, 0);
  ASSERT_EQ((uint64_t)(900 + o), 100);
}

TEST(dc_rebase_continues_the_old_base) {
  /* restarted reference: local 50, offset 7 -> system 57, while the others read 1000057 */
  uint64_t o = autd3__ecat_dc_rebase_offset(7, 57, 1000057);
  ASSERT_EQ(50 + o, 1000057);
  o = autd3__ecat_dc_rebase_offset(1000000, 1000500, 400); /* the old base behind the new one */
  ASSERT_EQ((uint64_t)(500 + o), 400);
}

TEST(dc_sync0_restart_keeps_the_grid) {
  /* unknown grid: the first-pulse rule */
  ASSERT_EQ(autd3__ecat_dc_sync0_restart(0, 1000000, 0, 123456789), autd3__ecat_dc_sync0_start(123456789, 1000000, 0));
  ASSERT_EQ(autd3__ecat_dc_sync0_restart(0, 500000, 250000, 123456789), 223750000ull);
  /* a running chain: its grid's next edge at least 100 ms ahead */
  ASSERT_EQ(autd3__ecat_dc_sync0_restart(1000, 500, 0, 0), 100000000ull); /* 1000 + 199998 periods */
  ASSERT_EQ(autd3__ecat_dc_sync0_restart(1000, 500, 0, 1), 100000500ull);
  uint64_t s = autd3__ecat_dc_sync0_restart(GRID, CYCLE, 0, 987654321012ull);
  ASSERT_EQ((s - GRID) % CYCLE, 0);
  ASSERT_GE(s, 987654321012ull + ECAT_DC_START_AHEAD_NS);
  ASSERT_LT(s, 987654321012ull + ECAT_DC_START_AHEAD_NS + CYCLE);
  /* a grid still ahead of the device's time stays as it is */
  ASSERT_EQ(autd3__ecat_dc_sync0_restart(GRID, CYCLE, 0, 0), GRID);
}
