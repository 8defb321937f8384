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

/*
 * drops_write_buffer - write the drop-count buffer (payload "XFDRDROP", xfdr/format.h) to fd
 * as one whole buffer of buffer_bytes, stamped with (tsc, cpu).
 * per_thread 0: the process file's buffer, thread id 0, the process totals and one entry per
 * thread with drops in this session. per_thread 1: the file of thread tid, the counts of every
 * slot that tid had this session, under its thread_id.
 * A buffer too small for the fixed part gets no drop buffer (the .map still has the counts).
 * Context: async-signal-safe. Returns 0 or a negative errno of write(2).
 */
int drops_write_buffer(int fd, size_t buffer_bytes, int per_thread, uint32_t tid,
		       uint16_t thread_id, uint64_t tsc, unsigned cpu);

/* One stderr line: the totals by cause and where the per-thread counts are (map_path). */
void drops_report(const struct drop_totals *d, const char *map_path);

#endif /* XFDR_RUNTIME_FLUSH_DROPS_H */
