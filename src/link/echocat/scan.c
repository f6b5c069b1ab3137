/*
 * echocat: scan and identity: count, reset, station addresses, SII (identity, mailbox,
 * name, General flags) and the shared AUTD3 identity check, AL states,
 * PRE-OP, SM/FMMU mapping.
 */
#define _GNU_SOURCE
#include "link/echocat/echocat_internal.h"

/* Read 4 words at `word` from every slave in list into out[k*8] (ESCs without
 * 8-byte reads are asked twice). SII interface (Beckhoff ESC datasheet section II,
 * registers 0x0500-0x050F): FPWR 0x0502 {cmd 0x0100, address}, poll
 * busy, FPRD 0x0508 (by position instead on the tools' bus, ec->by_pos). */
autd3_err_t autd3__echocat_eep_read(echocat_t *ec, const uint16_t *list, int cnt, uint16_t word, uint8_t *out) {
  for (int half = 0; half < 2; half++) {
    uint8_t cmd[AUTD3_MAX_DEVICES * 6] = {0};
    for (int i = 0; i < cnt; i++) {
      uint8_t *c = cmd + (size_t)list[i] * 6;
      ecat_put16(c, 0x0100);
      ecat_put32(c + 2, (uint32_t)word + (uint32_t)half * 2);
    }
    const dgspec_t wr = {ec->by_pos ? ECAT_APWR : ECAT_FPWR, REG_EEPCTL, 6};
    autd3_err_t e = autd3__echocat_each(ec, list, cnt, ec->by_pos, &wr, 1, cmd, NULL, NULL);
    if (e != AUTD3_OK)
      return e;
    uint8_t st[AUTD3_MAX_DEVICES * 14];
    uint16_t wkc[AUTD3_MAX_DEVICES];
    const dgspec_t rd = {ec->by_pos ? ECAT_APRD : ECAT_FPRD, REG_EEPCTL, 14};
    bool all8 = true;
    for (int poll = 0;; poll++) {
      e = autd3__echocat_each(ec, list, cnt, ec->by_pos, &rd, 1, NULL, st, wkc);
      if (e != AUTD3_OK)
        return e;
      bool busy = false;
      for (int i = 0; i < cnt; i++) {
        uint16_t k = list[i];
        uint16_t status = ecat_get16(st + (size_t)k * 14);
        if (wkc[k] != 1)
          return autd3_set_error(AUTD3_E_IO, "echocat %s: device %u did not answer an EEPROM read", ec->ifname, k);
        if (status & 0x8000)
          busy = true;
        else if (status & 0x2000)
          return autd3_set_error(AUTD3_E_IO, "echocat %s: device %u EEPROM read of word 0x%04x failed (status 0x%04x)",
                                 ec->ifname, k, word, status);
        if (!(status & 0x0040))
          all8 = false;
      }
      if (!busy)
        break;
      if (poll > 200)
        return autd3_set_error(AUTD3_E_TIMEOUT, "echocat %s: EEPROM stays busy", ec->ifname);
      if (!atomic_load(&ec->running))
        autd3__sleep_ns(50000);
    }
    for (int i = 0; i < cnt; i++) {
      uint16_t k = list[i];
      memcpy(out + (size_t)k * 8 + half * 4, st + (size_t)k * 14 + 6, half ? 4 : (all8 ? 8 : 4));
    }
    if (all8)
      break;
  }
  return AUTD3_OK;
}

/* Identity, mailbox, name (string 1, as SOEM and the AUTD links read it) and
 * the General "not LRW" flag of every slave in list. */
