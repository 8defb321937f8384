/*
 * analysis/llvm_order.h - the events of a trace in the order `llvm-xray convert` prints its
 * records, with memory for the threads, not for the records.
 *
 * llvm-xray collects the blocks of each (process, thread) in an LLVM DenseMap, expands the
 * threads in the map's bucket order (each thread's blocks by WallClockTime), and then, by
 * default, stable-sorts every record by TSC. The bucket order is a pure function of the keys
 * in the order their first buffer appears in the file, reproduced here; so ties between
 * threads and the unsorted order come out as llvm-xray's too.
 *
 * The stable sort is done as a merge: each thread's events, in its own order, are cut into
 * runs where the TSC never goes down (usually one run per thread), and the runs are merged by
 * (TSC, position of the run in llvm-xray's concatenation), which is exactly what a stable sort
 * of the concatenation gives. Each run costs one iterator (a few hundred bytes); a pathological
 * trace whose clock goes back more than LLVM_ORDER_RUNS_MAX times is sorted in memory instead
 * (40 bytes per record), as before.
 *
 * llvm-xray builds each record over the previous one of its thread and never clears two
 * fields: so custom and typed events print the function id of the thread's previous function
 * record (0 before the first one), and every record prints as its `type` the event type of the
 * thread's previous typed event (0 before the first one). struct llvm_carry holds both.
 */
#ifndef XFDR_ANALYSIS_LLVM_ORDER_H
#define XFDR_ANALYSIS_LLVM_ORDER_H

#include <stdint.h>

#include "analysis/progress.h"
#include "xfdr/reader.h"

#define LLVM_ORDER_RUNS_MAX (1u << 16)

struct llvm_order;

/* What a record inherits from its thread's earlier ones, as llvm-xray prints it. */
struct llvm_carry {
	uint32_t fid;  /* the function id: a function record's own, else the last one's */
	uint16_t type; /* the `type`: the event type of the last typed event */
};

/*
 * llvm_order_open - iterate the events of the verified trace t in llvm-xray's order: sorted by
 * TSC (stable) when sort, else thread by thread. The trace must outlive the iterator.
 * prog (may be NULL) hears of the phases "ordering" and "sorting" and of the threads read.
 * Returns 0 with *out set, or -1 with err filled (out of memory, a bad trace).
 */
int llvm_order_open(struct xfdr_trace *t, int sort, const struct progress *prog,
		    struct llvm_order **out, struct xfdr_error *err);

/*
 * llvm_order_next - the next event in *ev (valid until the next call) and what llvm-xray
 * prints for it in *carry. Returns 1, 0 at the end, or -1 with err filled.
 */
int llvm_order_next(struct llvm_order *o, const struct xfdr_event **ev, struct llvm_carry *carry,
		    struct xfdr_error *err);

/* How far the walk is, for progress: events handed out so far and in all (0 if unknown). */
void llvm_order_progress(const struct llvm_order *o, uint64_t *done, uint64_t *total);

void llvm_order_close(struct llvm_order *o);

#endif /* XFDR_ANALYSIS_LLVM_ORDER_H */
