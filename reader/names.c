/*
 * reader/names.c - function names from the `.map` sidecar the runtime writes beside each
 * trace. The sidecar format is specified in doc/map-format.md.
 *
 * Only the lines `function<TAB>ID<TAB>NAME<TAB>...`, `since_tsc<TAB>TSC` (the start of a
 * snapshot's window), `crash<TAB>...` and `frame<TAB>...` (a crash and its backtrace) are read;
 * every other line is skipped, so keys a later runtime adds do not break this reader. A NAME
 * in angle brackets (`<unknown>`, `<unassigned>`) means the runtime could not name the id:
 * such ids stay unnamed, and a caller shows their number as it would without a map. The table
 * is an array sorted by id and searched by bisection: memory grows with the named functions
 * only.
 *
 * Crash lines: the last `crash` line is kept, with the `frame` lines that follow it (a new
 * `crash` line drops the frames of the one before). Frames are an array sorted by index once
 * loaded; their few lookups by pc scan it. Every field a `crash` or `frame` line defines must be
 * there and well formed (fields after them are skipped, as later keys are); a frame index
 * listed twice for one crash makes the sidecar invalid, as an id named twice does.
 *
 * Thread lines (`thread<TAB>TID<TAB>THREAD_ID<TAB>NAME<TAB>counts...`) name the threads of the
 * trace by the 16-bit id of their NewBuffer records. They only label output, so they are read
 * leniently: a line whose tid or thread id is not a decimal number, or that has no name field,
 * is skipped like a line of an unknown key (it never makes the sidecar invalid, unlike a bad
 * `function` line, which would make numbers wrong). Lines with thread id 0 are skipped too: the
 * runtime writes 0 for threads that only dropped events and had no buffer, so such a line names
 * no buffer's thread. An empty name or `<unknown>` (what `xfdr core` writes when it cannot tell)
 * is no name. When two lines give one thread id, the last wins: the live map of backing=file
 * gets a thread's line again when the thread renames itself. They are kept in an array sorted
 * by thread id and searched by bisection.
 *
 * The `tsc_hz` line is read leniently too (the first one; not a number: no rate), for `xfdr
 * recover`, whose trace may not carry the rate in its header; so are the pool's lines (`mode`,
 * `buffer_size`, `buffer_max`, `buffers_written`, `overwritten`, `dropped`), for `xfdr record`'s
 * summary: the first of each key counts, a value that is not a number is as no line.
 *
 * Numbers are decimal digits only: no sign, no space, no leading zero (but "0" itself), at most
 * the field's maximum; strtoull() would read "+2", " 2", "0002" and "-18446744073709551614" all
 * as 2, so it is not used (parse_dec() is the one place).
 *
 * Lenient reading (xfdr_names_read_lenient(), for `xfdr recover`, which carries a dead
 * process's sidecar over to the trace it rebuilds): a line that would make the sidecar invalid
 * is left out and reported, and the rest is loaded as the sidecar without that line would be.
 * A line that fails on its own never changed the state; of an id named twice (or a frame index
 * listed twice for one crash) the first line is kept, the later ones left out. So the lines
 * kept make a sidecar xfdr_names_load() accepts, with the same names.
 *
 * Every message starts with the path (then the line, where there is one), so that a command
 * can print it as it is.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xfdr/reader.h"

struct rd_name {
	uint32_t id;
	char *name; /* NULL: left out (lenient), a later line naming an id again */
	size_t line;
	const char *module; /* the `function` line's module (one of xfdr_names.modules); NULL: - */
	uint64_t vaddr;	    /* its module_vaddr */
};

struct rd_frame {
	uint32_t index;
	size_t seq;  /* order in the file: of two frames with one index, the first is named first */
	size_t line; /* 0: left out (lenient), a later line listing an index again */
	uint64_t pc;
	char *symbol; /* NULL: <unknown> */
	char *module; /* NULL: - */
	int have_vaddr;
	uint64_t vaddr;
};

struct rd_thread {
	uint32_t thread_id;
	uint32_t tid;
	size_t seq; /* line order: of two lines for one thread id, the last wins */
	char *name;
};

/* The pool's lines read as numbers; their order is that of the fields in xfdr_map_pool. */
static const char *const pool_keys[] = {"buffer_size",	  "buffer_max",		"buffers_written",
					"overwritten",	  "functions_left_out", "filtered_calls",
					"max_depth_calls"};
#define POOL_KEYS (sizeof(pool_keys) / sizeof(pool_keys[0]))
static const char *const drop_causes[XFDR_MAP_DROP_CAUSES] = {"no_buffer", "reentrant", "too_large",
							      "no_thread_slot", "total"};

