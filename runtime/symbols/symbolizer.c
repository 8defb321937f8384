/*
 * runtime/symbols/symbolizer.c - code address -> (file, symbol), async-signal-safe (see
 * symbolizer.h).
 *
 * From a runtime address to a name:
 *   1. /proc/self/maps: the executable mapping [start, end) holding the address gives the
 *      file, and its file offset: file_off = addr - start + map_offset.
 *   2. The file's PT_LOAD segment holding file_off gives the address the file's symbols use:
 *      vaddr = file_off - p_offset + p_vaddr (right for PIE, shared objects and fixed-address
 *      executables alike, with no need to know the load bias).
 *   3. The function symbols of .symtab (else .dynsym), sorted by value: the one at vaddr, or
 *      the last one below it whose size covers it. Of several at one value a global beats a
 *      weak, a weak beats a local symbol; then the first in the table wins.
 *
 * Everything read from a file is bounds-checked against the file's size: a truncated or
 * hostile file gives "no name", never a fault. Memory comes from mmap (an arena freed as a
 * whole), the sort is an in-place heap sort: no malloc anywhere, as a signal handler needs.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "runtime/symbols/symbolizer.h"

#if __ELF_NATIVE_CLASS == 64
#define SYM_ELF_CLASS ELFCLASS64
#else
#define SYM_ELF_CLASS ELFCLASS32
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SYM_ELF_DATA ELFDATA2LSB
#else
#define SYM_ELF_DATA ELFDATA2MSB
#endif

#define SYM_BLOCK_BYTES (64u * 1024u)
/*
 * Bytes of a file's first page compared with our mapping of it (ELF header, program headers
 * and, in the usual layout, the build-id note); at most PIPE_BUF (read_own_memory()).
 */
#define SYM_HEAD_BYTES 4096u
#define SYM_MAPS_READ_BYTES 4096u

struct sym_arena_block {
	struct sym_arena_block *next;
	size_t bytes; /* of the whole mapping, this header included */
	size_t used;
};

struct sym_mapping {
	uintptr_t start, end;
	uint64_t file_off;
	uint32_t mod;
};

/* One function symbol: where it starts, how far it reaches, its name, its rank. */
struct sym_entry {
	uint64_t value;
	uint64_t size;
	uint32_t name;	/* offset in the string table */
	uint32_t order; /* rank << 28 | index in the table, low 28 bits: the sort's tie-break */
};

enum sym_mod_state {
	MOD_UNOPENED = 0,
	MOD_READY = 1,	/* file mapped; phdrs usable; syms may be empty */
	MOD_FAILED = 2, /* not readable, replaced or not ELF: module known, no vaddr, no names */
};

struct sym_module {
	const char *path;
	uint64_t dev;
	uint64_t ino;
	int state;
	const uint8_t *head; /* our mapping of the file's first bytes (offset 0), or NULL */
	size_t head_bytes;
	const uint8_t *file;
	size_t file_bytes;
	const ElfW(Phdr) * phdr;
	uint32_t phnum;
	struct sym_entry *syms;
	uint32_t sym_count;
	const char *strtab;
	size_t strtab_bytes;
};

/* ---- arena ------------------------------------------------------------------------------- */

static XFDR_NOINSTR struct sym_arena_block *arena_map(struct sym_table *st, size_t bytes)
{
	struct sym_arena_block *b;
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	b = p;
	b->bytes = bytes;
	b->used = (sizeof(*b) + 7) & ~(size_t)7;
	b->next = st->blocks;
	st->blocks = b;
	return b;
}

XFDR_NOINSTR void *sym_arena_alloc(struct sym_table *st, size_t bytes)
{
	size_t header = (sizeof(struct sym_arena_block) + 7) & ~(size_t)7;
	struct sym_arena_block *b = st->blocks;
	void *p;

	bytes = (bytes + 7) & ~(size_t)7;
	if (bytes > SIZE_MAX / 2)
		return NULL;
	if (!b || b->bytes - b->used < bytes) {
		/* Large requests get a mapping of their own; the current block stays in use. */
		size_t want =
		    bytes + header > SYM_BLOCK_BYTES / 4 ? bytes + header : SYM_BLOCK_BYTES;

		b = arena_map(st, want);
		if (!b)
			return NULL;
	}
	p = (uint8_t *)b + b->used;
	b->used += bytes;
	return p;
}

/* ---- /proc/self/maps ---------------------------------------------------------------------- */

