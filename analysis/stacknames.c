/*
 * analysis/stacknames.c - the names of a stack tree's frames (stacknames.h).
 *
 * The text of every name is kept once, in one pool, found again through a hash of the text;
 * a function id finds its name through a cache in front of the .map (each tree has its own:
 * ids are those of the trace a worker reads), so a name is interned once per id.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stacknames.h"

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (uint8_t)s[i];
		h *= 1099511628211ull;
	}
	return stree_hash64(h);
}

static uint32_t *slots_new(uint32_t n)
{
	uint32_t *s = malloc((size_t)n * sizeof(*s));

	if (s)
		memset(s, 0xff, (size_t)n * sizeof(*s));
	return s;
}

static int names_grow(struct stree *t)
{
	uint32_t cap = (t->name_slot_mask + 1) * 2, i, *s = slots_new(cap);

	if (!s)
		return -1;
	for (i = 0; i < t->name_count; i++) {
		uint64_t h = hash_bytes(t->pool + t->name_off[i], t->name_len[i]);
		uint32_t b = (uint32_t)h & (cap - 1);

		while (s[b] != STREE_NONE)
			b = (b + 1) & (cap - 1);
		s[b] = i;
	}
	free(t->name_slot);
	t->name_slot = s;
	t->name_slot_mask = cap - 1;
	return 0;
}

/* stree_intern() of a name already made folded-safe, into t's own names (its lock held). */
static uint32_t intern_clean(struct stree *t, const char *clean, size_t n)
{
	uint64_t h;
	uint32_t b, id;

	h = hash_bytes(clean, n);
	for (b = (uint32_t)h & t->name_slot_mask; t->name_slot[b] != STREE_NONE;
	     b = (b + 1) & t->name_slot_mask) {
		id = t->name_slot[b];
		if (t->name_len[id] == n && !memcmp(t->pool + t->name_off[id], clean, n))
			goto out;
	}
	id = STREE_NONE;
	if (t->name_count == t->name_cap) {
		uint32_t cap = t->name_cap ? t->name_cap * 2 : 64;
		uint32_t *off = realloc(t->name_off, cap * sizeof(*off)), *len;

		if (!off)
			goto out;
		t->name_off = off;
		len = realloc(t->name_len, cap * sizeof(*len));
		if (!len)
			goto out;
		t->name_len = len;
		t->name_cap = cap;
	}
	if (t->pool_len + n + 1 > t->pool_cap) {
		size_t cap = t->pool_cap ? t->pool_cap : 4096;
		char *p;

		while (cap < t->pool_len + n + 1)
			cap *= 2;
		if (cap > UINT32_MAX)
			goto out;
		p = realloc(t->pool, cap);
		if (!p)
			goto out;
		t->pool = p;
		t->pool_cap = cap;
	}
	id = t->name_count++;
	t->name_off[id] = (uint32_t)t->pool_len;
	t->name_len[id] = (uint32_t)n;
	memcpy(t->pool + t->pool_len, clean, n);
	t->pool[t->pool_len + n] = '\0';
	t->pool_len += n + 1;
	t->name_slot[b] = id;
	/* A table that cannot grow must not fill up (a probe would never end): give up. */
	if ((uint64_t)t->name_count * 2 > t->name_slot_mask && names_grow(t) < 0)
		id = STREE_NONE;
out:
	return id;
}