struct xfdr_names {
	struct rd_name *v; /* sorted by id once loaded */
	size_t count, cap;
	int have_since;
	uint64_t since_tsc;
	int seen_tsc_hz; /* the first tsc_hz line was read (a later one is not looked at) */
	uint64_t tsc_hz; /* its value, 0 when it is not a number */
	int seen_tsc_hz_method;
	char tsc_hz_method[64]; /* the first tsc_hz_method line's value, up to a TAB */
	int seen_pid;		/* the first pid line was read */
	uint32_t pid;		/* its value, 0 when it is not a pid */
	int seen_ppid;		/* the first ppid line was read */
	uint32_t ppid;		/* its value, 0 when it is not a pid */
	char *program;		/* the first program line's value, NULL: none */
	int have_crash;
	struct xfdr_map_crash crash; /* crash.signal_name is crash_signal_name */
	char *crash_signal_name;
	struct rd_frame *frames; /* of the last crash; sorted by index once loaded */
	size_t frame_count, frame_cap;
	struct rd_thread *threads; /* sorted by thread id, one per id, once loaded */
	size_t thread_count, thread_cap;
	struct xfdr_map_pool pool; /* pool.mode is mode */
	char *mode;
	int seen_pool_key[POOL_KEYS]; /* of the numbers: the first line of each key counts */
	int seen_drop[XFDR_MAP_DROP_CAUSES];
	/* The modules of the function lines, each once (a program has a handful, its functions
	 * many). */
	char **modules;
	size_t module_count, module_cap;
};

