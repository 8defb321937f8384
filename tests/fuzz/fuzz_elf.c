/*
 * tests/fuzz/fuzz_elf.c - libFuzzer target: the two readers of ELF files a user names:
 * reader/elf_symbols.c (the module of a crash frame in a .map sidecar: `xfdr dump` looks
 * the frame's address up in that file) and command/elf_probe.c (the program given to
 * `xfdr record`). The input is the ELF file.
 *
 * elf_symbols.c maps its file, and the sanitizer does not see a read past the end of a file
 * mapping (the rest of the last page reads as zeros). So its source is included here and its
 * parser run on the input itself, a heap block of the input's exact size whose every
 * overrun the sanitizer reports; xfdr_elf_open() then reads the same bytes from a memfd, and
 * both must name the same functions. The addresses looked up are the symbols' own values and
 * ends, and words of the input.
 */
#include "reader/elf_symbols.c"

#include <stdio.h>

#include "launcher/elf_probe.h"
#include "tests/fuzz/fuzz_support.h"

static int elf_fd = -1;
static char elf_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	elf_fd = fuzz_memfd("elf", elf_path, sizeof(elf_path));
	return 0;
}

/* Look vaddr up in both; they must agree, and a name must be a string inside the input. */
static void lookup(const struct xfdr_elf *mem, const struct xfdr_elf *file, uint64_t vaddr)
{
	uint64_t off_mem = 0, off_file = 0;
	const char *a = xfdr_elf_symbol(mem, vaddr, &off_mem);
	const char *b = xfdr_elf_symbol(file, vaddr, &off_file);

	if (!a != !b)
		abort();
	if (!a)
		return;
	if ((const uint8_t *)a < mem->map || (const uint8_t *)a >= mem->map + mem->bytes ||
	    !memchr(a, '\0', mem->bytes - (uint64_t)((const uint8_t *)a - mem->map)) || !*a)
		abort();
	if (strcmp(a, b) || off_mem != off_file || off_mem > vaddr)
		abort();
}

/* The values and last bytes of the first symbols of a table, and the addresses around them. */
static void lookup_table(const struct xfdr_elf *mem, const struct xfdr_elf *file,
			 const struct rd_symtab *t)
{
	uint64_t i, value, size;

	for (i = 0; t->syms && i < t->count && i < 256; i++) {
		value = rd_u64(t->syms + i * sizeof(Elf64_Sym) + ST(st_value), 0);
		size = rd_u64(t->syms + i * sizeof(Elf64_Sym) + ST(st_size), 0);
		lookup(mem, file, value);
		lookup(mem, file, value - 1);
		lookup(mem, file, value + size - 1);
		lookup(mem, file, value + size);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xfdr_elf mem = {(uint8_t *)data, size, {{0}}}, *file = NULL;
	struct elf_probe p, q;
	uint64_t v;
	size_t i;
	int rc, rc_file;

	elf_probe_memory(data, size, &p);
	if (p.inspected && !p.elf)
		abort();

	if (ftruncate(elf_fd, 0) || (size && pwrite(elf_fd, data, size, 0) != (ssize_t)size))
		abort();
	if (elf_probe_file(elf_path, &q) || memcmp(&p, &q, sizeof(p)))
		abort();

	rc = size < sizeof(Elf64_Ehdr) ? -ENOEXEC : parse(&mem);
	rc_file = xfdr_elf_open(elf_path, &file);
	if (rc != rc_file || !rc != !!file)
		abort();
	if (rc)
		return 0;
	lookup_table(&mem, file, &mem.tab[0]);
	lookup_table(&mem, file, &mem.tab[1]);
	for (i = 0; i + 8 <= size && i < 4096; i += 8) {
		memcpy(&v, data + i, 8);
		lookup(&mem, file, v);
	}
	lookup(&mem, file, 0);
	lookup(&mem, file, UINT64_MAX);
	xfdr_elf_close(file);
	return 0;
}
