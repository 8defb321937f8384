/*
 * tests/support/map_parse.c - reading a flush's .map sidecar in tests (see map_parse.h).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/map_parse.h"

/* One tab-separated decimal field at *p (after its tab); fails on anything else. */
static uint64_t field(const char **p, const char *line)
{
	char *end;
	uint64_t v;

	if (**p != '\t')
		fail_msg("bad thread line: %.120s", line);
	errno = 0;
	v = strtoull(*p + 1, &end, 10);
	if (errno || end == *p + 1)
		fail_msg("bad thread line: %.120s", line);
	*p = end;
	return v;
}

size_t mp_threads(const char *map, struct mp_thread *out, size_t max)
{
	const char *p = map, *line, *tab;
	size_t n = 0;

	while ((p = strstr(p, "\nthread\t"))) {
		struct mp_thread t;
		size_t len;

		line = ++p;
		p += 6;
		memset(&t, 0, sizeof(t));
		t.tid = (uint32_t)field(&p, line);
		t.id = (uint32_t)field(&p, line);
		if (*p != '\t' || !(tab = strchr(p + 1, '\t')))
			fail_msg("bad thread line: %.120s", line);
		len = (size_t)(tab - p - 1);
		memcpy(t.name, p + 1, len < sizeof(t.name) - 1 ? len : sizeof(t.name) - 1);
		p = tab;
		t.no_buffer = field(&p, line);
		t.reentrant = field(&p, line);
		t.too_large = field(&p, line);
		t.overwritten = field(&p, line);
		t.elided = field(&p, line);
		t.stack_overflow = field(&p, line);
		t.overwritten_events = field(&p, line);
		t.filtered_calls = field(&p, line);
		t.max_depth_calls = field(&p, line);
		if (*p != '\n' && *p)
			fail_msg("thread line with more than 12 columns: %.120s", line);
		if (n >= max)
			fail_msg("more than %zu thread lines", max);
		out[n++] = t;
	}
	return n;
}

const struct mp_thread *mp_thread_of(const struct mp_thread *t, size_t n, uint32_t tid)
{
	const struct mp_thread *found = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		if (t[i].tid != tid)
			continue;
		if (found)
			fail_msg("tid %u has two thread lines", tid);
		found = &t[i];
	}
	return found;
}

uint64_t mp_number(const char *map, const char *key)
{
	size_t klen = strlen(key);
	const char *p = map;

	while (p && *p) {
		if (!strncmp(p, key, klen) && p[klen] == '\t')
			return strtoull(p + klen + 1, NULL, 10);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	fail_msg("no %s in the map", key);
	return 0;
}

char *mp_read(const char *path)
{
	char map_path[4096];
	FILE *f;
	char *buf = NULL;
	size_t n = 0, cap = 0, got;

	snprintf(map_path, sizeof(map_path), "%s.map", path);
	f = fopen(map_path, "r");
	if (!f)
		fail_msg("cannot open %s", map_path);
	do {
		if (cap - n < 4096) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap + 1);
			if (!buf)
				fail_msg("out of memory reading %s", map_path);
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got);
	fclose(f);
	buf[n] = '\0';
	return buf;
}
