/*
 * reader/cli/convert.c - `xfdr convert`: a verified trace as the YAML `llvm-xray convert` prints.
 *
 * The output must be byte-identical to `llvm-xray convert --output-format=yaml FILE` (LLVM 14)
 * for every file both accept. That fixes more than the keys and the quoting:
 *
 *  - Record order. llvm-xray collects blocks per (process, thread) in an LLVM DenseMap,
 *    expands the threads in the map's bucket order, each thread's blocks by WallClockTime,
 *    and then (by default) stable-sorts all records by TSC. The bucket order is a pure
 *    function of the thread ids in the order their first buffer appears in the file; it is
 *    reproduced by llvm_thread_rank() below, so equal TSCs on different threads and
 *    --sort=false come out in the same order too.
 *  - Custom events (v1 markers carry no CPU and no function): llvm-xray prints cpu 0 and
 *    the function id of the thread's previous record (0 before the thread's first one).
 *  - Entry_Args records are "function-enter-arg" even with no CallArgument; "args" appears
 *    only when there are arguments; "thread" is left out for thread 0 (it is optional with
 *    default 0 in llvm-xray's record mapping), "process" always (version 1 has no pid).
 *
 * Known, deliberate differences (both readers reject or order differently; see test_cli.c):
 *  - A thread's buffers are ordered by (seconds, microseconds, file position). llvm-xray's
 *    comparator is "seconds < and microseconds <", not a strict weak order, so it may
 *    misorder buffers whose WallClockTimes are not in file order.
 *  - The two readers accept slightly different files. xfdr verifies the whole file against
 *    the spec first and refuses (exit 1) e.g. a CallArgument after a plain Entry, which
 *    llvm-xray takes; llvm-xray 14 refuses a custom event of size 0 and a file with no
 *    buffers, both valid here (the latter prints an empty record list).
 *
 * A window (--since=TSC, or --since=snapshot: the since_tsc of the .map sidecar a snapshot
 * flush writes) leaves out every record with a lower TSC, after the order and the custom
 * events' func-id have been worked out from all of them: the output is llvm-xray's with those
 * lines deleted. A call whose entry is before the window keeps its exit: that is what a window
 * is. Without --since nothing differs from llvm-xray.
 *
 * Memory: the records are gathered as 32-byte entries pointing into the mapped file (args,
 * payloads), because the default order needs them all; sorting takes a second array.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/cli/cli.h"

#define THREAD_IDS 65536u /* thread ids are 16 bits in version 1 */

enum yrec_kind {
	YK_ENTER = XFDR_FN_ENTER,
	YK_EXIT = XFDR_FN_EXIT,
	YK_TAIL_EXIT = XFDR_FN_TAIL_EXIT,
	YK_ENTER_ARGS = XFDR_FN_ENTER_ARGS,
	YK_CUSTOM,
};

static const char *const yrec_kind_name[] = {
    [YK_ENTER] = "function-enter",	   [YK_EXIT] = "function-exit",
    [YK_TAIL_EXIT] = "function-tail-exit", [YK_ENTER_ARGS] = "function-enter-arg",
    [YK_CUSTOM] = "custom-event",
};

/* One output record. ptr points into the trace's mapping, which outlives the array. */
struct yrec {
	uint64_t tsc;
	const uint8_t *ptr; /* custom: the payload; Entry_Args: the reader's argument cursor */
	uint32_t fid;
	uint32_t count; /* custom: payload bytes; Entry_Args: arguments */
	uint16_t cpu;
	uint16_t tid;
	uint8_t kind; /* enum yrec_kind */
};

struct yrecs {
	struct yrec *v;
	size_t n, cap;
};

/* The records of one thread, contiguous in the array the reader's thread order produced. */
struct yseg {
	size_t start, count;
	int seen;
};

struct convert_opts {
	const char *input;
	const char *output;
	const char *map;   /* --map FILE; NULL: FILE.map when it exists */
	int use_map;       /* 0 with --no-map */
	int sort;
	int since;         /* 0: every record; SINCE_TSC: from since_tsc; SINCE_SNAPSHOT: the map's */
	uint64_t since_tsc;
	int format; /* enum convert_format */
};