uint32_t stree_intern(struct stree *t, const char *s, size_t n)
{
	struct stree *home = t->home ? t->home : t;
	char stackbuf[256], *clean = stackbuf;
	uint32_t id;
	size_t i;

	if (n >= UINT32_MAX / 2)
		return STREE_NONE;
	if (n > sizeof(stackbuf)) {
		clean = malloc(n);
		if (!clean)
			return STREE_NONE;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		clean[i] = c == ';' ? ':' : (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	pthread_mutex_lock(&home->names_lock);
	id = intern_clean(home, clean, n);
	pthread_mutex_unlock(&home->names_lock);
	if (clean != stackbuf)
		free(clean);
	return id;
}

static int fid_grow(struct stree *t)
{
	uint32_t cap = t->fid_mask ? (t->fid_mask + 1) * 2 : 256, i, b;
	uint64_t *key = malloc(cap * sizeof(*key));
	uint32_t *val = malloc(cap * sizeof(*val));

	if (!key || !val) {
		free(key);
		free(val);
		return -1;
	}
	memset(key, 0xff, cap * sizeof(*key));
	for (i = 0; t->fid_mask && i <= t->fid_mask; i++) {
		if (t->fid_key[i] == UINT64_MAX)
			continue;
		for (b = (uint32_t)stree_hash64(t->fid_key[i]) & (cap - 1); key[b] != UINT64_MAX;
		     b = (b + 1) & (cap - 1))
			;
		key[b] = t->fid_key[i];
		val[b] = t->fid_name[i];
	}
	free(t->fid_key);
	free(t->fid_name);
	t->fid_key = key;
	t->fid_name = val;
	t->fid_mask = cap - 1;
	return 0;
}

uint32_t stree_fid_slot(struct stree *t, uint32_t fid)
{
	uint32_t b;

	if ((uint64_t)(t->fid_count + 1) * 2 > (uint64_t)t->fid_mask + 1 && fid_grow(t) < 0)
		return UINT32_MAX;
	for (b = (uint32_t)stree_hash64(fid) & t->fid_mask; t->fid_key[b] != UINT64_MAX;
	     b = (b + 1) & t->fid_mask)
		if (t->fid_key[b] == fid)
			break;
	return b;
}

uint32_t stree_function_name(struct stree *t, uint32_t fid)
{
	const char *s;
	char num[16];
	uint32_t b, id;

	if (fid == CALL_UNKNOWN_FUNCTION)
		return t->unknown_name;
	b = stree_fid_slot(t, fid);
	if (b == UINT32_MAX)
		return STREE_NONE;
	if (t->fid_key[b] == fid)
		return t->fid_name[b];
	s = xfdr_names_get(t->names, fid);
	if (!s) {
		snprintf(num, sizeof(num), "#%u", fid);
		s = num;
	}
	id = stree_intern(t, s, strlen(s));
	if (id == STREE_NONE)
		return id;
	t->fid_key[b] = fid;
	t->fid_name[b] = id;
	t->fid_count++;
	return id;
}

void stree_name_functions(const struct stree *t, uint32_t *fid)
{
	uint32_t i, k;

	for (k = 0; k < t->name_count; k++)
		fid[k] = STREE_NONE;
	for (i = 0; t->fid_mask && i <= t->fid_mask; i++) {
		if (t->fid_key[i] == UINT64_MAX)
			continue;
		k = t->fid_name[i];
		if (fid[k] == STREE_NONE || t->fid_key[i] < fid[k])
			fid[k] = (uint32_t)t->fid_key[i];
	}
}

const char *stree_name(const struct stree *t, uint32_t name, size_t *len)
{
	if (t->home)
		t = t->home;
	if (len)
		*len = t->name_len[name];
	return t->pool + t->name_off[name];
}

int stree_names_init(struct stree *t)
{
	if (pthread_mutex_init(&t->names_lock, NULL))
		return -1;
	t->name_slot = slots_new(256);
	t->name_slot_mask = 255;
	if (t->name_slot)
		return 0;
	pthread_mutex_destroy(&t->names_lock);
	return -1;
}

void stree_names_free(struct stree *t)
{
	free(t->fid_key);
	free(t->fid_name);
	if (t->home || !t->name_slot)
		return;
	free(t->pool);
	free(t->name_off);
	free(t->name_len);
	free(t->name_slot);
	pthread_mutex_destroy(&t->names_lock);
}

void stree_forget_functions(struct stree *t)
{
	if (t->fid_mask)
		memset(t->fid_key, 0xff, ((size_t)t->fid_mask + 1) * sizeof(*t->fid_key));
	t->fid_count = 0;
}

int stree_functions_take(struct stree *t, const struct stree *from)
{
	uint32_t i, b;

	for (i = 0; from->fid_mask && i <= from->fid_mask; i++) {
		if (from->fid_key[i] == UINT64_MAX)
			continue;
		b = stree_fid_slot(t, (uint32_t)from->fid_key[i]);
		if (b == UINT32_MAX)
			return -1;
		if (t->fid_key[b] == UINT64_MAX) {
			t->fid_key[b] = from->fid_key[i];
			t->fid_name[b] = from->fid_name[i];
			t->fid_count++;
		}
	}
	return 0;
}

static int name_cmp(const struct stree *t, uint32_t a, uint32_t b)
{
	size_t la, lb;
	const char *sa = stree_name(t, a, &la);
	const char *sb = stree_name(t, b, &lb);
	int c = memcmp(sa, sb, la < lb ? la : lb);

	return c ? c : (la > lb) - (la < lb);
}

static int by_text(const void *a, const void *b, void *t)
{
	return name_cmp(t, *(const uint32_t *)a, *(const uint32_t *)b);
}

uint32_t *stree_name_ranks(const struct stree *t, uint32_t *count)
{
	struct stree *home = t->home ? t->home : (struct stree *)t;
	uint32_t *order, *rank, k, n;
	int ok;

	pthread_mutex_lock(&home->names_lock);
	n = home->name_count;
	order = malloc(((size_t)n + 1) * sizeof(*order));
	rank = malloc(((size_t)n + 1) * sizeof(*rank));
	ok = order && rank;
	if (ok) {
		for (k = 0; k < n; k++)
			order[k] = k;
		qsort_r(order, n, sizeof(*order), by_text, home);
		for (k = 0; k < n; k++)
			rank[order[k]] = k;
	}
	pthread_mutex_unlock(&home->names_lock);
	free(order);
	if (!ok) {
		free(rank);
		return NULL;
	}
	*count = n;
	return rank;
}
