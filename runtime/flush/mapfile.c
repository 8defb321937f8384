/*
 * runtime/flush/mapfile.c - the .map sidecar (see mapfile.h; format: doc/map-format.md).
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/base/print.h"
#include "runtime/flush/crash_record.h"
#include "runtime/flush/drops.h"
#include "runtime/flush/mapfile.h"
#include "runtime/pool/pool.h"
#include "runtime/record/clock.h"
#include "runtime/record/recorder.h"
#include "runtime/record/thread.h"
#include "runtime/symbols/fnfilter.h"
#include "runtime/symbols/symbolizer.h"

/* A frame line's symbol and module are cut to this many bytes, so a line always fits. */
#define FRAME_FIELD_MAX_BYTES 4096u
#define FRAME_LINE_BYTES (2u * FRAME_FIELD_MAX_BYTES + 128u)

extern char *program_invocation_name;

static const struct crash_report *map_crash;

static int line_kv(int fd, const char *key, uint64_t v)
{
	char text[128];
	struct pr_buf b = PR_BUF_INIT(text);

	pr_str(&b, key);
	pr_char(&b, '\t');
	pr_u64(&b, v);
	pr_char(&b, '\n');
	return pr_flush(&b, fd);
}

static int line_ks(int fd, const char *key, const char *s)
{
	char text[PATH_MAX + 64];
	struct pr_buf b = PR_BUF_INIT(text);

	pr_str(&b, key);
	pr_char(&b, '\t');
	pr_field(&b, s, SIZE_MAX);
	/* A cut value still ends its line. */
	if (b.len == b.cap)
		b.len--;
	text[b.len++] = '\n';
	return pr_flush(&b, fd);
}

/* What the include=, exclude= and max_depth options left out, and how. Only those set. */
static int filter_lines(int fd)
{
	uint32_t depth = xfdr_load_relaxed(&rec_depth_max);
	int rc = 0;

	if (fnfilter_on()) {
		if (*fnfilter_text(FNFILTER_INCLUDE))
			rc = line_ks(fd, "include", fnfilter_text(FNFILTER_INCLUDE));
		if (!rc && *fnfilter_text(FNFILTER_EXCLUDE))
			rc = line_ks(fd, "exclude", fnfilter_text(FNFILTER_EXCLUDE));
		if (!rc)
			rc = line_kv(fd, "functions_left_out", fnfilter_functions_left_out());
	}
	if (!rc && depth)
		rc = line_kv(fd, "max_depth", depth);
	return rc;
}

/* The process that started this one (0: not known); see map_note_parent(). */
static uint32_t map_parent_pid;

void map_note_parent(uint32_t pid)
{
	xfdr_store_relaxed(&map_parent_pid, pid);
}

int map_write_head(int fd)
{
	uint32_t ppid = xfdr_load_relaxed(&map_parent_pid);
	int rc;

	rc = line_kv(fd, "xfdr-map", 1);
	if (!rc)
		rc = line_kv(fd, "pid", (uint64_t)getpid());
	if (!rc && ppid)
		rc = line_kv(fd, "ppid", ppid);
	if (!rc)
		rc = line_ks(fd, "program", program_invocation_name ? program_invocation_name : "");
	return rc;
}

int map_write_trace(int fd, const char *path)
{
	return line_ks(fd, "trace", path);
}

void map_thread_line(struct pr_buf *b, const struct thread_slot *s, uint32_t session,
		     const char *name)
{
	int c;

	pr_str(b, "thread\t");
	pr_u64(b, xfdr_load_relaxed(&s->tid));
	pr_char(b, '\t');
	/* pairs with the release in thread_id_in_session(); 0: no buffer this session */
	pr_u64(b,
	       xfdr_load_acquire(&s->id_session) == session ? xfdr_load_relaxed(&s->thread_id) : 0);
	pr_char(b, '\t');
	pr_field(b, name, SIZE_MAX);
	for (c = 0; c < DROP_NO_THREAD_SLOT; c++) {
		pr_char(b, '\t');
		pr_u64(b, xfdr_load_relaxed(&s->dropped[c]));
	}
	for (c = 0; c < THREAD_NOTES; c++) {
		pr_char(b, '\t');
		pr_u64(b, xfdr_load_relaxed(&s->noted[c]));
	}
	pr_char(b, '\n');
}

static int thread_lines(int fd)
{
	uint32_t session = xfdr_load_acquire(&rt_pool.session);
	uint32_t i, n;
	struct thread_slot *slots = thread_slots_used(&n);
	int rc = 0;

	for (i = 0; i < n && !rc; i++) {
		struct thread_slot *s = &slots[i];
		char name[17], text[256];
		struct pr_buf b = PR_BUF_INIT(text);

		if (!thread_slot_in_session(s, session))
			continue;
		thread_slot_name(s, name);
		map_thread_line(&b, s, session, name);
		rc = pr_flush(&b, fd);
	}
	return rc;
}

void map_set_crash(const struct crash_report *c)
{
	/* pairs with the acquire in crash_lines() */
	xfdr_store_release(&map_crash, c);
}

/*
 * "frame<TAB>index<TAB>pc<TAB>symbol<TAB>module<TAB>module_vaddr". Frames after the first
 * are return addresses: the call is the instruction before, so pc - 1 is looked up (a call
 * that ends a function would otherwise be named after the next one); pc itself is printed,
 * with module_vaddr the same address as the module sees it.
 */
static int frame_line(int fd, struct sym_table *st, int sym_ok, uint32_t index, uint64_t pc,
		      struct pr_buf *b)
{
	uint64_t back = index && pc ? 1 : 0;
	struct sym_result r;

