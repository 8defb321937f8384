/*
 * tests/system/test_interop.c - our files and our reader against llvm-xray 14, the oracle.
 *
 * Part 1: files from the encoder of tests/support/trace_gen.h, kept to what llvm-xray reads
 * correctly (buffer sizes and payloads in multiples of 8 so the zero padding after EndOfBuffer
 * parses as whole 8-byte records, payloads never empty), are written to a temporary directory and
 *   - checked with `llvm-xray fdr-dump --verify` (one block per buffer),
 *   - converted with `llvm-xray convert --output-format=yaml`, both with --sort=false (records
 *     of each thread in block order) and with the default sort (a stable sort by TSC),
 *   - read with our reader, whose events must equal the generated ones (ground truth) and,
 *     record by record and per thread, llvm-xray's: kind, function id, absolute TSC, CPU,
 *     thread, arguments, custom payload. llvm-xray's v1 custom events carry no CPU (it prints
 *     0) and repeat a stale func-id, so for those only kind, TSC, thread and data count.
 *
 * Part 2: where llvm-xray 14 departs from the specification, one test each, every claim
 * checked against the real tool: the test pins llvm-xray's behaviour and asserts that our
 * reader follows the spec.
 *
 * The YAML is what `llvm-xray convert` prints: a header mapping, then one flow mapping per
 * record on its own line, e.g.
 *   - { type: 0, func-id: 2, function: '2', args: [ 4660, 42 ], cpu: 3, thread: 7,
 *       kind: function-enter-arg, tsc: 1015, data: '' }
 * (one line in the real output). data is a plain, single-quoted or double-quoted scalar.
 *
 * Without llvm-xray (XFDR_LLVM_XRAY, default "llvm-xray") every test is skipped with a message.
 */
#include <errno.h>
#include <fcntl.h>
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

#include "analysis/callstack.h"
#include "tests/support/child.h"
#include "tests/support/image.h"
#include "tests/support/trace_gen.h"
#include "writer/encode.h"
#include "xfdr/reader.h"

#define MAX_YAML_ARGS 16

/* ---- running llvm-xray ----------------------------------------------------------------- */

static void append(char **buf, size_t *len, const char *p, size_t n)
{
	*buf = realloc(*buf, *len + n + 1);
	assert_non_null(*buf);
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = '\0';
}

static int have_llvm_xray(void)
{
	char *argv[] = {(char *)child_llvm_xray(), "--version", NULL};
	struct child_result r;
	int ok;

	child_capture(argv, &r);
	ok = r.status == 0;
	child_result_free(&r);
	return ok;
}

#define REQUIRE_LLVM_XRAY()                                                                        \
	do {                                                                                       \
		if (!have_llvm_xray()) {                                                           \
			print_message("llvm-xray (%s) not found: interop test skipped\n",          \
				      child_llvm_xray());                                          \
			skip();                                                                    \
		}                                                                                  \
	} while (0)

/* `llvm-xray convert --output-format=yaml [--sort=false] path` */
static void convert(const char *path, int sorted, struct child_result *r)
{
	char *argv[6];
	int n = 0;

	argv[n++] = (char *)child_llvm_xray();
	argv[n++] = "convert";
	argv[n++] = "--output-format=yaml";
	if (!sorted)
		argv[n++] = "--sort=false";
	argv[n++] = (char *)path;
	argv[n] = NULL;
	child_capture(argv, r);
}

static void fdr_dump_verify(const char *path, struct child_result *r)
{
	char *argv[] = {(char *)child_llvm_xray(), "fdr-dump", "--verify", (char *)path, NULL};

	child_capture(argv, r);
}

/* ---- temporary files ------------------------------------------------------------------- */

static char tmp_dir[64];

