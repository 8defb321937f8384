/*
 * command/core.c - `xfdr core CORE`: a valid trace from the xfdr pool inside a core dump
 * (the kernel's, or gdb's gcore) of a process that was recording.
 *
 * A core is an ELF64 file of type ET_CORE whose PT_LOAD program headers map the process's
 * memory: p_vaddr .. p_vaddr + p_memsz, of which the first p_filesz bytes are in the file at
 * p_offset; the rest, and every address outside the segments, was not dumped and reads as
 * absent. The file is never loaded whole: segments are read with pread(2) as needed, and the
 * search reads them a MiB at a time, so a core of many GiB costs time, not memory.
 *
 * Finding the pool: the runtime keeps the "XFDRPOOL" locator at the start of a page-aligned
 * mapping, followed by the buffer descriptors (format.h). Every page start of every dumped
 * segment is checked for the magic; a candidate counts only if the locator validates
 * (rb_pool_locator_parse()), its descs_addr is 0 or its own address + header_bytes, and its
 * descriptors are in the core; so a stray "XFDRPOOL" (the string in .rodata, a payload) does
 * not. A process that re-initialised may leave an older pool: the highest session wins, and
 * the choice is said on stderr. Descriptors and buffers are then read through the segments
 * by rebuild/pool_image.c, as `xfdr recover` reads the live files.
 *
 * Exit status, as for every verb: 0 OUT written; 1 CORE is no ELF64 core or holds no pool
 * (one line naming the file, and the offset when it is malformed), an OUT or OUT.map that is
 * not a regular file (or a link to one), or a write error; 2 a usage error, a CORE that cannot
 * be opened (missing, permission denied, not a regular file), or an OUT that exists without
 * --force or is the core. Nothing is written unless the status is 0.
 */
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "command/cli.h"
#include "command/option_table.h"
#include "reader/bytes.h"
#include "rebuild/pool_image.h"

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

static const char core_head[] =
    "usage: xfdr core [-o OUT] [--force] [-v] CORE\n"
    "\n"
    "Rebuild a valid trace from a core dump (the kernel's, or gdb's gcore) of a\n"
    "process that was recording with xfdr: the pool's locator is found in the dumped\n"
    "memory, and the buffers that held events are kept in the order their threads\n"
    "claimed them; a buffer that was being written is closed at its last complete\n"
    "record, a torn tail is cut, never-used buffers are dropped. What was kept and\n"
    "dropped is printed on stderr. A file-backed pool (backing=file) is not in a core\n"
    "by default (/proc/PID/coredump_filter): `xfdr recover` reads its live files.\n";

static const char core_tail[] =
    "Exit status (nothing is written unless 0): 0 OUT written, 1 not an ELF64 core,\n"
    "no xfdr pool in it, OUT not a regular file, or a write error, 2 usage error,\n"
    "CORE missing or unreadable, or OUT exists (--force replaces it).\n";

/* Returns 0 with *o filled, -1 after --help, or a status after a usage error. */
static int parse_core_opts(int argc, char **argv, struct cli_rebuild_opts *o)
{
	const struct cli_option options[] = {
	    CLI_OPT_STRING('o', "output", &o->output, "OUT",
			   "write OUT (default: CORE.xray) and OUT.map"),
	    CLI_OPT_FLAG('f', "force", &o->force, 1,
			 "replace OUT and OUT.map if they exist (regular files only)"),
	    CLI_OPT_FLAG('v', "verbose", &o->verbose, 1,
			 "one line per pool found and per buffer on stderr"),
	    CLI_OPT_HELP,
	    CLI_OPT_END,
	};
	const struct cli_command cmd = {
	    .head = core_head,
	    .tail = core_tail,
	    .column = 20,
	    .operand = "CORE",
	    .options = options,
	};

	memset(o, 0, sizeof(*o));
	return cli_rebuild_opts_parse(&cmd, argc, argv, o);
}

/* ---- The core file ------------------------------------------------------------------------ */

struct core_seg {
	uint64_t vaddr, memsz;
	uint64_t off, filesz; /* filesz: what the file really holds (cut to its size) */
};

struct core {
	int fd;
	const char *name;
	uint64_t bytes;
	int big;
	struct core_seg *segs; /* PT_LOAD segments by ascending vaddr */
	size_t nsegs;
	uint64_t dumped_bytes; /* sum of filesz */
	size_t cut_segs;       /* segments the file ends inside: a truncated core */
};

