/*
 * rebuild/core_image.h - the memory of a process as its core dump holds it (the kernel's, or
 * gdb's gcore), and the recorder pools found in it, for `xfdr core`.
 *
 * A core is an ELF64 file of type ET_CORE whose PT_LOAD program headers map the process's
 * memory: p_vaddr .. p_vaddr + p_memsz, of which the first p_filesz bytes are in the file at
 * p_offset; the rest, and every address outside the segments, was not dumped and reads as
 * absent. The file is never loaded whole: segments are read with pread(2) as needed and the
 * search reads them a MiB at a time, so a core of many GiB costs time, not memory.
 *
 * The rebuild library's interface (rebuild/, not installed). Nothing here prints: errors come
 * back in a struct xfdr_error of one line naming the file and the offset, and what the search
 * sees is handed to callbacks.
 */
#ifndef XFDR_REBUILD_CORE_IMAGE_H
#define XFDR_REBUILD_CORE_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "rebuild/pool_image.h"
#include "xfdr/reader.h"

struct rb_core_segment {
	uint64_t vaddr, memsz;
	uint64_t off, filesz; /* filesz: what the file really holds (cut to its size) */
};

struct rb_core {
	int fd;
	const char *name;
	uint64_t bytes;
	int big_endian;
	struct rb_core_segment *segs; /* PT_LOAD segments by ascending vaddr */
	size_t nsegs;
	uint64_t dumped_bytes; /* sum of filesz */
	size_t cut_segs;       /* segments the file ends inside: a truncated core */
};

/*
 * rb_core_open - take fd, the open file name of bytes bytes, as a core: check its ELF header
 * (ELF64, either byte order, ET_CORE, 56-byte program headers) and read its PT_LOAD program
 * headers (e_phnum, or section header 0's sh_info with PN_XNUM). The core owns fd from here
 * on, whatever the result: rb_core_close() closes it. Returns 0, or -1 with err filled
 * ("NAME: offset N: expected ..., found ...").
 */
int rb_core_open(struct rb_core *c, int fd, uint64_t bytes, const char *name,
		 struct xfdr_error *err);
void rb_core_close(struct rb_core *c);

/*
 * rb_core_read - copy the process's bytes [at, at + n) out of the core. Returns 0, 1 when some
 * of them are not in the file (never dumped, or the core is cut short), or -1 with err filled
 * on an I/O error.
 */
int rb_core_read(const struct rb_core *c, uint64_t at, void *buf, size_t n, struct xfdr_error *err);

/* A pool found in a core: the process address of its locator, and the locator. */
struct rb_core_pool {
	uint64_t addr;
	struct rb_pool_locator loc;
};

/* What the search tells while it runs; any may be NULL. */
struct rb_core_search_hooks {
	void (*rejected)(void *ctx, uint64_t addr, const char *why); /* a magic that is no pool */
	void (*found)(void *ctx, const struct rb_core_pool *pool);
	void (*progress)(void *ctx, uint64_t done, uint64_t total); /* dumped bytes searched */
	void *ctx;
};

struct rb_core_pools {
	struct rb_core_pool *v; /* in address order */
	size_t n;
	uint64_t rejected;	/* page starts with the magic that did not validate */
	char first_reject[600]; /* "at 0xADDR: why" of the first of them */
};

/*
 * rb_core_find_pools - the pools in the core. Every page start of every dumped segment is
 * checked for the "XFDRPOOL" magic; a candidate counts only if its locator validates
 * (rb_pool_locator_parse()), its descs_addr is 0 or its own address + header_bytes, and its
 * descriptors are in the core; so a stray "XFDRPOOL" (the string in .rodata, a payload) does
 * not. Returns 0 with *out filled (free it with rb_core_pools_free(); none found is no
 * error), or -1 with err filled on an I/O error or no memory.
 */
int rb_core_find_pools(const struct rb_core *c, const struct rb_core_search_hooks *hooks,
		       struct rb_core_pools *out, struct xfdr_error *err);
void rb_core_pools_free(struct rb_core_pools *p);

/*
 * The pool to rebuild when there are several (a process that re-initialised leaves its older
 * pools): the one of the highest session, the last in address order among equals. NULL when
 * none was found.
 */
const struct rb_core_pool *rb_core_newest_pool(const struct rb_core_pools *p);

/*
 * rb_core_pool_job - *job for rb_pool_rebuild(): the descriptors and buffers of pool read
 * through c's segments, its TSC flags and rate from the locator. The note callback is left
 * NULL for the caller.
 */
void rb_core_pool_job(struct rb_core *c, const struct rb_core_pool *pool, struct rb_pool_job *job);

#endif /* XFDR_REBUILD_CORE_IMAGE_H */
