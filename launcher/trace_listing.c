/*
 * launcher/trace_listing.c - the trace files of an output directory (trace_listing.h).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "launcher/trace_listing.h"

static int digits(const char *p, const char *e, uint64_t *v)
{
	if (p == e || e - p > 19)
		return 0;
	for (*v = 0; p < e; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		*v = *v * 10 + (uint64_t)(*p - '0');
	}
	return 1;
}

int launch_trace_name_parse(const char *name, struct launch_trace *f)
{
	size_t len = strlen(name);
	const char *e, *d;

	if (len < 5 || strcmp(name + len - 5, ".xray"))
		return 0;
	e = name + len - 5;
	f->tid = 0;
	f->per_thread = 0;
	for (d = e; d > name && d[-1] != '-'; d--)
		;
	if (d == name)
		return 0;
	if (*d == 't') {
		if (!digits(d + 1, e, &f->tid))
			return 0;
		f->per_thread = 1;
		e = d - 1;
		for (d = e; d > name && d[-1] != '-'; d--)
			;
		if (d == name)
			return 0;
	}
	if (!digits(d, e, &f->n))
		return 0;
	e = d - 1;
	for (d = e; d > name && d[-1] != '-'; d--)
		;
	/* A prefix of at least one byte before "-<pid>". */
	return d > name + 1 && digits(d, e, &f->pid);
}

void launch_listing_free(struct launch_listing *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

int launch_list_traces(const char *dir, struct launch_listing *l)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	struct launch_trace f;
	char path[PATH_MAX];

	memset(l, 0, sizeof(*l));
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (!launch_trace_name_parse(e->d_name, &f))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path) ||
		    stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		if (l->n == l->cap) {
			size_t cap = l->cap ? 2 * l->cap : 16;
			struct launch_trace *v = realloc(l->v, cap * sizeof(*v));

			if (!v)
				goto oom;
			l->v = v;
			l->cap = cap;
		}
		f.name = strdup(e->d_name);
		if (!f.name)
			goto oom;
		f.ino = st.st_ino;
		f.mtime = st.st_mtim;
		f.bytes = st.st_size;
		l->v[l->n++] = f;
	}
	closedir(d);
	return 0;
oom:
	closedir(d);
	launch_listing_free(l);
	errno = ENOMEM;
	return -1;
}

int launch_trace_was_there(const struct launch_listing *before, const struct launch_trace *f)
{
	size_t i;

	for (i = 0; i < before->n; i++) {
		const struct launch_trace *b = &before->v[i];

		if (!strcmp(b->name, f->name))
			return b->ino == f->ino && b->mtime.tv_sec == f->mtime.tv_sec &&
			       b->mtime.tv_nsec == f->mtime.tv_nsec && b->bytes == f->bytes;
	}
	return 0;
}

static int trace_cmp(const void *pa, const void *pb)
{
	const struct launch_trace *a = pa, *b = pb;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->n != b->n)
		return a->n > b->n ? -1 : 1;
	return (a->tid > b->tid) - (a->tid < b->tid);
}

void launch_listing_sort(struct launch_listing *l)
{
	if (l->n) /* an empty listing has no array to sort */
		qsort(l->v, l->n, sizeof(*l->v), trace_cmp);
}
