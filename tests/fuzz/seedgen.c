/*
 * tests/fuzz/seedgen.c - seeds for the fuzz targets, made at build time (nothing of it is
 * committed but the source): what the runtime writes, and the versions 2 to 5 the reader
 * reads.
 *
 *   seedgen DIR   writes DIR/reader/ (traces, each also with its .map appended after the
 *                 fuzz_reader marker), DIR/names/ (.map sidecars), DIR/pool/ (fuzz_pool
 *                 inputs: a locator, descriptors and live buffers; and a core file),
 *                 DIR/recover/ (fuzz_recover inputs: a live file or trace with and without
 *                 its .pool and .map after their markers), DIR/options/ (XFDR_OPTIONS
 *                 strings), DIR/record/ (fuzz_record's: DIR/reader/'s again) and an empty
 *                 DIR/elf/ (fuzz_elf's seeds are the small ELF files committed in
 *                 tests/fuzz/corpus/elf.tar.xz)
 *
 * The runtime's files come from forked children that record with the manual API (ring and
 * bounded pools small enough to overwrite and drop, arguments, custom events, tail exits,
 * short-call elision, a snapshot window, two threads, a crash, and backing=file ended by
 * SIGKILL), each child ending with _exit. The versions 2 to 5 are laid out byte by byte as
 * tests/system/test_reader_versions.c builds them, in both byte orders. The pool scenario is
 * tests/support/pool_layout.h's.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/pool_layout.h"
#include "tests/support/version_enc.h"
#include "xfdr/format.h"
#include "xfdr/xfdr.h"

#define FUZZ_MAP_MARK "\n#XFDR-FUZZ-MAP#\n"
#define FUZZ_POOL_MARK "\n#XFDR-FUZZ-POOL#\n"

static const char *out_dir;
static unsigned seq;

static void die(const char *what)
{
	fprintf(stderr, "seedgen: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void put_file(const char *path, const void *a, size_t an, const void *b, size_t bn)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(a, 1, an, f) != an || (bn && fwrite(b, 1, bn, f) != bn) || fclose(f))
		die(path);
}

static void seed(const char *target, const char *name, const void *a, size_t an, const void *b,
		 size_t bn)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s/%03u-%s", out_dir, target, seq++, name);
	put_file(path, a, an, b, bn);
	/* fuzz_record reads what fuzz_reader reads: a trace and its .map after the marker. */
	if (!strcmp(target, "reader")) {
		snprintf(path, sizeof(path), "%s/record/%03u-%s", out_dir, seq++, name);
		put_file(path, a, an, b, bn);
	}
}

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p = NULL;
	size_t cap = 0, len = 0, r;

	if (!f)
		return NULL;
	do {
		if (len == cap) {
			cap = cap ? 2 * cap : 65536;
			p = realloc(p, cap);
			if (!p)
				die("realloc");
		}
		r = fread(p + len, 1, cap - len, f);
		len += r;
	} while (r);
	fclose(f);
	*n = len;
	return p;
}

/* ---- the runtime's files ----------------------------------------------------------------- */

static void set(struct xfdr_options *o, const char *k, const char *v)
{
	if (xfdr_options_set(o, k, v))
		_exit(3);
}

static void calls(int depth, uint32_t base)
{
	uint64_t args[3] = {depth, base, 0xdeadbeef};

	if (depth == 0)
		return;
	if (depth % 3 == 0)
		xfdr_enter_args(base + (uint32_t)depth, args, 3);
	else
		xfdr_enter(base + (uint32_t)depth);
	if (depth % 5 == 0)
		xfdr_custom_event("custom-payload", 14);
	calls(depth - 1, base);
	calls(depth / 3, base + 100);
	if (depth % 7 == 0)
		xfdr_tail_exit(base + (uint32_t)depth);
	else
		xfdr_exit(base + (uint32_t)depth);
}

static void *thread_main(void *arg)
{
	calls(12, (uint32_t)(uintptr_t)arg);
	return NULL;
}

/* A child that records as `opts` says ("k=v k=v"), then does `how`; waits for it. */
enum how { FLUSH, SNAPSHOT, THREADS, CRASH, KILL };

