/*
 * runtime/flush/flush.c - snapshot the pool into trace files, async-signal-safe.
 *
 * A trace file: the 32-byte header, then every buffer holding data in claim order (so each
 * thread's buffers are in time order), each copied (flush_copy_buffer()) and written whole into its
 * slot (records, EndOfBuffer, zero padding; newest first: write_buffers()), then the
 * drop-count buffer (drops.c). Owned buffers are copied up to the length their thread has
 * published: the thread writes past it, and release-stores the new length after the bytes.
 *
 * Each file is written under a ".part" name and renamed when complete (output.h).
 * A write that fails removes the file (and its .part) with one stderr line naming it, the
 * error and the buffers lost; a file that would pass RLIMIT_FSIZE is refused before its
 * first byte (writer/fsize.h), so no SIGXFSZ. A trace that fails gets no .map.
 *
 * Only open, fchmod, write, pwrite, lseek, fstat, fstatat, close, renameat2, link, unlink,
 * access, getpid, getrlimit, clock_gettime, rdtsc and sched_getcpu are used: no lock, no
 * allocation, no stdio.
 *
 * Two flushes may run at once, each with a flush context of its own (pool_types.h): an
 * ordinary one (its caller holds CTL_FLUSH_RUNNING) and the fatal path's, which must not wait
 * for it. Everything one flush writes is in its context, on its stack or in files whose names
 * no other flush of the process can be given (output_create_unique()); the pin of a buffer it
 * copies is counted (pool_pin()). What both read (the pool, the thread table, the drop counts,
 * the output settings, the function ids) they only read. Their files are two complete traces.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "writer/fsize.h"
#include "runtime/base/print.h"
#include "runtime/flush/drops.h"
#include "runtime/flush/flush.h"
#include "runtime/flush/map_functions.h"
#include "runtime/flush/mapfile.h"
#include "runtime/flush/output.h"
#include "runtime/pool/pool.h"
#include "runtime/record/clock.h"
#include "writer/encode.h"
#include "writer/file.h"
#include "xfdr/format.h"

/* Heap sort of the buffer indices by the claim order the snapshot read (no allocation). */
static int seq_less(const struct pool_flush_ctx *x, uint32_t a, uint32_t b)
{
	return x->notes[x->order[a]].seq < x->notes[x->order[b]].seq;
}

static void sift_down(struct pool_flush_ctx *x, uint32_t root, uint32_t n)
{
	uint32_t *order = x->order;

	for (;;) {
		uint32_t child = 2 * root + 1, tmp;

		if (child >= n)
			return;
		if (child + 1 < n && seq_less(x, child, child + 1))
			child++;
		if (!seq_less(x, root, child))
			return;
		tmp = order[root];
		order[root] = order[child];
		order[child] = tmp;
		root = child;
	}
}

void flush_sort_by_claim(struct pool_flush_ctx *x, uint32_t n)
{
	uint32_t *order = x->order;
	uint32_t i, tmp;

	for (i = n / 2; i-- > 0;)
		sift_down(x, i, n);
	for (i = n; i-- > 1;) {
		tmp = order[0];
		order[0] = order[i];
		order[i] = tmp;
		sift_down(x, 0, i);
	}
}

/*
 * final_bytes - how much of d the flush may copy: the bytes its owner will never rewrite.
 * That is every record of a buffer without short-call elision, and those below the erase
 * floor of one with it (an owned buffer's last plain entries may still be erased: they are
 * not in the trace yet, and an entry in a trace is never counted as elided later). A full
 * buffer's floor is its end.
 */
static size_t final_bytes(struct pool_desc *d)
{
	/* pairs with the releases of used_bytes and stable_bytes by the owner after its records */
	if (xfdr_load_relaxed(&d->erasable))
		return xfdr_load_acquire(&d->stable_bytes);
	return xfdr_load_acquire(&d->used_bytes);
}

/*
 * flush_snapshot - choose the buffers of this flush and fix the length each is copied with.
 * Chosen: owned and full buffers, in ring mode wherever they are in the pool, ordered by
 * claim (each thread's buffers then come in time order); with since, a full buffer whose
 * last record is older is left out. Lengths are read from the last claimed to the first: a
 * thread fills its buffers in claim order, so when a later buffer of a thread is seen, its
 * earlier ones are already full and complete. Each thread's events in the file are then one
 * gap-free run of what it recorded, even while it keeps recording. Returns the count chosen,
 * listed in x->order: the buffers of the file, in the order of its slots.
 */
