/*
 * tests/system/test_cli_process_tree.c - the traces of a process tree as one timeline:
 * `xfdr convert --output-format=trace_event|perfetto FILE...` (command/convert.c), and the
 * `ppid` line of the .map that names each process's parent (runtime/flush/mapfile.c).
 *
 * A program built with -finstrument-functions and recorded under LD_PRELOAD forks: the parent
 * and the child each leave a trace and a .map. Both files go into one JSON timeline (read by
 * Python's json module) and one Perfetto trace (decoded by protoc against Perfetto's field
 * numbers, tests/system/perfetto_check.py): each process under its own pid, with its name and
 * its parent, and the calls each made; and into one stack tree (`stack`, `flame`) and one
 * latency table (`account`), each process's stacks or rows under its name and parent. YAML and
 * pprof take one file; --map and --since=snapshot, which name one file's sidecar, are refused
 * with several; --thread takes a kernel tid across them.
 */
#include <dirent.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/child.h"
#include "tests/support/preload_record.h"
#include "tests/support/perfetto_check.h"
#include "tests/support/scratch.h"
#include "tests/support/text.h"
#include "xfdr/reader.h"

/* Debian's python3: the one its python3-protobuf package is installed for. */
#define PYTHON "/usr/bin/python3"

/* The parent calls leaf twice, forks, and waits; the child calls work, which calls leaf 3x. */
static const char program[] = "#include <sys/wait.h>\n"
			      "#include <unistd.h>\n"
			      "static int leaf(int x) { return x + 1; }\n"
			      "static int work(void)\n"
			      "{\n"
			      "	int i, s = 0;\n"
			      "	for (i = 0; i < 3; i++)\n"
			      "		s += leaf(i);\n"
			      "	return s;\n"
			      "}\n"
			      "int main(void)\n"
			      "{\n"
			      "	int st, s = leaf(1) + leaf(2);\n"
			      "	pid_t pid = fork();\n"
			      "	if (pid == 0)\n"
			      "		return work() == 6 ? 0 : 1;\n"
			      "	if (pid < 0 || waitpid(pid, &st, 0) != pid)\n"
			      "		return 1;\n"
			      "	return s == 5 && WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : 1;\n"
			      "}\n";

struct tree {
	char parent[1024], child[1024]; /* their traces */
	uint32_t parent_pid, child_pid;
};

/* The pid and ppid of a trace's .map. */
static void process_of(const char *trace, uint32_t *pid, uint32_t *ppid)
{
	char map[600];
	struct xfdr_names *n;
	struct xfdr_error err;

	snprintf(map, sizeof(map), "%s.map", trace);
	if (xfdr_names_load(map, &n, &err))
		fail_msg("%s: %s", map, err.text);
	*pid = xfdr_names_pid(n, NULL);
	*ppid = xfdr_names_ppid(n);
	xfdr_names_free(n);
}

/* Record the program once; its two traces, told apart by their .map's ppid. */
static const struct tree *recorded(void)
{
	static struct tree t;
	char prog[256], first[512], dir[256], path[1024];
	uint32_t pid[2], ppid[2];
	struct dirent *d;
	DIR *dp;
	int n = 0;

	if (t.parent_pid)
		return &t;
	preload_build(program, prog, sizeof(prog));
	preload_record(prog, NULL, "tree", "", first, sizeof(first));
	snprintf(dir, sizeof(dir), "%s", scratch_path("tree"));
	assert_non_null(dp = opendir(dir));
	while ((d = readdir(dp)) != NULL) {
		size_t len = strlen(d->d_name);

		if (len < 5 || strcmp(d->d_name + len - 5, ".xray"))
			continue;
		assert_true(n < 2);
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		process_of(path, &pid[n], &ppid[n]);
		snprintf(n == 0 ? t.parent : t.child, sizeof(t.parent), "%s", path);
		n++;
	}
	closedir(dp);
	assert_int_equal(n, 2);
	if (ppid[0] == pid[1]) { /* the first one found is the child */
		char keep[1024];

		snprintf(keep, sizeof(keep), "%s", t.parent);
		snprintf(t.parent, sizeof(t.parent), "%s", t.child);
		snprintf(t.child, sizeof(t.child), "%s", keep);
		t.parent_pid = pid[1];
		t.child_pid = pid[0];
		ppid[0] = ppid[1];
	} else {
		t.parent_pid = pid[0];
		t.child_pid = pid[1];
		ppid[1] = ppid[0];
	}
	/* The program's parent is this test (child_run() runs it directly). */
	assert_int_equal(ppid[0], (uint32_t)getpid());
	process_of(t.child, &pid[0], &ppid[0]);
	assert_int_equal(ppid[0], t.parent_pid);
	return &t;
}

