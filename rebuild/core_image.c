/*
 * rebuild/core_image.c - a core dump's memory, and the recorder pools in it (core_image.h).
 *
 * Finding the pool: the runtime keeps the "XFDRPOOL" locator at the start of a page-aligned
 * mapping, followed by the buffer descriptors (format.h), so only page starts are looked at.
 * Descriptors and buffers are then read through the segments by pool_image.c, as `xfdr
 * recover` reads the live files.
 */
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reader/bytes.h"
#include "reader/error.h"
#include "rebuild/core_image.h"
#include "rebuild/file_io.h"

#define CORE_PAGE 4096u
#define CORE_CHUNK (1u << 20) /* bytes read at a time by the search; a multiple of CORE_PAGE */

/* ELF64 field offsets (the System V ABI's Elf64_Ehdr, Elf64_Phdr, Elf64_Shdr). */
enum {
	EH_BYTES = 64,
	EH_TYPE_OFF = 16,
	EH_PHOFF_OFF = 32,
	EH_SHOFF_OFF = 40,
	EH_PHENTSIZE_OFF = 54,
	EH_PHNUM_OFF = 56,
	PH_BYTES = 56,
	PH_TYPE_OFF = 0,
	PH_OFFSET_OFF = 8,
	PH_VADDR_OFF = 16,
	PH_FILESZ_OFF = 32,
	PH_MEMSZ_OFF = 40,
	SH_BYTES = 64,
	SH_INFO_OFF = 44,
};

static int fail_io(const struct rb_core *c, uint64_t off, struct xfdr_error *err)
{
	return rd_fail_name(c->name, err, off, "expected readable bytes, found %s",
			    strerror(errno));
}

/* ---- The core file ------------------------------------------------------------------------ */

static int cmp_seg(const void *a, const void *b)
{
	const struct rb_core_segment *x = a, *y = b;

	return (x->vaddr > y->vaddr) - (x->vaddr < y->vaddr);
}

static const char *e_type_name(unsigned t)
{
	switch (t) {
	case ET_NONE:
		return "no file type";
	case ET_REL:
		return "ET_REL, a relocatable object";
	case ET_EXEC:
		return "ET_EXEC, an executable";
	case ET_DYN:
		return "ET_DYN, a shared object or PIE executable";
	}
	return "unknown";
}

/*
 * Check the first have bytes of the file, its ELF header at eh (EH_BYTES, zero past have):
 * an ELF64 core in either byte order, which is set in c. Returns 0 or -1 (err).
 */
static int check_elf_header(struct rb_core *c, const uint8_t *eh, size_t have,
			    struct xfdr_error *err)
{
	const char *path = c->name;
	unsigned type;

	if (have < SELFMAG || memcmp(eh, ELFMAG, SELFMAG)) {
		if (!have)
			return rd_fail_name(path, err, 0,
					    "expected an ELF file (bytes 7f 45 4c 46), found an "
					    "empty file");
		if (have < SELFMAG)
			return rd_fail_name(path, err, have,
					    "expected an ELF file (bytes 7f 45 4c 46), found %zu "
					    "bytes",
					    have);
		return rd_fail_name(path, err, 0,
				    "expected an ELF file (bytes 7f 45 4c 46), found bytes %02x "
				    "%02x %02x %02x",
				    eh[0], eh[1], eh[2], eh[3]);
	}
	if (eh[EI_CLASS] != ELFCLASS64)
		return rd_fail_name(path, err, EI_CLASS,
				    "expected a 64-bit ELF file (class 2), found class %u%s",
				    eh[EI_CLASS], eh[EI_CLASS] == ELFCLASS32 ? " (32-bit)" : "");
	if (eh[EI_DATA] != ELFDATA2LSB && eh[EI_DATA] != ELFDATA2MSB)
		return rd_fail_name(path, err, EI_DATA,
				    "expected byte order 1 (little-endian) or 2 (big-endian), "
				    "found %u",
				    eh[EI_DATA]);
	if (have < EH_BYTES)
		return rd_fail_name(path, err, have,
				    "expected a %d-byte ELF header, found %zu bytes", EH_BYTES,
				    have);
	c->big_endian = eh[EI_DATA] == ELFDATA2MSB;
	type = rd_u16(eh + EH_TYPE_OFF, c->big_endian);
	if (type != ET_CORE)
		return rd_fail_name(path, err, EH_TYPE_OFF,
				    "expected a core file (e_type 4, ET_CORE), found e_type %u "
				    "(%s)",
				    type, e_type_name(type));
	if (rd_u16(eh + EH_PHENTSIZE_OFF, c->big_endian) != PH_BYTES)
		return rd_fail_name(path, err, EH_PHENTSIZE_OFF,
				    "expected e_phentsize %d, found %u", PH_BYTES,
				    rd_u16(eh + EH_PHENTSIZE_OFF, c->big_endian));
	return 0;
}

