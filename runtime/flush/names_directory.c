/*
 * runtime/flush/names_directory.c - the "XFDRNAMS" names directory (names_directory.h).
 *
 * It is plain bytes in the library's .bss, rewritten whole at each publish: nothing in the
 * process reads it; a core dump keeps it, and the tables it points at, as they were. Only
 * addresses and offsets are published, never names: they are read from the thread slots and
 * named from the mapped files after the fact, so recording pays nothing for them.
 */
#include <stddef.h>
#include <stdint.h>

#include "runtime/base/compiler.h"
#include "runtime/flush/map_functions.h"
#include "runtime/flush/names_directory.h"
#include "runtime/pool/pool.h"
#include "runtime/record/thread.h"
#include "runtime/symbols/fnmap.h"
#include "writer/locator.h"

static uint8_t directory[XFDR_NAMES_HEADER_BYTES + XFDR_NAMES_SOURCES_MAX * XFDR_NAMES_SOURCE_BYTES]
    __attribute__((aligned(8)));

/* The sources listed: each registered one with a table, then the -finstrument-functions map. */
static uint32_t put_sources(uint8_t *p)
{
	const struct map_fn_source *src;
	struct fnmap_layout l;
	uint32_t i, n = 0;

	for (i = 0; (src = map_fn_source_at(i)) && n < XFDR_NAMES_SOURCES_MAX - 1; i++) {
		if (!src->table)
			continue;
		p += wr_names_source(p, &(struct wr_names_source){
					    .name = src->name,
					    .kind = XFDR_NAMES_TABLE,
					    .count = src->table_count,
					    .table_addr = (uint64_t)(uintptr_t)src->table,
					});
		n++;
	}
	fnmap_layout(&l);
	wr_names_source(p, &(struct wr_names_source){
			       .name = "cyg",
			       .kind = XFDR_NAMES_CHUNKS,
			       .table_addr = (uint64_t)l.chunks,
			       .count_addr = (uint64_t)l.next_id,
			       .chunk_count = l.chunk_count,
			       .chunk_ids = l.chunk_ids,
			       .node_stride = l.node_stride,
			       .addr_at = l.addr_at,
			       .state_at = l.state_at,
			       .state_mask = l.state_mask,
			       .state_live = l.state_live,
			   });
	return n + 1;
}

void names_directory_publish(void)
{
	struct thread_table *tt = &thread_table;
	struct wr_names_header h = {
	    .slots_addr = (uint64_t)(uintptr_t)xfdr_load_acquire(&tt->slots),
	    .slot_count = tt->max,
	    .slot_stride = (uint32_t)sizeof(struct thread_slot),
	    .tid_at = (uint32_t)offsetof(struct thread_slot, tid),
	    .thread_id_at = (uint32_t)offsetof(struct thread_slot, thread_id),
	    .id_session_at = (uint32_t)offsetof(struct thread_slot, id_session),
	    .name_at = (uint32_t)offsetof(struct thread_slot, name),
	    .exit_name_at = (uint32_t)offsetof(struct thread_slot, exit_name),
	};

	_Static_assert(sizeof(((struct thread_slot *)0)->name) == XFDR_NAMES_NAME_BYTES &&
			   sizeof(((struct thread_slot *)0)->exit_name) == XFDR_NAMES_NAME_BYTES,
		       "thread names are 16 bytes, as the directory says");
	h.source_count = put_sources(directory + XFDR_NAMES_HEADER_BYTES);
	wr_names_header(directory, &h);
	pool_locator_set_names((uint64_t)(uintptr_t)directory);
}
