/*
 * analysis/llvm_dmap.c - an LLVM DenseMap's key order (see llvm_dmap.h).
 */
#include <stdlib.h>

#include "analysis/llvm_dmap.h"
#include "xfdr/reader.h"

struct dmap {
	uint32_t *slot;	      /* key index + 1, 0 empty */
	const uint32_t *hash; /* hash of each key index */
	uint32_t buckets, entries;
};

uint32_t llvm_dmap_thread_hash(uint32_t pid, uint32_t tid)
{
	uint64_t k = (uint64_t)(uint32_t)((uint64_t)pid * 37u) << 32 | llvm_dmap_int_hash(tid);

	k += ~(k << 32);
	k ^= k >> 22;
	k += ~(k << 13);
	k ^= k >> 8;
	k += k << 3;
	k ^= k >> 15;
	k += ~(k << 27);
	k ^= k >> 31;
	return (uint32_t)k;
}

static void dmap_place(struct dmap *m, uint32_t k)
{
	uint32_t mask = m->buckets - 1, b = m->hash[k] & mask, step = 1;

	while (m->slot[b])
		b = (b + step++) & mask;
	m->slot[b] = k + 1;
}

/* Insert key index k (distinct keys only). Returns -1 when out of memory. */
static int dmap_insert(struct dmap *m, uint32_t k)
{
	if ((uint64_t)(m->entries + 1) * 4 >= (uint64_t)m->buckets * 3) {
		struct dmap g = {NULL, m->hash, m->buckets ? m->buckets * 2 : 64, m->entries};
		uint32_t i;

		if (g.buckets < m->buckets)
			return -1;
		g.slot = calloc(g.buckets, sizeof(*g.slot));
		if (!g.slot)
			return -1;
		for (i = 0; i < m->buckets; i++) {
			if (m->slot[i])
				dmap_place(&g, m->slot[i] - 1);
		}
		free(m->slot);
		*m = g;
	}
	dmap_place(m, k);
	m->entries++;
	return 0;
}

int llvm_dmap_order(const uint32_t *hash, const uint32_t *ins, uint32_t n, uint32_t *out)
{
	struct dmap m = {NULL, hash, 0, 0};
	uint32_t i, r = 0;

	for (i = 0; i < n; i++) {
		if (dmap_insert(&m, ins[i]) < 0) {
			free(m.slot);
			return -1;
		}
	}
	for (i = 0; i < m.buckets; i++) {
		if (m.slot[i])
			out[r++] = m.slot[i] - 1;
	}
	free(m.slot);
	return 0;
}

static const struct xfdr_thread_info *cmp_threads_base;

static int cmp_first_buffer(const void *x, const void *y)
{
	const struct xfdr_thread_info *a = &cmp_threads_base[*(const uint32_t *)x];
	const struct xfdr_thread_info *b = &cmp_threads_base[*(const uint32_t *)y];

	return (a->first_buffer > b->first_buffer) - (a->first_buffer < b->first_buffer);
}

int llvm_dmap_thread_order(const struct xfdr_trace *t, uint32_t n, uint32_t *out)
{
	struct xfdr_thread_info *info = malloc((n ? n : 1) * sizeof(*info));
	uint32_t *hash = malloc((n ? n : 1) * sizeof(*hash));
	uint32_t *ins = malloc((n ? n : 1) * sizeof(*ins));
	uint32_t i;
	int rc = -1;

	if (!info || !hash || !ins)
		goto out;
	for (i = 0; i < n; i++) {
		xfdr_trace_thread(t, i, &info[i]);
		/* Its key's pid is the Pid record's: none in version 2, whatever the reader says.
		 */
		hash[i] = llvm_dmap_thread_hash(
		    xfdr_trace_header(t)->version == 2 ? 0 : info[i].pid, info[i].thread_id);
		ins[i] = i;
	}
	cmp_threads_base = info;
	qsort(ins, n, sizeof(*ins), cmp_first_buffer);
	rc = llvm_dmap_order(hash, ins, n, out);
out:
	free(info);
	free(hash);
	free(ins);
	return rc;
}
