/*
 * runtime/flush/drops.c - drop accounting at flush (see drops.h).
 *
 * The drop-count buffer is one whole buffer built on the stack and written like any other:
 *   NewBuffer(0 | thread id) WallClockTime NewCPUId CustomEventMarker "XFDRDROP" payload
 * Every byte of it is encoded by writer/ (encode.h for the records, payload.h for the payload).
 */
#include <limits.h>
#include <string.h>
#include <time.h>

#include "runtime/base/print.h"
#include "runtime/flush/drops.h"
#include "runtime/pool/pool.h"
#include "runtime/record/thread.h"
#include "writer/encode.h"
#include "writer/file.h"
#include "writer/payload.h"
#include "xfdr/format.h"

/* The drop-count buffer is built on the stack: this bounds its per-thread entries (48). */
#define DROP_BUFFER_STACK_BYTES 2048

static const char *const cause_names[DROP_CAUSES] = {
    [DROP_NO_BUFFER] = "no_buffer",
    [DROP_REENTRANT] = "reentrant",
    [DROP_TOO_LARGE] = "too_large",
    [DROP_NO_THREAD_SLOT] = "no_thread_slot",
};

static const char *const note_names[THREAD_NOTES] = {
    [NOTE_OVERWRITTEN] = "overwritten",	      [NOTE_ELIDED] = "elided",
    [NOTE_STACK_OVERFLOW] = "stack_overflow", [NOTE_OVERWRITTEN_EVENTS] = "overwritten_events",
    [NOTE_FILTERED] = "filtered_calls",	      [NOTE_MAX_DEPTH] = "max_depth_calls",
};

const char *drop_cause_name(enum drop_cause cause)
{
	return (unsigned)cause < DROP_CAUSES ? cause_names[cause] : "unknown";
}

const char *thread_note_name(enum thread_note note)
{
	return (unsigned)note < THREAD_NOTES ? note_names[note] : "unknown";
}

/* Add one thread slot's drop and note counts to d. */
static void add_slot_counts(struct drop_totals *d, const struct thread_slot *s)
{
	int c;

	for (c = 0; c < DROP_CAUSES; c++)
		d->cause[c] += xfdr_load_relaxed(&s->dropped[c]);
	for (c = 0; c < THREAD_NOTES; c++)
		d->noted[c] += xfdr_load_relaxed(&s->noted[c]);
}

static void add_total(struct drop_totals *d)
{
	int c;

	for (c = 0; c < DROP_CAUSES; c++)
		d->total += d->cause[c];
}

void drops_sum(struct drop_totals *d)
{
	struct thread_table *tt = &thread_table;
	uint32_t i, n;
	struct thread_slot *slots = thread_slots_used(&n);
	int c;

	memset(d, 0, sizeof(*d));
	for (c = 0; c < DROP_CAUSES; c++) {
		d->cause[c] += xfdr_load_relaxed(&tt->unattributed[c]);
		d->cause[c] += xfdr_load_relaxed(&tt->recycled[c]);
	}
	for (c = 0; c < THREAD_NOTES; c++)
		d->noted[c] += xfdr_load_relaxed(&tt->noted_elsewhere[c]);
	for (i = 0; i < n; i++) {
		/* A slot being claimed may hold counts already folded into recycled. */
		if (xfdr_load_acquire(&slots[i].state) == SLOT_CLAIMING)
			continue;
		add_slot_counts(d, &slots[i]);
	}
	add_total(d);
}

/* Entries that fit both the stack buffer and a file buffer (EndOfBuffer room kept); -1: none. */
static int drop_entries_max(size_t buffer_bytes)
{
	size_t fixed = XFDR_BUFFER_PREAMBLE_BYTES + XFDR_MD_RECORD_BYTES + XFDR_DROP_FIXED_BYTES;
	size_t cap =
	    buffer_bytes < DROP_BUFFER_STACK_BYTES ? buffer_bytes : DROP_BUFFER_STACK_BYTES;
	int n;

	for (n = (int)((DROP_BUFFER_STACK_BYTES - fixed) / XFDR_DROP_ENTRY_BYTES); n >= 0; n--) {
		size_t bytes = fixed + (size_t)n * XFDR_DROP_ENTRY_BYTES;

		if (bytes <= cap && wr_fits(buffer_bytes, bytes))
			return n;
	}
	return -1;
}

static void slot_entry(const struct thread_slot *s, uint32_t session, struct wr_drop_entry *e)
{
	e->tid = xfdr_load_relaxed(&s->tid);
	/* pairs with the release in thread_id_in_session(); 0: no buffer in this session */
	e->thread_id = xfdr_load_acquire(&s->id_session) == session
			   ? (uint16_t)xfdr_load_relaxed(&s->thread_id)
			   : 0;
	e->no_buffer = xfdr_load_relaxed(&s->dropped[DROP_NO_BUFFER]);
	e->reentrant = xfdr_load_relaxed(&s->dropped[DROP_REENTRANT]);
	e->too_large = xfdr_load_relaxed(&s->dropped[DROP_TOO_LARGE]);
	e->overwritten = xfdr_load_relaxed(&s->noted[NOTE_OVERWRITTEN]);
}

/*
 * The process file: an entry (at most max) for every thread of this session with a drop,
 * read now. Returns the entries written; *omitted counts those left out.
 */
