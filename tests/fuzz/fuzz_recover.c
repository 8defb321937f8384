/*
 * tests/fuzz/fuzz_recover.c - libFuzzer target: `xfdr recover FILE` as a whole verb
 * (command/recover.c), on the three files a file-backed pool leaves: FILE, FILE.pool and
 * FILE.map. fuzz_pool drives the pool-image rebuild directly; this goes through recover's own
 * reading of the live header, FILE.pool's locator and size checks, the rate taken from the live
 * .map and the copy of that .map into OUT.map (load_live_map(), write_recovered_map()). Then
 * `recover --salvage` on the same FILE and FILE.map.
 *
 * The input is FILE, then optionally FUZZ_POOL_MARK and FILE.pool, then optionally
 * FUZZ_MAP_MARK and FILE.map; a file whose mark is absent is not there (best-effort recovery,
 * a generated sidecar). They are written into a scratch folder, as recover finds its inputs by
 * name. What must hold, whatever the input:
 *   - status 0: OUT is a trace the reader verifies; OUT.map has exactly one `trace` line, naming
 *     OUT; every `tsc_hz` line of OUT.map gives OUT's rate (recovered), or FILE's header's, else
 *     FILE.map's first `tsc_hz` when it is a number (salvaged: the header is FILE's, rate 0
 *     included); OUT.map loads, whatever FILE.map held (recover leaves out the lines the
 *     reader refuses), and with the same names as FILE.map when that loads
 *   - any other status: neither OUT nor OUT.map exists (nothing is written unless 0)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "command/cli.h"
#include "tests/fuzz/fuzz_support.h"
#include "xfdr/reader.h"

#define FUZZ_POOL_MARK "\n#XFDR-FUZZ-POOL#\n"
#define FUZZ_MAP_MARK "\n#XFDR-FUZZ-MAP#\n"

static char live_path[128], pool_path[160], map_path[160], out_path[128], out_map_path[160];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_setup();
	snprintf(live_path, sizeof(live_path), "%s/f-live.xray", fuzz_out_dir);
	snprintf(pool_path, sizeof(pool_path), "%s.pool", live_path);
	snprintf(map_path, sizeof(map_path), "%s.map", live_path);
	snprintf(out_path, sizeof(out_path), "%s/out.xray", fuzz_out_dir);
	snprintf(out_map_path, sizeof(out_map_path), "%s.map", out_path);
	return 0;
}

static void put(const char *path, const uint8_t *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || (n && write(fd, p, n) != (ssize_t)n) || close(fd))
		abort();
}

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_recover: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

/* The length of the key of line: up to its first TAB, else all of it. */
static size_t key_len(const char *line, size_t n)
{
	const char *tab = memchr(line, '\t', n);

	return tab ? (size_t)(tab - line) : n;
}

