/*
 * xfdr convert names functions from the .map sidecar (FILE.map, or --map MAP), as
 * `llvm-xray convert -m BINARY -symbolize` does: a named id prints its name, an id the map
 * does not name prints '#ID', and --no-map prints the bare quoted id like llvm-xray
 * without a map. Bad maps are reported with the file and line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/child.h"
#include "tests/support/text.h"
#include "writer/file.h"
#include "writer/encode.h"

static char dir[] = "/tmp/xfdr-names-XXXXXX";
static char trace[128];

/* The trace's sidecar, t.xray.map. */
#define MAP_TEXT                                                                                   \
	"pid\t42\nfunctions\txray\t2\n"                                                            \
	"function\t1\tmain\t0x1000\t/bin/prog\t0x1000\n"                                           \
	"function\t2\t<unknown>\t0x2000\t-\t-\n"

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* One buffer: Entry 1, Entry 2, Exit 2, Exit 1 on thread 7. */
static void write_trace(void)
{
	struct wr_file_header h = {.cycle_frequency_hz = 1000000000u,
				   .buffer_bytes = 256,
				   .constant_tsc = 1,
				   .nonstop_tsc = 1};
	uint8_t buf[256];
	size_t n = 0;
	int fd;

	n += wr_new_buffer(buf + n, 7);
	n += wr_wall_clock_time(buf + n, 1, 0);
	n += wr_new_cpu_id(buf + n, 0, 100);
	n += wr_function(buf + n, XFDR_FN_ENTER, 1, 0);
	n += wr_function(buf + n, XFDR_FN_ENTER, 2, 5);
	n += wr_function(buf + n, XFDR_FN_EXIT, 2, 5);
	n += wr_function(buf + n, XFDR_FN_EXIT, 1, 5);
	snprintf(trace, sizeof(trace), "%s/t.xray", dir);
	fd = open(trace, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(wr_write_file_header(fd, &h), 0);
	assert_int_equal(wr_write_buffer(fd, buf, n, sizeof(buf)), 0);
	assert_int_equal(close(fd), 0);
}

/* Run `xfdr convert ARGS TRACE`; returns the exit status, output (and stderr) in out. */
static int convert(const char *args, char *out, size_t cap)
{
	char cmd[1024];
	FILE *p;
	size_t n;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' convert %s '%s' 2>&1", getenv("XFDR_BIN"), args, trace);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int setup(void **state)
{
	char path[160];

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	write_trace();
	snprintf(path, sizeof(path), "%s.map", trace);
	write_text(path, MAP_TEXT);
	return 0;
}

static int teardown(void **state)
{
	char cmd[160];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void sidecar_names_functions(void **state)
{
	char out[8192];

	(void)state;
	assert_int_equal(convert("", out, sizeof(out)), 0);
	assert_non_null(strstr(out, "func-id: 1, function: main, cpu: 0, thread: 7, "
				    "kind: function-enter, tsc: 100,"));
	assert_non_null(strstr(out, "func-id: 2, function: '#2', cpu: 0, thread: 7, "
				    "kind: function-exit, tsc: 110,"));
}

static void no_map_prints_ids(void **state)
{
	char out[8192];

	(void)state;
	assert_int_equal(convert("--no-map", out, sizeof(out)), 0);
	assert_non_null(strstr(out, "func-id: 1, function: '1',"));
	assert_null(strstr(out, "main"));
	assert_int_equal(convert("--map /dev/null --no-map", out, sizeof(out)), 2);
}

static void explicit_map(void **state)
{
	char out[8192], path[160], args[200];

	(void)state;
	snprintf(path, sizeof(path), "%s/other.map", dir);
	write_text(path, "function\t2\tleaf_fn\t0x2000\t-\t-\n");
	snprintf(args, sizeof(args), "--map '%s'", path);
	assert_int_equal(convert(args, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "func-id: 2, function: leaf_fn,"));
	assert_non_null(strstr(out, "func-id: 1, function: '#1',"));
}

static void bad_maps_are_reported(void **state)
{
	char out[8192], path[160], args[200];

	(void)state;
	snprintf(args, sizeof(args), "--map '%s/missing.map'", dir);
	assert_int_equal(convert(args, out, sizeof(out)), 2);
	assert_non_null(strstr(out, "missing.map: No such file or directory"));

	snprintf(path, sizeof(path), "%s/bad.map", dir);
	write_text(path, "pid\t1\nfunction\t300000000\tbig\n");
	snprintf(args, sizeof(args), "--map '%s'", path);
	assert_int_equal(convert(args, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "bad.map: line 2: expected a function id (0..268435455)"));
	assert_null(strstr(out, "records:"));

	write_text(path, "function\t3\ta\nfunction\t3\tb\n");
	assert_int_equal(convert(args, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "function id 3 is named twice"));
}

/*
 * A function id is decimal digits: no sign, no space, no leading zero (but "0"), as every
 * number of the sidecar. strtoull() took each of these for id 2.
 */
static void function_ids_are_plain_decimal(void **state)
{
	static const char *const ids[] = {"+2", " 2", "0002", "-18446744073709551614"};
	char out[8192], path[160], args[200], text[200], want[300];
	size_t i;

	(void)state;
	snprintf(path, sizeof(path), "%s/ids.map", dir);
	snprintf(args, sizeof(args), "--map '%s'", path);
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		snprintf(text, sizeof(text), "pid\t1\nfunction\t%s\tleaf_fn\t0x2000\t-\t-\n",
			 ids[i]);
		write_text(path, text);
		assert_int_equal(convert(args, out, sizeof(out)), 1);
		snprintf(want, sizeof(want),
			 "xfdr convert: %s: line 2: expected a function id (0..268435455) after "
			 "'function<TAB>', found 'function\t%s\tleaf_fn\t0x2000\t-\t-'\n",
			 path, ids[i]);
		assert_string_equal(out, want);
	}
	/* "0" itself is an id; a since_tsc is read by the same rule. */
	write_text(path, "function\t0\tzero_fn\t0x1\t-\t-\nfunction\t2\tleaf_fn\t0x2\t-\t-\n");
	assert_int_equal(convert(args, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "func-id: 2, function: leaf_fn,"));
	write_text(path, "since_tsc\t007\n");
	assert_int_equal(convert(args, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "ids.map: line 1: expected a decimal TSC"));
}

/* The file at path holds text (the sidecar was not replaced). */
static void expect_text(const char *path, const char *text)
{
	char buf[512];
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_string_equal(buf, text);
}

/*
 * No verb writes its output over the trace's sidecar (its names are nowhere else), however it
 * is spelled: its name, ./ in the path, a hard link, or the --map given. Refused like the trace
 * itself: a usage error, one line, the sidecar untouched.
 */
static void output_never_replaces_the_sidecar(void **state)
{
	static const char *const verbs[][3] = {
	    {"convert", NULL, NULL}, {"convert", "-f", "trace_event"},
	    {"account", NULL, NULL}, {"stack", NULL, NULL},
	    {"flame", NULL, NULL},
	};
	char map[160], dotted[200], link_path[160], other[160], want[300];
	const char *outs[3];
	struct child_result r;
	size_t v, k;

	(void)state;
	snprintf(map, sizeof(map), "%s.map", trace);
	snprintf(dotted, sizeof(dotted), "%s/./t.xray.map", dir);
	snprintf(link_path, sizeof(link_path), "%s/hard.map", dir);
	assert_int_equal(link(map, link_path), 0);
	outs[0] = map;
	outs[1] = dotted;
	outs[2] = link_path;
	for (v = 0; v < sizeof(verbs) / sizeof(verbs[0]); v++) {
		for (k = 0; k < 3; k++) {
			if (verbs[v][1])
				child_xfdr(&r, verbs[v][0], verbs[v][1], verbs[v][2], "-o", outs[k],
					   trace, NULL);
			else
				child_xfdr(&r, verbs[v][0], "-o", outs[k], trace, NULL);
			assert_int_equal(r.status, 2);
			snprintf(want, sizeof(want),
				 "xfdr %s: output '%s' is the .map sidecar of the input file",
				 verbs[v][0], outs[k]);
			text_assert_one_error_line(&r, want);
			assert_int_equal(r.out_len, 0);
			child_result_free(&r);
			expect_text(map, MAP_TEXT);
		}
	}
	assert_int_equal(unlink(link_path), 0);

	/* The sidecar named by --map, too. */
	snprintf(other, sizeof(other), "%s/other-sidecar.map", dir);
	write_text(other, "function\t2\tleaf_fn\t0x2000\t-\t-\n");
	child_xfdr(&r, "convert", "--map", other, "-o", other, trace, NULL);
	assert_int_equal(r.status, 2);
	text_assert_one_error_line(&r, "xfdr convert: output ");
	text_assert_contains(r.err, "is the .map sidecar of the input file");
	child_result_free(&r);
	expect_text(other, "function\t2\tleaf_fn\t0x2000\t-\t-\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(sidecar_names_functions),
	    cmocka_unit_test(no_map_prints_ids),
	    cmocka_unit_test(explicit_map),
	    cmocka_unit_test(bad_maps_are_reported),
	    cmocka_unit_test(function_ids_are_plain_decimal),
	    cmocka_unit_test(output_never_replaces_the_sidecar),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
