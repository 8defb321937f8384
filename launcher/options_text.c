/*
 * launcher/options_text.c - the XFDR_OPTIONS text as the runtime reads it (options_text.h).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "launcher/options_text.h"

static int is_sep(char c)
{
	return c == ':' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
	       c == '\f';
}

int launch_options_split(const char *s)
{
	for (; *s; s++)
		if (is_sep(*s))
			return 1;
	return 0;
}

/* Where the item at p ends, as the runtime splits: a backslash or "::" do not end it. */
static const char *item_end(const char *p)
{
	for (; *p; p++) {
		if ((*p == '\\' && p[1]) || (*p == ':' && p[1] == ':'))
			p++;
		else if (is_sep(*p))
			break;
	}
	return p;
}

int launch_options_escape(const char *value, char *out, size_t n)
{
	size_t k = 0;

	for (; *value; value++) {
		if (k + 2 >= n)
			return -1;
		if (is_sep(*value))
			out[k++] = '\\';
		out[k++] = *value;
	}
	if (k >= n)
		return -1;
	out[k] = '\0';
	return (int)k;
}

int launch_option_value(const char *text, const char *key, char *out, size_t n)
{
	size_t klen = strlen(key), len;
	const char *p = text, *e;
	int found = 0;

	while (*p) {
		while (*p && is_sep(*p))
			p++;
		e = item_end(p);
		len = (size_t)(e - p);
		if (len > klen && !strncmp(p, key, klen) && p[klen] == '=' && len - klen - 1 < n) {
			memcpy(out, p + klen + 1, len - klen - 1);
			out[len - klen - 1] = '\0';
			found = 1;
		}
		p = e;
	}
	return found;
}

int launch_option_false(const char *text, const char *key)
{
	char v[16];

	return launch_option_value(text, key, v, sizeof(v)) &&
	       (!strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "false") ||
		!strcasecmp(v, "off"));
}

int launch_options_check(const char *lib, const char *text, struct xfdr_error *err)
{
	const char *caller = getenv("XFDR_OPTIONS");
	char *saved = caller ? strdup(caller) : NULL;
	int (*check)(const char *);
	void *h;
	int problems = -1;

	err->offset = 0;
	if (caller && !saved) {
		snprintf(err->text, sizeof(err->text), "out of memory");
		return -1;
	}
	/* With start=1 there, the runtime's constructor would record this process. */
	unsetenv("XFDR_OPTIONS");
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err->text, sizeof(err->text),
			 "cannot load the runtime to check the options: %s", dlerror());
		goto out;
	}
	*(void **)&check = dlsym(h, "xfdr_options_check");
	if (check)
		problems = check(text);
	else
		snprintf(err->text, sizeof(err->text),
			 "%s has no xfdr_options_check(): not this version's runtime", lib);
	dlclose(h);
out:
	if (saved && setenv("XFDR_OPTIONS", saved, 1) && problems >= 0) {
		snprintf(err->text, sizeof(err->text), "setenv: out of memory");
		problems = -1;
	}
	free(saved);
	return problems;
}
