/*
 * tests/unit/test_runtime_support.h - helpers shared by the runtime tests (header only: the
 * build turns every tests/unit/test_*.c into a binary, so helpers cannot be a .c here).
 *
 * Each helper checks with cmocka's assert macros, so a failure names the test and the line.
 * Files go to a fresh directory under /tmp per test binary, removed at the end.
 */
#ifndef XFDR_TEST_RUNTIME_SUPPORT_H
#define XFDR_TEST_RUNTIME_SUPPORT_H

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

#define TS_UNUSED __attribute__((unused))

static char ts_dir[128];

/* A fresh output directory ending in '/'. */
static TS_UNUSED const char *ts_dir_make(void)
{
	char tmpl[] = "/tmp/xfdr-rt-test-XXXXXX";

	assert_non_null(mkdtemp(tmpl));
	snprintf(ts_dir, sizeof(ts_dir), "%s/", tmpl);
	return ts_dir;
}

static TS_UNUSED void ts_dir_remove(void)
{
	char cmd[200];

	if (!ts_dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ts_dir);
	assert_int_equal(system(cmd), 0);
	ts_dir[0] = '\0';
}

static TS_UNUSED int ts_sanitized(void)
{
	const char *s = getenv("XFDR_SANITIZED");

	return s && *s && strcmp(s, "0");
}

/*
 * A child that ended as a crash by sig does when no handler of its own takes it: killed by sig.
 * Under a sanitizer its runtime's handler, installed before xfdr and so the program's own to
 * it, takes SIGSEGV and SIGBUS: a report, and exit status 1 (the crash flushed from the
 * sanitizer's death callback).
 */
static TS_UNUSED void ts_expect_crash_end(const struct child_result *r, int sig)
{
	if (!ts_sanitized() || (sig != SIGSEGV && sig != SIGBUS)) {
		if (r->signal != sig)
			fail_msg("child ended with status %d (signal %d), expected signal %d; "
				 "stderr:\n%s",
				 r->status, r->signal, sig, r->err);
		return;
	}
	if (r->signal || r->status != 1 || !strstr(r->err, "Sanitizer:DEADLYSIGNAL"))
		fail_msg("child ended with status %d (signal %d), expected the sanitizer's report "
			 "and status 1; stderr:\n%s",
			 r->status, r->signal, r->err);
}

/*
 * A store to address 0, read at run time so the fault is not optimized away. The fault is
 * meant: UndefinedBehaviorSanitizer's null check (check-san) would report it and exit first.
 */
static TS_UNUSED __attribute__((noinline, no_sanitize("null"))) void ts_store_to_null(int value)
{
	static volatile int *volatile null_address;

	*null_address = value;
}

static TS_UNUSED uint32_t ts_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* cmocka group fixtures: a fresh ts_dir for the group; stop recording and remove it after. */
static TS_UNUSED int ts_group_setup(void **state)
{
	(void)state;
	ts_dir_make();
	return 0;
}

static TS_UNUSED int ts_group_teardown(void **state)
{
	(void)state;
	xfdr_stop();
	ts_dir_remove();
	return 0;
}

/*
 * The options of a test's recorder: a small pool in ts_dir, no flush at exit, the given mode;
 * recording a failed test may have left on is stopped first. A test sets what else it needs.
 */
static TS_UNUSED void ts_options(struct xfdr_options *o, size_t buffer_size, size_t buffer_max,
				 int mode)
{
	xfdr_stop();
	xfdr_options_default(o);
	o->buffer_size = buffer_size;
	o->buffer_max = buffer_max;
	o->flush_at_exit = 0;
	o->output = ts_dir;
	o->mode = mode;
}

/*
 * init with ts_options(); returns xfdr_init's result. ts_init: bounded mode, where an
 * exhausted pool drops and counts (what most tests check byte by byte).
 */
static TS_UNUSED int ts_init_mode(size_t buffer_size, size_t buffer_max, int per_thread_files,
				  int mode)
{
	struct xfdr_options o;

	ts_options(&o, buffer_size, buffer_max, mode);
	o.per_thread_files = per_thread_files;
	return xfdr_init(&o);
}