/*
 * The number of program headers of the checked ELF header eh into *phnum: e_phnum, or with
 * PN_XNUM (more than 65534) section header 0's sh_info. Returns 0 or -1 (err).
 */
static int program_header_count(const struct rb_core *c, const uint8_t *eh, uint32_t *phnum,
				struct xfdr_error *err)
{
	uint8_t sh[SH_BYTES];
	uint64_t shoff;
	int rc;

	*phnum = rd_u16(eh + EH_PHNUM_OFF, c->big_endian);
	if (*phnum != PN_XNUM)
		return 0;
	shoff = rd_u64(eh + EH_SHOFF_OFF, c->big_endian);
	rc = shoff <= c->bytes - SH_BYTES ? rb_pread_all(c->fd, sh, SH_BYTES, shoff) : 1;
	if (rc < 0)
		return fail_io(c, shoff, err);
	if (rc)
		return rd_fail_name(c->name, err, EH_SHOFF_OFF,
				    "expected section header 0 (e_phnum is PN_XNUM) inside the "
				    "file, found e_shoff %llu",
				    (unsigned long long)shoff);
	*phnum = rd_u32(sh + SH_INFO_OFF, c->big_endian);
	return 0;
}

/*
 * The PT_LOAD segments of the phnum program headers at phoff (inside the file) into c, by
 * ascending address, each cut to the address space and the file. Returns 0 or -1 (err).
 */
static int read_segments(struct rb_core *c, uint64_t phoff, uint32_t phnum, struct xfdr_error *err)
{
	uint8_t ph[PH_BYTES];
	struct rb_core_segment *s;
	uint64_t i;
	int big = c->big_endian;

	c->segs = calloc(phnum ? phnum : 1, sizeof(*c->segs));
	if (!c->segs)
		return rb_fail_no_memory(c->name, err);
	for (i = 0; i < phnum; i++) {
		if (rb_pread_all(c->fd, ph, PH_BYTES, phoff + i * PH_BYTES))
			return fail_io(c, phoff + i * PH_BYTES, err);
		if (rd_u32(ph + PH_TYPE_OFF, big) != PT_LOAD)
			continue;
		s = &c->segs[c->nsegs++];
		s->vaddr = rd_u64(ph + PH_VADDR_OFF, big);
		s->memsz = rd_u64(ph + PH_MEMSZ_OFF, big);
		s->off = rd_u64(ph + PH_OFFSET_OFF, big);
		s->filesz = rd_u64(ph + PH_FILESZ_OFF, big);
		/* Keep every range inside the address space and the file. */
		if (s->memsz > UINT64_MAX - s->vaddr)
			s->memsz = UINT64_MAX - s->vaddr;
		if (s->filesz > s->memsz)
			s->filesz = s->memsz;
		if (s->filesz && (s->off > c->bytes || s->filesz > c->bytes - s->off)) {
			s->filesz = s->off > c->bytes ? 0 : c->bytes - s->off;
			c->cut_segs++;
		}
		c->dumped_bytes += s->filesz;
	}
	qsort(c->segs, c->nsegs, sizeof(*c->segs), cmp_seg);
	return 0;
}

int rb_core_open(struct rb_core *c, int fd, uint64_t bytes, const char *name,
		 struct xfdr_error *err)
{
	uint8_t eh[EH_BYTES];
	uint64_t phoff;
	uint32_t phnum;
	size_t have;

	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->name = name;
	c->bytes = bytes;
	have = bytes < EH_BYTES ? (size_t)bytes : EH_BYTES;
	memset(eh, 0, sizeof(eh));
	if (rb_pread_all(fd, eh, have, 0) < 0)
		return fail_io(c, 0, err);
	if (check_elf_header(c, eh, have, err) || program_header_count(c, eh, &phnum, err))
		return -1;
	phoff = rd_u64(eh + EH_PHOFF_OFF, c->big_endian);
	if (phoff > bytes || (bytes - phoff) / PH_BYTES < phnum)
		return rd_fail_name(name, err, EH_PHOFF_OFF,
				    "expected %u program headers of %d bytes from offset %llu, "
				    "found the end of the file at %llu",
				    phnum, PH_BYTES, (unsigned long long)phoff,
				    (unsigned long long)bytes);
	return read_segments(c, phoff, phnum, err);
}

