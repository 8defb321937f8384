/*
 * runtime/symbols/fnmap.c - function address -> id for the -finstrument-functions hooks (the
 * id rules: fnmap.h; the .map lists the ids through runtime/flush/map_functions.c).
 *
 * Layout:
 *   nodes    id -> node, in chunks of 4096 nodes mapped on demand; chunk pointers are set
 *            once by compare-exchange and never freed, so an id's node never moves.
 *   shards   address -> node: 32 liburcu rculfhash tables, the top bits of the address's hash
 *            choosing one (lock-free lookup and insertion), urcu-bp flavor because the
 *            program's threads cannot be asked to register as RCU readers: urcu-bp registers
 *            them on their first read-side section.
 *   per-thread caches in front (fnmap_fast.h).
 *
 * Insertion: take the next id (fetch-add), fill its node, cds_lfht_add_unique(). The loser of
 * a race on the same address gets the winner's node back, marks its own node lost and
 * returns the winner's id. Nodes are never removed, so no grace period is ever waited for.
 *
 * Growth, without a thread. The map must not add a thread to the program: one thread, even
 * one that has come and gone, switches glibc to its multi-threaded paths for good
 * (__libc_single_threaded), and every fork() then costs both processes about 12 more page
 * faults and 20 us. CDS_LFHT_AUTO_RESIZE starts liburcu's resize worker thread with the
 * table, so no table has it: the thread whose insertion leaves its shard with more than 2
 * nodes a bucket doubles that shard itself, at once, with cds_lfht_resize(). And a shard stops
 * at 8192 buckets: liburcu 0.13 fills a new bucket level of 8192 or more (growing to 16384
 * buckets) on transient threads, one per CPU (partition_resize_helper(), also under an
 * explicit cds_lfht_resize(); a table created that large needs none, but 16384 buckets cost
 * every program 256 KiB). Why 32 shards, not one table held at 8192 buckets: past 16,384
 * functions its chains lengthen, and lookups with them. fnmap_id_uncached() in random order
 * over n functions, medians on the Xeon VM (one table held at 8192 / 32 shards / one table
 * that liburcu's worker grew): n = 131,072: 338 / 94 / 130 ns; 524,288: 5.1 us / 330 / 354 ns.
 * 32 shards hold 2 a bucket up to 524,288 functions and start at the one table's size (32 x
 * 128 buckets, 64 KiB; their structs add 20 KiB). Past that, chains lengthen (4 a bucket at a
 * million functions: 765 ns, against 424). A doubling links at most 4096 bucket nodes (under
 * a millisecond), at most 192 times in a process's life.
 *
 * Synchronization rules relied on: cds_lfht_lookup() and cds_lfht_add_unique() need an RCU
 * read-side section of the table's flavor (urcu_bp_read_lock(): a nesting counter, so a
 * signal handler may nest one inside ours). cds_lfht_resize() must run outside one (a
 * signal handler nested in a lookup of its thread leaves the growth to a later insertion)
 * and, here, one at a time (grow_lock, taken by trylock: busy, the growth is skipped and the
 * shard's next insertion retries). The resizing thread blocks signals meanwhile, so that no
 * handler of its own forks or resizes inside the resize. A node's state is stored with
 * release after its fields; the sidecar writer reads it with acquire and lists only live nodes.
 *
 * No _LGPL_SOURCE here, unlike the rest of the runtime: liburcu 0.13's inline urcu-bp read
 * lock reads the reader struct at the 128-byte alignment its type declares, while the library
 * places readers 32 bytes into its registry chunks, so UBSan's alignment check fires inside
 * our object. The lock is taken only on a cache miss; the library call costs nothing there.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <urcu-bp.h>
#include <urcu/rculfhash.h>

#include "runtime/base/compiler.h"
#include "runtime/base/print.h"
#include "runtime/symbols/fnfilter.h"
#include "runtime/symbols/fnmap.h"
#include "runtime/symbols/fnmap_fast.h"
#include "runtime/symbols/fork_page.h"

/*
 * ThreadSanitizer cannot see the ordering liburcu gives (its atomics are inline assembly in
 * an uninstrumented library), so the one publication that matters is told to it: a node's
 * fields (and, through the chunk pointer's release, its chunk's mapping) before
 * cds_lfht_add_unique(), read by whoever reaches the node through the table.
 */
