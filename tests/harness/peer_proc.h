/*
 * The differential-peer process harness: one reference peer (a cargo binary
 * under tests/peers, path given by the build) run as a child process, fed a
 * script on stdin, answering one line per request on stdout. Used by the
 * differential tests of the device model, the v12 device model, the output
 * commands and the command encoders.
 *
 * Two layers:
 * - peer_proc_*: start the peer on an input written beforehand, read its
 *   lines, check its exit status (any request/answer protocol);
 * - peer_script_*: a script of frames (and directive lines such as
 *   "power_cycle" or "state"), one answer line per step, run through the
 *   peer and compared line by line with the same script through our model.
 */
#ifndef AUTD3_TEST_PEER_PROC_H
#define AUTD3_TEST_PEER_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "autd3/autd3.h"

/* Skip the case (by name, exit 77) when the peer is not built (it needs cargo). */
void peer_proc_require(const char *exe, const char *peer_name);

typedef struct {
  char path[40]; /* the input file */
  FILE *in;      /* while writing the input */
  FILE *out;     /* the peer's stdout once started */
} peer_proc_t;

/* Open the peer's input for writing (p->in). */
void peer_proc_input(peer_proc_t *p);
/* One input line: the bytes in hex. */
void peer_proc_put_hex(peer_proc_t *p, const uint8_t *b, size_t n);
/* Close the input and start exe reading it. */
void peer_proc_start(peer_proc_t *p, const char *exe);
/* The next output line without its newline into buf; false at the end of the output. A line longer than cap fails
 * the case (it would otherwise be read as two answers). */
bool peer_proc_line(peer_proc_t *p, char *buf, size_t cap);
/* Wait for the peer; fail the case unless it exited with status 0. Removes the input. */
void peer_proc_finish(peer_proc_t *p);

#define PEER_SCRIPT_MAX 128

typedef struct {
  const char *what;      /* printed beside the answers */
  const char *directive; /* non-NULL: this line goes to the peer instead of a frame */
  uint8_t frame[AUTD3_TX_FRAME_BYTES];
} peer_step_t;

typedef struct {
  peer_step_t s[PEER_SCRIPT_MAX];
  int n;
} peer_script_t;

/* Append a frame step; returns its frame (zeroed) for the caller to encode. */
uint8_t *peer_script_frame(peer_script_t *sc, const char *what);
/* Append a directive step ("power_cycle", "state": whatever the peer understands). */
void peer_script_directive(peer_script_t *sc, const char *what, const char *directive);

/* Run the script through exe: answer i lands in lines + i * cap. Fails the case unless the peer answers every
 * step and exits 0. */
void peer_script_run(const char *exe, const peer_script_t *sc, char *lines, size_t cap);
/* Print every step with both answers (differences in full) and fail the case if any differs. */
void peer_script_compare(const peer_script_t *sc, const char *reference, const char *ours, size_t cap);

#endif
