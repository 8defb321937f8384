/*
 * tests/fuzz/fuzz_names.c - libFuzzer target: the .map sidecar parser (reader/lib/names.c):
 * function, since_tsc, crash, frame and thread lines, then every query on what it loaded.
 * The input is the sidecar, written to a memfd and loaded by its /proc/self/fd name.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "xfdr/reader.h"

static int map_fd = -1;
static char map_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	map_fd = memfd_create("map", 0);
	if (map_fd < 0)
		abort();
	snprintf(map_path, sizeof(map_path), "/proc/self/fd/%d", map_fd);
	return 0;
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
		return 0;
	}
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
