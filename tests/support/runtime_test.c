/*
 * tests/support/runtime_test.c - helpers shared by the runtime tests (see runtime_test.h).
 */
#include "tests/support/runtime_test.h"

char ts_dir[128];

const char *ts_dir_make(void)
{
	char tmpl[] = "/tmp/xfdr-rt-test-XXXXXX";

	assert_non_null(mkdtemp(tmpl));
	snprintf(ts_dir, sizeof(ts_dir), "%s/", tmpl);
	return ts_dir;
}

void ts_dir_remove(void)
{
	char cmd[200];

	if (!ts_dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ts_dir);
	assert_int_equal(system(cmd), 0);
	ts_dir[0] = '\0';
}

int ts_sanitized(void)
{
	const char *s = getenv("XFDR_SANITIZED");

	return s && *s && strcmp(s, "0");
}

void ts_expect_crash_end(const struct child_result *r, int sig)
{
	if (!ts_sanitized() || (sig != SIGSEGV && sig != SIGBUS)) {
		if (r->signal != sig)
			fail_msg("child ended with status %d (signal %d), expected signal %d; "
				 "stderr:\n%s",
				 r->status, r->signal, sig, r->err);
		return;
	}
	if (r->signal || r->status != 1 || !strstr(r->err, "Sanitizer:DEADLYSIGNAL"))
		fail_msg("child ended with status %d (signal %d), expected the sanitizer's report "
			 "and status 1; stderr:\n%s",
			 r->status, r->signal, r->err);
}

__attribute__((noinline, no_sanitize("null"))) void ts_store_to_null(int value)
{
	static volatile int *volatile null_address;

	*null_address = value;
}

uint32_t ts_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

int ts_group_setup(void **state)
{
	(void)state;
	ts_dir_make();
	return 0;
}

int ts_group_teardown(void **state)
{
	(void)state;
	xfdr_stop();
	ts_dir_remove();
	return 0;
}

void ts_options(struct xfdr_options *o, size_t buffer_size, size_t buffer_max, int mode)
{
	xfdr_stop();
	xfdr_options_default(o);
	o->buffer_size = buffer_size;
	o->buffer_max = buffer_max;
	o->flush_at_exit = 0;
	o->output = ts_dir;
	o->mode = mode;
}

int ts_init_mode(size_t buffer_size, size_t buffer_max, int per_thread_files, int mode)
{
	struct xfdr_options o;

	ts_options(&o, buffer_size, buffer_max, mode);
	o.per_thread_files = per_thread_files;
	return xfdr_init(&o);
}

int ts_init(size_t buffer_size, size_t buffer_max, int per_thread_files)
{
	return ts_init_mode(buffer_size, buffer_max, per_thread_files, XFDR_MODE_BOUNDED);
}

uint8_t *ts_slurp(const char *path, size_t *bytes)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	data = malloc((size_t)n + 1);
	assert_non_null(data);
	assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
	data[n] = 0;
	fclose(f);
	*bytes = (size_t)n;
	return data;
}

uint64_t ts_get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

uint32_t ts_get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

uint16_t ts_get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

