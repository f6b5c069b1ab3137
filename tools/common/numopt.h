/*
 * The one numeric command-line option parser of every tool (autd3-emu,
 * autd3-emu-bench, autd3-perftest, autd3-remote-server, autd3-twincat-emu):
 * a value is accepted only if the whole argument is a number inside the
 * option's range. strtoul-style parsing is not enough: it skips leading white
 * space, accepts a sign on unsigned numbers ("-1" becomes 2^64-1), octal on a
 * leading 0, and the tools then truncated the result to the field's width.
 *
 * Syntax: integers are decimal, or hexadecimal with 0x/0X (unsigned only);
 * signed integers may start with '-'; no white space, no '+', no suffix.
 * Reals are plain decimal (strtod without inf/nan/hex and without leading
 * white space). Standard C only, no OS header.
 */
#ifndef AUTD3_TOOLS_NUMOPT_H
#define AUTD3_TOOLS_NUMOPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Parse `s`, the value of option `opt` (e.g. "--hop-ns"), into *out if it is
 * a number in [lo, hi]. On failure *out is untouched and `err` gets
 * "OPT 'S': expected an integer in LO..HI" (without the tool's name).
 */
bool autd3_numopt_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out, char *err, size_t cap);
bool autd3_numopt_i64(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out, char *err, size_t cap);
bool autd3_numopt_f64(const char *opt, const char *s, double lo, double hi, double *out, char *err, size_t cap);

/*
 * A duration: a plain decimal number (autd3_numopt_f64's syntax) followed by a unit, ns, us, ms, s, m (or min)
 * or h, as humantime writes them ("30s", "100ms", "1.5s"); a bare number is in `bare_unit_ns` (0: a unit is
 * required). Into *out_ns if in [lo_ns, hi_ns]; otherwise `err` names the option, the value and the range.
 */
bool autd3_numopt_duration_ns(const char *opt, const char *s, uint64_t bare_unit_ns, uint64_t lo_ns, uint64_t hi_ns,
                              uint64_t *out_ns, char *err, size_t cap);

/* The same for command-line parsing: on failure print "TOOL: <message>" to
 * stderr and exit with status 2 (the tools' usage-error status). */
uint64_t autd3_numopt_u64_or_exit(const char *tool, const char *opt, const char *s, uint64_t lo, uint64_t hi);
int64_t autd3_numopt_i64_or_exit(const char *tool, const char *opt, const char *s, int64_t lo, int64_t hi);
double autd3_numopt_f64_or_exit(const char *tool, const char *opt, const char *s, double lo, double hi);
uint64_t autd3_numopt_duration_ns_or_exit(const char *tool, const char *opt, const char *s, uint64_t bare_unit_ns,
                                          uint64_t lo_ns, uint64_t hi_ns);

#endif
