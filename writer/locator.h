/*
 * writer/locator.h - encode the "XFDRPOOL" pool locator (layout: xfdr/format.h, XFDR_POOL_*)
 * and the "XFDRNAMS" names directory (XFDR_NAMES_*) it points at.
 *
 * Pure encoding into caller-provided memory, in the byte order of the machine that runs the
 * code, reserved bytes zero; no I/O, no state, no clock.
 *
 * The magic (bytes 0-7) is the caller's: wr_pool_locator() never touches it. The runtime
 * zeroes it before the fields change and stores it last, with a release store, so that a tool
 * that finds the magic finds whole fields; and it builds the magic at run time, so that the
 * library never holds the 8 bytes a core search looks for. So the writer has no string
 * constant of it (format.h's XFDR_POOL_MAGIC is for the tools that search).
 *
 * Fields changed in place after the locator is published (tsc_hz, flags, names_addr) and the magic
 * word are naturally aligned integers in machine order at their format.h offsets: the owner updates
 * one with a single (atomic) store of the value through wr_pool_locator_*_at().
 */
#ifndef XFDR_WRITER_LOCATOR_H
#define XFDR_WRITER_LOCATOR_H

#include <stddef.h>
#include <stdint.h>

#include "xfdr/format.h"

_Static_assert(XFDR_POOL_TSC_HZ_OFF % 8 == 0 && XFDR_POOL_FLAGS_OFF % 4 == 0 &&
		   XFDR_POOL_NAMES_ADDR_OFF % 8 == 0,
	       "format.h: the in-place fields are naturally aligned");

/*
 * The fields of "XFDRPOOL" (version and header_bytes are the layout's constants,
 * XFDR_POOL_LAYOUT_VERSION and XFDR_POOL_HEADER_BYTES). The *_at fields are offsets of the
 * descriptor's fields inside one descriptor.
 */
struct wr_pool_locator {
	uint64_t pid;		     /* of the recording process */
	uint64_t buffers_addr;	     /* address of buffer 0 in the recording process */
	uint64_t buffer_bytes;	     /* size of every buffer */
	uint32_t buffer_count;	     /* buffers, and descriptors after the locator */
	uint32_t desc_stride;	     /* bytes of one descriptor */
	uint64_t tsc_hz;	     /* the trace header's cycle_frequency; 0: not known yet */
	uint32_t session;	     /* buffers of other sessions are stale */
	uint32_t flags;		     /* XFDR_POOL_INVARIANT_TSC, XFDR_POOL_FILE_BACKED */
	uint32_t used_bytes_at;	     /* u64 */
	uint32_t ctl_at;	     /* u64: state bits 0-1, generation bits 32-63 */
	uint32_t claim_seq_at;	     /* u64 */
	uint32_t owner_tid_at;	     /* u32 */
	uint32_t owner_thread_id_at; /* u32 */
	uint32_t first_tsc_at;	     /* u64 */
	uint32_t last_tsc_at;	     /* u64 */
	uint64_t descs_addr;	     /* address of descriptor 0 in the recording process */
	uint64_t names_addr;	     /* the names directory (XFDRNAMS); 0: none */
};

/*
 * wr_pool_locator - encode bytes 8 to XFDR_POOL_HEADER_BYTES of the locator at p: the layout
 * version, header_bytes, the fields of loc, and zeroes in the reserved bytes. Bytes 0-7 (the
 * magic) are left as they are. Plain stores: the caller makes sure no one else writes the
 * locator meanwhile. Returns XFDR_POOL_HEADER_BYTES.
 */
size_t wr_pool_locator(uint8_t *p, const struct wr_pool_locator *loc);

/*
 * Where the fields updated in place live, for one atomic store of the value; p is the locator
 * and 8-byte aligned (it starts a page).
 */
static inline uint64_t *wr_pool_locator_magic_at(uint8_t *p)
{
	return (uint64_t *)(void *)p;
}

static inline uint64_t *wr_pool_locator_tsc_hz_at(uint8_t *p)
{
	return (uint64_t *)(void *)(p + XFDR_POOL_TSC_HZ_OFF);
}

static inline uint64_t *wr_pool_locator_names_addr_at(uint8_t *p)
{
	return (uint64_t *)(void *)(p + XFDR_POOL_NAMES_ADDR_OFF);
}

static inline uint32_t *wr_pool_locator_flags_at(uint8_t *p)
{
	return (uint32_t *)(void *)(p + XFDR_POOL_FLAGS_OFF);
}

/*
 * The names directory ("XFDRNAMS", format.h): where a core's reader finds the names of the
 * threads and functions. The *_at fields are offsets inside one thread slot.
 */
struct wr_names_header {
	uint64_t slots_addr; /* thread slot 0 */
	uint32_t slot_count;
	uint32_t slot_stride;
	uint32_t tid_at;	/* u32 */
	uint32_t thread_id_at;	/* u32 */
	uint32_t id_session_at; /* u32 */
	uint32_t name_at;	/* 16 bytes */
	uint32_t exit_name_at;	/* 16 bytes */
	uint32_t source_count;	/* <= XFDR_NAMES_SOURCES_MAX */
};

/* One space of function ids (the CHUNKS fields are 0 for a TABLE). */
struct wr_names_source {
	const char *name; /* at most 8 bytes are kept */
	uint32_t kind;	  /* XFDR_NAMES_TABLE, XFDR_NAMES_CHUNKS */
	uint32_t count;
	uint64_t table_addr;
	uint64_t count_addr;
	uint32_t chunk_count, chunk_ids, node_stride;
	uint32_t addr_at, state_at, state_mask, state_live;
};

/*
 * wr_names_header - encode the directory's XFDR_NAMES_HEADER_BYTES at p, magic included;
 * wr_names_source - source i's XFDR_NAMES_SOURCE_BYTES at p. Plain stores. Each returns the
 * bytes it wrote.
 */
size_t wr_names_header(uint8_t *p, const struct wr_names_header *h);
size_t wr_names_source(uint8_t *p, const struct wr_names_source *src);

#endif /* XFDR_WRITER_LOCATOR_H */