#if defined(__SANITIZE_THREAD__)
#define FNMAP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FNMAP_TSAN 1
#endif
#endif
#ifdef FNMAP_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define tsan_publish(p) __tsan_release(p)
#define tsan_reach(p) __tsan_acquire(p)
#else
#define tsan_publish(p) ((void)(p))
#define tsan_reach(p) ((void)(p))
#endif

#define CHUNK_SHIFT 12
#define CHUNK_IDS (1u << CHUNK_SHIFT)
#define CHUNK_COUNT ((FNMAP_ID_NONE >> CHUNK_SHIFT) + 1)

#define SHARD_BITS 5
#define SHARD_COUNT (1u << SHARD_BITS)
#define SHARD_INIT_BUCKETS 128ul
/* 16384 buckets would spawn liburcu's partition threads (see above). */
#define SHARD_MAX_BUCKETS 8192ul
#define SHARD_MAX_LOAD 2ul

#define CACHE_BYTES (FNMAP_CACHE_ENTRIES * sizeof(struct fnmap_cache_entry))

enum node_state {
	NODE_EMPTY = 0,
	NODE_LIVE = 1, /* in the table: this id belongs to addr */
	NODE_LOST = 2, /* lost the insertion race: id unused */
};

/*
 * A node's state word: enum node_state in the low byte; above it, for a live node, the listing
 * generation that took it last (fnmap_take_for_listing()), 0 for none.
 */
#define NODE_STATE_MASK 0xffu
#define NODE_LISTED_SHIFT 8

struct fnmap_node {
	struct cds_lfht_node ht;
	uintptr_t addr;
	uint32_t id;
	uint32_t state;
};

/*
 * The set-up's state word: the low half is the state; while RUNNING the high half is the pid
 * of the process whose thread creates the map (ensure_ready(): a fork child's waiter).
 */
enum init_state {
	INIT_NONE = 0,
	INIT_RUNNING = 1,
	INIT_READY = 2,
	INIT_FAILED = 3,
};

/*
 * One table of the map. nodes counts the nodes it holds (lost ones left out); buckets is the
 * size it was last grown to, written under grow_lock. Both only decide when to grow.
 */
struct fnmap_shard {
	struct cds_lfht *ht;
	unsigned long nodes;
	unsigned long buckets;
};

__thread struct fnmap_thread fnmap_self __attribute__((tls_model("initial-exec")));

static struct fnmap_node *chunks[CHUNK_COUNT];
static struct fnmap_shard shards[SHARD_COUNT];
/*
 * grow_lock: on symbols_fork_page (fork_page.h). growing: a resize is under way, set under the
 * lock. The lock is free in a child made by _Fork() or clone() even if a thread of the parent
 * was resizing (fork_page.h): growing, copied, then tells it that liburcu's own locks may be
 * held for ever (the table's resize mutex, rcu_gp_lock): its shards never grow.
 */
static pthread_mutex_t *const grow_lock = &symbols_fork_page.grow_lock;
static uint32_t growing;
static uint64_t init_state;
static uint32_t next_id = FNMAP_ID_FIRST;
/* Ids below it may be given. A variable so that a test can lower it (fnmap_inspect_limit_ids). */
static uint32_t id_limit = FNMAP_ID_NONE;
static uint64_t unassigned[FNMAP_CAUSES];
static uint32_t reported[FNMAP_CAUSES];
static void (*on_new_id)(uint32_t id);
static pthread_key_t cache_key;
static int cache_key_ok;

static const char *const cause_names[FNMAP_CAUSES] = {
    "overflow", "no_memory", "reentrant", "too_deep", "nested", "no_stack",
};

static const char *const cause_text[FNMAP_CAUSES] = {
    "more distinct functions than 28-bit ids",
    "out of memory for the function map",
    "a signal handler ran instrumented code while the function map was being created",
    "calls deeper than the -pg shadow stack holds",
    "a signal handler ran -pg instrumented code while its thread was inside the hook",
    "a thread without a -pg shadow stack (out of memory, or past its exit)",
};