static int setup_dir(void **state)
{
	(void)state;
	strcpy(tmp_dir, "/tmp/xfdr-interop-XXXXXX");
	return mkdtemp(tmp_dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	char cmd[128];

	(void)state;
	if (getenv("XFDR_KEEP_TMP")) {
		printf("kept %s\n", tmp_dir);
		return 0;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Write data to <tmp_dir>/<name>; returns the path (static storage, one at a time). */
static const char *write_file(const char *name, const void *data, size_t n)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmp_dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* ---- the YAML of llvm-xray convert ------------------------------------------------------- */

enum { Y_ENTER, Y_EXIT, Y_TAIL_EXIT, Y_ENTER_ARGS, Y_CUSTOM };

struct yrec {
	int kind; /* Y_*: function actions have the values of enum xfdr_fn_action */
	uint32_t fid;
	uint32_t cpu;
	uint64_t thread;
	int has_process;
	uint64_t process;
	uint64_t tsc;
	uint32_t nargs;
	uint64_t args[MAX_YAML_ARGS];
	uint8_t *data;
	size_t data_len;
};

struct yaml {
	int version, type, constant_tsc, nonstop_tsc;
	uint64_t cycle_frequency;
	struct yrec *r;
	size_t n, cap;
};

static void yaml_free(struct yaml *y)
{
	size_t i;

	for (i = 0; i < y->n; i++)
		free(y->r[i].data);
	free(y->r);
	memset(y, 0, sizeof(*y));
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void put_utf8(char **buf, size_t *len, uint32_t cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12);
		u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | cp >> 18);
		u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	append(buf, len, u, n);
}

/*
 * One scalar at *pp (plain, 'single' or "double" quoted, YAML 1.2 escapes) into a fresh
 * allocation; last: it is the line's last value. Returns 0 and moves *pp past it, or -1 on a
 * form this parser does not know.
 */
static int parse_scalar(const char **pp, int last, char **val, size_t *len)
{
	static const char simple_from[] = "0abtnvfre\"\\/ ";
	static const char simple_to[] = "\0\a\b\t\n\v\f\r\x1b\"\\/ ";
	const char *p = *pp, *q;
	const char *e;
	uint32_t cp;
	int i, digits, h;

	*val = NULL;
	*len = 0;
	append(val, len, "", 0);
	if (*p == '\'') {
		for (p++;; p++) {
			if (!*p)
				return -1;
			if (*p == '\'') {
				if (p[1] != '\'')
					break;
				p++;
			}
			append(val, len, p, 1);
		}
		*pp = p + 1;
		return 0;
	}
	if (*p == '"') {
		for (p++; *p != '"'; p++) {
			if (!*p)
				return -1;
			if (*p != '\\') {
				append(val, len, p, 1);
				continue;
			}
			p++;
			if ((e = strchr(simple_from, *p)) && *p) {
				append(val, len, &simple_to[e - simple_from], 1);
				continue;
			}
			digits = *p == 'x' ? 2 : *p == 'u' ? 4 : *p == 'U' ? 8 : 0;
			if (digits) {
				for (cp = 0, i = 1; i <= digits; i++) {
					if ((h = hexval(p[i])) < 0)
						return -1;
					cp = cp << 4 | (uint32_t)h;
				}
				p += digits;
				if (digits == 2) {
					char b = (char)cp;

					append(val, len, &b, 1);
				} else {
					put_utf8(val, len, cp);
				}
				continue;
			}
			if (*p == 'N')
				put_utf8(val, len, 0x85);
			else if (*p == '_')
				put_utf8(val, len, 0xa0);
			else if (*p == 'L')
				put_utf8(val, len, 0x2028);
			else if (*p == 'P')
				put_utf8(val, len, 0x2029);
			else
				return -1;
		}
		*pp = p + 1;
		return 0;
	}
	/*
	 * Plain: llvm-xray leaves ',' and ' ' unquoted (even ", "), so a plain value ends at the
	 * next ',' or '}' only for the keys whose values are numbers or names; the data value,
	 * always the last key, runs to the " }" that ends the line.
	 */
	if (last) {
		q = p + strlen(p);
		if (q - p < 2 || strcmp(q - 2, " }"))
			return -1;
		q -= 2;
	} else {
		for (q = p; *q && *q != ',' && *q != '}'; q++)
			;
	}
	*pp = q;
	while (q > p && q[-1] == ' ')
		q--;
	append(val, len, p, (size_t)(q - p));
	return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || end == s || *end ? -1 : 0;
}

static int kind_of(const char *s)
{
	static const char *const names[] = {
	    [Y_ENTER] = "function-enter",	  [Y_EXIT] = "function-exit",
	    [Y_TAIL_EXIT] = "function-tail-exit", [Y_ENTER_ARGS] = "function-enter-arg",
	    [Y_CUSTOM] = "custom-event",
	};
	int i;

	for (i = 0; i <= Y_CUSTOM; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

/* One "- { key: value, ... }" line, NUL-terminated without its newline. Returns 0 or -1. */
static int parse_record(const char *p, struct yrec *r)
{
	char key[32], *val;
	size_t klen, vlen;
	uint64_t v;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	r->kind = -1;
	while (*p == ' ')
		p++;
	if (strncmp(p, "- {", 3))
		return -1;
	p += 3;
	for (;;) {
		while (*p == ' ')
			p++;
		if (*p == '}')
			break;
		for (klen = 0; *p && *p != ':' && klen + 1 < sizeof(key); p++)
			key[klen++] = *p;
		key[klen] = '\0';
		if (*p != ':')
			return -1;
		p++;
		while (*p == ' ')
			p++;
		if (!strcmp(key, "args")) {
			if (*p++ != '[')
				return -1;
			for (;;) {
				char *end;

				while (*p == ' ' || *p == ',')
					p++;
				if (*p == ']')
					break;
				if (r->nargs == MAX_YAML_ARGS)
					return -1;
				errno = 0;
				r->args[r->nargs++] = strtoull(p, &end, 10);
				if (errno || end == p)
					return -1;
				p = end;
			}
			p++;
		} else {
			if (parse_scalar(&p, !strcmp(key, "data"), &val, &vlen))
				return -1;
			if (!strcmp(key, "data")) {
				r->data = (uint8_t *)val;
				r->data_len = vlen;
				val = NULL;
			} else if (!strcmp(key, "kind")) {
				r->kind = kind_of(val);
				rc |= r->kind < 0 ? -1 : 0;
			} else if (!strcmp(key, "func-id")) {
				rc |= parse_u64(val, &v);
				r->fid = (uint32_t)v;
			} else if (!strcmp(key, "cpu")) {
				rc |= parse_u64(val, &v);
				r->cpu = (uint32_t)v;
			} else if (!strcmp(key, "thread")) {
				rc |= parse_u64(val, &r->thread);
			} else if (!strcmp(key, "process")) {
				rc |= parse_u64(val, &r->process);
				r->has_process = 1;
			} else if (!strcmp(key, "tsc")) {
				rc |= parse_u64(val, &r->tsc);
			}
			free(val);
			if (rc)
				return -1;
		}
		while (*p == ' ')
			p++;
		if (*p == ',')
			p++;
		else if (*p != '}')
			return -1;
	}
	return r->kind < 0 ? -1 : 0;
}

/* Parse the whole output of convert. Every line after "records:" up to "..." is a record. */
static void parse_yaml(const char *text, struct yaml *y)
{
	const char *line = text, *nl;
	char buf[256];
	int in_records = 0, rc;
	char *copy;
	uint64_t v;

	memset(y, 0, sizeof(*y));
	y->version = y->type = y->constant_tsc = y->nonstop_tsc = -1;
	for (; *line; line = nl ? nl + 1 : line + strlen(line)) {
		nl = strchr(line, '\n');
		if (!in_records) {
			size_t n = nl ? (size_t)(nl - line) : strlen(line);

			if (n >= sizeof(buf))
				n = sizeof(buf) - 1;
			memcpy(buf, line, n);
			buf[n] = '\0';
			if (!strcmp(buf, "records:"))
				in_records = 1;
			else if (sscanf(buf, " version: %" SCNu64, &v) == 1)
				y->version = (int)v;
			else if (sscanf(buf, " type: %" SCNu64, &v) == 1)
				y->type = (int)v;
			else if (sscanf(buf, " cycle-frequency: %" SCNu64, &v) == 1)
				y->cycle_frequency = v;
			else if (strstr(buf, "constant-tsc:"))
				y->constant_tsc = strstr(buf, "true") != NULL;
			else if (strstr(buf, "nonstop-tsc:"))
				y->nonstop_tsc = strstr(buf, "true") != NULL;
			continue;
		}
		if (!strncmp(line, "...", 3))
			break;
		if (y->n == y->cap) {
			y->cap = y->cap ? 2 * y->cap : 64;
			y->r = realloc(y->r, y->cap * sizeof(*y->r));
			assert_non_null(y->r);
		}
		copy = strndup(line, nl ? (size_t)(nl - line) : strlen(line));
		assert_non_null(copy);
		rc = parse_record(copy, &y->r[y->n]);
		if (rc)
			print_error("cannot parse llvm-xray record line: %s\n", copy);
		free(copy);
		if (rc) {
			free(y->r[y->n].data);
			fail();
		}
		y->n++;
	}
	assert_true(in_records);
}

/* Convert path with llvm-xray, which must succeed, and parse its YAML. */
static void convert_ok(const char *path, int sorted, struct yaml *y)
{
	struct child_result r;

	convert(path, sorted, &r);
	if (r.status != 0)
		print_error("llvm-xray convert %s failed (%d): %s\n", path, r.status, r.err);
	assert_int_equal(r.status, 0);
	parse_yaml(r.out, y);
	child_result_free(&r);
}

/* ---- our reader's events ------------------------------------------------------------------- */

struct rev {
	struct xfdr_event ev;
	uint64_t args[MAX_YAML_ARGS];
	size_t order; /* position in the reader's order: the tie-break of the stable sort */
};

struct revs {
	struct xfdr_trace *t;
	struct rev *e;
	size_t n, cap;
};

/* Open path with our reader, which must accept it, and collect its XFDR_ORDER_THREAD events. */
static void read_events(const char *path, struct revs *out)
{
	struct xfdr_event_iter it;
	struct xfdr_error err;
	struct rev *r;
	uint32_t k;
	int rc;

	memset(out, 0, sizeof(*out));
	if (xfdr_trace_open(path, &out->t, &err) || xfdr_trace_verify(out->t, &err) ||
	    xfdr_events_begin(out->t, XFDR_ORDER_THREAD, &it, &err)) {
		print_error("our reader refused %s: %s\n", path, err.text);
		fail();
	}
	for (;;) {
		if (out->n == out->cap) {
			out->cap = out->cap ? 2 * out->cap : 64;
			out->e = realloc(out->e, out->cap * sizeof(*out->e));
			assert_non_null(out->e);
		}
		r = &out->e[out->n];
		rc = xfdr_events_next(&it, &r->ev, &err);
		if (rc < 0)
			print_error("our reader failed on %s: %s\n", path, err.text);
		assert_true(rc >= 0);
		if (!rc)
			break;
		assert_true(r->ev.arg_count <= MAX_YAML_ARGS);
		for (k = 0; k < r->ev.arg_count; k++)
			r->args[k] = xfdr_event_arg(out->t, &r->ev, k);
		r->order = out->n++;
	}
}

static void revs_free(struct revs *r)
{
	xfdr_trace_close(r->t);
	free(r->e);
	memset(r, 0, sizeof(*r));
}

/* Does llvm-xray's record y say the same as our event r? Prints the difference if not. */
static int same_record(const struct yrec *y, const struct rev *r)
{
	const struct xfdr_event *e = &r->ev;
	const char *why = NULL;
	uint32_t k;

	if (y->thread != e->thread_id)
		why = "thread";
	else if (y->tsc != e->tsc)
		why = "tsc";
	else if (e->type == XFDR_EVENT_CUSTOM) {
		if (y->kind != Y_CUSTOM)
			why = "kind";
		else if (y->data_len != e->payload_bytes ||
			 memcmp(y->data, e->payload, e->payload_bytes))
			why = "custom data";
	} else if (y->kind != (int)e->action)
		why = "kind";
	else if (y->fid != e->function_id)
		why = "func-id";
	else if (y->cpu != e->cpu)
		why = "cpu";
	else if (y->nargs != e->arg_count)
		why = "number of args";
	else
		for (k = 0; k < y->nargs && !why; k++)
			if (y->args[k] != r->args[k])
				why = "args";
	if (!why)
		return 1;
	print_error("llvm-xray and our reader differ in %s at file offset %" PRIu64
		    ":\n  llvm-xray: kind %d func-id %u cpu %u thread %" PRIu64 " tsc %" PRIu64
		    " args %u data %zu bytes\n  ours:      type %d action %u fid %u cpu %u "
		    "thread %u tsc %" PRIu64 " args %u payload %u bytes\n",
		    why, e->offset, y->kind, y->fid, y->cpu, y->thread, y->tsc, y->nargs,
		    y->data_len, (int)e->type, e->action, e->function_id, e->cpu, e->thread_id,
		    e->tsc, e->arg_count, e->payload_bytes);
	return 0;
}

static int cmp_tsc_stable(const void *a, const void *b)
{
	const struct rev *x = a, *y = b;

	if (x->ev.thread_id != y->ev.thread_id)
		return x->ev.thread_id < y->ev.thread_id ? -1 : 1;
	if (x->ev.tsc != y->ev.tsc)
		return x->ev.tsc < y->ev.tsc ? -1 : 1;
	return (x->order > y->order) - (x->order < y->order);
}

/*
 * Every thread's records, in order, must be the same in y and ours (which is grouped by thread
 * already). With sorted, ours is first stable-sorted by TSC within each thread: llvm-xray's
 * default sort is a stable sort of all records by TSC, and a stable sort keeps each thread's
 * subsequence in the order a stable sort of that thread alone would give.
 */
static void compare_per_thread(const struct yaml *y, struct revs *ours, int sorted)
{
	size_t i, j, start, end;
	uint16_t tid;

	if (sorted)
		qsort(ours->e, ours->n, sizeof(*ours->e), cmp_tsc_stable);
	assert_int_equal(y->n, ours->n);
	for (start = 0; start < ours->n; start = end) {
		tid = ours->e[start].ev.thread_id;
		for (end = start; end < ours->n && ours->e[end].ev.thread_id == tid; end++)
			;
		for (i = start, j = 0; j < y->n; j++) {
			if (y->r[j].thread != tid)
				continue;
			if (i == end) {
				print_error("llvm-xray has more records of thread %u\n", tid);
				fail();
			}
			if (!same_record(&y->r[j], &ours->e[i])) {
				print_error("(%s output, record %zu of llvm-xray)\n",
					    sorted ? "sorted" : "--sort=false", j);
				fail();
			}
			i++;
		}
		if (i != end) {
			print_error("llvm-xray has %zu records of thread %u, we have %zu\n",
				    i - start, tid, end - start);
			fail();
		}
	}
}

/* ---- part 1: random files, record by record ---------------------------------------------- */

/* Occurrences of what in text[0, len); fdr-dump prints payloads raw, NUL bytes included. */
static size_t count_in(const char *text, size_t len, const char *what)
{
	const char *end = text + len, *p;
	size_t n = 0, w = strlen(what);

	while ((p = memmem(text, (size_t)(end - text), what, w))) {
		n++;
		text = p + w;
	}
	return n;
}

static void check_random_file(uint64_t iter_seed, const struct tg_params *p, unsigned i)
{
	struct tg_trace tr;
	struct tg_file f;
	struct revs ours;
	struct yaml y;
	struct child_result r;
	char name[64];
	const char *path;
	uint64_t s = iter_seed;
	size_t blocks;

	tg_generate(&tr, p, &s);
	tg_encode(&tr, &f, &s);
	snprintf(name, sizeof(name), "random-%u.xray", i);
	path = write_file(name, f.data, f.bytes);

	/* Ground truth first: if our reader disagreed with it, llvm-xray would prove nothing. */
	read_events(path, &ours);
	if (tg_check_trace(ours.t, &tr, f.buffers)) {
		print_error("file %s (seed %" PRIu64 ")\n", path, iter_seed);
		fail();
	}

	fdr_dump_verify(path, &r);
	if (r.status)
		print_error("llvm-xray fdr-dump --verify %s: %s\n", path, r.err);
	assert_int_equal(r.status, 0);
	blocks = count_in(r.out, r.out_len, "[New Block]");
	if (blocks != f.buffers)
		print_error("llvm-xray fdr-dump --verify %s (seed %" PRIu64 "): %zu blocks, "
			    "we wrote %zu buffers\n",
			    path, iter_seed, blocks, f.buffers);
	assert_int_equal(blocks, f.buffers);
	child_result_free(&r);

	convert_ok(path, 0, &y);
	assert_int_equal(y.version, 1);
	assert_int_equal(y.type, 1);
	assert_int_equal(y.constant_tsc, 1);
	assert_int_equal(y.nonstop_tsc, 1);
	assert_int_equal(y.cycle_frequency, 2000000000ull);
	compare_per_thread(&y, &ours, 0);
	yaml_free(&y);

	convert_ok(path, 1, &y);
	compare_per_thread(&y, &ours, 1);
	yaml_free(&y);

	revs_free(&ours);
	free(f.data);
	tg_free(&tr);
}

static void test_interop_random(void **state)
{
	static const size_t sizes[] = {72, 80, 96, 128, 256, 1024, 4096};
	uint64_t master, iter_seed, s;
	struct tg_params p;
	unsigned i, n = 24;

	(void)state;
	REQUIRE_LLVM_XRAY();
	master = tg_seed("interop_random");
	if (getenv("XFDR_STRESS") && strcmp(getenv("XFDR_STRESS"), "0"))
		n *= 10;
	for (i = 0; i < n; i++) {
		iter_seed = tg_next(&master);
		s = iter_seed;
		memset(&p, 0, sizeof(p));
		p.buffer_bytes = sizes[tg_below(&s, sizeof(sizes) / sizeof(sizes[0]))];
		/* A few files with many threads and many buffers, the rest small. */
		p.threads = i % 8 == 7 ? 40 : 1 + (size_t)tg_below(&s, 5);
		p.max_events = i % 8 == 7 ? 2000 : 1 + (size_t)tg_below(&s, 400);
		p.llvm_safe = 1;
		p.custom_pct = (unsigned)tg_below(&s, 30);
		check_random_file(iter_seed, &p, i);
	}
}

/* ---- part 2: where llvm-xray 14 departs from the spec -------------------------------------- */

/*
 * Hand-placed images (tests/support/image.h): header, NewBuffer, WallClockTime, EndOfBuffer and
 * padding in literal bytes from the spec; the records in between come from the encoders.
 */

/* Our reader on an image that it must accept: the events in thread order. */
static void our_events(struct img *m, struct revs *out)
{
	out->n = 0;
	read_events(write_file("ours.xray", m->b, m->len), out);
}

/* Our reader on an image that it must reject: the error. */
static void our_error(struct img *m, struct xfdr_error *err)
{
	struct xfdr_trace *t;

	assert_int_equal(xfdr_trace_open_memory(m->b, m->len, "bad", &t, err), 0);
	assert_int_equal(xfdr_trace_verify(t, err), -1);
	print_message("our reader: %s\n", err->text);
	xfdr_trace_close(t);
}

static void expect_fn(const struct rev *r, uint16_t tid, unsigned action, uint32_t fid,
		      uint64_t tsc)
{
	assert_int_equal(r->ev.type, XFDR_EVENT_FUNCTION);
	assert_int_equal(r->ev.thread_id, tid);
	assert_int_equal(r->ev.action, action);
	assert_int_equal(r->ev.function_id, fid);
	assert_int_equal(r->ev.tsc, tsc);
}

/*
 * A custom payload whose size is not a multiple of 8. The spec allows any size, and the
 * header's buffer_size says where the next buffer starts. llvm-xray 14 ignores buffer_size in
 * v1: it parses the padding after EndOfBuffer as 8-byte records, which now straddle the next
 * buffer's NewBuffer, so that buffer is misread and the file ends in a partial record:
 * `convert` fails, and `fdr-dump --verify` says "Invalid offset for a function record".
 */
static void test_llvm_unaligned_custom_payload(void **state)
{
	struct img m;
	struct revs ours;
	struct child_result r;
	const char *path;

	(void)state;
	REQUIRE_LLVM_XRAY();
	img_init(&m, 256);
	img_buffer(&m, 7, 10, 5);
	m.len += wr_new_cpu_id(img_at(&m), 3, 1000);
	m.len += wr_function(img_at(&m), XFDR_FN_ENTER, 1, 1);
	m.len += wr_custom_event_marker(img_at(&m), 5, 2000);
	memcpy(img_at(&m), "hello", 5);
	m.len += 5;
	m.len += wr_function(img_at(&m), XFDR_FN_EXIT, 1, 1);
	img_close(&m);
	img_buffer(&m, 8, 11, 6);
	m.len += wr_new_cpu_id(img_at(&m), 1, 50);
	m.len += wr_function(img_at(&m), XFDR_FN_ENTER, 9, 1);
	img_close(&m);
	path = write_file("unaligned-custom.xray", m.b, m.len);

	convert(path, 0, &r);
	assert_int_not_equal(r.status, 0);
	child_result_free(&r);
	fdr_dump_verify(path, &r);
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.err, "Invalid offset for a function record"));
	child_result_free(&r);

	/* The spec: thread 7 has Entry 1001, the 5-byte event at 2000, Exit 1002; thread 8 one. */
	our_events(&m, &ours);
	assert_int_equal(ours.n, 4);
	expect_fn(&ours.e[0], 7, XFDR_FN_ENTER, 1, 1001);
	assert_int_equal(ours.e[1].ev.type, XFDR_EVENT_CUSTOM);
	assert_int_equal(ours.e[1].ev.tsc, 2000);
	assert_int_equal(ours.e[1].ev.payload_bytes, 5);
	assert_memory_equal(ours.e[1].ev.payload, "hello", 5);
	expect_fn(&ours.e[2], 7, XFDR_FN_EXIT, 1, 1002);
	expect_fn(&ours.e[3], 8, XFDR_FN_ENTER, 9, 51);
	revs_free(&ours);
}

/*
 * NewBuffer: the spec gives the thread id 2 bytes and 13 reserved bytes. llvm-xray 14 reads a
 * 4-byte thread id, so non-zero bytes right after the 2-byte id change the thread it reports:
 * tid 7 with reserved bytes 12 34 becomes thread 0x34120007 = 873594887.
 */
static void test_llvm_new_buffer_reads_4_byte_tid(void **state)
{
	struct img m;
	struct revs ours;
	struct yaml y;

	(void)state;
	REQUIRE_LLVM_XRAY();
	img_init(&m, 128);
	img_buffer(&m, 7, 10, 5);
	m.b[m.buf_start + 3] = 0x12; /* the first two reserved bytes of NewBuffer */
	m.b[m.buf_start + 4] = 0x34;
	m.len += wr_new_cpu_id(img_at(&m), 3, 1000);
	m.len += wr_function(img_at(&m), XFDR_FN_ENTER, 1, 1);
	img_close(&m);

	convert_ok(write_file("tid-reserved.xray", m.b, m.len), 0, &y);
	assert_int_equal(y.n, 1);
	assert_int_equal(y.r[0].thread, 873594887u);
	assert_int_equal(y.r[0].tsc, 1001);
	yaml_free(&y);

	our_events(&m, &ours);
	assert_int_equal(ours.n, 1);
	expect_fn(&ours.e[0], 7, XFDR_FN_ENTER, 1, 1001);
	revs_free(&ours);
}

/*
 * A custom event of size 0: the spec puts no lower bound on event_size. llvm-xray 14 rejects
 * the file ("Invalid size for custom event (size = 0)").
 */
static void test_llvm_rejects_empty_custom_event(void **state)
{
	struct img m;
	struct revs ours;
	struct child_result r;
	const char *path;

	(void)state;
	REQUIRE_LLVM_XRAY();
	img_init(&m, 128);
	img_buffer(&m, 7, 10, 5);
	m.len += wr_new_cpu_id(img_at(&m), 3, 1000);
	m.len += wr_function(img_at(&m), XFDR_FN_ENTER, 1, 1);
	m.len += wr_custom_event_marker(img_at(&m), 0, 2000);
	m.len += wr_function(img_at(&m), XFDR_FN_EXIT, 1, 1);
	img_close(&m);
	path = write_file("empty-custom.xray", m.b, m.len);

	convert(path, 0, &r);
	assert_int_not_equal(r.status, 0);
	child_result_free(&r);
	fdr_dump_verify(path, &r);
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.err, "Invalid size for custom event (size = 0)"));
	child_result_free(&r);

	our_events(&m, &ours);
	assert_int_equal(ours.n, 3);
	expect_fn(&ours.e[0], 7, XFDR_FN_ENTER, 1, 1001);
	assert_int_equal(ours.e[1].ev.type, XFDR_EVENT_CUSTOM);
	assert_int_equal(ours.e[1].ev.tsc, 2000);
	assert_int_equal(ours.e[1].ev.payload_bytes, 0);
	expect_fn(&ours.e[2], 7, XFDR_FN_EXIT, 1, 1002);
	revs_free(&ours);
}

