/*
 * tests/support/preload_record.h - a small C program compiled with -finstrument-functions and
 * recorded under LD_PRELOAD=libxfdr.so.0, for the reader tests that need a real trace (real
 * threads, names and sidecar) rather than a hand-built one. Every call fails the test (cmocka)
 * on an error. Files go to the scratch directory (tests/support/scratch.h).
 */
#ifndef XFDR_TESTS_SUPPORT_PRELOAD_RECORD_H
#define XFDR_TESTS_SUPPORT_PRELOAD_RECORD_H

#include <stddef.h>

/* The C source text compiled (gcc -O0 -g -finstrument-functions -pthread); its path in prog. */
void preload_build(const char *source, char *prog, size_t n);

/*
 * Run prog (with argument arg; NULL: none) under LD_PRELOAD=$XFDR_BUILD/lib/libxfdr.so.0 and
 * XFDR_OPTIONS=start=1:output=DIR/OPTIONS, where DIR is the new scratch directory dir_name and
 * options (may be "") begins with ':'. The program must exit with 0; its trace's path in trace.
 */
void preload_record(const char *prog, const char *arg, const char *dir_name, const char *options,
		    char *trace, size_t n);

#endif /* XFDR_TESTS_SUPPORT_PRELOAD_RECORD_H */
