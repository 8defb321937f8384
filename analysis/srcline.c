/*
 * analysis/srcline.c - source lines of functions from their module's DWARF (srcline.h).
 *
 * One libdwfl session per module, reported offline (the file as it is on the disk, at the
 * addresses it was linked for plus the bias libdwfl gives it), so that a module's addresses are
 * the ones the sidecar writes (module_vaddr) and modules never overlap one another.
 *
 * libdwfl finds an address's unit through .debug_aranges, which clang does not write (and
 * elfutils before 0.189 does not make up from the units): when it finds none, the units'
 * own address ranges (DW_AT_low_pc, high_pc, ranges), read once per module, say which unit
 * holds the address, and that unit's line table gives the line.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/srcline.h"

struct sl_module {
	char *path;
	Dwfl *dwfl;	       /* NULL when the session could not begin */
	Dwfl_Module *mod;      /* NULL when the module gives no lines */
	Dwarf_Addr bias;       /* module_vaddr + bias = the module's address in the session */
	char *why;	       /* why mod is NULL */
	struct sl_unit *units; /* the units' ranges, for want of .debug_aranges */
	size_t unit_count;
	int units_read;
};

/* An address range of a unit, at session addresses. */
struct sl_unit {
	Dwarf_Addr lo, hi; /* [lo, hi) */
	Dwarf_Die die;
	Dwarf_Addr bias; /* of the unit's addresses in the session */
};

/* A relative file name of a line table joined to its unit's directory, kept once. */
struct sl_path {
	const char *file, *dir; /* libdw's strings it was made of */
	char *path;
};

#define SL_RECENT 16 /* joined paths looked at before another is made: a unit's come together */

/* A function's source, remembered (srcline_function()). */
struct sl_fn {
	const struct xfdr_names *names; /* NULL: a free slot */
	uint32_t fid;
	int known, line, col;
	const char *file;
};

struct srcline {
	struct sl_fn *fn; /* fn_mask + 1 slots (a power of two), at most half used */
	size_t fn_mask, fn_count;
	struct sl_module *m;
	size_t count, cap;
	size_t last; /* the module of the previous lookup: a program's functions come together */
	struct sl_path *paths;
	size_t path_count, path_cap;
};

static const Dwfl_Callbacks offline_callbacks = {
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

struct srcline *srcline_new(void)
{
	return calloc(1, sizeof(struct srcline));
}

void srcline_free(struct srcline *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->count; i++) {
		if (s->m[i].dwfl)
			dwfl_end(s->m[i].dwfl);
		free(s->m[i].units);
		free(s->m[i].path);
		free(s->m[i].why);
	}
	free(s->m);
	free(s->fn);
	for (i = 0; i < s->path_count; i++)
		free(s->paths[i].path);
	free(s->paths);
	free(s);
}

/* Open m->path: m->mod set, or NULL with m->why (NULL only when out of memory). */
static void module_open(struct sl_module *m)
{
	struct stat st;

	/* A sidecar names what it likes: never read a device or a FIFO as an ELF file. */
	if (stat(m->path, &st)) {
		m->why = strdup(strerror(errno));
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		m->why = strdup("not a regular file");
		return;
	}
	m->dwfl = dwfl_begin(&offline_callbacks);
	if (m->dwfl) {
		m->mod = dwfl_report_offline(m->dwfl, m->path, m->path, -1);
		dwfl_report_end(m->dwfl, NULL, NULL);
	}
	/* Without DWARF the module is of no use here, whatever else it has. */
	if (m->mod && !dwfl_module_getdwarf(m->mod, &m->bias))
		m->mod = NULL;
	if (m->mod && !dwfl_module_getelf(m->mod, &m->bias))
		m->mod = NULL;
	if (!m->mod)
		m->why = strdup(dwfl_errmsg(-1));
}

/* The module of path, opened on first use; NULL when out of memory. */
static struct sl_module *module_of(struct srcline *s, const char *path)
{
	struct sl_module *m;
	size_t i;