/*
 * CallArgument records belong after an Entry_Args record only (spec: Function :=
 * (Function_Entry_Args CallArgument*) | Function_Other_Type). llvm-xray 14 takes them after
 * any function record and turns that record into an entry with arguments: after an Entry it
 * prints function-enter-arg, and an Exit followed by a CallArgument even becomes a
 * function-enter-arg. Our reader rejects both files at the CallArgument.
 */
static void test_llvm_accepts_call_argument_after_plain_record(void **state)
{
	static const unsigned actions[] = {XFDR_FN_ENTER, XFDR_FN_EXIT};
	struct img m;
	struct yaml y;
	struct xfdr_error err;
	size_t arg_off;
	unsigned i;

	(void)state;
	REQUIRE_LLVM_XRAY();
	for (i = 0; i < 2; i++) {
		img_init(&m, 128);
		img_buffer(&m, 7, 10, 5);
		m.len += wr_new_cpu_id(img_at(&m), 3, 1000);
		m.len += wr_function(img_at(&m), actions[i], 1, 1);
		arg_off = m.len;
		m.len += wr_call_argument(img_at(&m), 77);
		img_close(&m);

		convert_ok(write_file("arg-after-plain.xray", m.b, m.len), 0, &y);
		assert_int_equal(y.n, 1);
		assert_int_equal(y.r[0].kind, Y_ENTER_ARGS);
		assert_int_equal(y.r[0].nargs, 1);
		assert_int_equal(y.r[0].args[0], 77);
		assert_int_equal(y.r[0].tsc, 1001);
		yaml_free(&y);

		our_error(&m, &err);
		assert_int_equal(err.offset, arg_off);
		assert_non_null(strstr(err.text, "CallArgument"));
	}
}

