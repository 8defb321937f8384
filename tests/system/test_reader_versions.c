/*
 * tests/system/test_reader_versions.c - the reader on FDR versions 2 to 5, the files compiler-rt's
 * own FDR runtime writes, with llvm-xray 14 as the oracle.
 *
 *  - A real recording: a program built with clang -fxray-instrument runs compiler-rt's xray-fdr
 *    mode (version 5) in three threads with Entry_Args, custom and typed events. Every event the
 *    reader gives is compared with `llvm-xray convert --output-format=yaml --sort=false` of the
 *    same file (thread, process, kind, function id, TSC, CPU, arguments, payload, event type),
 *    and with what the program did (its pid, payloads, types and arguments).
 *  - Hand-built files of versions 2, 3, 4 and 5, the bytes laid out as compiler-rt writes them
 *    (a 32-bit thread id above 65535, Pid from version 3, the version 4 custom CPU, the version 5
 *    delta-encoded custom event, typed events with a negative delta, NewCPUId, TSCWrap, a thread
 *    with two buffers), compared with llvm-xray the same way and with hand-computed TSCs, CPUs
 *    and pids; the big-endian image of each gives the same events; the thread order is by
 *    (pid, thread id); `xfdr dump` shows the new records.
 *  - Malformed files of versions 2 to 5: `xfdr verify` exits 1 with one exact line naming the
 *    offset, which the encoder (not the reader) knows.
 *  - Every truncation and seeded bit flips of the hand-built files, in exact-size heap copies
 *    (ASan flags any read past them): only cuts at a buffer boundary stay valid, every error is
 *    one line with an offset inside the file. XFDR_FUZZ_ITERATIONS scales the flips.
 */
#include <dirent.h>
#include <inttypes.h>
#include <time.h>

#include "tests/support/runtime_test.h"
#include "tests/support/version_enc.h"

#define TV_MAX_EVENTS 4096

/* ---- events, ours and llvm-xray's, in the terms both share ------------------------------ */

struct vev {
	uint32_t pid, tid;
	char kind[24];
	uint32_t fid; /* function records */
	uint64_t tsc;
	unsigned cpu;
	unsigned type; /* typed events */
	unsigned nargs;
	uint64_t args[4];
	char data[64];
};

struct vevs {
	struct vev v[TV_MAX_EVENTS];
	size_t n;
};

static const char *const fn_kind[] = {"function-enter", "function-exit", "function-tail-exit",
				      "function-enter-arg"};

static void to_vev(const struct xfdr_trace *t, const struct xfdr_event *ev, struct vev *v)
{
	memset(v, 0, sizeof(*v));
	v->pid = ev->pid;
	v->tid = ev->thread_id;
	v->tsc = ev->tsc;
	v->cpu = ev->cpu;
	if (ev->type == XFDR_EVENT_FUNCTION) {
		snprintf(v->kind, sizeof(v->kind), "%s", fn_kind[ev->action]);
		v->fid = ev->function_id;
		v->nargs = ev->arg_count;
		assert_true(v->nargs <= 4);
		for (unsigned i = 0; i < v->nargs; i++)
			v->args[i] = xfdr_event_arg(t, ev, i);
		return;
	}
	snprintf(v->kind, sizeof(v->kind), "%s",
		 ev->type == XFDR_EVENT_TYPED ? "typed-event" : "custom-event");
	if (ev->type == XFDR_EVENT_TYPED)
		v->type = ev->event_type;
	assert_true(ev->payload_bytes < sizeof(v->data));
	memcpy(v->data, ev->payload, ev->payload_bytes);
}

/* The reader's events of an image, in thread order. */
static void our_events(const uint8_t *img, size_t len, struct vevs *out)
{
	struct xfdr_trace *t;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct xfdr_error err;
	int rc;

	out->n = 0;
	if (xfdr_trace_open_memory(img, len, "img", &t, &err) || xfdr_trace_verify(t, &err))
		fail_msg("reader rejects the image: %s", err.text);
	assert_int_equal(xfdr_events_begin(t, XFDR_ORDER_THREAD, &it, &err), 0);
	while ((rc = xfdr_events_next(&it, &ev, &err)) == 1) {
		assert_true(out->n < TV_MAX_EVENTS);
		to_vev(t, &ev, &out->v[out->n++]);
	}
	if (rc < 0)
		fail_msg("%s", err.text);
	xfdr_trace_close(t);
}

/* A YAML scalar as llvm-xray prints it: plain, or single-quoted with '' for '. */
static void yaml_scalar(const char *p, const char *eol, char *out, size_t out_bytes)
{
	size_t n = 0;

	if (*p == '\'') {
		for (p++; p < eol && n + 1 < out_bytes; p++) {
			if (*p == '\'' && p[1] == '\'')
				p++;
			else if (*p == '\'')
				break;
			out[n++] = *p;
		}
	} else {
		/* The record line ends in " }". */
		while (p < eol - 2 && n + 1 < out_bytes)
			out[n++] = *p++;
	}
	out[n] = '\0';
}

