/*
 * reader/elf_symbols.h - function names from an ELF file's symbol table, for the program
 * counters of a crash that the .map sidecar could not name.
 *
 * The runtime gives each frame a module (the file mapped at the pc) and the pc as an address of
 * that file (module_vaddr, the address its symbols and `addr2line -e` use); this looks the
 * address up in the file's .symtab, else its .dynsym. Only ELF64 little-endian files of type
 * EXEC or DYN are read (what the runtime records on x86-64 and AArch64).
 *
 * The file is mapped read-only; every offset, size and string read from it is checked against
 * the file's size, so a file that is not ELF, truncated or corrupt gives "no name", never a
 * fault. Reading code: it allocates and may block; one thread at a time per rd_elf.
 */
#ifndef XFDR_READER_ELF_SYMBOLS_H
#define XFDR_READER_ELF_SYMBOLS_H

#include <stdint.h>

struct rd_elf;

/*
 * rd_elf_open - map the ELF file at path and find its symbol tables.
 * Returns 0 with *out set, or with *out NULL: -errno when it cannot be opened, read or
 * mapped; -ENOEXEC when it is not an ELF64 little-endian EXEC or DYN file, or its header or
 * section headers lie outside the file. A file with no usable symbol table opens and names
 * nothing.
 */
int rd_elf_open(const char *path, struct rd_elf **out);

/*
 * rd_elf_symbol - the name of the function symbol covering vaddr: its [value, value + size)
 * holds vaddr (a symbol of size 0 covers its value only). .symtab is searched first, .dynsym
 * when .symtab names nothing there. Of several, the one with the highest value (the innermost)
 * wins, then a global over a weak over a local, then the first in the table.
 * Returns the name (it points into the mapping: valid until rd_elf_close()) with *offset (when
 * not NULL) set to vaddr - value, or NULL when no function symbol covers vaddr or e is NULL.
 */
const char *rd_elf_symbol(const struct rd_elf *e, uint64_t vaddr, uint64_t *offset);

void rd_elf_close(struct rd_elf *e);

#endif /* XFDR_READER_ELF_SYMBOLS_H */
