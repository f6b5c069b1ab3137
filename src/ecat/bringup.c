/*
 * The EtherCAT bring-up's OP wait (src/ecat/bringup.h; the rules:
 * include/autd3/link_driver.h autd3_link_ecat_bringup_ops_t).
 *
 * As the new-generation AUTD3 links bring a chain up (crate
 * autd3-rs-link-soem 0.6.1 src/link.rs: warm-up cycles, OP request, a
 * working counter stable for 5 cycles, acknowledge / re-request every
 * 100 ms; crate autd3-rs-link-ethercrab 0.7.0 src/link/open.rs: the same
 * counter in each of those cycles). The AL states and the acknowledge bit:
 * ETG.1000.6 (AL control 0x0120, AL status 0x0130, AL status code 0x0134).
 */
#include "ecat/bringup.h"

#include <stdio.h>
#include <string.h>

#include "ecat/regs.h"
#include "platform/platform.h"

const char *autd3__ecat_al_name(uint16_t al) {
  switch (al & 0x0F) {
  case AL_INIT: return "INIT";
  case AL_PREOP: return "PRE-OP";
  case AL_BOOT: return "BOOT";
  case AL_SAFEOP: return "SAFE-OP";
  case AL_OP: return "OP";
  default: return "NONE";
  }
}

const char *autd3__ecat_al_code_text(uint16_t code) {
  switch (code) {
  case 0x0000: return "no error";
  case 0x0011: return "invalid requested state change";
  case 0x0012: return "unknown requested state";
  case 0x0016: return "invalid mailbox configuration";
  case 0x0017: return "invalid sync manager configuration";
  case 0x0019: return "no valid outputs";
  case 0x001A: return "synchronization error";
  case 0x001B: return "sync manager watchdog";
  case 0x001D: return "invalid output configuration";
  case 0x001E: return "invalid input configuration";
  case 0x002C: return "fatal sync error";
  case 0x0030: return "invalid DC SYNC configuration";
  default: return "";
  }
}

/* ---- the step function -------------------------------------------------------------- */

void autd3__ecat_opwait_init(autd3__ecat_opwait_t *w, uint32_t warmup_cycles, uint32_t op_wait_timeout_ms) {
  memset(w, 0, sizeof *w);
  w->warmup_cycles = warmup_cycles;
  w->timeout_ns = (uint64_t)op_wait_timeout_ms * 1000000u;
}

autd3__ecat_opw_action_t autd3__ecat_opwait_step(autd3__ecat_opwait_t *w, const autd3_link_ecat_cycle_t *c, uint64_t now) {
  w->cycles++;
  w->last_wkc = c->wkc;
  if (!w->requested) {
    if (w->cycles <= w->warmup_cycles)
      return AUTD3__OPW_CYCLE;
    w->requested = true;
    w->op_req_ns = w->nudge_ns = now;
    return AUTD3__OPW_REQUEST_OP;
  }
  bool ok = !c->lost && c->wkc_ok && c->all_op;
  if (ok && w->good > 0 && c->wkc == w->wkc)
    w->good++;
  else if (ok) /* the first good cycle, or the counter changed: count from this one */
    w->good = 1, w->wkc = c->wkc;
  else
    w->good = 0;
  if (w->good >= AUTD3__ECAT_OP_STABLE_CYCLES)
    return AUTD3__OPW_CONFIRM;
  if (now - w->op_req_ns > w->timeout_ns)
    return AUTD3__OPW_TIMEOUT;
  if (w->good == 0 && now - w->nudge_ns >= AUTD3__ECAT_OP_NUDGE_NS) {
    w->nudge_ns = now;
    return AUTD3__OPW_NUDGE;
  }
  return AUTD3__OPW_CYCLE;
}

void autd3__ecat_opwait_unconfirmed(autd3__ecat_opwait_t *w) { w->good = 0; }

/* ---- the driver --------------------------------------------------------------------- */

typedef struct states {
  uint16_t al[AUTD3_MAX_DEVICES], code[AUTD3_MAX_DEVICES];
  bool answered[AUTD3_MAX_DEVICES];
} states_t;

static autd3_err_t read_states(const autd3_link_ecat_bringup_ops_t *ops, states_t *s) {
  memset(s, 0, sizeof *s);
  return ops->read_states(ops->ctx, s->al, s->code, s->answered);
}

/* Acknowledge SAFE-OP+ERROR, request OP again from SAFE-OP (the request may have been missed). Best effort. */
static void nudge(const autd3_link_ecat_bringup_ops_t *ops, uint16_t n) {
  states_t s;
  if (read_states(ops, &s) != AUTD3_OK)
    return;
  for (uint16_t k = 0; k < n; k++) {
    if (!s.answered[k] || (s.al[k] & 0x0F) != AL_SAFEOP)
      continue;
    (void)ops->write_control(ops->ctx, k, (s.al[k] & AL_ERROR) ? (uint16_t)(AL_SAFEOP | AL_ACK) : (uint16_t)AL_OP);
  }
}

