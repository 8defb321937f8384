/*
 * runtime/symbols/fnmap.h - the function-id map of the -finstrument-functions hooks: a code
 * address -> a 28-bit function id (the inline lookup: fnmap_fast.h).
 *
 * Ids: a function's address gets an id the first time any thread calls it, 1, 2, 3, ... in
 * that order; the same address keeps its id for the life of the process (sessions and
 * flushes included). Two threads that meet a new function at the same moment may each take
 * an id; one wins, the other id is never used (a gap in the numbering, never a duplicate).
 * When no id can be given the event is recorded with FNMAP_ID_NONE, so entries and exits stay
 * balanced, and the cause is counted, reported once on stderr and listed in the .map file:
 *   overflow   more distinct functions than 28-bit ids (FNMAP_ID_NONE - 1 of them)
 *   no_memory  a chunk of nodes or the hash tables could not be allocated
 *   reentrant  a signal handler ran instrumented code while its thread was creating the map
 * and, from the -pg -mfentry hooks (runtime/hooks/fentry.c), whose ids stay balanced through
 * their own shadow stack of (frame, id):
 *   too_deep   a call deeper than that shadow stack holds (FENTRY_STACK_FRAMES)
 *   nested     a signal handler ran instrumented code while its thread was inside the hook
 *   no_stack   the thread's shadow stack could not be mapped, or was released at thread exit
 *
 * The .map sidecar lists the ids, their names and the refused lookups by cause
 * (runtime/flush/map_functions.c; format: doc/map-format.md).
 */
#ifndef XFDR_RUNTIME_SYMBOLS_FNMAP_H
#define XFDR_RUNTIME_SYMBOLS_FNMAP_H

#include <stdint.h>

#include "runtime/symbols/fnmap_fast.h"
#include "xfdr/format.h"

struct cds_lfht;

enum fnmap_unassigned_cause {
	FNMAP_OVERFLOW = 0,
	FNMAP_NO_MEMORY = 1,
	FNMAP_REENTRANT = 2,
	FNMAP_TOO_DEEP = 3,
	FNMAP_NESTED = 4,
	FNMAP_NO_STACK = 5,
	FNMAP_CAUSES = 6,
};

/* Ids handed out so far (gaps from lost races included): the next id is this + 1. */
uint32_t fnmap_ids_given(void);

/* The address that owns id, 0 if none. Context: any, async-signal-safe. */
uintptr_t fnmap_addr_of(uint32_t id);

/*
 * fnmap_on_new_id - fn is called with each id this process gives from now on, by the thread
 * that gave it, right after (the id's address is then fnmap_addr_of()'s); NULL: nobody. Ids are
 * given by the hooks, signal handlers included, so fn must be async-signal-safe and must not
 * call instrumented code. For the live .map (runtime/flush/livemap.c), a higher layer.
 * Context: any; the last call wins.
 */
void fnmap_on_new_id(void (*fn)(uint32_t id));

/*
 * fnmap_take_for_listing - 1 and *addr when id is a function's (as fnmap_addr_of()) and no
 * call with this listing number took it before; 0 otherwise. A listing number (any but 0)
 * names one file being written: with it, two writers that may each list an id (the one that
 * gave it, and one listing every id) write it once. Only the last listing number per id is
 * kept, in 24 bits (numbers 2^24 - 1 apart are one). Context: calls with one listing number
 * serialised by the caller; async-signal-safe.
 */
int fnmap_take_for_listing(uint32_t id, uint32_t listing, uintptr_t *addr);

/*
 * Where the map keeps id -> address, for a core's reader (the "XFDRNAMS" names directory,
 * xfdr/format.h): id k's node is at chunk k / chunk_ids of the chunk pointer array, index
 * k % chunk_ids; its address is the u64 at addr_at, and it is k's when the u32 at state_at,
 * masked with state_mask, is state_live. next_id holds the next id to give (a u32).
 */
struct fnmap_layout {
	uintptr_t chunks, next_id;
	uint32_t chunk_count, chunk_ids, node_stride;
	uint32_t addr_at, state_at, state_mask, state_live;
};

void fnmap_layout(struct fnmap_layout *l);

/* Lookups that got FNMAP_ID_NONE for this cause. */
uint64_t fnmap_unassigned(enum fnmap_unassigned_cause cause);

/* The name of a cause in the .map sidecar: "overflow", "no_memory", "reentrant", ... */
const char *fnmap_cause_name(enum fnmap_unassigned_cause cause);

/*
 * fnmap_refuse - count an event recorded with FNMAP_ID_NONE for cause (a hook that could not
 * attribute it, e.g. fentry.c's too_deep); the first of each cause is reported on stderr.
 * Context: any thread, signal handlers included; one atomic add (and one write(2) the first
 * time). Returns FNMAP_ID_NONE.
 */
uint32_t fnmap_refuse(enum fnmap_unassigned_cause cause);

/*
 * Around fork(): the child must not inherit a table resize under way, and urcu-bp (the map's
 * RCU flavor) must be told, so that its reader registry is consistent in the child (liburcu
 * asks the application to call its hooks from pthread_atfork handlers). Call these from the
 * prepare, parent and child handlers: the child one at once, not later (urcu_bp_before_fork()
 * blocks every signal until then). The prepare one waits for a resize another thread is
 * making (under a millisecond). The parent function does nothing a second time; the child one
 * is called once, and only after fnmap_before_fork().
 * A map being created by another thread at fork() needs nothing: see ensure_ready().
 *
 * fnmap_fork_unused - first, in the prepare handler: 1 when the map was never set up (no
 * table, no urcu-bp reader, no id: a program that has not met a function by its address).
 * Then nothing needs holding, a set-up another thread starts waits until
 * fnmap_after_fork_parent(), and neither fnmap_before_fork() nor the child function is
 * called. 0: call fnmap_before_fork(). Either way the parent and child functions write no page
 * of ours that fork() made copy-on-write (fork_page.h); urcu-bp's hooks write its own.
 * Context: the forking thread.
 */
int fnmap_fork_unused(void);
void fnmap_before_fork(void);
void fnmap_after_fork_parent(void);
void fnmap_after_fork_child(void);

/*
 * Inspection, for the runtime's own tests (tests/unit/runtime): hidden like every runtime
 * symbol, so libxfdr.so never exports them; a test linking libxfdr.a reaches them.
 *
 * fnmap_inspect_started - 1 once a thread has begun creating the map (0: fnmap_fork_unused()).
 * fnmap_inspect_limit_ids - ids from limit on are refused as overflow (FNMAP_ID_NONE, the
 *   default, restores): 2^28 functions are out of a test's reach.
 * fnmap_inspect_shape - the sizes a shard's table grows between: from init_buckets, doubled
 *   while it holds more than max_load functions a bucket, up to max_buckets.
 * fnmap_inspect_shard - shard i's table (i < shape.shards), NULL before the map exists.
 */
struct fnmap_inspect_shape {
	unsigned shards;
	unsigned long init_buckets, max_buckets, max_load;
};
int fnmap_inspect_started(void);
void fnmap_inspect_limit_ids(uint32_t limit);
void fnmap_inspect_shape(struct fnmap_inspect_shape *s);
struct cds_lfht *fnmap_inspect_shard(unsigned i);

#endif /* XFDR_RUNTIME_SYMBOLS_FNMAP_H */
