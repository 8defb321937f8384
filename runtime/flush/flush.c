/*
 * runtime/flush/flush.c - snapshot the pool into trace files, async-signal-safe.
 *
 * A trace file: the 32-byte header, then every buffer holding data in pool order (the order
 * buffers were taken, so each thread's buffers are in time order), each written whole
 * through wr_write_buffer() (records, EndOfBuffer, zero padding), then the drop-count buffer
 * (drops.c). Owned buffers are copied up to the length their thread has published: the
 * thread only writes past it, and release-stores the new length after the bytes.
 *
 * Only open, write, close, getpid, clock_gettime, rdtsc and sched_getcpu are used: no lock,
 * no allocation, no stdio. The caller (xfdr_flush) makes flushes exclusive through rt_ctl.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/print.h"
#include "runtime/flush/drops.h"
#include "runtime/flush/flush.h"
#include "runtime/flush/mapfile.h"
#include "runtime/flush/output.h"
#include "runtime/pool/pool.h"
#include "runtime/record/clock.h"
#include "writer/file.h"
#include "xfdr/format.h"

static uint32_t flush_epoch; /* per-thread grouping marks */

/*
 * snapshot_lengths - fix the length every buffer will be copied with, before copying any.
 * Buffers are read from the last taken to the first: a thread fills its buffers in taking
 * order, so when a later buffer of a thread is seen, its earlier ones are already full and
 * complete. Each thread's events in the file are then one gap-free prefix of what it
 * recorded, even while it keeps recording (in taking order, a thread could fill the rest of
 * a buffer already copied and go on in one not yet copied, leaving a hole).
 */
static void snapshot_lengths(void)
{
	uint32_t i = rt_pool.count;

	while (i-- > 0) {
		struct pool_desc *d = &rt_pool.descs[i];
		size_t used = 0;

		/* pairs with the release of state in take_buffer() */
		if (xfdr_load_acquire(&d->state) != POOL_FREE)
			/* pairs with the release of used_bytes by the owner after its records */
			used = xfdr_load_acquire(&d->used_bytes);
		d->flush_used = used >= XFDR_BUFFER_PREAMBLE_BYTES ? used : 0;
	}
}

/* Does the buffer hold data in this flush? Sets *used to the length to copy. */
static int desc_has_data(struct pool_desc *d, size_t *used)
{
	*used = d->flush_used;
	return *used != 0;
}

static int write_header(int fd, uint64_t tsc_hz)
{
	struct wr_file_header h = {
	    .cycle_frequency_hz = tsc_hz,
	    .buffer_bytes = rt_pool.buffer_bytes,
	    .constant_tsc = clock_invariant_tsc(),
	    .nonstop_tsc = clock_invariant_tsc(),
	};

	return wr_write_file_header(fd, &h);
}

/* The smallest first TSC of the buffers holding data, or fallback if smaller or none. */
static uint64_t earliest_tsc(uint64_t fallback)
{
	uint64_t min = fallback;
	uint32_t i;

	for (i = 0; i < rt_pool.count; i++) {
		struct pool_desc *d = &rt_pool.descs[i];
		size_t used;

		/* first_tsc is an owner field, published with the state snapshot_lengths() read */
		if (desc_has_data(d, &used) && d->first_tsc < min)
			min = d->first_tsc;
	}
	return min;
}

/*
 * The drop-count buffer of the process file is thread 0's only block. llvm-xray 14's
 * `account` takes the first record it meets as a floor and rejects every record below it,
 * and meets thread 0 first or last depending on a hash of the other thread ids: stamped with
 * the earliest TSC of the file, it is the floor when met first, and no lower than the floor
 * (the first record of a single-threaded file) when met last. A per-thread file's drop
 * buffer is that thread's last block: the time now fits.
 */
static int write_drop_buffer(int fd, int per_thread, uint32_t tid, uint16_t thread_id)
{
	unsigned cpu;
	uint64_t tsc = clock_read(&cpu);

	if (!per_thread)
		tsc = earliest_tsc(tsc);
	return drops_write_buffer(fd, rt_pool.buffer_bytes, per_thread, tid, thread_id, tsc, cpu);
}

static void copy_out(char *path_out, size_t path_bytes, const char *path)
{
	size_t n;

	if (!path_out || !path_bytes)
		return;
	n = strlen(path);
	if (n >= path_bytes)
		n = path_bytes - 1;
	memcpy(path_out, path, n);
	path_out[n] = '\0';
}