/* Count a lookup that got no id; the first of each cause is reported on stderr. */
XFDR_NOINSTR uint32_t fnmap_refuse(enum fnmap_unassigned_cause cause)
{
	uint32_t expected = 0;

	xfdr_add_relaxed(&unassigned[cause], (uint64_t)1);
	if (!xfdr_load_relaxed(&reported[cause]) && xfdr_cas(&reported[cause], &expected, 1u)) {
		char text[256];
		struct pr_buf b = PR_BUF_INIT(text);

		pr_str(&b, cause_text[cause]);
		pr_str(&b, ": such functions are recorded as id ");
		pr_u64(&b, FNMAP_ID_NONE);
		pr_str(&b, " (<unassigned> in the .map file)");
		pr_line(&b);
	}
	return FNMAP_ID_NONE;
}

static XFDR_NOINSTR unsigned long addr_hash(uintptr_t a)
{
	uint64_t x = (uint64_t)a;

	/* A 64-bit finalizer (murmur3's): every address bit reaches the bucket bits. */
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return (unsigned long)x;
}

/*
 * Node fields are published by cds_lfht_add_unique() and reached through cds_lfht_lookup(),
 * whose ordering lives in liburcu; they are accessed atomically (relaxed) so that race
 * detectors, which cannot see inside liburcu, see no plain conflicting access.
 */
static XFDR_NOINSTR int node_match(struct cds_lfht_node *n, const void *key)
{
	struct fnmap_node *f = caa_container_of(n, struct fnmap_node, ht);

	tsan_reach(f);
	return xfdr_load_relaxed(&f->addr) == *(const uintptr_t *)key;
}

static XFDR_NOINSTR uint32_t node_id(struct cds_lfht_node *n)
{
	struct fnmap_node *f = caa_container_of(n, struct fnmap_node, ht);

	tsan_reach(f);
	return xfdr_load_relaxed(&f->id);
}

