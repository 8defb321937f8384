/*
 * tests/support/runtime_test.h - helpers shared by the runtime tests.
 *
 * Each helper checks with cmocka's assert macros, so a failure names the test and the line.
 * Files go to a fresh directory under /tmp per test binary, removed at the end.
 */
#ifndef XFDR_TESTS_SUPPORT_RUNTIME_TEST_H
#define XFDR_TESTS_SUPPORT_RUNTIME_TEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/child.h"
#include "xfdr/format.h"
#include "xfdr/reader.h"
#include "xfdr/xfdr.h"

extern char ts_dir[128];

/* A fresh output directory ending in '/'. */
const char *ts_dir_make(void);

void ts_dir_remove(void);

int ts_sanitized(void);

/*
 * A child that ended as a crash by sig does when no handler of its own takes it: killed by sig.
 * Under a sanitizer its runtime's handler, installed before xfdr and so the program's own to
 * it, takes SIGSEGV and SIGBUS: a report, and exit status 1 (the crash flushed from the
 * sanitizer's death callback).
 */
void ts_expect_crash_end(const struct child_result *r, int sig);

/*
 * A store to address 0, read at run time so the fault is not optimized away. The fault is
 * meant: UndefinedBehaviorSanitizer's null check (check-san) would report it and exit first.
 */
__attribute__((noinline, no_sanitize("null"))) void ts_store_to_null(int value);

uint32_t ts_tid(void);

/* cmocka group fixtures: a fresh ts_dir for the group; stop recording and remove it after. */
int ts_group_setup(void **state);

int ts_group_teardown(void **state);

/*
 * The options of a test's recorder: a small pool in ts_dir, no flush at exit, the given mode;
 * recording a failed test may have left on is stopped first. A test sets what else it needs.
 */
void ts_options(struct xfdr_options *o, size_t buffer_size, size_t buffer_max, int mode);

/*
 * init with ts_options(); returns xfdr_init's result. ts_init: bounded mode, where an
 * exhausted pool drops and counts (what most tests check byte by byte).
 */
int ts_init_mode(size_t buffer_size, size_t buffer_max, int per_thread_files, int mode);

int ts_init(size_t buffer_size, size_t buffer_max, int per_thread_files);

/* Whole file into memory (caller frees); asserts it could be read. */
uint8_t *ts_slurp(const char *path, size_t *bytes);

uint64_t ts_get64(const uint8_t *p);

uint32_t ts_get32(const uint8_t *p);

uint16_t ts_get16(const uint8_t *p);

/*
 * Run `$XFDR_LLVM_XRAY convert --output-format=yaml path`; returns its exit status and, when
 * yaml is not NULL, its output (caller frees). The independent oracle for every file.
 */
int ts_llvm_yaml(const char *path, char **yaml);

/* Occurrences of needle in hay. */
size_t ts_count(const char *hay, const char *needle);

/* ts_dir_entries - the entries of dir other than . and .. */
int ts_dir_entries(const char *dir);

/* Open and verify with the reader library; fails the test with the reader's message. */
struct xfdr_trace *ts_open_verified(const char *path);

/* The value of a "key<TAB>..." line of a .map file (the rest of the line), or NULL. */
const char *ts_map_value(const char *map, const char *key, char *out, size_t out_bytes);

/*
 * Capture what fn() writes to stderr (fd 2) into out. The runtime writes with write(2), so
 * the redirection is done on the descriptor.
 */
void ts_capture_stderr(void (*fn)(void *), void *arg, char *out, size_t out_bytes);

/* One record of `llvm-xray convert --output-format=yaml`. */
struct ts_yrec {
	unsigned fid;
	unsigned cpu;
	unsigned thread;
	char kind[32];
	uint64_t tsc;
	char args[128]; /* the text inside "args: [ ... ]", "" without */
	char data[128]; /* the data field as printed */
};

/*
 * Searches stay inside one line: strstr() on the rest of a long YAML text is linear in what is
 * left, and ASan's interceptor makes it so even when the match is near (quadratic overall).
 */
const char *ts_field(const char *line, const char *eol, const char *key);

/*
 * The next record line ("  - { ...") of llvm-xray's YAML at or after p, or NULL; *eol gets its
 * end. Start with p at the "records:" line.
 */
const char *ts_next_record(const char *p, const char **eol);

/* Parse every record line; returns how many (at most max are stored). */
size_t ts_yaml_records(const char *yaml, struct ts_yrec *out, size_t max);

/*
 * Call fn for every event of the verified file at path, in the given order, until fn returns
 * nonzero. A reader error fails the test with the reader's message.
 */
void ts_each_event(const char *path, enum xfdr_order order,
		   int (*fn)(const struct xfdr_event *ev, void *arg), void *arg);

/* `xfdr verify` and `llvm-xray convert` accept the trace. */
void ts_tools_accept(const char *trace);

/*
 * The known sequence a child records and a rebuilt trace must hold exactly: event k is the
 * entry (k even) or exit (k odd) of function k / 2 % 1000 + 1.
 */
uint32_t ts_seq_fid(uint64_t k);

int ts_seq_is_exit(uint64_t k);

void ts_seq_issue(uint64_t k);

int ts_seq_event(const struct xfdr_event *ev, void *arg);

/* The reader library, in file order: exactly the sequence. Returns the event count. */
size_t ts_seq_reader(const char *path);

/* One function record of llvm-xray's YAML, as ts_seq_llvm() needs it. */
struct ts_seq_rec {
	unsigned fid, thread;
	int exit;
	uint64_t tsc;
};

int ts_seq_rec_tsc_cmp(const void *a, const void *b);

/* The value after "key" in [line, eol), or NULL (bounded to the line: the YAML is long). */
const char *ts_seq_field(const char *line, const char *eol, const char *key);

/*
 * llvm-xray: one thread, exactly events 0 .. n-1 of the sequence, at most max + 1 of them,
 * taken in TSC order: llvm-xray 14 orders a thread's buffers with a comparator that is no
 * strict weak order (README), so buffers that straddle a second may come out swapped; the
 * child's events are microseconds apart, so their TSCs are distinct and give the issue order.
 * A record that is not a function entry or exit fails the test. Returns the record count.
 */
size_t ts_seq_llvm(const char *path, uint64_t max);

#endif /* XFDR_TESTS_SUPPORT_RUNTIME_TEST_H */