/*
 * Metadata kinds 7 (BufferExtents) and 9 (Pid) belong to later versions; version 1 defines
 * kinds 0-6. llvm-xray 14 accepts both in a version-1 file: the Pid adds a "process" key to
 * every record, the BufferExtents vanishes. Our reader rejects the unknown kind.
 */
static void test_llvm_accepts_later_version_records(void **state)
{
	struct img m;
	struct yaml y;
	struct xfdr_error err;
	size_t off;

	(void)state;
	REQUIRE_LLVM_XRAY();
	/* Pid (kind 9, i32 4242) between WallClockTime and NewCPUId, as versions >= 3 put it. */
	img_init(&m, 128);
	img_buffer(&m, 7, 10, 5);
	off = m.len;
	wr_md_begin(img_at(&m), 9);
	wr_put32(img_at(&m) + 1, 4242);
	m.len += XFDR_MD_RECORD_BYTES;
	m.len += wr_new_cpu_id(img_at(&m), 3, 1000);
	m.len += wr_function(img_at(&m), XFDR_FN_ENTER, 1, 1);
	img_close(&m);
	convert_ok(write_file("pid.xray", m.b, m.len), 0, &y);
	assert_int_equal(y.n, 1);
	assert_true(y.r[0].has_process);
	assert_int_equal(y.r[0].process, 4242);
	assert_int_equal(y.r[0].tsc, 1001);
	yaml_free(&y);
	our_error(&m, &err);
	assert_int_equal(err.offset, off);
	assert_non_null(strstr(err.text, "kind 9"));

	/* BufferExtents (kind 7, u64 64) after a function record. */
	img_init(&m, 128);
	img_buffer(&m, 7, 10, 5);
	m.len += wr_new_cpu_id(img_at(&m), 3, 1000);
	m.len += wr_function(img_at(&m), XFDR_FN_ENTER, 1, 1);
	off = m.len;
	wr_md_begin(img_at(&m), 7);
	wr_put64(img_at(&m) + 1, 64);
	m.len += XFDR_MD_RECORD_BYTES;
	img_close(&m);
	convert_ok(write_file("extents.xray", m.b, m.len), 0, &y);
	assert_int_equal(y.n, 1);
	assert_int_equal(y.r[0].tsc, 1001);
	yaml_free(&y);
	our_error(&m, &err);
	assert_int_equal(err.offset, off);
	assert_non_null(strstr(err.text, "kind 7"));
}