static TS_UNUSED int ts_init(size_t buffer_size, size_t buffer_max, int per_thread_files)
{
	return ts_init_mode(buffer_size, buffer_max, per_thread_files, XFDR_MODE_BOUNDED);
}

/* Whole file into memory (caller frees); asserts it could be read. */
static TS_UNUSED uint8_t *ts_slurp(const char *path, size_t *bytes)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	data = malloc((size_t)n + 1);
	assert_non_null(data);
	assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
	data[n] = 0;
	fclose(f);
	*bytes = (size_t)n;
	return data;
}

static TS_UNUSED uint64_t ts_get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static TS_UNUSED uint32_t ts_get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static TS_UNUSED uint16_t ts_get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

/*
 * Run `$XFDR_LLVM_XRAY convert --output-format=yaml path`; returns its exit status and, when
 * yaml is not NULL, its output (caller frees). The independent oracle for every file.
 */
static TS_UNUSED int ts_llvm_yaml(const char *path, char **yaml)
{
	const char *tool = getenv("XFDR_LLVM_XRAY");
	char out[256], cmd[1024];
	size_t n;
	int st;

	snprintf(out, sizeof(out), "%sllvm-yaml.%d.txt", ts_dir, getpid());
	snprintf(cmd, sizeof(cmd), "'%s' convert --output-format=yaml '%s' > '%s' 2>&1",
		 tool && *tool ? tool : "llvm-xray", path, out);
	st = system(cmd);
	if (yaml)
		*yaml = (char *)ts_slurp(out, &n);
	unlink(out);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Occurrences of needle in hay. */
static TS_UNUSED size_t ts_count(const char *hay, const char *needle)
{
	size_t n = 0;
	const char *p = hay;

	while ((p = strstr(p, needle))) {
		n++;
		p += strlen(needle);
	}
	return n;
}

/* ts_dir_entries - the entries of dir other than . and .. */
static TS_UNUSED int ts_dir_entries(const char *dir)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* Open and verify with the reader library; fails the test with the reader's message. */
static TS_UNUSED struct xfdr_trace *ts_open_verified(const char *path)
{
	struct xfdr_trace *t = NULL;
	struct xfdr_error err;

	memset(&err, 0, sizeof(err));
	if (xfdr_trace_open(path, &t, &err) || xfdr_trace_verify(t, &err))
		fail_msg("reader rejects %s: %s", path, err.text);
	return t;
}

/* The value of a "key<TAB>..." line of a .map file (the rest of the line), or NULL. */
static TS_UNUSED const char *ts_map_value(const char *map, const char *key, char *out,
					  size_t out_bytes)
{
	size_t klen = strlen(key);
	const char *p = map;

	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);

		if (len > klen && !strncmp(p, key, klen) && p[klen] == '\t') {
			size_t vlen = len - klen - 1;

			if (vlen >= out_bytes)
				vlen = out_bytes - 1;
			memcpy(out, p + klen + 1, vlen);
			out[vlen] = '\0';
			return out;
		}
		p = eol ? eol + 1 : NULL;
	}
	return NULL;
}

/*
 * Capture what fn() writes to stderr (fd 2) into out. The runtime writes with write(2), so
 * the redirection is done on the descriptor.
 */
static TS_UNUSED void ts_capture_stderr(void (*fn)(void *), void *arg, char *out, size_t out_bytes)
{
	char path[200];
	int fd, saved;
	ssize_t n;

	snprintf(path, sizeof(path), "%sstderr.%d.txt", ts_dir, getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	fflush(stderr);
	saved = dup(2);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fd, 2), 2);
	fn(arg);
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	n = read(fd, out, out_bytes - 1);
	assert_true(n >= 0);
	out[n] = '\0';
	close(fd);
	unlink(path);
}

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
static TS_UNUSED const char *ts_field(const char *line, const char *eol, const char *key)
{
	size_t k = strlen(key);
	const char *p = line;

	while ((p = memmem(p, (size_t)(eol - p), key, k))) {
		if (p == line || p[-1] == ' ' || p[-1] == '{')
			return p + k;
		p += k;
	}
	return NULL;
}