static int close_checked(int fd, int rc)
{
	if (close(fd) && !rc && errno != EINTR)
		rc = -errno;
	return rc;
}

/* Process file: every buffer, then the process drop buffer. */
static int flush_process_file(int fd, uint64_t tsc_hz, uint64_t *written)
{
	uint32_t i, count = rt_pool.count;
	int rc = write_header(fd, tsc_hz);

	for (i = 0; i < count && !rc; i++) {
		struct pool_desc *d = &rt_pool.descs[i];
		size_t used;

		if (!desc_has_data(d, &used))
			continue;
		rc = wr_write_buffer(fd, d->data, used, rt_pool.buffer_bytes);
		if (!rc)
			(*written)++;
	}
	if (!rc)
		rc = write_drop_buffer(fd, 0, 0, 0);
	return rc;
}

/*
 * Per-thread files: one per tid owning buffers (a thread that registered twice, hooks after
 * its exit destructor, keeps one file); each listed in the map.
 */
static int flush_thread_files(int map_fd, uint64_t pid, uint32_t n, uint64_t tsc_hz,
			      uint64_t *written)
{
	char path[PATH_MAX];
	struct pr_buf b = PR_BUF_INIT(path);
	uint32_t i, j, count = rt_pool.count;
	uint32_t epoch = ++flush_epoch;
	int rc = 0;

	for (i = 0; i < count && !rc; i++) {
		struct pool_desc *d = &rt_pool.descs[i];
		uint32_t tid, tid16;
		size_t used;
		int fd;

		if (d->flush_mark == epoch || !desc_has_data(d, &used))
			continue;
		tid = d->owner_tid;
		tid16 = d->owner_tid16;
		rc = output_name(&b, pid, n, ".xray", tid);
		if (rc)
			break;
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			rc = -errno;
			break;
		}
		rc = write_header(fd, tsc_hz);
		for (j = i; j < count && !rc; j++) {
			struct pool_desc *e = &rt_pool.descs[j];

			if (e->flush_mark == epoch || !desc_has_data(e, &used) ||
			    e->owner_tid != tid)
				continue;
			e->flush_mark = epoch;
			rc = wr_write_buffer(fd, e->data, used, rt_pool.buffer_bytes);
			if (!rc)
				(*written)++;
		}
		if (!rc)
			rc = write_drop_buffer(fd, 1, tid, (uint16_t)tid16);
		rc = close_checked(fd, rc);
		if (!rc)
			rc = map_write_trace(map_fd, path);
	}
	return rc;
}

int flush_run(char *path_out, size_t path_bytes)
{
	char trace[PATH_MAX], map[PATH_MAX];
	struct pr_buf tb = PR_BUF_INIT(trace), mb = PR_BUF_INIT(map);
	uint64_t pid = (uint64_t)getpid();
	uint64_t tsc_hz = clock_tsc_hz();
	uint64_t written = 0;
	struct drop_totals drops;
	int fd = -1, map_fd, rc;
	uint32_t n;

	snapshot_lengths();
	if (flush_output.per_thread_files) {
		map_fd = output_create_unique(&mb, pid, ".map", &n);
		if (map_fd < 0)
			return map_fd;
		rc = map_write_head(map_fd);
		if (!rc)
			rc = flush_thread_files(map_fd, pid, n, tsc_hz, &written);
		copy_out(path_out, path_bytes, map);
	} else {
		fd = output_create_unique(&tb, pid, ".xray", &n);
		if (fd < 0)
			return fd;
		rc = flush_process_file(fd, tsc_hz, &written);
		rc = close_checked(fd, rc);
		copy_out(path_out, path_bytes, trace);
		if (output_name(&mb, pid, n, ".xray.map", -1))
			return rc ? rc : -ENAMETOOLONG;
		map_fd = open(map, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (map_fd < 0)
			return rc ? rc : -errno;
		if (!rc)
			rc = map_write_head(map_fd);
		if (!rc)
			rc = map_write_trace(map_fd, trace);
	}
	drops_sum(&drops);
	if (!rc)
		rc = map_write_tail(map_fd, tsc_hz, written, &drops);
	rc = close_checked(map_fd, rc);
	if (drops.total)
		drops_report(&drops, map);
	return rc;
}
