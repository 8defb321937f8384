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

#include "writer/file.h"
#include "writer/encode.h"

static char dir[] = "/tmp/xfdr-names-XXXXXX";
static char trace[128];

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
	struct wr_file_header h = {1000000000u, 256, 1, 1};
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
	write_text(path, "pid\t42\nfunctions\txray\t2\n"
			 "function\t1\tmain\t0x1000\t/bin/prog\t0x1000\n"
			 "function\t2\t<unknown>\t0x2000\t-\t-\n");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(sidecar_names_functions),
	    cmocka_unit_test(no_map_prints_ids),
	    cmocka_unit_test(explicit_map),
	    cmocka_unit_test(bad_maps_are_reported),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