autd3_err_t autd3__echocat_sii_read(echocat_t *ec, const uint16_t *list, int cnt) {
  uint8_t tmp[AUTD3_MAX_DEVICES * 8];
  autd3_err_t e;
  if ((e = autd3__echocat_eep_read(ec, list, cnt, 0x08, tmp)) != AUTD3_OK)
    return e;
  for (int i = 0; i < cnt; i++) {
    slave_t *s = &ec->sl[list[i]];
    s->vendor = ecat_get32(tmp + list[i] * 8);
    s->product = ecat_get32(tmp + list[i] * 8 + 4);
  }
  if ((e = autd3__echocat_eep_read(ec, list, cnt, 0x0C, tmp)) != AUTD3_OK)
    return e;
  for (int i = 0; i < cnt; i++)
    ec->sl[list[i]].revision = ecat_get32(tmp + list[i] * 8);
  if ((e = autd3__echocat_eep_read(ec, list, cnt, 0x18, tmp)) != AUTD3_OK)
    return e;
  for (int i = 0; i < cnt; i++) {
    slave_t *s = &ec->sl[list[i]];
    const uint8_t *p = tmp + list[i] * 8;
    s->mbx_out_off = ecat_get16(p), s->mbx_out_len = ecat_get16(p + 2);
    s->mbx_in_off = ecat_get16(p + 4), s->mbx_in_len = ecat_get16(p + 6);
    s->name[0] = 0;
    s->no_lrw = false;
  }
  /* Category walk from word 0x40, one slave at a time, 8 bytes per read. */
  for (int i = 0; i < cnt; i++) {
    uint16_t k = list[i];
    uint16_t one[1] = {k};
    uint8_t blk[AUTD3_MAX_DEVICES * 8];
    uint32_t cached = UINT32_MAX;
    uint8_t data[8];
#define SII_BYTE(addr, dst)                                                           \
  do {                                                                                \
    uint32_t a_ = (addr), w_ = (a_ / 2) & ~3u;                                        \
    if (w_ != cached) {                                                               \
      if ((e = autd3__echocat_eep_read(ec, one, 1, (uint16_t)w_, blk)) != AUTD3_OK) return e;        \
      memcpy(data, blk + (size_t)k * 8, 8);                                           \
      cached = w_;                                                                    \
    }                                                                                 \
    (dst) = data[a_ - w_ * 2];                                                        \
  } while (0)
    uint32_t a = 0x80; /* byte address of word 0x40 */
    bool have_name = false, have_general = false;
    for (int cat = 0; cat < 32 && a < 8192 && !(have_name && have_general); cat++) {
      uint8_t b0, b1, b2, b3;
      SII_BYTE(a, b0);
      SII_BYTE(a + 1, b1);
      SII_BYTE(a + 2, b2);
      SII_BYTE(a + 3, b3);
      uint16_t type = (uint16_t)(b0 | b1 << 8), words = (uint16_t)(b2 | b3 << 8);
      if (type == 0xFFFF)
        break;
      uint32_t d = a + 4;
      if (type == 10 && !have_name) { /* strings: count, then (len, chars)...; string 1 is the name */
        uint8_t count, slen;
        SII_BYTE(d, count);
        if (count > 0) {
          SII_BYTE(d + 1, slen);
          if (slen > 32)
            slen = 32;
          for (uint8_t c = 0; c < slen; c++)
            SII_BYTE(d + 2 + c, ec->sl[k].name[c]);
          ec->sl[k].name[slen] = 0;
        }
        have_name = true;
      } else if (type == 30 && words >= 6) { /* General: byte 11 bit 0x02 = use LRD/LWR (ETG.2010 category General) */
        uint8_t flags;
        SII_BYTE(d + 11, flags);
        ec->sl[k].no_lrw = (flags & 0x02) != 0;
        have_general = true;
      }
      a = d + (uint32_t)words * 2;
    }
#undef SII_BYTE
  }
  return AUTD3_OK;
}

autd3_err_t autd3__echocat_check_identity(echocat_t *ec, const uint16_t *list, int cnt) {
  for (int i = 0; i < cnt; i++) {
    const slave_t *s = &ec->sl[list[i]];
    autd3_err_t e = autd3__ecat_check_identity("echocat", ec->ifname, list[i], s->vendor, s->product, s->name);
    if (e != AUTD3_OK)
      return e;
  }
  return AUTD3_OK;
}

