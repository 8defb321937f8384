/*
 * bench/gen_big_trace.c - record one large FDR v1 trace with libxfdr, for the reader-verb table.
 *
 * usage: gen_big_trace -o FILE [-t THREADS] [-b BUFFER_BYTES] [-n BUFFERS] [-s SEED]
 *                      [-S random|program]
 *
 * THREADS threads (default 2) run at once, each a deterministic random call tree (splitmix64
 * seeded by SEED and the thread's index): nested calls up to 15 deep over 240 function ids, a
 * little work in each call so durations differ, one entry in 16 with two arguments
 * (Entry_Args), now and then a recursive chain. Which function calls which is the shape:
 *  - random (the default): any function calls any (a few hot ones, a long tail), so nearly
 *    every call has a stack of its own: the worst case for a stack tree;
 *  - program: as a program's call graph, each function calls its own two (ids 2k and 2k + 1,
 *    up to 224) and 16 shared helpers (225 to 240, which call nothing): some tens of thousands
 *    of distinct stacks however long the run. Recording goes through
 * XFDR_ENTER/XFDR_ENTER_ARGS/XFDR_EXIT and the runtime's own flush, so the file is what a real
 * recording is: per-thread buffers in flush order, NewCPUId on migrations, stack-context events
 * where a buffer begins inside calls, real TSCs, the drop-count buffer of thread 0.
 *
 * The shape is chosen so that llvm-xray 14 reads the file correctly with every verb:
 *  - Each thread records exactly the record bytes that fill BUFFERS buffers (default 13) of
 *    BUFFER_BYTES (default 4 MiB) but the last quarter of the last one, every call completed,
 *    so it never needs one buffer more, whatever its migrations cost. llvm-xray orders a
 *    thread's buffers with a comparator that is not a strict weak order ("seconds < and
 *    microseconds <"), which libstdc++'s std::sort leaves in file order only for up to 16
 *    elements; with more, `account` and `stack` see calls out of order and fail.
 *  - Thread k + 1 starts only once thread k has recorded its first entry, so thread ids
 *    (given at a thread's first event) follow the first TSCs. `llvm-xray account` does not
 *    sort: it walks the threads in its hash map's order and rejects any record below the first
 *    one it met. With ids 0 (the drop buffer), 1 and 2 it meets thread 1 first, which then
 *    holds the earliest record; with 3 or more threads it meets thread 3 first and fails.
 * The pool is bounded and larger than needed; the program fails unless the .map reports
 * THREADS x BUFFERS buffers and no drop.
 *
 * Deterministic: every thread's calls, their order, arguments and count (so the number of
 * records and the file's size), and its thread id. Not: TSCs and CPUs. The flushed file and
 * its .map are renamed to FILE and FILE.map.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xfdr/format.h"
#include "xfdr/xfdr.h"

#define FUNCS 240u
#define MAX_DEPTH 15u
#define MAX_THREADS 64u
#define ARGS_BYTES (XFDR_FN_RECORD_BYTES + 2 * XFDR_MD_RECORD_BYTES) /* Entry_Args + 2 args */

struct worker {
	pthread_t th;
	int program; /* the shape: 0 random, 1 program */
	uint64_t seed;
	uint64_t bytes_left; /* record bytes this thread may still write, exits prepaid */
	uint64_t calls;
	int started; /* set once the thread's first entry is recorded */
	volatile uint64_t sink;
};

static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Three calls in four go to 16 hot functions, the rest anywhere among FUNCS. */
static uint32_t pick_fid(uint64_t *s)
{
	uint64_t r = next_rand(s);

	if ((r & 3) != 0)
		return 1 + (uint32_t)((r >> 8) % 16);
	return 1 + (uint32_t)((r >> 8) % FUNCS);
}

#define PROGRAM_TREE 224u /* the program shape's functions that call others; helpers above */

/* The program shape's callee of fid: one of its own two, or a helper. */
static uint32_t program_fid(uint32_t fid, uint64_t r)
{
	if ((r & 1) && 2 * fid + 1 <= PROGRAM_TREE)
		return 2 * fid + (uint32_t)((r >> 1) & 1);
	return PROGRAM_TREE + 1 + (uint32_t)((r >> 2) % (FUNCS - PROGRAM_TREE));
}

/* One call with its children; the entry and its exit are paid before the entry is made. */
static void call(struct worker *w, uint32_t fid, unsigned depth, uint64_t *s)
{
	uint64_t r = next_rand(s);
	int with_args = (r & 15) == 0;
	uint64_t cost = (with_args ? ARGS_BYTES : XFDR_FN_RECORD_BYTES) + XFDR_FN_RECORD_BYTES;
	unsigned kids, i, spin;

	if (w->bytes_left < cost) {
		w->bytes_left = 0;
		return;
	}
	w->bytes_left -= cost;
	w->calls++;
	if (with_args)
		XFDR_ENTER_ARGS(fid, r >> 32, depth);
	else
		XFDR_ENTER(fid);
	if (w->calls == 1)
		__atomic_store_n(&w->started, 1, __ATOMIC_RELEASE);
	/* Work: 0..63 cheap iterations, so calls last from tens of ns to a few us. */
	spin = (unsigned)(r >> 10) & 63;
	for (i = 0; i < spin; i++)
		w->sink += i * r;
	/* Fewer children deeper down keeps the tree bounded. */
	kids = depth + 1 >= MAX_DEPTH || (w->program && fid > PROGRAM_TREE)
		   ? 0
		   : (unsigned)((r >> 20) % (depth < 3 ? 6 : 4));
	for (i = 0; i < kids && w->bytes_left; i++) {
		/* A recursive chain now and then: the same function inside itself. */
		uint32_t child = ((r >> 28) & 31) == 0 ? fid
				 : w->program	       ? program_fid(fid, next_rand(s))
						       : pick_fid(s);

		call(w, child, depth + 1, s);
	}
	XFDR_EXIT(fid);
}

