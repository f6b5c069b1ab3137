/*
 * The devices' execution logs written to a file (twincat_emu.h
 * autd3_tcemu_log_file_open): a thread of its own drains them every 100 ms,
 * so the task loop never waits on a file.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "autd3/link_driver.h"
#include "emulation/twincat/twincat_emu.h"
#include "platform/platform.h"

#define DRAIN_PERIOD_NS 100000000ull
#define BATCH 512

struct autd3_tcemu_log_file {
  autd3_tcemu_t *emu;
  FILE *f;
  autd3__thread_t thread;
  bool have_thread;
  atomic_bool stop;
  autd3_exec_entry_t ent[BATCH]; /* the writer's batch (one writer at a time: the thread, then close) */
};

static void drain_all(autd3_tcemu_log_file_t *lf) {
  for (uint16_t k = 0; k < autd3_tcemu_devices(lf->emu); k++) {
    size_t n;
    while ((n = autd3_tcemu_log_drain(lf->emu, k, lf->ent, BATCH, NULL)) > 0)
      for (size_t i = 0; i < n; i++)
        fprintf(lf->f, "%u %u %u %02x %02x %02x %08x\n", (unsigned)k, (unsigned)lf->ent[i].index, (unsigned)lf->ent[i].boot,
                lf->ent[i].seq, lf->ent[i].cmd, lf->ent[i].result, (unsigned)lf->ent[i].tag);
  }
  fflush(lf->f);
}

static void *writer(void *arg) {
  autd3_tcemu_log_file_t *lf = arg;
  while (!atomic_load(&lf->stop)) {
    autd3__sleep_ns(DRAIN_PERIOD_NS);
    drain_all(lf);
  }
  return NULL;
}

autd3_err_t autd3_tcemu_log_file_open(autd3_tcemu_t *emu, const char *path, autd3_tcemu_log_file_t **out) {
  *out = NULL;
  autd3_tcemu_log_file_t *lf = calloc(1, sizeof *lf);
  if (lf == NULL) return autd3_set_error(AUTD3_E_NOMEM, "twincat-emu: --log-file: out of memory");
  lf->emu = emu;
  lf->f = fopen(path, "w");
  if (lf->f == NULL) {
    free(lf);
    return autd3_set_error(AUTD3_E_IO, "--log-file %s: cannot open", path);
  }
  atomic_init(&lf->stop, false);
  /* Without the thread the logs are still written, at close (a full log drops entries and says how many). */
  lf->have_thread = autd3__thread_start(&lf->thread, writer, lf, "tcemu-log") == AUTD3_OK;
  *out = lf;
  return AUTD3_OK;
}

autd3_err_t autd3_tcemu_log_file_close(autd3_tcemu_log_file_t *lf) {
  if (lf == NULL) return AUTD3_OK;
  atomic_store(&lf->stop, true);
  if (lf->have_thread) autd3__thread_join(&lf->thread);
  drain_all(lf);
  for (uint16_t k = 0; k < autd3_tcemu_devices(lf->emu); k++) {
    uint64_t dropped = 0;
    autd3_tcemu_log_drain(lf->emu, k, NULL, 0, &dropped);
    fprintf(lf->f, "dropped %u %llu\n", (unsigned)k, (unsigned long long)dropped);
  }
  bool ok = ferror(lf->f) == 0;
  ok = fclose(lf->f) == 0 && ok;
  free(lf);
  return ok ? AUTD3_OK : autd3_set_error(AUTD3_E_IO, "twincat-emu: --log-file: a write failed");
}