/* ---------------------------------------------------------------- states */

autd3_err_t autd3__echocat_request_state(echocat_t *ec, const uint16_t *list, int cnt, uint16_t state) {
  uint8_t v[AUTD3_MAX_DEVICES * 2] = {0};
  for (int i = 0; i < cnt; i++)
    ecat_put16(v + (size_t)list[i] * 2, state);
  const dgspec_t sp = {ECAT_FPWR, REG_ALCTL, 2};
  return autd3__echocat_each(ec, list, cnt, false, &sp, 1, v, NULL, NULL);
}

/* AL status (+code) of every slave in list: al[k] = status low byte (0 if no answer), code[k]. */
autd3_err_t autd3__echocat_read_states(echocat_t *ec, const uint16_t *list, int cnt, uint8_t *al, uint16_t *code, uint16_t *wkc) {
  uint8_t st[AUTD3_MAX_DEVICES * 6];
  const dgspec_t sp = {ECAT_FPRD, REG_ALSTAT, 6};
  autd3_err_t e = autd3__echocat_each(ec, list, cnt, false, &sp, 1, NULL, st, wkc);
  if (e != AUTD3_OK)
    return e;
  for (int i = 0; i < cnt; i++) {
    uint16_t k = list[i];
    al[k] = wkc[k] ? st[k * 6] : 0;
    code[k] = wkc[k] ? ecat_get16(st + k * 6 + 4) : 0;
  }
  return AUTD3_OK;
}

/* Wait until every slave in list reports `state`; a slave that raises the
 * error flag fails at once with its AL status code. */
autd3_err_t autd3__echocat_wait_state(echocat_t *ec, const uint16_t *list, int cnt, uint8_t state, uint32_t timeout_ms) {
  uint64_t end = autd3__now_ns() + (uint64_t)timeout_ms * 1000000u;
  uint8_t al[AUTD3_MAX_DEVICES];
  uint16_t code[AUTD3_MAX_DEVICES], wkc[AUTD3_MAX_DEVICES];
  for (;;) {
    autd3_err_t e = autd3__echocat_read_states(ec, list, cnt, al, code, wkc);
    if (e != AUTD3_OK && e != AUTD3_E_TIMEOUT)
      return e;
    int bad = -1;
    if (e == AUTD3_OK) {
      for (int i = 0; i < cnt && bad < 0; i++) {
        uint16_t k = list[i];
        if (wkc[k] == 1 && (al[k] & AL_ERROR))
          return autd3_set_error(AUTD3_E_STATE_TIMEOUT,
                                 "echocat %s: device %u refused %s: state %s+ERROR, AL status code 0x%04x", ec->ifname, k,
                                 autd3__ecat_al_name(state), autd3__ecat_al_name(al[k]), code[k]);
        if (wkc[k] != 1 || (al[k] & 0x0F) != state)
          bad = k;
      }
      if (bad < 0)
        return AUTD3_OK;
    }
    if (autd3__now_ns() > end) {
      if (bad < 0)
        return autd3_set_error(AUTD3_E_STATE_TIMEOUT, "echocat %s: no answer while waiting for %s", ec->ifname, autd3__ecat_al_name(state));
      return autd3_set_error(AUTD3_E_STATE_TIMEOUT,
                             "echocat %s: device %d did not reach %s within %u ms (state %s, AL status code 0x%04x%s)",
                             ec->ifname, bad, autd3__ecat_al_name(state), timeout_ms, wkc[bad] ? autd3__ecat_al_name(al[bad]) : "no answer",
                             code[bad], wkc[bad] ? "" : ", lost");
    }
    if (!atomic_load(&ec->running))
      autd3__sleep_ns(1000000);
  }
}

/* ---------------------------------------------------------------- bring-up steps */