/* python3 -c script arg: its stdout (free it); a failure fails the test. */
static char *python(const char *script, const char *arg)
{
	char *argv[] = {PYTHON, "-c", (char *)script, (char *)arg, NULL};

	return child_output(argv, "the JSON summary");
}

/*
 * Per process of the JSON: "P PID NAME PPID" (its process_name event), and "C PID NAME N" for
 * each function with N "B" events in that process; then TRACES and the files otherData lists.
 */
static const char json_summary[] =
    "import json, os, sys\n"
    "doc = json.load(open(sys.argv[1]))\n"
    "out = []\n"
    "calls = {}\n"
    "for e in doc['traceEvents']:\n"
    "    if e['ph'] == 'M' and e['name'] == 'process_name':\n"
    "        out.append('P %d %s %s' % (e['pid'], os.path.basename(e['args']['name']),\n"
    "                                   e['args'].get('ppid', '-')))\n"
    "    elif e['ph'] == 'B':\n"
    "        k = (e['pid'], e['name'])\n"
    "        calls[k] = calls.get(k, 0) + 1\n"
    "for (pid, name), n in calls.items():\n"
    "    out.append('C %d %s %d' % (pid, name, n))\n"
    "print('\\n'.join(out))\n"
    "print('TRACES', len(doc['otherData']['traces']))\n";

static void test_trace_event(void **state)
{
	const struct tree *t = recorded();
	const char *out = scratch_path("tree.json");
	char want[8][128], *got;
	size_t i;

	(void)state;
	child_xfdr_silent("convert", "--output-format=trace_event", "-o", out, t->parent, t->child,
			  NULL);
	got = python(json_summary, out);
	/* Each process named, with its parent; main goes on in the child after fork(). */
	snprintf(want[0], sizeof(want[0]), "P %" PRIu32 " prog %d\n", t->parent_pid, (int)getpid());
	snprintf(want[1], sizeof(want[1]), "P %" PRIu32 " prog %" PRIu32 "\n", t->child_pid,
		 t->parent_pid);
	snprintf(want[2], sizeof(want[2]), "C %" PRIu32 " leaf 2\n", t->parent_pid);
	snprintf(want[3], sizeof(want[3]), "C %" PRIu32 " main 1\n", t->parent_pid);
	snprintf(want[4], sizeof(want[4]), "C %" PRIu32 " leaf 3\n", t->child_pid);
	snprintf(want[5], sizeof(want[5]), "C %" PRIu32 " work 1\n", t->child_pid);
	snprintf(want[6], sizeof(want[6]), "C %" PRIu32 " main 1\n", t->child_pid);
	snprintf(want[7], sizeof(want[7]), "TRACES 2\n");
	for (i = 0; i < 8; i++)
		text_assert_contains(got, want[i]);
	assert_int_equal(text_count_lines(got), 8);
	free(got);
}

