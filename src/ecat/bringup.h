/*
 * The EtherCAT bring-up's OP wait, once for every EtherCAT link (echocat,
 * SOEM, EtherCrab): warm-up cycles in SAFE-OP, the OP request, OP once the
 * working counter is stable, the periodic acknowledge / re-request while it
 * is not, and the failure naming each device's AL status code. The rules:
 * include/autd3/link_driver.h autd3_link_ecat_bringup_ops_t; links outside
 * libautd3 reach it through the services table (version 3).
 *
 * Two layers, so the rules are tested without a bus or a clock: the step
 * function (autd3__ecat_opwait_step) decides from one cycle's outcome and the
 * time what happens next; the driver (autd3__ecat_bringup_run) runs the
 * link's cycle and does what the step says.
 *
 * Context: open time, on the opening thread; blocks for the link's cycles;
 * no allocation.
 */
#ifndef AUTD3_ECAT_BRINGUP_H
#define AUTD3_ECAT_BRINGUP_H

#include "autd3/link_driver.h"

/* Consecutive good cycles before OP counts (crate autd3-rs-link-soem 0.6.1 src/link.rs). */
#define AUTD3__ECAT_OP_STABLE_CYCLES 5u
/* While no cycle is good: acknowledge errors / request OP again this often (same source). */
#define AUTD3__ECAT_OP_NUDGE_NS 100000000ull

/* What the driver does after a cycle. */
typedef enum autd3__ecat_opw_action {
  AUTD3__OPW_CYCLE = 0,  /* run the next cycle */
  AUTD3__OPW_REQUEST_OP, /* the warm-up is over: request OP */
  AUTD3__OPW_NUDGE,      /* acknowledge SAFE-OP+ERROR, request OP from SAFE-OP, per device */
  AUTD3__OPW_CONFIRM,    /* stable: read the states; every device in OP ends the wait */
  AUTD3__OPW_TIMEOUT     /* op_wait_timeout_ms passed since the OP request */
} autd3__ecat_opw_action_t;

typedef struct autd3__ecat_opwait {
  uint32_t warmup_cycles;
  uint64_t timeout_ns;
  uint32_t cycles;     /* cycles run */
  bool requested;      /* OP requested */
  uint64_t op_req_ns;  /* when */
  uint64_t nudge_ns;   /* the last nudge (or the request) */
  uint32_t good;       /* consecutive good cycles */
  uint16_t wkc;        /* their working counter */
  uint16_t last_wkc;   /* the last cycle's (messages) */
} autd3__ecat_opwait_t;

void autd3__ecat_opwait_init(autd3__ecat_opwait_t *w, uint32_t warmup_cycles, uint32_t op_wait_timeout_ms);
/* One cycle's outcome `c`, the cycle having ended at `now_ns`: what next. */
autd3__ecat_opw_action_t autd3__ecat_opwait_step(autd3__ecat_opwait_t *w, const autd3_link_ecat_cycle_t *c, uint64_t now_ns);
/* The confirming state read found a device not in OP: count the good cycles again. */
void autd3__ecat_opwait_unconfirmed(autd3__ecat_opwait_t *w);

/* autd3_link_services_t.ecat_bringup: _run_at on the monotonic clock. */
autd3_err_t autd3__ecat_bringup_run(const autd3_link_ecat_bringup_ops_t *ops, const autd3_link_ecat_bringup_config_t *cfg,
                                    uint16_t *wkc);
/* The driver with its clock given (tests): now(now_ctx) is read after every cycle. */
autd3_err_t autd3__ecat_bringup_run_at(const autd3_link_ecat_bringup_ops_t *ops, const autd3_link_ecat_bringup_config_t *cfg,
                                       uint16_t *wkc, uint64_t (*now)(void *now_ctx), void *now_ctx);

/* "INIT", "PRE-OP", "BOOT", "SAFE-OP", "OP" for an AL status (low nibble), else "NONE". */
const char *autd3__ecat_al_name(uint16_t al);
/* A short description of an AL status code (ETG.1000.6 AL status codes), "" if not one of the common ones. */
const char *autd3__ecat_al_code_text(uint16_t code);

#endif