void rb_core_close(struct rb_core *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->segs);
	c->fd = -1;
	c->segs = NULL;
	c->nsegs = 0;
}

/* The segment holding address at (by its memsz), or NULL. */
static const struct rb_core_segment *segment_at(const struct rb_core *c, uint64_t at)
{
	size_t lo = 0, hi = c->nsegs, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (c->segs[mid].vaddr <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	mid = lo - 1;
	return at - c->segs[mid].vaddr < c->segs[mid].memsz ? &c->segs[mid] : NULL;
}

/*
 * Copy the bytes of [at, at + n) to buf (NULL: only look), segment after segment. Returns 0,
 * 1 at the first byte not in the file, -1 (err) on an I/O error.
 */
static int walk(const struct rb_core *c, uint64_t at, uint8_t *buf, uint64_t n,
		struct xfdr_error *err)
{
	const struct rb_core_segment *s;
	uint64_t in, k;
	int rc;

	while (n) {
		s = segment_at(c, at);
		if (!s)
			return 1;
		in = at - s->vaddr;
		if (in >= s->filesz)
			return 1;
		k = s->filesz - in < n ? s->filesz - in : n;
		if (buf) {
			rc = rb_pread_all(c->fd, buf, (size_t)k, s->off + in);
			if (rc < 0)
				return rd_fail_name(
				    c->name, err, s->off + in,
				    "expected %llu readable bytes (address 0x%llx), "
				    "found %s",
				    (unsigned long long)k, (unsigned long long)at, strerror(errno));
			if (rc)
				return 1; /* the file shrank */
			buf += k;
		}
		at += k;
		n -= k;
	}
	return 0;
}

int rb_core_read(const struct rb_core *c, uint64_t at, void *buf, size_t n, struct xfdr_error *err)
{
	return walk(c, at, buf, n, err);
}

static int core_read(void *ctx, uint64_t at, void *buf, size_t n, struct xfdr_error *err)
{
	return walk(ctx, at, buf, n, err);
}

/* Are all of [at, at + n) in the file? */
static int present(const struct rb_core *c, uint64_t at, uint64_t n)
{
	return walk(c, at, NULL, n, NULL) == 0;
}

/* ---- Finding the pool -------------------------------------------------------------------- */

struct search {
	const struct rb_core *c;
	const struct rb_core_search_hooks *hooks;
	struct rb_core_pools *out;
	size_t cap;
	struct xfdr_error *err;
};

static void reject(struct search *s, uint64_t addr, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void reject(struct search *s, uint64_t addr, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (!s->out->rejected++)
		snprintf(s->out->first_reject, sizeof(s->out->first_reject), "at 0x%llx: %s",
			 (unsigned long long)addr, why);
	if (s->hooks->rejected)
		s->hooks->rejected(s->hooks->ctx, addr, why);
}

static int add_pool(struct search *s, uint64_t addr, const struct rb_pool_locator *loc)
{
	struct rb_core_pools *o = s->out;
	struct rb_core_pool *v;

	if (o->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4;

		v = realloc(o->v, cap * sizeof(*v));
		if (!v)
			return rb_fail_no_memory(s->c->name, s->err);
		o->v = v;
		s->cap = cap;
	}
	o->v[o->n] = (struct rb_core_pool){addr, *loc};
	if (s->hooks->found)
		s->hooks->found(s->hooks->ctx, &o->v[o->n]);
	o->n++;
	return 0;
}

/* A page starting with the magic: keep it if it is a whole, believable locator. */
static int consider(struct search *s, uint64_t addr)
{
	uint8_t b[XFDR_POOL_HEADER_BYTES];
	struct rb_pool_locator loc;
	struct xfdr_error why;
	uint64_t descs, need;
	int rc;

	rc = walk(s->c, addr, b, sizeof(b), s->err);
	if (rc < 0)
		return -1;
	if (rc) {
		reject(s, addr, "its %d bytes are not all in the core", XFDR_POOL_HEADER_BYTES);
		return 0;
	}
	if (rb_pool_locator_parse(b, &loc, &why) < 0) {
		reject(s, addr, "offset %llu: %s", (unsigned long long)why.offset, why.text);
		return 0;
	}
	descs = addr + loc.header_bytes;
	if (loc.descs_addr && loc.descs_addr != descs) {
		reject(s, addr,
		       "offset %d: expected descs_addr 0 or 0x%llx (its address + header_bytes), "
		       "found 0x%llx",
		       XFDR_POOL_DESCS_ADDR_OFF, (unsigned long long)descs,
		       (unsigned long long)loc.descs_addr);
		return 0;
	}
	need = (uint64_t)loc.buffer_count * loc.desc_stride;
	if (descs < addr || !present(s->c, descs, need)) {
		reject(s, addr, "its %u descriptors (%llu bytes at 0x%llx) are not all in the core",
		       loc.buffer_count, (unsigned long long)need, (unsigned long long)descs);
		return 0;
	}
	return add_pool(s, addr, &loc);
}

/* Check the first 8 bytes of every page of segment sg, a chunk of pages per read. */
static int search_segment(struct search *s, const struct rb_core_segment *sg, uint8_t *chunk,
			  uint64_t *done)
{
	const uint64_t page_mask = CORE_PAGE - 1;
	const struct rb_core *c = s->c;
	uint64_t a, end, first, len, p;
	int r;

	if (sg->filesz < XFDR_POOL_HEADER_BYTES)
		return 0;
	end = sg->vaddr + sg->filesz;
	first = (sg->vaddr + page_mask) & ~page_mask;
	if (first < sg->vaddr)
		return 0; /* wraps: nothing page-aligned in it */
	for (a = first; a < end && end - a >= 8; a += len) {
		len = end - a < CORE_CHUNK ? end - a : CORE_CHUNK;
		r = rb_pread_all(c->fd, chunk, (size_t)len, sg->off + (a - sg->vaddr));
		if (r < 0)
			return fail_io(c, sg->off + (a - sg->vaddr), s->err);
		if (r)
			return 0; /* the file shrank under us: the rest is absent */
		for (p = 0; p + 8 <= len; p += CORE_PAGE) {
			if (!memcmp(chunk + p, XFDR_POOL_MAGIC, 8) && consider(s, a + p))
				return -1;
		}
		*done += len;
		if (s->hooks->progress)
			s->hooks->progress(s->hooks->ctx, *done, c->dumped_bytes);
	}
	return 0;
}

int rb_core_find_pools(const struct rb_core *c, const struct rb_core_search_hooks *hooks,
		       struct rb_core_pools *out, struct xfdr_error *err)
{
	static const struct rb_core_search_hooks none;
	struct search s = {c, hooks ? hooks : &none, out, 0, err};
	uint64_t done = 0;
	uint8_t *chunk;
	size_t i;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	chunk = malloc(CORE_CHUNK);
	if (!chunk)
		return rb_fail_no_memory(c->name, err);
	for (i = 0; i < c->nsegs && !rc; i++)
		rc = search_segment(&s, &c->segs[i], chunk, &done);
	free(chunk);
	return rc;
}

void rb_core_pools_free(struct rb_core_pools *p)
{
	free(p->v);
	p->v = NULL;
	p->n = 0;
}

const struct rb_core_pool *rb_core_newest_pool(const struct rb_core_pools *p)
{
	const struct rb_core_pool *use = p->n ? &p->v[0] : NULL;
	size_t i;

	for (i = 1; i < p->n; i++) {
		if (p->v[i].loc.session >= use->loc.session)
			use = &p->v[i];
	}
	return use;
}

void rb_core_pool_job(struct rb_core *c, const struct rb_core_pool *pool, struct rb_pool_job *job)
{
	memset(job, 0, sizeof(*job));
	job->loc = &pool->loc;
	job->descs = (struct rb_pool_source){core_read, c};
	job->descs_at = pool->addr + pool->loc.header_bytes;
	job->bufs = (struct rb_pool_source){core_read, c};
	job->bufs_at = pool->loc.buffers_addr;
	job->constant_tsc = job->nonstop_tsc = !!(pool->loc.flags & XFDR_POOL_INVARIANT_TSC);
	job->tsc_hz = pool->loc.tsc_hz;
}
