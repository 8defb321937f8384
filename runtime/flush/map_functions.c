/*
 * runtime/flush/map_functions.c - the function lines of the .map sidecar (see
 * map_functions.h; the line formats: doc/map-format.md).
 *
 * Lines are built in one 64 KiB buffer taken from the symbolizer's arena and written with
 * write(2) whenever it is past OUT_FLUSH_AT; every field is cut to FIELD_MAX_BYTES, so one
 * line always fits in the slack. The first write error is kept and ends the writing.
 */
#include <errno.h>
#include <string.h>

#include "runtime/base/compiler.h"
#include "runtime/base/print.h"
#include "runtime/flush/map_functions.h"
#include "runtime/flush/names_directory.h"
#include "runtime/symbols/fnmap.h"
#include "runtime/symbols/symbolizer.h"
#include "runtime/symbols/unload.h"

#define OUT_BYTES (64u * 1024u)
#define OUT_FLUSH_AT (OUT_BYTES - 12u * 1024u)
#define FIELD_MAX_BYTES 4096u
_Static_assert(2u * FIELD_MAX_BYTES + 128u <= MAP_FN_LINE_BYTES, "a function line fits");
_Static_assert(OUT_FLUSH_AT + MAP_FN_LINE_BYTES <= OUT_BYTES, "a line fits in the slack");

struct fn_writer {
	int fd;
	int rc; /* first error (negative errno); later writes are skipped */
	struct pr_buf b;
	struct sym_table sym;
	int sym_ok;
	uint64_t listed;
	uint64_t unnamed;
};

static const struct map_fn_source *sources[MAP_FN_SOURCES_MAX];
static uint64_t unnamed_reported; /* the unnamed count the last stderr line gave */
static uint32_t source_count;	  /* slots claimed; a claimed slot may still be NULL a moment */

int map_fn_register(const struct map_fn_source *src)
{
	uint32_t i = __atomic_fetch_add(&source_count, 1u, __ATOMIC_RELAXED);

	if (i >= MAP_FN_SOURCES_MAX)
		return -ENOSPC;
	/* pairs with the acquire in map_fn_source_at() */
	xfdr_store_release(&sources[i], src);
	names_directory_publish();
	return 0;
}

/* The i-th registered source, or NULL (none there, or not stored yet). */
XFDR_NOINSTR const struct map_fn_source *map_fn_source_at(uint32_t i)
{
	uint32_t n = xfdr_load_relaxed(&source_count);

	if (i >= n || i >= MAP_FN_SOURCES_MAX)
		return NULL;
	return xfdr_load_acquire(&sources[i]);
}

static XFDR_NOINSTR void out_flush(struct fn_writer *w)
{
	int rc;

	if (!w->b.len)
		return;
	rc = w->rc ? 0 : pr_write_all(w->fd, w->b.text, w->b.len);
	if (rc && !w->rc)
		w->rc = rc;
	w->b.len = 0;
	w->b.truncated = 0;
}

static XFDR_NOINSTR void out_reserve(struct fn_writer *w)
{
	if (w->b.len >= OUT_FLUSH_AT)
		out_flush(w);
}

static XFDR_NOINSTR int writer_open(struct fn_writer *w, int fd)
{
	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->sym_ok = !sym_open(&w->sym);
	w->b.text = sym_arena_alloc(&w->sym, OUT_BYTES);
	if (!w->b.text) {
		sym_close(&w->sym);
		return -ENOMEM;
	}
	w->b.cap = OUT_BYTES;
	return 0;
}

/* "key<TAB>text<TAB>value", or "key<TAB>value" without text. */
static XFDR_NOINSTR void writer_kv(struct fn_writer *w, const char *key, const char *text,
				   uint64_t value)
{
	out_reserve(w);
	pr_str(&w->b, key);
	pr_char(&w->b, '\t');
	if (text) {
		pr_field(&w->b, text, FIELD_MAX_BYTES);
		pr_char(&w->b, '\t');
	}
	pr_u64(&w->b, value);
	pr_char(&w->b, '\n');
}

/*
 * The function at addr as it was named when its library was dlclose()d (symbols/unload.h):
 * 1 with r filled, 0 when its library was not unloaded.
 */
static XFDR_NOINSTR int resolve_unloaded(uint32_t id, uintptr_t addr, struct sym_result *r)
{
	const struct unload_name *gone = unload_count() ? unload_find(id, addr) : NULL;

	if (!gone)
		return 0;
	r->name = gone->name;
	r->module = gone->module;
	r->module_vaddr = gone->module_vaddr;
	r->vaddr_known = gone->vaddr_known;
	return 1;
}

/* What is known of the function at addr: named when its library was unloaded, else by st. */
static XFDR_NOINSTR void resolve(struct sym_table *st, int sym_ok, uint32_t id, uintptr_t addr,
				 struct sym_result *r)
{
	memset(r, 0, sizeof(*r));
	if (!resolve_unloaded(id, addr, r) && sym_ok)
		sym_lookup(st, addr, r);
}