/* pread all of n bytes at off. Returns 0, 1 at the end of the file, -1 (errno) on error. */
static int pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	uint8_t *p = buf;
	ssize_t r;

	while (n) {
		r = pread(fd, p, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return 1;
		p += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

static int core_fail_io(const struct core *c, uint64_t off)
{
	fprintf(stderr, "%s: offset %llu: expected readable bytes, found %s\n", c->name,
		(unsigned long long)off, strerror(errno));
	return CLI_FAIL;
}

static int cmp_seg(const void *a, const void *b)
{
	const struct core_seg *x = a, *y = b;

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
 * an ELF64 core in either byte order, which is set in c. Returns 0, or reports and returns
 * CLI_FAIL.
 */
static int check_elf_header(struct core *c, const uint8_t *eh, size_t have)
{
	const char *path = c->name;
	unsigned type;

	if (have < SELFMAG || memcmp(eh, ELFMAG, SELFMAG)) {
		if (!have)
			fprintf(stderr,
				"%s: offset 0: expected an ELF file (bytes 7f 45 4c 46), "
				"found an empty file\n",
				path);
		else if (have < SELFMAG)
			fprintf(stderr,
				"%s: offset %zu: expected an ELF file (bytes 7f 45 4c 46), "
				"found %zu bytes\n",
				path, have, have);
		else
			fprintf(stderr,
				"%s: offset 0: expected an ELF file (bytes 7f 45 4c 46), "
				"found bytes %02x %02x %02x %02x\n",
				path, eh[0], eh[1], eh[2], eh[3]);
		return CLI_FAIL;
	}
	if (eh[EI_CLASS] != ELFCLASS64) {
		fprintf(stderr,
			"%s: offset %d: expected a 64-bit ELF file (class 2), found class %u%s\n",
			path, EI_CLASS, eh[EI_CLASS],
			eh[EI_CLASS] == ELFCLASS32 ? " (32-bit)" : "");
		return CLI_FAIL;
	}
	if (eh[EI_DATA] != ELFDATA2LSB && eh[EI_DATA] != ELFDATA2MSB) {
		fprintf(stderr,
			"%s: offset %d: expected byte order 1 (little-endian) or 2 "
			"(big-endian), found %u\n",
			path, EI_DATA, eh[EI_DATA]);
		return CLI_FAIL;
	}
	if (have < EH_BYTES) {
		fprintf(stderr, "%s: offset %zu: expected a %d-byte ELF header, found %zu bytes\n",
			path, have, EH_BYTES, have);
		return CLI_FAIL;
	}
	c->big = eh[EI_DATA] == ELFDATA2MSB;
	type = rd_u16(eh + EH_TYPE_OFF, c->big);
	if (type != ET_CORE) {
		fprintf(stderr,
			"%s: offset %d: expected a core file (e_type 4, ET_CORE), found "
			"e_type %u (%s)\n",
			path, EH_TYPE_OFF, type, e_type_name(type));
		return CLI_FAIL;
	}
	if (rd_u16(eh + EH_PHENTSIZE_OFF, c->big) != PH_BYTES) {
		fprintf(stderr, "%s: offset %d: expected e_phentsize %d, found %u\n", path,
			EH_PHENTSIZE_OFF, PH_BYTES, rd_u16(eh + EH_PHENTSIZE_OFF, c->big));
		return CLI_FAIL;
	}
	return 0;
}

/*
 * The number of program headers of the checked ELF header eh into *phnum: e_phnum, or with
 * PN_XNUM (more than 65534) section header 0's sh_info. Returns 0, or reports and returns
 * CLI_FAIL.
 */
static int program_header_count(const struct core *c, const uint8_t *eh, uint32_t *phnum)
{
	uint8_t sh[SH_BYTES];
	uint64_t shoff;
	int rc;

	*phnum = rd_u16(eh + EH_PHNUM_OFF, c->big);
	if (*phnum != PN_XNUM)
		return 0;
	shoff = rd_u64(eh + EH_SHOFF_OFF, c->big);
	rc = shoff <= c->bytes - SH_BYTES ? pread_full(c->fd, sh, SH_BYTES, shoff) : 1;
	if (rc < 0)
		return core_fail_io(c, shoff);
	if (rc) {
		fprintf(stderr,
			"%s: offset %d: expected section header 0 (e_phnum is PN_XNUM) inside the "
			"file, found e_shoff %llu\n",
			c->name, EH_SHOFF_OFF, (unsigned long long)shoff);
		return CLI_FAIL;
	}
	*phnum = rd_u32(sh + SH_INFO_OFF, c->big);
	return 0;
}

/*
 * The PT_LOAD segments of the phnum program headers at phoff (inside the file) into c, by
 * ascending address, each cut to the address space and the file. Returns 0, or reports and
 * returns CLI_FAIL.
 */
static int read_segments(struct core *c, uint64_t phoff, uint32_t phnum)
{
	uint8_t ph[PH_BYTES];
	struct core_seg *s;
	uint64_t i;

	c->segs = calloc(phnum ? phnum : 1, sizeof(*c->segs));
	if (!c->segs) {
		cli_error("%s: %s", c->name, strerror(ENOMEM));
		return CLI_FAIL;
	}
	for (i = 0; i < phnum; i++) {
		if (pread_full(c->fd, ph, PH_BYTES, phoff + i * PH_BYTES))
			return core_fail_io(c, phoff + i * PH_BYTES);
		if (rd_u32(ph + PH_TYPE_OFF, c->big) != PT_LOAD)
			continue;
		s = &c->segs[c->nsegs++];
		s->vaddr = rd_u64(ph + PH_VADDR_OFF, c->big);
		s->memsz = rd_u64(ph + PH_MEMSZ_OFF, c->big);
		s->off = rd_u64(ph + PH_OFFSET_OFF, c->big);
		s->filesz = rd_u64(ph + PH_FILESZ_OFF, c->big);
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

/*
 * Open and check the ELF header, read the PT_LOAD program headers. Returns 0, or reports and
 * returns CLI_USAGE when path cannot be opened (O_NONBLOCK: a FIFO is refused, not waited on),
 * CLI_FAIL when it is no ELF64 core or cannot be read.
 */
static int core_open(struct core *c, const char *path)
{
	uint8_t eh[EH_BYTES];
	uint64_t phoff;
	uint32_t phnum;
	size_t have;
	int rc;

	memset(c, 0, sizeof(*c));
	c->name = path;
	rc = cli_open_input(path, 0, &c->fd, &c->bytes);
	if (rc)
		return rc;
	have = c->bytes < EH_BYTES ? (size_t)c->bytes : EH_BYTES;
	memset(eh, 0, sizeof(eh));
	if (pread_full(c->fd, eh, have, 0) < 0)
		return core_fail_io(c, 0);
	rc = check_elf_header(c, eh, have);
	if (rc == 0)
		rc = program_header_count(c, eh, &phnum);
	if (rc)
		return rc;
	phoff = rd_u64(eh + EH_PHOFF_OFF, c->big);
	if (phoff > c->bytes || (c->bytes - phoff) / PH_BYTES < phnum) {
		fprintf(stderr,
			"%s: offset %d: expected %u program headers of %d bytes from offset "
			"%llu, found the end of the file at %llu\n",
			path, EH_PHOFF_OFF, phnum, PH_BYTES, (unsigned long long)phoff,
			(unsigned long long)c->bytes);
		return CLI_FAIL;
	}
	return read_segments(c, phoff, phnum);
}

static void core_close(struct core *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->segs);
	c->fd = -1;
	c->segs = NULL;
}

/* The segment holding address at (by its memsz), or NULL. */
static const struct core_seg *core_seg_at(const struct core *c, uint64_t at)
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

/* The bytes of [at, at + n) that are in the file, segment after segment; -1 at the first hole. */
static int core_walk(const struct core *c, uint64_t at, uint8_t *buf, uint64_t n,
		     struct xfdr_error *err)
{
	const struct core_seg *s;
	uint64_t in, k;
	int rc;

	while (n) {
		s = core_seg_at(c, at);
		if (!s)
			return 1;
		in = at - s->vaddr;
		if (in >= s->filesz)
			return 1;
		k = s->filesz - in < n ? s->filesz - in : n;
		if (buf) {
			rc = pread_full(c->fd, buf, (size_t)k, s->off + in);
			if (rc < 0) {
				err->offset = s->off + in;
				snprintf(err->text, sizeof(err->text),
					 "%s: offset %llu: expected %llu readable bytes (address "
					 "0x%llx), found %s",
					 c->name, (unsigned long long)(s->off + in),
					 (unsigned long long)k, (unsigned long long)at,
					 strerror(errno));
				return -1;
			}
			if (rc)
				return 1; /* the file shrank */
			buf += k;
		}
		at += k;
		n -= k;
	}
	return 0;
}

static int core_read(void *ctx, uint64_t at, void *buf, size_t n, struct xfdr_error *err)
{
	return core_walk(ctx, at, buf, n, err);
}

/* Are all of [at, at + n) in the file? */
static int core_present(const struct core *c, uint64_t at, uint64_t n)
{
	return core_walk(c, at, NULL, n, NULL) == 0;
}

/* ---- Finding the pool -------------------------------------------------------------------- */

struct found {
	uint64_t addr;
	struct rb_pool_locator loc;
};

struct search {
	struct found *v;
	size_t n, cap;
	uint64_t rejected;
	char first_reject[600];
	int verbose;
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
	if (!s->rejected++)
		snprintf(s->first_reject, sizeof(s->first_reject), "at 0x%llx: %s",
			 (unsigned long long)addr, why);
	if (s->verbose)
		cli_error("\"XFDRPOOL\" at 0x%llx is not a pool: %s", (unsigned long long)addr,
			  why);
}

/* A page starting with the magic: keep it if it is a whole, believable locator. */
static int consider(const struct core *c, struct search *s, uint64_t addr)
{
	uint8_t b[XFDR_POOL_HEADER_BYTES];
	struct rb_pool_locator loc;
	struct xfdr_error err;
	uint64_t descs, need;
	struct found *f;
	int rc;

	rc = core_walk(c, addr, b, sizeof(b), &err);
	if (rc < 0) {
		fprintf(stderr, "%s\n", err.text);
		return -1;
	}
	if (rc) {
		reject(s, addr, "its %d bytes are not all in the core", XFDR_POOL_HEADER_BYTES);
		return 0;
	}
	if (rb_pool_locator_parse(b, &loc, &err) < 0) {
		reject(s, addr, "offset %llu: %s", (unsigned long long)err.offset, err.text);
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
	if (descs < addr || !core_present(c, descs, need)) {
		reject(s, addr, "its %u descriptors (%llu bytes at 0x%llx) are not all in the core",
		       loc.buffer_count, (unsigned long long)need, (unsigned long long)descs);
		return 0;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4;

		f = realloc(s->v, cap * sizeof(*f));
		if (!f) {
			cli_error("%s: %s", c->name, strerror(ENOMEM));
			return -1;
		}
		s->v = f;
		s->cap = cap;
	}
	s->v[s->n++] = (struct found){addr, loc};
	if (s->verbose)
		cli_error("pool at 0x%llx: session %u, pid %llu, %u buffers of %llu bytes at "
			  "0x%llx",
			  (unsigned long long)addr, loc.session, (unsigned long long)loc.pid,
			  loc.buffer_count, (unsigned long long)loc.buffer_bytes,
			  (unsigned long long)loc.buffers_addr);
	return 0;
}

/* Check the first 8 bytes of every dumped page, a chunk of pages per read. */
static int search(const struct core *c, struct search *s, struct cli_progress *prog)
{
	const uint64_t page_mask = CORE_PAGE - 1;
	uint64_t a, end, first, len, p, done = 0;
	uint8_t *chunk;
	size_t i;
	int rc = -1, r;

	chunk = malloc(CORE_CHUNK);
	if (!chunk) {
		cli_error("%s: %s", c->name, strerror(ENOMEM));
		return -1;
	}
	for (i = 0; i < c->nsegs; i++) {
		const struct core_seg *sg = &c->segs[i];

		if (sg->filesz < XFDR_POOL_HEADER_BYTES)
			continue;
		end = sg->vaddr + sg->filesz;
		first = (sg->vaddr + page_mask) & ~page_mask;
		if (first < sg->vaddr)
			continue; /* wraps: nothing page-aligned in it */
		for (a = first; a < end && end - a >= 8; a += len) {
			len = end - a < CORE_CHUNK ? end - a : CORE_CHUNK;
			r = pread_full(c->fd, chunk, (size_t)len, sg->off + (a - sg->vaddr));
			if (r < 0) {
				core_fail_io(c, sg->off + (a - sg->vaddr));
				goto out;
			}
			if (r)
				break; /* the file shrank under us: the rest is absent */
			for (p = 0; p + 8 <= len; p += CORE_PAGE) {
				if (!memcmp(chunk + p, XFDR_POOL_MAGIC, 8) && consider(c, s, a + p))
					goto out;
			}
			done += len;
			cli_progress_update(prog, done, c->dumped_bytes);
		}
	}
	rc = 0;
out:
	free(chunk);
	return rc;
}

/* ---- The verb ----------------------------------------------------------------------------- */

struct core_map_ctx {
	struct cli_map_facts facts;
};

static int write_core_map(FILE *f, const struct rb_pool_result *res, void *ctx)
{
	struct core_map_ctx *m = ctx;

	return cli_map_generated(f, &m->facts, res);
}

/*
 * Search the core for pools; the newest found (by session), or NULL after reporting that
 * there is none.
 */
static const struct found *find_pool(struct core *c, struct search *s, int verbose)
{
	const struct found *use;
	struct cli_progress prog;
	size_t i;
	int rc;

	s->verbose = verbose;
	cli_progress_begin(&prog, c->dumped_bytes, "searching");
	rc = search(c, s, &prog);
	cli_progress_end(&prog);
	if (rc)
		return NULL;
	if (!s->n) {
		if (s->rejected)
			cli_error(
			    "%s: no xfdr pool in this core: was the process running xfdr? (%llu "
			    "\"XFDRPOOL\" at a page start did not validate, the first %s)",
			    c->name, (unsigned long long)s->rejected, s->first_reject);
		else
			cli_error("%s: no xfdr pool in this core: was the process running xfdr? "
				  "(with backing=file, `xfdr recover` reads the live file)",
				  c->name);
		return NULL;
	}
	use = &s->v[0];
	for (i = 1; i < s->n; i++) {
		if (s->v[i].loc.session >= use->loc.session)
			use = &s->v[i];
	}
	if (s->n > 1)
		cli_error("%zu xfdr pools in this core (the process re-initialised?): using the "
			  "newest, session %u at 0x%llx",
			  s->n, use->loc.session, (unsigned long long)use->addr);
	return use;
}

/* Rebuild the pool use of core c into out and its sidecar. Returns a status. */
static int rebuild_pool(struct core *c, const struct found *use, const char *out, int verbose)
{
	struct rb_pool_job job;
	struct cli_rebuild_show show;
	struct core_map_ctx mctx;
	char absent[256];

	memset(&job, 0, sizeof(job));
	job.loc = &use->loc;
	job.descs = (struct rb_pool_source){core_read, c};
	job.descs_at = use->addr + use->loc.header_bytes;
	job.bufs = (struct rb_pool_source){core_read, c};
	job.bufs_at = use->loc.buffers_addr;
	job.constant_tsc = job.nonstop_tsc = !!(use->loc.flags & XFDR_POOL_INVARIANT_TSC);
	job.tsc_hz = use->loc.tsc_hz;
	mctx.facts = (struct cli_map_facts){
	    .pid = use->loc.pid,
	    .trace = out,
	    .constant_tsc = job.constant_tsc,
	    .nonstop_tsc = job.nonstop_tsc,
	    .buffer_bytes = use->loc.buffer_bytes,
	    .buffer_count = use->loc.buffer_count,
	};
	snprintf(absent, sizeof(absent), "not in the core (memory not dumped%s)",
		 use->loc.flags & XFDR_POOL_FILE_BACKED
		     ? "; the pool is file-backed: `xfdr recover` reads its live file"
		     : "");

	show = (struct cli_rebuild_show){
	    .verbose = verbose,
	    .progress_bytes = c->dumped_bytes,
	    .progress_what = "rebuilding",
	    .absent = absent,
	};
	return cli_rebuild(&job, out, write_core_map, &mctx, &show);
}

int cmd_core(int argc, char **argv)
{
	struct cli_rebuild_opts opt = {0};
	struct core c = {.fd = -1};
	struct search s = {NULL, 0, 0, 0, "", 0};
	const struct found *use;
	char out_buf[4096], out_map[4096];
	const char *out;
	int status;

	status = parse_core_opts(argc, argv, &opt);
	if (status)
		return status < 0 ? CLI_OK : status;
	out = opt.output;
	if (!out) {
		if ((size_t)snprintf(out_buf, sizeof(out_buf), "%s.xray", opt.input) >=
		    sizeof(out_buf)) {
			cli_error("%s: %s", opt.input, strerror(ENAMETOOLONG));
			return CLI_FAIL;
		}
		out = out_buf;
	}
	if (cli_map_name(out, out_map, sizeof(out_map)))
		return CLI_FAIL;

	status = core_open(&c, opt.input);
	if (status)
		goto out;
	status = cli_check_rebuild_outputs(out, out_map, (const char *[]){opt.input, NULL},
					   "the core file", opt.force);
	if (status)
		goto out;
	status = CLI_FAIL;
	if (c.cut_segs)
		cli_error("%s: warning: the file ends inside %zu of its segments (a truncated "
			  "core?); their missing memory reads as absent",
			  c.name, c.cut_segs);

	use = find_pool(&c, &s, opt.verbose);
	if (use)
		status = rebuild_pool(&c, use, out, opt.verbose);
out:
	free(s.v);
	core_close(&c);
	return status;
}
