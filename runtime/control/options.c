/*
 * runtime/control/options.c - the option table: one row per XFDR_OPTIONS key.
 *
 * Every key is parsed and validated by its row, so the API (xfdr_options_set), the
 * environment (opt_parse) and the struct check (opt_check) apply the same rules. A later key
 * (flush_signal, ...) is one more row and one more struct field.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <unistd.h> /* sysconf */

#include "runtime/base/compiler.h"
#include "runtime/control/options.h"
#include "runtime/base/print.h"
#include "runtime/record/thread_slots.h"
#include "runtime/record/thread_types.h"
#include "runtime/symbols/patterns.h"

enum opt_type {
	OPT_SIZE, /* size_t, decimal with an optional k/m/g (binary) suffix */
	OPT_BOOL, /* int 0/1 */
	OPT_STRING,
	OPT_NAMED,    /* int, an index into the row's names */
	OPT_U64,      /* uint64_t, plain decimal */
	OPT_SIGNAL,   /* int, a signal by name (SIGUSR2, USR2) or number; 0/none: no signal */
	OPT_MODE,     /* int, permission bits in octal */
	OPT_PATTERNS, /* const char *, a list patterns_check() accepts */
};

struct opt_row {
	const char *key;
	enum opt_type type;
	size_t offset;
	const char *rule; /* printed when a value is rejected */
	int (*valid)(size_t v);
	const char *const *names; /* OPT_NAMED: the values, by index */
};

static int valid_buffer_size(size_t v)
{
	return v >= OPT_MIN_BUFFER_SIZE && v % 8 == 0 && v <= ((size_t)1 << 32);
}

_Static_assert(OPT_MIN_BUFFER_SIZE == 128, "OPT_MIN_BUFFER_SIZE_TEXT names the minimum");

static int valid_buffer_max(size_t v)
{
	return v >= 1 && v <= OPT_MAX_BUFFER_MAX;
}

_Static_assert(OPT_DEFAULT_THREAD_MAX <= THREAD_SLOTS_BSS,
	       "the default thread table is the one in .bss (thread_slots.h)");

static int valid_thread_max(size_t v)
{
	return v >= 1 && v <= OPT_MAX_THREAD_MAX;
}

static int valid_threshold_us(size_t v)
{
	return v <= OPT_MAX_THRESHOLD_US;
}

/*
 * A flush signal must be one the program can catch and that does not already mean a crash
 * (flush_on_crash handles those): SIGKILL, SIGSTOP and the synchronous faults are refused.
 */
static int valid_flush_signal(size_t v)
{
	return v == 0 ||
	       (v < (size_t)NSIG && v != SIGKILL && v != SIGSTOP && v != SIGSEGV && v != SIGBUS &&
		v != SIGILL && v != SIGFPE && v != SIGABRT && v != SIGTRAP);
}

/*
 * Created files must stay readable and writable by their owner (recover reads them back);
 * execute and set-id bits mean nothing for a trace. 0 in the struct is the default.
 */
static int valid_file_mode(size_t v)
{
	return v == 0 || ((v & ~(size_t)0666) == 0 && (v & 0600) == 0600);
}

/* The rule of a pattern list (patterns.h), as a rejected value's message gives it. */
#define PATTERNS_RULE                                                                              \
	"shell patterns separated by commas (\\, for a comma in one), at most 64 in 2047 bytes"

static int valid_max_depth(size_t v)
{
	return v <= OPT_MAX_DEPTH;
}

static int valid_stream_max_files(size_t v)
{
	return v <= OPT_STREAM_MAX_FILES;
}

/* A cut trace holds its header, at least one buffer of events and the drop-count buffer. */
static int valid_stream_max_bytes(const struct xfdr_options *o)
{
	return !o->stream_max_bytes ||
	       (o->buffer_size <= (SIZE_MAX - XFDR_FILE_HEADER_BYTES) / 2 &&
		o->stream_max_bytes >= XFDR_FILE_HEADER_BYTES + 2 * o->buffer_size);
}

static const char *const clock_names[] = {"auto", "rdtscp", "rdtsc", NULL};
static const char *const mode_names[] = {[XFDR_MODE_RING] = "ring",
					 [XFDR_MODE_BOUNDED] = "bounded",
					 [XFDR_MODE_STREAM] = "stream",
					 NULL};
static const char *const backing_names[] = {
    [XFDR_BACKING_MEMORY] = "memory", [XFDR_BACKING_FILE] = "file", NULL};

