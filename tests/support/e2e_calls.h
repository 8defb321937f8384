/*
 * tests/support/e2e_calls.h - helpers of the hook tests; they run programs through the tests'
 * one child runner, tests/support/child.h.
 *
 * The end-to-end tests compile small programs from tests/e2e/ with the real compilers, run
 * them under xfdr, and turn the trace into one line of text: the calls as the file says
 * they happened, with names from the .map sidecar, e.g.
 *   "E main,E depth,X depth,T tail,A logged(3),C hello,X main"
 * E entry, X exit, T tail exit, A entry with arguments, C custom event (printable payload).
 * The expected line is written by hand from the program's source: the oracle is the source.
 */
#ifndef XFDR_TESTS_SUPPORT_E2E_CALLS_H
#define XFDR_TESTS_SUPPORT_E2E_CALLS_H

#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/child.h"
#include "xfdr/format.h"
#include "xfdr/reader.h"

#define TH_RUN_TIMEOUT_S 120
#define TH_NAMES_MAX 256
#define TH_PATH_BYTES 512

struct th_name {
	uint32_t id;
	char name[64];
};

struct th_names {
	struct th_name v[TH_NAMES_MAX];
	size_t n;
};

/* A fresh directory for this test binary's files; removed by th_root_remove(). */
const char *th_root_make(void);

void th_root_remove(void);

/* cmocka group set-up and tear-down of a test binary that needs nothing but th_root. */
int th_group_setup(void **state);

int th_group_teardown(void **state);

/* out = a + b (TH_PATH_BYTES); a path that does not fit fails the test. */
void th_join(char *out, const char *a, const char *b);

/* "$root/name", created as a directory when mkdir is set. */
void th_path(char *out, const char *name, int mkdir_it);

/* An environment variable the test needs; fails the test with a hint when unset. */
const char *th_env(const char *name, const char *fallback);

/* $XFDR_BUILD/<rel>, which must exist (the libraries are built before the tests). */
void th_build_file(char *out, const char *rel);

/* $XFDR_SRC/<rel>. */
void th_src_file(char *out, const char *rel);

/*
 * th_run - run argv (searched in PATH) with the extra "K=V" environment entries (NULL
 * terminated, may be NULL; each replaces the inherited K), stdout and stderr appended to log.
 * Kills it after TH_RUN_TIMEOUT_S, shows the log and fails the test.
 * Returns the exit status, 127 if it could not be started, or 128 + signal.
 */
int th_run(char *const argv[], char *const extra_env[], const char *log);

/* th_run() that must succeed; on failure the log is shown. */
void th_run_ok(char *const argv[], char *const extra_env[], const char *log);

/* The one file in dir whose name ends in suffix; fails unless there is exactly one. */
void th_find_one(const char *dir, const char *suffix, char *out);

/* Read the "function<TAB>id<TAB>name<TAB>..." lines of a .map file. */
void th_read_names(const char *map, struct th_names *names);

const char *th_name_of(const struct th_names *names, uint32_t id);

void th_append(char *out, size_t out_bytes, const char *fmt, ...);

/*
 * th_calls - the events of thread tid16 (0: every thread but 0, the drop-count buffer's) as
 * one line (format at the top), read with the reader library from a verified file.
 */
void th_calls(const char *trace, const struct th_names *names, uint16_t tid16, char *out,
	      size_t out_bytes);

/* Occurrences of needle in hay. */
size_t th_count(const char *hay, const char *needle);

/* `xfdr verify` and `llvm-xray convert` both accept the file. */
void th_tools_accept(const char *trace, const char *log);

#endif /* XFDR_TESTS_SUPPORT_E2E_CALLS_H */
