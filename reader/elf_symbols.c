/*
 * reader/elf_symbols.c - function names from an ELF file's symbol table (xfdr_elf_*, declared
 * in include/xfdr/reader.h).
 *
 * The file (ELF64, little-endian; field offsets from <elf.h>'s Elf64 structures, which the ELF
 * specification fixes):
 *   ELF header at 0: e_ident, e_type, ..., e_shoff, e_shentsize, e_shnum
 *   section headers at e_shoff, e_shnum of 64 bytes (e_shnum 0: the count is the first
 *   header's sh_size, "extended numbering"); a SHT_SYMTAB or SHT_DYNSYM section holds 24-byte
 *   Elf64_Sym entries, and its sh_link is the string table their st_name indexes.
 * Fields are read one by one with explicit little-endian loads at their offsets, never through
 * a cast pointer: offsets in a corrupt file need not be aligned, and the host need not be
 * little-endian. Each range is checked against the file's size before it is read.
 *
 * A lookup scans the table: it runs for the few frames of a crash, so no index is built.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/bytes.h"
#include "xfdr/reader.h"

#define EH(field) offsetof(Elf64_Ehdr, field)
#define SH(field) offsetof(Elf64_Shdr, field)
#define ST(field) offsetof(Elf64_Sym, field)

struct rd_symtab {
	const uint8_t *syms; /* NULL: the file has no usable table of this kind */
	uint64_t count;
	const char *str;
	uint64_t str_bytes;
};

struct xfdr_elf {
	const uint8_t *map;
	uint64_t bytes;
	int mapped;		 /* map is our mapping of the file (not the caller's memory) */
	struct rd_symtab tab[2]; /* .symtab, .dynsym */
};

static int in_file(const struct xfdr_elf *e, uint64_t off, uint64_t len)
{
	return off <= e->bytes && len <= e->bytes - off;
}

/* The table of section header i (< shnum, all checked in the file) if it is usable. */
static void take_table(struct xfdr_elf *e, const uint8_t *shdrs, uint64_t shnum, uint64_t i,
		       struct rd_symtab *t)
{
	const uint8_t *sh = shdrs + i * sizeof(Elf64_Shdr), *str;
	uint64_t off = rd_u64(sh + SH(sh_offset), 0), size = rd_u64(sh + SH(sh_size), 0);
	uint64_t entsize = rd_u64(sh + SH(sh_entsize), 0);
	uint32_t link = rd_u32(sh + SH(sh_link), 0);
	uint64_t str_off, str_size;

	if ((entsize && entsize != sizeof(Elf64_Sym)) || !in_file(e, off, size) || link >= shnum)
		return;
	str = shdrs + (uint64_t)link * sizeof(Elf64_Shdr);
	str_off = rd_u64(str + SH(sh_offset), 0);
	str_size = rd_u64(str + SH(sh_size), 0);
	if (rd_u32(str + SH(sh_type), 0) != SHT_STRTAB || !in_file(e, str_off, str_size))
		return;
	t->syms = e->map + off;
	t->count = size / sizeof(Elf64_Sym);
	t->str = (const char *)e->map + str_off;
	t->str_bytes = str_size;
}

/* Check the ELF header and find the symbol tables. Returns 0 or -ENOEXEC. */
static int parse(struct xfdr_elf *e)
{
	const uint8_t *h = e->map, *shdrs;
	uint64_t shoff, shnum, i;
	uint32_t type;

	if (e->bytes < sizeof(Elf64_Ehdr) || memcmp(h, ELFMAG, SELFMAG) ||
	    h[EI_CLASS] != ELFCLASS64 || h[EI_DATA] != ELFDATA2LSB)
		return -ENOEXEC;
	type = rd_u16(h + EH(e_type), 0);
	if (type != ET_EXEC && type != ET_DYN)
		return -ENOEXEC;
	shoff = rd_u64(h + EH(e_shoff), 0);
	shnum = rd_u16(h + EH(e_shnum), 0);
	if (!shoff)
		return 0; /* no section headers: nothing to name with */
	if (rd_u16(h + EH(e_shentsize), 0) != sizeof(Elf64_Shdr) ||
	    !in_file(e, shoff, sizeof(Elf64_Shdr)))
		return -ENOEXEC;
	shdrs = h + shoff;
	if (!shnum)
		shnum = rd_u64(shdrs + SH(sh_size), 0);
	if (shnum > e->bytes / sizeof(Elf64_Shdr) || !in_file(e, shoff, shnum * sizeof(Elf64_Shdr)))
		return -ENOEXEC;
	for (i = 0; i < shnum; i++) {
		type = rd_u32(shdrs + i * sizeof(Elf64_Shdr) + SH(sh_type), 0);
		if (type == SHT_SYMTAB && !e->tab[0].syms)
			take_table(e, shdrs, shnum, i, &e->tab[0]);
		else if (type == SHT_DYNSYM && !e->tab[1].syms)
			take_table(e, shdrs, shnum, i, &e->tab[1]);
	}
	return 0;
}

