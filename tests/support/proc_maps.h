/*
 * tests/support/proc_maps.h - the calling process's kernel mappings, as /proc/self/maps lists
 * them: what fork() copies, one by one.
 */
#ifndef XFDR_TESTS_SUPPORT_PROC_MAPS_H
#define XFDR_TESTS_SUPPORT_PROC_MAPS_H

#include <stdint.h>

/* The number of mappings; -1 when /proc/self/maps cannot be read. */
int proc_maps_count(void);

/* The [*start, *end) of the mapping that holds p. 0, or -1 when none does. */
int proc_maps_find(const void *p, uintptr_t *start, uintptr_t *end);

#endif /* XFDR_TESTS_SUPPORT_PROC_MAPS_H */