/* Count the slaves: BRD of register 0x0000, the working counter is the count (as SOEM v2.0.0 src/ec_config.c ecx_detect_slaves). */
autd3_err_t autd3__echocat_count_slaves(echocat_t *ec, uint16_t *count) {
  slot_t *s = &ec->xs;
  autd3__echocat_slot_start(ec, s, false);
  uint8_t v[2];
  ecat_put16(v, AL_INIT | AL_ACK);
  autd3__ecat_dg_add(&s->f, ECAT_BWR, 0, REG_ALCTL, v, 2);
  uint16_t o = autd3__ecat_dg_add(&s->f, ECAT_BRD, 0, REG_TYPE, NULL, 2);
  autd3_err_t e = autd3__echocat_xfer_direct(ec, s, 20000, 3);
  if (e == AUTD3_E_TIMEOUT) {
    *count = 0;
    return AUTD3_OK;
  }
  if (e != AUTD3_OK)
    return e;
  *count = ecat_get16(s->f.buf + o + 2);
  return AUTD3_OK;
}

/* Back to defaults (the registers SOEM v2.0.0 src/ec_config.c ecx_set_slaves_to_default writes), all broadcast in one frame. */
autd3_err_t autd3__echocat_reset_slaves(echocat_t *ec) {
  slot_t *s = &ec->xs;
  autd3__echocat_slot_start(ec, s, false);
  uint8_t z[48] = {0}, v[2];
  autd3__ecat_dg_add(&s->f, ECAT_BWR, 0, REG_DLCTL + 1, z, 1);         /* auto loop control */
  autd3__ecat_dg_add(&s->f, ECAT_BWR, 0, REG_FMMU0, z, 48);            /* FMMU0-2 off */
  autd3__ecat_dg_add(&s->f, ECAT_BWR, 0, REG_SM0, z, 32);              /* SM0-3 off */
  autd3__ecat_dg_add(&s->f, ECAT_BWR, 0, REG_DCACT, z, 1);             /* SYNC off */
  ecat_put16(v, 0x1000);
  autd3__ecat_dg_add(&s->f, ECAT_BWR, 0, REG_DCSPEED, v, 2);           /* DC loop bandwidth, resets the filter */
  ecat_put16(v, 0x0C00);
  autd3__ecat_dg_add(&s->f, ECAT_BWR, 0, REG_DCFILT, v, 2);
  ecat_put16(v, 2);
  autd3__ecat_dg_add(&s->f, ECAT_BWR, 0, REG_EEPCFG, v, 1);            /* force EEPROM to ECAT... */
  autd3__ecat_dg_add(&s->f, ECAT_BWR, 0, REG_EEPCFG, z, 1);            /* ...and keep it there */
  ecat_put16(v, AL_INIT | AL_ACK);
  autd3__ecat_dg_add(&s->f, ECAT_BWR, 0, REG_ALCTL, v, 2);
  return autd3__echocat_xfer_direct(ec, s, 20000, 3);
}

/* Station addresses 0x1001.. by position (APWR, as SOEM v2.0.0 src/ec_config.c ecx_config_init). */
autd3_err_t autd3__echocat_assign_addresses(echocat_t *ec, const uint16_t *list, int cnt) {
  uint8_t v[AUTD3_MAX_DEVICES * 2] = {0};
  uint16_t wkc[AUTD3_MAX_DEVICES];
  for (int i = 0; i < cnt; i++)
    ecat_put16(v + (size_t)list[i] * 2, STATION(list[i]));
  const dgspec_t sp = {ECAT_APWR, REG_STADR, 2};
  autd3_err_t e = autd3__echocat_each(ec, list, cnt, true, &sp, 1, v, NULL, wkc);
  if (e != AUTD3_OK)
    return e;
  for (int i = 0; i < cnt; i++)
    if (wkc[list[i]] != 1)
      return autd3_set_error(AUTD3_E_IO, "echocat %s: slave at position %u did not take its station address", ec->ifname,
                             list[i]);
  return AUTD3_OK;
}

