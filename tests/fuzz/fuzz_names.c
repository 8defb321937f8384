/*
 * tests/fuzz/fuzz_names.c - libFuzzer target: the .map sidecar parser (reader/names.c):
 * function, since_tsc, crash, frame and thread lines, then every query on what it loaded.
 * The input is the sidecar, written to a memfd and loaded by its /proc/self/fd name.
 *
 * Then the lenient read `xfdr recover` copies a live sidecar with: it never fails on content;
 * on a sidecar the strict load takes it leaves nothing out; and the input without the lines it
 * left out is a sidecar the strict load takes, with the same names, crash and window.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "xfdr/reader.h"

static int map_fd = -1, kept_fd = -1;
static char map_path[64], kept_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	map_fd = memfd_create("map", 0);
	if (map_fd < 0)
		abort();
	snprintf(map_path, sizeof(map_path), "/proc/self/fd/%d", map_fd);
	kept_fd = memfd_create("kept", 0);
	if (kept_fd < 0)
		abort();
	snprintf(kept_path, sizeof(kept_path), "/proc/self/fd/%d", kept_fd);
	return 0;
}

/* The lines a lenient read left out, ascending. */
struct left_out {
	uint64_t line[4096];
	size_t count;
	int overflow;
};

static void note_left_out(void *ctx, uint64_t line, const char *text)
{
	struct left_out *l = ctx;

	/* One line, naming the file first; in line order, each line once. */
	if (strncmp(text, map_path, strlen(map_path)) || strchr(text, '\n') ||
	    (l->count && l->line[l->count - 1] >= line))
		abort();
	if (l->count == sizeof(l->line) / sizeof(l->line[0]))
		l->overflow = 1;
	else
		l->line[l->count++] = line;
}

/* a and b say the same for the ids the input mentions, the window and the crash. */
static void same(const struct xfdr_names *a, const struct xfdr_names *b, const uint8_t *data,
		 size_t size)
{
	struct xfdr_map_crash ca, cb;
	struct xfdr_map_frame fa, fb;
	uint64_t ta = 0, tb = 0;
	const char *x, *y;
	uint32_t i, probe;

	for (i = 0; i + 4 <= size && i < 4096; i += 3) {
		memcpy(&probe, data + i, 4);
		x = xfdr_names_get(a, probe % 4096);
		y = xfdr_names_get(b, probe % 4096);
		if ((x == NULL) != (y == NULL) || (x && strcmp(x, y)))
			abort();
	}
	if (xfdr_names_since_tsc(a, &ta) != xfdr_names_since_tsc(b, &tb) || ta != tb)
		abort();
	if (xfdr_names_crash(a, &ca) != xfdr_names_crash(b, &cb) ||
	    (xfdr_names_crash(a, &ca) && (ca.signal != cb.signal || ca.tid != cb.tid)))
		abort();
	if (xfdr_names_frame_count(a) != xfdr_names_frame_count(b))
		abort();
	for (i = 0; i < xfdr_names_frame_count(a) && i < 1024; i++) {
		if (xfdr_names_frame(a, i, &fa) != xfdr_names_frame(b, i, &fb) ||
		    (xfdr_names_frame(a, i, &fa) && fa.pc != fb.pc))
			abort();
	}
}

/*
 * The lenient read of the input (strict: whether xfdr_names_load() took it, with what in
 * strict_names): see the top of the file for what must hold.
 */
static void check_lenient(const uint8_t *data, size_t size, const struct xfdr_names *strict_names)
{
	struct xfdr_names *n, *kept;
	struct xfdr_error err;
	struct left_out l;
	const uint8_t *p = data, *end = data + size, *nl;
	uint64_t line = 0;
	size_t k = 0;
	FILE *f;

	l.count = 0;
	l.overflow = 0;
	f = fopen(map_path, "r");
	if (!f)
		abort();
	if (xfdr_names_read_lenient(f, map_path, note_left_out, &l, &n, &err))
		abort();
	fclose(f);
	if (strict_names) {
		if (l.count)
			abort();
		same(strict_names, n, data, size);
	}
	if (l.overflow) {
		xfdr_names_free(n);
		return;
	}
	/* The input without those lines (getline()'s lines: each up to and with its '\n'). */
	if (ftruncate(kept_fd, 0) || lseek(kept_fd, 0, SEEK_SET))
		abort();
	for (; p < end; p = nl) {
		nl = memchr(p, '\n', (size_t)(end - p));
		nl = nl ? nl + 1 : end;
		if (k < l.count && l.line[k] == ++line) {
			k++;
			continue;
		}
		if (write(kept_fd, p, (size_t)(nl - p)) != nl - p)
			abort();
	}
	if (xfdr_names_load(kept_path, &kept, &err))
		abort(); /* what recover would write is refused */
	same(n, kept, data, size);
	xfdr_names_free(kept);
	xfdr_names_free(n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xfdr_names *n;
	struct xfdr_error err;
	struct xfdr_map_crash crash;
	struct xfdr_map_frame f;
	uint64_t tsc;
	uint32_t i, count, tid, probe;
	int rc;

	if (ftruncate(map_fd, 0) || (size && pwrite(map_fd, data, size, 0) != (ssize_t)size))
		abort();
	rc = xfdr_names_load(map_path, &n, &err);
	if (rc) {
		/* A malformed sidecar: no names, and one line that starts with the path. */
		if (n || rc != -2 || strncmp(err.text, map_path, strlen(map_path)) ||
		    memchr(err.text, '\n', strnlen(err.text, sizeof(err.text))))
			abort();
		check_lenient(data, size, NULL);
		return 0;
	}
	check_lenient(data, size, n);
	/* Ids and thread ids the input mentions, and the edges. */
	for (i = 0; i + 4 <= size && i < 4096; i += 3) {
		memcpy(&probe, data + i, 4);
		(void)xfdr_names_get(n, probe);
		(void)xfdr_names_get(n, probe % 4096);
		(void)xfdr_names_thread(n, probe % 65536, &tid);
	}
	(void)xfdr_names_get(n, 0);
	(void)xfdr_names_get(n, UINT32_MAX);
	(void)xfdr_names_since_tsc(n, &tsc);
	if (xfdr_names_crash(n, &crash) && !crash.signal_name)
		abort();
	count = xfdr_names_frame_count(n);
	for (i = 0; i < count + 2 && i < 1024; i++) {
		if (xfdr_names_frame(n, i, &f))
			(void)xfdr_names_frame_at_pc(n, f.pc, &f);
	}
	xfdr_names_free(n);
	return 0;
}
