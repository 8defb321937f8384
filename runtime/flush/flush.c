/*
 * runtime/flush/flush.c - snapshot the pool into trace files, async-signal-safe.
 *
 * A trace file: the 32-byte header, then every buffer holding data in pool order (the order
 * buffers were taken, so each thread's buffers are in time order), each written whole
 * through wr_write_buffer() (records, EndOfBuffer, zero padding), then one drop-count buffer:
 *   NewBuffer(0 | thread id) WallClockTime NewCPUId CustomEventMarker "XFDRDROP" payload
 * (layout in xfdr.h). Owned buffers are copied up to the length their thread has published:
 * the thread only writes past it, and release-stores the new length after the bytes.
 *
 * Only open, write, close, getpid, clock_gettime, rdtsc and sched_getcpu are used: no lock,
 * no allocation, no stdio. The caller (xfdr_flush) makes flushes exclusive through rt_ctl.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/record/clock.h"
#include "runtime/control/config.h"
#include "runtime/flush/flush.h"
#include "runtime/flush/mapfile.h"
#include "runtime/pool/pool.h"
#include "runtime/base/print.h"
#include "runtime/record/thread.h"
#include "writer/file.h"
#include "writer/encode.h"
#include "xfdr/format.h"
#include "xfdr/xfdr.h"

/* The drop-count buffer is built on the stack: this bounds its per-thread entries (60). */
#define DROP_BUFFER_STACK_BYTES 2048
#define FLUSH_NAME_TRIES 10000u

static uint32_t flush_seq;   /* the <n> of the next file name */
static uint32_t flush_epoch; /* per-thread grouping marks */

void flush_sum_drops(struct flush_drops *d)
{
	struct thread_table *tt = &thread_table;
	struct thread_slot *slots = xfdr_load_acquire(&tt->slots);
	uint32_t i, n;
	int c;

	memset(d, 0, sizeof(*d));
	for (c = 0; c < DROP_CAUSES; c++) {
		d->cause[c] += xfdr_load_relaxed(&tt->unattributed[c]);
		d->cause[c] += xfdr_load_relaxed(&tt->recycled[c]);
	}
	if (slots) {
		n = xfdr_load_acquire(&tt->next_unused);
		if (n > tt->max)
			n = tt->max;
		for (i = 0; i < n; i++) {
			/* A slot being claimed may hold counts already folded into recycled. */
			if (xfdr_load_acquire(&slots[i].state) == SLOT_CLAIMING)
				continue;
			for (c = 0; c < DROP_CAUSES; c++)
				d->cause[c] += xfdr_load_relaxed(&slots[i].dropped[c]);
		}
	}
	for (c = 0; c < DROP_CAUSES; c++)
		d->total += d->cause[c];
}

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
	    .buffer_bytes = rt_cfg.buffer_bytes,
	    .constant_tsc = rt_cfg.constant_tsc,
	    .nonstop_tsc = rt_cfg.nonstop_tsc,
	};

	return wr_write_file_header(fd, &h);
}

static void put_entry(uint8_t *p, uint32_t tid, uint32_t tid16, const uint64_t counts[3])
{
	wr_put32(p + XFDR_DROP_ENTRY_TID_OFF, tid);
	wr_put16(p + XFDR_DROP_ENTRY_TID16_OFF, (uint16_t)tid16);
	wr_put64(p + XFDR_DROP_ENTRY_NO_BUFFER_OFF, counts[DROP_NO_BUFFER]);
	wr_put64(p + XFDR_DROP_ENTRY_REENTRANT_OFF, counts[DROP_REENTRANT]);
	wr_put64(p + XFDR_DROP_ENTRY_TOO_LARGE_OFF, counts[DROP_TOO_LARGE]);
}

/* Entries that fit both the stack buffer and a file buffer (EndOfBuffer room kept); -1: none. */
static int drop_entries_max(void)
{
	size_t fixed = XFDR_BUFFER_PREAMBLE_BYTES + XFDR_MD_RECORD_BYTES + XFDR_DROP_FIXED_BYTES;
	size_t cap = rt_cfg.buffer_bytes < DROP_BUFFER_STACK_BYTES ? rt_cfg.buffer_bytes
								   : DROP_BUFFER_STACK_BYTES;
	int n;

	for (n = (int)((DROP_BUFFER_STACK_BYTES - fixed) / XFDR_DROP_ENTRY_BYTES); n >= 0; n--) {
		size_t bytes = fixed + (size_t)n * XFDR_DROP_ENTRY_BYTES;

		if (bytes <= cap && wr_fits(rt_cfg.buffer_bytes, bytes))
			return n;
	}
	return -1;
}

/* The smallest NewCPUId TSC of the buffers holding data, or fallback if smaller or none. */
static uint64_t earliest_tsc(uint64_t fallback)
{
	uint64_t min = fallback, t;
	uint32_t i;

	for (i = 0; i < rt_pool.count; i++) {
		struct pool_desc *d = &rt_pool.descs[i];
		size_t used;

		if (!desc_has_data(d, &used))
			continue;
		memcpy(&t, d->data + 2 * XFDR_MD_RECORD_BYTES + XFDR_NEW_CPU_ID_TSC_OFF, sizeof(t));
		if (t < min)
			min = t;
	}
	return min;
}