enum { SINCE_TSC = 1, SINCE_SNAPSHOT = 2 };
enum convert_format { FORMAT_YAML = 0, FORMAT_TRACE_EVENT = 1 };

/* ---- llvm-xray's thread order ------------------------------------------------------------ */

/*
 * The DenseMap key is (process id, thread id) = (0, tid) for version 1. Its hash combines the
 * two 32-bit element hashes (each value * 37) with a 64-bit integer mix; we reproduce it to
 * get the same bucket for every key.
 */
static uint32_t llvm_key_hash(uint16_t tid)
{
	uint64_t k = (uint64_t)(uint32_t)(0u * 37u) << 32 | (uint32_t)(tid * 37u);

	k += ~(k << 32);
	k ^= k >> 22;
	k += ~(k << 13);
	k ^= k >> 8;
	k += k << 3;
	k ^= k >> 15;
	k += ~(k << 27);
	k ^= k >> 31;
	return (uint32_t)k;
}

struct llvm_map {
	int32_t *slot; /* thread id, or -1 when empty */
	uint32_t buckets, entries;
};

/* Quadratic probing (1, 2, 3, ... added), as DenseMap does; the caller ensured room. */
static void llvm_map_place(struct llvm_map *m, uint16_t tid)
{
	uint32_t mask = m->buckets - 1, b = llvm_key_hash(tid) & mask, step = 1;

	while (m->slot[b] >= 0) {
		if (m->slot[b] == tid)
			return;
		b = (b + step++) & mask;
	}
	m->slot[b] = tid;
}

static int llvm_map_has(const struct llvm_map *m, uint16_t tid)
{
	uint32_t mask, b, step = 1;

	if (!m->buckets)
		return 0;
	mask = m->buckets - 1;
	b = llvm_key_hash(tid) & mask;
	while (m->slot[b] >= 0) {
		if (m->slot[b] == tid)
			return 1;
		b = (b + step++) & mask;
	}
	return 0;
}

/*
 * Insert as DenseMap does: grow to twice the buckets (at least 64) when the table would
 * become three quarters full, re-inserting the old entries in bucket order. Returns -1 when
 * out of memory.
 */
static int llvm_map_insert(struct llvm_map *m, uint16_t tid)
{
	if (llvm_map_has(m, tid))
		return 0;
	if ((uint64_t)(m->entries + 1) * 4 >= (uint64_t)m->buckets * 3) {
		struct llvm_map g = {NULL, m->buckets ? m->buckets * 2 : 64, m->entries};
		uint32_t i;

		g.slot = malloc(sizeof(*g.slot) * g.buckets);
		if (!g.slot)
			return -1;
		memset(g.slot, 0xff, sizeof(*g.slot) * g.buckets);
		for (i = 0; i < m->buckets; i++) {
			if (m->slot[i] >= 0)
				llvm_map_place(&g, (uint16_t)m->slot[i]);
		}
		free(m->slot);
		*m = g;
	}
	llvm_map_place(m, tid);
	m->entries++;
	return 0;
}

/*
 * llvm_thread_rank - give each thread id its position in llvm-xray's output order.
 * tids_in_file_order: the thread id of every buffer, in file order (repeats are fine).
 * Fills rank[tid] for the ids present. Returns 0, or -1 when out of memory.
 */
static int llvm_thread_rank(const uint16_t *tids, size_t n, uint32_t *rank)
{
	struct llvm_map m = {NULL, 0, 0};
	uint32_t i, r = 0;
	size_t k;

	for (k = 0; k < n; k++) {
		if (llvm_map_insert(&m, tids[k]) < 0) {
			free(m.slot);
			return -1;
		}
	}
	for (i = 0; i < m.buckets; i++) {
		if (m.slot[i] >= 0)
			rank[m.slot[i]] = r++;
	}
	free(m.slot);
	return 0;
}