/* Signal names as kill -l spells them without "SIG"; index = number. */
static const char *const signal_names[] = {
    [SIGHUP] = "HUP",	    [SIGINT] = "INT",	[SIGQUIT] = "QUIT",   [SIGILL] = "ILL",
    [SIGTRAP] = "TRAP",	    [SIGABRT] = "ABRT", [SIGBUS] = "BUS",     [SIGFPE] = "FPE",
    [SIGKILL] = "KILL",	    [SIGUSR1] = "USR1", [SIGSEGV] = "SEGV",   [SIGUSR2] = "USR2",
    [SIGPIPE] = "PIPE",	    [SIGALRM] = "ALRM", [SIGTERM] = "TERM",   [SIGCHLD] = "CHLD",
    [SIGCONT] = "CONT",	    [SIGSTOP] = "STOP", [SIGTSTP] = "TSTP",   [SIGTTIN] = "TTIN",
    [SIGTTOU] = "TTOU",	    [SIGURG] = "URG",	[SIGXCPU] = "XCPU",   [SIGXFSZ] = "XFSZ",
    [SIGVTALRM] = "VTALRM", [SIGPROF] = "PROF", [SIGWINCH] = "WINCH", [SIGIO] = "IO",
    [SIGPWR] = "PWR",	    [SIGSYS] = "SYS",
};
#define SIGNAL_NAMES (sizeof(signal_names) / sizeof(signal_names[0]))

#define OFF(f) offsetof(struct xfdr_options, f)

static const struct opt_row opt_rows[] = {
    {"buffer_size", OPT_SIZE, OFF(buffer_size),
     "a multiple of 8, at least " OPT_MIN_BUFFER_SIZE_TEXT
     " to hold the preamble, one event and the drop counts, at most 4g",
     valid_buffer_size, NULL},
    {"buffer_max", OPT_SIZE, OFF(buffer_max), "1 to 16777216", valid_buffer_max, NULL},
    {"thread_max", OPT_SIZE, OFF(thread_max), "1 to 1048576", valid_thread_max, NULL},
    {"output", OPT_STRING, OFF(output), "a directory ending in '/' or a path prefix", NULL, NULL},
    {"per_thread_files", OPT_BOOL, OFF(per_thread_files), "0 or 1", NULL, NULL},
    {"start", OPT_BOOL, OFF(start), "0 or 1", NULL, NULL},
    {"flush_at_exit", OPT_BOOL, OFF(flush_at_exit), "0 or 1", NULL, NULL},
    {"clock", OPT_NAMED, OFF(clock), "auto, rdtscp or rdtsc", NULL, clock_names},
    {"mode", OPT_NAMED, OFF(mode), "ring, bounded or stream; stream not with per_thread_files",
     NULL, mode_names},
    {"func_duration_threshold_us", OPT_U64, OFF(func_duration_threshold_us),
     "0 to 1000000000 microseconds", valid_threshold_us, NULL},
    {"flush_signal", OPT_SIGNAL, OFF(flush_signal),
     "a signal name or number the program can catch, not a crash signal; 0 for none",
     valid_flush_signal, NULL},
    {"flush_on_terminate", OPT_BOOL, OFF(flush_on_terminate), "0 or 1", NULL, NULL},
    {"flush_on_crash", OPT_BOOL, OFF(flush_on_crash), "0 or 1", NULL, NULL},
    {"backing", OPT_NAMED, OFF(backing), "memory or file", NULL, backing_names},
    {"file_mode", OPT_MODE, OFF(file_mode),
     "octal, 0600 to 0666: owner read and write, plus read or write for group and others",
     valid_file_mode, NULL},
    {"include", OPT_PATTERNS, OFF(include), PATTERNS_RULE, NULL, NULL},
    {"exclude", OPT_PATTERNS, OFF(exclude), PATTERNS_RULE, NULL, NULL},
    {"max_depth", OPT_U64, OFF(max_depth), "0 (no limit) to 1000000 open calls", valid_max_depth,
     NULL},
    {"stream_max_bytes", OPT_SIZE, OFF(stream_max_bytes),
     "0 (one file) or at least the 32-byte header and two buffers", NULL, NULL},
    {"stream_max_files", OPT_SIZE, OFF(stream_max_files), "0 (keep all) to 1000000",
     valid_stream_max_files, NULL},
};