static XFDR_NOINSTR int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parse hex digits at *p; *p moves past them. Returns 0 if there were none. */
static XFDR_NOINSTR int parse_hex(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int d;

	while (s < end && (d = hexval(*s)) >= 0) {
		x = x << 4 | (uint64_t)d;
		s++;
	}
	if (s == *p)
		return 0;
	*v = x;
	*p = s;
	return 1;
}

static XFDR_NOINSTR int parse_dec(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;

	while (s < end && *s >= '0' && *s <= '9')
		x = x * 10 + (uint64_t)(*s++ - '0');
	if (s == *p)
		return 0;
	*v = x;
	*p = s;
	return 1;
}

static XFDR_NOINSTR int skip_char(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return 0;
	(*p)++;
	return 1;
}

static XFDR_NOINSTR void skip_spaces(const char **p, const char *end)
{
	while (*p < end && **p == ' ')
		(*p)++;
}

/*
 * Read the whole of /proc/self/maps into the arena. The kernel gives it in page-sized reads;
 * the text is copied into a buffer that doubles when full. Returns the text, NULL on failure.
 */
static XFDR_NOINSTR char *read_maps(struct sym_table *st, size_t *len_out)
{
	size_t cap = 64u * 1024u, len = 0;
	char *text = sym_arena_alloc(st, cap);
	int fd;

	if (!text)
		return NULL;
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	for (;;) {
		ssize_t n;

		if (cap - len < SYM_MAPS_READ_BYTES) {
			char *bigger = sym_arena_alloc(st, cap * 2);

			if (!bigger) {
				text = NULL;
				break;
			}
			memcpy(bigger, text, len);
			text = bigger;
			cap *= 2;
		}
		n = read(fd, text + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			text = NULL;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	*len_out = len;
	return text;
}

static XFDR_NOINSTR uint32_t module_find_or_add(struct sym_table *st, uint32_t mod_cap,
						const char *path, size_t path_len, uint64_t dev,
						uint64_t ino)
{
	uint32_t i;
	char *copy;

	for (i = 0; i < st->mod_count; i++) {
		const struct sym_module *m = &st->mods[i];

		if (m->dev == dev && m->ino == ino && !strncmp(m->path, path, path_len) &&
		    m->path[path_len] == '\0')
			return i;
	}
	if (st->mod_count == mod_cap)
		return UINT32_MAX;
	copy = sym_arena_alloc(st, path_len + 1);
	if (!copy)
		return UINT32_MAX;
	memcpy(copy, path, path_len);
	copy[path_len] = '\0';
	st->mods[i].path = copy;
	st->mods[i].dev = dev;
	st->mods[i].ino = ino;
	st->mods[i].state = MOD_UNOPENED;
	st->mod_count++;
	return i;
}

#define DELETED_SUFFIX " (deleted)"

/*
 * One maps line: "start-end perms offset major:minor inode   path". Keeps executable
 * mappings of files (path starting with '/'), and notes where a file's first page is mapped
 * readable, to recognize the file later (same_file()).
 */
static XFDR_NOINSTR void parse_line(struct sym_table *st, uint32_t mod_cap, const char *p,
				    const char *end)
{
	uint64_t start, stop, off, major, minor, ino;
	struct sym_mapping *m;
	const char *perms;
	uint32_t mod;

	if (!parse_hex(&p, end, &start) || !skip_char(&p, end, '-') || !parse_hex(&p, end, &stop) ||
	    !skip_char(&p, end, ' '))
		return;
	perms = p;
	if (end - p < 5)
		return;
	p += 4;
	skip_spaces(&p, end);
	if (!parse_hex(&p, end, &off))
		return;
	skip_spaces(&p, end);
	if (!parse_hex(&p, end, &major) || !skip_char(&p, end, ':') || !parse_hex(&p, end, &minor))
		return;
	skip_spaces(&p, end);
	if (!parse_dec(&p, end, &ino))
		return;
	skip_spaces(&p, end);
	if (p >= end || *p != '/' || stop <= start)
		return;
	if (perms[2] != 'x' && (perms[0] != 'r' || off != 0))
		return;
	/* Unlinked or replaced since mapped: whatever is at the path now is checked by content. */
	if ((size_t)(end - p) > sizeof(DELETED_SUFFIX) &&
	    !memcmp(end - (sizeof(DELETED_SUFFIX) - 1), DELETED_SUFFIX, sizeof(DELETED_SUFFIX) - 1))
		end -= sizeof(DELETED_SUFFIX) - 1;
	mod = module_find_or_add(st, mod_cap, p, (size_t)(end - p),
				 (uint64_t)makedev((unsigned)major, (unsigned)minor), ino);
	if (mod == UINT32_MAX)
		return;
	if (perms[0] == 'r' && off == 0 && !st->mods[mod].head) {
		st->mods[mod].head = (const uint8_t *)(uintptr_t)start;
		st->mods[mod].head_bytes =
		    stop - start < SYM_HEAD_BYTES ? stop - start : SYM_HEAD_BYTES;
	}
	if (perms[2] != 'x')
		return;
	m = &st->maps[st->map_count++];
	m->start = (uintptr_t)start;
	m->end = (uintptr_t)stop;
	m->file_off = off;
	m->mod = mod;
}

XFDR_NOINSTR int sym_open(struct sym_table *st)
{
	size_t len, lines = 0, i;
	const char *text, *p, *end;

	memset(st, 0, sizeof(*st));
	text = read_maps(st, &len);
	if (!text) {
		sym_close(st);
		return -ENOMEM;
	}
	for (i = 0; i < len; i++)
		lines += text[i] == '\n';
	lines++;
	st->maps = sym_arena_alloc(st, lines * sizeof(*st->maps));
	st->mods = sym_arena_alloc(st, lines * sizeof(*st->mods));
	if (!st->maps || !st->mods) {
		sym_close(st);
		return -ENOMEM;
	}
	for (p = text, end = text + len; p < end;) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));

		if (!eol)
			eol = end;
		if (st->map_count < lines)
			parse_line(st, (uint32_t)lines, p, eol);
		p = eol + 1;
	}
	return 0;
}