static void *run(void *arg)
{
	struct worker *w = arg;
	uint64_t s = w->seed;

	while (w->bytes_left)
		call(w, w->program ? 1 : 1 + (uint32_t)(next_rand(&s) % 4), 0, &s);
	return NULL;
}

/* The value of "key\tVALUE" in the .map, or -1. */
static long long map_value(const char *map, const char *key)
{
	char line[512];
	size_t n = strlen(key);
	long long v = -1;
	FILE *f = fopen(map, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, n) && line[n] == '\t') {
			v = strtoll(line + n + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

static int usage(const char *me)
{
	fprintf(stderr,
		"usage: %s -o FILE [-t THREADS] [-b BUFFER_BYTES] [-n BUFFERS] [-s SEED] "
		"[-S random|program]\n",
		me);
	return 2;
}

int main(int argc, char **argv)
{
	static struct worker w[MAX_THREADS];
	struct xfdr_options o;
	const char *out = NULL;
	char path[4096], map_from[4200], map_to[4200];
	unsigned long threads = 2, buf_bytes = 4u << 20, per_thread = 13;
	uint64_t seed = 20240610, calls = 0;
	long long written, dropped;
	int c, rc, program = 0;
	unsigned i;

	while ((c = getopt(argc, argv, "o:t:b:n:s:S:")) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 't':
			threads = strtoul(optarg, NULL, 0);
			break;
		case 'b':
			buf_bytes = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			per_thread = strtoul(optarg, NULL, 0);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'S':
			if (strcmp(optarg, "random") && strcmp(optarg, "program"))
				return usage(argv[0]);
			program = !strcmp(optarg, "program");
			break;
		default:
			return usage(argv[0]);
		}
	}
	if (!out || optind != argc || threads < 1 || threads > MAX_THREADS || per_thread < 1 ||
	    buf_bytes < 65536 || buf_bytes % 8)
		return usage(argv[0]);

	xfdr_options_default(&o);
	o.buffer_size = buf_bytes;
	o.buffer_max = threads * (per_thread + 2) + 1;
	o.mode = XFDR_MODE_BOUNDED;
	o.flush_at_exit = 0;
	o.flush_on_crash = 0;
	snprintf(path, sizeof(path), "%s.part-gen", out);
	o.output = path;
	rc = xfdr_init(&o);
	if (rc == 0)
		rc = xfdr_start();
	if (rc != 0) {
		fprintf(stderr, "gen_big_trace: xfdr set-up: %s\n", strerror(-rc));
		return 1;
	}
	for (i = 0; i < threads; i++) {
		w[i].seed = seed ^ (0x100000001b3ull * (i + 1));
		w[i].program = program;
		/* A quarter buffer of slack: preambles, EndOfBuffers, NewCPUIds, stack contexts. */
		w[i].bytes_left = (uint64_t)buf_bytes * per_thread - buf_bytes / 4;
		if (pthread_create(&w[i].th, NULL, run, &w[i]) != 0) {
			fprintf(stderr, "gen_big_trace: pthread_create failed\n");
			return 1;
		}
		/*
		 * The next thread starts once this one has recorded: thread ids (given at a
		 * thread's first event) then follow the order of the threads' first TSCs, which
		 * llvm-xray account needs (see the comment at the top).
		 */
		while (!__atomic_load_n(&w[i].started, __ATOMIC_ACQUIRE))
			sched_yield();
	}
	for (i = 0; i < threads; i++) {
		pthread_join(w[i].th, NULL);
		calls += w[i].calls;
	}
	xfdr_stop();
	rc = xfdr_flush(path, sizeof(path));
	if (rc != 0) {
		fprintf(stderr, "gen_big_trace: flush: %s\n", strerror(-rc));
		return 1;
	}
	snprintf(map_from, sizeof(map_from), "%s.map", path);
	snprintf(map_to, sizeof(map_to), "%s.map", out);
	written = map_value(map_from, "buffers_written");
	dropped = map_value(map_from, "dropped\ttotal");
	if (written != (long long)(threads * per_thread) || dropped != 0) {
		fprintf(
		    stderr,
		    "gen_big_trace: %s: %lld buffers, %lld events dropped; expected %lu and 0\n",
		    map_from, written, dropped, threads * per_thread);
		unlink(path);
		unlink(map_from);
		return 1;
	}
	if (rename(path, out) != 0 || rename(map_from, map_to) != 0) {
		fprintf(stderr, "gen_big_trace: rename %s: %s\n", path, strerror(errno));
		return 1;
	}
	printf("%s: %lu threads x %lu buffers of %lu bytes, %" PRIu64 " calls\n", out, threads,
	       per_thread, buf_bytes, calls);
	return 0;
}
