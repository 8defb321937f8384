/*
 * rebuild/core_names.h - the names a core dump keeps for `xfdr core`: which thread each trace
 * thread id was and which function each id is, found through the "XFDRNAMS" names directory
 * the pool locator points at (layout: xfdr/format.h), and named from the files the core says
 * were mapped (elfutils' libdwfl reads the core's notes and the files' symbol tables).
 *
 * The rebuild library's interface (rebuild/, not installed). Nothing here prints.
 */
#ifndef XFDR_REBUILD_CORE_NAMES_H
#define XFDR_REBUILD_CORE_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "rebuild/core_image.h"
#include "xfdr/format.h"
#include "xfdr/reader.h"

/* A thread slot of the recording session: its tid, trace thread id and name. */
struct rb_core_thread {
	uint32_t tid, thread_id;
	char name[17]; /* the name at exit if it had exited, else at registration */
};

/* One function id and its address in the process. */
struct rb_core_function {
	uint32_t id;
	uint64_t addr;
};

/* A space of function ids: its functions by ascending id. */
struct rb_core_source {
	char name[9];	/* "xray", "cyg" */
	uint32_t count; /* the ids it had: 1 .. count */
	struct rb_core_function *fn;
	size_t nfn;
};

struct rb_core_names {
	struct rb_core_thread *threads;
	size_t nthreads;
	struct rb_core_source sources[XFDR_NAMES_SOURCES_MAX];
	size_t nsources;
	/* NULL when the directory was read; else why there are no names ("no names directory") */
	const char *missing;
	char missing_text[160];
};

/*
 * rb_core_names_read - the names of pool's session from the directory at names_addr (the
 * locator's). A directory that is absent, not dumped or malformed is no error: *out then has
 * no threads and no sources and says why in missing; so are slots and tables that were not
 * dumped (they are left out). Returns 0, or -1 with err filled on an I/O error or no memory.
 * Free with rb_core_names_free().
 */
int rb_core_names_read(const struct rb_core *c, const struct rb_core_pool *pool,
		       struct rb_core_names *out, struct xfdr_error *err);
void rb_core_names_free(struct rb_core_names *n);

/* The thread of (tid, thread_id), or NULL. */
const struct rb_core_thread *rb_core_names_thread(const struct rb_core_names *n, uint32_t tid,
						  uint32_t thread_id);

/* What an address of the process was: the symbol covering it and the file mapped there. */
struct rb_core_symbol {
	const char *name;   /* NULL: no symbol covers it */
	const char *module; /* NULL: no file of the core's is mapped there */
	uint64_t module_vaddr;
	int vaddr_known;
};

struct rb_core_symbols;

/*
 * rb_core_symbols_open - read c's notes (the files it had mapped, NT_FILE, and the dynamic
 * linker's list) and find those files on disk. Files that are gone are no error: their
 * addresses get no name. Returns 0, or -1 with err filled ("NAME: ..." from libdwfl) when the
 * core cannot be read as one. Close with rb_core_symbols_close().
 */
int rb_core_symbols_open(const struct rb_core *c, struct rb_core_symbols **out,
			 struct xfdr_error *err);

/* rb_core_symbol - what addr was; the strings live as long as s. */
void rb_core_symbol(struct rb_core_symbols *s, uint64_t addr, struct rb_core_symbol *out);

/* How many of the core's mapped files were found on disk, and how many were not. */
void rb_core_symbols_files(const struct rb_core_symbols *s, size_t *found, size_t *missing);

void rb_core_symbols_close(struct rb_core_symbols *s);

#endif /* XFDR_REBUILD_CORE_NAMES_H */