/* ---- ELF ---------------------------------------------------------------------------------- */

/* Is [off, off + n) inside the file? */
static XFDR_NOINSTR int in_file(const struct sym_module *m, uint64_t off, uint64_t n)
{
	return off <= m->file_bytes && n <= m->file_bytes - off;
}

static XFDR_NOINSTR unsigned bind_rank(unsigned char info)
{
	switch (ELF64_ST_BIND(info) /* same bits in ELF32 */) {
	case STB_GLOBAL:
		return 0;
	case STB_WEAK:
		return 1;
	default:
		return 2;
	}
}

static XFDR_NOINSTR int entry_less(const struct sym_entry *a, const struct sym_entry *b)
{
	return a->value < b->value || (a->value == b->value && a->order < b->order);
}

static XFDR_NOINSTR void sift_down(struct sym_entry *e, size_t root, size_t n)
{
	for (;;) {
		size_t child = 2 * root + 1;
		struct sym_entry tmp;

		if (child >= n)
			return;
		if (child + 1 < n && entry_less(&e[child], &e[child + 1]))
			child++;
		if (!entry_less(&e[root], &e[child]))
			return;
		tmp = e[root];
		e[root] = e[child];
		e[child] = tmp;
		root = child;
	}
}

/* Heap sort: in place, O(n log n) worst case, no allocation (qsort may call malloc). */
static XFDR_NOINSTR void sort_entries(struct sym_entry *e, size_t n)
{
	size_t i;

	if (n < 2)
		return;
	for (i = n / 2; i-- > 0;)
		sift_down(e, i, n);
	for (i = n - 1; i > 0; i--) {
		struct sym_entry tmp = e[0];

		e[0] = e[i];
		e[i] = tmp;
		sift_down(e, 0, i);
	}
}

/* The symbol section to use (.symtab, else .dynsym) and its string table; 0 if none. */
static XFDR_NOINSTR int find_symbols(struct sym_module *m, const ElfW(Ehdr) * eh,
				     const ElfW(Shdr) * *sym_out, const ElfW(Shdr) * *str_out)
{
	const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(m->file + eh->e_shoff);
	const ElfW(Shdr) *pick = NULL, *str;
	unsigned i;

	for (i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type == SHT_SYMTAB) {
			pick = &sh[i];
			break;
		}
		if (sh[i].sh_type == SHT_DYNSYM && !pick)
			pick = &sh[i];
	}
	if (!pick || pick->sh_entsize != sizeof(ElfW(Sym)) ||
	    !in_file(m, pick->sh_offset, pick->sh_size) || pick->sh_link >= eh->e_shnum)
		return 0;
	str = &sh[pick->sh_link];
	if (str->sh_type != SHT_STRTAB || !in_file(m, str->sh_offset, str->sh_size) ||
	    !str->sh_size)
		return 0;
	*sym_out = pick;
	*str_out = str;
	return 1;
}