/* ---- Gathering --------------------------------------------------------------------------- */

static int yrecs_push(struct yrecs *r, const struct yrec *y)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 4096;
		struct yrec *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return -1;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = *y;
	return 0;
}

/*
 * The thread id of every buffer in file order, for llvm_thread_rank(). Usually every buffer
 * holds an event and gather() has seen them all; a buffer with none still takes its place in
 * llvm-xray's map, so then the NewBuffer records are read once more.
 */
static int buffer_threads(struct xfdr_trace *t, const uint16_t *buf_tid, const uint8_t *buf_seen,
			  uint64_t nbuf, uint16_t *out, struct xfdr_error *err)
{
	struct xfdr_record_cursor c;
	struct xfdr_record r;
	uint64_t i;
	int rc;

	for (i = 0; i < nbuf && buf_seen[i]; i++)
		out[i] = buf_tid[i];
	if (i == nbuf)
		return 0;
	xfdr_records_begin(t, &c);
	while ((rc = xfdr_records_next(&c, &r, err)) == 1) {
		if (r.is_metadata && r.kind == XFDR_MD_NEW_BUFFER && r.buffer_index < nbuf)
			out[r.buffer_index] = r.thread_id;
	}
	return rc;
}

/*
 * gather - every event of the verified trace, in llvm-xray's order before its sort: threads
 * by llvm_thread_rank(), each thread's events in buffer and file order. Fills *out and
 * *scratch (an array of the same size for sorting); the caller frees both. Events with a TSC
 * below since_tsc are left out (0 keeps all). Returns CLI_OK, or CLI_FAIL after reporting.
 */
static int gather(struct xfdr_trace *t, uint64_t since_tsc, struct yrecs *out,
		  struct yrec **scratch, struct cli_progress *prog)
{
	uint64_t nbuf = xfdr_trace_buffer_count(t), bufs_done = 0, last_buf = UINT64_MAX;
	struct yseg *seg = calloc(THREAD_IDS, sizeof(*seg));
	uint32_t *rank = calloc(THREAD_IDS, sizeof(*rank));
	uint16_t *buf_tid = calloc(nbuf ? nbuf : 1, sizeof(*buf_tid));
	uint16_t *file_tids = calloc(nbuf ? nbuf : 1, sizeof(*file_tids));
	uint8_t *buf_seen = calloc(nbuf ? nbuf : 1, 1);
	struct yrecs recs = {NULL, 0, 0};
	struct xfdr_event_iter it;
	struct xfdr_error err;
	struct xfdr_event ev;
	int32_t cur = -1;
	int32_t *by_rank = malloc(THREAD_IDS * sizeof(*by_rank));
	uint32_t last_fid = 0, tid, r;
	int rc, status = CLI_FAIL;

	if (!seg || !rank || !buf_tid || !file_tids || !buf_seen || !by_rank)
		goto oom;
	if (xfdr_events_begin(t, XFDR_ORDER_THREAD, &it, &err) < 0) {
		cli_error("%s", err.text);
		goto out;
	}
	while ((rc = xfdr_events_next(&it, &ev, &err)) == 1) {
		struct yrec y;

		if ((int32_t)ev.thread_id != cur) {
			if (seg[ev.thread_id].seen) {
				cli_error("%s: reader returned thread %u twice", xfdr_trace_name(t),
					  ev.thread_id);
				goto out;
			}
			if (cur >= 0)
				seg[cur].count = recs.n - seg[cur].start;
			cur = ev.thread_id;
			seg[cur].seen = 1;
			seg[cur].start = recs.n;
			last_fid = 0; /* llvm-xray expands each thread afresh */
		}
		if (ev.buffer_index != last_buf) {
			last_buf = ev.buffer_index;
			if (last_buf < nbuf) {
				buf_seen[last_buf] = 1;
				buf_tid[last_buf] = ev.thread_id;
			}
			cli_progress_update(prog, ++bufs_done, nbuf);
		}
		memset(&y, 0, sizeof(y));
		y.tsc = ev.tsc;
		y.tid = ev.thread_id;
		if (ev.type == XFDR_EVENT_CUSTOM) {
			y.kind = YK_CUSTOM;
			y.fid = last_fid;
			y.ptr = ev.payload;
			y.count = ev.payload_bytes;
		} else {
			y.kind = (uint8_t)ev.action;
			y.fid = last_fid = ev.function_id;
			y.cpu = ev.cpu;
			y.ptr = ev.args;
			y.count = ev.arg_count;
		}
		if (ev.tsc < since_tsc)
			continue;
		if (yrecs_push(&recs, &y) < 0)
			goto oom;
	}
	if (rc < 0) {
		cli_error("%s", err.text);
		goto out;
	}
	if (cur >= 0)
		seg[cur].count = recs.n - seg[cur].start;

