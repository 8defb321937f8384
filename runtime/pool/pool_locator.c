/*
 * runtime/pool/pool_locator.c - the "XFDRPOOL" locator at the start of the descriptor mapping,
 * and the header of the live trace (backing=file): how a tool finds the buffers without the
 * process, in a core dump (`xfdr core`) or in the live files (`xfdr recover`).
 *
 * Layout: xfdr/format.h (XFDR_POOL_*). The bytes are the writer's (writer/locator.c, like the
 * live header's: writer/file.c); this file gathers the pool's facts into a struct
 * wr_pool_locator and decides when and how they reach the mapping. Written whole by
 * pool_locator_write() at every pool_setup(): the magic zeroed, the fields encoded by
 * wr_pool_locator(), then the magic with a release store. Afterwards only tsc_hz and flags
 * change (and the header's cycle_frequency and bitfield with them), each with one atomic store
 * where wr_pool_locator_*_at() says the field lives, since the flush layer may set them from
 * any thread or a signal handler. pool_locator_clear() zeroes the magic before a pool is
 * unmapped, so only live pools are found.
 *
 * The magic is built at run time ("xfdrpool" with the case bit flipped by a value loaded from
 * memory), so the runtime's code and data never hold the 8 bytes "XFDRPOOL": a tool that scans
 * a core for them meets real locators (and, since it validates every candidate, nothing worse
 * than a stale copy anywhere else).
 *
 * What the flush layer reports about the clock is kept here as well, for later pools.
 */
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/pool/pool.h"
#include "writer/file.h"
#include "writer/locator.h"
#include "xfdr/format.h"

_Static_assert((int)POOL_FREE == (int)XFDR_POOL_STATE_FREE &&
		   (int)POOL_OWNED == (int)XFDR_POOL_STATE_OWNED &&
		   (int)POOL_FULL == (int)XFDR_POOL_STATE_FULL &&
		   (int)POOL_CLAIMING == (int)XFDR_POOL_STATE_CLAIMING,
	       "the locator publishes the pool's own state numbers");
_Static_assert(POOL_STATE_MASK == 3, "format.h: the state is bits 0-1 of ctl");
_Static_assert(sizeof(((struct pool_desc *)0)->used_bytes) == 8 &&
		   sizeof(((struct pool_desc *)0)->ctl) == 8 &&
		   sizeof(((struct pool_desc *)0)->claim_seq) == 8 &&
		   sizeof(((struct pool_desc *)0)->owner_tid) == 4 &&
		   sizeof(((struct pool_desc *)0)->owner_thread_id) == 4 &&
		   sizeof(((struct pool_desc *)0)->first_tsc) == 8 &&
		   sizeof(((struct pool_desc *)0)->last_tsc) == 8,
	       "format.h: the sizes of the descriptor fields the locator points at");
_Static_assert(XFDR_POOL_HEADER_BYTES % XFDR_CACHELINE == 0,
	       "the descriptors after the locator keep their cache-line alignment");

/* The case bit of ASCII letters; loaded, so that the compiler cannot fold the magic. */
static uint8_t magic_case_bit = 0x20;

static uint64_t known_tsc_hz;	  /* relaxed atomics: any thread, also a signal handler */
static uint64_t known_names_addr; /* the names directory (pool_locator_set_names()) */
static uint32_t known_invariant;

static uint32_t locator_flags(void)
{
	uint32_t flags = rt_pool.file_backed ? XFDR_POOL_FILE_BACKED : 0;

	if (xfdr_load_relaxed(&known_invariant))
		flags |= XFDR_POOL_INVARIANT_TSC;
	return flags;
}

static uint64_t *field64(uint8_t *base, size_t off)
{
	return (uint64_t *)(void *)(base + off);
}

static uint32_t *field32(uint8_t *base, size_t off)
{
	return (uint32_t *)(void *)(base + off);
}

/* The live trace's header, encoded by the writer; NULL in memory backing. */
static uint8_t *live_header(uint8_t out[XFDR_FILE_HEADER_BYTES])
{
	int inv = (int)xfdr_load_relaxed(&known_invariant);
	struct wr_file_header h = {
	    .cycle_frequency_hz = xfdr_load_relaxed(&known_tsc_hz),
	    .buffer_bytes = rt_pool.buffer_bytes,
	    .constant_tsc = inv,
	    .nonstop_tsc = inv,
	};

	if (!rt_pool.file_backed || !rt_pool.map)
		return NULL;
	wr_encode_file_header(out, &h);
	return rt_pool.map;
}