static bool all_op(const states_t *s, uint16_t n) {
  for (uint16_t k = 0; k < n; k++)
    if (!s->answered[k] || (s->al[k] & 0x1F) != AL_OP)
      return false;
  return true;
}

/* STATE_TIMEOUT naming each device not in OP with its AL status code (the states as read now). */
static autd3_err_t timeout_error(const autd3_link_ecat_bringup_ops_t *ops, const autd3_link_ecat_bringup_config_t *cfg,
                                 const autd3__ecat_opwait_t *w) {
  states_t s;
  char detail[400] = "";
  if (read_states(ops, &s) != AUTD3_OK) {
    snprintf(detail, sizeof detail, "the states could not be read (%s)", autd3_last_error());
  } else if (all_op(&s, cfg->devices)) {
    snprintf(detail, sizeof detail, "every device reads OP, but the working counter (last %u) was not stable for %u cycles",
             (unsigned)w->last_wkc, AUTD3__ECAT_OP_STABLE_CYCLES);
  } else {
    for (uint16_t k = 0; k < cfg->devices; k++) {
      size_t l = strlen(detail);
      if ((s.answered[k] && (s.al[k] & 0x1F) == AL_OP) || l + 1 >= sizeof detail)
        continue;
      const char *text = autd3__ecat_al_code_text(s.code[k]);
      if (!s.answered[k])
        snprintf(detail + l, sizeof detail - l, "%sdevice %u no answer", l ? "; " : "", k);
      else
        snprintf(detail + l, sizeof detail - l, "%sdevice %u %s%s, AL status code 0x%04x%s%s%s", l ? "; " : "", k,
                 autd3__ecat_al_name(s.al[k]), (s.al[k] & AL_ERROR) ? "+ERROR" : "", s.code[k], *text ? " (" : "", text,
                 *text ? ")" : "");
    }
  }
  return autd3_set_error(AUTD3_E_STATE_TIMEOUT,
                         "%s %s: devices not in OP with a stable working counter within op_wait_timeout_ms = %u: %s", cfg->who,
                         cfg->ifname, cfg->op_wait_timeout_ms, detail);
}

static uint64_t mono(void *unused) {
  (void)unused;
  return autd3__now_ns();
}

autd3_err_t autd3__ecat_bringup_run_at(const autd3_link_ecat_bringup_ops_t *ops, const autd3_link_ecat_bringup_config_t *cfg,
                                       uint16_t *wkc, uint64_t (*now)(void *), void *now_ctx) {
  if (ops == NULL || cfg == NULL || wkc == NULL || ops->exchange == NULL || ops->request_op == NULL ||
      ops->read_states == NULL || ops->write_control == NULL)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "EtherCAT bring-up: NULL ops, primitive, config or wkc");
  if (cfg->size < sizeof *cfg || cfg->devices == 0 || cfg->devices > AUTD3_MAX_DEVICES || cfg->who == NULL ||
      cfg->ifname == NULL)
    return autd3_set_error(AUTD3_E_INVALID_ARGUMENT, "EtherCAT bring-up: config.size = %u (expected %u), %u devices",
                           (unsigned)cfg->size, (unsigned)sizeof *cfg, (unsigned)cfg->devices);
  autd3__ecat_opwait_t w;
  autd3__ecat_opwait_init(&w, cfg->warmup_cycles, cfg->op_wait_timeout_ms);
  for (;;) {
    autd3_link_ecat_cycle_t c = {0};
    autd3_err_t e = ops->exchange(ops->ctx, &c);
    if (e != AUTD3_OK)
      return e;
    states_t s;
    switch (autd3__ecat_opwait_step(&w, &c, now(now_ctx))) {
    case AUTD3__OPW_CYCLE:
      break;
    case AUTD3__OPW_REQUEST_OP:
      if ((e = ops->request_op(ops->ctx)) != AUTD3_OK)
        return e;
      break;
    case AUTD3__OPW_NUDGE:
      nudge(ops, cfg->devices);
      break;
    case AUTD3__OPW_CONFIRM:
      if (read_states(ops, &s) == AUTD3_OK && all_op(&s, cfg->devices)) {
        *wkc = w.wkc;
        return AUTD3_OK;
      }
      autd3__ecat_opwait_unconfirmed(&w);
      break;
    case AUTD3__OPW_TIMEOUT:
      return timeout_error(ops, cfg, &w);
    }
  }
}

autd3_err_t autd3__ecat_bringup_run(const autd3_link_ecat_bringup_ops_t *ops, const autd3_link_ecat_bringup_config_t *cfg,
                                    uint16_t *wkc) {
  return autd3__ecat_bringup_run_at(ops, cfg, wkc, mono, NULL);
}
