/*
 * rebuild/core_symbols.c - name the addresses of a core's process (core_names.h) with
 * elfutils' libdwfl: dwfl_core_file_report() reads the files the core had mapped (its NT_FILE
 * note and the dynamic linker's list, found in the core's memory) and libdwfl finds them on
 * disk (by build id, then by path); symbols come from each file's .symtab or .dynsym.
 */
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rebuild/core_names.h"

struct rb_core_symbols {
	Elf *core;
	Dwfl *dwfl;
	size_t found, missing;
};

static char *debuginfo_path;

static const Dwfl_Callbacks core_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};

static int count_file(Dwfl_Module *m, void **user, const char *name, Dwarf_Addr start, void *arg)
{
	struct rb_core_symbols *s = arg;
	GElf_Addr bias;

	(void)user;
	(void)name;
	(void)start;
	if (dwfl_module_getelf(m, &bias))
		s->found++;
	else
		s->missing++;
	return DWARF_CB_OK;
}

int rb_core_symbols_open(const struct rb_core *c, struct rb_core_symbols **out,
			 struct xfdr_error *err)
{
	struct rb_core_symbols *s = calloc(1, sizeof(*s));
	const char *why;

	*out = NULL;
	if (!s)
		goto fail;
	elf_version(EV_CURRENT);
	s->core = elf_begin(c->fd, ELF_C_READ_MMAP, NULL);
	s->dwfl = s->core ? dwfl_begin(&core_callbacks) : NULL;
	if (!s->dwfl)
		goto fail;
	if (dwfl_core_file_report(s->dwfl, s->core, NULL) < 0)
		goto fail;
	if (dwfl_report_end(s->dwfl, NULL, NULL))
		goto fail;
	dwfl_getmodules(s->dwfl, count_file, s, 0);
	*out = s;
	return 0;
fail:
	why = !s ? "out of memory" : !s->core ? elf_errmsg(-1) : dwfl_errmsg(-1);
	if (err) {
		err->offset = 0;
		snprintf(err->text, sizeof(err->text), "%s: its mapped files: %s", c->name, why);
	}
	rb_core_symbols_close(s);
	return -1;
}

void rb_core_symbol(struct rb_core_symbols *s, uint64_t addr, struct rb_core_symbol *out)
{
	Dwfl_Module *m = dwfl_addrmodule(s->dwfl, addr);
	GElf_Addr bias;
	const char *name, *main_file = NULL;

	memset(out, 0, sizeof(*out));
	if (!m || !dwfl_module_getelf(m, &bias))
		return;
	/* the file found on disk; else (found by its build id) the path the core gave */
	name = dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, &main_file, NULL);
	out->module = main_file ? main_file : name;
	out->module_vaddr = addr - bias;
	out->vaddr_known = 1;
	out->name = dwfl_module_addrname(m, addr);
}

void rb_core_symbols_files(const struct rb_core_symbols *s, size_t *found, size_t *missing)
{
	*found = s->found;
	*missing = s->missing;
}

void rb_core_symbols_close(struct rb_core_symbols *s)
{
	if (!s)
		return;
	if (s->dwfl)
		dwfl_end(s->dwfl);
	if (s->core)
		elf_end(s->core);
	free(s);
}