static void record(const char *name, const char *opts, enum how how)
{
	char prefix[4096];
	pid_t pid;
	int st;

	snprintf(prefix, sizeof(prefix), "%s/rec/%s", out_dir, name);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		struct xfdr_options o;
		char buf[512], *save = NULL, *item, *eq, path[4096];
		uint64_t since;
		pthread_t th[2];

		xfdr_options_default(&o);
		snprintf(buf, sizeof(buf), "%s", opts);
		for (item = strtok_r(buf, " ", &save); item; item = strtok_r(NULL, " ", &save)) {
			eq = strchr(item, '=');
			*eq = '\0';
			set(&o, item, eq + 1);
		}
		set(&o, "output", prefix);
		set(&o, "flush_at_exit", "0");
		if (xfdr_init(&o) || xfdr_start())
			_exit(4);
		calls(6, 1);
		since = xfdr_now();
		calls(20, 1000);
		switch (how) {
		case FLUSH:
			xfdr_flush(path, sizeof(path));
			break;
		case SNAPSHOT:
			xfdr_flush_since(since, path, sizeof(path));
			break;
		case THREADS:
			pthread_create(&th[0], NULL, thread_main, (void *)(uintptr_t)2000);
			pthread_create(&th[1], NULL, thread_main, (void *)(uintptr_t)3000);
			pthread_join(th[0], NULL);
			pthread_join(th[1], NULL);
			xfdr_flush(path, sizeof(path));
			break;
		case CRASH:
			xfdr_enter(77);
			raise(SIGSEGV);
			break;
		case KILL:
			xfdr_enter(78);
			raise(SIGKILL);
			break;
		}
		_exit(0);
	}
	if (waitpid(pid, &st, 0) < 0)
		die("waitpid");
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

static void pool_seed(const char *name, const uint8_t *pool, size_t pool_bytes, const uint8_t *live,
		      size_t live_bytes)
{
	size_t n = 5 + pool_bytes;
	uint8_t *p = malloc(n);

	if (!p)
		die("malloc");
	p[0] = 1; /* with a locator */
	p[1] = (uint8_t)pool_bytes;
	p[2] = (uint8_t)(pool_bytes >> 8);
	p[3] = (uint8_t)(pool_bytes >> 16);
	p[4] = (uint8_t)(pool_bytes >> 24);
	memcpy(p + 5, pool, pool_bytes);
	seed("pool", name, p, n, live, live_bytes);
	free(p);
}

/*
 * A sidecar in the runtime's layout with what the manual API never writes: a function group
 * (runtime/flush/map_functions.c: cyg ids, one unnamed, and the <unassigned> id), a snapshot's
 * since_tsc, and a crash with its frames. One group: the ids of two overlap, and the reader
 * refuses a sidecar that names an id twice.
 */
static const char functions_map[] =
    "xfdr-map\t1\npid\t11181\nprogram\tbuild/examples/cyg_sort\n"
    "trace\tbuild/demo/xfdr-cyg_sort-11181-0.xray\ntsc_hz\t2596166090\n"
    "tsc_hz_method\tcalibrated\nclock\trdtsc+rseq\nconstant_tsc\t1\nnonstop_tsc\t1\n"
    "buffer_size\t65536\nbuffer_max\t256\nmode\tring\nfunc_duration_threshold_us\t0\n"
    "since_tsc\t123456789\nbuffers_written\t14\nbuffers_reused_in_flush\t0\n"
    "dropped\tno_buffer\t0\ndropped\ttotal\t0\noverwritten\t0\nelided\t0\n"
    "stack_overflow\t0\noverwritten_events\t0\n"
    "crash\t11\tSIGSEGV\t1\t0x0\t21771\n"
    "frame\t0\t0x5559cd1d0ee2\tcrash_c\t/work/main/build/tests/test_runtime_crash\t0x5ee2\n"
    "frame\t1\t0x5559cd1d0f08\t<unknown>\t-\t-\n"
    "thread\t11181\t1\tcyg_sort\t0\t0\t0\t0\t0\t0\t0\n"
    "thread\t11182\t2\t<unknown>\t0\t0\t0\t0\t0\t0\t0\n"
    "functions\tcyg\t3\n"
    "function\t1\tmain\t0x55f9d5d7c0b0\t/work/main/build/examples/cyg_sort\t0x10b0\n"
    "function\t2\t<unknown>\t0x7f0000001000\t-\t-\n"
    "function\t3\t_Z4fillPii\t0x55f9d5d7c4a0\t/work/main/build/examples/cyg_sort\t0x14a0\n"
    "function\t268435455\t<unassigned>\t-\t-\t-\n"
    "functions_unnamed\t1\nfunctions_unassigned\toverflow\t4\n";