/*
 * write_drop_buffer - the last buffer of a file. per_thread 0: the process file (totals of
 * the process, one entry per thread with drops); 1: the file of thread tid (the counts of
 * every slot that thread had this session).
 * A buffer too small for the fixed part gets no drop buffer (the .map still has the counts).
 */
static int write_drop_buffer(int fd, int per_thread, uint32_t only_tid, uint32_t only_tid16)
{
	uint8_t buf[DROP_BUFFER_STACK_BYTES] __attribute__((aligned(8)));
	struct thread_table *tt = &thread_table;
	struct thread_slot *slots = xfdr_load_acquire(&tt->slots);
	uint32_t session = xfdr_load_acquire(&rt_pool.session);
	int max = drop_entries_max();
	uint32_t entries = 0, omitted = 0, i, n;
	struct flush_drops totals;
	struct timespec wall;
	uint8_t *p = buf, *payload;
	unsigned cpu;
	uint64_t tsc;
	int c;

	if (max < 0)
		return 0;
	memset(buf, 0, sizeof(buf));
	tsc = clock_read(&cpu);
	/*
	 * The process file's drop buffer is thread 0's only block. llvm-xray 14's `account`
	 * takes the first record it meets as a floor and rejects every record below it, and
	 * meets thread 0 first or last depending on a hash of the other thread ids: stamped
	 * with the earliest TSC of the file, it is the floor when met first, and no lower than
	 * the floor (the first record of a single-threaded file) when met last.
	 * (A per-thread file's drop buffer is that thread's last block: the time now fits.)
	 */
	if (!per_thread)
		tsc = earliest_tsc(tsc);
	clock_gettime(CLOCK_REALTIME, &wall);
	p += wr_new_buffer(p, (uint16_t)(per_thread ? only_tid16 : 0));
	p += wr_wall_clock_time(p, (uint64_t)wall.tv_sec, (uint32_t)(wall.tv_nsec / 1000));
	p += wr_new_cpu_id(p, (uint16_t)cpu, tsc);
	payload = p + XFDR_MD_RECORD_BYTES;
	memcpy(payload, XFDR_DROP_MAGIC, 8);
	wr_put32(payload + XFDR_DROP_VERSION_OFF, XFDR_DROP_LAYOUT_VERSION);

	if (!per_thread) {
		flush_sum_drops(&totals);
		n = slots ? xfdr_load_acquire(&tt->next_unused) : 0;
		if (n > tt->max)
			n = tt->max;
		for (i = 0; i < n; i++) {
			struct thread_slot *s = &slots[i];
			uint64_t counts[3];
			uint32_t st = xfdr_load_acquire(&s->state);

			if ((st != SLOT_LIVE && st != SLOT_EXITED) ||
			    xfdr_load_relaxed(&s->session) != session)
				continue;
			for (c = 0; c < 3; c++)
				counts[c] = xfdr_load_relaxed(&s->dropped[c]);
			if (!counts[0] && !counts[1] && !counts[2])
				continue;
			if (entries == (uint32_t)max) {
				omitted++;
				continue;
			}
			put_entry(payload + XFDR_DROP_FIXED_BYTES + entries * XFDR_DROP_ENTRY_BYTES,
				  xfdr_load_relaxed(&s->tid), xfdr_load_relaxed(&s->tid16), counts);
			entries++;
		}
	} else {
		memset(&totals, 0, sizeof(totals));
		n = slots ? xfdr_load_acquire(&tt->next_unused) : 0;
		if (n > tt->max)
			n = tt->max;
		for (i = 0; i < n; i++) {
			struct thread_slot *s = &slots[i];
			uint32_t st = xfdr_load_acquire(&s->state);

			if ((st != SLOT_LIVE && st != SLOT_EXITED) ||
			    xfdr_load_relaxed(&s->session) != session ||
			    xfdr_load_relaxed(&s->tid) != only_tid)
				continue;
			for (c = 0; c < 3; c++)
				totals.cause[c] += xfdr_load_relaxed(&s->dropped[c]);
		}
		if (max >= 1) {
			put_entry(payload + XFDR_DROP_FIXED_BYTES, only_tid, only_tid16,
				  totals.cause);
			entries = 1;
		}
	}
	wr_put32(payload + XFDR_DROP_ENTRY_COUNT_OFF, entries);
	wr_put64(payload + XFDR_DROP_NO_BUFFER_OFF, totals.cause[DROP_NO_BUFFER]);
	wr_put64(payload + XFDR_DROP_REENTRANT_OFF, totals.cause[DROP_REENTRANT]);
	wr_put64(payload + XFDR_DROP_TOO_LARGE_OFF, totals.cause[DROP_TOO_LARGE]);
	wr_put64(payload + XFDR_DROP_NO_THREAD_SLOT_OFF, totals.cause[DROP_NO_THREAD_SLOT]);
	wr_put32(payload + XFDR_DROP_OMITTED_OFF, omitted);
	n = XFDR_DROP_FIXED_BYTES + entries * XFDR_DROP_ENTRY_BYTES;
	p += wr_custom_event_marker(p, n, tsc);
	p += n;
	return wr_write_buffer(fd, buf, (size_t)(p - buf), rt_cfg.buffer_bytes);
}

