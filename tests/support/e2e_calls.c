/*
 * tests/support/e2e_calls.c - running the end-to-end programs and reading their calls back
 * (see e2e_calls.h).
 */
#include "tests/support/e2e_calls.h"

static char th_root[TH_PATH_BYTES];

const char *th_root_make(void)
{
	char tmpl[] = "/tmp/xfdr-hooks-test-XXXXXX";

	assert_non_null(mkdtemp(tmpl));
	snprintf(th_root, sizeof(th_root), "%s", tmpl);
	return th_root;
}

void th_root_remove(void)
{
	char cmd[TH_PATH_BYTES + 32];

	if (!th_root[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", th_root);
	assert_int_equal(system(cmd), 0);
	th_root[0] = '\0';
}

int th_group_setup(void **state)
{
	(void)state;
	th_root_make();
	return 0;
}

int th_group_teardown(void **state)
{
	(void)state;
	th_root_remove();
	return 0;
}

void th_join(char *out, const char *a, const char *b)
{
	if (snprintf(out, TH_PATH_BYTES, "%s%s", a, b) >= TH_PATH_BYTES)
		fail_msg("path too long: %s%s", a, b);
}

void th_path(char *out, const char *name, int mkdir_it)
{
	char sub[TH_PATH_BYTES];

	th_join(sub, "/", name);
	th_join(out, th_root, sub);
	if (mkdir_it)
		assert_true(mkdir(out, 0755) == 0 || errno == EEXIST);
}

const char *th_env(const char *name, const char *fallback)
{
	const char *v = getenv(name);

	if (v && *v)
		return v;
	if (fallback)
		return fallback;
	fail_msg("%s is not set (run the tests through make check)", name);
	return NULL;
}

void th_build_file(char *out, const char *rel)
{
	struct stat st;

	char sub[TH_PATH_BYTES];

	th_join(sub, "/", rel);
	th_join(out, th_env("XFDR_BUILD", NULL), sub);
	if (stat(out, &st))
		fail_msg("%s is missing: build the libraries first (make)", out);
}

void th_src_file(char *out, const char *rel)
{
	char sub[TH_PATH_BYTES];

	th_join(sub, "/", rel);
	th_join(out, th_env("XFDR_SRC", "."), sub);
}

int th_run(char *const argv[], char *const extra_env[], const char *log)
{
	struct child_spec spec = {
	    .argv = argv,
	    .env_add = extra_env,
	    .out = {.to = CHILD_FILE, .path = log},
	    .err = {.to = CHILD_STDOUT},
	    .timeout_s = TH_RUN_TIMEOUT_S,
	};
	struct child_result r;

	child_run(&spec, &r);
	child_result_free(&r);
	return r.status;
}

void th_run_ok(char *const argv[], char *const extra_env[], const char *log)
{
	int rc;

	unlink(log);
	rc = th_run(argv, extra_env, log);
	if (rc) {
		size_t i;

		fprintf(stderr, "command failed with status %d:", rc);
		for (i = 0; argv[i]; i++)
			fprintf(stderr, " %s", argv[i]);
		fprintf(stderr, "\n");
		child_print_file(log);
		fail_msg("%s failed", argv[0]);
	}
}

void th_find_one(const char *dir, const char *suffix, char *out)
{
	size_t slen = strlen(suffix), found = 0;
	struct dirent *e;
	DIR *d = opendir(dir);

	assert_non_null(d);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if (len > slen && !strcmp(e->d_name + len - slen, suffix)) {
			char sub[TH_PATH_BYTES];

			th_join(sub, "/", e->d_name);
			th_join(out, dir, sub);
			found++;
		}
	}
	closedir(d);
	if (found != 1)
		fail_msg("%zu files ending in %s in %s, expected 1", found, suffix, dir);
}

void th_read_names(const char *map, struct th_names *names)
{
	char line[4096];
	FILE *f = fopen(map, "r");

	if (!f)
		fail_msg("no .map file %s", map);
	names->n = 0;
	while (fgets(line, sizeof(line), f)) {
		char name[64];
		unsigned id;

		if (sscanf(line, "function\t%u\t%63[^\t\n]", &id, name) != 2)
			continue;
		assert_true(names->n < TH_NAMES_MAX);
		names->v[names->n].id = id;
		snprintf(names->v[names->n].name, sizeof(names->v[0].name), "%s", name);
		names->n++;
	}
	fclose(f);
}

const char *th_name_of(const struct th_names *names, uint32_t id)
{
	static char number[16];
	size_t i;

	for (i = 0; i < names->n; i++)
		if (names->v[i].id == id)
			return names->v[i].name;
	snprintf(number, sizeof(number), "#%u", id);
	return number;
}

void th_append(char *out, size_t out_bytes, const char *fmt, ...)
{
	size_t len = strlen(out);
	va_list ap;

	if (len && len + 1 < out_bytes)
		out[len++] = ',';
	out[len] = '\0';
	va_start(ap, fmt);
	vsnprintf(out + len, out_bytes - len, fmt, ap);
	va_end(ap);
}

void th_calls(const char *trace, const struct th_names *names, uint16_t tid16, char *out,
	      size_t out_bytes)
{
	struct xfdr_trace *t = NULL;
	struct xfdr_event_iter it;
	struct xfdr_error err;
	struct xfdr_event ev;
	int rc;

	out[0] = '\0';
	memset(&err, 0, sizeof(err));
	if (xfdr_trace_open(trace, &t, &err) || xfdr_trace_verify(t, &err) ||
	    xfdr_events_begin(t, XFDR_ORDER_THREAD, &it, &err))
		fail_msg("reader rejects %s: %s", trace, err.text);
	while ((rc = xfdr_events_next(&it, &ev, &err)) == 1) {
		if (ev.thread_id == 0 || (tid16 && ev.thread_id != tid16))
			continue;
		if (ev.type == XFDR_EVENT_CUSTOM) {
			char text[64];
			uint32_t i, n = ev.payload_bytes < 63 ? ev.payload_bytes : 63;

			for (i = 0; i < n && ev.payload[i]; i++)
				text[i] = ev.payload[i] >= 0x20 && ev.payload[i] < 0x7f
					      ? (char)ev.payload[i]
					      : '?';
			text[i] = '\0';
			th_append(out, out_bytes, "C %s", text);
			continue;
		}
		switch (ev.action) {
		case XFDR_FN_ENTER:
			th_append(out, out_bytes, "E %s", th_name_of(names, ev.function_id));
			break;
		case XFDR_FN_EXIT:
			th_append(out, out_bytes, "X %s", th_name_of(names, ev.function_id));
			break;
		case XFDR_FN_TAIL_EXIT:
			th_append(out, out_bytes, "T %s", th_name_of(names, ev.function_id));
			break;
		default: {
			char args[96] = "";
			uint32_t i;

			for (i = 0; i < ev.arg_count; i++)
				snprintf(args + strlen(args), sizeof(args) - strlen(args), "%s%llu",
					 i ? " " : "",
					 (unsigned long long)xfdr_event_arg(t, &ev, i));
			th_append(out, out_bytes, "A %s(%s)", th_name_of(names, ev.function_id),
				  args);
			break;
		}
		}
	}
	if (rc < 0)
		fail_msg("reader: %s", err.text);
	xfdr_trace_close(t);
}

size_t th_count(const char *hay, const char *needle)
{
	size_t n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

void th_tools_accept(const char *trace, const char *log)
{
	char *verify[] = {(char *)th_env("XFDR_BIN", NULL), "verify", (char *)trace, NULL};
	char *convert[] = {(char *)th_env("XFDR_LLVM_XRAY", "llvm-xray"), "convert",
			   "--output-format=yaml", (char *)trace, NULL};

	th_run_ok(verify, NULL, log);
	th_run_ok(convert, NULL, log);
}