int ts_llvm_yaml(const char *path, char **yaml)
{
	const char *tool = getenv("XFDR_LLVM_XRAY");
	char out[256], cmd[1024];
	size_t n;
	int st;

	snprintf(out, sizeof(out), "%sllvm-yaml.%d.txt", ts_dir, getpid());
	snprintf(cmd, sizeof(cmd), "'%s' convert --output-format=yaml '%s' > '%s' 2>&1",
		 tool && *tool ? tool : "llvm-xray", path, out);
	st = system(cmd);
	if (yaml)
		*yaml = (char *)ts_slurp(out, &n);
	unlink(out);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

size_t ts_count(const char *hay, const char *needle)
{
	size_t n = 0;
	const char *p = hay;

	while ((p = strstr(p, needle))) {
		n++;
		p += strlen(needle);
	}
	return n;
}

int ts_dir_entries(const char *dir)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

struct xfdr_trace *ts_open_verified(const char *path)
{
	struct xfdr_trace *t = NULL;
	struct xfdr_error err;

	memset(&err, 0, sizeof(err));
	if (xfdr_trace_open(path, &t, &err) || xfdr_trace_verify(t, &err))
		fail_msg("reader rejects %s: %s", path, err.text);
	return t;
}

const char *ts_map_value(const char *map, const char *key, char *out, size_t out_bytes)
{
	size_t klen = strlen(key);
	const char *p = map;

	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);

		if (len > klen && !strncmp(p, key, klen) && p[klen] == '\t') {
			size_t vlen = len - klen - 1;

			if (vlen >= out_bytes)
				vlen = out_bytes - 1;
			memcpy(out, p + klen + 1, vlen);
			out[vlen] = '\0';
			return out;
		}
		p = eol ? eol + 1 : NULL;
	}
	return NULL;
}

void ts_capture_stderr(void (*fn)(void *), void *arg, char *out, size_t out_bytes)
{
	char path[200];
	int fd, saved;
	ssize_t n;

	snprintf(path, sizeof(path), "%sstderr.%d.txt", ts_dir, getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	fflush(stderr);
	saved = dup(2);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fd, 2), 2);
	fn(arg);
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	n = read(fd, out, out_bytes - 1);
	assert_true(n >= 0);
	out[n] = '\0';
	close(fd);
	unlink(path);
}

const char *ts_field(const char *line, const char *eol, const char *key)
{
	size_t k = strlen(key);
	const char *p = line;

	while ((p = memmem(p, (size_t)(eol - p), key, k))) {
		if (p == line || p[-1] == ' ' || p[-1] == '{')
			return p + k;
		p += k;
	}
	return NULL;
}

const char *ts_next_record(const char *p, const char **eol)
{
	while (p && *p) {
		const char *end = strchr(p, '\n');

		if (!end)
			end = p + strlen(p);
		if (!strncmp(p, "  - { ", 6)) {
			*eol = end;
			return p;
		}
		p = *end ? end + 1 : NULL;
	}
	return NULL;
}

size_t ts_yaml_records(const char *yaml, struct ts_yrec *out, size_t max)
{
	const char *line = strstr(yaml, "records:"), *eol = NULL;
	size_t n = 0;

	for (; (line = ts_next_record(line, &eol)); line = eol) {
		const char *f;
		struct ts_yrec r;

		memset(&r, 0, sizeof(r));
		if ((f = ts_field(line, eol, "func-id: ")))
			r.fid = (unsigned)strtoul(f, NULL, 10);
		if ((f = ts_field(line, eol, "cpu: ")))
			r.cpu = (unsigned)strtoul(f, NULL, 10);
		if ((f = ts_field(line, eol, "thread: ")))
			r.thread = (unsigned)strtoul(f, NULL, 10);
		if ((f = ts_field(line, eol, "tsc: ")))
			r.tsc = strtoull(f, NULL, 10);
		if ((f = ts_field(line, eol, "kind: ")))
			sscanf(f, "%31[^,]", r.kind);
		if ((f = ts_field(line, eol, "args: [ ")))
			sscanf(f, "%127[^]]", r.args);
		if ((f = ts_field(line, eol, "data: ")))
			sscanf(f, "%127[^}]", r.data);
		if (n < max)
			out[n] = r;
		n++;
	}
	return n;
}

void ts_each_event(const char *path, enum xfdr_order order,
		   int (*fn)(const struct xfdr_event *ev, void *arg), void *arg)
{
	struct xfdr_trace *tr = ts_open_verified(path);
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;
	int rc;

	assert_int_equal(xfdr_events_begin(tr, order, &it, &err), 0);
	while ((rc = xfdr_events_next(&it, &ev, &err)) == 1)
		if (fn(&ev, arg))
			break;
	if (rc < 0)
		fail_msg("%s", err.text);
	xfdr_trace_close(tr);
}