	if (buffer_threads(t, buf_tid, buf_seen, nbuf, file_tids, &err) < 0) {
		cli_error("%s", err.text);
		goto out;
	}
	if (llvm_thread_rank(file_tids, nbuf, rank) < 0)
		goto oom;

	/* Lay the threads' segments out in rank order; ranks are 0.. without gaps. */
	out->v = malloc((recs.n ? recs.n : 1) * sizeof(*out->v));
	if (!out->v)
		goto oom;
	for (tid = 0; tid < THREAD_IDS; tid++)
		by_rank[tid] = -1;
	for (tid = 0; tid < THREAD_IDS; tid++) {
		if (seg[tid].seen)
			by_rank[rank[tid]] = (int32_t)tid;
	}
	out->n = 0;
	for (r = 0; r < THREAD_IDS; r++) {
		/* A thread whose records all fell before --since has none (and recs.v may be NULL). */
		if (by_rank[r] < 0 || !seg[by_rank[r]].count)
			continue;
		memcpy(out->v + out->n, recs.v + seg[by_rank[r]].start,
		       seg[by_rank[r]].count * sizeof(*out->v));
		out->n += seg[by_rank[r]].count;
	}
	/* The gathering array, now free and of the right size, is the sort's scratch space. */
	*scratch = recs.v;
	recs.v = NULL;
	out->cap = out->n;
	status = CLI_OK;
	goto out;
oom:
	cli_error("%s: out of memory", xfdr_trace_name(t));
out:
	free(recs.v);
	free(seg);
	free(rank);
	free(buf_tid);
	free(file_tids);
	free(buf_seen);
	free(by_rank);
	return status;
}

/* ---- Sorting ----------------------------------------------------------------------------- */

/*
 * Stable sort by TSC (llvm-xray's --sort, on by default): a natural merge sort. Each
 * thread's records are mostly ascending already, so there are few runs and few passes.
 * Sorts a[0, n) using tmp (n entries); returns whichever of the two holds the result.
 */
static struct yrec *sort_by_tsc(struct yrec *a, struct yrec *tmp, size_t n)
{
	struct yrec *src = a, *dst = tmp, *swap;
	size_t runs;

	if (n < 2)
		return a;
	do {
		size_t i = 0;

		runs = 0;
		while (i < n) {
			size_t mid = i + 1, end, l, r, k;

			while (mid < n && src[mid - 1].tsc <= src[mid].tsc)
				mid++;
			end = mid < n ? mid + 1 : n;
			while (end < n && src[end - 1].tsc <= src[end].tsc)
				end++;
			/* Left first on equal keys keeps the sort stable. */
			l = i;
			r = mid;
			k = i;
			while (l < mid && r < end)
				dst[k++] = src[r].tsc < src[l].tsc ? src[r++] : src[l++];
			memcpy(dst + k, src + l, (mid - l) * sizeof(*dst));
			k += mid - l;
			memcpy(dst + k, src + r, (end - r) * sizeof(*dst));
			runs++;
			i = end;
		}
		swap = src;
		src = dst;
		dst = swap;
	} while (runs > 1);
	return src;
}

