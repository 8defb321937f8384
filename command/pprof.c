/*
 * command/pprof.c - `xfdr convert --output-format=pprof`: the calls of a trace as a pprof
 * profile, the format `go tool pprof`, Pyroscope, Parca and the cloud profilers ingest.
 *
 * The profile is profile.proto (github.com/google/pprof, proto/profile.proto; the field numbers
 * below are that file's), gzipped as pprof writes it. It is drawn from the same call-stack tree
 * as `xfdr stack` (analysis/stacktree.h): one sample per distinct call stack, leaf first, with
 * two values,
 *   calls/count          the calls whose stack is exactly that one,
 *   wall/nanoseconds     their self time (callees excluded; the header's cycle_frequency),
 * so that pprof's flat column is each function's self time and call count, and its cum column
 * its time with callees, as `xfdr account` sums it for a function that does not recurse.
 * wall is the default sample type. Each thread has samples of its own, labelled
 * thread="thread N (NAME)" (the tree's per-thread root frame, not a location: "pid P " before it
 * when the file has Pid records), so that -tagfocus and -tagshow pick threads; the views merge
 * them, as in a CPU profile. time_nanos is the earliest WallClockTime of the events' buffers,
 * duration_nanos the span of their TSCs.
 *
 * A function is one per distinct frame name (the tree keys frames by name: two ids the .map
 * names alike are one function, and "#ID" and "[unknown]" are frames of their own), with one
 * location each, in one mapping that says the functions are already named (so that pprof does
 * not try to symbolize addresses it was never given). Names are the tree's: a ';' in a name is
 * ':' and a control character '?'. A function's file and line are those of its first
 * instruction in its module's DWARF (analysis/srcline.h; for a name of several ids, the lowest
 * id's), as addr2line gives them: the function's start line and its location's line.
 *
 * Memory: flat. The tree keeps what does not fit in memory in runs on disk (stacktree.h), and
 * the profile is compressed as it is encoded, a megabyte at a time, through zlib's gzip stream
 * (one gzip member: not every reader of gzip reads a second one).
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "analysis/srcline.h"
#include "analysis/stacktree.h"
#include "command/cli.h"
#include "command/protobuf.h"

/* profile.proto: Profile */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
};
/* ValueType */
enum { VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2 };
/* Sample */
enum { SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3 };
/* Label */
enum { LABEL_KEY = 1, LABEL_STR = 2 };
/* Mapping */
enum {
	MAPPING_ID = 1,
	MAPPING_FILENAME = 5,
	MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9,
};
/* Location, Line */
enum { LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_LINE = 4 };
enum { LINE_FUNCTION_ID = 1, LINE_LINE = 2 };
/* Function */
enum {
	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
	FUNCTION_START_LINE = 5
};

/* Where each name of the tree is defined: file[k] and line[k] (NULL and 0: not known). */
struct pp_sources {
	const char **file;
	int *line;
	int any; /* some name has a line */
};

/*
 * The string table: these first, in this order (index 0 must be ""), then the program's name
 * and the comments, then the tree's names (name k at names_at + k).
 */
enum { STR_EMPTY, STR_CALLS, STR_COUNT, STR_WALL, STR_NANOSECONDS, STR_THREAD, STR_FIXED };
static const char *const fixed_strings[STR_FIXED] = {"",     "calls",	    "count",
						     "wall", "nanoseconds", "thread"};

static void value_type(struct pb_buf *b, unsigned field, uint64_t type, uint64_t unit)
{
	pb_open(b, field);
	pb_varint(b, VALUE_TYPE_TYPE, type);
	pb_varint(b, VALUE_TYPE_UNIT, unit);
	pb_close(b);
}

/*
 * The profile on its way out: what is encoded but not yet compressed, and the gzip stream
 * (zlib: one gzip member, as pprof writes it) into the output.
 */
struct pp_out {
	const char *name; /* the trace, for messages */
	struct pb_buf b;
	z_stream z;
	int z_ready;
	struct cli_out *out;
	uint8_t zbuf[65536];
};

#define PP_CHUNK_BYTES (1u << 20) /* encoded bytes handed to zlib at a time */

/* Compress what b holds into the output (and end the stream when finish). 0, or -1 reported. */
static int pp_deflate(struct pp_out *p, int finish)
{
	int rc;

	if (p->b.oom) {
		cli_error("%s: out of memory", p->name);
		return -1;
	}
	p->z.next_in = p->b.p;
	p->z.avail_in = (uInt)p->b.len;
	do {
		p->z.next_out = p->zbuf;
		p->z.avail_out = sizeof(p->zbuf);
		rc = deflate(&p->z, finish ? Z_FINISH : Z_NO_FLUSH);
		if (rc == Z_STREAM_ERROR) {
			cli_error("%s: zlib failed to compress the profile", p->name);
			return -1;
		}
		cli_put(p->out, p->zbuf, sizeof(p->zbuf) - p->z.avail_out);
	} while (p->z.avail_out == 0 || (finish && rc != Z_STREAM_END));
	pb_reset(&p->b);
	return 0;
}