void ts_tools_accept(const char *trace)
{
	char *yaml = NULL;

	child_xfdr_ok("verify", trace, NULL);
	if (ts_llvm_yaml(trace, &yaml))
		fail_msg("llvm-xray rejects %s: %.400s", trace, yaml);
	free(yaml);
}

uint32_t ts_seq_fid(uint64_t k)
{
	return (uint32_t)(k / 2 % 1000 + 1);
}

int ts_seq_is_exit(uint64_t k)
{
	return (int)(k & 1);
}

void ts_seq_issue(uint64_t k)
{
	if (ts_seq_is_exit(k))
		xfdr_exit(ts_seq_fid(k));
	else
		xfdr_enter(ts_seq_fid(k));
}

int ts_seq_event(const struct xfdr_event *ev, void *arg)
{
	size_t *n = arg;

	if (ev->type != XFDR_EVENT_FUNCTION)
		return 0;
	if (ev->function_id != ts_seq_fid(*n) || ev->action != (unsigned)ts_seq_is_exit(*n))
		fail_msg("reader event %zu: fid %u action %u, expected %u %u", *n, ev->function_id,
			 ev->action, ts_seq_fid(*n), ts_seq_is_exit(*n));
	(*n)++;
	return 0;
}

size_t ts_seq_reader(const char *path)
{
	size_t n = 0;

	ts_each_event(path, XFDR_ORDER_FILE, ts_seq_event, &n);
	return n;
}

int ts_seq_rec_tsc_cmp(const void *a, const void *b)
{
	const struct ts_seq_rec *x = a, *y = b;

	return x->tsc < y->tsc ? -1 : x->tsc > y->tsc;
}

const char *ts_seq_field(const char *line, const char *eol, const char *key)
{
	const char *p = memmem(line, (size_t)(eol - line), key, strlen(key));

	return p ? p + strlen(key) : NULL;
}

size_t ts_seq_llvm(const char *path, uint64_t max)
{
	struct ts_seq_rec *r = calloc(max + 2, sizeof(*r));
	char *yaml = NULL;
	const char *line, *eol = NULL;
	size_t n = 0, k;

	assert_non_null(r);
	if (ts_llvm_yaml(path, &yaml))
		fail_msg("llvm-xray rejects %s:\n%.2000s", path, yaml ? yaml : "");
	line = strstr(yaml, "records:");
	for (; (line = ts_next_record(line, &eol)); line = eol) {
		const char *f;

		assert_true(n < max + 2);
		if ((f = ts_seq_field(line, eol, "func-id: ")))
			r[n].fid = (unsigned)strtoul(f, NULL, 10);
		if ((f = ts_seq_field(line, eol, "thread: ")))
			r[n].thread = (unsigned)strtoul(f, NULL, 10);
		if ((f = ts_seq_field(line, eol, " tsc: ")))
			r[n].tsc = strtoull(f, NULL, 10);
		if (ts_seq_field(line, eol, "kind: function-exit,"))
			r[n].exit = 1;
		else if (!ts_seq_field(line, eol, "kind: function-enter,"))
			fail_msg("unexpected llvm-xray record: %.*s", (int)(eol - line), line);
		n++;
	}
	qsort(r, n, sizeof(*r), ts_seq_rec_tsc_cmp);
	for (k = 0; k < n; k++)
		if (r[k].fid != ts_seq_fid(k) || r[k].exit != ts_seq_is_exit(k) ||
		    r[k].thread != r[0].thread)
			fail_msg("llvm-xray record %zu by TSC: fid %u exit %d thread %u, expected "
				 "fid %u exit %d",
				 k, r[k].fid, r[k].exit, r[k].thread, ts_seq_fid(k),
				 ts_seq_is_exit(k));
	free(yaml);
	free(r);
	return n;
}