/*
 * After EndOfBuffer the spec tells the reader to skip the rest of the buffer. llvm-xray 14
 * does not skip it: it parses it as records and ignores them only until the next NewBuffer.
 * So stale records in the padding of a reused buffer come back: a stale NewBuffer(9) preamble
 * and an Entry there make llvm-xray report a phantom thread 9 (its Entry and 17 zero records
 * as Entries of function 0); a padding of 0xff bytes (metadata kind 127) makes it fail. Our
 * reader sees one Entry of thread 7 in both files.
 */
static void test_llvm_parses_padding_after_end_of_buffer(void **state)
{
	struct img m;
	struct revs ours;
	struct yaml y;
	struct child_result r;
	size_t i, phantom = 0;
	uint8_t *pad;
	const char *path;
	int fill;

	(void)state;
	REQUIRE_LLVM_XRAY();
	for (fill = 0; fill < 2; fill++) {
		img_init(&m, 256);
		img_buffer(&m, 7, 10, 5);
		m.len += wr_new_cpu_id(img_at(&m), 3, 1000);
		m.len += wr_function(img_at(&m), XFDR_FN_ENTER, 1, 1);
		img_close(&m);
		/* The padding starts after the 16-byte EndOfBuffer at header + 56. */
		pad = m.b + XFDR_FILE_HEADER_BYTES + 56 + XFDR_MD_RECORD_BYTES;
		if (fill) {
			memset(pad, 0xff, 256 - 72);
		} else {
			pad += wr_new_buffer(pad, 9);
			pad += wr_wall_clock_time(pad, 1, 1);
			pad += wr_new_cpu_id(pad, 2, 7);
			wr_function(pad, XFDR_FN_ENTER, 42, 3);
		}
		path = write_file("padding.xray", m.b, m.len);
		if (fill) {
			convert(path, 0, &r);
			assert_int_not_equal(r.status, 0);
			child_result_free(&r);
			fdr_dump_verify(path, &r);
			assert_int_not_equal(r.status, 0);
			assert_non_null(strstr(r.err, "Invalid metadata record type: 127"));
			child_result_free(&r);
		} else {
			convert_ok(path, 0, &y);
			for (i = 0; i < y.n; i++)
				phantom += y.r[i].thread == 9;
			/* 256 - 72 - 56 = 128 bytes after the stale Entry: 16 zero records. */
			assert_int_equal(phantom, 17);
			assert_int_equal(y.n, 18);
			yaml_free(&y);
		}
		our_events(&m, &ours);
		assert_int_equal(ours.n, 1);
		expect_fn(&ours.e[0], 7, XFDR_FN_ENTER, 1, 1001);
		revs_free(&ours);
	}
}