/* llvm-xray's records of a file, unsorted (its thread order, each thread's blocks in order). */
static void llvm_events(const char *path, struct vevs *out)
{
	char *argv[] = {(char *)child_llvm_xray(),
			"convert",
			"--output-format=yaml",
			"--sort=false",
			(char *)path,
			NULL};
	struct child_result r;
	const char *line, *eol = NULL, *f;

	child_capture(argv, &r);
	if (r.status)
		fail_msg("llvm-xray rejects %s: %s", path, r.err);
	out->n = 0;
	line = strstr(r.out, "records:");
	assert_non_null(line);
	for (; (line = ts_next_record(line, &eol)); line = eol) {
		struct vev *v;

		assert_true(out->n < TV_MAX_EVENTS);
		v = &out->v[out->n++];
		memset(v, 0, sizeof(*v));
		if ((f = ts_field(line, eol, "kind: ")))
			sscanf(f, "%23[^,]", v->kind);
		if ((f = ts_field(line, eol, "type: ")))
			v->type = (unsigned)strtoul(f, NULL, 10);
		if ((f = ts_field(line, eol, "func-id: ")))
			v->fid = (uint32_t)strtoul(f, NULL, 10);
		if ((f = ts_field(line, eol, "cpu: ")))
			v->cpu = (unsigned)strtoul(f, NULL, 10);
		if ((f = ts_field(line, eol, "thread: ")))
			v->tid = (uint32_t)strtoul(f, NULL, 10);
		if ((f = ts_field(line, eol, "process: ")))
			v->pid = (uint32_t)strtoul(f, NULL, 10);
		if ((f = ts_field(line, eol, "tsc: ")))
			v->tsc = strtoull(f, NULL, 10);
		if ((f = ts_field(line, eol, "args: [ "))) {
			char *end;

			while (v->nargs < 4 && *f != ']') {
				v->args[v->nargs++] = strtoull(f, &end, 10);
				f = end;
				while (*f == ',' || *f == ' ')
					f++;
			}
		}
		if ((f = ts_field(line, eol, "data: ")))
			yaml_scalar(f, eol, v->data, sizeof(v->data));
	}
	child_result_free(&r);
}

static int is_function(const struct vev *v)
{
	return !strncmp(v->kind, "function-", 9);
}

/* Returns the field in which ours and llvm-xray's differ, or NULL. */
static const char *vev_diff(const struct vev *a, const struct vev *y)
{
	if (strcmp(a->kind, y->kind))
		return "kind";
	if (a->tsc != y->tsc)
		return "tsc";
	if (a->cpu != y->cpu)
		return "cpu";
	if (a->pid != y->pid || a->tid != y->tid)
		return "process or thread";
	/* llvm-xray's func-id of an event and type of a function record are left over. */
	if (is_function(a) && a->fid != y->fid)
		return "func-id";
	if (!strcmp(a->kind, "typed-event") && a->type != y->type)
		return "type";
	if (a->nargs != y->nargs || memcmp(a->args, y->args, sizeof(a->args)))
		return "args";
	if (strcmp(a->data, y->data))
		return "data";
	return NULL;
}

/*
 * Every thread's events are the same, in the same order, in ours and llvm-xray's (the threads
 * themselves come in different orders: llvm-xray's is a hash map's).
 */
static void compare_threads(const struct vevs *ours, const struct vevs *llvm)
{
	size_t i, j, k;

	assert_int_equal(ours->n, llvm->n);
	for (i = 0; i < ours->n; i++) {
		const struct vev *a = &ours->v[i];

		if (i && a->pid == ours->v[i - 1].pid && a->tid == ours->v[i - 1].tid)
			continue;
		/* The k-th event of this thread in each list. */
		for (j = i, k = 0; k < llvm->n; k++) {
			const struct vev *y = &llvm->v[k];
			const char *why;

			if (y->pid != a->pid || y->tid != a->tid)
				continue;
			assert_true(j < ours->n);
			why = vev_diff(&ours->v[j], y);
			if (why || ours->v[j].pid != a->pid || ours->v[j].tid != a->tid)
				fail_msg(
				    "thread %u/%u, event %zu: %s differs: ours %s fid %u tsc "
				    "%" PRIu64
				    " cpu %u type %u data '%s', llvm-xray %s fid %u tsc %" PRIu64
				    " cpu %u type %u data '%s'",
				    a->pid, a->tid, j - i, why ? why : "thread", ours->v[j].kind,
				    ours->v[j].fid, ours->v[j].tsc, ours->v[j].cpu, ours->v[j].type,
				    ours->v[j].data, y->kind, y->fid, y->tsc, y->cpu, y->type,
				    y->data);
			j++;
		}
		/* llvm-xray has exactly as many as ours. */
		if (j < ours->n)
			assert_false(ours->v[j].pid == a->pid && ours->v[j].tid == a->tid);
	}
}

static struct vevs ours_v, llvm_v, other_v;

static void compare_with_llvm(const char *path)
{
	size_t len;
	uint8_t *img = ts_slurp(path, &len);

	our_events(img, len, &ours_v);
	free(img);
	llvm_events(path, &llvm_v);
	compare_threads(&ours_v, &llvm_v);
}

/* ---- 1. a real recording of compiler-rt's FDR mode ----------------------------------------- */

