/*
 * Function names from the `.map` sidecar the runtime writes beside each trace.
 *
 * The lines used are `function<TAB>ID<TAB>NAME<TAB>...`; every other line is skipped, so
 * later sidecar fields do not break older readers. NAME `<unknown>` / `<unassigned>` means
 * the runtime could not name the id: such ids keep their number, as without a map.
 * The table is a sorted array searched by id: memory grows with the named functions only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/cli/cli.h"

static int by_id(const void *a, const void *b)
{
	const struct cli_name *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int add(struct cli_names *n, uint32_t id, const char *name, size_t len)
{
	struct cli_name *v;

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
static int parse_function_line(struct cli_names *n, char *line, const char **why)
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

int cli_names_load(struct cli_names *n, const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0, lineno = 0, i;
	ssize_t len;
	int status = CLI_OK;

	memset(n, 0, sizeof(*n));
	if (!f) {
		cli_error("%s: %s", path, strerror(errno));
		return CLI_USAGE;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		const char *why;

		lineno++;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (strncmp(line, "function\t", sizeof("function")))
			continue;
		if (parse_function_line(n, line, &why)) {
			cli_error("%s: line %zu: %s, found '%.60s'", path, lineno, why, line);
			status = CLI_FAIL;
			break;
		}
	}
	if (status == CLI_OK && ferror(f)) {
		cli_error("%s: %s", path, strerror(errno));
		status = CLI_FAIL;
	}
	free(line);
	fclose(f);
	if (status != CLI_OK) {
		cli_names_free(n);
		return status;
	}
	qsort(n->v, n->count, sizeof(*n->v), by_id);
	n->loaded = 1;
	for (i = 1; i < n->count; i++) {
		if (n->v[i].id == n->v[i - 1].id) {
			cli_error("%s: function id %u is named twice ('%s' and '%s')", path,
				  n->v[i].id, n->v[i - 1].name, n->v[i].name);
			cli_names_free(n);
			return CLI_FAIL;
		}
	}
	return CLI_OK;
}

const char *cli_names_get(const struct cli_names *n, uint32_t id)
{
	struct cli_name key = {id, NULL};
	const struct cli_name *hit;

	if (!n->count)
		return NULL;
	hit = bsearch(&key, n->v, n->count, sizeof(*n->v), by_id);
	return hit ? hit->name : NULL;
}

void cli_names_free(struct cli_names *n)
{
	size_t i;

	for (i = 0; i < n->count; i++)
		free(n->v[i].name);
	free(n->v);
	memset(n, 0, sizeof(*n));
}