static int fail(struct xfdr_error *err, int rc, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(struct xfdr_error *err, int rc, uint64_t offset, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return rc;
	err->offset = offset;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	return rc;
}

/* Lines left out by a lenient read, with their messages; reported in line order at the end. */
struct rd_drop {
	size_t line;
	char *text;
};

struct rd_drops {
	struct rd_drop *v;
	size_t count, cap;
};

static int drop_add(struct rd_drops *d, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Returns 0, or -1 when out of memory. */
static int drop_add(struct rd_drops *d, size_t line, const char *fmt, ...)
{
	va_list ap;
	char *text;
	int rc;

	if (d->count == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;
		struct rd_drop *v = realloc(d->v, cap * sizeof(*v));

		if (!v)
			return -1;
		d->v = v;
		d->cap = cap;
	}
	va_start(ap, fmt);
	rc = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return -1;
	d->v[d->count].line = line;
	d->v[d->count++].text = text;
	return 0;
}

static void drops_free(struct rd_drops *d)
{
	size_t i;

	for (i = 0; i < d->count; i++)
		free(d->v[i].text);
	free(d->v);
}

static int by_line(const void *a, const void *b)
{
	const struct rd_drop *x = a, *y = b;

	return x->line < y->line ? -1 : x->line > y->line;
}

static int by_id(const void *a, const void *b)
{
	const struct rd_name *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Of the lines naming one id, the first comes first. */
static int by_id_then_line(const void *a, const void *b)
{
	const struct rd_name *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static int add(struct xfdr_names *n, uint32_t id, const char *name, size_t len, size_t line)
{
	struct rd_name *v;

	if (n->count == n->cap) {
		size_t cap = n->cap ? n->cap * 2 : 64;

		v = realloc(n->v, cap * sizeof(*v));
		if (!v)
			return -1;
		n->v = v;
		n->cap = cap;
	}
	n->v[n->count].id = id;
	n->v[n->count].line = line;
	n->v[n->count].module = NULL;
	n->v[n->count].vaddr = 0;
	n->v[n->count].name = strndup(name, len);
	if (!n->v[n->count].name)
		return -1;
	n->count++;
	return 0;
}

/* ---- crash and frame lines ---------------------------------------------------------------- */

/* One TAB-separated field: [p, p + len). */
struct field {
	const char *p;
	size_t len;
};

/*
 * Split what follows the key into at most max fields; returns how many there are (at most max:
 * the rest of the line, later fields a reader does not know, is not looked at).
 */
static size_t split_fields(const char *rest, struct field *f, size_t max)
{
	size_t n = 0;
	const char *tab;

	while (n < max) {
		tab = strchr(rest, '\t');
		f[n].p = rest;
		f[n].len = tab ? (size_t)(tab - rest) : strlen(rest);
		n++;
		if (!tab)
			break;
		rest = tab + 1;
	}
	return n;
}

/*
 * A decimal number of 1 to 20 digits, at most max: digits only, and no leading zero but in "0".
 * Every number of the sidecar is read here.
 */
static int parse_dec(const struct field *f, uint64_t max, uint64_t *v)
{
	uint64_t x = 0;
	size_t i;

	if (!f->len || f->len > 20 || (f->len > 1 && f->p[0] == '0'))
		return -1;
	for (i = 0; i < f->len; i++) {
		unsigned d = (unsigned)(f->p[i] - '0');

		if (d > 9 || x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	if (x > max)
		return -1;
	*v = x;
	return 0;
}

/* A decimal int32, with an optional '-'. */
static int parse_i32(const struct field *f, int32_t *v)
{
	struct field digits = *f;
	uint64_t x;
	int neg = f->len && f->p[0] == '-';

	if (neg) {
		digits.p++;
		digits.len--;
	}
	if (parse_dec(&digits, neg ? (uint64_t)INT32_MAX + 1 : (uint64_t)INT32_MAX, &x))
		return -1;
	*v = neg ? (int32_t)(-(int64_t)x) : (int32_t)x;
	return 0;
}

/* "0x" and 1 to 16 hex digits. */
static int parse_hex(const struct field *f, uint64_t *v)
{
	uint64_t x = 0;
	size_t i;

	if (f->len < 3 || f->len > 18 || f->p[0] != '0' || f->p[1] != 'x')
		return -1;
	for (i = 2; i < f->len; i++) {
		char c = f->p[i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return -1;
		x = x << 4 | d;
	}
	*v = x;
	return 0;
}

/*
 * The line parsers return 0 (the line is read, or skipped as a lenient line that names nothing),
 * -1 with what was wrong in *why (the state is as before the line), or -2 when out of memory.
 */

/* The module path of f, kept once in n->modules; NULL when out of memory. */
static const char *module_interned(struct xfdr_names *n, const struct field *f)
{
	size_t i = n->module_count;

	while (i--) /* the latest first: a module's functions are listed together */
		if (strlen(n->modules[i]) == f->len && !memcmp(n->modules[i], f->p, f->len))
			return n->modules[i];
	if (n->module_count == n->module_cap) {
		size_t cap = n->module_cap ? n->module_cap * 2 : 8;
		char **v = realloc(n->modules, cap * sizeof(*v));

		if (!v)
			return NULL;
		n->modules = v;
		n->module_cap = cap;
	}
	n->modules[n->module_count] = strndup(f->p, f->len);
	return n->modules[n->module_count] ? n->modules[n->module_count++] : NULL;
}

/*
 * `function<TAB>ID<TAB>NAME<TAB>ADDRESS<TAB>MODULE<TAB>MODULE_VADDR`: a NAME in angle brackets
 * leaves the id unnamed. The site (MODULE, MODULE_VADDR) is read leniently, as `tsc_hz`: one that
 * is missing, `-` or malformed is as none, and never makes the line invalid.
 */
static int parse_function_line(struct xfdr_names *n, const char *line, size_t lineno,
			       const char **why)
{
	struct field f[5];
	size_t k = split_fields(line + sizeof("function"), f, 5);
	uint64_t id, vaddr;

	if (k < 2 || parse_dec(&f[0], XFDR_FUNCTION_ID_MAX, &id)) {
		*why = "expected a function id (0..268435455) after 'function<TAB>'";
		return -1;
	}
	if (!f[1].len) {
		*why = "expected a function name after the id";
		return -1;
	}
	if (f[1].p[0] == '<')
		return 0;
	if (add(n, (uint32_t)id, f[1].p, f[1].len, lineno)) {
		*why = "out of memory";
		return -2;
	}
	if (k == 5 && f[3].len && !(f[3].len == 1 && f[3].p[0] == '-') &&
	    !parse_hex(&f[4], &vaddr)) {
		n->v[n->count - 1].module = module_interned(n, &f[3]);
		n->v[n->count - 1].vaddr = vaddr;
		if (!n->v[n->count - 1].module) {
			*why = "out of memory";
			return -2;
		}
	}
	return 0;
}

/* Parse a `since_tsc` line: a decimal u64, then the end of the line or a TAB (more fields). */
static int parse_since_line(struct xfdr_names *n, const char *line, const char **why)
{
	struct field f;
	uint64_t v;

	if (n->have_since) {
		*why = "expected at most one since_tsc line";
		return -1;
	}
	split_fields(line + sizeof("since_tsc"), &f, 1);
	if (parse_dec(&f, UINT64_MAX, &v)) {
		*why = "expected a decimal TSC (0..18446744073709551615) after 'since_tsc<TAB>'";
		return -1;
	}
	n->have_since = 1;
	n->since_tsc = v;
	return 0;
}

/* `tsc_hz<TAB>HZ`, leniently: the first line only, the whole rest of it a number, else 0. */
static void parse_tsc_hz_line(struct xfdr_names *n, const char *line)
{
	struct field f = {line + sizeof("tsc_hz"), strlen(line + sizeof("tsc_hz"))};
	uint64_t v;

	if (n->seen_tsc_hz)
		return;
	n->seen_tsc_hz = 1;
	n->tsc_hz = parse_dec(&f, UINT64_MAX, &v) ? 0 : v;
}

/*
 * `pid<TAB>PID` or `ppid<TAB>PID` (key: the bytes of the key and its TAB), leniently as tsc_hz:
 * a pid is 1..2^31-1. The first line only.
 */
static void parse_pid_line(const char *line, size_t key, int *seen, uint32_t *pid)
{
	struct field f = {line + key, strlen(line + key)};
	uint64_t v;

	if (*seen)
		return;
	*seen = 1;
	*pid = parse_dec(&f, INT32_MAX, &v) ? 0 : (uint32_t)v;
}

/* `program<TAB>PATH`: the first line only, the whole rest of it. Returns 0 or -2 (no memory). */
static int parse_program_line(struct xfdr_names *n, const char *line)
{
	if (n->program)
		return 0;
	n->program = strdup(line + sizeof("program"));
	return n->program ? 0 : -2;
}

/* `tsc_hz_method<TAB>WORD`: the first line only, its value up to a TAB (cut to 63 bytes). */
static void parse_tsc_hz_method_line(struct xfdr_names *n, const char *line)
{
	const char *v = line + sizeof("tsc_hz_method");

	if (n->seen_tsc_hz_method)
		return;
	n->seen_tsc_hz_method = 1;
	snprintf(n->tsc_hz_method, sizeof(n->tsc_hz_method), "%.*s", (int)strcspn(v, "\t\n"), v);
}

/*
 * The pool's lines, leniently as tsc_hz: `mode<TAB>WORD`, `KEY<TAB>N` for the pool_keys and
 * `dropped<TAB>CAUSE<TAB>N`. The first line of each key (and cause) counts; one whose value is
 * not what the key holds is as none. Returns 0 or -2 (out of memory).
 */
static int parse_pool_line(struct xfdr_names *n, const char *line)
{
	uint64_t *value[POOL_KEYS] = {&n->pool.buffer_size,	   &n->pool.buffer_max,
				      &n->pool.buffers_written,	   &n->pool.overwritten,
				      &n->pool.functions_left_out, &n->pool.filtered_calls,
				      &n->pool.max_depth_calls};
	int *have[POOL_KEYS] = {&n->pool.have_buffer_size,	  &n->pool.have_buffer_max,
				&n->pool.have_buffers_written,	  &n->pool.have_overwritten,
				&n->pool.have_functions_left_out, &n->pool.have_filtered_calls,
				&n->pool.have_max_depth_calls};
	const char *tab = strchr(line, '\t');
	size_t key = (size_t)(tab - line), i;
	struct field f[2];
	uint64_t v;

	if (key == 4 && !strncmp(line, "mode", 4)) {
		if (n->mode || split_fields(tab + 1, f, 1) < 1 || !f[0].len)
			return 0;
		n->mode = strndup(f[0].p, f[0].len);
		return n->mode ? 0 : -2;
	}
	if (key == 7 && !strncmp(line, "dropped", 7)) {
		if (split_fields(tab + 1, f, 2) < 2)
			return 0;
		for (i = 0; i < XFDR_MAP_DROP_CAUSES; i++)
			if (f[0].len == strlen(drop_causes[i]) &&
			    !strncmp(f[0].p, drop_causes[i], f[0].len))
				break;
		if (i == XFDR_MAP_DROP_CAUSES || n->seen_drop[i])
			return 0;
		n->seen_drop[i] = 1;
		f[1].len = strlen(f[1].p); /* the whole rest */
		if (!parse_dec(&f[1], UINT64_MAX, &v)) {
			n->pool.have_drops = 1;
			n->pool.dropped[i] = v;
		}
		return 0;
	}
	for (i = 0; i < POOL_KEYS; i++) {
		struct field whole = {tab + 1, strlen(tab + 1)};

		if (key != strlen(pool_keys[i]) || strncmp(line, pool_keys[i], key) ||
		    n->seen_pool_key[i])
			continue;
		n->seen_pool_key[i] = 1;
		if (!parse_dec(&whole, UINT64_MAX, &v)) {
			*have[i] = 1;
			*value[i] = v;
		}
	}
	return 0;
}

static void free_frames(struct xfdr_names *n)
{
	size_t i;

	for (i = 0; i < n->frame_count; i++) {
		free(n->frames[i].symbol);
		free(n->frames[i].module);
	}
	n->frame_count = 0;
}

/* `crash<TAB>SIGNAL<TAB>SIGNAME<TAB>SI_CODE<TAB>0xADDR<TAB>TID`; replaces an earlier crash. */
static int parse_crash_line(struct xfdr_names *n, const char *line, const char **why)
{
	struct field f[5];
	size_t k = split_fields(line + sizeof("crash"), f, 5);
	uint64_t signal, tid, addr;
	int32_t code;
	char *name;

	if (parse_dec(&f[0], UINT32_MAX, &signal)) {
		*why = "expected a signal number (decimal) after 'crash<TAB>'";
		return -1;
	}
	if (k < 2 || !f[1].len) {
		*why = "expected a signal name after the signal number";
		return -1;
	}
	if (k < 3 || parse_i32(&f[2], &code)) {
		*why = "expected an si_code (decimal, 32 bits) after the signal name";
		return -1;
	}
	if (k < 4 || parse_hex(&f[3], &addr)) {
		*why = "expected a fault address (0x hex, 64 bits) after the si_code";
		return -1;
	}
	if (k < 5 || parse_dec(&f[4], UINT32_MAX, &tid)) {
		*why = "expected a tid (decimal) after the fault address";
		return -1;
	}
	name = strndup(f[1].p, f[1].len);
	if (!name) {
		*why = "out of memory";
		return -2;
	}
	free(n->crash_signal_name);
	free_frames(n);
	n->crash_signal_name = name;
	n->crash.signal = (uint32_t)signal;
	n->crash.signal_name = name;
	n->crash.code = code;
	n->crash.fault_addr = addr;
	n->crash.tid = (uint32_t)tid;
	n->have_crash = 1;
	return 0;
}

/* `frame<TAB>INDEX<TAB>0xPC<TAB>SYMBOL|<unknown><TAB>MODULE|-<TAB>0xVADDR|-`. */
static int parse_frame_line(struct xfdr_names *n, const char *line, size_t lineno, const char **why)
{
	struct field f[5];
	size_t k = split_fields(line + sizeof("frame"), f, 5);
	struct rd_frame fr = {0};
	uint64_t index;

	if (parse_dec(&f[0], UINT32_MAX, &index)) {
		*why = "expected a frame index (decimal) after 'frame<TAB>'";
		return -1;
	}
	if (k < 2 || parse_hex(&f[1], &fr.pc)) {
		*why = "expected a pc (0x hex, 64 bits) after the frame index";
		return -1;
	}
	if (k < 3 || !f[2].len) {
		*why = "expected a symbol or <unknown> after the pc";
		return -1;
	}
	if (k < 4 || !f[3].len) {
		*why = "expected a module path or - after the symbol";
		return -1;
	}
	if (k < 5 || (!(f[4].len == 1 && f[4].p[0] == '-') && parse_hex(&f[4], &fr.vaddr))) {
		*why = "expected a module_vaddr (0x hex, 64 bits) or - after the module";
		return -1;
	}
	fr.index = (uint32_t)index;
	fr.seq = n->frame_count;
	fr.line = lineno;
	fr.have_vaddr = f[4].p[0] != '-';
	if (n->frame_count == n->frame_cap) {
		size_t cap = n->frame_cap ? n->frame_cap * 2 : 16;
		struct rd_frame *v = realloc(n->frames, cap * sizeof(*v));

		if (!v)
			goto no_memory;
		n->frames = v;
		n->frame_cap = cap;
	}
	if (f[2].p[0] != '<' && !(fr.symbol = strndup(f[2].p, f[2].len)))
		goto no_memory;
	if (!(f[3].len == 1 && f[3].p[0] == '-') && !(fr.module = strndup(f[3].p, f[3].len)))
		goto no_memory;
	n->frames[n->frame_count++] = fr;
	return 0;
no_memory:
	free(fr.symbol);
	*why = "out of memory";
	return -2;
}

static int by_index(const void *a, const void *b)
{
	const struct rd_frame *x = a, *y = b;

	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* bsearch() by index alone: the indexes are unique once loaded. */
static int index_of(const void *a, const void *b)
{
	const struct rd_frame *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

static void frame_out(const struct rd_frame *f, struct xfdr_map_frame *out)
{
	out->index = f->index;
	out->pc = f->pc;
	out->symbol = f->symbol;
	out->module = f->module;
	out->have_module_vaddr = f->have_vaddr;
	out->module_vaddr = f->have_vaddr ? f->vaddr : 0;
}

/* ---- thread lines ------------------------------------------------------------------------- */

/*
 * `thread<TAB>TID<TAB>THREAD_ID<TAB>NAME<TAB>...`: kept when it names a buffer's thread (see the
 * top of the file for what is skipped). Returns 0, or -2 with *why set when out of memory.
 */
static int parse_thread_line(struct xfdr_names *n, const char *line, const char **why)
{
	struct field f[3];
	size_t k = split_fields(line + sizeof("thread"), f, 3);
	struct rd_thread th;
	uint64_t tid, id;

	if (k < 3 || parse_dec(&f[0], UINT32_MAX, &tid) || parse_dec(&f[1], UINT32_MAX, &id))
		return 0;
	if (!id || !f[2].len || (f[2].len == 9 && !memcmp(f[2].p, "<unknown>", 9)))
		return 0;
	if (n->thread_count == n->thread_cap) {
		size_t cap = n->thread_cap ? n->thread_cap * 2 : 16;
		struct rd_thread *v = realloc(n->threads, cap * sizeof(*v));

		if (!v)
			goto no_memory;
		n->threads = v;
		n->thread_cap = cap;
	}
	th.thread_id = (uint32_t)id;
	th.tid = (uint32_t)tid;
	th.seq = n->thread_count;
	th.name = strndup(f[2].p, f[2].len);
	if (!th.name)
		goto no_memory;
	n->threads[n->thread_count++] = th;
	return 0;
no_memory:
	*why = "out of memory";
	return -2;
}

static int by_thread_then_seq(const void *a, const void *b)
{
	const struct rd_thread *x = a, *y = b;

	if (x->thread_id != y->thread_id)
		return x->thread_id < y->thread_id ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* bsearch() by thread id alone: unique once loaded. */
static int by_thread_id(const void *a, const void *b)
{
	const struct rd_thread *x = a, *y = b;

	return x->thread_id < y->thread_id ? -1 : x->thread_id > y->thread_id;
}

/* Sort by thread id and keep the last line of each id. */
static void threads_finish(struct xfdr_names *n)
{
	size_t i, kept = 0;

	if (!n->thread_count)
		return;
	qsort(n->threads, n->thread_count, sizeof(*n->threads), by_thread_then_seq);
	for (i = 0; i < n->thread_count; i++) {
		if (kept && n->threads[kept - 1].thread_id == n->threads[i].thread_id) {
			free(n->threads[kept - 1].name);
			n->threads[kept - 1] = n->threads[i];
			continue;
		}
		n->threads[kept++] = n->threads[i];
	}
	n->thread_count = kept;
}

/* ---- loading ------------------------------------------------------------------------------ */

/*
 * Ids named twice: strict (d NULL), the sidecar is invalid; lenient, the first line naming an
 * id is kept and each later one left out. Sorts n->v by id. Returns 0, or -2 with err filled.
 */
static int unique_ids(struct xfdr_names *n, const char *path, struct rd_drops *d,
		      struct xfdr_error *err)
{
	size_t i, first = 0, kept = 0;

	/* A map that names nothing leaves n->v NULL, which qsort() must not be given. */
	if (!n->count)
		return 0;
	qsort(n->v, n->count, sizeof(*n->v), by_id_then_line);
	for (i = 1; i < n->count; i++) {
		if (n->v[i].id != n->v[first].id) {
			first = i;
			continue;
		}
		if (!d)
			return fail(err, -2, 0, "%s: function id %u is named twice ('%s' and '%s')",
				    path, n->v[i].id, n->v[first].name, n->v[i].name);
		if (drop_add(d, n->v[i].line,
			     "%s: line %zu: function id %u is named twice ('%s' at line %zu, '%s' "
			     "here)",
			     path, n->v[i].line, n->v[i].id, n->v[first].name, n->v[first].line,
			     n->v[i].name))
			return fail(err, -2, 0, "%s: out of memory", path);
		free(n->v[i].name);
		n->v[i].name = NULL;
	}
	for (i = 0; i < n->count; i++) {
		if (n->v[i].name)
			n->v[kept++] = n->v[i];
	}
	n->count = kept;
	return 0;
}

/* Frame indexes listed twice for the crash, as unique_ids() does ids. Sorts the frames. */
static int unique_frames(struct xfdr_names *n, const char *path, struct rd_drops *d,
			 struct xfdr_error *err)
{
	struct rd_frame *f = n->frames;
	size_t i, first = 0, kept = 0;

	if (!n->frame_count)
		return 0;
	qsort(f, n->frame_count, sizeof(*f), by_index);
	for (i = 1; i < n->frame_count; i++) {
		if (f[i].index != f[first].index) {
			first = i;
			continue;
		}
		if (!d)
			return fail(
			    err, -2, 0,
			    "%s: frame %u is listed twice for one crash (pc 0x%llx and 0x%llx)",
			    path, f[i].index, (unsigned long long)f[first].pc,
			    (unsigned long long)f[i].pc);
		if (drop_add(d, f[i].line,
			     "%s: line %zu: frame %u is listed twice for one crash (pc 0x%llx at "
			     "line %zu, 0x%llx here)",
			     path, f[i].line, f[i].index, (unsigned long long)f[first].pc,
			     f[first].line, (unsigned long long)f[i].pc))
			return fail(err, -2, 0, "%s: out of memory", path);
		f[i].line = 0;
	}
	for (i = 0; i < n->frame_count; i++) {
		if (f[i].line) {
			f[kept++] = f[i];
		} else {
			free(f[i].symbol);
			free(f[i].module);
		}
	}
	n->frame_count = kept;
	return 0;
}

/*
 * Read the sidecar f (named path in messages) from where it is to its end. d NULL: strict, the
 * first bad line makes it invalid; else each bad line is left out and added to d.
 */
static int names_read(FILE *f, const char *path, struct rd_drops *d, struct xfdr_names **out,
		      struct xfdr_error *err)
{
	struct xfdr_names *n;
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	uint64_t line_offset, next_offset = 0;
	ssize_t len;
	int rc = 0;

	*out = NULL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return fail(err, -2, 0, "%s: out of memory", path);
	while ((len = getline(&line, &cap, f)) >= 0) {
		const char *why;

		lineno++;
		line_offset = next_offset;
		next_offset += (uint64_t)len;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (!strncmp(line, "function\t", sizeof("function")))
			rc = parse_function_line(n, line, lineno, &why);
		else if (!strncmp(line, "since_tsc\t", sizeof("since_tsc")))
			rc = parse_since_line(n, line, &why);
		else if (!strncmp(line, "crash\t", sizeof("crash")))
			rc = parse_crash_line(n, line, &why);
		else if (!strncmp(line, "frame\t", sizeof("frame")))
			rc = parse_frame_line(n, line, lineno, &why);
		else if (!strncmp(line, "thread\t", sizeof("thread")))
			rc = parse_thread_line(n, line, &why);
		else if (!strncmp(line, "tsc_hz\t", sizeof("tsc_hz")))
			parse_tsc_hz_line(n, line);
		else if (!strncmp(line, "tsc_hz_method\t", sizeof("tsc_hz_method")))
			parse_tsc_hz_method_line(n, line);
		else if (!strncmp(line, "pid\t", sizeof("pid")))
			parse_pid_line(line, sizeof("pid"), &n->seen_pid, &n->pid);
		else if (!strncmp(line, "ppid\t", sizeof("ppid")))
			parse_pid_line(line, sizeof("ppid"), &n->seen_ppid, &n->ppid);
		else if (!strncmp(line, "program\t", sizeof("program")))
			rc = parse_program_line(n, line);
		else if (strchr(line, '\t'))
			rc = parse_pool_line(n, line);
		if (!rc)
			continue;
		if (rc == -2) {
			rc = fail(err, -2, 0, "%s: out of memory", path);
			break;
		}
		if (!d) {
			rc = fail(err, -2, line_offset, "%s: line %zu: %s, found '%.60s'", path,
				  lineno, why, line);
			break;
		}
		rc = 0;
		if (drop_add(d, lineno, "%s: line %zu: %s, found '%.60s'", path, lineno, why,
			     line)) {
			rc = fail(err, -2, 0, "%s: out of memory", path);
			break;
		}
	}
	/* errno is still getline()'s: nothing has run since it failed. */
	if (!rc && ferror(f))
		rc = fail(err, -2, 0, "%s: %s", path, strerror(errno));
	free(line);
	if (!rc)
		rc = unique_ids(n, path, d, err);
	if (!rc) {
		threads_finish(n);
		rc = unique_frames(n, path, d, err);
	}
	if (rc) {
		xfdr_names_free(n);
		return rc;
	}
	*out = n;
	return 0;
}

int xfdr_names_load(const char *path, struct xfdr_names **out, struct xfdr_error *err)
{
	FILE *f;
	int rc;

	*out = NULL;
	f = fopen(path, "r");
	if (!f)
		return fail(err, -1, 0, "%s: %s", path, strerror(errno));
	rc = names_read(f, path, NULL, out, err);
	fclose(f);
	return rc;
}

int xfdr_names_read_lenient(FILE *f, const char *name,
			    void (*left_out)(void *ctx, uint64_t line, const char *text), void *ctx,
			    struct xfdr_names **out, struct xfdr_error *err)
{
	struct rd_drops d = {NULL, 0, 0};
	size_t i;
	int rc;

	rc = names_read(f, name, &d, out, err);
	if (!rc && d.count) {
		qsort(d.v, d.count, sizeof(*d.v), by_line);
		for (i = 0; i < d.count; i++)
			left_out(ctx, d.v[i].line, d.v[i].text);
	}
	drops_free(&d);
	return rc;
}

int xfdr_names_tsc_hz(const struct xfdr_names *n, uint64_t *hz)
{
	if (!n || !n->seen_tsc_hz || !n->tsc_hz)
		return 0;
	*hz = n->tsc_hz;
	return 1;
}

const char *xfdr_names_tsc_hz_method(const struct xfdr_names *n)
{
	return n && n->seen_tsc_hz_method ? n->tsc_hz_method : NULL;
}

uint32_t xfdr_names_pid(const struct xfdr_names *n, const char **program)
{
	if (program)
		*program = n ? n->program : NULL;
	return n ? n->pid : 0;
}

uint32_t xfdr_names_ppid(const struct xfdr_names *n)
{
	return n ? n->ppid : 0;
}

void xfdr_names_pool(const struct xfdr_names *n, struct xfdr_map_pool *out)
{
	memset(out, 0, sizeof(*out));
	if (!n)
		return;
	*out = n->pool;
	out->mode = n->mode;
}

/* The loaded entry naming id, or NULL (also when n is NULL). */
static const struct rd_name *find_name(const struct xfdr_names *n, uint32_t id)
{
	struct rd_name key = {.id = id};

	if (!n || !n->count)
		return NULL;
	return bsearch(&key, n->v, n->count, sizeof(*n->v), by_id);
}

const char *xfdr_names_get(const struct xfdr_names *n, uint32_t id)
{
	const struct rd_name *hit = find_name(n, id);

	return hit ? hit->name : NULL;
}

int xfdr_names_function_site(const struct xfdr_names *n, uint32_t id, const char **module,
			     uint64_t *vaddr)
{
	const struct rd_name *hit = find_name(n, id);

	if (!hit || !hit->module)
		return 0;
	*module = hit->module;
	*vaddr = hit->vaddr;
	return 1;
}

int xfdr_names_since_tsc(const struct xfdr_names *n, uint64_t *tsc)
{
	if (!n || !n->have_since)
		return 0;
	*tsc = n->since_tsc;
	return 1;
}

int xfdr_names_crash(const struct xfdr_names *n, struct xfdr_map_crash *out)
{
	if (!n || !n->have_crash)
		return 0;
	*out = n->crash;
	return 1;
}

uint32_t xfdr_names_frame_count(const struct xfdr_names *n)
{
	return n ? (uint32_t)n->frame_count : 0;
}

int xfdr_names_frame(const struct xfdr_names *n, uint32_t index, struct xfdr_map_frame *out)
{
	struct rd_frame key = {.index = index};
	const struct rd_frame *hit;

	if (!n || !n->frame_count)
		return 0;
	hit = bsearch(&key, n->frames, n->frame_count, sizeof(*n->frames), index_of);
	if (!hit)
		return 0;
	frame_out(hit, out);
	return 1;
}

int xfdr_names_frame_at_pc(const struct xfdr_names *n, uint64_t pc, struct xfdr_map_frame *out)
{
	size_t i;

	if (!n)
		return 0;
	for (i = 0; i < n->frame_count; i++) {
		if (n->frames[i].pc == pc) {
			frame_out(&n->frames[i], out);
			return 1;
		}
	}
	return 0;
}

void xfdr_names_free(struct xfdr_names *n)
{
	size_t i;

	if (!n)
		return;
	for (i = 0; i < n->count; i++)
		free(n->v[i].name);
	free(n->v);
	for (i = 0; i < n->module_count; i++)
		free(n->modules[i]);
	free(n->modules);
	free_frames(n);
	free(n->frames);
	free(n->crash_signal_name);
	free(n->program);
	free(n->mode);
	for (i = 0; i < n->thread_count; i++)
		free(n->threads[i].name);
	free(n->threads);
	free(n);
}

const char *xfdr_names_thread(const struct xfdr_names *n, uint32_t thread_id, uint32_t *tid)
{
	struct rd_thread key = {.thread_id = thread_id};
	const struct rd_thread *hit = NULL;

	if (n && n->thread_count)
		hit = bsearch(&key, n->threads, n->thread_count, sizeof(*n->threads), by_thread_id);
	if (tid)
		*tid = hit ? hit->tid : 0;
	return hit ? hit->name : NULL;
}