static const char prog_src[] =
    "#define _GNU_SOURCE\n"
    "#include <pthread.h>\n"
    "#include <sched.h>\n"
    "#include <stdio.h>\n"
    "int __xray_log_select_mode(const char *mode);\n"
    "int __xray_log_init_mode(const char *mode, const char *config);\n"
    "int __xray_patch(void);\n"
    "int __xray_log_finalize(void);\n"
    "int __xray_log_flushLog(void);\n"
    "static volatile int sink;\n"
    "#define TRACED __attribute__((noinline, xray_always_instrument))\n"
    "TRACED void leaf(int x) { sink = x; }\n"
    "__attribute__((noinline, xray_always_instrument, xray_log_args(1))) void with_arg(int x)\n"
    "{ leaf(x); sink = x + 1; }\n"
    "TRACED void custom(int k)\n"
    "{ char b[32]; int n = snprintf(b, sizeof(b), \"custom-%d\", k);\n"
    "  __xray_customevent(b, (unsigned long)n); sink = n; }\n"
    /*
     * clang 14's typed-event sled pushes the registers it changes and calls the runtime, which
     * needs a 16-byte aligned stack: with three pushes that holds where rsp is 8 mod 16, in a
     * function without a frame; type in the second argument makes the sled change all three.
     */
    "TRACED void typed(int unused, unsigned short type)\n"
    "{ __xray_typedevent(type, \"typed-event\", 11); }\n"
    "TRACED void *work(void *arg)\n"
    "{ int k = (int)(long)arg, i; cpu_set_t one;\n"
    /* One CPU: no NewCPUId in the tail that compiler-rt 14 cuts off (see test_real_v5). */
    "  CPU_ZERO(&one); CPU_SET(sched_getcpu(), &one);\n"
    "  sched_setaffinity(0, sizeof(one), &one);\n"
    "  for (i = 0; i < 3; i++) { with_arg(10 * k + i); custom(k);\n"
    "    typed(0, (unsigned short)(100 + k)); }\n"
    "  for (i = 0; i < 8; i++) leaf(i);\n"
    "  return 0; }\n"
    "#ifndef NTHREADS\n"
    "#define NTHREADS 2\n"
    "#endif\n"
    "int main(void)\n"
    "{ pthread_t th[2]; long i;\n"
    "  if (__xray_log_select_mode(\"xray-fdr\") != 0 ||\n"
    "      __xray_log_init_mode(\"xray-fdr\",\n"
    "          \"func_duration_threshold_us=0:grace_period_ms=1:buffer_size=16384:\"\n"
    "          \"buffer_max=16\") != 2) { fputs(\"xray-fdr: no init\\n\", stderr); return 2; }\n"
    "  if (__xray_patch() != 1) { fputs(\"xray: no patch\\n\", stderr); return 3; }\n"
    "  for (i = 0; i < NTHREADS; i++) pthread_create(&th[i], 0, work, (void *)(i + 1));\n"
    "  for (i = 0; i < NTHREADS; i++) pthread_join(th[i], 0);\n"
    "  work((void *)9);\n"
    "  if (__xray_log_finalize() != 4 || __xray_log_flushLog() != 2) {\n"
    "    fputs(\"xray-fdr: no flush\\n\", stderr); return 4; }\n"
    "  puts(\"done\"); return 0; }\n";

/* The one file in ts_dir whose name starts with prefix. */
static void find_prefixed(const char *prefix, char *out, size_t out_bytes)
{
	DIR *d = opendir(ts_dir);
	struct dirent *e;
	int found = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, prefix, strlen(prefix))) {
			snprintf(out, out_bytes, "%s%s", ts_dir, e->d_name);
			found++;
		}
	closedir(d);
	if (found != 1)
		fail_msg("%d files named %s* in %s, expected 1", found, prefix, ts_dir);
}

static void run_ok(char *const argv[], char *const env[], struct child_result *r)
{
	struct child_spec spec = {
	    .argv = argv,
	    .env_add = env,
	    .out = {.to = CHILD_CAPTURE},
	    .err = {.to = CHILD_CAPTURE},
	    .timeout_s = 120,
	};

	child_run(&spec, r);
	if (r->status)
		fail_msg("%s exited %d: %s%s", argv[0], r->status, r->out, r->err);
}

/*
 * `xfdr VERB --no-map [XFDR_OPT] path` and `llvm-xray VERB [LLVM_OPTS...] path` print the same
 * bytes. llvm_opts: up to two options, NULL-terminated.
 */
static void same_output(const char *path, const char *xfdr_verb, const char *xfdr_opt,
			const char *llvm_verb, const char *const *llvm_opts)
{
	char *argv[6] = {(char *)child_llvm_xray(), (char *)llvm_verb};
	struct child_result ours, theirs;
	int n = 2;

	while (llvm_opts && *llvm_opts && n < 4)
		argv[n++] = (char *)*llvm_opts++;
	argv[n++] = (char *)path;
	argv[n] = NULL;
	child_capture(argv, &theirs);
	if (theirs.status)
		fail_msg("llvm-xray %s %s: %s", llvm_verb, path, theirs.err);
	child_xfdr(&ours, xfdr_verb, "--no-map", xfdr_opt ? xfdr_opt : path, xfdr_opt ? path : NULL,
		   NULL);
	assert_int_equal(ours.status, 0);
	if (ours.out_len != theirs.out_len || memcmp(ours.out, theirs.out, ours.out_len))
		fail_msg("xfdr %s %s differs from llvm-xray's:\n%s\n---- llvm-xray:\n%s", xfdr_verb,
			 xfdr_opt ? xfdr_opt : "", ours.out, theirs.out);
	child_result_free(&ours);
	child_result_free(&theirs);
}