XFDR_API void xfdr_options_default(struct xfdr_options *o)
{
	memset(o, 0, sizeof(*o));
	o->buffer_size = OPT_DEFAULT_BUFFER_SIZE;
	o->buffer_max = OPT_DEFAULT_BUFFER_MAX;
	o->thread_max = OPT_DEFAULT_THREAD_MAX;
	o->output = "";
	o->flush_at_exit = 1;
	o->clock = XFDR_CLOCK_AUTO;
	o->mode = XFDR_MODE_RING;
	o->func_duration_threshold_us = 0;
	o->flush_signal = 0;
	o->flush_on_terminate = 0;
	o->flush_on_crash = 1;
	o->backing = XFDR_BACKING_MEMORY;
	o->file_mode = OPT_DEFAULT_FILE_MODE;
	o->include = "";
	o->exclude = "";
	o->max_depth = 0;
}

static const struct opt_row *opt_find(const char *key)
{
	size_t i;

	for (i = 0; i < sizeof(opt_rows) / sizeof(opt_rows[0]); i++)
		if (!strcmp(opt_rows[i].key, key))
			return &opt_rows[i];
	return NULL;
}

/* Decimal with an optional binary suffix; rejects empty text, signs, overflow, junk. */
static int parse_size(const char *s, size_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;

	if (!*s)
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	switch (*s) {
	case 'k':
	case 'K':
		shift = 10;
		s++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		s++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		s++;
		break;
	default:
		break;
	}
	if (*s)
		return -EINVAL;
	if (shift && v > (SIZE_MAX >> shift))
		return -EINVAL;
	*out = (size_t)(v << shift);
	return 0;
}