/* The walk of the tree into samples: a sample per stack with calls or time. */
struct pp_samples {
	struct pp_out *p;
	uint64_t hz;
	uint64_t names_at; /* string of name 0 */
	uint8_t *used;	   /* used[k] = 1 for each name k in the stack of a sample */
};

/*
 * A sample per node with calls or time (not the root, not a thread's root frame): its frames
 * leaf first, then [calls, self ns], then its thread's label (the name of its root frame).
 */
static int put_sample(void *ctx, const struct stree_frame *path, uint32_t depth)
{
	struct pp_samples *s = ctx;
	struct pb_buf *b = &s->p->b;
	const struct stree_frame *n = &path[depth];
	uint64_t ns = stree_ticks_to(n->self_tsc, s->hz, 1000000000);
	uint32_t up;

	if (!depth || n->kind == STREE_THREAD || (!n->calls && !ns))
		return 0;
	pb_open(b, PROFILE_SAMPLE);
	pb_open(b, SAMPLE_LOCATION_ID);
	for (up = depth; up && path[up].kind != STREE_THREAD; up--) {
		pb_packed_varint(b, (uint64_t)path[up].name + 1);
		s->used[path[up].name] = 1;
	}
	pb_close(b);
	pb_open(b, SAMPLE_VALUE);
	pb_packed_varint(b, n->calls > INT64_MAX ? INT64_MAX : n->calls);
	pb_packed_varint(b, ns > INT64_MAX ? INT64_MAX : ns);
	pb_close(b);
	if (up) {
		pb_open(b, SAMPLE_LABEL);
		pb_varint(b, LABEL_KEY, STR_THREAD);
		pb_varint(b, LABEL_STR, s->names_at + path[up].name);
		pb_close(b);
	}
	pb_close(b);
	if (b->len >= PP_CHUNK_BYTES && pp_deflate(s->p, 0) < 0)
		return 2;
	return s->p->out->err ? 3 : 0;
}

/* time_nanos and duration_nanos: when the events began, and how long they lasted. */
static void put_span(struct pb_buf *b, const struct stree *t, uint64_t hz)
{
	uint64_t ns;

	if (!t->have_span)
		return;
	if (t->wall_seconds && t->wall_seconds < (uint64_t)INT64_MAX / 1000000000 - 1)
		pb_varint(b, PROFILE_TIME_NANOS,
			  t->wall_seconds * 1000000000 + (uint64_t)t->wall_micros * 1000);
	ns = stree_ticks_to(t->tsc_hi - t->tsc_lo, hz, 1000000000);
	pb_varint(b, PROFILE_DURATION_NANOS, ns > INT64_MAX ? INT64_MAX : ns);
}

/*
 * One function and one location (both numbered name + 1) per name a sample uses; name k is
 * string names_at + k, its file files_at + k.
 */
static void put_functions(struct pb_buf *b, const struct stree *t, const uint8_t *used,
			  const struct pp_sources *src, uint64_t names_at, uint64_t files_at)
{
	uint32_t k;

	for (k = 0; k < t->name_count && !b->oom; k++) {
		if (!used[k])
			continue;
		pb_open(b, PROFILE_LOCATION);
		pb_varint(b, LOCATION_ID, (uint64_t)k + 1);
		pb_varint(b, LOCATION_MAPPING_ID, 1);
		pb_open(b, LOCATION_LINE);
		pb_varint(b, LINE_FUNCTION_ID, (uint64_t)k + 1);
		if (src->line[k])
			pb_varint(b, LINE_LINE, (uint64_t)src->line[k]);
		pb_close(b);
		pb_close(b);
		pb_open(b, PROFILE_FUNCTION);
		pb_varint(b, FUNCTION_ID, (uint64_t)k + 1);
		pb_varint(b, FUNCTION_NAME, names_at + k);
		pb_varint(b, FUNCTION_SYSTEM_NAME, names_at + k);
		if (src->file[k]) {
			pb_varint(b, FUNCTION_FILENAME, files_at + k);
			pb_varint(b, FUNCTION_START_LINE, (uint64_t)src->line[k]);
		}
		pb_close(b);
	}
}

/*
 * What follows the samples: the mapping (program: its file name, "" when unknown), the
 * functions, the string table (comments: lines pprof shows with -comments), the span.
 */
