/*
 * rebuild/core_names.c - the "XFDRNAMS" names directory of a core (core_names.h): thread slots
 * and id -> address tables, read through the core's segments.
 *
 * Everything read is bounded before it is used: a directory whose magic, version or sizes are
 * wrong is no directory; counts are capped by what the layout can hold, and a table or slot
 * the core did not dump is left out, never guessed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/bytes.h"
#include "rebuild/core_names.h"

#define SLOTS_MAX (1u << 20)
#define SLOT_STRIDE_MAX (1u << 16)
#define NODE_STRIDE_MAX 4096u
#define CHUNK_IDS_MAX (1u << 16)

static int no_memory(struct xfdr_error *err)
{
	if (err) {
		err->offset = 0;
		snprintf(err->text, sizeof(err->text),
			 "out of memory reading the names in the core");
	}
	return -1;
}

/* Say why there are no names; returns 0. */
static int missing(struct rb_core_names *n, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int missing(struct rb_core_names *n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(n->missing_text, sizeof(n->missing_text), fmt, ap);
	va_end(ap);
	n->missing = n->missing_text;
	return 0;
}

/* Is [off, off + len) inside a record of bytes? */
static int fits(uint32_t off, uint32_t len, uint32_t bytes)
{
	return off <= bytes && len <= bytes - off;
}

/* ---- Threads ------------------------------------------------------------------------------ */

struct slot_layout {
	uint64_t addr;
	uint32_t count, stride, tid_at, thread_id_at, id_session_at, name_at, exit_name_at;
};

static void copy_name(char *dst, const uint8_t *src)
{
	memcpy(dst, src, XFDR_NAMES_NAME_BYTES);
	dst[XFDR_NAMES_NAME_BYTES] = '\0';
}

/* The slots whose thread id was given in session: one read of the whole table. */
static int read_threads(const struct rb_core *c, const struct slot_layout *l, uint32_t session,
			int big, struct rb_core_names *n, struct xfdr_error *err)
{
	uint8_t *slots, *s;
	uint32_t i;
	int rc;

	if (!l->count)
		return 0;
	slots = malloc((size_t)l->count * l->stride);
	n->threads = calloc(l->count, sizeof(*n->threads));
	if (!slots || !n->threads) {
		free(slots);
		return no_memory(err);
	}
	rc = rb_core_read(c, l->addr, slots, (size_t)l->count * l->stride, err);
	if (rc < 0) {
		free(slots);
		return -1;
	}
	for (i = 0; rc == 0 && i < l->count; i++) {
		struct rb_core_thread *t = &n->threads[n->nthreads];

		s = slots + (size_t)i * l->stride;
		t->tid = rd_u32(s + l->tid_at, big);
		t->thread_id = rd_u32(s + l->thread_id_at, big);
		if (!t->tid || !t->thread_id || rd_u32(s + l->id_session_at, big) != session)
			continue;
		copy_name(t->name, s + l->exit_name_at);
		if (!t->name[0])
			copy_name(t->name, s + l->name_at);
		n->nthreads++;
	}
	free(slots);
	/* a table the core did not dump whole: no thread names (slots are untouched until used) */
	return 0;
}

const struct rb_core_thread *rb_core_names_thread(const struct rb_core_names *n, uint32_t tid,
						  uint32_t thread_id)
{
	size_t i;

	for (i = 0; i < n->nthreads; i++)
		if (n->threads[i].tid == tid && n->threads[i].thread_id == thread_id)
			return &n->threads[i];
	return NULL;
}

/* ---- Function ids ------------------------------------------------------------------------- */

static int add_function(struct rb_core_source *src, size_t *cap, uint32_t id, uint64_t addr,
			struct xfdr_error *err)
{
	struct rb_core_function *v;

	if (!addr)
		return 0;
	if (src->nfn == *cap) {
		*cap = *cap ? *cap * 2 : 256;
		v = realloc(src->fn, *cap * sizeof(*v));
		if (!v)
			return no_memory(err);
		src->fn = v;
	}
	src->fn[src->nfn].id = id;
	src->fn[src->nfn].addr = addr;
	src->nfn++;
	return 0;
}

/* TABLE: u64 addresses of ids 1 .. count, read a few thousand at a time. */
static int read_table(const struct rb_core *c, const uint8_t *d, int big,
		      struct rb_core_source *src, struct xfdr_error *err)
{
	enum { STEP = 4096 };
	uint64_t table = rd_u64(d + XFDR_NAMES_SRC_TABLE_ADDR_OFF, big);
	uint8_t buf[STEP * 8];
	size_t cap = 0;
	uint32_t id, k, n;
	int rc;

	src->count = rd_u32(d + XFDR_NAMES_SRC_COUNT_OFF, big);
	if (src->count > XFDR_FUNCTION_ID_MAX - 1)
		src->count = XFDR_FUNCTION_ID_MAX - 1;
	for (id = 1; id <= src->count; id += n) {
		n = src->count - id + 1 < STEP ? src->count - id + 1 : STEP;
		rc = rb_core_read(c, table + (uint64_t)(id - 1) * 8, buf, (size_t)n * 8, err);
		if (rc < 0)
			return -1;
		if (rc)
			continue; /* not dumped: these ids stay unnamed */
		for (k = 0; k < n; k++)
			if (add_function(src, &cap, id + k, rd_u64(buf + 8 * k, big), err))
				return -1;
	}
	return 0;
}

/* CHUNKS: the chunk pointers, then each chunk's nodes in one read. */
static int read_chunks(const struct rb_core *c, const uint8_t *d, int big,
		       struct rb_core_source *src, struct xfdr_error *err)
{
	uint64_t table = rd_u64(d + XFDR_NAMES_SRC_TABLE_ADDR_OFF, big);
	uint64_t count_addr = rd_u64(d + XFDR_NAMES_SRC_COUNT_ADDR_OFF, big);
	uint32_t chunks = rd_u32(d + XFDR_NAMES_SRC_CHUNK_COUNT_OFF, big);
	uint32_t per = rd_u32(d + XFDR_NAMES_SRC_CHUNK_IDS_OFF, big);
	uint32_t stride = rd_u32(d + XFDR_NAMES_SRC_NODE_STRIDE_OFF, big);
	uint32_t addr_at = rd_u32(d + XFDR_NAMES_SRC_ADDR_AT_OFF, big);
	uint32_t state_at = rd_u32(d + XFDR_NAMES_SRC_STATE_AT_OFF, big);
	uint32_t mask = rd_u32(d + XFDR_NAMES_SRC_STATE_MASK_OFF, big);
	uint32_t live = rd_u32(d + XFDR_NAMES_SRC_STATE_LIVE_OFF, big);
	uint8_t word[8], *nodes;
	uint32_t next, ch, k, id;
	size_t cap = 0;
	int rc;

	if (!per || per > CHUNK_IDS_MAX || !stride || stride > NODE_STRIDE_MAX ||
	    !fits(addr_at, 8, stride) || !fits(state_at, 4, stride) || !chunks ||
	    chunks > (XFDR_FUNCTION_ID_MAX / per) + 1)
		return 0;
	rc = rb_core_read(c, count_addr, word, 4, err);
	if (rc)
		return rc < 0 ? -1 : 0;
	next = rd_u32(word, big);
	if (next > XFDR_FUNCTION_ID_MAX)
		next = XFDR_FUNCTION_ID_MAX;
	src->count = next ? next - 1 : 0;
	nodes = malloc((size_t)per * stride);
	if (!nodes)
		return no_memory(err);
	for (ch = 0; ch < chunks && (uint64_t)ch * per < next; ch++) {
		uint64_t at;

		rc = rb_core_read(c, table + (uint64_t)ch * 8, word, 8, err);
		if (rc < 0)
			goto fail;
		at = rc ? 0 : rd_u64(word, big);
		if (!at)
			continue;
		rc = rb_core_read(c, at, nodes, (size_t)per * stride, err);
		if (rc < 0)
			goto fail;
		if (rc)
			continue;
		for (k = 0; k < per; k++) {
			const uint8_t *nd = nodes + (size_t)k * stride;

			id = ch * per + k;
			if (!id || id >= next || (rd_u32(nd + state_at, big) & mask) != live)
				continue;
			if (add_function(src, &cap, id, rd_u64(nd + addr_at, big), err))
				goto fail;
		}
	}
	free(nodes);
	return 0;
fail:
	free(nodes);
	return -1;
}

static int read_source(const struct rb_core *c, const uint8_t *d, int big,
		       struct rb_core_source *src, struct xfdr_error *err)
{
	memcpy(src->name, d + XFDR_NAMES_SRC_NAME_OFF, XFDR_NAMES_SRC_NAME_BYTES);
	src->name[XFDR_NAMES_SRC_NAME_BYTES] = '\0';
	switch (rd_u32(d + XFDR_NAMES_SRC_KIND_OFF, big)) {
	case XFDR_NAMES_TABLE:
		return read_table(c, d, big, src, err);
	case XFDR_NAMES_CHUNKS:
		return read_chunks(c, d, big, src, err);
	default:
		return 0; /* a kind of a later layout: its ids stay unnamed */
	}
}

/* ---- The directory ------------------------------------------------------------------------ */

int rb_core_names_read(const struct rb_core *c, const struct rb_core_pool *pool,
		       struct rb_core_names *out, struct xfdr_error *err)
{
	uint8_t d[XFDR_NAMES_HEADER_BYTES + XFDR_NAMES_SOURCES_MAX * XFDR_NAMES_SOURCE_BYTES];
	uint64_t addr = pool->loc.names_addr;
	int big = pool->loc.big_endian, rc;
	struct slot_layout l;
	uint32_t bytes, nsrc, i;

	memset(out, 0, sizeof(*out));
	if (!addr)
		return missing(out, "the pool locator points at no names directory (recorded by an "
				    "older xfdr)");
	rc = rb_core_read(c, addr, d, XFDR_NAMES_HEADER_BYTES, err);
	if (rc)
		return rc < 0 ? -1
			      : missing(out, "the names directory at 0x%llx is not in the core",
					(unsigned long long)addr);
	if (memcmp(d, XFDR_NAMES_MAGIC, 8) ||
	    rd_u32(d + XFDR_NAMES_VERSION_OFF, big) != XFDR_NAMES_LAYOUT_VERSION)
		return missing(out, "no \"XFDRNAMS\" of version 1 at 0x%llx",
			       (unsigned long long)addr);
	nsrc = rd_u32(d + XFDR_NAMES_SOURCE_COUNT_OFF, big);
	bytes = rd_u32(d + XFDR_NAMES_BYTES_OFF, big);
	if (nsrc > XFDR_NAMES_SOURCES_MAX ||
	    bytes != XFDR_NAMES_HEADER_BYTES + nsrc * XFDR_NAMES_SOURCE_BYTES)
		return missing(out, "the names directory at 0x%llx has a bad size",
			       (unsigned long long)addr);
	rc = rb_core_read(c, addr + XFDR_NAMES_HEADER_BYTES, d + XFDR_NAMES_HEADER_BYTES,
			  bytes - XFDR_NAMES_HEADER_BYTES, err);
	if (rc)
		return rc < 0 ? -1
			      : missing(out, "the names directory at 0x%llx is cut short",
					(unsigned long long)addr);
	l = (struct slot_layout){
	    .addr = rd_u64(d + XFDR_NAMES_SLOTS_ADDR_OFF, big),
	    .count = rd_u32(d + XFDR_NAMES_SLOT_COUNT_OFF, big),
	    .stride = rd_u32(d + XFDR_NAMES_SLOT_STRIDE_OFF, big),
	    .tid_at = rd_u32(d + XFDR_NAMES_TID_AT_OFF, big),
	    .thread_id_at = rd_u32(d + XFDR_NAMES_THREAD_ID_AT_OFF, big),
	    .id_session_at = rd_u32(d + XFDR_NAMES_ID_SESSION_AT_OFF, big),
	    .name_at = rd_u32(d + XFDR_NAMES_NAME_AT_OFF, big),
	    .exit_name_at = rd_u32(d + XFDR_NAMES_EXIT_NAME_AT_OFF, big),
	};
	if (l.addr && l.count <= SLOTS_MAX && l.stride && l.stride <= SLOT_STRIDE_MAX &&
	    fits(l.tid_at, 4, l.stride) && fits(l.thread_id_at, 4, l.stride) &&
	    fits(l.id_session_at, 4, l.stride) &&
	    fits(l.name_at, XFDR_NAMES_NAME_BYTES, l.stride) &&
	    fits(l.exit_name_at, XFDR_NAMES_NAME_BYTES, l.stride) &&
	    read_threads(c, &l, pool->loc.session, big, out, err))
		goto fail;
	for (i = 0; i < nsrc; i++) {
		if (read_source(c, d + XFDR_NAMES_HEADER_BYTES + i * XFDR_NAMES_SOURCE_BYTES, big,
				&out->sources[out->nsources], err))
			goto fail;
		out->nsources++;
	}
	return 0;
fail:
	out->nsources++; /* the one that failed is freed too */
	rb_core_names_free(out);
	return -1;
}

void rb_core_names_free(struct rb_core_names *n)
{
	size_t i;

	for (i = 0; i < n->nsources; i++)
		free(n->sources[i].fn);
	free(n->threads);
	memset(n, 0, sizeof(*n));
}