/*
 * Buffers of one thread are ordered by their WallClockTime. llvm-xray 14 compares two blocks
 * with "seconds < seconds && micros < micros", which is not an order: {2 s, 100 us} and
 * {1 s, 900 us} compare as equivalent, and in that file order it keeps the later buffer first.
 * Our reader orders (seconds, microseconds) lexicographically.
 */
static void test_llvm_block_order_is_not_lexicographic(void **state)
{
	struct img m;
	struct revs ours;
	struct yaml y;

	(void)state;
	REQUIRE_LLVM_XRAY();
	img_init(&m, 128);
	img_buffer(&m, 7, 2, 100);
	m.len += wr_new_cpu_id(img_at(&m), 1, 5000);
	m.len += wr_function(img_at(&m), XFDR_FN_ENTER, 2, 1);
	img_close(&m);
	img_buffer(&m, 7, 1, 900);
	m.len += wr_new_cpu_id(img_at(&m), 1, 1000);
	m.len += wr_function(img_at(&m), XFDR_FN_ENTER, 1, 1);
	img_close(&m);

	convert_ok(write_file("block-order.xray", m.b, m.len), 0, &y);
	assert_int_equal(y.n, 2);
	assert_int_equal(y.r[0].tsc, 5001);
	assert_int_equal(y.r[1].tsc, 1001);
	yaml_free(&y);

	our_events(&m, &ours);
	assert_int_equal(ours.n, 2);
	expect_fn(&ours.e[0], 7, XFDR_FN_ENTER, 1, 1001);
	expect_fn(&ours.e[1], 7, XFDR_FN_ENTER, 2, 5001);
	revs_free(&ours);
}