static void put_tail(struct pb_buf *b, const struct stree *t, uint64_t hz, const uint8_t *used,
		     const struct pp_sources *src, const char *program, const char *const *comments,
		     unsigned ncomments)
{
	uint64_t str_program = STR_FIXED, names_at = STR_FIXED + 1 + ncomments;
	uint64_t files_at = names_at + t->name_count;
	unsigned i;
	uint32_t k;

	pb_open(b, PROFILE_MAPPING);
	pb_varint(b, MAPPING_ID, 1);
	pb_varint(b, MAPPING_FILENAME, str_program);
	pb_varint(b, MAPPING_HAS_FUNCTIONS, 1);
	pb_varint(b, MAPPING_HAS_FILENAMES, (uint64_t)src->any);
	pb_varint(b, MAPPING_HAS_LINE_NUMBERS, (uint64_t)src->any);
	pb_close(b);
	put_functions(b, t, used, src, names_at, files_at);
	for (i = 0; i < STR_FIXED; i++)
		pb_string(b, PROFILE_STRING_TABLE, fixed_strings[i]);
	pb_string(b, PROFILE_STRING_TABLE, program);
	for (i = 0; i < ncomments; i++)
		pb_string(b, PROFILE_STRING_TABLE, comments[i]);
	for (k = 0; k < t->name_count; k++) {
		size_t len;
		const char *name = stree_name(t, k, &len);

		pb_bytes(b, PROFILE_STRING_TABLE, name, len);
	}
	for (k = 0; k < t->name_count; k++)
		pb_string(b, PROFILE_STRING_TABLE, src->file[k] ? src->file[k] : "");
	put_span(b, t, hz);
	value_type(b, PROFILE_PERIOD_TYPE, STR_WALL, STR_NANOSECONDS);
	pb_varint(b, PROFILE_PERIOD, 1);
	for (i = 0; i < ncomments; i++)
		pb_varint(b, PROFILE_COMMENT, str_program + 1 + i);
	pb_varint(b, PROFILE_DEFAULT_SAMPLE_TYPE, STR_WALL);
}

/*
 * The file and line of each name a sample uses, from the DWARF of the module the .map puts its
 * (lowest) function id in. A module that gives no lines is told in one note. 0, or -1 when out
 * of memory.
 */
static int find_sources(struct pp_sources *src, const struct stree *t, const uint8_t *used,
			const struct xfdr_names *names, struct srcline *lines)
{
	long found = cli_stree_sources(t, used, names, lines, src->file, src->line);

	if (found < 0)
		return -1;
	src->any = found > 0;
	cli_source_notes(lines);
	return 0;
}

/*
 * The profile of t, streamed: the sample types, the samples as the tree's walk gives them, then
 * the rest (put_tail()). Returns CLI_OK, or CLI_FAIL after reporting.
 */
static int put_profile(struct pp_out *p, struct stree *t, uint64_t hz,
		       const struct xfdr_names *names, const char *const *comments,
		       unsigned ncomments)
{
	struct pp_samples smp = {.p = p, .hz = hz, .names_at = STR_FIXED + 1 + ncomments};
	struct pp_sources src = {0};
	struct srcline *lines = NULL;
	const char *program = NULL;
	int status = CLI_FAIL, rc;
	char why[256];

	smp.used = calloc((size_t)t->name_count + 1, 1);
	src.file = calloc((size_t)t->name_count + 1, sizeof(*src.file));
	src.line = calloc((size_t)t->name_count + 1, sizeof(*src.line));
	lines = srcline_new();
	if (!smp.used || !src.file || !src.line || !lines) {
		cli_error("%s: out of memory", p->name);
		goto out;
	}
	value_type(&p->b, PROFILE_SAMPLE_TYPE, STR_CALLS, STR_COUNT);
	value_type(&p->b, PROFILE_SAMPLE_TYPE, STR_WALL, STR_NANOSECONDS);
	rc = stree_walk(t, put_sample, &smp, why, sizeof(why));
	if (rc == -1)
		cli_error("%s", why);
	if (rc)
		goto out; /* 2: reported; 3: the output's error, reported when it is closed */
	if (find_sources(&src, t, smp.used, names, lines) < 0) {
		cli_error("%s: out of memory", p->name);
		goto out;
	}
	xfdr_names_pid(names, &program);
	put_tail(&p->b, t, hz, smp.used, &src, program ? program : "", comments, ncomments);
	if (pp_deflate(p, 1) == 0)
		status = CLI_OK;
out:
	srcline_free(lines);
	free(src.file);
	free(src.line);
	free(smp.used);
	return status;
}

int convert_pprof(const struct cli_input *in, const struct cli_window *w, struct cli_out *out,
		  struct cli_progress *prog)
{
	const char *name = xfdr_trace_name(in->t);
	uint64_t hz = xfdr_trace_header(in->t)->cycle_frequency;
	const char *comments[2];
	char source[4200], note[640];
	unsigned ncomments = 0;
	struct pp_out p = {.name = name, .out = out};
	struct stree t;
	int status = CLI_FAIL;

	if (!hz) {
		cli_error("%s: the header's cycle_frequency is 0: no times for pprof's "
			  "wall/nanoseconds",
			  name);
		return CLI_FAIL;
	}
	if (cli_stree_build(&t, in, 1, 1, w, prog))
		return CLI_FAIL;
	snprintf(source, sizeof(source), "xfdr convert --output-format=pprof %s", name);
	comments[ncomments++] = source;
	if (stree_incomplete_note(&t, note, sizeof(note))) {
		cli_error("%s", note);
		comments[ncomments++] = note;
	}
	/* zlib's default level: a profile is read many times, written once. */
	if (deflateInit2(&p.z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK) {
		cli_error("%s: out of memory", name);
		goto out;
	}
	p.z_ready = 1;
	status = put_profile(&p, &t, hz, in->names, comments, ncomments);
out:
	if (p.z_ready)
		deflateEnd(&p.z);
	pb_free(&p.b);
	stree_free(&t);
	return status;
}