/* ---- YAML ---------------------------------------------------------------------------------- */

static void put_header(struct cli_out *o, const struct xfdr_header *h)
{
	cli_puts(o, "---\nheader:\n  version:         ");
	cli_put_u64(o, h->version);
	cli_puts(o, "\n  type:            ");
	cli_put_u64(o, h->type);
	cli_puts(o, "\n  constant-tsc:    ");
	cli_puts(o, h->constant_tsc ? "true" : "false");
	cli_puts(o, "\n  nonstop-tsc:     ");
	cli_puts(o, h->nonstop_tsc ? "true" : "false");
	cli_puts(o, "\n  cycle-frequency: ");
	cli_put_u64(o, h->cycle_frequency);
	cli_putc(o, '\n');
}

static void put_record(struct cli_out *o, const struct xfdr_trace *t, const struct yrec *y,
		       const struct xfdr_names *names)
{
	const char *name = xfdr_names_get(names, y->fid);

	cli_puts(o, "  - { type: 0, func-id: ");
	cli_put_u64(o, y->fid);
	/*
	 * Named from the sidecar, as `llvm-xray convert -m BINARY -symbolize` names them, and
	 * like it '#ID' for an id the map does not name; without a map, as llvm-xray without
	 * one, the id as a quoted number.
	 */
	if (name) {
		cli_puts(o, ", function: ");
		cli_yaml_scalar(o, (const uint8_t *)name, strlen(name));
	} else {
		cli_puts(o, names ? ", function: '#" : ", function: '");
		cli_put_u64(o, y->fid);
		cli_putc(o, '\'');
	}
	if (y->kind == YK_ENTER_ARGS && y->count) {
		struct xfdr_event ev;
		uint32_t i;

		memset(&ev, 0, sizeof(ev));
		ev.type = XFDR_EVENT_FUNCTION;
		ev.action = XFDR_FN_ENTER_ARGS;
		ev.args = y->ptr;
		ev.arg_count = y->count;
		cli_puts(o, ", args: [ ");
		for (i = 0; i < y->count; i++) {
			if (i)
				cli_puts(o, ", ");
			cli_put_u64(o, xfdr_event_arg(t, &ev, i));
		}
		cli_puts(o, " ]");
	}
	cli_puts(o, ", cpu: ");
	cli_put_u64(o, y->cpu);
	if (y->tid) {
		cli_puts(o, ", thread: ");
		cli_put_u64(o, y->tid);
	}
	cli_puts(o, ", kind: ");
	cli_puts(o, yrec_kind_name[y->kind]);
	cli_puts(o, ", tsc: ");
	cli_put_u64(o, y->tsc);
	cli_puts(o, ", data: ");
	if (y->kind == YK_CUSTOM)
		cli_yaml_scalar(o, y->ptr, y->count);
	else
		cli_puts(o, "''");
	cli_puts(o, " }\n");
}

/* ---- The verb ---------------------------------------------------------------------------- */

static void convert_help(void)
{
	fputs(
	    "usage: xfdr convert [--output-format=yaml] [-o OUT] [--sort[=BOOL]] [--map MAP |\n"
	    "                    --no-map] [--since=TSC|snapshot] FILE\n"
	    "\n"
	    "Print a trace as the YAML document `llvm-xray convert --output-format=yaml FILE`\n"
	    "prints, byte for byte. The whole file is verified first: an invalid trace prints\n"
	    "nothing but one line on stderr naming the offset and what was wrong.\n"
	    "\n"
	    "  -f, --output-format=FMT  output format; only 'yaml' (the default)\n"
	    "  -o, --output=OUT         write to OUT instead of standard output ('-')\n"
	    "  -s, --sort[=BOOL]        stable-sort all records by TSC (default: true, as in\n"
	    "                           llvm-xray); --sort=false keeps each thread's records in\n"
	    "                           recording order, threads in llvm-xray's order\n"
	    "      --map=MAP            name functions from MAP, a .map sidecar the runtime\n"
	    "                           wrote (default: FILE.map when it exists)\n"
	    "      --no-map             print function ids only, exactly as llvm-xray without\n"
	    "                           an instrumentation map\n"
	    "      --since=TSC|snapshot leave out the records with a TSC below TSC (a call that\n"
	    "                           began before keeps its exit); 'snapshot': the since_tsc\n"
	    "                           that a snapshot flush wrote into the .map sidecar (MAP,\n"
	    "                           or FILE.map even with --no-map)\n"
	    "  -h, --help               show this help\n"
	    "\n"
	    "Options may also be written with one dash, as llvm-xray accepts them (-sort=false).\n"
	    "Exit status: 0 converted, 1 invalid trace or write error, 2 usage error or\n"
	    "unreadable FILE.\n",
	    stdout);
}

