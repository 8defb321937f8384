/*
 * runtime/record/thread_slots.h - the thread table of the default thread_max, in .bss
 * (thread_slots.c).
 *
 * Why not a mapping of its own: fork() copies each mapping a process has, and for every 2 MiB
 * of address space that holds a page of a copied mapping the child gets a page-table page the
 * kernel allocates and zeroes. A table mapped apart cost every fork child such a page for the
 * one or two pages of it a process with few threads touches, and a mapping unless it merged
 * with a neighbour. Here it costs neither: .bss is copied anyway, and its untouched pages cost
 * address space only. The table is a common symbol, which linkers place at the end of .bss, after
 * the program's and the runtime's other variables: slot 0 is next to them, in the 2 MiB span that
 * holds them or the next one.
 *
 * The alternate stacks stay in mappings of their own (altstack.c): their guard pages would
 * fault whatever scans .bss whole (LeakSanitizer does, as a conservative garbage collector
 * would).
 */
#ifndef XFDR_RUNTIME_RECORD_THREAD_SLOTS_H
#define XFDR_RUNTIME_RECORD_THREAD_SLOTS_H

#include "runtime/base/compiler.h"
#include "runtime/record/thread_types.h"

/* Slots of the table in .bss: the default thread_max, which options.c asserts. */
#define THREAD_SLOTS_BSS 4096u

extern struct thread_slot thread_slots_bss[THREAD_SLOTS_BSS] XFDR_HIDDEN;

#endif /* XFDR_RUNTIME_RECORD_THREAD_SLOTS_H */
