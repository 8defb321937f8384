/*
 * One output written by several threads (command/ordered_out.h): the parts come out in their
 * order whatever order they are written and ended in, a part written ahead of its turn waits
 * in $TMPDIR and nowhere else, and a temporary file that cannot be made is said and stops
 * every writer. The orders are forced: the threads wait for each other at fixed points, so
 * each run takes the same path.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>

#include <cmocka.h>

#include "command/cli.h"
#include "command/ordered_out.h"
#include "tests/support/pool_layout.h"
#include "tests/support/scratch.h"
#include "tests/support/text.h"

/* The file out was opened on, once closed, as a string (free it). */
static char *close_and_read(struct cli_out *o, const char *path)
{
	size_t n;
	uint8_t *bytes;
	char *text;

	assert_int_equal(cli_out_close(o), CLI_OK);
	free(o);
	bytes = pl_read_file(path, &n);
	assert_non_null(bytes);
	text = calloc(1, n + 1);
	assert_non_null(text);
	memcpy(text, bytes, n);
	free(bytes);
	return text;
}

/* The file out was opened on, once closed, must hold exactly want. */
static void expect_output(struct cli_out *o, const char *path, const char *want)
{
	char *got = close_and_read(o, path);

	text_assert_equal(got, want);
	free(got);
}

/* Parts written and ended in every order but their own: the output is still 0, 1, 2. */
static void test_parts_out_in_order(void **state)
{
	const char *path = scratch_path("order.out");
	struct cli_out *o = cli_out_new(path);
	struct ordered_out *s;

	(void)state;
	assert_non_null(o);
	s = ordered_out_new(o, 3);
	assert_non_null(s);
	assert_int_equal(ordered_put(s, 1, "b1 ", 3), 0);
	assert_int_equal(ordered_put(s, 2, "c1 ", 3), 0);
	assert_int_equal(ordered_put(s, 0, "a1 ", 3), 0);
	assert_int_equal(ordered_end(s, 2), 0);
	assert_int_equal(ordered_put(s, 1, "b2 ", 3), 0);
	assert_int_equal(ordered_put(s, 0, "a2 ", 3), 0);
	/* 1 ends before 0: all of it waits for 0 */
	assert_int_equal(ordered_end(s, 1), 0);
	assert_int_equal(ordered_put(s, 0, "a3 ", 3), 0);
	assert_int_equal(ordered_end(s, 0), 0);
	assert_int_equal(ordered_failed(s), 0);
	ordered_out_free(s);
	expect_output(o, path, "a1 a2 a3 b1 b2 c1 ");
}

/*
 * Part 1's turn comes while it is still being written: what it wrote ahead goes out first,
 * then what it writes after goes straight through.
 */
static void test_turn_comes_midway(void **state)
{
	const char *path = scratch_path("midway.out");
	struct cli_out *o = cli_out_new(path);
	struct ordered_out *s;

	(void)state;
	assert_non_null(o);
	s = ordered_out_new(o, 2);
	assert_non_null(s);
	assert_int_equal(ordered_put(s, 1, "ahead ", 6), 0);
	assert_int_equal(ordered_put(s, 0, "first ", 6), 0);
	assert_int_equal(ordered_end(s, 0), 0);
	assert_int_equal(ordered_put(s, 1, "through", 7), 0);
	assert_int_equal(ordered_end(s, 1), 0);
	ordered_out_free(s);
	expect_output(o, path, "first ahead through");
}

/* ---- Threads ---------------------------------------------------------------------------- */

enum { WRITERS = 3, PIECES = 64, PIECE_BYTES = 4096 };

struct writer {
	struct ordered_out *s;
	size_t part;
	sem_t *wait_for; /* NULL: start at once */
	sem_t *done;	 /* posted once the part has ended */
};

/* Piece i of a part: its name, then the part's letter. */
static void piece(size_t part, size_t i, char *buf)
{
	char head[48];
	int n = snprintf(head, sizeof(head), "part %zu piece %zu|", part, i);

	memset(buf, 'a' + (int)part, PIECE_BYTES);
	memcpy(buf, head, (size_t)n);
}

