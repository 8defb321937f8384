/*
 * tests/fuzz/fuzz_pool.c - libFuzzer target: the pool image behind `xfdr recover` and
 * `xfdr core` (rebuild/pool_image.c), and core's ELF reading (command/core.c).
 *
 * Input, byte 0 a mode:
 *   bit 0 set:   bytes 1-4 (little-endian) L, then L bytes of FILE.pool (the locator and the
 *                descriptors), then the live file (header and buffers), as `recover` reads
 *                them
 *   bit 0 clear: bytes 1-4 the buffer size, then the buffers (best effort, no locator);
 *                bit 1: big-endian
 * The rebuild's output, whatever the input, must be a trace the reader verifies. The whole
 * input is also given to `xfdr core` as a core file: when it says it wrote OUT, OUT must verify
 * and OUT.map load; when it fails, neither may exist.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "command/cli.h"
#include "rebuild/pool_image.h"
#include "tests/fuzz/fuzz_support.h"
#include "xfdr/reader.h"

/* Bounds on what one input may make the rebuild write (its padding is written out). */
#define FUZZ_OUT_MAX (8u << 20)

static int out_fd = -1, core_fd = -1;
static char core_path[64];

struct mem {
	const uint8_t *p;
	size_t n;
};

static int mem_read(void *ctx, uint64_t at, void *buf, size_t n, struct xfdr_error *err)
{
	const struct mem *m = ctx;

	(void)err;
	if (at > m->n || n > m->n - at)
		return 1;
	memcpy(buf, m->p + at, n);
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_setup();
	out_fd = memfd_create("out", 0);
	if (out_fd < 0)
		abort();
	core_fd = fuzz_memfd("core", core_path, sizeof(core_path));
	return 0;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The rebuilt trace must verify. */
static void check_output(void)
{
	off_t n = lseek(out_fd, 0, SEEK_END);
	struct xfdr_trace *t;
	struct xfdr_error err;
	void *p;

	if (n <= 0)
		abort();
	p = mmap(NULL, (size_t)n, PROT_READ, MAP_PRIVATE, out_fd, 0);
	if (p == MAP_FAILED)
		abort();
	if (xfdr_trace_open_memory(p, (size_t)n, "rebuilt", &t, &err) ||
	    xfdr_trace_verify(t, &err)) {
		fprintf(stderr, "rebuilt trace invalid: %s\n", err.text);
		abort();
	}
	xfdr_trace_close(t);
	munmap(p, (size_t)n);
}

static void rebuild(const uint8_t *data, size_t size)
{
	struct rb_pool_locator loc;
	struct rb_pool_job job;
	struct rb_pool_result res;
	struct xfdr_error err;
	struct mem pool, live;
	uint32_t a;

	if (size < 5)
		return;
	a = le32(data + 1);
	memset(&job, 0, sizeof(job));
	if (data[0] & 1) {
		if (a > size - 5 || a < XFDR_POOL_HEADER_BYTES)
			return;
		pool = (struct mem){data + 5, a};
		live = (struct mem){data + 5 + a, size - 5 - a};
		if (rb_pool_locator_parse(pool.p, &loc, &err))
			return;
		if (loc.buffer_bytes > FUZZ_OUT_MAX ||
		    (uint64_t)loc.buffer_count * loc.buffer_bytes > FUZZ_OUT_MAX)
			return;
		job.loc = &loc;
		job.descs = (struct rb_pool_source){mem_read, &pool};
		job.descs_at = loc.header_bytes;
		job.tsc_hz = loc.tsc_hz;
	} else {
		live = (struct mem){data + 5, size - 5};
		if (a < XFDR_BUFFER_PREAMBLE_BYTES || a > FUZZ_OUT_MAX)
			return;
		job.buffer_bytes = a;
		job.buffer_count =
		    live.n > XFDR_FILE_HEADER_BYTES ? (live.n - XFDR_FILE_HEADER_BYTES) / a : 0;
		job.big_endian = !!(data[0] & 2);
	}
	job.bufs = (struct rb_pool_source){mem_read, &live};
	job.bufs_at = XFDR_FILE_HEADER_BYTES;
	job.constant_tsc = job.nonstop_tsc = !!(data[0] & 4);
	if (ftruncate(out_fd, 0))
		abort();
	if (rb_pool_rebuild(&job, out_fd, "rebuilt", &res, &err))
		return;
	if (res.kept > res.buffers)
		abort();
	check_output();
	rb_pool_result_free(&res);
}

/*
 * What `xfdr core` promises: with status 0 OUT is a trace the reader verifies and OUT.map (made
 * from the locator) a sidecar it loads; with any other, neither exists.
 */
static void check_core(int status, const char *out, const char *map)
{
	struct xfdr_trace *t;
	struct xfdr_names *n;
	struct xfdr_error err;

	if (status) {
		if (!access(out, F_OK) || !access(map, F_OK))
			abort();
		return;
	}
	if (xfdr_trace_open(out, &t, &err) || xfdr_trace_verify(t, &err)) {
		fprintf(stderr, "core's trace invalid: %s\n", err.text);
		abort();
	}
	xfdr_trace_close(t);
	if (xfdr_names_load(map, &n, &err)) {
		fprintf(stderr, "core's sidecar invalid: %s\n", err.text);
		abort();
	}
	xfdr_names_free(n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[128], map[160];
	char *argv[] = {"core", "--force", "-o", out, core_path, NULL};

	rebuild(data, size);

	if (ftruncate(core_fd, 0) || (size && pwrite(core_fd, data, size, 0) != (ssize_t)size))
		abort();
	snprintf(out, sizeof(out), "%s/core.xray", fuzz_out_dir);
	snprintf(map, sizeof(map), "%s.map", out);
	cli_set_verb("core");
	check_core(cmd_core(5, argv), out, map);
	unlink(out);
	unlink(map);
	return 0;
}
