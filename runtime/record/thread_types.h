/*
 * runtime/record/thread_types.h - per-thread recording state and the process-wide thread table.
 *
 * Two halves per thread:
 * - struct rec_thread, one __thread struct (initial-exec TLS, no constructor, no destructor,
 *   no allocation): the current buffer and the delta state. Only its thread touches it.
 * - struct thread_slot, an entry in a table mapped at the first init: what must outlive the
 *   thread or be seen by others (the recursion guard, which thread_quiesce() reads; the tid and
 *   name for the .map file; the drop counters the flusher sums).
 */
#ifndef XFDR_RUNTIME_RECORD_THREAD_TYPES_H
#define XFDR_RUNTIME_RECORD_THREAD_TYPES_H

#include <pthread.h>
#include <stdint.h>

#include "runtime/base/compiler.h"
#include "runtime/pool/pool_types.h"
#include "xfdr/format.h"

/* Drop causes: the .map file and the drop event print them in this order. */
enum drop_cause {
	DROP_NO_BUFFER = 0,	 /* the pool was empty when the thread needed a buffer */
	DROP_REENTRANT = 1,	 /* a hook ran while the thread was inside the runtime */
	DROP_TOO_LARGE = 2,	 /* the event cannot fit even in an empty buffer */
	DROP_NO_THREAD_SLOT = 3, /* the thread table was full (never per thread) */
	DROP_CAUSES = 4,
};

enum slot_state {
	SLOT_FREE = 0,
	SLOT_CLAIMING = 1, /* being filled in by a registering thread; skipped by readers */
	SLOT_LIVE = 2,
	SLOT_EXITED = 3, /* thread gone; kept for the .map until the slot is recycled */
};

/*
 * Per-thread counts that are not drops: they say what the trace leaves out on purpose.
 * Summed and folded like the drop counters; the .map file prints them per thread.
 */
enum thread_note {
	NOTE_OVERWRITTEN = 0,	     /* buffers of the thread that ring mode reused */
	NOTE_ELIDED = 1,	     /* calls erased by short-call elision */
	NOTE_STACK_OVERFLOW = 2,     /* entries deeper than the shadow stack holds ids for */
	NOTE_OVERWRITTEN_EVENTS = 3, /* function records those reused buffers held */
	NOTE_FILTERED = 4,	     /* calls of functions include= or exclude= left out */
	NOTE_MAX_DEPTH = 5,	     /* calls entered deeper than max_depth */
	THREAD_NOTES = 6,
};

/*
 * A CPU number no read returns (clock_now_inline()'s "unknown" values are above it): forces
 * the slow path, and NewCPUId on the first event of a buffer.
 */
#define REC_NO_CPU 0x7fffffffu

/*
 * Shadow stack ids: bit 31 marks a call whose entry was dropped, bits 28-29 the drop cause;
 * the function id is the low 28 bits (XFDR_FUNCTION_ID_MAX, all a function record holds).
 */
#define REC_STACK_DROPPED 0x80000000u
#define REC_STACK_CAUSE_SHIFT 28

/* rec_thread.skip_cause of a call entered deeper than max_depth: left out, not dropped. */
#define REC_SKIP_MAX_DEPTH DROP_CAUSES

struct thread_slot {
	/*
	 * Recursion guard and "inside the runtime" flag. The owner sets it (relaxed store,
	 * then a compiler barrier) before it reads the session, clears it with a release
	 * store; thread_quiesce() reads it with acquire after a membarrier().
	 */
	uint32_t busy;
	uint32_t state;	     /* enum slot_state; release after the fields below */
	uint32_t tid;	     /* kernel tid */
	uint32_t thread_id;  /* its id in NewBuffer records, unique in the session's files */
	uint32_t id_session; /* the session thread_id was given for */
	uint32_t session;    /* last session in which the thread took a buffer or dropped */
	uint32_t index;
	/* Counted with relaxed atomic adds: a signal handler may count on the same thread. */
	uint64_t dropped[DROP_CAUSES];
	/* Relaxed atomic adds too: overwritten is counted by the thread that reused the buffer. */
	uint64_t noted[THREAD_NOTES];
	/* Thread names (16 bytes, NUL-padded) as two words so readers can copy them safely. */
	uint64_t name[2];      /* at registration */
	uint64_t exit_name[2]; /* at thread exit, before state becomes SLOT_EXITED */
	/*
	 * What the live map (runtime/flush/livemap.c) last wrote of this slot's thread: under the
	 * map's lock, the number of the map it wrote it in (0: none) and the name it gave.
	 */
	uint32_t map_listing;
	uint64_t map_name[2];
	/*
	 * The shadow call stack: the ids of the outermost open calls (rec_thread.depth says how
	 * many are open). Only the owner touches it, with its guard held.
	 */
	uint32_t stack[XFDR_STACK_IDS_MAX] __attribute__((aligned(XFDR_CACHELINE)));
} __attribute__((aligned(XFDR_CACHELINE)));

