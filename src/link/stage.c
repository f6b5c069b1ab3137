/*
 * The stage deadline a link reports from wait_next_cycle
 * (autd3_link_report_stage_deadline, link_driver.h) and the caller's side of
 * it (link_internal.h). A thread-local rather than a field of the link header
 * or a vtable member, as autd3_link_report_inputs: both are laid out by links
 * built against older headers, which must keep working unchanged.
 */
#include "link/link_internal.h"

static _Thread_local struct {
  const struct autd3_link *link;
  uint64_t deadline_ns;
} stage_;

void autd3_link_report_stage_deadline(struct autd3_link *link, uint64_t deadline_ns) {
  if (link == NULL || stage_.link != link) return;
  stage_.deadline_ns = deadline_ns;
}

autd3_err_t autd3__link_wait_stage(autd3_link_t *link, uint64_t *deadline_ns) {
  stage_.link = link;
  stage_.deadline_ns = 0;
  autd3_err_t err = autd3_link_wait_next_cycle(link);
  *deadline_ns = err == AUTD3_OK ? stage_.deadline_ns : 0;
  stage_.link = NULL;
  return err;
}
