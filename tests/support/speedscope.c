/*
 * tests/support/speedscope.c - a file opened in speedscope's importer in headless Chromium
 * (see speedscope.h).
 */
#include "tests/support/speedscope.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/child.h"
#include "tests/support/e2e_calls.h"
#include "tests/support/pool_layout.h"
#include "tests/support/scratch.h"

#define SPEEDSCOPE_PAGE "tests/npm/node_modules/speedscope/dist/release/index.html"

/* speedscope.loadFileFromBase64("NAME", "BASE64 OF THE FILE") (free it). */
static char *load_script(const char *file)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *name = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	size_t n, i, len;
	uint8_t *data = pl_read_file(file, &n);
	char *s, *p;

	if (!data)
		fail_msg("cannot read %s", file);
	s = malloc(strlen(name) + 4 * (n / 3 + 1) + 64);
	assert_non_null(s);
	p = s + sprintf(s, "speedscope.loadFileFromBase64(\"%s\", \"", name);
	for (i = 0; i < n; i += 3) {
		uint32_t w = (uint32_t)data[i] << 16;

		len = n - i < 3 ? n - i : 3;
		if (len > 1)
			w |= (uint32_t)data[i + 1] << 8;
		if (len > 2)
			w |= data[i + 2];
		*p++ = b64[w >> 18];
		*p++ = b64[(w >> 12) & 63];
		*p++ = len > 1 ? b64[(w >> 6) & 63] : '=';
		*p++ = len > 2 ? b64[w & 63] : '=';
	}
	strcpy(p, "\")");
	free(data);
	return s;
}

/*
 * The console messages in Chromium's log: each line
 *   [PID:TID:DATE:INFO:CONSOLE:LINE] "MESSAGE", source: URL (LINE)
 * as MESSAGE lines (free it).
 */
static char *console_lines(const char *log)
{
	char *out = malloc(strlen(log) + 1), *o = out;
	const char *p = log;

	assert_non_null(out);
	while ((p = strstr(p, ":CONSOLE")) != NULL) {
		const char *open = strstr(p, "] \""), *eol = strchr(p, '\n'), *close;

		if (!eol)
			eol = p + strlen(p);
		p = eol;
		if (!open || open > eol)
			continue;
		open += 3;
		close = eol;
		while (close > open && strncmp(close, "\", source:", 10))
			close--;
		if (close == open)
			close = eol;
		memcpy(o, open, (size_t)(close - open));
		o += close - open;
		*o++ = '\n';
	}
	*o = '\0';
	return out;
}

void speedscope_open(const char *file, struct speedscope_view *v)
{
	char page[TH_PATH_BYTES], url[TH_PATH_BYTES + 64], profile[4200];
	char *script = load_script(file);
	const char *js = scratch_write_text("speedscope-load.js", script);
	char *argv[] = {"chromium", "--headless", "--no-sandbox", "--disable-gpu", profile,
			"--enable-logging=stderr", "--v=0",
			/* Until the page is idle: the import runs after the script loads. */
			"--virtual-time-budget=20000", "--dump-dom", url, NULL};
	struct child_spec spec = {.argv = argv, .timeout_s = 120};
	struct child_result r;
	FILE *f;

	free(script);
	th_src_file(page, SPEEDSCOPE_PAGE);
	if (!(f = fopen(page, "r")))
		fail_msg("%s is missing: 'make deps' installs speedscope (tests/npm)", page);
	fclose(f);
	snprintf(url, sizeof(url), "file://%s#localProfilePath=%s", page, js);
	snprintf(profile, sizeof(profile), "--user-data-dir=%s",
		 scratch_path("speedscope-chromium"));
	spec.out.to = CHILD_CAPTURE;
	spec.err.to = CHILD_CAPTURE;
	child_run(&spec, &r);
	if (r.status == 127)
		fail_msg("chromium not found: 'make deps' installs it (Debian package chromium)");
	if (r.status != 0)
		fail_msg("chromium exited %d on %s: %s", r.status, file, r.err);
	v->console = console_lines(r.err);
	v->page = r.out;
	r.out = NULL;
	child_result_free(&r);
}

void speedscope_view_free(struct speedscope_view *v)
{
	free(v->console);
	free(v->page);
	v->console = v->page = NULL;
}

size_t speedscope_count(const struct speedscope_view *v, const char *what)
{
	size_t n = 0;
	const char *p = v->console;

	while ((p = strstr(p, what)) != NULL) {
		n++;
		p = strchr(p, '\n');
		if (!p)
			break;
	}
	return n;
}
