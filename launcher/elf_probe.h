/*
 * launcher/elf_probe.h - what `xfdr record` needs to know about a program before running it:
 * how it was instrumented and whether it already carries the xfdr runtime.
 */
#ifndef XFDR_LAUNCHER_ELF_PROBE_H
#define XFDR_LAUNCHER_ELF_PROBE_H

#include <stddef.h>
#include <stdint.h>

struct elf_probe {
	int elf;	 /* the file starts with the ELF magic */
	int inspected;	 /* ... and is 64-bit little-endian, so the fields below were read */
	int sections;	 /* it has a section table that could be read */
	int xray;	 /* a section named xray_instr_map: clang -fxray-instrument sleds */
	int cyg;	 /* the symbol __cyg_profile_func_enter: -finstrument-functions */
	int fentry;	 /* __fentry__ or __return__: gcc -pg -mfentry -minstrument-return=call */
	int xfdr_api;	 /* some xfdr_* symbol, defined or referenced: the manual API */
	int xfdr_static; /* xfdr_init defined in the file itself: libxfdr.a linked in */
	int xfdr_needed; /* DT_NEEDED libxfdr.so.0: linked with -lxfdr */
};

/*
 * elf_probe_memory - inspect the n bytes at data, a whole or partial ELF file. Never reads
 * outside them: a truncated or corrupt file gives what could be read (often nothing).
 */
void elf_probe_memory(const uint8_t *data, size_t n, struct elf_probe *p);

/*
 * elf_probe_file - the same for the file at path (mapped read-only). Returns 0, or a positive
 * errno when it cannot be opened or mapped (*p then all zero). A file that is not a regular
 * file is not an ELF program: 0 with *p all zero.
 */
int elf_probe_file(const char *path, struct elf_probe *p);

#endif /* XFDR_LAUNCHER_ELF_PROBE_H */