/* The node of id, mapping its chunk if create is set and it is missing. */
static XFDR_NOINSTR struct fnmap_node *node_of(uint32_t id, int create)
{
	struct fnmap_node **slot = &chunks[id >> CHUNK_SHIFT];
	struct fnmap_node *c = xfdr_load_acquire(slot), *expected = NULL;
	void *p;

	if (!c) {
		if (!create)
			return NULL;
		p = mmap(NULL, CHUNK_IDS * sizeof(struct fnmap_node), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		/* pairs with the acquire above in other threads */
		if (xfdr_cas(slot, &expected, (struct fnmap_node *)p)) {
			c = p;
		} else {
			munmap(p, CHUNK_IDS * sizeof(struct fnmap_node));
			c = expected;
		}
	}
	return &c[id & (CHUNK_IDS - 1)];
}

/* Thread exit: unmap the thread's cache; later hooks of the thread go without one. */
static XFDR_NOINSTR void cache_release(void *cache)
{
	struct fnmap_thread *c = &fnmap_self;

	xfdr_store_relaxed(&c->no_cache, 1u);
	c->cache = NULL;
	/* A signal handler after this point sees no cache before the memory goes. */
	xfdr_barrier();
	munmap(cache, CACHE_BYTES);
}

/*
 * The shards' tables, each empty. No flags: CDS_LFHT_ACCOUNTING's per-CPU node counts only
 * fed CDS_LFHT_AUTO_RESIZE (the shards count their own nodes). Returns 0, or -ENOMEM (what
 * was made is leaked, never used).
 */
static XFDR_NOINSTR int shards_create(void)
{
	unsigned i;

	for (i = 0; i < SHARD_COUNT; i++) {
		shards[i].ht = cds_lfht_new_flavor(SHARD_INIT_BUCKETS, SHARD_INIT_BUCKETS, 0, 0,
						   &urcu_bp_flavor, NULL);
		if (!shards[i].ht)
			return -ENOMEM;
		shards[i].nodes = 0;
		shards[i].buckets = SHARD_INIT_BUCKETS;
	}
	return 0;
}

/*
 * The set-up and fork(): see fnmap_fork_unused(). Pairs with it: each stores its mark, then
 * reads the other's (seq_cst). In a fork child the mark is zeroed (fork_page.h) or, where
 * the kernel cannot, its parent's pid, not the child's own: the child waits for neither.
 */
static XFDR_NOINSTR void set_up_wait(uint32_t pid)
{
	while (__atomic_load_n(&symbols_fork_page.set_up_held, __ATOMIC_SEQ_CST) == pid)
		sched_yield();
}

/*
 * Create the tables once. A thread that finds another creating them waits (microseconds),
 * unless it is nested on its own thread, which may be the creator. Returns 1 when ready.
 *
 * A fork child inherits the state word but not the thread that was creating the map: it would
 * wait for ever. So RUNNING names the creator's process, and a waiter in another process (a
 * fork child's) discards that set-up and makes its own: the creator had published nothing (no
 * node, no cache) and what it made (a pthread key, tables) is leaked, never used. Without
 * CDS_LFHT_AUTO_RESIZE, cds_lfht_new() takes no lock of liburcu's (only malloc's, which
 * glibc's fork() takes care of), so none is left held in the child. This needs no fork
 * handler, so the child may run its first lookup at any moment.
 */
static XFDR_NOINSTR int ensure_ready(int nested)
{
	uint64_t st = xfdr_load_acquire(&init_state), mine;
	int rc;

	if (XFDR_LIKELY(st == INIT_READY))
		return 1;
	mine = (uint64_t)(uint32_t)getpid() << 32 | INIT_RUNNING;
	for (;;) {
		if (st == INIT_NONE && xfdr_cas(&init_state, &st, mine)) {
			set_up_wait((uint32_t)(mine >> 32));
			cache_key_ok = !pthread_key_create(&cache_key, cache_release);
			rc = shards_create();
			/* pairs with the acquire of init_state above: the tables before "ready" */
			xfdr_store_release(&init_state,
					   rc ? (uint64_t)INIT_FAILED : (uint64_t)INIT_READY);
			if (rc)
				fnmap_refuse(FNMAP_NO_MEMORY);
			return !rc;
		}
		if ((uint32_t)st != INIT_RUNNING || nested)
			break;
		if (st != mine) {
			/* Created by a thread of the process we were forked from: not here. */
			if (xfdr_cas(&init_state, &st, (uint64_t)INIT_NONE))
				st = INIT_NONE;
			continue;
		}
		sched_yield();
		st = xfdr_load_acquire(&init_state);
	}
	if (st == INIT_READY)
		return 1;
	fnmap_refuse((uint32_t)st == INIT_RUNNING ? FNMAP_REENTRANT : FNMAP_NO_MEMORY);
	return 0;
}

/*
 * Give addr the next id in sh; *won set when this call gave it (not another thread's at the
 * same moment). Context: inside an RCU read-side section.
 */
static XFDR_NOINSTR uint32_t insert(struct fnmap_shard *sh, uintptr_t addr, unsigned long hash,
				    uint32_t filtered, int *won_it)
{
	uint32_t limit = xfdr_load_relaxed(&id_limit);
	struct cds_lfht_node *won;
	struct fnmap_node *n;
	uint32_t id;

	/* Checked before the fetch-add too, so refused lookups cannot wrap the counter. */
	if (xfdr_load_relaxed(&next_id) >= limit)
		return fnmap_refuse(FNMAP_OVERFLOW);
	id = __atomic_fetch_add(&next_id, 1u, __ATOMIC_RELAXED);
	if (id >= limit)
		return fnmap_refuse(FNMAP_OVERFLOW);
	n = node_of(id, 1);
	if (!n)
		return fnmap_refuse(FNMAP_NO_MEMORY);
	xfdr_store_relaxed(&n->addr, addr);
	xfdr_store_relaxed(&n->id, id | filtered);
	cds_lfht_node_init(&n->ht);
	tsan_publish(n);
	won = cds_lfht_add_unique(sh->ht, hash, node_match, &addr, &n->ht);
	if (won != &n->ht) {
		/* pairs with the acquire in fnmap_addr_of() */
		xfdr_store_release(&n->state, (uint32_t)NODE_LOST);
		return node_id(won);
	}
	/* pairs with the acquire in fnmap_addr_of() */
	xfdr_store_release(&n->state, (uint32_t)NODE_LIVE);
	xfdr_add_relaxed(&sh->nodes, 1ul);
	*won_it = 1;
	return id | filtered;
}

/* More than SHARD_MAX_LOAD nodes a bucket in sh, and room to grow. */
static XFDR_NOINSTR int shard_crowded(struct fnmap_shard *sh)
{
	unsigned long buckets = xfdr_load_relaxed(&sh->buckets);

	return buckets < SHARD_MAX_BUCKETS &&
	       xfdr_load_relaxed(&sh->nodes) > SHARD_MAX_LOAD * buckets;
}

/*
 * shard_grow - double sh until it holds at most SHARD_MAX_LOAD nodes a bucket, or has
 * SHARD_MAX_BUCKETS; on the calling thread, synchronously, never from a thread of its own.
 * Context: any thread, signal handlers included. Does nothing inside a read-side section of
 * the calling thread (a handler nested in a lookup) or while another resize runs (another
 * thread's, or the one this handler interrupted): the shard's next insertion retries.
 * Allocates (liburcu callocs a bucket level). Every signal is blocked while grow_lock is held.
 */
static XFDR_NOINSTR void shard_grow(struct fnmap_shard *sh)
{
	unsigned long buckets, nodes;
	sigset_t all, saved;

	if (urcu_bp_read_ongoing())
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved);
	if (pthread_mutex_trylock(grow_lock))
		goto out;
	buckets = xfdr_load_relaxed(&sh->buckets);
	nodes = xfdr_load_relaxed(&sh->nodes);
	while (buckets < SHARD_MAX_BUCKETS && nodes > SHARD_MAX_LOAD * buckets)
		buckets *= 2;
	if (buckets != xfdr_load_relaxed(&sh->buckets) && !xfdr_load_relaxed(&growing)) {
		xfdr_store_relaxed(&growing, 1u);
		cds_lfht_resize(sh->ht, buckets);
		xfdr_store_relaxed(&sh->buckets, buckets);
		xfdr_store_relaxed(&growing, 0u);
	}
	pthread_mutex_unlock(grow_lock);
out:
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
}