	if (s->count && !strcmp(s->m[s->last].path, path))
		return &s->m[s->last];
	for (i = 0; i < s->count; i++) {
		if (!strcmp(s->m[i].path, path)) {
			s->last = i;
			return &s->m[i];
		}
	}
	if (s->count == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;

		m = realloc(s->m, cap * sizeof(*m));
		if (!m)
			return NULL;
		s->m = m;
		s->cap = cap;
	}
	m = &s->m[s->count];
	memset(m, 0, sizeof(*m));
	m->path = strdup(path);
	if (!m->path)
		return NULL;
	module_open(m);
	s->last = s->count++;
	return m;
}

/* file joined to dir ("dir/file"), made once for each pair seen lately; NULL: out of memory. */
static const char *joined(struct srcline *s, const char *file, const char *dir)
{
	size_t i, n = strlen(dir) + 1 + strlen(file) + 1;
	struct sl_path *p;

	for (i = s->path_count; i-- > 0 && i + SL_RECENT >= s->path_count;)
		if (s->paths[i].file == file && s->paths[i].dir == dir)
			return s->paths[i].path;
	if (s->path_count == s->path_cap) {
		size_t cap = s->path_cap ? s->path_cap * 2 : 64;

		p = realloc(s->paths, cap * sizeof(*p));
		if (!p)
			return NULL;
		s->paths = p;
		s->path_cap = cap;
	}
	p = &s->paths[s->path_count];
	p->file = file;
	p->dir = dir;
	p->path = malloc(n);
	if (!p->path)
		return NULL;
	snprintf(p->path, n, "%s/%s", dir, file);
	s->path_count++;
	return p->path;
}

/* Every unit's address ranges into m->units, once. Out of memory: none (no lines). */
static void read_units(struct sl_module *m)
{
	Dwarf_Die *cu = NULL;
	Dwarf_Addr bias, base, lo, hi;
	ptrdiff_t off;
	struct sl_unit *v;
	size_t cap = 0;

	m->units_read = 1;
	while ((cu = dwfl_module_nextcu(m->mod, cu, &bias)) != NULL) {
		for (off = 0; (off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0;) {
			if (m->unit_count == cap) {
				cap = cap ? 2 * cap : 16;
				v = realloc(m->units, cap * sizeof(*v));
				if (!v)
					return;
				m->units = v;
			}
			m->units[m->unit_count++] = (struct sl_unit){
			    .lo = lo + bias, .hi = hi + bias, .die = *cu, .bias = bias};
		}
	}
}

/* The unit whose ranges hold session address addr; NULL: none. */
static struct sl_unit *unit_of(struct sl_module *m, Dwarf_Addr addr)
{
	size_t i;

	if (!m->units_read)
		read_units(m);
	for (i = 0; i < m->unit_count; i++)
		if (addr >= m->units[i].lo && addr < m->units[i].hi)
			return &m->units[i];
	return NULL;
}

/* The line at session address addr from the unit whose ranges hold it; NULL: none. */
static Dwarf_Line *unit_line(struct sl_module *m, Dwarf_Addr addr, const char **comp_dir)
{
	struct sl_unit *u = unit_of(m, addr);
	Dwarf_Attribute a;

	if (!u)
		return NULL;
	*comp_dir = dwarf_formstring(dwarf_attr(&u->die, DW_AT_comp_dir, &a));
	return dwarf_getsrc_die(&u->die, addr - u->bias);
}

/*
 * The declaration of the function around session address addr: DW_AT_decl_line of the
 * innermost DW_TAG_subprogram in scope into *line, and its DW_AT_decl_file into *file when
 * libdw can name it (elfutils 0.188 cannot for clang's DWARF 5: *file is then left as it was,
 * the line table's file of the same address). 1, or 0 when the DWARF has no such line.
 */
static int unit_decl(struct sl_module *m, Dwarf_Addr addr, const char **file, int *line)
{
	struct sl_unit *u = unit_of(m, addr);
	Dwarf_Die *scopes = NULL;
	const char *f;
	int n, i, found = 0;

	if (!u)
		return 0;
	n = dwarf_getscopes(&u->die, addr - u->bias, &scopes);
	for (i = 0; i < n && !found; i++) {
		if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram)
			continue;
		found = !dwarf_decl_line(&scopes[i], line) && *line > 0;
		f = found ? dwarf_decl_file(&scopes[i]) : NULL;
		if (f)
			*file = f;
	}
	free(scopes);
	return found;
}

