/*
 * runtime/flush/drops.h - drop accounting at flush: the counts summed over the process, the
 * drop-count buffer that ends every trace file, the stderr line.
 *
 * The record path counts each drop in its thread's slot (record/thread_types.h, by enum
 * drop_cause); events of threads without a slot, and counts of slots that were recycled, are
 * kept in the thread table. Everything here only reads those counters.
 */
#ifndef XFDR_RUNTIME_FLUSH_DROPS_H
#define XFDR_RUNTIME_FLUSH_DROPS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/record/thread_types.h"

/* Drop counts summed over the process (slots, unattributed, recycled). */
struct drop_totals {
	uint64_t cause[DROP_CAUSES];
	uint64_t total;
	uint64_t noted[THREAD_NOTES]; /* not drops: what the trace leaves out on purpose */
};

/* The name of a cause in the .map sidecar and in messages ("no_buffer", ...). */
const char *drop_cause_name(enum drop_cause cause);

/* The name of a note in the .map sidecar ("overwritten", ...). */
const char *thread_note_name(enum thread_note note);

/* Sum the drop counters and notes now. Context: async-signal-safe. */
void drops_sum(struct drop_totals *d);

/* drops_thread_sum - the counts of every slot thread tid had this session, read now. */
void drops_thread_sum(uint32_t tid, struct drop_totals *d);

/* drops_add - *to += *d. */
void drops_add(struct drop_totals *to, const struct drop_totals *d);

/*
 * drops_rest - *rest = *all - *part, cause by cause and note by note, never below 0: what a
 * process snapshot holds beyond the per-thread counts read before it (threads that never got
 * a buffer, recycled slots, unattributed drops).
 */
void drops_rest(struct drop_totals *rest, const struct drop_totals *all,
		const struct drop_totals *part);

/* drops_has_buffer - does a file of buffer_bytes buffers get a drop-count buffer? */
int drops_has_buffer(size_t buffer_bytes);

/* The thread of a per-thread file's drop-count buffer, and its own counts (its one entry). */
struct drops_thread {
	uint32_t tid;
	uint16_t thread_id;
	struct drop_totals own;
};

/*
 * drops_write_buffer - write the drop-count buffer (payload "XFDRDROP", xfdr/format.h) to fd
 * as one whole buffer of buffer_bytes, stamped with (tsc, cpu), with head as its totals: the
 * caller's snapshot, so that the .map written with the same snapshot agrees with the file.
 * thread NULL: the process file's buffer (or a per-thread flush's "-t0" file), thread id 0,
 * and one entry per thread with drops in this session, read now. Else the buffer of a
 * per-thread file: thread->thread_id in NewBuffer and one entry, thread->own.
 * A buffer too small for the fixed part gets no drop buffer (the .map still has the counts).
 * Context: async-signal-safe. Returns 0 or a negative errno of write(2).
 */
int drops_write_buffer(int fd, size_t buffer_bytes, const struct drop_totals *head,
		       const struct drops_thread *thread, uint64_t tsc, unsigned cpu);

/* One stderr line: the totals by cause and where the per-thread counts are (map_path). */
void drops_report(const struct drop_totals *d, const char *map_path);

#endif /* XFDR_RUNTIME_FLUSH_DROPS_H */
