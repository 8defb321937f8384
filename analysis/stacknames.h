/*
 * analysis/stacknames.h - the names of a stack tree's frames (stacknames.c), for the tree's
 * builder (stacktree.c) and its runs (stackwalk.c).
 *
 * A name is a text interned once, made safe for a folded line; its id is the same in a tree
 * and in every worker's tree that shares its names (struct stree's home), which intern and
 * read them under the home's names_lock. Each tree keeps its own cache of function ids.
 */
#ifndef XFDR_ANALYSIS_STACKNAMES_H
#define XFDR_ANALYSIS_STACKNAMES_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/stacktree.h"

/* A 64-bit mix (murmur3's finalizer): the hash of every table of the tree. */
static inline uint64_t stree_hash64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

/* stree_names_init - t's own names, none yet, and their lock. 0, or -1 (no memory). */
int stree_names_init(struct stree *t);

/* stree_names_free - t's function cache, and its names unless they are its home's. */
void stree_names_free(struct stree *t);

/*
 * stree_intern - the name of the text s (n bytes), made folded-safe (';' -> ':', control
 * bytes -> '?'), among the names of t's home. Its id, or STREE_NONE when out of memory.
 */
uint32_t stree_intern(struct stree *t, const char *s, size_t n);

/* stree_function_name - the name of function id fid (t->names', else "#ID"), cached. Its id,
 * or STREE_NONE when out of memory. */
uint32_t stree_function_name(struct stree *t, uint32_t fid);

/*
 * stree_fid_slot - the slot of function id fid in t's cache: its own, or the empty one it would
 * take (with room for one more). UINT32_MAX when out of memory.
 */
uint32_t stree_fid_slot(struct stree *t, uint32_t fid);

/* stree_forget_functions - empty t's cache: another trace's ids name other functions. */
void stree_forget_functions(struct stree *t);

/*
 * stree_functions_take - the ids from's cache names that t's does not, added to t's (from a
 * worker sharing t's names). 0, or -1 (no memory).
 */
int stree_functions_take(struct stree *t, const struct stree *from);

/*
 * stree_name_ranks - rank[name] for every name: its place in name order (bytewise), and in
 * *count how many names there are (read under their lock: workers may be adding more). The
 * caller frees it. NULL when out of memory.
 */
uint32_t *stree_name_ranks(const struct stree *t, uint32_t *count);

#endif /* XFDR_ANALYSIS_STACKNAMES_H */