/* One "function" line; b has room for MAP_FN_LINE_BYTES more. */
static XFDR_NOINSTR void put_function(struct pr_buf *b, uint32_t id, uintptr_t addr,
				      const struct sym_result *r)
{
	pr_str(b, "function\t");
	pr_u64(b, id);
	pr_char(b, '\t');
	pr_field(b, r->name ? r->name : "<unknown>", FIELD_MAX_BYTES);
	pr_char(b, '\t');
	pr_hex(b, addr);
	pr_char(b, '\t');
	pr_field(b, r->module ? r->module : "-", FIELD_MAX_BYTES);
	pr_char(b, '\t');
	if (r->vaddr_known)
		pr_hex(b, r->module_vaddr);
	else
		pr_char(b, '-');
	pr_char(b, '\n');
}

/* One "function" line for id at addr, its name and module resolved now. */
static XFDR_NOINSTR void writer_function(struct fn_writer *w, uint32_t id, uintptr_t addr)
{
	struct sym_result r;

	resolve(&w->sym, w->sym_ok, id, addr, &r);
	out_reserve(w);
	put_function(&w->b, id, addr, &r);
	w->listed++;
	if (!r.name)
		w->unnamed++;
}

/* Write what is buffered and the functions_unnamed line; release. Returns 0 or -errno. */
static XFDR_NOINSTR int writer_close(struct fn_writer *w)
{
	int rc;

	if (w->unnamed)
		writer_kv(w, "functions_unnamed", NULL, w->unnamed);
	out_flush(w);
	rc = w->rc;
	sym_close(&w->sym);
	return rc;
}

static XFDR_NOINSTR void list_source(struct fn_writer *w, const struct map_fn_source *src)
{
	uint32_t n = src->count(), id;

	writer_kv(w, "functions", src->name, n);
	for (id = 1; id <= n; id++) {
		uintptr_t addr = src->addr_of(id);

		if (addr)
			writer_function(w, id, addr);
	}
}

static XFDR_NOINSTR uint64_t fnmap_refused(void)
{
	uint64_t refused = 0;
	int c;

	for (c = 0; c < FNMAP_CAUSES; c++)
		refused += fnmap_unassigned((enum fnmap_unassigned_cause)c);
	return refused;
}

/* The -finstrument-functions and -pg ids: the live ones, then FNMAP_ID_NONE if lookups got it. */
static XFDR_NOINSTR void list_fnmap(struct fn_writer *w)
{
	uint32_t n = fnmap_ids_given() + FNMAP_ID_FIRST, id, live = 0;
	int c;

	for (id = FNMAP_ID_FIRST; id < n; id++)
		live += fnmap_addr_of(id) != 0;
	writer_kv(w, "functions", "cyg", live);
	for (id = FNMAP_ID_FIRST; id < n; id++) {
		uintptr_t addr = fnmap_addr_of(id);

		if (addr)
			writer_function(w, id, addr);
	}
	if (!fnmap_refused())
		return;
	out_reserve(w);
	pr_str(&w->b, "function\t");
	pr_u64(&w->b, FNMAP_ID_NONE);
	pr_str(&w->b, "\t<unassigned>\t-\t-\t-\n");
	for (c = 0; c < FNMAP_CAUSES; c++) {
		uint64_t count = fnmap_unassigned((enum fnmap_unassigned_cause)c);

		if (count)
			writer_kv(w, "functions_unassigned",
				  fnmap_cause_name((enum fnmap_unassigned_cause)c), count);
	}
}

XFDR_NOINSTR int map_write_functions(int fd)
{
	const struct map_fn_source *src;
	struct fn_writer w;
	uint64_t unnamed, listed;
	int rc, any = fnmap_ids_given() != 0 || fnmap_refused() != 0;
	uint32_t i;

	for (i = 0; i < MAP_FN_SOURCES_MAX; i++) {
		src = map_fn_source_at(i);
		any |= src && src->count() != 0;
	}
	if (!any)
		return 0;
	rc = writer_open(&w, fd);
	if (rc)
		return rc;
	for (i = 0; i < MAP_FN_SOURCES_MAX; i++) {
		src = map_fn_source_at(i);
		if (src && src->count())
			list_source(&w, src);
	}
	if (fnmap_ids_given() || fnmap_refused())
		list_fnmap(&w);
	unnamed = w.unnamed;
	listed = w.listed;
	rc = writer_close(&w);
	/* Said once per count: the live .map of backing=file is rewritten every second. */
	if (unnamed &&
	    __atomic_exchange_n(&unnamed_reported, unnamed, __ATOMIC_RELAXED) != unnamed) {
		char text[200];
		struct pr_buf b = PR_BUF_INIT(text);

		pr_u64(&b, unnamed);
		pr_str(&b, " of ");
		pr_u64(&b, listed);
		pr_str(&b, " functions have no symbol name (<unknown> in the .map file)");
		pr_line(&b);
	}
	return rc;
}

/* ---- one line at a time: the live map ------------------------------------------------------- */

XFDR_NOINSTR void map_fn_namer_line(struct sym_namer *nm, struct pr_buf *b, uint32_t id,
				    uintptr_t addr)
{
	struct sym_result r;

	memset(&r, 0, sizeof(r));
	if (!resolve_unloaded(id, addr, &r))
		sym_namer_lookup(nm, addr, &r);
	put_function(b, id, addr, &r);
}