uint32_t flush_snapshot(struct pool_flush_ctx *x, uint64_t since)
{
	uint32_t *order = x->order;
	uint32_t i, n = 0, chosen;

	for (i = 0; i < rt_pool.count; i++) {
		struct pool_desc *d = &rt_pool.descs[i];
		struct pool_flush_note *e = &x->notes[i];
		/* pairs with the release in pool_publish_owned() and pool_mark_full() */
		uint64_t c = xfdr_load_acquire(&d->ctl);
		uint32_t st = POOL_STATE(c);

		if (st != POOL_OWNED && st != POOL_FULL)
			continue;
		if (st == POOL_FULL && since && xfdr_load_relaxed(&d->last_tsc) < since)
			continue;
		/* Owner fields, published with the state read above; checked again by the pin. */
		e->gen = POOL_GEN(c);
		e->seq = xfdr_load_relaxed(&d->claim_seq);
		e->first_tsc = xfdr_load_relaxed(&d->first_tsc);
		e->tid = xfdr_load_relaxed(&d->owner_tid);
		e->thread_id = xfdr_load_relaxed(&d->owner_thread_id);
		order[n++] = i;
	}
	flush_sort_by_claim(x, n);
	for (i = n; i-- > 0;) {
		struct pool_desc *d = &rt_pool.descs[order[i]];
		struct pool_flush_note *e = &x->notes[order[i]];
		size_t used = final_bytes(d);

		/* Claimed anew since it was chosen: its bytes are not the ones of this flush. */
		if (POOL_GEN(xfdr_load_acquire(&d->ctl)) != e->gen)
			used = 0;
		e->used = used >= XFDR_BUFFER_PREAMBLE_BYTES ? used : 0;
	}
	/* Keep only what has data: the file's buffer slots, in claim order. */
	for (i = 0, chosen = 0; i < n; i++)
		if (x->notes[order[i]].used)
			order[chosen++] = order[i];
	return chosen;
}

/*
 * flush_copy_buffer - copy buffer i into the context's copy area. Returns the bytes copied, 0 when
 * the buffer was claimed anew since the snapshot (it then holds newer events, and its old
 * ones are counted as overwritten).
 * The pin keeps ring mode from claiming it during the copy; the length the snapshot fixed is of
 * bytes the owner never rewrites (final_bytes()): the buffer written is one its owner had.
 */
size_t flush_copy_buffer(struct pool_flush_ctx *x, uint32_t i)
{
	struct pool_desc *d = &rt_pool.descs[i];
	size_t used = x->notes[i].used;

	if (!used || !pool_pin(d, x->notes[i].gen))
		return 0;
	memcpy(x->copy, d->data, used);
	pool_unpin(d);
	return used;
}

/* Byte offset of buffer slot k of a trace file. */
static uint64_t slot_offset(uint32_t k)
{
	return XFDR_FILE_HEADER_BYTES + (uint64_t)k * rt_pool.buffer_bytes;
}

/*
 * Copy buffer i and write it whole into slot k. A buffer claimed anew before the flusher got to
 * it keeps its slot as an empty buffer of its thread (preamble only, wall clock 0: it was the
 * oldest), so the slots written before it stay where they are; counted in st->buffers_reused.
 */
static int write_pool_buffer(int fd, struct pool_flush_ctx *x, uint32_t i, uint32_t k,
			     struct map_flush *st)
{
	size_t n = flush_copy_buffer(x, i);
	uint8_t *p = x->copy;

	if (!n) {
		p += wr_new_buffer(p, (uint16_t)x->notes[i].thread_id);
		p += wr_wall_clock_time(p, 0, 0);
		p += wr_new_cpu_id(p, 0, x->notes[i].first_tsc);
		n = (size_t)(p - x->copy);
		st->buffers_reused++;
	} else {
		st->buffers_written++;
	}
	return wr_write_buffer_at(fd, x->copy, n, rt_pool.buffer_bytes, slot_offset(k));
}

/*
 * Write the chosen buffers of one thread (all: every thread) into consecutive slots, in claim
 * order, copying them from the newest to the oldest. Ring mode reuses buffers from the oldest
 * on: copying the other way, the flusher meets the reuse at the oldest end of every thread's
 * history, so a buffer reused during the flush costs the oldest events, not a hole in the
 * middle. *slots gets the number of slots used. Returns 0 or a negative errno.
 */
