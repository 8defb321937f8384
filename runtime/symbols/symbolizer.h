/*
 * runtime/symbols/symbolizer.h - name code addresses from the symbol tables of the files mapped
 * into the process, with async-signal-safe calls only.
 *
 * Why not dladdr(): it sees only the dynamic symbol table, so the functions of an executable
 * linked without -rdynamic (nearly all of them, static ones always) would have no name, and
 * it takes the loader's lock, which a crash-time flush must not. Here the executable mappings
 * come from /proc/self/maps and each file's .symtab (or .dynsym when stripped) is read from a
 * read-only mapping of the file: open, read, fstat, mmap, munmap, close and nothing else; no
 * malloc, no lock, no stdio.
 *
 * Life: sym_open() snapshots the mappings; sym_lookup() opens a file the first time one of
 * its addresses is asked for and keeps it mapped, with its sorted symbol index, until
 * sym_close(). The file at a mapping's path must be the one mapped (same device and inode,
 * or the same first page as our mapping of it, for overlay filesystems and identical
 * reinstalls); one replaced on disk since is not read: its addresses keep their module but
 * get no name.
 */
#ifndef XFDR_RUNTIME_SYMBOLS_SYMBOLIZER_H
#define XFDR_RUNTIME_SYMBOLS_SYMBOLIZER_H

#include <stddef.h>
#include <stdint.h>

struct sym_module;
struct sym_mapping;
struct sym_arena_block;

struct sym_table {
	struct sym_mapping *maps; /* executable file mappings, ascending start */
	uint32_t map_count;
	struct sym_module *mods;
	uint32_t mod_count;
	struct sym_arena_block *blocks; /* every mapping we made, unmapped by sym_close() */
};

/* What is known about one address; pointers stay valid until sym_close(). */
struct sym_result {
	const char *name;      /* function symbol covering the address; NULL if none */
	const char *module;    /* file of the executable mapping holding it; NULL if none */
	uint64_t module_vaddr; /* the address as the file's symbols and addr2line see it */
	int vaddr_known;       /* module_vaddr is meaningful */
};

/*
 * sym_open - snapshot the executable file mappings of the process.
 * Context: async-signal-safe. Returns 0, or a negative errno (nothing to close then).
 */
int sym_open(struct sym_table *st);

/* sym_lookup - fill r for addr. Never fails: unknown parts are NULL. Context: as sym_open. */
void sym_lookup(struct sym_table *st, uintptr_t addr, struct sym_result *r);

/* sym_close - unmap everything sym_open() and sym_lookup() mapped. */
void sym_close(struct sym_table *st);

/*
 * sym_file_has_section - 1 if the ELF file at path has a section of that name; 0 if not, or
 * if the file cannot be read as ELF. Context: as sym_open.
 */
int sym_file_has_section(const char *path, const char *name);

/*
 * sym_arena_alloc - bytes of zeroed memory (8-aligned) that live until sym_close(); NULL when
 * mmap fails. Used by callers for scratch space they need during the same walk.
 */
void *sym_arena_alloc(struct sym_table *st, size_t bytes);

#endif /* XFDR_RUNTIME_SYMBOLS_SYMBOLIZER_H */
