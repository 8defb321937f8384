/*
 * runtime/record/thread_slots.c - the thread table of the default thread_max
 * (thread_slots.h), alone in its file.
 */
#include "runtime/record/thread_slots.h"

/* Common (tentative, zero), so that the linker places it last (thread_slots.h). */
struct thread_slot thread_slots_bss[THREAD_SLOTS_BSS] __attribute__((common));