static XFDR_NOINSTR int is_function(const ElfW(Sym) * s)
{
	unsigned type = ELF64_ST_TYPE(s->st_info);

	return (type == STT_FUNC || type == STT_GNU_IFUNC) && s->st_shndx != SHN_UNDEF &&
	       s->st_name != 0;
}

/* Build the sorted index of function symbols. Without one the module still gives vaddrs. */
static XFDR_NOINSTR void index_symbols(struct sym_table *st, struct sym_module *m,
				       const ElfW(Ehdr) * eh)
{
	const ElfW(Shdr) * symsh, *strsh;
	const ElfW(Sym) * syms;
	size_t i, n, count = 0;

	if (!eh->e_shoff || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
	    !in_file(m, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr))) ||
	    !find_symbols(m, eh, &symsh, &strsh))
		return;
	syms = (const ElfW(Sym) *)(m->file + symsh->sh_offset);
	n = symsh->sh_size / sizeof(ElfW(Sym));
	/* Indexes are kept in 28 bits of the tie-break; a larger table is cut there. */
	if (n > 0x0fffffffu)
		n = 0x0fffffffu;
	for (i = 0; i < n; i++)
		count += is_function(&syms[i]) && syms[i].st_name < strsh->sh_size;
	if (!count)
		return;
	m->syms = sym_arena_alloc(st, count * sizeof(*m->syms));
	if (!m->syms)
		return;
	for (i = 0; i < n; i++) {
		struct sym_entry *e;

		if (!is_function(&syms[i]) || syms[i].st_name >= strsh->sh_size)
			continue;
		e = &m->syms[m->sym_count++];
		e->value = syms[i].st_value;
		e->size = syms[i].st_size;
		e->name = syms[i].st_name;
		e->order = bind_rank(syms[i].st_info) << 28 | (uint32_t)i;
	}
	sort_entries(m->syms, m->sym_count);
	m->strtab = (const char *)(m->file + strsh->sh_offset);
	m->strtab_bytes = strsh->sh_size;
}

static XFDR_NOINSTR int elf_header_ok(const struct sym_module *m)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)m->file;

	if (m->file_bytes < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != SYM_ELF_CLASS || eh->e_ident[EI_DATA] != SYM_ELF_DATA ||
	    (eh->e_type != ET_EXEC && eh->e_type != ET_DYN))
		return 0;
	return eh->e_phentsize == sizeof(ElfW(Phdr)) &&
	       in_file(m, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(ElfW(Phdr)));
}

/*
 * Copy n (<= PIPE_BUF) bytes of our own memory through a pipe: a range unmapped since the
 * maps were read (a concurrent dlclose()) makes write(2) fail with EFAULT instead of
 * faulting. Returns 0 or -1.
 */
static XFDR_NOINSTR int read_own_memory(const void *addr, void *out, size_t n)
{
	ssize_t done;
	int fds[2], ok;

	if (pipe2(fds, O_CLOEXEC))
		return -1;
	do
		done = write(fds[1], addr, n);
	while (done < 0 && errno == EINTR);
	ok = done == (ssize_t)n;
	if (ok) {
		do
			done = read(fds[0], out, n);
		while (done < 0 && errno == EINTR);
		ok = done == (ssize_t)n;
	}
	close(fds[0]);
	close(fds[1]);
	return ok ? 0 : -1;
}

/*
 * Is the file opened by path the one that is mapped? Device and inode say so where the maps
 * and stat() agree on them; overlay filesystems (containers) show the underlying device in
 * the maps and their own in stat(), so there the first page we have mapped must equal the
 * file's. A file replaced since it was loaded differs in both.
 */
static XFDR_NOINSTR int same_file(struct sym_table *st, const struct sym_module *m,
				  const struct stat *sb)
{
	size_t n = m->head_bytes < m->file_bytes ? m->head_bytes : m->file_bytes;
	uint8_t *copy;

	if ((uint64_t)sb->st_dev == m->dev && (uint64_t)sb->st_ino == m->ino)
		return 1;
	if (!m->head || !n)
		return 0;
	copy = sym_arena_alloc(st, n);
	return copy && !read_own_memory(m->head, copy, n) && !memcmp(copy, m->file, n);
}

static XFDR_NOINSTR void module_open(struct sym_table *st, struct sym_module *m)
{
	const ElfW(Ehdr) * eh;
	struct stat sb;
	void *p;
	int fd;

	m->state = MOD_FAILED;
	fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &sb) || sb.st_size <= 0) {
		close(fd);
		return;
	}
	p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return;
	m->file = p;
	m->file_bytes = (size_t)sb.st_size;
	if (!same_file(st, m, &sb) || !elf_header_ok(m))
		return;
	eh = (const ElfW(Ehdr) *)m->file;
	m->phdr = (const ElfW(Phdr) *)(m->file + eh->e_phoff);
	m->phnum = eh->e_phnum;
	m->state = MOD_READY;
	index_symbols(st, m, eh);
}

