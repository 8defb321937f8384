/*
 * tests/support/proc_maps.c - the calling process's kernel mappings (proc_maps.h).
 */
#include <inttypes.h>
#include <stdio.h>

#include "tests/support/proc_maps.h"

int proc_maps_count(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int c, n = 0;

	if (!f)
		return -1;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

int proc_maps_find(const void *p, uintptr_t *start, uintptr_t *end)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int rc = -1;

	if (!f)
		return -1;
	while (rc && fgets(line, sizeof(line), f))
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, start, end) == 2 &&
		    (uintptr_t)p >= *start && (uintptr_t)p < *end)
			rc = 0;
	fclose(f);
	return rc;
}