/* Build prog_src with the extra -D flag, run it, and put the trace's path into trace. */
static pid_t record_real(const char *tag, const char *define, char *trace, size_t trace_bytes)
{
	char src[256], prog[256], opts[300], prefix[64];
	char *cc[] = {"clang", "-O2", "-fxray-instrument", "-pthread", (char *)define, src, "-o",
		      prog,    NULL};
	char *run[] = {prog, NULL};
	char *env[] = {opts, NULL};
	struct child_result r;
	pid_t pid;

	snprintf(src, sizeof(src), "%sfdr_prog.c", ts_dir);
	snprintf(prog, sizeof(prog), "%sfdr_prog_%s", ts_dir, tag);
	snprintf(prefix, sizeof(prefix), "fdr-%s-log.", tag);
	snprintf(opts, sizeof(opts),
		 "XRAY_OPTIONS=patch_premain=false verbosity=0 xray_logfile_base=%s%s", ts_dir,
		 prefix);
	{
		FILE *f = fopen(src, "w");

		assert_non_null(f);
		assert_int_equal(fputs(prog_src, f) >= 0, 1);
		assert_int_equal(fclose(f), 0);
	}
	run_ok(cc, NULL, &r);
	child_result_free(&r);
	run_ok(run, env, &r);
	pid = r.pid;
	child_result_free(&r);
	find_prefixed(prefix, trace, trace_bytes);
	return pid;
}

/*
 * compiler-rt (LLVM 14) adds a TypedEventMarker's payload to its buffer's extents but not the
 * 16-byte marker, and flush writes only the counted bytes: each buffer loses 16 bytes of its end
 * per typed event. Both readers then refuse a buffer whose new end splits a record, so the
 * program ends every thread with plain calls (8-byte records, one CPU): what is cut is whole
 * records, and both readers lose the same ones.
 */
static void test_real_v5(void **state)
{
	char trace[512];
	struct xfdr_trace *t;
	uint64_t threads, i;
	pid_t pid;

	(void)state;
	pid = record_real("mt", "-DNTHREADS=2", trace, sizeof(trace));
	child_xfdr_ok("verify", trace, NULL);
	compare_with_llvm(trace);
	/* The verbs too: convert byte for byte, sorted and in llvm-xray's thread order. */
	same_output(trace, "convert", NULL, "convert",
		    (const char *const[]){"--output-format=yaml", NULL});
	same_output(trace, "convert", "--sort=false", "convert",
		    (const char *const[]){"--output-format=yaml", "--sort=false", NULL});

	/* What the program did: three threads of its process, each with its k. */
	t = ts_open_verified(trace);
	assert_int_equal(xfdr_trace_header(t)->version, 5);
	assert_int_equal(xfdr_trace_threads(t, &threads, NULL), 0);
	assert_int_equal(threads, 3);
	for (i = 0; i < threads; i++) {
		struct xfdr_thread_info info;
		struct xfdr_event_iter it;
		struct xfdr_event ev;
		unsigned customs = 0, typeds = 0, with_args = 0, k = 0;
		uint64_t args[3];
		char want[16];

		assert_int_equal(xfdr_trace_thread(t, i, &info), 0);
		assert_int_equal(info.pid, (uint32_t)pid);
		assert_int_equal(xfdr_events_begin_thread(t, i, &it, NULL), 0);
		while (xfdr_events_next(&it, &ev, NULL) == 1) {
			assert_int_equal(ev.pid, (uint32_t)pid);
			assert_int_equal(ev.thread_id, info.thread_id);
			if (ev.type == XFDR_EVENT_CUSTOM) {
				assert_true(ev.payload_bytes == 8 &&
					    !memcmp(ev.payload, "custom-", 7));
				if (!customs++)
					k = (unsigned)(ev.payload[7] - '0');
				snprintf(want, sizeof(want), "custom-%u", k);
				assert_memory_equal(ev.payload, want, 8);
			} else if (ev.type == XFDR_EVENT_TYPED) {
				assert_int_equal(ev.payload_bytes, 11);
				assert_memory_equal(ev.payload, "typed-event", 11);
				assert_int_equal(ev.event_type, 100 + k); /* custom(k) came first */
				typeds++;
			} else if (ev.action == XFDR_FN_ENTER_ARGS) {
				assert_int_equal(ev.arg_count, 1);
				assert_true(with_args < 3);
				args[with_args++] = xfdr_event_arg(t, &ev, 0);
			}
		}
		assert_int_equal(customs, 3);
		assert_int_equal(typeds, 3);
		assert_int_equal(with_args, 3);
		for (unsigned a = 0; a < 3; a++)
			assert_int_equal(args[a], 10 * k + a);
		assert_true(k == 1 || k == 2 || k == 9);
	}
	xfdr_trace_close(t);
}

/*
 * `xfdr account` on compiler-rt's files: equal to `llvm-xray account` on a one-thread run, which
 * llvm-xray can account; on the three-thread run llvm-xray usually fails (its one pass over all
 * threads meets a TSC below the first one it saw; test_cli_account proves it on a file made to
 * fail) and xfdr accounts every thread, or both agree.
 */