/* The file's vaddr for a file offset, through the PT_LOAD segment holding it. */
static XFDR_NOINSTR int file_off_to_vaddr(const struct sym_module *m, uint64_t off, uint64_t *vaddr)
{
	uint32_t i;

	for (i = 0; i < m->phnum; i++) {
		const ElfW(Phdr) *ph = &m->phdr[i];

		if (ph->p_type == PT_LOAD && off >= ph->p_offset &&
		    off - ph->p_offset < ph->p_filesz) {
			*vaddr = off - ph->p_offset + ph->p_vaddr;
			return 1;
		}
	}
	return 0;
}

static XFDR_NOINSTR const char *symbol_at(const struct sym_module *m, uint64_t vaddr)
{
	size_t lo = 0, hi = m->sym_count, first;
	const struct sym_entry *e;

	/* The first entry with value > vaddr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].value <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	first = lo - 1;
	/* The best-ranked of the symbols sharing that value sorts first among them. */
	while (first > 0 && m->syms[first - 1].value == m->syms[lo - 1].value)
		first--;
	e = &m->syms[first];
	if (e->value != vaddr && !(e->size && vaddr - e->value < e->size))
		return NULL;
	/* A name must end inside the string table. */
	if (!memchr(m->strtab + e->name, '\0', m->strtab_bytes - e->name))
		return NULL;
	return m->strtab + e->name;
}

XFDR_NOINSTR void sym_lookup(struct sym_table *st, uintptr_t addr, struct sym_result *r)
{
	uint32_t lo = 0, hi = st->map_count;
	const struct sym_mapping *map = NULL;
	struct sym_module *m;
	uint64_t off;

	memset(r, 0, sizeof(*r));
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (addr < st->maps[mid].start) {
			hi = mid;
		} else if (addr >= st->maps[mid].end) {
			lo = mid + 1;
		} else {
			map = &st->maps[mid];
			break;
		}
	}
	if (!map)
		return;
	m = &st->mods[map->mod];
	r->module = m->path;
	if (m->state == MOD_UNOPENED)
		module_open(st, m);
	if (m->state != MOD_READY)
		return;
	off = (uint64_t)(addr - map->start) + map->file_off;
	if (!file_off_to_vaddr(m, off, &r->module_vaddr))
		return;
	r->vaddr_known = 1;
	if (m->sym_count)
		r->name = symbol_at(m, r->module_vaddr);
}

XFDR_NOINSTR int sym_file_has_section(const char *path, const char *name)
{
	struct sym_module m;
	const ElfW(Ehdr) * eh;
	const ElfW(Shdr) * sh, *names;
	size_t name_len = strlen(name);
	struct stat sb;
	int found = 0, fd;
	unsigned i;
	void *p;

	memset(&m, 0, sizeof(m));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &sb) || sb.st_size <= 0) {
		close(fd);
		return 0;
	}
	p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return 0;
	m.file = p;
	m.file_bytes = (size_t)sb.st_size;
	eh = p;
	if (!elf_header_ok(&m) || !eh->e_shoff || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
	    !in_file(&m, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr))) ||
	    eh->e_shstrndx >= eh->e_shnum)
		goto out;
	sh = (const ElfW(Shdr) *)(m.file + eh->e_shoff);
	names = &sh[eh->e_shstrndx];
	if (!in_file(&m, names->sh_offset, names->sh_size))
		goto out;
	for (i = 0; i < eh->e_shnum && !found; i++)
		found = sh[i].sh_name < names->sh_size &&
			names->sh_size - sh[i].sh_name > name_len &&
			!memcmp(m.file + names->sh_offset + sh[i].sh_name, name, name_len + 1);
out:
	munmap(p, m.file_bytes);
	return found;
}

XFDR_NOINSTR void sym_close(struct sym_table *st)
{
	struct sym_arena_block *b, *next;
	uint32_t i;

	for (i = 0; i < st->mod_count && st->mods; i++)
		if (st->mods[i].file)
			munmap((void *)st->mods[i].file, st->mods[i].file_bytes);
	for (b = st->blocks; b; b = next) {
		next = b->next;
		munmap(b, b->bytes);
	}
	memset(st, 0, sizeof(*st));
}