static void *write_part(void *arg)
{
	struct writer *w = arg;
	char buf[PIECE_BYTES];
	size_t i;

	if (w->wait_for)
		sem_wait(w->wait_for);
	for (i = 0; i < PIECES; i++) {
		piece(w->part, i, buf);
		if (ordered_put(w->s, w->part, buf, sizeof(buf)))
			return (void *)1;
	}
	if (ordered_end(w->s, w->part))
		return (void *)1;
	sem_post(w->done);
	return NULL;
}

/*
 * Three threads, part 2 written whole first, then part 1, then part 0 (each waits for the one
 * after it): parts 1 and 2 wait on disk, and the output is 0, 1, 2.
 */
static void test_threads_last_part_first(void **state)
{
	const char *path = scratch_path("threads.out");
	struct cli_out *o = cli_out_new(path);
	struct writer w[WRITERS];
	pthread_t tid[WRITERS];
	sem_t done[WRITERS];
	char *got, *want, *at;
	size_t k, i;
	void *rc;

	(void)state;
	assert_non_null(o);
	for (k = 0; k < WRITERS; k++)
		sem_init(&done[k], 0, 0);
	for (k = 0; k < WRITERS; k++) {
		w[k] = (struct writer){
		    .part = k, .wait_for = k + 1 < WRITERS ? &done[k + 1] : NULL, .done = &done[k]};
	}
	w[0].s = ordered_out_new(o, WRITERS);
	assert_non_null(w[0].s);
	for (k = 0; k < WRITERS; k++) {
		w[k].s = w[0].s;
		assert_int_equal(pthread_create(&tid[k], NULL, write_part, &w[k]), 0);
	}
	for (k = 0; k < WRITERS; k++) {
		assert_int_equal(pthread_join(tid[k], &rc), 0);
		assert_null(rc);
	}
	ordered_out_free(w[0].s);
	got = close_and_read(o, path);
	want = malloc((size_t)WRITERS * PIECES * PIECE_BYTES + 1);
	assert_non_null(want);
	for (k = 0, at = want; k < WRITERS; k++)
		for (i = 0; i < PIECES; i++, at += PIECE_BYTES)
			piece(k, i, at);
	*at = 0;
	assert_int_equal(strlen(got), strlen(want));
	assert_memory_equal(got, want, strlen(want));
	for (k = 0; k < WRITERS; k++)
		sem_destroy(&done[k]);
	free(got);
	free(want);
}

/* ---- Failures -------------------------------------------------------------------------- */

/* No temporary file in $TMPDIR: said once, naming the output, and every writer stops. */
static void test_no_temporary_file(void **state)
{
	const char *path = scratch_path("fail.out");
	struct cli_out *o = cli_out_new(path);
	struct ordered_out *s;
	char *old = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
	FILE *err = tmpfile();
	char text[512] = "";
	int saved = dup(2);

	(void)state;
	assert_non_null(o);
	assert_non_null(err);
	setenv("TMPDIR", scratch_path("no-such-dir"), 1);
	s = ordered_out_new(o, 2);
	assert_non_null(s);
	fflush(stderr);
	dup2(fileno(err), 2);
	assert_int_equal(ordered_put(s, 1, "ahead", 5), -1);
	assert_int_equal(ordered_put(s, 0, "first", 5), -1);
	assert_int_equal(ordered_end(s, 0), -1);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	if (old)
		setenv("TMPDIR", old, 1);
	else
		unsetenv("TMPDIR");
	free(old);
	assert_int_equal(ordered_failed(s), 1);
	ordered_out_free(s);
	rewind(err);
	assert_true(fread(text, 1, sizeof(text) - 1, err) > 0);
	fclose(err);
	text_assert_contains(text, "fail.out: creating a temporary file in $TMPDIR (else /tmp): "
				   "No such file or directory\n");
	assert_int_equal(text_count(text, "\n"), 1);
	/* Nothing of either part was written. */
	expect_output(o, path, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parts_out_in_order),
	    cmocka_unit_test(test_turn_comes_midway),
	    cmocka_unit_test(test_threads_last_part_first),
	    cmocka_unit_test(test_no_temporary_file),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