static int write_buffers(int fd, struct pool_flush_ctx *x, int all, uint32_t tid, uint32_t n,
			 uint32_t epoch, struct map_flush *st, uint32_t *slots)
{
	uint32_t *order = x->order;
	uint32_t i, k = 0;
	int rc = 0;

	for (i = 0; i < n; i++)
		k += all || x->notes[order[i]].tid == tid;
	*slots = k;
	for (i = n; i-- > 0 && !rc;) {
		struct pool_flush_note *e = &x->notes[order[i]];

		if (!all && e->tid != tid)
			continue;
		e->mark = epoch;
		rc = write_pool_buffer(fd, x, order[i], --k, st);
	}
	return rc;
}

int flush_write_header(int fd, uint64_t tsc_hz)
{
	struct wr_file_header h = {
	    .cycle_frequency_hz = tsc_hz,
	    .buffer_bytes = rt_pool.buffer_bytes,
	    .constant_tsc = clock_invariant_tsc(),
	    .nonstop_tsc = clock_invariant_tsc(),
	};

	return wr_write_file_header(fd, &h);
}

/* The smallest first TSC of the buffers in this flush, or fallback if smaller or none. */
static uint64_t earliest_tsc(const struct pool_flush_ctx *x, uint32_t n, uint64_t fallback)
{
	uint64_t min = fallback;
	uint32_t i;

	for (i = 0; i < n; i++) {
		const struct pool_flush_note *e = &x->notes[x->order[i]];

		if (e->first_tsc < min)
			min = e->first_tsc;
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
int flush_write_drop_buffer_at(int fd, const struct pool_flush_ctx *x, uint64_t offset, uint32_t n,
			       const struct drop_totals *head, const struct drops_thread *thread)
{
	unsigned cpu;
	uint64_t tsc = clock_read(&cpu);

	if (!thread)
		tsc = earliest_tsc(x, n, tsc);
	if (lseek(fd, (off_t)offset, SEEK_SET) < 0)
		return -errno;
	return drops_write_buffer(fd, rt_pool.buffer_bytes, head, thread, tsc, cpu);
}

static int write_drop_buffer(int fd, const struct pool_flush_ctx *x, uint32_t slot, uint32_t n,
			     const struct drop_totals *head, const struct drops_thread *thread)
{
	return flush_write_drop_buffer_at(fd, x, slot_offset(slot), n, head, thread);
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

/*
 * The size a trace file of `slots` buffers (and its drop buffer) will have; refused at once
 * with -EFBIG past RLIMIT_FSIZE, so that nothing of it is written (fsize.h).
 */
static int check_trace_size(uint32_t slots)
{
	uint64_t buffers = (uint64_t)slots + (drops_has_buffer(rt_pool.buffer_bytes) ? 1u : 0u);

	return fsize_check(slot_offset(0) + buffers * rt_pool.buffer_bytes);
}

/* The start of the line that reports a file not written: "cannot write PATH: ERROR". */
static void pr_cannot_write(struct pr_buf *b, const char *path, int rc)
{
	pr_str(b, "cannot write ");
	pr_str(b, path);
	pr_str(b, ": ");
	pr_str(b, pr_errno_name(rc));
	if (rc == -EEXIST) {
		pr_str(b, ": the name or its " OUTPUT_PART_SUFFIX " is taken by a file or link "
			  "this flush did not make, left as it is");
	}
}

/*
 * One stderr line for a trace file that could not be written (it and its .part are gone):
 * the file, the error, and the buffers of recorded events it would have held.
 */
static void report_trace_lost(const char *path, int rc, uint64_t buffers)
{
	char text[PATH_MAX + 200];
	struct pr_buf b = PR_BUF_INIT(text);

	pr_cannot_write(&b, path, rc);
	pr_str(&b, "; lost ");
	pr_u64(&b, buffers);
	pr_str(&b, " buffers (");
	pr_u64(&b, buffers * rt_pool.buffer_bytes);
	pr_str(&b, " bytes) of recorded events");
	pr_line(&b);
}

/* One stderr line for a .map that could not be written (it and its .part are gone). */
static void report_map_lost(const char *path, int rc, int traces_kept)
{
	char text[PATH_MAX + 200];
	struct pr_buf b = PR_BUF_INIT(text);

	pr_cannot_write(&b, path, rc);
	pr_str(&b, traces_kept ? "; the trace stays without it (function names, thread names and "
				 "drop counts lost)"
			       : "; nothing of this flush was kept");
	pr_line(&b);
}

/* Process file: every buffer of the flush, then the process drop buffer (head: *drops). */
static int flush_process_file(int fd, struct pool_flush_ctx *x, uint32_t n, uint64_t tsc_hz,
			      struct map_flush *st, struct drop_totals *drops)
{
	uint32_t slots = 0;
	int rc = flush_write_header(fd, tsc_hz);

	if (!rc)
		rc = write_buffers(fd, x, 1, 0, n, ++x->epoch, st, &slots);
	/* The one snapshot of the drop counts: this file's and the .map's. */
	drops_sum(drops);
	if (!rc)
		rc = write_drop_buffer(fd, x, slots, n, drops, NULL);
	return rc;
}

/* The buffers of thread tid among the n chosen. */
static uint32_t thread_slots(const struct pool_flush_ctx *x, uint32_t tid, uint32_t n)
{
	uint32_t i, k = 0;

	for (i = 0; i < n; i++)
		k += x->notes[x->order[i]].tid == tid;
	return k;
}

/* Mark every chosen buffer of thread tid with epoch (its file is done with, or failed). */
static void mark_thread(struct pool_flush_ctx *x, uint32_t tid, uint32_t n, uint32_t epoch)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (x->notes[x->order[i]].tid == tid)
			x->notes[x->order[i]].mark = epoch;
}

/*
 * One per-thread file, its drop buffer not yet written: header and the buffers of tid, counted
 * in *mine (zero counts on entry), which the .map's counts get once the file is in place.
 * Returns the open descriptor of its .part, or a negative errno after the stderr line (no
 * file left).
 */
static int thread_file_open(const char *path, struct pool_flush_ctx *x, uint32_t tid, uint32_t n,
			    uint32_t epoch, uint64_t tsc_hz, struct map_flush *mine,
			    uint32_t *slots)
{
	int fd, rc = check_trace_size(thread_slots(x, tid, n));

	fd = rc ? rc : output_create_part(path);
	rc = fd < 0 ? fd : flush_write_header(fd, tsc_hz);
	if (!rc)
		rc = write_buffers(fd, x, 0, tid, n, epoch, mine, slots);
	if (rc) {
		mark_thread(x, tid, n, epoch);
		if (fd >= 0)
			output_finish(path, close_checked(fd, rc));
		report_trace_lost(path, rc, thread_slots(x, tid, n));
		return rc;
	}
	return fd;
}

/* A thread file is in place: the .map counts what it holds. */
static void count_file(struct map_flush *st, const struct map_flush *file)
{
	st->buffers_written += file->buffers_written;
	st->buffers_reused += file->buffers_reused;
}

/* Write the drop buffer of an open per-thread file and finish it. Returns 0 or -errno. */
static int thread_file_close(int fd, const struct pool_flush_ctx *x, const char *path,
			     uint32_t slots, uint32_t n, const struct drop_totals *head,
			     const struct drops_thread *thread)
{
	int rc = write_drop_buffer(fd, x, slots, n, head, thread);

	rc = output_finish(path, close_checked(fd, rc));
	if (rc)
		report_trace_lost(path, rc, slots);
	return rc;
}

/* Anything counted: drops, or a note (buffers overwritten, calls elided...)? */
static int drops_any(const struct drop_totals *d)
{
	int c, any = d->total != 0;

	for (c = 0; c < THREAD_NOTES; c++)
		any |= d->noted[c] != 0;
	return any;
}

/*
 * No thread file: the drop counts alone in "<prefix>-<pid>-<n>-t0.xray" (thread id 0, the
 * process file's drop buffer). Returns 0 or a negative errno after the stderr line.
 */
static int thread_zero_file(const char *path, const struct pool_flush_ctx *x, uint64_t tsc_hz,
			    const struct drop_totals *drops)
{
	int fd, rc = check_trace_size(0);

	fd = rc ? rc : output_create_part(path);
	rc = fd < 0 ? fd : flush_write_header(fd, tsc_hz);
	if (!rc)
		rc = write_drop_buffer(fd, x, 0, 0, drops, NULL);
	if (fd >= 0)
		rc = output_finish(path, close_checked(fd, rc));
	if (rc)
		report_trace_lost(path, rc, 0);
	return rc;
}

/*
 * Per-thread files: one per tid owning buffers (a thread that registered twice, hooks after
 * its exit destructor, keeps one file), in claim order; each that was written is listed in
 * the map (*map_rc: the first error writing it; nothing more is written to it then). A file
 * that fails is reported and skipped, the others are still written. Returns 0 or the first
 * error of a trace file.
 *
 * Drops: each file's drop buffer holds its thread's counts. The first file also holds the
 * rest of the process's (threads that never got a buffer, recycled slots, unattributed
 * drops, files that failed): its drop buffer is written last, after the one snapshot of the
 * process counts (*drops, also the .map's), as the snapshot minus what the other files hold,
 * so that the files' totals add up to the .map's. Without any thread file, a "-t0" file holds
 * the drop buffer alone when there is anything to count.
 */
static int flush_thread_files(struct pool_flush_ctx *x, int map_fd, int *map_rc, uint64_t pid,
			      uint32_t n, uint32_t file_n, uint64_t tsc_hz, struct map_flush *st,
			      struct drop_totals *drops)
{
	char path[PATH_MAX], first_path[PATH_MAX];
	struct pr_buf b = PR_BUF_INIT(path);
	uint32_t *order = x->order;
	uint32_t i, slots = 0, first_slots = 0, epoch = ++x->epoch, failed = ++x->epoch, list;
	struct drop_totals in_files = {0}, rest;
	struct drops_thread first, thread;
	struct map_flush mine, first_st = {0};
	int rc, err = 0, first_fd = -1, fd;

	for (i = 0; i < n; i++) {
		struct pool_flush_note *e = &x->notes[order[i]];

		if (e->mark == epoch || e->mark == failed)
			continue;
		thread.tid = e->tid;
		thread.thread_id = (uint16_t)e->thread_id;
		rc = output_name(&b, pid, file_n, ".xray", thread.tid);
		mine = (struct map_flush){.since_tsc = st->since_tsc};
		fd = rc ? rc
			: thread_file_open(path, x, thread.tid, n, epoch, tsc_hz, &mine, &slots);
		if (rc) {
			mark_thread(x, thread.tid, n, epoch);
			report_trace_lost(path, rc, thread_slots(x, thread.tid, n));
		}
		if (fd < 0) {
			mark_thread(x, thread.tid, n, failed);
			err = err ? err : fd;
			continue;
		}
		if (first_fd < 0) {
			first_fd = fd;
			first_slots = slots;
			first = thread;
			first_st = mine;
			memcpy(first_path, path, sizeof(path));
			continue;
		}
		drops_thread_sum(thread.tid, &thread.own);
		drops_add(&in_files, &thread.own);
		rc = thread_file_close(fd, x, path, slots, n, &thread.own, &thread);
		if (rc)
			mark_thread(x, thread.tid, n, failed);
		else
			count_file(st, &mine);
		err = err ? err : rc;
	}
	if (first_fd >= 0) {
		drops_thread_sum(first.tid, &first.own);
		drops_add(&in_files, &first.own);
	}
	/* The one snapshot of the drop counts: the .map's, and what the files add up to. */
	drops_sum(drops);
	if (first_fd >= 0) {
		drops_rest(&rest, drops, &in_files);
		drops_add(&rest, &first.own);
		rc = thread_file_close(first_fd, x, first_path, first_slots, n, &rest, &first);
		if (rc)
			mark_thread(x, first.tid, n, failed);
		else
			count_file(st, &first_st);
		err = err ? err : rc;
	} else if (drops_any(drops) && drops_has_buffer(rt_pool.buffer_bytes)) {
		rc = output_name(&b, pid, file_n, ".xray", 0);
		rc = rc ? rc : thread_zero_file(path, x, tsc_hz, drops);
		err = err ? err : rc;
		if (!rc && !*map_rc)
			*map_rc = map_write_trace(map_fd, path);
	}
	/*
	 * The map lists every file this flush wrote, in claim order; not one that failed, whose
	 * name may hold someone else's file.
	 */
	list = ++x->epoch;
	for (i = 0; i < n && !*map_rc; i++) {
		struct pool_flush_note *e = &x->notes[order[i]];
		int written = e->mark != failed;

		if (e->mark == list)
			continue;
		mark_thread(x, e->tid, n, list);
		if (written && !output_name(&b, pid, file_n, ".xray", e->tid))
			*map_rc = map_write_trace(map_fd, path);
	}
	return err;
}

/* One stderr line when threads reused chosen buffers before this flush could copy them. */
static void report_reused(uint64_t buffers, const char *map_path)
{
	char text[PATH_MAX + 200];
	struct pr_buf b = PR_BUF_INIT(text);

	pr_u64(&b, buffers);
	pr_str(&b, " buffers were reused by recording threads before this flush could copy them "
		   "(empty in the trace; buffers_reused_in_flush in ");
	pr_str(&b, map_path);
	pr_char(&b, ')');
	pr_line(&b);
}

/*
 * The names a flush builds, one pair per flush context (one flush at a time in each): not on
 * the stack, which on the fatal path may be a program's small alternate stack (or a
 * sanitizer's, under its report).
 */
static char flush_names[POOL_FLUSH_CONTEXTS][2][PATH_MAX];

XFDR_NOINSTR int flush_nothing_recorded(void)
{
	struct drop_totals d;
	unsigned i;

	if (xfdr_load_relaxed(&rt_pool.claims))
		return 0;
	drops_sum(&d);
	for (i = 0; i < THREAD_NOTES; i++)
		if (d.noted[i])
			return 0;
	return !d.total;
}

int flush_run(enum pool_flush_id ctx, uint64_t since, char *path_out, size_t path_bytes)
{
	struct pool_flush_ctx *x = &rt_pool.flush[ctx];
	struct pr_buf tb = PR_BUF_INIT(flush_names[ctx][0]), mb = PR_BUF_INIT(flush_names[ctx][1]);
	char *trace = tb.text, *map = mb.text;
	uint64_t pid = (uint64_t)getpid();
	uint64_t tsc_hz = clock_tsc_hz();
	struct map_flush st = {.since_tsc = since};
	struct drop_totals drops;
	int fd = -1, map_fd, rc, traces_rc = 0;
	uint32_t n, chosen;

	pool_locator_set_tsc_hz(tsc_hz); /* for `xfdr core`: the rate is known now */
	/*
	 * The snapshot comes after the file is created: in ring mode, threads keep reusing
	 * buffers meanwhile, and the shorter the time from snapshot to copy, the fewer of the
	 * chosen buffers are gone when the flusher gets to them.
	 */
	if (flush_output.per_thread_files) {
		map_fd = output_create_unique(&mb, pid, ".map", NULL, &n);
		if (map_fd < 0) {
			if (output_name(&mb, pid, n, ".map", -1))
				pr_cstr(&mb);
			report_trace_lost(map, map_fd, flush_snapshot(x, since));
			return map_fd;
		}
		chosen = flush_snapshot(x, since);
		rc = map_write_head(map_fd);
		/* The thread files are written even when the .map cannot be: they are traces. */
		traces_rc = flush_thread_files(x, map_fd, &rc, pid, chosen, n, tsc_hz, &st, &drops);
		copy_out(path_out, path_bytes, map);
	} else {
		fd = output_create_unique(&tb, pid, ".xray", ".xray.map", &n);
		if (fd < 0) {
			if (output_name(&tb, pid, n, ".xray", -1))
				pr_cstr(&tb);
			report_trace_lost(trace, fd, flush_snapshot(x, since));
			return fd;
		}
		chosen = flush_snapshot(x, since);
		rc = check_trace_size(chosen);
		if (!rc)
			rc = flush_process_file(fd, x, chosen, tsc_hz, &st, &drops);
		rc = output_finish(trace, close_checked(fd, rc));
		if (rc) {
			/* No trace, no .map: a .map names the trace it describes. */
			report_trace_lost(trace, rc, chosen);
			return rc;
		}
		copy_out(path_out, path_bytes, trace);
		rc = output_name(&mb, pid, n, ".xray.map", -1);
		map_fd = rc ? rc : output_create_part(map);
		if (map_fd < 0) {
			report_map_lost(map, map_fd, 1);
			return map_fd;
		}
		rc = map_write_head(map_fd);
		if (!rc)
			rc = map_write_trace(map_fd, trace);
	}
	if (!rc)
		rc = map_write_tail(map_fd, tsc_hz, &st, &drops);
	if (!rc)
		rc = map_write_functions(map_fd);
	rc = output_finish(map, close_checked(map_fd, rc));
	if (rc)
		report_map_lost(map, rc, !flush_output.per_thread_files || !traces_rc);
	else if (drops.total)
		drops_report(&drops, map);
	if (st.buffers_reused)
		report_reused(st.buffers_reused, map);
	return rc ? rc : traces_rc;
}