/* llvm-xray's boolean option values. Returns 0 or 1, or -1 for anything else. */
static int parse_bool(const char *s)
{
	static const char *const yes[] = {"true", "TRUE", "True", "1"};
	static const char *const no[] = {"false", "FALSE", "False", "0"};
	size_t i;

	for (i = 0; i < 4; i++) {
		if (!strcmp(s, yes[i]))
			return 1;
		if (!strcmp(s, no[i]))
			return 0;
	}
	return -1;
}

static int parse_convert_opts(int argc, char **argv, struct convert_opts *o)
{
	static const struct option longopts[] = {
	    {"output-format", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"sort", optional_argument, NULL, 's'},
	    {"map", required_argument, NULL, 'm'},
	    {"no-map", no_argument, NULL, 'M'},
	    {"since", required_argument, NULL, 'T'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	char *end;
	int c, v;

	o->input = NULL;
	o->output = NULL;
	o->sort = 1;
	o->map = NULL;
	o->use_map = 1;
	o->since = 0;
	o->since_tsc = 0;
	o->format = FORMAT_YAML;
	opterr = 0;
	optind = 0; /* GNU: start a fresh scan */
	/* getopt_long_only, so llvm-xray's single-dash spellings (-output-format=yaml) work. */
	while ((c = getopt_long_only(argc, argv, ":f:o:sh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (!strcmp(optarg, "yaml"))
				o->format = FORMAT_YAML;
			else if (!strcmp(optarg, "trace_event"))
				o->format = FORMAT_TRACE_EVENT;
			else
				return cli_usage("unsupported output format '%s' (supported: yaml, "
						 "trace_event)",
						 optarg);
			break;
		case 'o':
			o->output = optarg;
			break;
		case 's':
			if (!optarg) {
				o->sort = 1;
				break;
			}
			v = parse_bool(optarg);
			if (v < 0)
				return cli_usage("'--sort' takes true or false, not '%s'", optarg);
			o->sort = v;
			break;
		case 'm':
			o->map = optarg;
			break;
		case 'M':
			o->use_map = 0;
			break;
		case 'T':
			if (!strcmp(optarg, "snapshot")) {
				o->since = SINCE_SNAPSHOT;
				break;
			}
			errno = 0;
			o->since_tsc = strtoull(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end || errno)
				return cli_usage("'--since' takes a TSC (a decimal number) or "
						 "'snapshot', not '%s'",
						 optarg);
			o->since = SINCE_TSC;
			break;
		case 'h':
			convert_help();
			return -1;
		default:
			return cli_bad_option(argv, c, optopt);
		}
	}
	if (cli_one_operand(argc, argv, "FILE", &o->input))
		return CLI_USAGE;
	if (o->map && !o->use_map)
		return cli_usage("--map and --no-map exclude each other");
	return 0;
}

int cmd_convert(int argc, char **argv)
{
	struct convert_opts opt;
	struct xfdr_trace *t = NULL;
	struct yrec *scratch = NULL, *sorted;
	struct yrecs recs = {NULL, 0, 0};
	struct cli_progress prog;
	struct cli_out *out = NULL;
	struct xfdr_names *names = NULL;
	const char *map;
	char sidecar[4096];
	struct xfdr_error err;
	struct stat st;
	size_t i;
	int status;

	status = parse_convert_opts(argc, argv, &opt);
	if (status)
		return status < 0 ? CLI_OK : status;
	status = cli_check_input(opt.input);
	if (status)
		return status;
	/* Writing the output over the input would truncate the mapping the records point into. */
	if (opt.output && strcmp(opt.output, "-") && cli_same_file(opt.input, opt.output))
		return cli_usage("output '%s' is the input file", opt.output);
	map = cli_sidecar(opt.input, opt.map, sidecar, sizeof(sidecar));
	if (opt.since == SINCE_SNAPSHOT) {
		if (!map) {
			cli_error(
			    "--since=snapshot: %s.map: %s (the window of a snapshot is in its "
			    ".map sidecar)",
			    opt.input, strerror(ENOENT));
			return CLI_USAGE;
		}
		status = cli_names_load(map, &names);
		if (status)
			return status;
		if (!xfdr_names_since_tsc(names, &opt.since_tsc)) {
			cli_error("--since=snapshot: %s has no since_tsc line: not the sidecar of "
				  "a snapshot",
				  map);
			xfdr_names_free(names);
			return CLI_USAGE;
		}
		/* --no-map: the sidecar gives the window, not the names. */
		if (!opt.use_map) {
			xfdr_names_free(names);
			names = NULL;
		}
	} else if (opt.use_map) {
		status = cli_names_load(map, &names);
		if (status)
			return status;
	}

	cli_progress_begin(&prog, stat(opt.input, &st) == 0 ? (uint64_t)st.st_size : 0,
			   "verifying");
	status = CLI_FAIL;
	if (xfdr_trace_open(opt.input, &t, &err) < 0 || xfdr_trace_verify(t, &err) < 0) {
		cli_progress_end(&prog);
		fprintf(stderr, "%s\n", err.text);
		goto out;
	}
	if (opt.format == FORMAT_TRACE_EVENT) {
		out = malloc(sizeof(*out));
		if (!out) {
			cli_error("out of memory");
			goto out;
		}
		if (cli_out_open(out, opt.output) != 0) {
			free(out);
			out = NULL;
			goto out;
		}
		cli_progress_phase(&prog, "writing");
		status = convert_trace_event(t, names, opt.since ? opt.since_tsc : 0, out, &prog);
		cli_progress_end(&prog);
		if (cli_out_close(out) != CLI_OK)
			status = CLI_FAIL;
		goto out;
	}
	cli_progress_phase(&prog, "reading");
	if (gather(t, opt.since ? opt.since_tsc : 0, &recs, &scratch, &prog) != CLI_OK)
		goto out;
	sorted = recs.v;
	if (opt.sort) {
		cli_progress_phase(&prog, "sorting");
		sorted = sort_by_tsc(recs.v, scratch, recs.n);
	}

	out = malloc(sizeof(*out));
	if (!out) {
		cli_error("out of memory");
		goto out;
	}
	if (cli_out_open(out, opt.output) != 0) {
		free(out);
		out = NULL;
		goto out;
	}
	/* Progress and a YAML stream on the same terminal would garble each other. */
	if (isatty(fileno(out->f))) {
		cli_progress_end(&prog);
		prog.on = 0;
	}
	cli_progress_phase(&prog, "writing");
	put_header(out, xfdr_trace_header(t));
	if (recs.n == 0) {
		cli_puts(out, "records:         []\n");
	} else {
		cli_puts(out, "records:\n");
		for (i = 0; i < recs.n && !out->err; i++) {
			put_record(out, t, &sorted[i], names);
			if ((i & 0xffff) == 0)
				cli_progress_update(&prog, i, recs.n);
		}
	}
	cli_puts(out, "...\n");
	cli_progress_end(&prog);
	status = cli_out_close(out);
out:
	cli_progress_end(&prog);
	free(out);
	free(recs.v);
	free(scratch);
	xfdr_names_free(names);
	if (t)
		xfdr_trace_close(t);
	return status;
}