	memset(&r, 0, sizeof(r));
	if (sym_ok)
		sym_lookup(st, (uintptr_t)(pc - back), &r);
	b->len = 0;
	b->truncated = 0;
	pr_str(b, "frame\t");
	pr_u64(b, index);
	pr_char(b, '\t');
	pr_hex(b, pc);
	pr_char(b, '\t');
	pr_field(b, r.name ? r.name : "<unknown>", FRAME_FIELD_MAX_BYTES);
	pr_char(b, '\t');
	pr_field(b, r.module ? r.module : "-", FRAME_FIELD_MAX_BYTES);
	pr_char(b, '\t');
	if (r.vaddr_known)
		pr_hex(b, r.module_vaddr + back);
	else
		pr_char(b, '-');
	pr_char(b, '\n');
	return pr_flush(b, fd);
}

/*
 * The crash of this flush, if it is the crash handler's: one "crash" line, then its frames.
 * The line buffer comes from the symbolizer's arena (the alternate signal stack is small);
 * without it (mmap failed), frames are written unnamed from a stack buffer.
 */
static int crash_lines(int fd)
{
	/* pairs with the release in map_set_crash() */
	const struct crash_report *c = xfdr_load_acquire(&map_crash);
	char text[160];
	struct pr_buf b = PR_BUF_INIT(text);
	struct sym_table st;
	struct pr_buf fb;
	int rc, sym_ok;
	uint32_t i;

	if (!c || c->tid != (uint32_t)syscall(SYS_gettid))
		return 0;
	pr_str(&b, "crash\t");
	pr_u64(&b, (uint64_t)c->signal);
	pr_char(&b, '\t');
	pr_str(&b, c->signal_name);
	pr_char(&b, '\t');
	pr_i64(&b, c->code);
	pr_char(&b, '\t');
	pr_hex(&b, c->fault_addr);
	pr_char(&b, '\t');
	pr_u64(&b, c->tid);
	pr_char(&b, '\n');
	rc = pr_flush(&b, fd);
	if (rc || !c->frame_count)
		return rc;
	memset(&st, 0, sizeof(st));
	sym_ok = !sym_open(&st);
	fb.text = sym_ok ? sym_arena_alloc(&st, FRAME_LINE_BYTES) : NULL;
	fb.cap = FRAME_LINE_BYTES;
	if (!fb.text) {
		if (sym_ok)
			sym_close(&st);
		sym_ok = 0;
		fb.text = text;
		fb.cap = sizeof(text);
	}
	for (i = 0; i < c->frame_count && i < XFDR_CRASH_FRAMES_MAX && !rc; i++)
		rc = frame_line(fd, &st, sym_ok, i, c->frames[i], &fb);
	if (sym_ok)
		sym_close(&st);
	return rc;
}

void map_clock_rate_lines(struct pr_buf *b, uint64_t tsc_hz)
{
	pr_str(b, "tsc_hz\t");
	pr_u64(b, tsc_hz);
	pr_str(b, "\ntsc_hz_method\t");
	pr_str(b, clock_hz_method());
	pr_char(b, '\n');
}

static const char *pool_mode_name(uint32_t mode)
{
	switch (mode) {
	case POOL_RING:
		return "ring";
	case POOL_STREAM:
		return "stream";
	default:
		return "bounded";
	}
}

int map_write_tail(int fd, uint64_t tsc_hz, const struct map_flush *st,
		   const struct drop_totals *drops)
{
	char text[128];
	struct pr_buf b = PR_BUF_INIT(text);
	int rc = 0, c;

	if (tsc_hz) {
		map_clock_rate_lines(&b, tsc_hz);
		rc = pr_flush(&b, fd);
	}

	if (!rc)
		rc = line_ks(fd, "clock", clock_source_name(clock_source()));
	if (!rc)
		rc = line_kv(fd, "constant_tsc", (uint64_t)clock_invariant_tsc());
	if (!rc)
		rc = line_kv(fd, "nonstop_tsc", (uint64_t)clock_invariant_tsc());
	if (!rc)
		rc = line_kv(fd, "buffer_size", rt_pool.buffer_bytes);
	if (!rc)
		rc = line_kv(fd, "buffer_max", rt_pool.count);
	if (!rc)
		rc = line_ks(fd, "mode", pool_mode_name(xfdr_load_relaxed(&rt_pool.mode)));
	if (!rc)
		rc = line_kv(fd, "func_duration_threshold_us", xfdr_load_relaxed(&rec_elide_us));
	if (!rc)
		rc = filter_lines(fd);
	if (!rc && st->since_tsc)
		rc = line_kv(fd, "since_tsc", st->since_tsc);
	if (!rc)
		rc = line_kv(fd, "buffers_written", st->buffers_written);
	if (!rc)
		rc = line_kv(fd, "buffers_reused_in_flush", st->buffers_reused);
	for (c = 0; c < DROP_CAUSES && !rc; c++) {
		char text[96];
		struct pr_buf b = PR_BUF_INIT(text);

		pr_str(&b, "dropped\t");
		pr_str(&b, drop_cause_name((enum drop_cause)c));
		pr_char(&b, '\t');
		pr_u64(&b, drops->cause[c]);
		pr_char(&b, '\n');
		rc = pr_flush(&b, fd);
	}
	if (!rc)
		rc = line_kv(fd, "dropped\ttotal", drops->total);
	for (c = 0; c < THREAD_NOTES && !rc; c++)
		rc = line_kv(fd, thread_note_name((enum thread_note)c), drops->noted[c]);
	if (!rc)
		rc = crash_lines(fd);
	if (!rc)
		rc = thread_lines(fd);
	return rc;
}