/* dir + prefix + "-<pid>-<n>" + suffix into b; -ENAMETOOLONG if cut. */
static int build_name(struct pr_buf *b, uint64_t pid, uint32_t n, const char *suffix, int64_t tid)
{
	b->len = 0;
	b->truncated = 0;
	pr_str(b, rt_cfg.out_dir);
	pr_str(b, rt_cfg.out_prefix);
	pr_char(b, '-');
	pr_u64(b, pid);
	pr_char(b, '-');
	pr_u64(b, n);
	if (tid >= 0) {
		pr_str(b, "-t");
		pr_u64(b, (uint64_t)tid);
	}
	pr_str(b, suffix);
	pr_cstr(b);
	return b->truncated ? -ENAMETOOLONG : 0;
}

/* Create a file no earlier flush (of any process) wrote: bump <n> past existing ones. */
static int create_unique(struct pr_buf *b, uint64_t pid, const char *suffix, uint32_t *n_out)
{
	uint32_t tries, n = xfdr_load_relaxed(&flush_seq);
	int fd, rc;

	for (tries = 0; tries < FLUSH_NAME_TRIES; tries++, n++) {
		rc = build_name(b, pid, n, suffix, -1);
		if (rc)
			return rc;
		fd = open(b->text, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0) {
			xfdr_store_relaxed(&flush_seq, n + 1);
			*n_out = n;
			return fd;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
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
		rc = wr_write_buffer(fd, d->data, used, rt_cfg.buffer_bytes);
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
		rc = build_name(&b, pid, n, ".xray", tid);
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
			rc = wr_write_buffer(fd, e->data, used, rt_cfg.buffer_bytes);
			if (!rc)
				(*written)++;
		}
		if (!rc)
			rc = write_drop_buffer(fd, 1, tid, tid16);
		rc = close_checked(fd, rc);
		if (!rc)
			rc = map_write_trace(map_fd, path);
	}
	return rc;
}

static void report_drops(const struct flush_drops *d, const char *map_path)
{
	char text[PATH_MAX + 200];
	struct pr_buf b = PR_BUF_INIT(text);

	pr_str(&b, "dropped ");
	pr_u64(&b, d->total);
	pr_str(&b, " events (no_buffer=");
	pr_u64(&b, d->cause[DROP_NO_BUFFER]);
	pr_str(&b, " reentrant=");
	pr_u64(&b, d->cause[DROP_REENTRANT]);
	pr_str(&b, " too_large=");
	pr_u64(&b, d->cause[DROP_TOO_LARGE]);
	pr_str(&b, " no_thread_slot=");
	pr_u64(&b, d->cause[DROP_NO_THREAD_SLOT]);
	pr_str(&b, "); per thread: ");
	pr_str(&b, map_path);
	pr_line(&b);
}

int flush_run(char *path_out, size_t path_bytes)
{
	char trace[PATH_MAX], map[PATH_MAX];
	struct pr_buf tb = PR_BUF_INIT(trace), mb = PR_BUF_INIT(map);
	uint64_t pid = (uint64_t)getpid();
	uint64_t tsc_hz = clock_tsc_hz();
	uint64_t written = 0;
	struct flush_drops drops;
	int fd = -1, map_fd, rc;
	uint32_t n;

	snapshot_lengths();
	if (rt_cfg.per_thread_files) {
		map_fd = create_unique(&mb, pid, ".map", &n);
		if (map_fd < 0)
			return map_fd;
		rc = map_write_head(map_fd);
		if (!rc)
			rc = flush_thread_files(map_fd, pid, n, tsc_hz, &written);
		copy_out(path_out, path_bytes, map);
	} else {
		fd = create_unique(&tb, pid, ".xray", &n);
		if (fd < 0)
			return fd;
		rc = flush_process_file(fd, tsc_hz, &written);
		rc = close_checked(fd, rc);
		copy_out(path_out, path_bytes, trace);
		if (build_name(&mb, pid, n, ".xray.map", -1))
			return rc ? rc : -ENAMETOOLONG;
		map_fd = open(map, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (map_fd < 0)
			return rc ? rc : -errno;
		if (!rc)
			rc = map_write_head(map_fd);
		if (!rc)
			rc = map_write_trace(map_fd, trace);
	}
	flush_sum_drops(&drops);
	if (!rc)
		rc = map_write_tail(map_fd, tsc_hz, written, &drops);
	rc = close_checked(map_fd, rc);
	if (drops.total)
		report_drops(&drops, map);
	return rc;
}