/*
 * Not a departure: a preamble without NewCPUId (NewBuffer WallClockTime Function) breaks the
 * grammar, and llvm-xray 14 rejects it too ("Invalid transition from WallClockTime to
 * Function"), as does our reader.
 */
static void test_llvm_agrees_preamble_needs_new_cpu_id(void **state)
{
	struct img m;
	struct child_result r;
	struct xfdr_error err;
	const char *path;

	(void)state;
	REQUIRE_LLVM_XRAY();
	img_init(&m, 128);
	img_buffer(&m, 7, 10, 5);
	m.len += wr_function(img_at(&m), XFDR_FN_ENTER, 1, 1);
	m.len += wr_function(img_at(&m), XFDR_FN_EXIT, 1, 1);
	img_close(&m);
	path = write_file("no-cpu.xray", m.b, m.len);

	convert(path, 0, &r);
	assert_int_not_equal(r.status, 0);
	child_result_free(&r);
	fdr_dump_verify(path, &r);
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.err, "Invalid transition from WallClockTime to Function"));
	child_result_free(&r);

	our_error(&m, &err);
	assert_int_equal(err.offset, XFDR_FILE_HEADER_BYTES + 32);
	assert_non_null(strstr(err.text, "NewCPUId"));
}

/*
 * Not the format but llvm-xray's YAML output: a payload that is not valid UTF-8 is printed as
 * one U+FFFD, and everything after the first bad byte is lost (here 8 bytes ff fe 80 7f 22 27
 * 5c 0a become "\xef\xbf\xbd"). So YAML can carry only UTF-8 payloads faithfully; our reader
 * gives the bytes as they are.
 */
static void test_llvm_yaml_loses_non_utf8_payload(void **state)
{
	static const uint8_t payload[8] = {0xff, 0xfe, 0x80, 0x7f, 0x22, 0x27, 0x5c, 0x0a};
	struct img m;
	struct revs ours;
	struct yaml y;

	(void)state;
	REQUIRE_LLVM_XRAY();
	img_init(&m, 128);
	img_buffer(&m, 7, 10, 5);
	m.len += wr_new_cpu_id(img_at(&m), 3, 1000);
	m.len += wr_custom_event_marker(img_at(&m), sizeof(payload), 2000);
	memcpy(img_at(&m), payload, sizeof(payload));
	m.len += sizeof(payload);
	img_close(&m);

	convert_ok(write_file("non-utf8.xray", m.b, m.len), 0, &y);
	assert_int_equal(y.n, 1);
	assert_int_equal(y.r[0].kind, Y_CUSTOM);
	assert_int_equal(y.r[0].data_len, 3);
	assert_memory_equal(y.r[0].data, "\xef\xbf\xbd", 3);
	yaml_free(&y);

	our_events(&m, &ours);
	assert_int_equal(ours.n, 1);
	assert_int_equal(ours.e[0].ev.payload_bytes, 8);
	assert_memory_equal(ours.e[0].ev.payload, payload, 8);
	revs_free(&ours);
}

/* `llvm-xray account path` (plain, or -k): status, and each function's count and seconds. */
struct acct {
	int status;
	size_t n;
	struct {
		unsigned fid, count;
		double min, max, sum;
	} f[8];
};

static void account(const char *path, int keep_going, struct acct *a)
{
	char *argv[] = {(char *)child_llvm_xray(), "account", keep_going ? "-k" : (char *)path,
			keep_going ? (char *)path : NULL, NULL};
	struct child_result r;
	const char *line;
	double med, p90, p99;

	memset(a, 0, sizeof(*a));
	child_capture(argv, &r);
	a->status = r.status;
	for (line = r.out; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (a->n < 8 && sscanf(line, " %u %u [ %lf, %lf, %lf, %lf, %lf] %lf",
				       &a->f[a->n].fid, &a->f[a->n].count, &a->f[a->n].min, &med,
				       &p90, &p99, &a->f[a->n].max, &a->f[a->n].sum) == 8)
			a->n++;
	}
	if (a->status)
		print_message("llvm-xray account: %s", r.err);
	child_result_free(&r);
}

static void expect_acct(const struct acct *a, size_t i, unsigned fid, unsigned count, double min,
			double max, double sum)
{
	assert_true(i < a->n);
	assert_int_equal(a->f[i].fid, fid);
	assert_int_equal(a->f[i].count, count);
	assert_true(a->f[i].min > min - 1e-9 && a->f[i].min < min + 1e-9);
	assert_true(a->f[i].max > max - 1e-9 && a->f[i].max < max + 1e-9);
	assert_true(a->f[i].sum > sum - 1e-9 && a->f[i].sum < sum + 1e-9);
}

struct kept_calls {
	struct call v[4];
	size_t n;
};

static int keep_call(void *ctx, const struct call *c)
{
	struct kept_calls *k = ctx;

	assert_true(k->n < 4);
	k->v[k->n++] = *c;
	return 0;
}

/*
 * Not a departure: the stack context, xfdr's "XFDRSTAK" custom event right after the preamble
 * of a buffer that begins inside calls (layout in format.h). llvm-xray 14 takes it as any
 * custom event: `convert` prints it as a custom-event record in its place, `account` skips it.
 * Thread 7, buffers of 112 bytes, exactly full (no padding for llvm-xray to parse as records),
 * a 1000 Hz clock so that account's seconds are ticks / 1000:
 *   buffer 0 @32: tsc 900; Entry 1 910, Entry 2 920, Entry 3 930, Exit 3 940, Entry 3 950,
 *                 Exit 3 970, Entry 4 980, Exit 4 990
 *   buffer 1 @144: tsc 1000; @192 marker (32 bytes, tsc 1000) and XFDRSTAK version 1, depth 2,
 *                 ids 1 2; Exit 2 1005, Exit 1 1010
 * account: 1 once 0.1 s (910-1010), 2 once 0.085 s, 3 twice 0.01 + 0.02 s, 4 once 0.01 s.
 * Buffer 1 alone (buffer 0 reused, as in ring mode) still converts, but account fails: its
 * exits have no entry, as it does not read the context (with -k it accounts nothing). Our pairer
 * pairs them from the context: 2 over 1000-1005 inside 1 over 1000-1010.
 */
