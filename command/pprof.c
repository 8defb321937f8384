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
 * Memory: the tree grows with the distinct stacks, the profile with the stacks times their
 * depth; both are built whole and then compressed in one go.
 */
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

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
 * Node id's self time in ns into *ns; 1 when the node is a sample: a call stack (not a thread's
 * root frame) with calls or time.
 */
static int sample_ns(const struct stree *t, uint32_t id, uint64_t hz, uint64_t *ns)
{
	*ns = stree_ticks_to(t->node[id].self_tsc, hz, 1000000000);
	return t->node[id].kind != STREE_THREAD && (t->node[id].calls || *ns);
}

/* Is node id a frame of a stack (a location), not the root or a thread's root frame? */
static int is_frame(const struct stree *t, uint32_t id)
{
	return id && id != STREE_NONE && t->node[id].kind != STREE_THREAD;
}

/* used[k] = 1 for each name k in the stack of a sample. */
static void mark_used(const struct stree *t, uint64_t hz, uint8_t *used)
{
	uint64_t ns;
	uint32_t id, up;

	for (id = 1; id < t->nodes; id++)
		if (sample_ns(t, id, hz, &ns))
			for (up = id; is_frame(t, up); up = t->node[up].parent)
				used[t->node[up].name] = 1;
}

/*
 * A sample per node with calls or time: its frames leaf first, then [calls, self ns], then its
 * thread's label (the name of its root frame: string names_at + name).
 */
static void put_samples(struct pb_buf *b, const struct stree *t, uint64_t hz, uint64_t names_at)
{
	uint64_t ns, calls;
	uint32_t id, up;

	for (id = 1; id < t->nodes && !b->oom; id++) {
		if (!sample_ns(t, id, hz, &ns))
			continue;
		calls = t->node[id].calls;
		pb_open(b, PROFILE_SAMPLE);
		pb_open(b, SAMPLE_LOCATION_ID);
		for (up = id; is_frame(t, up); up = t->node[up].parent)
			pb_packed_varint(b, (uint64_t)t->node[up].name + 1);
		pb_close(b);
		pb_open(b, SAMPLE_VALUE);
		pb_packed_varint(b, calls > INT64_MAX ? INT64_MAX : calls);
		pb_packed_varint(b, ns > INT64_MAX ? INT64_MAX : ns);
		pb_close(b);
		if (up && up != STREE_NONE) {
			pb_open(b, SAMPLE_LABEL);
			pb_varint(b, LABEL_KEY, STR_THREAD);
			pb_varint(b, LABEL_STR, names_at + t->node[up].name);
			pb_close(b);
		}
		pb_close(b);
	}
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
 * The profile of t into b. program: the mapping's file name ("" when unknown); comments: lines
 * pprof shows with -comments.
 */
static void put_profile(struct pb_buf *b, const struct stree *t, uint64_t hz, const uint8_t *used,
			const struct pp_sources *src, const char *program,
			const char *const *comments, unsigned ncomments)
{
	uint64_t str_program = STR_FIXED, names_at = STR_FIXED + 1 + ncomments;
	uint64_t files_at = names_at + t->name_count;
	unsigned i;
	uint32_t k;

	value_type(b, PROFILE_SAMPLE_TYPE, STR_CALLS, STR_COUNT);
	value_type(b, PROFILE_SAMPLE_TYPE, STR_WALL, STR_NANOSECONDS);
	put_samples(b, t, hz, names_at);
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
	uint32_t *fid = malloc(((size_t)t->name_count + 1) * sizeof(*fid)), k;
	const char *module, *why;
	uint64_t vaddr;
	size_t i;

	if (!fid)
		return -1;
	stree_name_functions(t, fid);
	for (k = 0; k < t->name_count; k++) {
		if (!used[k] || fid[k] == STREE_NONE ||
		    !xfdr_names_function_site(names, fid[k], &module, &vaddr))
			continue;
		if (srcline_lookup(lines, module, vaddr, &src->file[k], &src->line[k]))
			src->any = 1;
	}
	free(fid);
	for (i = 0; srcline_failed(lines, i, &module, &why); i++)
		cli_error("note: no source lines from %s: %s", module, why);
	return 0;
}

/* b gzipped into out. Returns CLI_OK, or CLI_FAIL after reporting. */
static int put_gzip(const struct pb_buf *b, const char *name, struct cli_out *out)
{
	struct libdeflate_compressor *zc = libdeflate_alloc_compressor(6);
	size_t cap, zlen;
	uint8_t *z = NULL;

	if (zc) {
		cap = libdeflate_gzip_compress_bound(zc, b->len);
		z = malloc(cap);
	}
	if (!zc || !z) {
		cli_error("%s: out of memory", name);
		libdeflate_free_compressor(zc);
		return CLI_FAIL;
	}
	zlen = libdeflate_gzip_compress(zc, b->p, b->len, z, cap);
	libdeflate_free_compressor(zc);
	if (!zlen) {
		/* cannot be: the room is the library's own bound */
		cli_error("%s: libdeflate failed to compress %zu bytes", name, b->len);
		free(z);
		return CLI_FAIL;
	}
	cli_put(out, z, zlen);
	free(z);
	return CLI_OK;
}

int convert_pprof(struct xfdr_trace *tr, const struct xfdr_names *names, struct cli_out *out,
		  struct cli_progress *prog)
{
	const char *name = xfdr_trace_name(tr), *program = NULL;
	uint64_t hz = xfdr_trace_header(tr)->cycle_frequency;
	const char *comments[2];
	char source[4200], note[640];
	unsigned ncomments = 0;
	struct pb_buf b = {0};
	struct pp_sources src = {0};
	struct srcline *lines = NULL;
	uint8_t *used = NULL;
	struct stree t;
	int status = CLI_FAIL;

	if (!hz) {
		cli_error("%s: the header's cycle_frequency is 0: no times for pprof's "
			  "wall/nanoseconds",
			  name);
		return CLI_FAIL;
	}
	if (cli_stree_build(&t, tr, names, 1, prog))
		return CLI_FAIL;
	snprintf(source, sizeof(source), "xfdr convert --output-format=pprof %s", name);
	comments[ncomments++] = source;
	if (stree_incomplete_note(&t, note, sizeof(note))) {
		cli_error("%s", note);
		comments[ncomments++] = note;
	}
	xfdr_names_pid(names, &program);
	used = calloc(t.name_count + 1, 1);
	src.file = calloc(t.name_count + 1, sizeof(*src.file));
	src.line = calloc(t.name_count + 1, sizeof(*src.line));
	lines = srcline_new();
	if (!used || !src.file || !src.line || !lines)
		goto oom;
	mark_used(&t, hz, used);
	if (find_sources(&src, &t, used, names, lines) < 0)
		goto oom;
	put_profile(&b, &t, hz, used, &src, program ? program : "", comments, ncomments);
	if (b.oom)
		goto oom;
	status = put_gzip(&b, name, out);
	goto out;
oom:
	cli_error("%s: out of memory", name);
out:
	srcline_free(lines);
	free(src.file);
	free(src.line);
	free(used);
	pb_free(&b);
	stree_free(&t);
	return status;
}