static XFDR_NOINSTR uint32_t lookup_or_insert(uintptr_t addr)
{
	unsigned long hash = addr_hash(addr);
	/* The top bits: the tables index their buckets by the low ones. */
	struct fnmap_shard *sh = &shards[hash >> (sizeof(hash) * 8 - SHARD_BITS)];
	struct cds_lfht_iter iter;
	struct cds_lfht_node *found;
	void (*announce)(uint32_t);
	uint32_t id, filtered;
	int won = 0;

	urcu_bp_read_lock();
	cds_lfht_lookup(sh->ht, hash, node_match, &addr, &iter);
	found = cds_lfht_iter_get_node(&iter);
	id = found ? node_id(found) : 0;
	urcu_bp_read_unlock();
	if (found)
		return id;
	/* Naming the function may take milliseconds: outside the read-side section. */
	filtered = fnfilter_keeps_addr(addr) ? 0 : FNMAP_ID_FILTERED;
	urcu_bp_read_lock();
	id = insert(sh, addr, hash, filtered, &won);
	urcu_bp_read_unlock();
	if (shard_crowded(sh))
		shard_grow(sh);
	if (won && filtered)
		fnfilter_count_left_out();
	/* pairs with the release in fnmap_on_new_id() */
	announce = won ? xfdr_load_acquire(&on_new_id) : NULL;
	if (announce)
		announce(id & ~FNMAP_ID_FILTERED);
	return id;
}

/* Map the thread's cache, every entry empty; arm its release at thread exit. */
static XFDR_NOINSTR struct fnmap_cache_entry *cache_create(struct fnmap_thread *c)
{
	struct fnmap_cache_entry *e;
	uint32_t i;

	if (!cache_key_ok)
		goto none;
	e = mmap(NULL, CACHE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e == MAP_FAILED)
		goto none;
	/* Address 0 is a possible argument; UINTPTR_MAX is never a function's first byte. */
	for (i = 0; i < FNMAP_CACHE_ENTRIES; i++)
		e[i].addr = UINTPTR_MAX;
	if (pthread_setspecific(cache_key, e)) {
		munmap(e, CACHE_BYTES);
		goto none;
	}
	c->cache = e;
	return e;
none:
	xfdr_store_relaxed(&c->no_cache, 1u);
	return NULL;
}

/* The id of addr from the hash table; fills c's cache entry unless nested. */
static XFDR_NOINSTR uint32_t fnmap_id_slow(struct fnmap_thread *c, uintptr_t addr, int nested)
{
	int saved = errno;
	struct fnmap_cache_entry *e;
	uint32_t id;

	if (!ensure_ready(nested)) {
		id = FNMAP_ID_NONE;
		goto out;
	}
	id = lookup_or_insert(addr);
	/* A refused lookup is not cached: its cause may pass, and it must be counted. */
	if (nested || id == FNMAP_ID_NONE || xfdr_load_relaxed(&c->no_cache))
		goto out;
	e = c->cache ? c->cache : cache_create(c);
	if (e) {
		e = &e[fnmap_cache_slot(addr)];
		e->addr = addr;
		e->id = id;
	}
out:
	errno = saved;
	return id;
}