static void test_real_v5_account(void **state)
{
	char *argv[] = {(char *)child_llvm_xray(), "account", NULL, NULL};
	char trace[512];
	struct child_result r;

	(void)state;
	record_real("one", "-DNTHREADS=0", trace, sizeof(trace));
	same_output(trace, "account", NULL, "account", NULL);
	same_output(trace, "account", "--format=csv", "account",
		    (const char *const[]){"-format=csv", NULL});
	same_output(trace, "account", "--sort=sum", "account",
		    (const char *const[]){"-sort=sum", NULL});

	record_real("mt2", "-DNTHREADS=2", trace, sizeof(trace));
	argv[2] = trace;
	child_capture(argv, &r);
	/* Whether llvm-xray fails depends on how the threads' clocks interleave. */
	if (r.status == 0)
		same_output(trace, "account", NULL, "account", NULL);
	child_result_free(&r);
	child_xfdr(&r, "account", "--no-map", trace, NULL);
	assert_int_equal(r.status, 0);
	/* with_arg: 3 calls on each of the 3 threads. */
	assert_non_null(strstr(r.out, "Functions with latencies: 4"));
	assert_non_null(strstr(r.out, "        2          9 ["));
	child_result_free(&r);
}

/* ---- 2. hand-built versions 2 to 5 ---------------------------------------------------------- */

static const char *write_img(const char *name, const struct enc *e)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", ts_dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(e->b, 1, e->len, f), e->len);
	assert_int_equal(fclose(f), 0);
	return path;
}

static const struct vev *find_kind(const struct vevs *v, uint32_t tid, const char *kind,
				   unsigned nth)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->v[i].tid == tid && !strcmp(v->v[i].kind, kind) && !nth--)
			return &v->v[i];
	fail_msg("no %s of thread %u", kind, tid);
	return NULL;
}

static void test_hand_built_versions(void **state)
{
	static struct enc le, be;
	char name[32];

	(void)state;
	for (unsigned version = 2; version <= 5; version++) {
		const struct vev *v;
		uint32_t pid_a = version == 2 ? 70000 : version >= 3 ? 4242 : 0;

		build_sample(&le, version, 0, NULL);
		snprintf(name, sizeof(name), "v%u.xray", version);
		child_xfdr_ok("verify", write_img(name, &le), NULL);
		compare_with_llvm(write_img(name, &le));
		same_output(write_img(name, &le), "convert", NULL, "convert",
			    (const char *const[]){"--output-format=yaml", NULL});
		same_output(write_img(name, &le), "convert", "--sort=false", "convert",
			    (const char *const[]){"--output-format=yaml", "--sort=false", NULL});

		/* Hand-computed, whatever llvm-xray says. */
		assert_int_equal(ours_v.n, 6 + 3 + 2);
		v = find_kind(&ours_v, 70000, "function-enter-arg", 0);
		assert_int_equal(v->tsc, 1015);
		assert_int_equal(v->nargs, 2);
		assert_int_equal(v->args[1], 43);
		assert_int_equal(v->pid, pid_a);
		v = find_kind(&ours_v, 70000, "custom-event", 0);
		assert_int_equal(v->tsc, version >= 5 ? 1022 : 999);
		assert_int_equal(v->cpu, version == 4 ? 3 : version >= 5 ? 2 : 0);
		assert_string_equal(v->data, "hello-a");
		v = find_kind(&ours_v, 70000, "typed-event", 0);
		assert_int_equal(v->tsc, version >= 5 ? 1025 : 1018);
		assert_int_equal(v->type, 77);
		v = find_kind(&ours_v, 70000, "function-exit", 1);
		assert_int_equal(v->tsc, (1ull << 32) + 1);
		assert_int_equal(v->cpu, 5);
		v = find_kind(&ours_v, 12, "typed-event", 0);
		assert_int_equal(v->tsc, 4999);
		assert_int_equal(v->pid, version == 2 ? 12 : 4242);
		v = find_kind(&ours_v, 12, "function-tail-exit", 0);
		assert_int_equal(v->tsc, 5001);
		v = find_kind(&ours_v, 70000, "function-exit", 2);
		assert_int_equal(v->tsc, 3006);

		/* The big-endian image says the same. */
		build_sample(&be, version, 1, NULL);
		assert_int_equal(be.len, le.len);
		our_events(be.b, be.len, &other_v);
		assert_int_equal(other_v.n, ours_v.n);
		for (size_t i = 0; i < ours_v.n; i++)
			assert_null(vev_diff(&other_v.v[i], &ours_v.v[i]));
	}
}