/* FILE, then its .pool and .map (each when given) after fuzz_recover's markers. */
static void recover_seed(const char *name, const uint8_t *live, size_t live_bytes,
			 const uint8_t *pool, size_t pool_bytes, const uint8_t *map,
			 size_t map_bytes)
{
	size_t pm = sizeof(FUZZ_POOL_MARK) - 1, mm = sizeof(FUZZ_MAP_MARK) - 1, n = 0;
	uint8_t *p = malloc(live_bytes + pm + pool_bytes + mm + map_bytes);

	if (!p)
		die("malloc");
	memcpy(p, live, live_bytes);
	n = live_bytes;
	if (pool) {
		memcpy(p + n, FUZZ_POOL_MARK, pm);
		memcpy(p + n + pm, pool, pool_bytes);
		n += pm + pool_bytes;
	}
	if (map) {
		memcpy(p + n, FUZZ_MAP_MARK, mm);
		memcpy(p + n + mm, map, map_bytes);
		n += mm + map_bytes;
	}
	seed("recover", name, p, n, NULL, 0);
	free(p);
}

/* A trace or live file of DIR/rec/ with what it has of .pool and .map, in each combination. */
static void recover_seeds(const char *path, const char *name, const uint8_t *live,
			  size_t live_bytes)
{
	char other[4700];
	uint8_t *pool, *map;
	size_t pool_bytes = 0, map_bytes = 0;

	snprintf(other, sizeof(other), "%.4600s.pool", path);
	pool = slurp(other, &pool_bytes);
	snprintf(other, sizeof(other), "%.4600s.map", path);
	map = slurp(other, &map_bytes);
	recover_seed(name, live, live_bytes, NULL, 0, NULL, 0);
	if (map)
		recover_seed(name, live, live_bytes, NULL, 0, map, map_bytes);
	if (pool)
		recover_seed(name, live, live_bytes, pool, pool_bytes, NULL, 0);
	if (pool && map)
		recover_seed(name, live, live_bytes, pool, pool_bytes, map, map_bytes);
	if (pool)
		recover_seed(name, live, live_bytes, pool, pool_bytes,
			     (const uint8_t *)functions_map, sizeof(functions_map) - 1);
	free(pool);
	free(map);
}

/* Everything the children left in DIR/rec/ becomes seeds. */
static void collect(void)
{
	char dir[4096], path[4608], other[4700];
	struct dirent *d;
	DIR *dp;
	uint8_t *a, *b;
	size_t an, bn;

	snprintf(dir, sizeof(dir), "%s/rec", out_dir);
	dp = opendir(dir);
	if (!dp)
		die(dir);
	while ((d = readdir(dp))) {
		snprintf(path, sizeof(path), "%.4095s/%.255s", dir, d->d_name);
		if (ends_with(d->d_name, ".map")) {
			if ((a = slurp(path, &an))) {
				seed("names", d->d_name, a, an, NULL, 0);
				free(a);
			}
			continue;
		}
		if (ends_with(d->d_name, ".pool")) {
			snprintf(other, sizeof(other), "%.*s", (int)(strlen(path) - 5), path);
			a = slurp(path, &an);
			b = slurp(other, &bn);
			if (a && b)
				pool_seed(d->d_name, a, an, b, bn);
			free(a);
			free(b);
			continue;
		}
		if (!ends_with(d->d_name, ".xray"))
			continue;
		if (!(a = slurp(path, &an)))
			continue;
		seed("reader", d->d_name, a, an, NULL, 0);
		recover_seeds(path, d->d_name, a, an);
		snprintf(other, sizeof(other), "%.4600s.map", path);
		if ((b = slurp(other, &bn))) {
			uint8_t *m = malloc(sizeof(FUZZ_MAP_MARK) - 1 + bn);

			if (!m)
				die("malloc");
			memcpy(m, FUZZ_MAP_MARK, sizeof(FUZZ_MAP_MARK) - 1);
			memcpy(m + sizeof(FUZZ_MAP_MARK) - 1, b, bn);
			seed("reader", d->d_name, a, an, m, sizeof(FUZZ_MAP_MARK) - 1 + bn);
			free(m);
			free(b);
		}
		free(a);
	}
	closedir(dp);
}

