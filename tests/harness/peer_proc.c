/* The differential-peer process harness (peer_proc.h). */
#include "harness/peer_proc.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/test.h"

void peer_proc_require(const char *exe, const char *peer_name) {
  if (exe == NULL || access(exe, X_OK) != 0) SKIP("the %s peer is not built (needs cargo)", peer_name);
}

void peer_proc_input(peer_proc_t *p) {
  memset(p, 0, sizeof *p);
  snprintf(p->path, sizeof p->path, "/tmp/autd3-peer-XXXXXX");
  int fd = mkstemp(p->path);
  ASSERT_TRUE(fd >= 0);
  p->in = fdopen(fd, "w");
  ASSERT_TRUE(p->in != NULL);
}

void peer_proc_put_hex(peer_proc_t *p, const uint8_t *b, size_t n) {
  for (size_t i = 0; i < n; i++) fprintf(p->in, "%02x", b[i]);
  fputc('\n', p->in);
}

/* The whole input goes to a file first, not down a pipe: with popen the
 * peer's stdout is our only pipe, and writing a long script into a second
 * one while the peer's answers fill the first would deadlock both. */
void peer_proc_start(peer_proc_t *p, const char *exe) {
  ASSERT_TRUE(fclose(p->in) == 0);
  p->in = NULL;
  char cmd[1024];
  ASSERT_TRUE((size_t)snprintf(cmd, sizeof cmd, "'%s' < '%s'", exe, p->path) < sizeof cmd);
  p->out = popen(cmd, "r");
  ASSERT_TRUE(p->out != NULL);
}

bool peer_proc_line(peer_proc_t *p, char *buf, size_t cap) {
  if (fgets(buf, (int)cap, p->out) == NULL) return false;
  size_t len = strcspn(buf, "\n");
  if (buf[len] != '\n' && !feof(p->out)) TEST_FAIL_("a peer line is longer than %zu bytes", cap - 1);
  buf[len] = 0;
  return true;
}

void peer_proc_finish(peer_proc_t *p) {
  int st = pclose(p->out);
  p->out = NULL;
  unlink(p->path);
  if (st != 0) TEST_FAIL_("peer exited with status %d", st);
}

uint8_t *peer_script_frame(peer_script_t *sc, const char *what) {
  ASSERT_TRUE(sc->n < PEER_SCRIPT_MAX);
  peer_step_t *s = &sc->s[sc->n++];
  memset(s, 0, sizeof *s);
  s->what = what;
  return s->frame;
}

void peer_script_directive(peer_script_t *sc, const char *what, const char *directive) {
  ASSERT_TRUE(sc->n < PEER_SCRIPT_MAX);
  peer_step_t *s = &sc->s[sc->n++];
  memset(s, 0, sizeof *s);
  s->what = what;
  s->directive = directive;
}

void peer_script_run(const char *exe, const peer_script_t *sc, char *lines, size_t cap) {
  peer_proc_t p;
  peer_proc_input(&p);
  for (int i = 0; i < sc->n; i++) {
    if (sc->s[i].directive) fprintf(p.in, "%s\n", sc->s[i].directive);
    else peer_proc_put_hex(&p, sc->s[i].frame, AUTD3_TX_FRAME_BYTES);
  }
  peer_proc_start(&p, exe);
  int i = 0;
  while (i < sc->n && peer_proc_line(&p, lines + (size_t)i * cap, cap)) i++;
  peer_proc_finish(&p);
  if (i != sc->n) TEST_FAIL_("peer printed %d lines for %d steps", i, sc->n);
}

void peer_script_compare(const peer_script_t *sc, const char *reference, const char *ours, size_t cap) {
  int bad = 0;
  for (int i = 0; i < sc->n; i++) {
    const char *r = reference + (size_t)i * cap, *o = ours + (size_t)i * cap;
    if (strcmp(r, o) == 0) {
      fprintf(stderr, "%3d %-52s %.200s\n", i, sc->s[i].what, o);
    } else {
      fprintf(stderr, "%3d %-52s DIFFERS\n    reference %s\n    ours      %s\n", i, sc->s[i].what, r, o);
      bad++;
    }
  }
  ASSERT_EQ(bad, 0);
}
