/*
 * analysis/srcline.h - the source file and line of a function, from the DWARF of the file it is
 * in, read with elfutils' libdw (libdwfl).
 *
 * The .map sidecar gives each function its module (the ELF file mapped at its address) and its
 * address inside that file (xfdr_names_function_site()). This looks that address up in the
 * module's line table: the file and line of the function's first instruction, which is where it
 * is defined (what llvm-xray's symbolizer gives its account's debug column, and what
 * `addr2line -e MODULE ADDRESS` prints). Each module is opened once, from the disk, with its
 * separate debug file when libdwfl finds one (build id, .gnu_debuglink); a module that cannot be
 * opened, or has no line table (a stripped program), gives no lines, and the reason is kept for
 * the caller to say once.
 */
#ifndef XFDR_ANALYSIS_SRCLINE_H
#define XFDR_ANALYSIS_SRCLINE_H

#include <stddef.h>
#include <stdint.h>

#include "xfdr/reader.h"

struct srcline;

/* An empty cache of modules; NULL when out of memory. */
struct srcline *srcline_new(void);
void srcline_free(struct srcline *s);

/*
 * srcline_lookup - the source of the address vaddr of module (a path), as its line table gives
 * it (llvm-xray's symbolizer's answer). Returns 1 with *file (it lives until srcline_free(s)),
 * *line (0 when the table gives the address line 0, as clang does for the XRay sled before a
 * function's prologue) and, when col is not NULL, *col (0 when the line table has none), or 0
 * when not known: the module could not be read or has no line for that address.
 */
int srcline_lookup(struct srcline *s, const char *module, uint64_t vaddr, const char **file,
		   int *line, int *col);

/*
 * srcline_site - where the function at vaddr (its first instruction) is defined: its line in
 * the line table, or where that says line 0, the line of its declaration (DW_AT_decl_line).
 * Returns as srcline_lookup(), without a column.
 */
int srcline_site(struct srcline *s, const char *module, uint64_t vaddr, const char **file,
		 int *line);

/*
 * srcline_function - the source of function fid as names (a .map sidecar's) places it:
 * srcline_site() of its module and address, remembered for each (names, fid), so that asking
 * again costs a hash lookup (the timelines ask at every call). Returns 1 with *file, *line and
 * *col (may be NULL; 0), or 0 when not known (no site in names, no line there, out of memory).
 */
int srcline_function(struct srcline *s, const struct xfdr_names *names, uint32_t fid,
		     const char **file, int *line, int *col);

/*
 * srcline_failed - the i-th module (from 0) that gave no lines at all although asked: 1 with
 * *module and *why (libdwfl's words, e.g. "No DWARF information found"; both live until
 * srcline_free(s)), 0 when there are no more.
 */
int srcline_failed(const struct srcline *s, size_t i, const char **module, const char **why);

#endif /* XFDR_ANALYSIS_SRCLINE_H */