/* ---- versions 2 to 5: the sample files of tests/system/test_reader_versions.c -------------- */

static void versions(void)
{
	struct enc e;
	unsigned v;
	int big;
	char name[32];

	for (v = 2; v <= 5; v++)
		for (big = 0; big <= 1; big++) {
			build_sample(&e, v, big, NULL);
			snprintf(name, sizeof(name), "v%u-%s.xray", v, big ? "be" : "le");
			seed("reader", name, e.b, e.len, NULL, 0);
		}
}

/* ---- the pool scenario of the recover and core tests ---------------------------------------- */

static void pools(void)
{
	struct pl_pool p;
	char live[4096], pool[4096], core[4096];
	uint8_t *a, *b, best[5] = {0, 0, 1, 0, 0}; /* best effort, buffers of 256 bytes */
	size_t an, bn;
	struct pl_seg segs[2];

	snprintf(live, sizeof(live), "%s/rec/scenario-live.xray", out_dir);
	snprintf(pool, sizeof(pool), "%s/rec/scenario-live.xray.pool", out_dir);
	snprintf(core, sizeof(core), "%s/pool/core-scenario", out_dir);
	pl_scenario(&p, 0x7f0000100000ull, 0x7f0000000000ull, 0, 1);
	pl_write_live(&p, live, 0);
	pl_write_pool(&p, pool);
	segs[0] = (struct pl_seg){0x7f0000000000ull, p.meta, p.meta_bytes, p.meta_bytes, 0};
	segs[1] = (struct pl_seg){0x7f0000100000ull, p.bufs, (uint64_t)p.count * p.buffer_bytes,
				  (uint64_t)p.count * p.buffer_bytes, 0};
	pl_write_core(core, 4, segs, 2);
	a = slurp(live, &an);
	b = slurp(pool, &bn);
	if (!a || !b)
		die(live);
	seed("pool", "best-effort", best, sizeof(best), a, an);
	free(a);
	free(b);
	pl_free(&p);
}

static void options(void)
{
	static const char *const text[] = {
	    "buffer_size=65536:buffer_max=64 output=/tmp/traces/ start=1",
	    "mode=bounded clock=rdtscp flush_signal=SIGUSR2 flush_on_terminate=yes",
	    "func_duration_threshold_us=10:per_thread_files=on:thread_max=8 backing=file",
	    "flush_on_crash=off flush_at_exit=false clock=auto mode=ring flush_signal=none",
	    "buffer_size=128 buffer_max=1 flush_signal=12 output=x/y backing=memory",
	    "buffer_size=1k buffer_max=0x10 unknown=1 novalue :: = =x",
	};
	size_t i;

	for (i = 0; i < sizeof(text) / sizeof(text[0]); i++)
		seed("options", "opts", text[i], strlen(text[i]), NULL, 0);
}

int main(int argc, char **argv)
{
	static const char *const sub[] = {"rec",     "reader",	"names", "pool",
					  "recover", "options", "elf",	 "record"};
	char path[4096];
	size_t i;

	if (argc != 2) {
		fprintf(stderr, "usage: seedgen DIR\n");
		return 2;
	}
	out_dir = argv[1];
	for (i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", out_dir, sub[i]);
		if (mkdir(path, 0777) && errno != EEXIST)
			die(path);
	}
	record("ring", "buffer_size=256 buffer_max=4", FLUSH);
	record("bounded", "buffer_size=256 buffer_max=3 mode=bounded", FLUSH);
	record("snap", "buffer_size=512 buffer_max=8", SNAPSHOT);
	record("elide", "buffer_size=1024 func_duration_threshold_us=1000", FLUSH);
	record("mt", "buffer_size=512 buffer_max=16", THREADS);
	record("perthread", "buffer_size=512 buffer_max=16 per_thread_files=1", THREADS);
	record("crash", "buffer_size=4096 buffer_max=4 flush_on_crash=1", CRASH);
	record("kill", "buffer_size=256 buffer_max=8 backing=file", KILL);
	versions();
	pools();
	options();
	seed("names", "functions.map", functions_map, sizeof(functions_map) - 1, NULL, 0);
	collect();
	return 0;
}
