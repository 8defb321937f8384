/*
 * reader/lib/names.c - function names from the `.map` sidecar the runtime writes beside each
 * trace. The sidecar format is specified in doc/map-format.md.
 *
 * Only the lines `function<TAB>ID<TAB>NAME<TAB>...` and `since_tsc<TAB>TSC` (the start of a
 * snapshot's window) are read; every other line is skipped, so keys a later runtime adds do
 * not break this reader. A NAME in angle brackets (`<unknown>`,
 * `<unassigned>`) means the runtime could not name the id: such ids stay unnamed, and a caller
 * shows their number as it would without a map. The table is an array sorted by id and
 * searched by bisection: memory grows with the named functions only.
 *
 * Every message starts with the path (then the line, where there is one), so that a command
 * can print it as it is.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xfdr/reader.h"

struct rd_name {
	uint32_t id;
	char *name;
};

struct xfdr_names {
	struct rd_name *v; /* sorted by id once loaded */
	size_t count, cap;
	int have_since;
	uint64_t since_tsc;
};

static int fail(struct xfdr_error *err, int rc, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(struct xfdr_error *err, int rc, uint64_t offset, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return rc;
	err->offset = offset;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	return rc;
}

static int by_id(const void *a, const void *b)
{
	const struct rd_name *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int add(struct xfdr_names *n, uint32_t id, const char *name, size_t len)
{
	struct rd_name *v;

	if (n->count == n->cap) {
		size_t cap = n->cap ? n->cap * 2 : 64;

		v = realloc(n->v, cap * sizeof(*v));
		if (!v)
			return -1;
		n->v = v;
		n->cap = cap;
	}
	n->v[n->count].id = id;
	n->v[n->count].name = strndup(name, len);
	if (!n->v[n->count].name)
		return -1;
	n->count++;
	return 0;
}

/* Parse one `function` line; returns 0, or -1 with what was wrong in *why. */
static int parse_function_line(struct xfdr_names *n, char *line, const char **why)
{
	char *id_end, *name = NULL, *name_end;
	unsigned long long id;

	errno = 0;
	id = strtoull(line + sizeof("function"), &id_end, 10);
	if (id_end == line + sizeof("function") || *id_end != '\t' || errno ||
	    id > XFDR_FUNCTION_ID_MAX) {
		*why = "expected a function id (0..268435455) after 'function<TAB>'";
		return -1;
	}
	name = id_end + 1;
	name_end = strchr(name, '\t');
	if (!name_end)
		name_end = name + strlen(name);
	if (name_end == name) {
		*why = "expected a function name after the id";
		return -1;
	}
	if (*name == '<')
		return 0;
	if (add(n, (uint32_t)id, name, (size_t)(name_end - name))) {
		*why = "out of memory";
		return -1;
	}
	return 0;
}

/* Parse a `since_tsc` line: a decimal u64, then the end of the line or a TAB (more fields). */
static int parse_since_line(struct xfdr_names *n, const char *line, const char **why)
{
	const char *p = line + sizeof("since_tsc");
	char *end;
	unsigned long long v;

	if (n->have_since) {
		*why = "expected at most one since_tsc line";
		return -1;
	}
	errno = 0;
	v = strtoull(p, &end, 10);
	if (*p < '0' || *p > '9' || errno || (*end && *end != '\t')) {
		*why = "expected a decimal TSC (0..18446744073709551615) after 'since_tsc<TAB>'";
		return -1;
	}
	n->have_since = 1;
	n->since_tsc = v;
	return 0;
}

int xfdr_names_load(const char *path, struct xfdr_names **out, struct xfdr_error *err)
{
	struct xfdr_names *n;
	FILE *f;
	char *line = NULL;
	size_t cap = 0, lineno = 0, i;
	uint64_t line_offset, next_offset = 0;
	ssize_t len;
	int rc = 0;

	*out = NULL;
	f = fopen(path, "r");
	if (!f)
		return fail(err, -1, 0, "%s: %s", path, strerror(errno));
	n = calloc(1, sizeof(*n));
	if (!n) {
		fclose(f);
		return fail(err, -2, 0, "%s: out of memory", path);
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		const char *why;

		lineno++;
		line_offset = next_offset;
		next_offset += (uint64_t)len;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (!strncmp(line, "function\t", sizeof("function")))
			rc = parse_function_line(n, line, &why);
		else if (!strncmp(line, "since_tsc\t", sizeof("since_tsc")))
			rc = parse_since_line(n, line, &why);
		else
			continue;
		if (rc) {
			rc = fail(err, -2, line_offset, "%s: line %zu: %s, found '%.60s'", path,
				  lineno, why, line);
			break;
		}
	}
	/* errno is still getline()'s: nothing has run since it failed. */
	if (!rc && ferror(f))
		rc = fail(err, -2, 0, "%s: %s", path, strerror(errno));
	free(line);
	fclose(f);
	if (rc)
		goto out_free;
	/* A map that names nothing leaves n->v NULL, which qsort() must not be given. */
	if (n->count)
		qsort(n->v, n->count, sizeof(*n->v), by_id);
	for (i = 1; i < n->count; i++) {
		if (n->v[i].id == n->v[i - 1].id) {
			rc = fail(err, -2, 0, "%s: function id %u is named twice ('%s' and '%s')",
				  path, n->v[i].id, n->v[i - 1].name, n->v[i].name);
			goto out_free;
		}
	}
	*out = n;
	return 0;
out_free:
	xfdr_names_free(n);
	return rc;
}

const char *xfdr_names_get(const struct xfdr_names *n, uint32_t id)
{
	struct rd_name key = {id, NULL};
	const struct rd_name *hit;

	if (!n || !n->count)
		return NULL;
	hit = bsearch(&key, n->v, n->count, sizeof(*n->v), by_id);
	return hit ? hit->name : NULL;
}

int xfdr_names_since_tsc(const struct xfdr_names *n, uint64_t *tsc)
{
	if (!n || !n->have_since)
		return 0;
	*tsc = n->since_tsc;
	return 1;
}

void xfdr_names_free(struct xfdr_names *n)
{
	size_t i;

	if (!n)
		return;
	for (i = 0; i < n->count; i++)
		free(n->v[i].name);
	free(n->v);
	free(n);
}