static int parse_bool(const char *s, int *out)
{
	static const char *const yes[] = {"1", "yes", "true", "on"};
	static const char *const no[] = {"0", "no", "false", "off"};
	size_t i;

	for (i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = 1;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = 0;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_named(const char *const *names, const char *s, int *out)
{
	int i;

	for (i = 0; names[i]; i++) {
		if (!strcmp(s, names[i])) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

/* Octal digits, at most 4 ("0640", "640"). */
static int parse_mode(const char *s, size_t *out)
{
	size_t v = 0, n = 0;

	for (; *s >= '0' && *s <= '7' && n < 4; s++, n++)
		v = v * 8 + (size_t)(*s - '0');
	if (!n || *s)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "SIGUSR2", "USR2" (any case), "SIGRTMIN+3", a number, or "none". */
static int parse_signal(const char *s, size_t *out)
{
	size_t i, n;

	if (!strcasecmp(s, "none")) {
		*out = 0;
		return 0;
	}
	if (*s >= '0' && *s <= '9')
		return parse_size(s, out) || s[strspn(s, "0123456789")] ? -EINVAL : 0;
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	if (!strncasecmp(s, "RTMIN", 5)) {
		n = 0;
		if (s[5] &&
		    (s[5] != '+' || parse_size(s + 6, &n) || s[6 + strspn(s + 6, "0123456789")]))
			return -EINVAL;
		if (n > (size_t)(SIGRTMAX - SIGRTMIN))
			return -EINVAL;
		*out = (size_t)SIGRTMIN + n;
		return 0;
	}
	for (i = 1; i < SIGNAL_NAMES; i++) {
		if (signal_names[i] && !strcasecmp(s, signal_names[i])) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

static void print_signal(struct pr_buf *b, int sig)
{
	if (sig > 0 && (size_t)sig < SIGNAL_NAMES && signal_names[sig]) {
		pr_str(b, "SIG");
		pr_str(b, signal_names[sig]);
	} else if (sig >= SIGRTMIN && sig <= SIGRTMAX) {
		pr_str(b, "SIGRTMIN+");
		pr_u64(b, (uint64_t)(sig - SIGRTMIN));
	} else {
		pr_i64(b, sig);
	}
}

static int name_count(const char *const *names)
{
	int n = 0;

	while (names[n])
		n++;
	return n;
}

static int row_set(const struct opt_row *r, struct xfdr_options *o, const char *value)
{
	char *field = (char *)o + r->offset;
	const char *why;
	size_t sz;
	int i;

	switch (r->type) {
	case OPT_SIZE:
		if (parse_size(value, &sz) || (r->valid && !r->valid(sz)))
			return -EINVAL;
		memcpy(field, &sz, sizeof(sz));
		return 0;
	case OPT_BOOL:
		if (parse_bool(value, &i))
			return -EINVAL;
		memcpy(field, &i, sizeof(i));
		return 0;
	case OPT_NAMED:
		if (parse_named(r->names, value, &i))
			return -EINVAL;
		memcpy(field, &i, sizeof(i));
		return 0;
	case OPT_U64: {
		uint64_t v;

		/* no unit suffix: a k after a number of microseconds would be a surprise */
		if (!*value || value[strspn(value, "0123456789")] || parse_size(value, &sz) ||
		    (r->valid && !r->valid(sz)))
			return -EINVAL;
		v = sz;
		memcpy(field, &v, sizeof(v));
		return 0;
	}
	case OPT_SIGNAL:
		if (parse_signal(value, &sz) || (r->valid && !r->valid(sz)))
			return -EINVAL;
		i = (int)sz;
		memcpy(field, &i, sizeof(i));
		return 0;
	case OPT_MODE:
		if (parse_mode(value, &sz) || (r->valid && !r->valid(sz)))
			return -EINVAL;
		i = (int)sz;
		memcpy(field, &i, sizeof(i));
		return 0;
	case OPT_PATTERNS:
		if (patterns_check(value, &why))
			return -EINVAL;
		/* fall through */
	case OPT_STRING:
		memcpy(field, &value, sizeof(value));
		return 0;
	}
	return -EINVAL;
}

/* Append the current value of r's field in o, as the user would write it. */
static void row_print(struct pr_buf *b, const struct opt_row *r, const struct xfdr_options *o)
{
	const char *field = (const char *)o + r->offset;
	const char *s;
	size_t sz;
	int i;

	switch (r->type) {
	case OPT_SIZE:
		memcpy(&sz, field, sizeof(sz));
		pr_u64(b, sz);
		break;
	case OPT_BOOL:
		memcpy(&i, field, sizeof(i));
		pr_u64(b, (uint64_t)i);
		break;
	case OPT_NAMED:
		memcpy(&i, field, sizeof(i));
		if (i >= 0 && i < name_count(r->names))
			pr_str(b, r->names[i]);
		else
			pr_i64(b, i);
		break;
	case OPT_U64: {
		uint64_t v;

		memcpy(&v, field, sizeof(v));
		pr_u64(b, v);
		break;
	}
	case OPT_SIGNAL:
		memcpy(&i, field, sizeof(i));
		print_signal(b, i);
		break;
	case OPT_MODE:
		memcpy(&i, field, sizeof(i));
		pr_char(b, '0');
		for (sz = 9; sz > 0; sz -= 3)
			pr_char(b, (char)('0' + ((unsigned)i >> (sz - 3) & 7u)));
		break;
	case OPT_STRING:
	case OPT_PATTERNS:
		memcpy(&s, field, sizeof(s));
		pr_char(b, '"');
		pr_str(b, s ? s : "");
		pr_char(b, '"');
		break;
	}
}

XFDR_API int xfdr_options_set(struct xfdr_options *o, const char *key, const char *value)
{
	const struct opt_row *r;

	if (!o || !key)
		return -EINVAL;
	r = opt_find(key);
	if (!r)
		return -ENOENT;
	if (!value)
		return -EINVAL;
	return row_set(r, o, value);
}

static void report_unknown(const char *source, const char *key, const char *value)
{
	char text[400];
	struct pr_buf b = PR_BUF_INIT(text);

	pr_str(&b, source);
	pr_str(&b, ": unknown key \"");
	pr_str(&b, key);
	pr_str(&b, "\" (value \"");
	pr_str(&b, value);
	pr_str(&b, "\") ignored");
	pr_line(&b);
}

static void report_bad(const char *source, const struct opt_row *r, const char *value,
		       const struct xfdr_options *kept)
{
	char text[400];
	struct pr_buf b = PR_BUF_INIT(text);

	pr_str(&b, source);
	pr_str(&b, ": bad value \"");
	pr_str(&b, value);
	pr_str(&b, "\" for ");
	pr_str(&b, r->key);
	pr_str(&b, " (");
	pr_str(&b, r->rule);
	pr_str(&b, "); keeping ");
	row_print(&b, r, kept);
	pr_line(&b);
}

static int is_sep(char c)
{
	return c == ':' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
	       c == '\f';
}

/*
 * Where the item at p ends: at the first separator, but for a character after a backslash
 * (kept, for the patterns of include= and exclude=: "\:" is a colon, "\ " a space) and a
 * double colon (C++'s scope, as in exclude=std::*), which separate nothing.
 */
static char *item_end(char *p, char *end)
{
	for (; p < end; p++) {
		if (*p == '\\' && p + 1 < end)
			p++;
		else if (*p == ':' && p + 1 < end && p[1] == ':')
			p++;
		else if (is_sep(*p))
			break;
	}
	return p;
}

#define OPT_ROWS (sizeof(opt_rows) / sizeof(opt_rows[0]))
_Static_assert(OPT_ROWS <= 32, "a row is one bit of an opt_keys mask");

int opt_parse(struct xfdr_options *o, const char *text, const char *source, char *store,
	      size_t store_bytes, opt_keys *set)
{
	size_t len = text ? strlen(text) : 0;
	int rejected = 0;
	char *p, *end;

	if (set)
		*set = 0;
	if (!len)
		return 0;
	if (len >= store_bytes) {
		char msg[200];
		struct pr_buf b = PR_BUF_INIT(msg);

		pr_str(&b, source);
		pr_str(&b, ": longer than ");
		pr_u64(&b, store_bytes - 1);
		pr_str(&b, " bytes; every option ignored");
		pr_line(&b);
		return 1;
	}
	memcpy(store, text, len + 1);
	end = store + len;
	for (p = store; p < end;) {
		char *item, *eq;
		const struct opt_row *r;

		while (p < end && is_sep(*p))
			p++;
		if (p == end)
			break;
		item = p;
		p = item_end(p, end);
		*p++ = '\0';
		eq = strchr(item, '=');
		if (!eq) {
			char msg[300];
			struct pr_buf b = PR_BUF_INIT(msg);

			pr_str(&b, source);
			pr_str(&b, ": \"");
			pr_str(&b, item);
			pr_str(&b, "\" is not key=value; ignored");
			pr_line(&b);
			rejected++;
			continue;
		}
		*eq = '\0';
		r = opt_find(item);
		if (!r) {
			report_unknown(source, item, eq + 1);
			rejected++;
		} else if (row_set(r, o, eq + 1)) {
			report_bad(source, r, eq + 1, o);
			rejected++;
		} else if (set) {
			*set |= 1u << (r - opt_rows);
		}
	}
	return rejected;
}

static size_t row_bytes(const struct opt_row *r)
{
	switch (r->type) {
	case OPT_SIZE:
		return sizeof(size_t);
	case OPT_U64:
		return sizeof(uint64_t);
	case OPT_STRING:
	case OPT_PATTERNS:
		return sizeof(const char *);
	default:
		return sizeof(int);
	}
}

void opt_overlay(struct xfdr_options *dst, const struct xfdr_options *src, opt_keys keys)
{
	size_t i;

	for (i = 0; i < OPT_ROWS; i++)
		if (keys & (1u << i))
			memcpy((char *)dst + opt_rows[i].offset,
			       (const char *)src + opt_rows[i].offset, row_bytes(&opt_rows[i]));
}

static int row_equal(const struct opt_row *r, const struct xfdr_options *a,
		     const struct xfdr_options *b)
{
	const char *fa = (const char *)a + r->offset, *fb = (const char *)b + r->offset;
	const char *sa, *sb;

	if (r->type != OPT_STRING && r->type != OPT_PATTERNS)
		return !memcmp(fa, fb, row_bytes(r));
	memcpy(&sa, fa, sizeof(sa));
	memcpy(&sb, fb, sizeof(sb));
	return !strcmp(sa ? sa : "", sb ? sb : "");
}

int opt_print_differences(struct pr_buf *b, const struct xfdr_options *a,
			  const struct xfdr_options *b_opts, opt_keys ignore)
{
	int n = 0;
	size_t i;

	for (i = 0; i < OPT_ROWS; i++) {
		if ((ignore & (1u << i)) || row_equal(&opt_rows[i], a, b_opts))
			continue;
		if (n++)
			pr_char(b, ' ');
		pr_str(b, opt_rows[i].key);
		pr_char(b, '=');
		row_print(b, &opt_rows[i], a);
	}
	return n;
}

opt_keys opt_key(const char *key)
{
	const struct opt_row *r = opt_find(key);

	return r ? 1u << (r - opt_rows) : 0;
}

/*
 * Each size is valid alone, but together they may ask for more than the machine has: the
 * pool is mapped whole at init and the thread table prefaulted. Refused here with the sizes
 * named, rather than as a bare ENOMEM from mmap (or an OOM kill later).
 */
static const char *memory_check(const struct xfdr_options *o)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t ram = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
	uint64_t pool = 0, table = (uint64_t)o->thread_max * sizeof(struct thread_slot);
	char text[400];
	struct pr_buf b = PR_BUF_INIT(text);
	int overflow =
	    __builtin_mul_overflow((uint64_t)o->buffer_size, (uint64_t)o->buffer_max, &pool);

	if (!overflow && (!ram || pool + table <= ram))
		return NULL;
	pr_str(&b, "xfdr_init: buffer_size ");
	pr_u64(&b, o->buffer_size);
	pr_str(&b, " x buffer_max ");
	pr_u64(&b, o->buffer_max);
	pr_str(&b, " and thread_max ");
	pr_u64(&b, o->thread_max);
	pr_str(&b, " need ");
	if (overflow)
		pr_str(&b, "more than 2^64 bytes");
	else {
		pr_u64(&b, pool + table);
		pr_str(&b, " bytes");
	}
	pr_str(&b, ", more than this machine's memory (");
	pr_u64(&b, ram);
	pr_str(&b, " bytes); nothing changed");
	pr_line(&b);
	return "buffer_max";
}

const char *opt_check(const struct xfdr_options *o)
{
	struct xfdr_options def;
	const struct opt_row *bad = NULL;
	const char *why;
	char text[300];
	struct pr_buf b = PR_BUF_INIT(text);

	xfdr_options_default(&def);
	if (!valid_buffer_size(o->buffer_size))
		bad = opt_find("buffer_size");
	else if (!valid_buffer_max(o->buffer_max))
		bad = opt_find("buffer_max");
	else if (!valid_thread_max(o->thread_max))
		bad = opt_find("thread_max");
	else if (o->per_thread_files != 0 && o->per_thread_files != 1)
		bad = opt_find("per_thread_files");
	else if (o->start != 0 && o->start != 1)
		bad = opt_find("start");
	else if (o->flush_at_exit != 0 && o->flush_at_exit != 1)
		bad = opt_find("flush_at_exit");
	else if (o->clock < XFDR_CLOCK_AUTO || o->clock > XFDR_CLOCK_RDTSC)
		bad = opt_find("clock");
	else if ((o->mode != XFDR_MODE_RING && o->mode != XFDR_MODE_BOUNDED &&
		  o->mode != XFDR_MODE_STREAM) ||
		 (o->mode == XFDR_MODE_STREAM && o->per_thread_files))
		bad = opt_find("mode");
	else if (!valid_threshold_us(o->func_duration_threshold_us))
		bad = opt_find("func_duration_threshold_us");
	else if (o->flush_signal < 0 || !valid_flush_signal((size_t)o->flush_signal))
		bad = opt_find("flush_signal");
	else if (o->flush_on_terminate != 0 && o->flush_on_terminate != 1)
		bad = opt_find("flush_on_terminate");
	else if (o->flush_on_crash != 0 && o->flush_on_crash != 1)
		bad = opt_find("flush_on_crash");
	else if (o->backing != XFDR_BACKING_MEMORY && o->backing != XFDR_BACKING_FILE)
		bad = opt_find("backing");
	else if (o->file_mode < 0 || !valid_file_mode((size_t)o->file_mode))
		bad = opt_find("file_mode");
	else if (patterns_check(o->include, &why))
		bad = opt_find("include");
	else if (patterns_check(o->exclude, &why))
		bad = opt_find("exclude");
	else if (o->max_depth > OPT_MAX_DEPTH)
		bad = opt_find("max_depth");
	else if (!valid_stream_max_bytes(o))
		bad = opt_find("stream_max_bytes");
	else if (!valid_stream_max_files(o->stream_max_files))
		bad = opt_find("stream_max_files");
	if (!bad)
		return memory_check(o);
	pr_str(&b, "xfdr_init: bad value ");
	row_print(&b, bad, o);
	pr_str(&b, " for ");
	pr_str(&b, bad->key);
	pr_str(&b, " (");
	pr_str(&b, bad->rule);
	pr_str(&b, "; default ");
	row_print(&b, bad, &def);
	pr_str(&b, "); nothing changed");
	pr_line(&b);
	return bad->key;
}