static void test_perfetto(void **state)
{
	const struct tree *t = recorded();
	const char *out = scratch_path("tree.perfetto");
	char want[512], *got;

	(void)state;
	child_xfdr_silent("convert", "--output-format=perfetto", "-o", out, t->parent, t->child,
			  NULL);
	got = perfetto_check("lines", out, NULL);
	/* Each process's track and its parent, in the order of the files. */
	snprintf(want, sizeof(want), "PT %" PRIu32 " %d [", t->parent_pid, (int)getpid());
	text_assert_contains(got, want);
	snprintf(want, sizeof(want), "PT %" PRIu32 " %" PRIu32 " [", t->child_pid, t->parent_pid);
	text_assert_contains(got, want);
	snprintf(want, sizeof(want), "\nP %" PRIu32 " ", t->child_pid);
	text_assert_contains(got, want);
	/* The child's calls on its own thread track: work once, leaf three times. */
	snprintf(want, sizeof(want), "B %" PRIu32 " %" PRIu32 " ", t->child_pid, t->child_pid);
	assert_int_equal(text_count(got, want), 5); /* leaf x3, work, main */
	snprintf(want, sizeof(want), "B %" PRIu32 " %" PRIu32 " ", t->parent_pid, t->parent_pid);
	assert_int_equal(text_count(got, want), 3); /* leaf x2, main */
	free(got);
}

/* The frame a process's stacks hang from: "pid P (PROGRAM, parent Q)", from its .map. */
static void label_of(const char *trace, char *buf, size_t size)
{
	char map[1100];
	const char *program = NULL;
	struct xfdr_names *n;
	struct xfdr_error err;
	uint32_t pid;

	snprintf(map, sizeof(map), "%s.map", trace);
	if (xfdr_names_load(map, &n, &err))
		fail_msg("%s: %s", map, err.text);
	pid = xfdr_names_pid(n, &program);
	assert_non_null(program);
	snprintf(buf, size, "pid %u (%s, parent %u)", pid, program, xfdr_names_ppid(n));
	xfdr_names_free(n);
}

/* The folded lines' stacks, values taken off (each checked to be a number above 0). */
static char *stacks_of(const char *out)
{
	char *copy = strdup(out), *line, *save = NULL, *stacks = calloc(1, strlen(out) + 1);

	assert_non_null(copy);
	assert_non_null(stacks);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *space = strrchr(line, ' ');

		assert_non_null(space);
		assert_true(strtoull(space + 1, NULL, 10) > 0);
		*space = '\0';
		strcat(stacks, line);
		strcat(stacks, "\n");
	}
	free(copy);
	return stacks;
}

/*
 * stack and flame: one tree of both processes, each under a frame that names it and its parent
 * (the pids and program read from each .map through the reader). The child's main is open
 * when it forks: its stack context gives it, begun before the child's trace.
 */
static void test_stack_and_flame(void **state)
{
	const struct tree *t = recorded();
	struct child_result r;
	char lp[600], lc[600], want[4096], *got;

	(void)state;
	label_of(t->parent, lp, sizeof(lp));
	label_of(t->child, lc, sizeof(lc));
	assert_int_equal(child_xfdr(&r, "stack", "--value=total", t->parent, t->child, NULL), 0);
	snprintf(want, sizeof(want),
		 "%s;main\n%s;main;leaf\n%s;main\n%s;main;work\n%s;main;work;leaf\n", lp, lp, lc,
		 lc, lc);
	got = stacks_of(r.out);
	text_assert_equal(got, want);
	free(got);
	child_result_free(&r);
	/* Each trace's calls count: 3 in the parent, 5 in the child. */
	assert_int_equal(child_xfdr(&r, "flame", t->parent, t->child, NULL), 0);
	got = r.out;
	assert_non_null(strstr(got, " in 8 calls of 2 processes"));
	assert_non_null(strstr(got, "Flame graph: "));
	assert_non_null(strstr(got, " and 1 more</text>"));
	snprintf(want, sizeof(want), "<title>%s (", lp);
	assert_non_null(strstr(got, want));
	snprintf(want, sizeof(want), "<title>%s (", lc);
	assert_non_null(strstr(got, want));
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "stack", "--map", t->parent, t->parent, t->child, NULL), 2);
	text_assert_only_error_line(&r, "xfdr stack: '--map' names the functions of one FILE");
	child_result_free(&r);
}