XFDR_COLD XFDR_NOINSTR uint32_t fnmap_id_uncached(const void *fn)
{
	struct fnmap_thread *c = &fnmap_self;
	uintptr_t addr = (uintptr_t)fn;
	uint32_t id;

	/* Nested inside another lookup on this thread: the hash table only, no cache. */
	if (xfdr_load_relaxed(&c->busy))
		return fnmap_id_slow(c, addr, 1);
	xfdr_store_relaxed(&c->busy, 1u);
	/* A signal handler from here on sees the guard: it will not touch the cache we fill. */
	xfdr_barrier();
	id = fnmap_id_slow(c, addr, 0);
	xfdr_barrier();
	xfdr_store_relaxed(&c->busy, 0u);
	return id;
}

uint32_t fnmap_ids_given(void)
{
	uint32_t n = xfdr_load_relaxed(&next_id), limit = xfdr_load_relaxed(&id_limit);

	return (n < limit ? n : limit) - FNMAP_ID_FIRST;
}

XFDR_NOINSTR uintptr_t fnmap_addr_of(uint32_t id)
{
	struct fnmap_node *n;

	if (id < FNMAP_ID_FIRST || id >= FNMAP_ID_NONE)
		return 0;
	n = node_of(id, 0);
	/* pairs with the release of state in insert() */
	if (!n || (xfdr_load_acquire(&n->state) & NODE_STATE_MASK) != NODE_LIVE)
		return 0;
	return xfdr_load_relaxed(&n->addr);
}

void fnmap_layout(struct fnmap_layout *l)
{
	_Static_assert(sizeof(uintptr_t) == 8, "the names directory's addresses are u64");
	*l = (struct fnmap_layout){
	    .chunks = (uintptr_t)chunks,
	    .next_id = (uintptr_t)&next_id,
	    .chunk_count = CHUNK_COUNT,
	    .chunk_ids = CHUNK_IDS,
	    .node_stride = (uint32_t)sizeof(struct fnmap_node),
	    .addr_at = (uint32_t)offsetof(struct fnmap_node, addr),
	    .state_at = (uint32_t)offsetof(struct fnmap_node, state),
	    .state_mask = NODE_STATE_MASK,
	    .state_live = NODE_LIVE,
	};
}

uint64_t fnmap_unassigned(enum fnmap_unassigned_cause cause)
{
	return cause < FNMAP_CAUSES ? xfdr_load_relaxed(&unassigned[cause]) : 0;
}

const char *fnmap_cause_name(enum fnmap_unassigned_cause cause)
{
	return (unsigned)cause < FNMAP_CAUSES ? cause_names[cause] : "unknown";
}

/*
 * Fork. A resize under way must not be inherited (liburcu's resize_mutex held, a bucket level
 * half linked, grow_lock held by a thread the child does not have): the forking thread takes
 * grow_lock, so it waits for one. The resizing thread needs nothing the forking one holds, and
 * is not that thread (it blocks signals, so no handler of its own forks inside the resize).
 * In a process with one thread lifecycle.c calls none of this, and needs none: that thread is
 * not inside a resize when it forks, for the same reason. urcu-bp's hooks keep its reader
 * registry consistent; they go inside grow_lock (a resize may take urcu-bp's locks under it,
 * never the reverse). A child made without the atfork handlers (_Fork(), clone()) while
 * another thread resized never grows its shards (growing): its lookups work.
 *
 * No urcu_bp_call_rcu_*_fork(): they paused and restarted liburcu's resize worker, which no
 * table has now, and call_rcu() is called nowhere in the runtime; they would only take
 * call_rcu's mutex, which does not nest, under a program that calls them itself.
 *
 * A map never set up needs none of it: no table, no urcu-bp reader (a thread registers on its
 * first lookup), no id for unload.c to name. The forking thread marks set_up_held with its
 * pid instead, then reads the set-up state; a thread that starts the set-up marks the state,
 * then waits while set_up_held is its pid (set_up_wait()). One of them sees the other: the
 * fork() takes the locks, or the set-up waits until the parent handler clears the mark.
 *
 * What the handlers write is on symbols_fork_page, which fork() does not make copy-on-write:
 * no page fault in the parent, and nothing to write in the child but urcu-bp's own state.
 */