/* OUT.map: one `trace` line naming OUT, and every `tsc_hz` line says *hz. */
static void check_out_map(const uint64_t *hz)
{
	FILE *f = fopen(out_map_path, "r");
	char *line = NULL, *end;
	size_t cap = 0, k;
	ssize_t n;
	int traces = 0;

	if (!f)
		die("status 0 without OUT.map", strerror(errno));
	while ((n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		k = key_len(line, (size_t)n);
		if (k == 5 && !memcmp(line, "trace", 5)) {
			traces++;
			if ((size_t)n != k + 1 + strlen(out_path) || strcmp(line + k + 1, out_path))
				die("OUT.map's trace line does not name OUT", line);
		}
		if (k == 6 && !memcmp(line, "tsc_hz", 6) &&
		    ((size_t)n == k || strtoull(line + k + 1, &end, 10) != *hz || *end))
			die("OUT.map's tsc_hz is not OUT's rate", line);
	}
	free(line);
	fclose(f);
	if (traces != 1)
		die("OUT.map has not exactly one trace line", NULL);
}

/*
 * The rate recover --salvage takes from FILE.map when FILE's header has none: the first line
 * that starts "tsc_hz<TAB>", when digits (no leading zero but in "0") and then the end of the
 * line (or a NUL) follow; else 0.
 */
static uint64_t map_rate(const uint8_t *map, size_t n)
{
	const uint8_t *p = map, *end = map + n, *nl, *d, *q;
	uint64_t hz = 0;

	for (; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if ((size_t)(nl - p) < 7 || memcmp(p, "tsc_hz\t", 7))
			continue;
		for (d = q = p + 7; q < nl && *q >= '0' && *q <= '9'; q++) {
			if (hz > (UINT64_MAX - (uint64_t)(*q - '0')) / 10)
				return 0; /* out of range */
			hz = hz * 10 + (uint64_t)(*q - '0');
		}
		return q == d || (q < nl && *q) || (q - d > 1 && *d == '0') ? 0 : hz;
	}
	return 0;
}

/* Two name tables give the same name (or none) for each of a set of ids. */
static void same_names(const struct xfdr_names *a, const struct xfdr_names *b, const uint8_t *data,
		       size_t size)
{
	const char *x, *y;
	uint32_t id, i;

	for (i = 0; i + 4 <= size && i < 4096; i += 7) {
		memcpy(&id, data + i, 4);
		id %= 4096;
		x = xfdr_names_get(a, id);
		y = xfdr_names_get(b, id);
		if ((x == NULL) != (y == NULL) || (x && strcmp(x, y)))
			die("OUT.map names a function differently from FILE.map", NULL);
	}
}

/*
 * After a run of the verb: its promise about OUT and OUT.map, then remove them. map is
 * FILE.map's bytes (NULL: none); data the whole input, for ids to look up.
 */
static void check(int status, int recovered, const uint8_t *map, size_t map_bytes,
		  const uint8_t *data, size_t size)
{
	struct xfdr_trace *t;
	struct xfdr_names *in_names = NULL, *out_names = NULL;
	struct xfdr_error err;
	uint64_t hz;

	if (status) {
		if (!access(out_path, F_OK) || !access(out_map_path, F_OK))
			die("status not 0 but OUT or OUT.map written", NULL);
		return;
	}
	if (xfdr_trace_open(out_path, &t, &err) || xfdr_trace_verify(t, &err))
		die("OUT is not a valid trace", err.text);
	/* Recovered: OUT's rate, wherever it came from. Salvaged: FILE's, else FILE.map's. */
	hz = xfdr_trace_header(t)->cycle_frequency;
	xfdr_trace_close(t);
	if (!recovered && !hz && map)
		hz = map_rate(map, map_bytes);
	check_out_map(&hz);
	if (xfdr_names_load(out_map_path, &out_names, &err))
		die("OUT.map does not load", err.text);
	if (map && !xfdr_names_load(map_path, &in_names, &err)) {
		same_names(in_names, out_names, data, size);
		xfdr_names_free(in_names);
	}
	xfdr_names_free(out_names);
	unlink(out_path);
	unlink(out_map_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const size_t pool_mark_n = sizeof(FUZZ_POOL_MARK) - 1,
		     map_mark_n = sizeof(FUZZ_MAP_MARK) - 1;
	const uint8_t *pool = memmem(data, size, FUZZ_POOL_MARK, pool_mark_n);
	const uint8_t *from = pool ? pool + pool_mark_n : data;
	const uint8_t *map = memmem(from, size - (size_t)(from - data), FUZZ_MAP_MARK, map_mark_n);
	const uint8_t *live_end = pool ? pool : map ? map : data + size;
	const uint8_t *pool_end = map ? map : data + size;
	char *rec[] = {"recover", "-v", "-o", out_path, live_path, NULL};
	char *salv[] = {"recover", "--salvage", "-v", "-o", out_path, live_path, NULL};
	size_t map_bytes = 0;

	put(live_path, data, (size_t)(live_end - data));
	if (pool)
		put(pool_path, from, (size_t)(pool_end - from));
	else
		unlink(pool_path);
	if (map) {
		map += map_mark_n;
		map_bytes = size - (size_t)(map - data);
		put(map_path, map, map_bytes);
	} else {
		unlink(map_path);
	}

	cli_set_verb("recover");
	check(cmd_recover(5, rec), 1, map, map_bytes, data, size);
	cli_set_verb("recover");
	check(cmd_recover(6, salv), 0, map, map_bytes, data, size);

	unlink(live_path);
	unlink(pool_path);
	unlink(map_path);
	return 0;
}
