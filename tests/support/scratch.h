/*
 * tests/support/scratch.h - a test binary's scratch directory: one fresh directory under /tmp
 * made by the group setup, the files the tests write into it, all removed by the teardown.
 *
 * One directory per binary (cmocka runs its tests one after the other), so the helpers keep it
 * in scratch_dir rather than passing it around.
 */
#ifndef XFDR_TESTS_SUPPORT_SCRATCH_H
#define XFDR_TESTS_SUPPORT_SCRATCH_H

#include <stddef.h>

/* The directory scratch_make() made, without a trailing '/'; "" before and after. */
extern char scratch_dir[128];

/* Make it from tmpl ("/tmp/xfdr-test-NAME-XXXXXX", mkdtemp's form). Returns 0 or -1. */
int scratch_make(const char *tmpl);

/* Remove it and everything below it (no shell). Returns 0 or -1. */
int scratch_remove(void);

/*
 * cmocka group fixtures: scratch_setup makes "/tmp/xfdr-test-<program>-XXXXXX";
 * scratch_setup_cwd also makes it the working directory (the tests name files relatively);
 * scratch_teardown leaves it for "/" if it was entered and removes it. Each returns 0 or -1.
 */
int scratch_setup(void **state);
int scratch_setup_cwd(void **state);
int scratch_teardown(void **state);

/* "<scratch_dir>/<name>"; the result stays valid for the next 7 calls. */
char *scratch_path(const char *name);

/* Whether path exists (stat() succeeds). */
int scratch_exists(const char *path);

/* How many entries of the scratch directory have part in their name (".tmp." say). */
int scratch_count_named(const char *part);

/*
 * Outputs no verb may replace: "nr-fifo.xray" a FIFO, "nr-dir.xray" a directory and
 * "nr-null.xray" a symbolic link to /dev/null, made in the scratch directory; the check fails
 * the test unless each is still what it was, and /dev/null still a character device.
 */
void scratch_make_non_regular(void);
void scratch_expect_non_regular_intact(void);

/*
 * Write, or append, the n bytes at data to scratch_path(name), creating it 0644; returns that
 * path. A file that cannot be written fails the test. scratch_write_text: a string.
 */
const char *scratch_write(const char *name, const void *data, size_t n);
const char *scratch_append(const char *name, const void *data, size_t n);
const char *scratch_write_text(const char *name, const char *text);

#endif /* XFDR_TESTS_SUPPORT_SCRATCH_H */