static void test_llvm_takes_stack_context(void **state)
{
	static const uint8_t stak[32] = {'X', 'F',    'D',    'R',    'S',    'T',    'A',
					 'K', L32(1), L32(2), L32(2), L32(0), L32(1), L32(2)};
	static struct img m, alone;
	struct callstack_stats s;
	struct kept_calls calls;
	struct xfdr_trace *t;
	struct xfdr_error err;
	struct revs ours;
	struct acct a;
	struct yaml y;
	const char *path;
	int sorted;

	(void)state;
	REQUIRE_LLVM_XRAY();
	memset(&m, 0, sizeof(m));
	PUT(&m, L16(1), L16(1), L32(3), L64(1000), L64(112), Z8);
	m.buf_bytes = 112;
	img_buffer(&m, 7, 10, 4);
	PUT(&m, 0x05, L16(3), L64(900), Z5);
	PUT(&m, L32(0u << 1 | 1u << 4), L32(10), L32(0u << 1 | 2u << 4), L32(10));
	PUT(&m, L32(0u << 1 | 3u << 4), L32(10), L32(1u << 1 | 3u << 4), L32(10));
	PUT(&m, L32(0u << 1 | 3u << 4), L32(10), L32(1u << 1 | 3u << 4), L32(20));
	PUT(&m, L32(0u << 1 | 4u << 4), L32(10), L32(1u << 1 | 4u << 4), L32(10));
	AT(&m, 144);
	img_buffer(&m, 7, 10, 5);
	PUT(&m, 0x05, L16(3), L64(1000), Z5);
	AT(&m, 192);
	PUT(&m, 0x0b, L32(32), L64(1000), Z3);
	img_put(&m, stak, sizeof(stak));
	PUT(&m, L32(1u << 1 | 2u << 4), L32(5), L32(1u << 1 | 1u << 4), L32(5));
	AT(&m, 256);
	path = write_file("stack-context.xray", m.b, m.len);

	our_events(&m, &ours);
	assert_int_equal(ours.n, 11);
	expect_fn(&ours.e[7], 7, XFDR_FN_EXIT, 4, 990);
	assert_int_equal(ours.e[8].ev.type, XFDR_EVENT_CUSTOM);
	assert_int_equal(ours.e[8].ev.tsc, 1000);
	assert_int_equal(ours.e[8].ev.payload_bytes, 32);
	assert_memory_equal(ours.e[8].ev.payload, stak, 32);
	expect_fn(&ours.e[10], 7, XFDR_FN_EXIT, 1, 1010);
	for (sorted = 0; sorted < 2; sorted++) {
		convert_ok(path, sorted, &y);
		assert_int_equal(y.n, 11);
		assert_int_equal(y.r[8].kind, Y_CUSTOM);
		assert_int_equal(y.r[8].tsc, 1000);
		assert_int_equal(y.r[8].data_len, 32);
		assert_memory_equal(y.r[8].data, stak, 32);
		assert_int_equal(y.r[9].kind, Y_EXIT);
		assert_int_equal(y.r[9].tsc, 1005);
		compare_per_thread(&y, &ours, sorted);
		yaml_free(&y);
	}
	revs_free(&ours);

	account(path, 0, &a);
	assert_int_equal(a.status, 0);
	assert_int_equal(a.n, 4);
	expect_acct(&a, 0, 1, 1, 0.1, 0.1, 0.1);
	expect_acct(&a, 1, 2, 1, 0.085, 0.085, 0.085);
	expect_acct(&a, 2, 3, 2, 0.01, 0.02, 0.03);
	expect_acct(&a, 3, 4, 1, 0.01, 0.01, 0.01);

	/* Buffer 1 alone. */
	memset(&alone, 0, sizeof(alone));
	img_put(&alone, m.b, 32);
	img_put(&alone, m.b + 144, 112);
	path = write_file("stack-context-alone.xray", alone.b, alone.len);
	convert_ok(path, 0, &y);
	assert_int_equal(y.n, 3);
	assert_int_equal(y.r[0].kind, Y_CUSTOM);
	assert_int_equal(y.r[2].tsc, 1010);
	yaml_free(&y);
	account(path, 0, &a);
	assert_int_not_equal(a.status, 0);
	account(path, 1, &a);
	assert_int_equal(a.status, 0);
	assert_int_equal(a.n, 0);

	memset(&calls, 0, sizeof(calls));
	assert_int_equal(xfdr_trace_open_memory(alone.b, alone.len, "alone", &t, &err), 0);
	assert_int_equal(callstack_pair_trace(t, keep_call, &calls, &s, &err), 0);
	xfdr_trace_close(t);
	assert_int_equal(calls.n, 2);
	assert_int_equal(calls.v[0].function_id, 2);
	assert_int_equal(calls.v[0].depth, 1);
	assert_int_equal(calls.v[0].flags, CALL_EXIT | CALL_FROM_CONTEXT);
	assert_int_equal(calls.v[0].total_tsc, 5);
	assert_int_equal(calls.v[1].function_id, 1);
	assert_int_equal(calls.v[1].depth, 0);
	assert_int_equal(calls.v[1].total_tsc, 10);
	assert_int_equal(s.no_entry, 0);
	assert_int_equal(s.contexts_seeded, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_interop_random),
	    cmocka_unit_test(test_llvm_unaligned_custom_payload),
	    cmocka_unit_test(test_llvm_new_buffer_reads_4_byte_tid),
	    cmocka_unit_test(test_llvm_rejects_empty_custom_event),
	    cmocka_unit_test(test_llvm_accepts_call_argument_after_plain_record),
	    cmocka_unit_test(test_llvm_accepts_later_version_records),
	    cmocka_unit_test(test_llvm_parses_padding_after_end_of_buffer),
	    cmocka_unit_test(test_llvm_block_order_is_not_lexicographic),
	    cmocka_unit_test(test_llvm_agrees_preamble_needs_new_cpu_id),
	    cmocka_unit_test(test_llvm_yaml_loses_non_utf8_payload),
	    cmocka_unit_test(test_llvm_takes_stack_context),
	};

	return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