static uint32_t process_entries(uint8_t *entries, int max, uint32_t *omitted)
{
	uint32_t session = xfdr_load_acquire(&rt_pool.session);
	uint32_t written = 0, i, n;
	struct thread_slot *slots = thread_slots_used(&n);
	struct wr_drop_entry e;

	for (i = 0; i < n; i++) {
		if (!thread_slot_in_session(&slots[i], session))
			continue;
		slot_entry(&slots[i], session, &e);
		if (!e.no_buffer && !e.reentrant && !e.too_large && !e.overwritten)
			continue;
		if (written == (uint32_t)max) {
			(*omitted)++;
			continue;
		}
		entries += wr_drop_entry(entries, &e);
		written++;
	}
	return written;
}

void drops_thread_sum(uint32_t tid, struct drop_totals *d)
{
	uint32_t session = xfdr_load_acquire(&rt_pool.session);
	uint32_t i, n;
	struct thread_slot *slots = thread_slots_used(&n);

	memset(d, 0, sizeof(*d));
	for (i = 0; i < n; i++)
		if (thread_slot_in_session(&slots[i], session) &&
		    xfdr_load_relaxed(&slots[i].tid) == tid)
			add_slot_counts(d, &slots[i]);
	add_total(d);
}

void drops_add(struct drop_totals *to, const struct drop_totals *d)
{
	int c;

	for (c = 0; c < DROP_CAUSES; c++)
		to->cause[c] += d->cause[c];
	for (c = 0; c < THREAD_NOTES; c++)
		to->noted[c] += d->noted[c];
	to->total += d->total;
}

void drops_rest(struct drop_totals *rest, const struct drop_totals *all,
		const struct drop_totals *part)
{
	int c;

	memset(rest, 0, sizeof(*rest));
	for (c = 0; c < DROP_CAUSES; c++) {
		rest->cause[c] =
		    all->cause[c] > part->cause[c] ? all->cause[c] - part->cause[c] : 0;
		rest->total += rest->cause[c];
	}
	for (c = 0; c < THREAD_NOTES; c++)
		rest->noted[c] =
		    all->noted[c] > part->noted[c] ? all->noted[c] - part->noted[c] : 0;
}

int drops_has_buffer(size_t buffer_bytes)
{
	return drop_entries_max(buffer_bytes) >= 0;
}

int drops_write_buffer(int fd, size_t buffer_bytes, const struct drop_totals *head_totals,
		       const struct drops_thread *thread, uint64_t tsc, unsigned cpu)
{
	uint8_t buf[DROP_BUFFER_STACK_BYTES] __attribute__((aligned(8)));
	int max = drop_entries_max(buffer_bytes);
	struct wr_drop_totals head = {0};
	struct timespec wall;
	uint8_t *p = buf, *payload;
	uint32_t entries = 0;

	if (max < 0)
		return 0;
	clock_gettime(CLOCK_REALTIME, &wall);
	p += wr_new_buffer(p, thread ? thread->thread_id : 0);
	p += wr_wall_clock_time(p, (uint64_t)wall.tv_sec, (uint32_t)(wall.tv_nsec / 1000));
	p += wr_new_cpu_id(p, (uint16_t)cpu, tsc);
	payload = p + XFDR_MD_RECORD_BYTES;
	if (thread && max >= 1) {
		struct wr_drop_entry e = {
		    .tid = thread->tid,
		    .thread_id = thread->thread_id,
		    .no_buffer = thread->own.cause[DROP_NO_BUFFER],
		    .reentrant = thread->own.cause[DROP_REENTRANT],
		    .too_large = thread->own.cause[DROP_TOO_LARGE],
		    .overwritten = thread->own.noted[NOTE_OVERWRITTEN],
		};

		wr_drop_entry(payload + XFDR_DROP_FIXED_BYTES, &e);
		entries = 1;
	} else if (!thread) {
		entries =
		    process_entries(payload + XFDR_DROP_FIXED_BYTES, max, &head.threads_omitted);
	}
	head.no_buffer = head_totals->cause[DROP_NO_BUFFER];
	head.reentrant = head_totals->cause[DROP_REENTRANT];
	head.too_large = head_totals->cause[DROP_TOO_LARGE];
	head.no_thread_slot = head_totals->cause[DROP_NO_THREAD_SLOT];
	head.overwritten = head_totals->noted[NOTE_OVERWRITTEN];
	wr_drop_head(payload, &head, entries);
	p += wr_custom_event_marker(p, (uint32_t)wr_drop_payload_bytes(entries), tsc);
	p += wr_drop_payload_bytes(entries);
	return wr_write_buffer(fd, buf, (size_t)(p - buf), buffer_bytes);
}

void drops_report(const struct drop_totals *d, const char *map_path)
{
	char text[PATH_MAX + 200];
	struct pr_buf b = PR_BUF_INIT(text);
	int c;

	pr_str(&b, "dropped ");
	pr_u64(&b, d->total);
	pr_str(&b, " events (");
	for (c = 0; c < DROP_CAUSES; c++) {
		if (c)
			pr_char(&b, ' ');
		pr_str(&b, cause_names[c]);
		pr_char(&b, '=');
		pr_u64(&b, d->cause[c]);
	}
	pr_str(&b, "); per thread: ");
	pr_str(&b, map_path);
	if (xfdr_load_relaxed(&rt_pool.mode) == POOL_STREAM && d->cause[DROP_NO_BUFFER])
		pr_str(&b, "; no_buffer in a stream is stream_behind: the writer had written no "
			   "buffer back in time (a larger buffer_max rides out a slower disk)");
	pr_note(&b);
}