/* Copy the header's clock fields (cycle_frequency, bitfield) into the mapped one. */
static void header_clock_update(void)
{
	uint8_t h[XFDR_FILE_HEADER_BYTES];
	uint8_t *map = live_header(h);
	uint64_t hz;
	uint32_t bits;

	if (!map)
		return;
	memcpy(&hz, h + XFDR_HDR_CYCLE_FREQUENCY_OFF, sizeof(hz));
	memcpy(&bits, h + XFDR_HDR_BITFIELD_OFF, sizeof(bits));
	xfdr_store_relaxed(field64(map, XFDR_HDR_CYCLE_FREQUENCY_OFF), hz);
	xfdr_store_relaxed(field32(map, XFDR_HDR_BITFIELD_OFF), bits);
}

/* The locator's fields for rt_pool, as they are now. */
static void locator_fields(struct wr_pool_locator *loc, uint32_t session)
{
	*loc = (struct wr_pool_locator){
	    .pid = (uint64_t)getpid(),
	    .buffers_addr = (uint64_t)(uintptr_t)rt_pool.base,
	    .buffer_bytes = rt_pool.buffer_bytes,
	    .buffer_count = rt_pool.count,
	    .desc_stride = (uint32_t)sizeof(struct pool_desc),
	    .tsc_hz = xfdr_load_relaxed(&known_tsc_hz),
	    .session = session,
	    .flags = locator_flags(),
	    .used_bytes_at = (uint32_t)offsetof(struct pool_desc, used_bytes),
	    .ctl_at = (uint32_t)offsetof(struct pool_desc, ctl),
	    .claim_seq_at = (uint32_t)offsetof(struct pool_desc, claim_seq),
	    .owner_tid_at = (uint32_t)offsetof(struct pool_desc, owner_tid),
	    .owner_thread_id_at = (uint32_t)offsetof(struct pool_desc, owner_thread_id),
	    .first_tsc_at = (uint32_t)offsetof(struct pool_desc, first_tsc),
	    .last_tsc_at = (uint32_t)offsetof(struct pool_desc, last_tsc),
	    .descs_addr = (uint64_t)(uintptr_t)rt_pool.descs,
	    .names_addr = xfdr_load_relaxed(&known_names_addr),
	};
}

void pool_locator_write(uint32_t session)
{
	uint8_t h[XFDR_FILE_HEADER_BYTES];
	uint8_t *l = rt_pool.locator, *map = live_header(h);
	struct wr_pool_locator loc;
	uint64_t magic;

	if (!l)
		return;
	if (map)
		memcpy(map, h, sizeof(h));
	pool_locator_clear();
	locator_fields(&loc, session);
	wr_pool_locator(l, &loc);
	/* The magic in registers only: "xfdrpool", every letter's case bit flipped. */
	memcpy(&magic, "xfdrpool", sizeof(magic));
	magic ^= (uint64_t)xfdr_load_relaxed(&magic_case_bit) * 0x0101010101010101ull;
	/* After every field: a reader that sees the magic in a consistent snapshot sees them. */
	xfdr_store_release(wr_pool_locator_magic_at(l), magic);
}

void pool_locator_clear(void)
{
	if (rt_pool.locator)
		xfdr_store_release(wr_pool_locator_magic_at(rt_pool.locator), (uint64_t)0);
}

void pool_locator_set_names(uint64_t addr)
{
	uint8_t *l = rt_pool.locator;

	xfdr_store_relaxed(&known_names_addr, addr);
	if (l)
		xfdr_store_relaxed(wr_pool_locator_names_addr_at(l), addr);
}

XFDR_NOINSTR void pool_locator_set_tsc_hz(uint64_t hz)
{
	uint8_t *l = rt_pool.locator;

	if (!hz)
		return;
	xfdr_store_relaxed(&known_tsc_hz, hz);
	if (l)
		xfdr_store_relaxed(wr_pool_locator_tsc_hz_at(l), hz);
	header_clock_update();
}

XFDR_NOINSTR uint64_t pool_locator_tsc_hz(void)
{
	return xfdr_load_relaxed(&known_tsc_hz);
}

XFDR_NOINSTR void pool_locator_set_invariant_tsc(int invariant)
{
	uint8_t *l = rt_pool.locator;

	xfdr_store_relaxed(&known_invariant, (uint32_t)(invariant != 0));
	if (l)
		xfdr_store_relaxed(wr_pool_locator_flags_at(l), locator_flags());
	header_clock_update();
}
