/*
 * command/split_out.c - an output cut into consecutive files (split_out.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command/split_out.h"

int split_out_name(const char *path, unsigned part, char *buf, size_t n)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	const char *dot = strrchr(base, '.');
	int len;

	/* ".hidden" and "name." have no extension to keep */
	if (!dot || dot == base || !dot[1])
		dot = base + strlen(base);
	len = snprintf(buf, n, "%.*s.%04u%s", (int)(dot - path), path, part, dot);
	return len < 0 || (size_t)len >= n ? -1 : 0;
}

/* Part s->part + 1 created into s->o (the one before left as it is). */
static int open_part(struct split_out *s)
{
	char *name = s->name[(s->part + 1) & 1];
	struct cli_out *o;

	if (split_out_name(s->path, s->part + 1, name, sizeof(s->name[0]))) {
		cli_error("%s: too long a name for its parts", s->path);
		return CLI_FAIL;
	}
	if (!(o = cli_out_new(name)))
		return CLI_FAIL;
	s->part++;
	s->o = o;
	s->own_from = 0;
	return 0;
}

int split_out_open(struct split_out *s, const char *path, uint64_t size)
{
	s->path = path;
	s->size = size;
	s->part = 0;
	s->o = NULL;
	return open_part(s);
}

int split_out_full(struct split_out *s)
{
	uint64_t at = cli_out_bytes(s->o);

	if (!s->own_from)
		s->own_from = at;
	return at >= s->size && at - s->own_from >= s->size / 2;
}

int split_out_next(struct split_out *s)
{
	struct cli_out *before = s->o;
	int rc;

	if (open_part(s))
		return CLI_FAIL;
	rc = cli_out_close(before);
	free(before);
	return rc;
}

int split_out_close(struct split_out *s)
{
	int rc = s->o ? cli_out_close(s->o) : CLI_OK;

	free(s->o);
	s->o = NULL;
	return rc;
}