/*
 * The next record line ("  - { ...") of llvm-xray's YAML at or after p, or NULL; *eol gets its
 * end. Start with p at the "records:" line.
 */
static TS_UNUSED const char *ts_next_record(const char *p, const char **eol)
{
	while (p && *p) {
		const char *end = strchr(p, '\n');

		if (!end)
			end = p + strlen(p);
		if (!strncmp(p, "  - { ", 6)) {
			*eol = end;
			return p;
		}
		p = *end ? end + 1 : NULL;
	}
	return NULL;
}

/* Parse every record line; returns how many (at most max are stored). */
static TS_UNUSED size_t ts_yaml_records(const char *yaml, struct ts_yrec *out, size_t max)
{
	const char *line = strstr(yaml, "records:"), *eol = NULL;
	size_t n = 0;

	for (; (line = ts_next_record(line, &eol)); line = eol) {
		const char *f;
		struct ts_yrec r;

		memset(&r, 0, sizeof(r));
		if ((f = ts_field(line, eol, "func-id: ")))
			r.fid = (unsigned)strtoul(f, NULL, 10);
		if ((f = ts_field(line, eol, "cpu: ")))
			r.cpu = (unsigned)strtoul(f, NULL, 10);
		if ((f = ts_field(line, eol, "thread: ")))
			r.thread = (unsigned)strtoul(f, NULL, 10);
		if ((f = ts_field(line, eol, "tsc: ")))
			r.tsc = strtoull(f, NULL, 10);
		if ((f = ts_field(line, eol, "kind: ")))
			sscanf(f, "%31[^,]", r.kind);
		if ((f = ts_field(line, eol, "args: [ ")))
			sscanf(f, "%127[^]]", r.args);
		if ((f = ts_field(line, eol, "data: ")))
			sscanf(f, "%127[^}]", r.data);
		if (n < max)
			out[n] = r;
		n++;
	}
	return n;
}

/*
 * Call fn for every event of the verified file at path, in the given order, until fn returns
 * nonzero. A reader error fails the test with the reader's message.
 */
static TS_UNUSED void ts_each_event(const char *path, enum xfdr_order order,
				    int (*fn)(const struct xfdr_event *ev, void *arg), void *arg)
{
	struct xfdr_trace *tr = ts_open_verified(path);
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;
	int rc;

	assert_int_equal(xfdr_events_begin(tr, order, &it, &err), 0);
	while ((rc = xfdr_events_next(&it, &ev, &err)) == 1)
		if (fn(&ev, arg))
			break;
	if (rc < 0)
		fail_msg("%s", err.text);
	xfdr_trace_close(tr);
}

/* `xfdr verify` and `llvm-xray convert` accept the trace. */
static TS_UNUSED void ts_tools_accept(const char *trace)
{
	char *yaml = NULL;

	child_xfdr_ok("verify", trace, NULL);
	if (ts_llvm_yaml(trace, &yaml))
		fail_msg("llvm-xray rejects %s: %.400s", trace, yaml);
	free(yaml);
}

/*
 * The known sequence a child records and a rebuilt trace must hold exactly: event k is the
 * entry (k even) or exit (k odd) of function k / 2 % 1000 + 1.
 */
static TS_UNUSED uint32_t ts_seq_fid(uint64_t k)
{
	return (uint32_t)(k / 2 % 1000 + 1);
}

static TS_UNUSED int ts_seq_is_exit(uint64_t k)
{
	return (int)(k & 1);
}

static TS_UNUSED void ts_seq_issue(uint64_t k)
{
	if (ts_seq_is_exit(k))
		xfdr_exit(ts_seq_fid(k));
	else
		xfdr_enter(ts_seq_fid(k));
}