struct rec_thread {
	uint8_t *buf; /* current buffer's data, NULL when none */
	size_t used;  /* bytes written to buf (published in desc->used_bytes) */
	size_t size;  /* bytes of buf; 0 when none, so nothing fits */
	/*
	 * The fast path writes a function record while used < fast_end: it then leaves room for
	 * the EndOfBuffer (rec_fast_end()); 0 without a buffer.
	 */
	size_t fast_end;
	struct pool_desc *desc;
	/*
	 * The absolute TSC the next delta counts from; the fast path reads its halves: a TSC with
	 * the same high half and a low half not below last_lo gives a delta that fits 32 bits.
	 */
	union {
		uint64_t last_tsc;
		struct {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			uint32_t last_lo, last_hi;
#else
			uint32_t last_hi, last_lo;
#endif
		};
	};
	uint32_t cpu;	  /* CPU of the current delta base, REC_NO_CPU without a buffer */
	uint32_t session; /* session of buf; 0 (never a session) without one */
	/* thread_no_slot (never a slot: its guard is always taken) until it registers */
	struct thread_slot *slot;
	/*
	 * Short-call elision: records at or past erase_floor are plain entries that an exit
	 * within elide_ticks may erase (elide_ticks 0: off, copied from rec_elide_ticks when the
	 * buffer was taken).
	 */
	size_t erase_floor;
	uint64_t elide_ticks;
	/*
	 * Open calls (slot->stack holds the outermost ids). An exit with no open call takes it
	 * below 0 (one decrement on the fast path, no test); it counts as 0 wherever it is read.
	 */
	int32_t depth;
	/*
	 * An entry at this depth or deeper takes the slow path: XFDR_STACK_IDS_MAX, or max_depth
	 * when smaller (rec_depth_max); set with each buffer, 0 (everything slow) without one.
	 */
	uint32_t depth_limit;
	uint32_t stack_session; /* the session depth counts for */
	uint32_t registering;	/* guard while the thread has no slot yet */
	uint32_t slotless;	/* events since registration last failed (retry throttle) */
	/*
	 * Drops keep the trace balanced (recorder.c): an open call whose entry was dropped has
	 * REC_STACK_DROPPED set in its stack id (marked counts them); beyond the ids kept, or
	 * without a slot, the call is dropped whole (skip: its depth, skip_cause: why; a call
	 * deeper than max_depth is left out the same way, REC_SKIP_MAX_DEPTH, and counted
	 * as a note, not a drop). While
	 * either is nonzero every event takes the slow path: cpu is REC_NO_CPU, the real one
	 * in held_cpu. skip_session: the session skip counts for. exit_lost: an exit whose
	 * entry is in the trace was dropped since the last buffer began (its stack context
	 * says so).
	 */
	uint32_t marked;
	uint32_t skip;
	uint32_t skip_cause;
	uint32_t skip_session;
	uint32_t held_cpu;
	uint32_t exit_lost;
	uint32_t desc_gen; /* desc's generation from the claim: only that buffer is the thread's */
} __attribute__((aligned(XFDR_CACHELINE)));

struct thread_table {
	struct thread_slot *slots; /* thread_max entries; NULL before the first init */
	uint32_t max;
	uint32_t next_unused; /* slots below it have been used at least once */
	/* Drops of threads without a slot, and counts folded in from recycled slots. */
	uint64_t unattributed[DROP_CAUSES];
	uint64_t recycled[DROP_CAUSES];
	uint64_t noted_elsewhere[THREAD_NOTES]; /* notes of recycled slots, or of no slot */
	uint32_t next_thread_id;		/* thread ids given in this session */
	struct thread_slot *forking; /* the slot of the thread in fork() (thread_fork.h) */
	pthread_key_t key; /* its destructor hands a thread's buffer back at thread exit */
	int key_ok;
};

#endif /* XFDR_RUNTIME_RECORD_THREAD_TYPES_H */
