/*
 * analysis/llvm_dmap.h - the order in which an LLVM DenseMap lists its keys.
 *
 * llvm-xray keeps its blocks (keyed by (pid, thread id)) and its latencies (keyed by function
 * id) in DenseMaps and walks them in bucket order, which decides the thread order of `convert`
 * and the tie order of `account`. Reproducing it takes the key hashes LLVM uses and the way the
 * map places keys: power-of-two buckets (64 at first), quadratic probing (+1, +2, +3, ...),
 * doubling when an insertion would make it three quarters full, the old entries re-inserted in
 * bucket order. Only the order is kept, not the keys.
 */
#ifndef XFDR_ANALYSIS_LLVM_DMAP_H
#define XFDR_ANALYSIS_LLVM_DMAP_H

#include <stdint.h>

/* DenseMapInfo<int32_t or uint32_t>: the key times 37. */
static inline uint32_t llvm_dmap_int_hash(uint32_t v)
{
	return v * 37u;
}

/* DenseMapInfo<std::pair<uint64_t, int32_t>> of (pid, thread id): both hashes combined. */
uint32_t llvm_dmap_thread_hash(uint32_t pid, uint32_t tid);

/*
 * llvm_dmap_order - the bucket order of n distinct keys, key i having hash[i], inserted in the
 * order ins[0..n). Writes the key indices in bucket order into out (n entries).
 * Returns 0, or -1 when out of memory.
 */
int llvm_dmap_order(const uint32_t *hash, const uint32_t *ins, uint32_t n, uint32_t *out);

struct xfdr_trace;

/*
 * llvm_dmap_thread_order - the threads of a trace (numbered as xfdr_trace_thread(), n of them,
 * after xfdr_trace_threads()) in the order llvm-xray expands them: its DenseMap of blocks is
 * filled in the order each thread's first buffer appears in the file. Writes the thread
 * numbers into out (n entries). Returns 0, or -1 when out of memory.
 */
int llvm_dmap_thread_order(const struct xfdr_trace *t, uint32_t n, uint32_t *out);

#endif /* XFDR_ANALYSIS_LLVM_DMAP_H */