/* srcline_lookup(), and with decl a line 0 replaced by the function's declaration. */
static int lookup(struct srcline *s, const char *module, uint64_t vaddr, const char **file,
		  int *line, int *col, int decl)
{
	struct sl_module *m = module_of(s, module);
	const char *f, *dir = NULL;
	Dwarf_Line *dl;
	Dwfl_Line *l;
	int n = 0, c = 0;

	if (!m || !m->mod)
		return 0;
	l = dwfl_module_getsrc(m->mod, vaddr + m->bias);
	if (l) {
		f = dwfl_lineinfo(l, NULL, &n, &c, NULL, NULL);
		dir = dwfl_line_comp_dir(l);
	} else {
		dl = unit_line(m, vaddr + m->bias, &dir);
		f = dl ? dwarf_linesrc(dl, NULL, NULL) : NULL;
		if (f && (dwarf_lineno(dl, &n) || dwarf_linecol(dl, &c)))
			f = NULL;
	}
	if (f && !n && decl && unit_decl(m, vaddr + m->bias, &f, &n))
		c = 0;
	if (!f || n < 0)
		return 0;
	/* A name relative to the compilation's directory, as gcc writes the unit's own file. */
	if (f[0] != '/' && dir && !(f = joined(s, f, dir)))
		return 0;
	*file = f;
	*line = n;
	if (col)
		*col = c > 0 ? c : 0;
	return 1;
}

int srcline_lookup(struct srcline *s, const char *module, uint64_t vaddr, const char **file,
		   int *line, int *col)
{
	return lookup(s, module, vaddr, file, line, col, 0);
}

int srcline_site(struct srcline *s, const char *module, uint64_t vaddr, const char **file,
		 int *line)
{
	return lookup(s, module, vaddr, file, line, NULL, 1);
}

/* Room for one more function: the table doubles at half full. 0, or -1 out of memory. */
static int fn_grow(struct srcline *s)
{
	size_t n = s->fn ? 2 * (s->fn_mask + 1) : 256, i, j;
	struct sl_fn *v;

	if (s->fn && s->fn_count + 1 <= (s->fn_mask + 1) / 2)
		return 0;
	v = calloc(n, sizeof(*v));
	if (!v)
		return -1;
	for (i = 0; s->fn && i <= s->fn_mask; i++) {
		if (!s->fn[i].names)
			continue;
		for (j = (s->fn[i].fid * 2654435761u) & (n - 1); v[j].names; j = (j + 1) & (n - 1))
			;
		v[j] = s->fn[i];
	}
	free(s->fn);
	s->fn = v;
	s->fn_mask = n - 1;
	return 0;
}

int srcline_function(struct srcline *s, const struct xfdr_names *names, uint32_t fid,
		     const char **file, int *line, int *col)
{
	const char *module;
	struct sl_fn *f;
	uint64_t vaddr;
	size_t i;

	if (!names)
		return 0;
	for (i = s->fn ? (fid * 2654435761u) & s->fn_mask : 0; s->fn && s->fn[i].names;
	     i = (i + 1) & s->fn_mask) {
		f = &s->fn[i];
		if (f->fid != fid || f->names != names)
			continue;
		if (!f->known)
			return 0;
		*file = f->file;
		*line = f->line;
		if (col)
			*col = f->col;
		return 1;
	}
	if (fn_grow(s))
		return 0;
	for (i = (fid * 2654435761u) & s->fn_mask; s->fn[i].names; i = (i + 1) & s->fn_mask)
		;
	f = &s->fn[i];
	*f = (struct sl_fn){.names = names, .fid = fid};
	s->fn_count++;
	f->known = xfdr_names_function_site(names, fid, &module, &vaddr) &&
		   srcline_site(s, module, vaddr, &f->file, &f->line);
	return f->known ? srcline_function(s, names, fid, file, line, col) : 0;
}

int srcline_failed(const struct srcline *s, size_t i, const char **module, const char **why)
{
	size_t k;

	for (k = 0; k < s->count; k++) {
		if (s->m[k].mod)
			continue;
		if (i--)
			continue;
		*module = s->m[k].path;
		*why = s->m[k].why ? s->m[k].why : "out of memory";
		return 1;
	}
	return 0;
}
