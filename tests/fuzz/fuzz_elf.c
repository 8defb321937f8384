/*
 * tests/fuzz/fuzz_elf.c - libFuzzer target: the two readers of ELF files a user names:
 * reader/elf_symbols.c (the module of a crash frame in a .map sidecar: `xfdr dump` looks
 * the frame's address up in that file) and launcher/elf_probe.c (the program given to
 * `xfdr record`). The input is the ELF file.
 *
 * xfdr_elf_open() maps its file, and the sanitizer does not see a read past the end of a file
 * mapping (the rest of the last page reads as zeros). So the input itself, a heap block of its
 * exact size whose every overrun the sanitizer reports, is read in place too
 * (xfdr_elf_open_memory()); xfdr_elf_open() reads the same bytes from a memfd, and both must
 * name the same functions. The addresses looked up are 0, the last address, and every 8-byte
 * word of the input with the word after it taken as a size, as a symbol's st_value and
 * st_size are laid out: so each symbol's value, the address before it, its last byte and the
 * one after it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launcher/elf_probe.h"
#include "tests/fuzz/fuzz_support.h"
#include "xfdr/reader.h"

/* Words of the input looked up (each with three neighbours): bounds the time per input. */
#define FUZZ_WORDS_MAX 4096u

static int elf_fd = -1;
static char elf_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	elf_fd = fuzz_memfd("elf", elf_path, sizeof(elf_path));
	return 0;
}

/*
 * Look vaddr up in both; they must agree, and a name must be a non-empty string inside the
 * input.
 */
static void lookup(const struct xfdr_elf *mem, const struct xfdr_elf *file, const uint8_t *data,
		   size_t size, uint64_t vaddr)
{
	uint64_t off_mem = 0, off_file = 0;
	const char *a = xfdr_elf_symbol(mem, vaddr, &off_mem);
	const char *b = xfdr_elf_symbol(file, vaddr, &off_file);

	if (!a != !b)
		abort();
	if (!a)
		return;
	if ((const uint8_t *)a < data || (const uint8_t *)a >= data + size ||
	    !memchr(a, '\0', size - (size_t)((const uint8_t *)a - data)) || !*a)
		abort();
	if (strcmp(a, b) || off_mem != off_file || off_mem > vaddr)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xfdr_elf *mem = NULL, *file = NULL;
	struct elf_probe p, q;
	uint64_t v, n;
	size_t i;
	int rc, rc_file;

	elf_probe_memory(data, size, &p);
	if (p.inspected && !p.elf)
		abort();

	if (ftruncate(elf_fd, 0) || (size && pwrite(elf_fd, data, size, 0) != (ssize_t)size))
		abort();
	if (elf_probe_file(elf_path, &q) || memcmp(&p, &q, sizeof(p)))
		abort();

	rc = xfdr_elf_open_memory(data, size, &mem);
	rc_file = xfdr_elf_open(elf_path, &file);
	if (rc != rc_file || !rc != !!mem || !rc != !!file)
		abort();
	if (rc)
		return 0;
	for (i = 0; i + 16 <= size && i / 8 < FUZZ_WORDS_MAX; i += 8) {
		memcpy(&v, data + i, 8);
		memcpy(&n, data + i + 8, 8);
		lookup(mem, file, data, size, v);
		lookup(mem, file, data, size, v - 1);
		lookup(mem, file, data, size, v + n - 1);
		lookup(mem, file, data, size, v + n);
	}
	lookup(mem, file, data, size, 0);
	lookup(mem, file, data, size, UINT64_MAX);
	xfdr_elf_close(mem);
	xfdr_elf_close(file);
	return 0;
}