static TS_UNUSED int ts_seq_event(const struct xfdr_event *ev, void *arg)
{
	size_t *n = arg;

	if (ev->type != XFDR_EVENT_FUNCTION)
		return 0;
	if (ev->function_id != ts_seq_fid(*n) || ev->action != (unsigned)ts_seq_is_exit(*n))
		fail_msg("reader event %zu: fid %u action %u, expected %u %u", *n, ev->function_id,
			 ev->action, ts_seq_fid(*n), ts_seq_is_exit(*n));
	(*n)++;
	return 0;
}

/* The reader library, in file order: exactly the sequence. Returns the event count. */
static TS_UNUSED size_t ts_seq_reader(const char *path)
{
	size_t n = 0;

	ts_each_event(path, XFDR_ORDER_FILE, ts_seq_event, &n);
	return n;
}

/* One function record of llvm-xray's YAML, as ts_seq_llvm() needs it. */
struct ts_seq_rec {
	unsigned fid, thread;
	int exit;
	uint64_t tsc;
};

static TS_UNUSED int ts_seq_rec_tsc_cmp(const void *a, const void *b)
{
	const struct ts_seq_rec *x = a, *y = b;

	return x->tsc < y->tsc ? -1 : x->tsc > y->tsc;
}

/* The value after "key" in [line, eol), or NULL (bounded to the line: the YAML is long). */
static TS_UNUSED const char *ts_seq_field(const char *line, const char *eol, const char *key)
{
	const char *p = memmem(line, (size_t)(eol - line), key, strlen(key));

	return p ? p + strlen(key) : NULL;
}

/*
 * llvm-xray: one thread, exactly events 0 .. n-1 of the sequence, at most max + 1 of them,
 * taken in TSC order: llvm-xray 14 orders a thread's buffers with a comparator that is no
 * strict weak order (README), so buffers that straddle a second may come out swapped; the
 * child's events are microseconds apart, so their TSCs are distinct and give the issue order.
 * A record that is not a function entry or exit fails the test. Returns the record count.
 */
static TS_UNUSED size_t ts_seq_llvm(const char *path, uint64_t max)
{
	struct ts_seq_rec *r = calloc(max + 2, sizeof(*r));
	char *yaml = NULL;
	const char *line, *eol = NULL;
	size_t n = 0, k;

	assert_non_null(r);
	if (ts_llvm_yaml(path, &yaml))
		fail_msg("llvm-xray rejects %s:\n%.2000s", path, yaml ? yaml : "");
	line = strstr(yaml, "records:");
	for (; (line = ts_next_record(line, &eol)); line = eol) {
		const char *f;

		assert_true(n < max + 2);
		if ((f = ts_seq_field(line, eol, "func-id: ")))
			r[n].fid = (unsigned)strtoul(f, NULL, 10);
		if ((f = ts_seq_field(line, eol, "thread: ")))
			r[n].thread = (unsigned)strtoul(f, NULL, 10);
		if ((f = ts_seq_field(line, eol, " tsc: ")))
			r[n].tsc = strtoull(f, NULL, 10);
		if (ts_seq_field(line, eol, "kind: function-exit,"))
			r[n].exit = 1;
		else if (!ts_seq_field(line, eol, "kind: function-enter,"))
			fail_msg("unexpected llvm-xray record: %.*s", (int)(eol - line), line);
		n++;
	}
	qsort(r, n, sizeof(*r), ts_seq_rec_tsc_cmp);
	for (k = 0; k < n; k++)
		if (r[k].fid != ts_seq_fid(k) || r[k].exit != ts_seq_is_exit(k) ||
		    r[k].thread != r[0].thread)
			fail_msg("llvm-xray record %zu by TSC: fid %u exit %d thread %u, expected "
				 "fid %u exit %d",
				 k, r[k].fid, r[k].exit, r[k].thread, ts_seq_fid(k),
				 ts_seq_is_exit(k));
	free(yaml);
	free(r);
	return n;
}

#endif /* XFDR_TEST_RUNTIME_SUPPORT_H */