/* The count column of the CSV row of the function named name (the row must be there). */
static unsigned long row_count(const char *csv, const char *name)
{
	char want[700];
	const char *end, *line, *comma;

	snprintf(want, sizeof(want), ",\"%s\"\n", name);
	end = strstr(csv, want);
	if (!end)
		fail_msg("no row for %s in:\n%s", name, csv);
	for (line = end; line > csv && line[-1] != '\n'; line--)
		;
	comma = strchr(line, ',');
	assert_non_null(comma);
	return strtoul(comma + 1, NULL, 10);
}

/* account: one table, a row per function of each process, named with its process. */
static void test_account(void **state)
{
	const struct tree *t = recorded();
	struct child_result r;
	char lp[600], lc[600], name[700];

	(void)state;
	label_of(t->parent, lp, sizeof(lp));
	label_of(t->child, lc, sizeof(lc));
	assert_int_equal(child_xfdr(&r, "account", "-f", "csv", t->parent, t->child, NULL), 0);
	assert_int_equal(text_count(r.out, "\n"), 5); /* the header and four rows */
	snprintf(name, sizeof(name), "%s: leaf", lp);
	assert_int_equal(row_count(r.out, name), 2);
	snprintf(name, sizeof(name), "%s: main", lp);
	assert_int_equal(row_count(r.out, name), 1);
	snprintf(name, sizeof(name), "%s: leaf", lc);
	assert_int_equal(row_count(r.out, name), 3);
	snprintf(name, sizeof(name), "%s: work", lc);
	assert_int_equal(row_count(r.out, name), 1);
	/* The child's main began before its trace (a stack context): told, not counted. */
	text_assert_one_error_line(&r, "xfdr account: not counted: 1 call begun before the trace");
	child_result_free(&r);
	/* Sorted across both: the two leaf rows by count, largest first. */
	assert_int_equal(child_xfdr(&r, "account", "-s", "count", "-r", "dsc", "-p", "1", "-f",
				    "csv", t->parent, t->child, NULL),
			 0);
	snprintf(name, sizeof(name), ",3,");
	assert_non_null(strstr(r.out, name));
	snprintf(name, sizeof(name), "\"%s: leaf\"\n", lc);
	assert_non_null(strstr(r.out, name));
	assert_int_equal(text_count(r.out, "\n"), 2);
	child_result_free(&r);
	/* A kernel tid picks one thread of all the files: the child's main thread. */
	snprintf(name, sizeof(name), "--thread=%u", t->child_pid);
	assert_int_equal(child_xfdr(&r, "account", "-f", "csv", name, t->parent, t->child, NULL),
			 0);
	snprintf(name, sizeof(name), "%s: leaf", lc);
	assert_int_equal(row_count(r.out, name), 3);
	snprintf(name, sizeof(name), "%s: leaf", lp);
	assert_null(strstr(r.out, name));
	child_result_free(&r);
}

/* YAML and pprof take one file; --map and --since=snapshot name one file's sidecar. */
static void test_usage(void **state)
{
	const struct tree *t = recorded();
	struct child_result r;

	(void)state;
	assert_int_equal(child_xfdr(&r, "convert", t->parent, t->child, NULL), 2);
	text_assert_only_error_line(&r,
				    "xfdr convert: one FILE at a time with --output-format=yaml");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "convert", "-f", "pprof", "-o", scratch_path("p.pb.gz"),
				    t->parent, t->child, NULL),
			 2);
	text_assert_only_error_line(&r,
				    "xfdr convert: one FILE at a time with --output-format=pprof");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "convert", "-f", "trace_event", "--map", t->parent,
				    t->parent, t->child, NULL),
			 2);
	text_assert_only_error_line(&r, "xfdr convert: '--map' names the functions of one FILE");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "convert", "-f", "perfetto", "--since=snapshot", "-o",
				    scratch_path("s.perfetto"), t->parent, t->child, NULL),
			 2);
	text_assert_only_error_line(&r, "xfdr convert: '--since=snapshot' takes the window");
	child_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_trace_event),	    cmocka_unit_test(test_perfetto),
	    cmocka_unit_test(test_stack_and_flame), cmocka_unit_test(test_account),
	    cmocka_unit_test(test_usage),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