int xfdr_elf_open(const char *path, struct xfdr_elf **out)
{
	struct xfdr_elf *e;
	struct stat sb;
	void *p;
	int fd, rc;

	*out = NULL;
	/* O_NONBLOCK: a FIFO must not hang the open; it is refused below. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb)) {
		rc = -errno;
		goto out_close;
	}
	if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size < sizeof(Elf64_Ehdr)) {
		rc = -ENOEXEC;
		goto out_close;
	}
	p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		goto out_close;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		munmap(p, (size_t)sb.st_size);
		rc = -ENOMEM;
		goto out_close;
	}
	e->map = p;
	e->bytes = (uint64_t)sb.st_size;
	e->mapped = 1;
	rc = parse(e);
	if (rc)
		xfdr_elf_close(e);
	else
		*out = e;
out_close:
	close(fd);
	return rc;
}

int xfdr_elf_open_memory(const void *data, size_t bytes, struct xfdr_elf **out)
{
	struct xfdr_elf *e;
	int rc;

	*out = NULL;
	if (bytes < sizeof(Elf64_Ehdr))
		return -ENOEXEC;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->map = data;
	e->bytes = bytes;
	rc = parse(e);
	if (rc)
		xfdr_elf_close(e);
	else
		*out = e;
	return rc;
}

/* Global before weak before local (and anything else last): 0 is best. */
static unsigned bind_rank(uint8_t info)
{
	switch (ELF64_ST_BIND(info)) {
	case STB_GLOBAL:
		return 0;
	case STB_WEAK:
		return 1;
	case STB_LOCAL:
		return 2;
	default:
		return 3;
	}
}

static const char *search(const struct rd_symtab *t, uint64_t vaddr, uint64_t *offset)
{
	const char *best = NULL;
	uint64_t best_value = 0, i;
	unsigned best_rank = 0;

	for (i = 0; i < t->count; i++) {
		const uint8_t *s = t->syms + i * sizeof(Elf64_Sym);
		uint8_t info = s[ST(st_info)];
		unsigned type = ELF64_ST_TYPE(info), rank;
		uint64_t value = rd_u64(s + ST(st_value), 0), size = rd_u64(s + ST(st_size), 0);
		uint32_t name = rd_u32(s + ST(st_name), 0);

		if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
		    rd_u16(s + ST(st_shndx), 0) == SHN_UNDEF || !name)
			continue;
		if (value > vaddr || (size ? vaddr - value >= size : vaddr != value))
			continue;
		/* A name must be non-empty and end inside the string table. */
		if (name >= t->str_bytes || !t->str[name] ||
		    !memchr(t->str + name, '\0', t->str_bytes - name))
			continue;
		rank = bind_rank(info);
		if (best && (value < best_value || (value == best_value && rank >= best_rank)))
			continue;
		best = t->str + name;
		best_value = value;
		best_rank = rank;
	}
	if (best && offset)
		*offset = vaddr - best_value;
	return best;
}

const char *xfdr_elf_symbol(const struct xfdr_elf *e, uint64_t vaddr, uint64_t *offset)
{
	const char *name = NULL;
	int i;

	for (i = 0; e && i < 2 && !name; i++) {
		if (e->tab[i].syms)
			name = search(&e->tab[i], vaddr, offset);
	}
	return name;
}

void xfdr_elf_close(struct xfdr_elf *e)
{
	if (!e)
		return;
	if (e->mapped)
		munmap((void *)e->map, (size_t)e->bytes);
	free(e);
}