/* SM0/SM1 for the mailbox where the SII declares one, then PRE-OP. */
autd3_err_t autd3__echocat_mailbox_sm(echocat_t *ec, const uint16_t *list, int cnt) {
  uint8_t sm[AUTD3_MAX_DEVICES * 16] = {0};
  uint16_t mlist[AUTD3_MAX_DEVICES];
  int m = 0;
  for (int i = 0; i < cnt; i++) {
    const slave_t *s = &ec->sl[list[i]];
    if (s->mbx_out_len == 0)
      continue;
    uint8_t *p = sm + (size_t)list[i] * 16;
    memset(p, 0, 16);
    ecat_put16(p, s->mbx_out_off), ecat_put16(p + 2, s->mbx_out_len), p[4] = 0x26, p[6] = 1;
    ecat_put16(p + 8, s->mbx_in_off), ecat_put16(p + 10, s->mbx_in_len), p[12] = 0x22, p[14] = 1;
    mlist[m++] = list[i];
  }
  const dgspec_t sp = {ECAT_FPWR, REG_SM0, 16};
  return m ? autd3__echocat_each(ec, mlist, m, false, &sp, 1, sm, NULL, NULL) : AUTD3_OK;
}

autd3_err_t autd3__echocat_to_preop(echocat_t *ec, const uint16_t *list, int cnt) {
  autd3_err_t e = autd3__echocat_mailbox_sm(ec, list, cnt);
  if (e == AUTD3_OK)
    e = autd3__echocat_request_state(ec, list, cnt, AL_PREOP | AL_ACK);
  if (e == AUTD3_OK)
    e = autd3__echocat_wait_state(ec, list, cnt, AL_PREOP, ec->opt.ethercat.state_timeout_ms);
  return e;
}

/* SM2/SM3 and FMMU0/1 (Beckhoff ESC datasheet section II, registers 0x0600 and 0x0800): all outputs first (626 per device), then all inputs (2 per device). */
autd3_err_t autd3__echocat_map_pdo(echocat_t *ec, const uint16_t *list, int cnt) {
  uint8_t cfg[AUTD3_MAX_DEVICES * 48] = {0};
  for (int i = 0; i < cnt; i++) {
    uint16_t k = list[i];
    uint8_t *p = cfg + (size_t)k * 48;
    memset(p, 0, 48);
    ecat_put16(p, SM2_START), ecat_put16(p + 2, OUT_BYTES), p[4] = 0x64, p[6] = 1; /* SM2 outputs */
    ecat_put16(p + 8, SM3_START), ecat_put16(p + 10, IN_BYTES), p[12] = 0x20, p[14] = 1; /* SM3 inputs */
    uint8_t *f = p + 16;
    ecat_put32(f, (uint32_t)k * OUT_BYTES), ecat_put16(f + 4, OUT_BYTES), f[7] = 7;
    ecat_put16(f + 8, SM2_START), f[11] = 2, f[12] = 1; /* write */
    f += 16;
    ecat_put32(f, (uint32_t)ec->n * OUT_BYTES + (uint32_t)k * IN_BYTES), ecat_put16(f + 4, IN_BYTES), f[7] = 7;
    ecat_put16(f + 8, SM3_START), f[11] = 1, f[12] = 1; /* read */
  }
  const dgspec_t sp[2] = {{ECAT_FPWR, REG_SM2, 16}, {ECAT_FPWR, REG_FMMU0, 32}};
  uint16_t wkc[AUTD3_MAX_DEVICES * 2];
  autd3_err_t e = autd3__echocat_each(ec, list, cnt, false, sp, 2, cfg, NULL, wkc);
  if (e != AUTD3_OK)
    return e;
  for (int i = 0; i < cnt; i++)
    if (wkc[list[i] * 2] != 1 || wkc[list[i] * 2 + 1] != 1)
      return autd3_set_error(AUTD3_E_IO, "echocat %s: device %u refused its SM/FMMU configuration", ec->ifname, list[i]);
  return AUTD3_OK;
}