int fnmap_fork_unused(void)
{
	__atomic_store_n(&symbols_fork_page.set_up_held, (uint32_t)getpid(), __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&init_state, __ATOMIC_SEQ_CST) == INIT_NONE)
		return 1;
	xfdr_store_release(&symbols_fork_page.set_up_held, 0u);
	return 0;
}

/*
 * urcu_bp_after_fork_child(), called through a pointer taken in the parent. A call through
 * the PLT is bound at its first call, and only the child calls it: each child would run the
 * dynamic linker's lookup and write its GOT page, about 9 page faults (measured). Taking the
 * address makes the dynamic linker bind it at load (GLOB_DAT; in a position-dependent
 * executable the address is its PLT entry, bound lazily as before).
 */
static void (*urcu_child)(void);

void fnmap_before_fork(void)
{
	if (!xfdr_load_relaxed(&urcu_child))
		xfdr_store_relaxed(&urcu_child, urcu_bp_after_fork_child);
	pthread_mutex_lock(grow_lock);
	urcu_bp_before_fork();
	xfdr_store_relaxed(&symbols_fork_page.grow_held, 1u);
}

void fnmap_after_fork_parent(void)
{
	if (xfdr_load_relaxed(&symbols_fork_page.set_up_held)) {
		xfdr_store_release(&symbols_fork_page.set_up_held, 0u);
		return;
	}
	if (!xfdr_load_relaxed(&symbols_fork_page.grow_held))
		return;
	xfdr_store_relaxed(&symbols_fork_page.grow_held, 0u);
	urcu_bp_after_fork_parent();
	pthread_mutex_unlock(grow_lock);
}

/* grow_held is 1 here only where the kernel could not zero the page: grow_lock is held then. */
void fnmap_after_fork_child(void)
{
	xfdr_load_relaxed (&urcu_child)();
	if (!xfdr_load_relaxed(&symbols_fork_page.grow_held))
		return;
	xfdr_store_relaxed(&symbols_fork_page.grow_held, 0u);
	pthread_mutex_unlock(grow_lock);
}

void fnmap_on_new_id(void (*fn)(uint32_t id))
{
	/* pairs with the acquire in lookup_or_insert() */
	xfdr_store_release(&on_new_id, fn);
}

XFDR_NOINSTR int fnmap_take_for_listing(uint32_t id, uint32_t listing, uintptr_t *addr)
{
	uint32_t mark = ((listing - 1u) % (UINT32_MAX >> NODE_LISTED_SHIFT) + 1u)
			<< NODE_LISTED_SHIFT;
	struct fnmap_node *n;
	uint32_t st;

	if (id < FNMAP_ID_FIRST || id >= FNMAP_ID_NONE)
		return 0;
	n = node_of(id, 0);
	if (!n)
		return 0;
	/* pairs with the release of state in insert() */
	st = xfdr_load_acquire(&n->state);
	if ((st & NODE_STATE_MASK) != NODE_LIVE || (st & ~NODE_STATE_MASK) == mark)
		return 0;
	/* The caller serialises listings: nobody else changes a live node's state. */
	xfdr_store_relaxed(&n->state, (uint32_t)NODE_LIVE | mark);
	*addr = xfdr_load_relaxed(&n->addr);
	return 1;
}

/* ---- inspection (fnmap.h) ---------------------------------------------------------------- */

int fnmap_inspect_started(void)
{
	return (uint32_t)xfdr_load_acquire(&init_state) != INIT_NONE;
}

void fnmap_inspect_limit_ids(uint32_t limit)
{
	xfdr_store_relaxed(&id_limit, limit);
}

void fnmap_inspect_shape(struct fnmap_inspect_shape *s)
{
	s->shards = SHARD_COUNT;
	s->init_buckets = SHARD_INIT_BUCKETS;
	s->max_buckets = SHARD_MAX_BUCKETS;
	s->max_load = SHARD_MAX_LOAD;
}

struct cds_lfht *fnmap_inspect_shard(unsigned i)
{
	/* pairs with the release that publishes INIT_READY in ensure_ready() */
	if (i >= SHARD_COUNT || (uint32_t)xfdr_load_acquire(&init_state) != INIT_READY)
		return NULL;
	return shards[i].ht;
}