/* Threads by (pid, thread id), each thread's buffers by WallClockTime. */
static void test_thread_order(void **state)
{
	static struct enc e;
	static const uint32_t want[][2] = {{3, 2}, {3, 5}, {9, 1}};
	struct xfdr_trace *t;
	struct xfdr_thread_info info;
	struct xfdr_error err;
	uint64_t n;
	size_t at;

	(void)state;
	e_header(&e, 3, 0);
	at = e_buffer(&e, 1, 9, 1, 1, 0, 100);
	e_fn(&e, XFDR_FN_ENTER, 1, 1);
	e_extents_end(&e, at);
	at = e_buffer(&e, 5, 3, 1, 1, 0, 100);
	e_fn(&e, XFDR_FN_ENTER, 2, 1);
	e_extents_end(&e, at);
	at = e_buffer(&e, 2, 3, 1, 1, 0, 100);
	e_fn(&e, XFDR_FN_ENTER, 3, 1);
	e_extents_end(&e, at);
	compare_with_llvm(write_img("pids.xray", &e));
	assert_int_equal(xfdr_trace_open_memory(e.b, e.len, "pids", &t, &err), 0);
	assert_int_equal(xfdr_trace_buffer_count(t), 3);
	assert_int_equal(xfdr_trace_threads(t, &n, &err), 0);
	assert_int_equal(n, 3);
	for (uint64_t i = 0; i < n; i++) {
		assert_int_equal(xfdr_trace_thread(t, i, &info), 0);
		assert_int_equal(info.pid, want[i][0]);
		assert_int_equal(info.thread_id, want[i][1]);
		assert_int_equal(info.buffers, 1);
	}
	for (size_t i = 0; i < ours_v.n; i++) {
		assert_int_equal(ours_v.v[i].pid, want[i][0]);
		assert_int_equal(ours_v.v[i].tid, want[i][1]);
	}
	xfdr_trace_close(t);

	/* Version 2: the pid is the thread id (llvm-xray's), a thread's buffers by time. */
	build_sample(&e, 2, 0, NULL);
	assert_int_equal(xfdr_trace_open_memory(e.b, e.len, "v2", &t, &err), 0);
	assert_int_equal(xfdr_trace_threads(t, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(xfdr_trace_thread(t, 0, &info), 0);
	assert_int_equal(info.pid, 12);
	assert_int_equal(info.thread_id, 12);
	assert_int_equal(xfdr_trace_thread(t, 1, &info), 0);
	assert_int_equal(info.pid, 70000);
	assert_int_equal(info.buffers, 2);
	assert_int_equal(info.first_buffer, 0);
	xfdr_trace_close(t);
}

static void test_dump_new_records(void **state)
{
	static struct enc e;
	struct sample_offsets o;
	struct child_result r;
	char want[128];

	(void)state;
	build_sample(&e, 5, 0, &o);
	assert_int_equal(child_xfdr(&r, "dump", "--no-map", write_img("dump.xray", &e), NULL), 0);
	assert_non_null(strstr(r.out, "header: version=5 "));
	assert_non_null(strstr(r.out, " buffers=3\n"));
	snprintf(want, sizeof(want), "\n%-10zu 0      BufferExtents     bytes=%zu\n", o.buf[0],
		 o.buf[1] - o.buf[0] - 16);
	assert_non_null(strstr(r.out, want));
	assert_non_null(strstr(r.out, " NewBuffer         thread=70000\n"));
	assert_non_null(strstr(r.out, " Pid               pid=4242\n"));
	snprintf(want, sizeof(want), "\n%-10zu 0      CustomEventMarker size=7 delta=7 tsc=1022 ",
		 o.custom);
	assert_non_null(strstr(r.out, want));
	snprintf(want, sizeof(want),
		 "\n%-10zu 1      TypedEventMarker  size=3 type=5 delta=-2 tsc=4999 data=6e6567 "
		 "text=\"neg\"\n",
		 o.typed_neg);
	assert_non_null(strstr(r.out, want));
	child_result_free(&r);

	build_sample(&e, 4, 0, &o);
	assert_int_equal(child_xfdr(&r, "dump", "--no-map", write_img("dump4.xray", &e), NULL), 0);
	snprintf(want, sizeof(want), "\n%-10zu 0      CustomEventMarker size=7 tsc=999 cpu=3 ",
		 o.custom);
	assert_non_null(strstr(r.out, want));
	child_result_free(&r);
}

/* ---- 3. malformed files ------------------------------------------------------------------- */

/* `xfdr verify` refuses the image: exit 1, exactly this line (after "PATH: ") on stderr. */
static void expect_refused(const struct enc *e, size_t offset, const char *text)
{
	const char *path = write_img("bad.xray", e);
	struct child_result r;
	char want[1024];
	struct xfdr_trace *t;
	struct xfdr_error err;
	int rc;

	snprintf(want, sizeof(want), "%s: offset %zu: %s\n", path, offset, text);
	rc = child_xfdr(&r, "verify", path, NULL);
	if (rc != 1 || strcmp(r.err, want))
		fail_msg("xfdr verify: status %d, stderr [%s], expected 1 and [%s]", rc, r.err,
			 want);
	child_result_free(&r);
	/* The library says the same, with the offset in err.offset. */
	rc = xfdr_trace_open_memory(e->b, e->len, path, &t, &err);
	if (!rc) {
		rc = xfdr_trace_verify(t, &err);
		xfdr_trace_close(t);
	}
	assert_int_equal(rc, -1);
	assert_int_equal(err.offset, offset);
}

/* A version `v` file whose one buffer has the preamble and Entry 1 +1. */
static size_t small(struct enc *e, unsigned version)
{
	e_header(e, version, 0);
	return e_buffer(e, 7, 77, 1, 1, 0, 100);
}

static void test_malformed(void **state)
{
	static struct enc e;
	size_t at, bad;
	char text[256];

	(void)state;
	/* Version 6 does not exist. */
	small(&e, 5);
	e.b[0] = 6;
	expect_refused(&e, 0,
		       "expected version 1 to 5 (bytes 0N 00 or 00 0N), found version 6 (bytes 06 "
		       "00)");

	/* EndOfBuffer is version 1's: versions 2+ end buffers by their extents. */
	at = small(&e, 2);
	e_fn(&e, XFDR_FN_ENTER, 1, 1);
	bad = e_md(&e, XFDR_MD_END_OF_BUFFER);
	e_end(&e, bad);
	e_extents_end(&e, at);
	expect_refused(&e, bad,
		       "expected NewCPUId, TSCWrap, Function, CustomEventMarker, TypedEventMarker "
		       "or CallArgument in the body of buffer 0, found EndOfBuffer record");

	/* Version 3: Pid right after WallClockTime. */
	e_header(&e, 3, 0);
	e.version = 2; /* write a version 2 preamble under a version 3 header */
	at = e_buffer(&e, 7, 0, 1, 1, 0, 100);
	e_fn(&e, XFDR_FN_ENTER, 1, 1);
	e_fn(&e, XFDR_FN_EXIT, 1, 1);
	e_extents_end(&e, at);
	expect_refused(&e, at + 48, "expected Pid after WallClockTime, found NewCPUId record");

	/* Version 2 has no Pid record. */
	e_header(&e, 2, 0);
	e.version = 3;
	at = e_buffer(&e, 7, 77, 1, 1, 0, 100);
	e_extents_end(&e, at);
	expect_refused(&e, at + 48,
		       "expected a metadata record kind 0-8 (NewBuffer .. TypedEventMarker; "
		       "version 2 has no Pid), found kind 9");

	/* A count past the end of the file, and one below the preamble. */
	at = small(&e, 5);
	e_fn(&e, XFDR_FN_ENTER, 1, 1);
	e_extents_end(&e, at);
	e.b[at + 1] += 8;
	snprintf(text, sizeof(text),
		 "expected a BufferExtents count of at most %zu bytes (the rest of the file), "
		 "found %zu",
		 e.len - at - 16, e.len - at - 8);
	expect_refused(&e, at, text);
	e.b[at + 1] = 48;
	expect_refused(&e, at,
		       "expected a BufferExtents count of at least 64 bytes (NewBuffer, "
		       "WallClockTime, Pid, NewCPUId), found 48");

	/* A count 16 bytes short: the next buffer would start on the Exit record. */
	at = small(&e, 4);
	e_fn(&e, XFDR_FN_ENTER, 1, 1);
	bad = e_fn(&e, XFDR_FN_EXIT, 1, 1);
	e_fn(&e, XFDR_FN_EXIT, 2, 1);
	e_extents_end(&e, at);
	e.b[at + 1] -= 16;
	expect_refused(&e, bad,
		       "expected BufferExtents at the start of buffer 1, found Function record "
		       "(Exit)");

	/*
	 * What compiler-rt 14 writes after a typed event: a count that ends inside a record (and
	 * the bytes it did not count left out of the file), then the next buffer.
	 */
	at = small(&e, 5);
	e_typed(&e, "ty", 1, 3);
	bad = e_fn(&e, XFDR_FN_EXIT, 1, 1);
	e.len -= 6;
	e_extents_end(&e, at);
	{
		size_t end = e.len, next = e_buffer(&e, 8, 77, 1, 2, 0, 100);

		e_fn(&e, XFDR_FN_ENTER, 1, 1);
		e_extents_end(&e, next);
		snprintf(text, sizeof(text),
			 "expected 8 bytes for Function record (Exit), found 2 before the end of "
			 "the buffer at offset %zu",
			 end);
	}
	expect_refused(&e, bad, text);

	/* Payload sizes: positive, and inside the buffer. */
	at = small(&e, 4);
	bad = e_custom(&e, "", 5, 0);
	e_fn(&e, XFDR_FN_ENTER, 1, 1);
	e_extents_end(&e, at);
	expect_refused(&e, bad,
		       "expected a CustomEventMarker payload size of 1 to 2147483647 bytes, found "
		       "0");
	at = small(&e, 5);
	bad = e_typed(&e, "abcd", 1, 3);
	e.len -= 3;
	e_extents_end(&e, at);
	snprintf(text, sizeof(text),
		 "expected 20 bytes for a TypedEventMarker and its 4-byte payload, found 17 "
		 "before the end of the buffer at offset %zu",
		 e.len);
	expect_refused(&e, bad, text);

	/* Preamble records in the body, and a preamble out of order. */
	at = small(&e, 5);
	e_fn(&e, XFDR_FN_ENTER, 1, 1);
	bad = e_md(&e, XFDR_MD_PID);
	e_int(&e, 5, 4);
	e_end(&e, bad);
	e_extents_end(&e, at);
	expect_refused(&e, bad,
		       "expected NewCPUId, TSCWrap, Function, CustomEventMarker, TypedEventMarker "
		       "or CallArgument in the body of buffer 0, found Pid record");
	at = small(&e, 3);
	bad = e_extents(&e);
	e_extents_end(&e, at);
	expect_refused(&e, bad,
		       "expected NewCPUId, TSCWrap, Function, CustomEventMarker, TypedEventMarker "
		       "or CallArgument in the body of buffer 0, found BufferExtents record");
	e_header(&e, 5, 0);
	at = e_extents(&e);
	bad = e_md(&e, XFDR_MD_WALL_CLOCK_TIME);
	e_end(&e, bad);
	for (int i = 0; i < 3; i++)
		e_end(&e, e_md(&e, XFDR_MD_TSC_WRAP));
	e_extents_end(&e, at);
	expect_refused(&e, bad,
		       "expected NewBuffer after BufferExtents, found WallClockTime record");

	/* CallArgument only after Entry_Args, as in version 1; kinds 10+ exist in no version. */
	at = small(&e, 5);
	e_fn(&e, XFDR_FN_ENTER, 1, 1);
	bad = e_arg(&e, 1);
	e_extents_end(&e, at);
	expect_refused(&e, bad,
		       "expected CallArgument only after Function record (Entry_Args) or "
		       "CallArgument, found CallArgument after Function record (Entry)");
	at = small(&e, 5);
	bad = e_md(&e, 10);
	e_end(&e, bad);
	e_extents_end(&e, at);
	expect_refused(&e, bad,
		       "expected a metadata record kind 0-9 (NewBuffer .. Pid), found kind 10");

	/* A file that ends inside a BufferExtents record. */
	build_sample(&e, 2, 0, NULL);
	at = e.len;
	e_extents(&e);
	e.len -= 6;
	expect_refused(&e, at,
		       "expected a 16-byte BufferExtents record at the start of buffer 3, found 10 "
		       "bytes before the end of the file");
}

/* ---- 4. truncations and bit flips ---------------------------------------------------------- */

/* Open, verify and walk an exact-size copy; returns 1 if valid, 0 (message checked) if not. */
static int exercise(const uint8_t *bytes, size_t len, uint64_t *bad_offset)
{
	uint8_t *copy = malloc(len ? len : 1);
	struct xfdr_trace *t;
	struct xfdr_error err;
	struct xfdr_record_cursor c;
	struct xfdr_record r;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	uint64_t records = 0;
	int rc, valid = 0;
	char prefix[64];

	assert_non_null(copy);
	memcpy(copy, bytes, len);
	memset(&err, 0, sizeof(err));
	rc = xfdr_trace_open_memory(copy, len, "f", &t, &err);
	if (!rc) {
		xfdr_records_begin(t, &c);
		while ((rc = xfdr_records_next(&c, &r, &err)) == 1) {
			assert_true(r.offset + r.size <= len);
			if (r.payload)
				assert_true(r.payload + r.payload_bytes <= copy + len);
			assert_true(++records <= len / 8);
		}
		if (!rc) {
			assert_int_equal(xfdr_trace_verify(t, &err), 0);
			for (int order = XFDR_ORDER_FILE; order <= XFDR_ORDER_THREAD; order++) {
				assert_int_equal(xfdr_events_begin(t, order, &it, &err), 0);
				while ((rc = xfdr_events_next(&it, &ev, &err)) == 1) {
					if (ev.payload)
						assert_true(ev.payload + ev.payload_bytes <=
							    copy + len);
					for (uint32_t i = 0; i < ev.arg_count; i++)
						(void)xfdr_event_arg(t, &ev, i);
				}
				assert_int_equal(rc, 0);
			}
			valid = 1;
		} else {
			assert_int_equal(xfdr_trace_verify(t, NULL), -1);
		}
		xfdr_trace_close(t);
	}
	if (!valid) {
		snprintf(prefix, sizeof(prefix), "f: offset %" PRIu64 ": expected ", err.offset);
		if (strncmp(err.text, prefix, strlen(prefix)) || !strstr(err.text, ", found ") ||
		    strchr(err.text, '\n'))
			fail_msg("bad message: %s", err.text);
		assert_true(err.offset < (len ? len : 1));
		*bad_offset = err.offset;
	}
	free(copy);
	return valid;
}

static uint64_t rng;

static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void test_truncations_and_flips(void **state)
{
	static struct enc e;
	struct sample_offsets o;
	const char *s = getenv("XFDR_FUZZ_ITERATIONS");
	uint64_t iters = s && strtoull(s, NULL, 0) ? strtoull(s, NULL, 0) : 3000, bad, n = 0;
	const char *seed = getenv("XFDR_FUZZ_SEED");

	(void)state;
	rng = seed ? strtoull(seed, NULL, 0) : (uint64_t)time(NULL);
	print_message("seed %llu (replay with XFDR_FUZZ_SEED)\n", (unsigned long long)rng);
	for (unsigned version = 2; version <= 5; version++)
		for (int big = 0; big <= 1; big++) {
			build_sample(&e, version, big, &o);
			for (size_t len = 0; len <= e.len; len++) {
				int boundary =
				    len == 32 || len == o.buf[1] || len == o.buf[2] || len == e.len;

				if (exercise(e.b, len, &bad)) {
					assert_true(boundary);
					continue;
				}
				assert_false(boundary);
				/* A cut buffer is refused where it starts (or in the header). */
				assert_int_equal(bad, len < 32	       ? 0
						      : len < o.buf[1] ? 32
						      : len < o.buf[2] ? o.buf[1]
								       : o.buf[2]);
			}
		}
	for (uint64_t i = 0; i < iters; i++) {
		uint8_t m[sizeof(e.b)];
		int flips = 1 + (int)(rnd() % 4);

		build_sample(&e, 2 + (unsigned)(i % 4), (int)(i / 4 % 2), &o);
		memcpy(m, e.b, e.len);
		while (flips--) {
			uint64_t bit = rnd() % (e.len * 8);

			m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
		n += exercise(m, e.len, &bad);
	}
	print_message("%llu of %llu flipped files still valid\n", (unsigned long long)n,
		      (unsigned long long)iters);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_real_v5),
	    cmocka_unit_test(test_real_v5_account),
	    cmocka_unit_test(test_hand_built_versions),
	    cmocka_unit_test(test_thread_order),
	    cmocka_unit_test(test_dump_new_records),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_truncations_and_flips),
	};

	return cmocka_run_group_tests(tests, ts_group_setup, ts_group_teardown);
}
