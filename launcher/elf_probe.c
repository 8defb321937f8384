/*
 * launcher/elf_probe.c - read just enough of a 64-bit little-endian ELF file to tell how it
 * was instrumented: the section names (xray_instr_map), the names in .symtab and .dynsym, and
 * the DT_NEEDED entries of .dynamic.
 *
 * The file is untrusted (any path a user gives `xfdr record`): every offset, size and count is
 * checked against the bytes mapped before it is used, with no arithmetic that can wrap; strings
 * must end inside their string table. Fields are read with memcpy, never through a cast
 * pointer, so misaligned tables are fine.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launcher/elf_probe.h"

struct image {
	const uint8_t *p;
	size_t n;
};

/* Is [off, off + len) inside the image? */
static int in_image(const struct image *im, uint64_t off, uint64_t len)
{
	return off <= im->n && len <= im->n - off;
}

/* The NUL-terminated string at off of the table [base, base + size), or NULL. */
static const char *table_str(const struct image *im, uint64_t base, uint64_t size, uint64_t off)
{
	const char *s;

	if (!in_image(im, base, size) || off >= size)
		return NULL;
	s = (const char *)im->p + base + off;
	return memchr(s, '\0', size - off) ? s : NULL;
}

static int read_shdr(const struct image *im, const Elf64_Ehdr *eh, uint64_t i, Elf64_Shdr *sh)
{
	uint64_t off;

	if (i > (UINT64_MAX - eh->e_shoff) / eh->e_shentsize)
		return -1;
	off = eh->e_shoff + i * eh->e_shentsize;
	if (!in_image(im, off, sizeof(*sh)))
		return -1;
	memcpy(sh, im->p + off, sizeof(*sh));
	return 0;
}

static void note_symbol(struct elf_probe *p, const char *name, uint16_t shndx)
{
	if (!strcmp(name, "__cyg_profile_func_enter"))
		p->cyg = 1;
	else if (!strcmp(name, "__fentry__") || !strcmp(name, "__return__"))
		p->fentry = 1;
	if (!strncmp(name, "xfdr_", 5)) {
		p->xfdr_api = 1;
		if (!strcmp(name, "xfdr_init") && shndx != SHN_UNDEF)
			p->xfdr_static = 1;
	}
}

/* A SHT_SYMTAB or SHT_DYNSYM section, with its string table (section sh->sh_link). */
static void scan_symbols(const struct image *im, const Elf64_Ehdr *eh, uint64_t shnum,
			 const Elf64_Shdr *sh, struct elf_probe *p)
{
	uint64_t ent = sh->sh_entsize ? sh->sh_entsize : sizeof(Elf64_Sym), count, i;
	Elf64_Shdr str;
	Elf64_Sym sym;
	const char *name;

	if (ent < sizeof(Elf64_Sym) || !in_image(im, sh->sh_offset, sh->sh_size) ||
	    sh->sh_link >= shnum || read_shdr(im, eh, sh->sh_link, &str) ||
	    str.sh_type != SHT_STRTAB)
		return;
	count = sh->sh_size / ent;
	for (i = 0; i < count; i++) {
		memcpy(&sym, im->p + sh->sh_offset + i * ent, sizeof(sym));
		name = table_str(im, str.sh_offset, str.sh_size, sym.st_name);
		if (name && *name)
			note_symbol(p, name, sym.st_shndx);
	}
}

static void scan_dynamic(const struct image *im, const Elf64_Ehdr *eh, uint64_t shnum,
			 const Elf64_Shdr *sh, struct elf_probe *p)
{
	uint64_t count, i;
	Elf64_Shdr str;
	Elf64_Dyn d;
	const char *name;

	if (!in_image(im, sh->sh_offset, sh->sh_size) || sh->sh_link >= shnum ||
	    read_shdr(im, eh, sh->sh_link, &str))
		return;
	count = sh->sh_size / sizeof(d);
	for (i = 0; i < count; i++) {
		memcpy(&d, im->p + sh->sh_offset + i * sizeof(d), sizeof(d));
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag != DT_NEEDED)
			continue;
		name = table_str(im, str.sh_offset, str.sh_size, d.d_un.d_val);
		if (name && !strcmp(name, "libxfdr.so.0"))
			p->xfdr_needed = 1;
	}
}

void elf_probe_memory(const uint8_t *data, size_t n, struct elf_probe *p)
{
	struct image im = {data, n};
	Elf64_Ehdr eh;
	Elf64_Shdr sh, names;
	uint64_t shnum, shstrndx, i;
	const char *name;

	memset(p, 0, sizeof(*p));
	if (n < SELFMAG || memcmp(data, ELFMAG, SELFMAG))
		return;
	p->elf = 1;
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
	return; /* the fields are read in the host's order */
#endif
	if (n < sizeof(eh) || data[EI_CLASS] != ELFCLASS64 || data[EI_DATA] != ELFDATA2LSB)
		return;
	p->inspected = 1;
	memcpy(&eh, data, sizeof(eh));
	if (!eh.e_shoff || eh.e_shentsize < sizeof(Elf64_Shdr))
		return;
	shnum = eh.e_shnum;
	shstrndx = eh.e_shstrndx;
	/* More than 0xff00 sections: the real numbers are in section 0. */
	if (!shnum || shstrndx == SHN_XINDEX) {
		if (read_shdr(&im, &eh, 0, &sh))
			return;
		if (!shnum)
			shnum = sh.sh_size;
		if (shstrndx == SHN_XINDEX)
			shstrndx = sh.sh_link;
	}
	if (!shnum || shnum > n / eh.e_shentsize || read_shdr(&im, &eh, shnum - 1, &sh))
		return;
	p->sections = 1;
	if (shstrndx >= shnum || read_shdr(&im, &eh, shstrndx, &names))
		memset(&names, 0, sizeof(names));
	for (i = 0; i < shnum; i++) {
		if (read_shdr(&im, &eh, i, &sh))
			return;
		name = table_str(&im, names.sh_offset, names.sh_size, sh.sh_name);
		if (name && !strcmp(name, "xray_instr_map"))
			p->xray = 1;
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM)
			scan_symbols(&im, &eh, shnum, &sh, p);
		else if (sh.sh_type == SHT_DYNAMIC)
			scan_dynamic(&im, &eh, shnum, &sh, p);
	}
}

int elf_probe_file(const char *path, struct elf_probe *p)
{
	struct stat st;
	void *m;
	int fd, err;

	memset(p, 0, sizeof(*p));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno;
	if (fstat(fd, &st)) {
		err = errno;
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		return 0;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	err = m == MAP_FAILED ? errno : 0;
	close(fd);
	if (err)
		return err;
	elf_probe_memory(m, (size_t)st.st_size, p);
	munmap(m, (size_t)st.st_size);
	return 0;
}
