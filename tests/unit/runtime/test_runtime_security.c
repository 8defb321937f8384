/*
 * tests/unit/runtime/test_runtime_security.c - what the runtime may write, where, with which mode,
 * and whom it obeys (issue 14).
 *
 * What is checked:
 *   - planted links: a symbolic link at every name a flush or an init can predict (process
 *     trace, its .part, its .xray.map and that one's .part; the per-thread .map, its .part,
 *     the thread files and their .part; the backing=file live .xray, .xray.pool, .xray.map and
 *     .xray.map.tmp), leading to a victim file or to nothing. The victim keeps its bytes, its
 *     mode and its single name; nothing appears where a dangling link leads; a planted link is
 *     still the same link, where it was or where it was moved aside to. A flush takes the next
 *     free <n> (the path xfdr_flush returns, counted from 0 in a fresh process), or a thread
 *     file fails alone with its one stderr line; a live map found alone is left and reported;
 *   - modes: every created file (trace, .map, per-thread, live files) has exactly the mode
 *     asked for, 0600 by default, whatever the umask (022, 0, 077); file_mode parsing by
 *     xfdr_options_set(), xfdr_init() and XFDR_OPTIONS, good and bad values;
 *   - set-user-ID: tests/e2e/setuid_prog.c, installed set-user-ID root and run as nobody
 *     through setpriv, ignores the XFDR_OPTIONS of its caller (one stderr line, nothing in the
 *     directory they name) and writes where its own xfdr_init() says, a trace root owns, mode
 *     0600, that `xfdr verify` and llvm-xray accept; run by root itself, the same environment
 *     is obeyed (so the check can fail). Skipped, with a line saying why, when the test is not
 *     root, has no setpriv, or the set-user-ID bit gives no euid 0 (nosuid mount).
 *
 * The planted-link scenarios run in a child (this binary again, "--child SCENARIO DIR"): its
 * <n> starts at 0, it plants its names with its own pid, and its stderr is captured whole.
 */
#include <dirent.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <sys/statvfs.h>

#include "tests/support/child.h"
#include "tests/support/runtime_test.h"

extern char *program_invocation_short_name;

#define CHILD_NAME "test_runtime_security" /* argv[0] of the child: its file names */
#define VICTIM_TEXT "a file the traced program may write; xfdr must never touch it\n"
#define VICTIM_MODE 0640
#define EEXIST_LINE                                                                                \
	": EEXIST (file exists): the name or its .part is taken by a file or link this flush "     \
	"did not make, left as it is; lost "
#define IGNORED_LINE                                                                               \
	"xfdr: XFDR_OPTIONS ignored: this program runs with elevated privileges (set-user-ID, "    \
	"set-group-ID or file capabilities); its own options apply\n"

enum {
	FID = 3,
	THREAD_FID = 30, /* + thread index */
	THREADS = 4,
	PATH_BYTES = PATH_MAX,
};

/* A link the child plants: at "<prefix>-<pid><tail>", to the victim or to nothing. */
struct plant {
	const char *tail;
	int dangling;
};

/* Process mode: <n> 0 to 7 are taken, each by one name; the flush gets 8. */
static const struct plant process_plants[] = {
    {"-0.xray", 0}, {"-1.xray.part", 0}, {"-2.xray.map", 0}, {"-3.xray.map.part", 0},
    {"-4.xray", 1}, {"-5.xray.part", 1}, {"-6.xray.map", 1}, {"-7.xray.map.part", 1},
};

/* per_thread_files: <n> 0 to 3 are taken; the .map gets 4. */
static const struct plant map_plants[] = {
    {"-0.map", 0}, {"-1.map.part", 0}, {"-2.map", 1}, {"-3.map.part", 1}};

/* The thread files of n 4, thread k: its name or its part, to the victim or to nothing. */
static const struct plant thread_plants[THREADS] = {
    {".xray", 0}, {".xray.part", 0}, {".xray", 1}, {".xray.part", 1}};

/* backing=file: every live name. */
static const struct plant live_plants[] = {
    {"-live.xray", 0}, {"-live.xray.pool", 0}, {"-live.xray.map", 0}, {"-live.xray.map.tmp", 0}};

/* ---- names and files -------------------------------------------------------------------- */

/* "<dir>xfdr-<prog>-<pid><tail>". */
static void name_in(char *out, const char *dir, const char *prog, long pid, const char *tail)
{
	if (snprintf(out, PATH_BYTES, "%sxfdr-%s-%ld%s", dir, prog, pid, tail) >= PATH_BYTES)
		fail_msg("name too long in %s", dir);
}

static void join(char *out, const char *a, const char *b)
{
	if (snprintf(out, PATH_BYTES, "%s%s", a, b) >= PATH_BYTES)
		fail_msg("path too long: %s%s", a, b);
}

/* A fresh directory "<ts_dir><name>/" into dir, with the victim in it. */
static void scenario_dir(char *dir, const char *name)
{
	char victim[PATH_BYTES];
	int fd;

	join(victim, ts_dir, name);
	assert_int_equal(mkdir(victim, 0755), 0);
	join(dir, victim, "/");
	join(victim, dir, "victim");
	fd = open(victim, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, VICTIM_TEXT, strlen(VICTIM_TEXT)), (ssize_t)strlen(VICTIM_TEXT));
	assert_int_equal(fchmod(fd, VICTIM_MODE), 0);
	close(fd);
}

/* The victim of dir: its bytes, its mode and its one name, as scenario_dir() made them. */
static void victim_check(const char *dir)
{
	char victim[PATH_BYTES], *text;
	struct stat st;
	size_t n;

	join(victim, dir, "victim");
	assert_int_equal(lstat(victim, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	if ((st.st_mode & 07777) != VICTIM_MODE || st.st_nlink != 1)
		fail_msg("victim %s: mode %04o, %lu links; expected %04o, 1", victim,
			 (unsigned)(st.st_mode & 07777), (unsigned long)st.st_nlink, VICTIM_MODE);
	text = (char *)ts_slurp(victim, &n);
	if (strcmp(text, VICTIM_TEXT))
		fail_msg("victim %s was written: it holds %zu bytes \"%.200s\"", victim, n, text);
	free(text);
}

/* Where a plant of dir leads: the victim, or "nowhere", a name that must stay free. */
static void plant_target(char *out, const char *dir, const struct plant *p)
{
	join(out, dir, p->dangling ? "nowhere" : "victim");
}

/* path is still a symbolic link to where p leads; nothing was made at a dangling target. */
static void link_check(const char *path, const char *dir, const struct plant *p)
{
	char target[PATH_BYTES], seen[PATH_BYTES];
	struct stat st;
	ssize_t n;

	plant_target(target, dir, p);
	if (lstat(path, &st) || !S_ISLNK(st.st_mode))
		fail_msg("%s is no longer the link planted there", path);
	n = readlink(path, seen, sizeof(seen) - 1);
	assert_true(n > 0);
	seen[n] = '\0';
	assert_string_equal(seen, target);
	if (p->dangling && lstat(target, &st) == 0)
		fail_msg("%s was created through the dangling link %s", target, path);
}

/* path is a regular file (not a link) with exactly mode. */
static void mode_check(const char *path, mode_t mode)
{
	struct stat st;

	if (lstat(path, &st))
		fail_msg("%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode) || (st.st_mode & 07777) != mode)
		fail_msg("%s: type %o mode %04o, expected a regular file of mode %04o", path,
			 (unsigned)(st.st_mode & S_IFMT), (unsigned)(st.st_mode & 07777),
			 (unsigned)mode);
}

static void absent_check(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0 || errno != ENOENT)
		fail_msg("%s exists, expected nothing there", path);
}

/* Entries of dir (other than . and ..) that are regular files. */
static int regular_files(const char *dir)
{
	char path[PATH_BYTES];
	struct dirent *e;
	struct stat st;
	DIR *d = opendir(dir);
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		join(path, dir, e->d_name);
		n += lstat(path, &st) == 0 && S_ISREG(st.st_mode);
	}
	closedir(d);
	return n;
}

/* Lines of text that contain needle. */
static int lines_with(const char *text, const char *needle)
{
	const char *p = text;
	int n = 0;

	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);

		n += memmem(p, len, needle, strlen(needle)) != NULL;
		p += len + (eol != NULL);
	}
	return n;
}

/* The text after "key" in the child's stdout, up to the end of its word, into out. */
static void out_word(const char *out_text, const char *key, char *out)
{
	const char *p = strstr(out_text, key);
	size_t n;

	if (!p)
		fail_msg("no \"%s\" in the child's output:\n%s", key, out_text);
	p += strlen(key);
	n = strcspn(p, " \n");
	assert_true(n < PATH_BYTES);
	memcpy(out, p, n);
	out[n] = '\0';
}

static long out_long(const char *out_text, const char *key)
{
	char word[PATH_BYTES];

	out_word(out_text, key, word);
	return strtol(word, NULL, 10);
}

/* ---- the child's side ------------------------------------------------------------------- */

static int child_plant(const char *dir, const char *tail, const struct plant *p)
{
	char path[PATH_BYTES], target[PATH_BYTES];

	snprintf(path, sizeof(path), "%sxfdr-%s-%d%s", dir, program_invocation_short_name,
		 (int)getpid(), tail);
	snprintf(target, sizeof(target), "%s%s", dir, p->dangling ? "nowhere" : "victim");
	if (symlink(target, path)) {
		fprintf(stderr, "cannot plant %s: %s\n", path, strerror(errno));
		return 1;
	}
	return 0;
}

static int child_init(const char *dir, int per_thread_files, int backing, int flush_at_exit)
{
	struct xfdr_options o;
	int rc;

	xfdr_options_default(&o);
	o.buffer_size = 4096;
	o.buffer_max = 16;
	o.mode = XFDR_MODE_BOUNDED;
	o.output = dir;
	o.per_thread_files = per_thread_files;
	o.backing = backing;
	o.flush_at_exit = flush_at_exit;
	rc = xfdr_init(&o);
	if (!rc)
		rc = xfdr_start();
	if (rc)
		fprintf(stderr, "cannot start recording: %s\n", strerror(-rc));
	return rc;
}

/* Stop, flush, and say how it went on stdout: "flush=RC path=PATH". */
static void child_flush(void)
{
	char path[PATH_BYTES] = "";
	int rc;

	xfdr_stop();
	rc = xfdr_flush(path, sizeof(path));
	printf("flush=%d path=%s\n", rc, path);
	fflush(stdout);
}

static void child_calls(uint32_t fid, int n)
{
	while (n--) {
		xfdr_enter(fid);
		xfdr_exit(fid);
	}
}

/* Links at <n> 0-7, then a flush (it must get 8) and, at exit, another (9). */
static int child_process_mode(const char *dir)
{
	size_t i;

	for (i = 0; i < sizeof(process_plants) / sizeof(process_plants[0]); i++)
		if (child_plant(dir, process_plants[i].tail, &process_plants[i]))
			return 1;
	if (child_init(dir, 0, XFDR_BACKING_MEMORY, 1))
		return 1;
	child_calls(FID, 10);
	child_flush();
	if (xfdr_start())
		return 1;
	child_calls(FID, 10);
	return 0; /* the flush at exit writes <n> 9 */
}

struct recorder {
	pthread_t th;
	unsigned index;
	uint32_t tid;
};

static pthread_barrier_t recorded;

/* Records, then waits until every recorder has: their tids are distinct. */
static void *recorder_main(void *arg)
{
	struct recorder *r = arg;

	r->tid = ts_tid();
	child_calls(THREAD_FID + r->index, 10);
	pthread_barrier_wait(&recorded);
	return NULL;
}

/* per_thread_files: links at the .map names of <n> 0-3 and at each recorder's file of 4. */
static int child_thread_files(const char *dir)
{
	struct recorder r[THREADS];
	char tail[64];
	unsigned k;
	size_t i;

	for (i = 0; i < sizeof(map_plants) / sizeof(map_plants[0]); i++)
		if (child_plant(dir, map_plants[i].tail, &map_plants[i]))
			return 1;
	if (child_init(dir, 1, XFDR_BACKING_MEMORY, 0))
		return 1;
	child_calls(FID, 10);
	pthread_barrier_init(&recorded, NULL, THREADS);
	for (k = 0; k < THREADS; k++) {
		r[k].index = k;
		if (pthread_create(&r[k].th, NULL, recorder_main, &r[k]))
			return 1;
	}
	for (k = 0; k < THREADS; k++)
		pthread_join(r[k].th, NULL);
	printf("tids=");
	for (k = 0; k < THREADS; k++) {
		printf("%u%s", r[k].tid, k + 1 < THREADS ? "," : "\n");
		snprintf(tail, sizeof(tail), "-4-t%u%s", r[k].tid, thread_plants[k].tail);
		if (child_plant(dir, tail, &thread_plants[k]))
			return 1;
	}
	child_flush();
	return 0;
}

/*
 * backing=file with links at the live names: "all" at every one, to the victim; "dangling"
 * at every one, to nothing; "map" at the .map and .map.tmp only (the flush at exit then
 * removes the live files).
 */
static int child_live(const char *dir, const char *which)
{
	struct plant p;
	size_t i, n = sizeof(live_plants) / sizeof(live_plants[0]);
	int map_only = !strcmp(which, "map");

	for (i = 0; i < n; i++) {
		p = live_plants[i];
		p.dangling = !strcmp(which, "dangling");
		if (map_only && !strstr(p.tail, ".map"))
			continue;
		if (child_plant(dir, p.tail, &p))
			return 1;
	}
	if (child_init(dir, 0, XFDR_BACKING_FILE, map_only))
		return 1;
	child_calls(FID, 10);
	child_flush();
	return 0;
}

/* Started at load by XFDR_OPTIONS (start=1): record and flush. */
static int child_env(void)
{
	child_calls(FID, 10);
	child_flush();
	return 0;
}

static int child_main(const char *scenario, const char *dir)
{
	if (!strcmp(scenario, "process"))
		return child_process_mode(dir);
	if (!strcmp(scenario, "threads"))
		return child_thread_files(dir);
	if (!strncmp(scenario, "live-", 5))
		return child_live(dir, scenario + 5);
	if (!strcmp(scenario, "env"))
		return child_env();
	fprintf(stderr, "unknown scenario %s\n", scenario);
	return 2;
}

/* ---- the parent's side ------------------------------------------------------------------- */

/* Run scenario in a child with XFDR_OPTIONS=env_options (NULL: empty); it must exit 0. */
static void run_child(const char *scenario, const char *dir, const char *env_options,
		      struct child_result *r)
{
	char *argv[] = {CHILD_NAME, "--child", (char *)scenario, (char *)dir, NULL};
	char env_opt[PATH_BYTES + 200];
	char *env[] = {env_opt, NULL};
	struct child_spec spec = {
	    .argv = argv,
	    .program = "/proc/self/exe",
	    .env_add = env,
	    .out = {.to = CHILD_CAPTURE},
	    .err = {.to = CHILD_CAPTURE},
	    .timeout_s = 60,
	};

	snprintf(env_opt, sizeof(env_opt), "XFDR_OPTIONS=%s", env_options ? env_options : "");
	child_run(&spec, r);
	if (r->signal || r->status)
		fail_msg("child %s: status %d, signal %d\nstdout:\n%s\nstderr:\n%s", scenario,
			 r->status, r->signal, r->out, r->err);
}

/* The planted links of dir under pid are intact; the victim too. */
static void plants_check(const char *dir, long pid, const struct plant *p, size_t n)
{
	char path[PATH_BYTES];
	size_t i;

	for (i = 0; i < n; i++) {
		name_in(path, dir, CHILD_NAME, pid, p[i].tail);
		link_check(path, dir, &p[i]);
	}
	victim_check(dir);
}

/* A trace a flush wrote: mode 0600, and both readers accept it. */
static void trace_check(const char *path)
{
	mode_check(path, 0600);
	ts_tools_accept(path);
}

/*
 * Process mode: each <n> from 0 to 7 has one of its four names (.xray, .xray.part, .xray.map,
 * .xray.map.part) taken by a link, to the victim or to nothing, so the flush writes <n> 8 (an
 * <n> below that tells which name was not seen as taken) and the flush at exit <n> 9; nothing
 * is written through a link, and no stderr line complains.
 */
static void planted_links_process_mode(void **state)
{
	char dir[PATH_BYTES], want[PATH_BYTES], got[PATH_BYTES], other[PATH_BYTES + 8];
	size_t np = sizeof(process_plants) / sizeof(process_plants[0]);
	struct child_result r;
	long pid;

	(void)state;
	scenario_dir(dir, "process");
	run_child("process", dir, NULL, &r);
	pid = r.pid;
	assert_int_equal(out_long(r.out, "flush="), 0);
	out_word(r.out, "path=", got);
	name_in(want, dir, CHILD_NAME, pid, "-8.xray");
	if (strcmp(got, want)) {
		unsigned n = (unsigned)strtoul(strrchr(got, '-') + 1, NULL, 10);

		fail_msg("the flush wrote %s, expected %s%s%s", got, want,
			 n < np ? ": this <n> was taken by the link at its " : "",
			 n < np ? process_plants[n].tail : "");
	}
	trace_check(got);
	join(other, got, ".map");
	mode_check(other, 0600);
	name_in(want, dir, CHILD_NAME, pid, "-9.xray");
	trace_check(want);
	join(other, want, ".map");
	mode_check(other, 0600);
	assert_int_equal(lines_with(r.err, want), 1); /* "wrote PATH" at exit */
	assert_int_equal(lines_with(r.err, "cannot"), 0);
	plants_check(dir, pid, process_plants, np);
	/* The victim and the two flushes' traces and maps: no .part was left. */
	assert_int_equal(regular_files(dir), 5);
	child_result_free(&r);
}

/*
 * per_thread_files: the .map names of <n> 0 to 3 are taken, so the .map is <n> 4; each of
 * four threads finds its file's name or its .part taken (by a link to the victim or to
 * nothing) and fails alone with one stderr line naming the file; the main thread's file is
 * written, and the .map lists it and none of the four. xfdr_flush returns -EEXIST, the first
 * error.
 */
static void planted_links_thread_files(void **state)
{
	char dir[PATH_BYTES], want[PATH_BYTES], got[PATH_BYTES], tids[PATH_BYTES];
	char path[PATH_BYTES], tail[64], line[PATH_BYTES + 200], *map, *p;
	struct child_result r;
	unsigned k;
	size_t n;
	long pid;

	(void)state;
	scenario_dir(dir, "threads");
	run_child("threads", dir, NULL, &r);
	pid = r.pid;
	out_word(r.out, "path=", got);
	name_in(want, dir, CHILD_NAME, pid, "-4.map");
	assert_string_equal(got, want);
	assert_int_equal(out_long(r.out, "flush="), -EEXIST);
	mode_check(got, 0600);
	map = (char *)ts_slurp(got, &n);

	/* The main thread's file (its tid is the pid) is written and listed. */
	snprintf(tail, sizeof(tail), "-4-t%ld.xray", pid);
	name_in(path, dir, CHILD_NAME, pid, tail);
	trace_check(path);
	assert_int_equal(ts_count(map, path), 1);
	/* Each thread filled less than its one 4 KiB buffer: only the main thread's is written. */
	if (ts_count(map, "\nbuffers_written\t1\n") != 1)
		fail_msg("the .map counts buffers of files that were not written:\n%s", map);

	out_word(r.out, "tids=", tids);
	p = tids;
	for (k = 0; k < THREADS; k++) {
		unsigned long tid = strtoul(p, &p, 10);
		char final[PATH_BYTES];

		assert_true(tid > 0);
		p += *p == ',';
		snprintf(tail, sizeof(tail), "-4-t%lu.xray", tid);
		name_in(final, dir, CHILD_NAME, pid, tail);
		snprintf(line, sizeof(line), "xfdr: cannot write %s" EEXIST_LINE, final);
		if (ts_count(r.err, line) != 1 || lines_with(r.err, final) != 1)
			fail_msg("thread %u (its %s planted): expected one line \"%s\", got:\n%s",
				 k, thread_plants[k].tail, line, r.err);
		if (ts_count(map, final))
			fail_msg("the .map lists %s, which this flush did not write:\n%s", final,
				 map);
		snprintf(tail, sizeof(tail), "-4-t%lu%s", tid, thread_plants[k].tail);
		name_in(path, dir, CHILD_NAME, pid, tail);
		link_check(path, dir, &thread_plants[k]);
		/* The other name of the pair is free: no .part left, nothing renamed there. */
		if (!strcmp(thread_plants[k].tail, ".xray")) {
			join(path, final, ".part");
			absent_check(path);
		} else {
			absent_check(final);
		}
	}
	free(map);
	plants_check(dir, pid, map_plants, sizeof(map_plants) / sizeof(map_plants[0]));
	/* The victim, the .map and the main thread's file. */
	assert_int_equal(regular_files(dir), 3);
	child_result_free(&r);
}

/* A live name of the child pid in dir: tail is "-live.xray", "-live-stale1.xray.pool"... */
static void live_name(char *out, const char *dir, long pid, const char *tail)
{
	name_in(out, dir, CHILD_NAME, pid, tail);
}

/*
 * backing=file, links (to the victim, or dangling) at all four live names: the set found is
 * moved aside to "-live-stale1.xray" (+.pool, .map), links as they were, with one stderr
 * line; the .map.tmp link is removed; the live files are then new files of mode 0600.
 */
static void planted_links_live_files(const char *scenario)
{
	static const char *const moved[] = {".xray", ".xray.pool", ".xray.map"};
	char dir[PATH_BYTES], path[PATH_BYTES], stale[PATH_BYTES], got[PATH_BYTES];
	char line[3 * PATH_BYTES];
	struct child_result r;
	struct plant p = {NULL, !strcmp(scenario, "live-dangling")};
	long pid;
	size_t i;

	scenario_dir(dir, scenario);
	run_child(scenario, dir, NULL, &r);
	pid = r.pid;
	assert_int_equal(out_long(r.out, "flush="), 0);
	out_word(r.out, "path=", got);
	name_in(path, dir, CHILD_NAME, pid, "-0.xray");
	assert_string_equal(got, path);
	trace_check(got);

	live_name(path, dir, pid, "-live.xray");
	live_name(stale, dir, pid, "-live-stale1.xray");
	snprintf(line, sizeof(line),
		 "xfdr: backing=file: %s was left by an earlier process "
		 "with this pid; moved to %s",
		 path, stale);
	if (ts_count(r.err, line) != 1 || lines_with(r.err, "moved to") != 1)
		fail_msg("expected one line \"%s\", got:\n%s", line, r.err);
	for (i = 0; i < sizeof(moved) / sizeof(moved[0]); i++) {
		char tail[64];

		snprintf(tail, sizeof(tail), "-live-stale1%s", moved[i]);
		live_name(stale, dir, pid, tail);
		link_check(stale, dir, &p);
		snprintf(tail, sizeof(tail), "-live%s", moved[i]);
		live_name(path, dir, pid, tail);
		mode_check(path, 0600);
	}
	live_name(path, dir, pid, "-live.xray.map.tmp");
	absent_check(path);
	assert_int_equal(lines_with(r.err, "cannot"), 0);
	victim_check(dir);
	/* The victim, the three live files, the flush's trace and map. */
	assert_int_equal(regular_files(dir), 6);
	child_result_free(&r);
}

static void planted_links_live_all(void **state)
{
	(void)state;
	planted_links_live_files("live-all");
}

static void planted_links_live_dangling(void **state)
{
	(void)state;
	planted_links_live_files("live-dangling");
}

/*
 * backing=file, links at the live .map and .map.tmp only (no trace, no pool: nothing to move
 * aside): the .map link is left as it is and the live map reported not written; the .map.tmp
 * link is removed. The flush at exit removes the live trace and pool it made, not the link.
 */
static void planted_link_live_map_alone(void **state)
{
	char dir[PATH_BYTES], path[PATH_BYTES], got[PATH_BYTES], line[2 * PATH_BYTES];
	const struct plant to_victim = {NULL, 0};
	struct child_result r;
	long pid;

	(void)state;
	scenario_dir(dir, "live-map");
	run_child("live-map", dir, NULL, &r);
	pid = r.pid;
	assert_int_equal(out_long(r.out, "flush="), 0);
	out_word(r.out, "path=", got);
	trace_check(got);

	live_name(path, dir, pid, "-live.xray.map");
	snprintf(line, sizeof(line),
		 "xfdr: backing=file: cannot write the live map %s: EEXIST (file exists)\n", path);
	if (ts_count(r.err, line) != 1 || lines_with(r.err, "live map") != 1)
		fail_msg("expected one line \"%s\", and no other about the live map, got:\n%s",
			 line, r.err);
	assert_int_equal(lines_with(r.err, "moved to"), 0);
	link_check(path, dir, &to_victim);
	live_name(path, dir, pid, "-live.xray.map.tmp");
	absent_check(path);
	live_name(path, dir, pid, "-live.xray");
	absent_check(path);
	live_name(path, dir, pid, "-live.xray.pool");
	absent_check(path);
	victim_check(dir);
	/* The victim, the flush's trace and map. */
	assert_int_equal(regular_files(dir), 3);
	child_result_free(&r);
}

/* ---- modes -------------------------------------------------------------------------------- */

/* Record a little and flush; path gets what xfdr_flush names. */
static void record_and_flush(char *path)
{
	assert_int_equal(xfdr_start(), 0);
	child_calls(FID, 10);
	assert_int_equal(xfdr_stop(), 0);
	assert_int_equal(xfdr_flush(path, PATH_BYTES), 0);
}

/*
 * Under the umask in force, with file_mode in the options (-1: what xfdr_options_default()
 * gives): the process trace and its .map, the per-thread .map and this thread's file, and the
 * three live files of backing=file all get exactly want.
 */
static void created_modes(int file_mode, mode_t want)
{
	char path[PATH_BYTES], other[PATH_BYTES + 64], tail[64];
	struct xfdr_options o;

	ts_options(&o, 4096, 8, XFDR_MODE_BOUNDED);
	if (file_mode >= 0)
		o.file_mode = file_mode;
	assert_int_equal(xfdr_init(&o), 0);
	record_and_flush(path);
	mode_check(path, want);
	join(other, path, ".map");
	mode_check(other, want);

	ts_options(&o, 4096, 8, XFDR_MODE_BOUNDED);
	if (file_mode >= 0)
		o.file_mode = file_mode;
	o.per_thread_files = 1;
	assert_int_equal(xfdr_init(&o), 0);
	record_and_flush(path);
	mode_check(path, want);
	assert_true(strlen(path) > 4 && !strcmp(path + strlen(path) - 4, ".map"));
	path[strlen(path) - 4] = '\0';
	snprintf(tail, sizeof(tail), "-t%u.xray", ts_tid());
	join(other, path, tail);
	mode_check(other, want);

	ts_options(&o, 4096, 8, XFDR_MODE_BOUNDED);
	if (file_mode >= 0)
		o.file_mode = file_mode;
	o.backing = XFDR_BACKING_FILE;
	assert_int_equal(xfdr_init(&o), 0);
	name_in(path, ts_dir, program_invocation_short_name, getpid(), "-live.xray");
	mode_check(path, want);
	join(other, path, ".pool");
	mode_check(other, want);
	join(other, path, ".map");
	mode_check(other, want);
	/* Memory backing again: the live files go, and the next init makes new ones. */
	ts_options(&o, 4096, 8, XFDR_MODE_BOUNDED);
	assert_int_equal(xfdr_init(&o), 0);
	absent_check(path);
}

/* 0600 by default, whether the default comes from xfdr_options_default() or a 0. */
static void default_mode_0600(void **state)
{
	mode_t was = umask(022);

	(void)state;
	created_modes(-1, 0600);
	umask(0);
	created_modes(0, 0600);
	umask(was);
}

/* file_mode is the mode, whatever the umask takes away or would have let through. */
static void file_mode_exactly(void **state)
{
	mode_t was = umask(077);

	(void)state;
	created_modes(0640, 0640);
	umask(022);
	created_modes(0666, 0666);
	umask(0);
	created_modes(0604, 0604);
	umask(was);
}

/* xfdr_options_set(): octal, 0600 to 0666 with 0600 in it; a bad value leaves o as it was. */
static void file_mode_option_values(void **state)
{
	static const struct {
		const char *text;
		int mode;
	} good[] = {{"0640", 0640}, {"644", 0644},  {"0600", 0600}, {"600", 0600},
		    {"0666", 0666}, {"0604", 0604}, {"0620", 0620}};
	static const char *const bad[] = {
	    "0700", "0400", "0x1",   "9",    "",     "0200",  "0601", "0610", "0644 ", " 0644",
	    "1600", "4600", "06400", "-600", "+600", "0o640", "abc",  "0777", "0606x", "8",
	};
	struct xfdr_options o, before;
	size_t i;

	(void)state;
	xfdr_options_default(&o);
	assert_int_equal(o.file_mode, 0600);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(xfdr_options_set(&o, "file_mode", good[i].text), 0);
		if (o.file_mode != good[i].mode)
			fail_msg("file_mode \"%s\" gave %04o, expected %04o", good[i].text,
				 (unsigned)o.file_mode, (unsigned)good[i].mode);
	}
	xfdr_options_default(&o);
	before = o;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (xfdr_options_set(&o, "file_mode", bad[i]) != -EINVAL)
			fail_msg("file_mode \"%s\" was not refused with -EINVAL", bad[i]);
		assert_memory_equal(&o, &before, sizeof(o));
	}
}

struct init_try {
	int file_mode;
	int rc;
};

static void init_with_mode(void *arg)
{
	struct init_try *t = arg;
	struct xfdr_options o;

	ts_options(&o, 4096, 8, XFDR_MODE_BOUNDED);
	o.file_mode = t->file_mode;
	t->rc = xfdr_init(&o);
}

/* xfdr_init() refuses a bad file_mode in the struct with -EINVAL and one line naming it. */
static void file_mode_init_refuses(void **state)
{
	static const int bad[] = {0700, 0400, 01600, 0601, 0200, -1, 0x10000};
	struct init_try t;
	char err[2048];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t.file_mode = bad[i];
		ts_capture_stderr(init_with_mode, &t, err, sizeof(err));
		if (t.rc != -EINVAL || ts_count(err, "\n") != 1 || !strstr(err, "file_mode"))
			fail_msg("xfdr_init with file_mode %#o: %d, expected -EINVAL and one line "
				 "naming file_mode; stderr:\n%s",
				 (unsigned)bad[i], t.rc, err);
	}
	/* And a good one is taken after them. */
	t.file_mode = 0640;
	ts_capture_stderr(init_with_mode, &t, err, sizeof(err));
	assert_int_equal(t.rc, 0);
	assert_string_equal(err, "");
}

/*
 * XFDR_OPTIONS: file_mode=0640 under umask 077 gives 0640 files; a bad file_mode=0700 is
 * named in one stderr line and the files keep 0600.
 */
static void file_mode_from_environment(void **state)
{
	char dir[PATH_BYTES], opts[PATH_BYTES + 200], got[PATH_BYTES], other[PATH_BYTES + 8];
	struct child_result r;
	mode_t was = umask(077);

	(void)state;
	scenario_dir(dir, "env-good");
	snprintf(opts, sizeof(opts),
		 "start=1:output=%s:buffer_size=4096:buffer_max=8:mode=bounded:file_mode=0640",
		 dir);
	run_child("env", dir, opts, &r);
	assert_int_equal(out_long(r.out, "flush="), 0);
	out_word(r.out, "path=", got);
	mode_check(got, 0640);
	join(other, got, ".map");
	mode_check(other, 0640);
	assert_int_equal(lines_with(r.err, "file_mode"), 0);
	child_result_free(&r);

	umask(022);
	scenario_dir(dir, "env-bad");
	snprintf(opts, sizeof(opts),
		 "start=1:output=%s:buffer_size=4096:buffer_max=8:mode=bounded:file_mode=0700",
		 dir);
	run_child("env", dir, opts, &r);
	umask(was);
	assert_int_equal(out_long(r.out, "flush="), 0);
	out_word(r.out, "path=", got);
	mode_check(got, 0600);
	join(other, got, ".map");
	mode_check(other, 0600);
	if (lines_with(r.err, "file_mode") != 1 ||
	    lines_with(r.err, "bad value \"0700\" for file_mode") != 1)
		fail_msg("expected one line refusing file_mode=0700, got:\n%s", r.err);
	child_result_free(&r);
}

/* ---- set-user-ID ------------------------------------------------------------------------- */

static char suid_top[64];

/* Print why, clean up, and skip the test. */
#define SUID_SKIP(...)                                                                             \
	do {                                                                                       \
		fprintf(stderr, "setuid_ignores_environment skipped: " __VA_ARGS__);               \
		fprintf(stderr, "\n");                                                             \
		suid_cleanup();                                                                    \
		skip();                                                                            \
	} while (0)

static void suid_cleanup(void)
{
	char cmd[128];

	if (!suid_top[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", suid_top);
	assert_int_equal(system(cmd), 0);
	suid_top[0] = '\0';
}

/* An executable named name in PATH, into out; 0 if none. */
static int in_path(const char *name, char *out)
{
	const char *path = getenv("PATH");
	char dirs[4096], *save = NULL, *d;

	snprintf(dirs, sizeof(dirs), "%s", path && *path ? path : "/usr/bin:/bin");
	for (d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(out, PATH_BYTES, "%s/%s", d, name);
		if (access(out, X_OK) == 0)
			return 1;
	}
	return 0;
}

/* Compile tests/e2e/setuid_prog.c with $XFDR_BUILD/lib/libxfdr.a into out. */
static void build_setuid_prog(const char *out)
{
	const char *src_root = getenv("XFDR_SRC"), *build = getenv("XFDR_BUILD");
	char src[PATH_BYTES], inc[PATH_BYTES], lib[PATH_BYTES];
	char *argv[] = {"cc",	     "-O1",  inc, src, "-o", (char *)out, lib, CHILD_RUNTIME_LIBS,
			"-lpthread", "-ldl", NULL};
	struct child_result r;

	if (!build || !*build)
		fail_msg("XFDR_BUILD is not set (run the tests through make check)");
	if (!src_root || !*src_root)
		src_root = ".";
	snprintf(src, sizeof(src), "%s/tests/e2e/setuid_prog.c", src_root);
	snprintf(inc, sizeof(inc), "-I%s/include", src_root);
	snprintf(lib, sizeof(lib), "%s/lib/libxfdr.a", build);
	child_capture(argv, &r);
	if (r.status)
		fail_msg("cc %s failed (%d):\n%s%s", src, r.status, r.out, r.err);
	child_result_free(&r);
}

static void copy_file(const char *from, const char *to)
{
	size_t n;
	uint8_t *data = ts_slurp(from, &n);
	int fd = open(to, O_WRONLY | O_CREAT | O_EXCL, 0700);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, n), (ssize_t)n);
	assert_int_equal(close(fd), 0);
	free(data);
}

/* The one file in dir whose name ends in suffix, into out (fails unless exactly one). */
static void find_one(const char *dir, const char *suffix, char *out)
{
	size_t slen = strlen(suffix), found = 0;
	struct dirent *e;
	DIR *d = opendir(dir);

	assert_non_null(d);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if (len > slen && !strcmp(e->d_name + len - slen, suffix)) {
			snprintf(out, PATH_BYTES, "%s/%s", dir, e->d_name);
			found++;
		}
	}
	closedir(d);
	if (found != 1)
		fail_msg("%zu files ending in %s in %s, expected 1", found, suffix, dir);
}

/* A trace the program wrote as root: a regular file root owns, 0600; its .map too. */
static void root_file_check(const char *path)
{
	struct stat st;

	mode_check(path, 0600);
	assert_int_equal(lstat(path, &st), 0);
	if (st.st_uid != 0)
		fail_msg("%s is owned by uid %u, expected root", path, (unsigned)st.st_uid);
}

/* The program's calls (setuid_prog.c): function 5 entered 3 times, function 6 twice. */
static void setuid_trace_check(const char *trace)
{
	struct ts_yrec rec[64];
	char *yaml = NULL;
	size_t n, i, five = 0, six = 0;

	child_xfdr_ok("verify", trace, NULL);
	if (ts_llvm_yaml(trace, &yaml))
		fail_msg("llvm-xray rejects %s: %.400s", trace, yaml);
	n = ts_yaml_records(yaml, rec, 64);
	assert_true(n <= 64);
	for (i = 0; i < n; i++) {
		five += rec[i].fid == 5 && !strcmp(rec[i].kind, "function-enter");
		six += rec[i].fid == 6 && !strcmp(rec[i].kind, "function-enter");
	}
	free(yaml);
	assert_int_equal(five, 3);
	assert_int_equal(six, 2);
}

/* Run prog (through setpriv when as_nobody) with api_dir/ as its argument, XFDR_OPTIONS set. */
static void run_setuid_prog(const char *setpriv, const char *prog, const char *api_dir,
			    const char *env_opt, int as_nobody, uid_t uid, gid_t gid,
			    struct child_result *r)
{
	char reuid[32], regid[32], api_arg[PATH_BYTES];
	char *env[] = {(char *)env_opt, NULL};
	char *argv_nobody[] = {(char *)setpriv, reuid,	 regid, "--clear-groups",
			       (char *)prog,	api_arg, NULL};
	char *argv_root[] = {(char *)prog, api_arg, NULL};
	struct child_spec spec = {
	    .argv = as_nobody ? argv_nobody : argv_root,
	    .env_add = env,
	    .out = {.to = CHILD_CAPTURE},
	    .err = {.to = CHILD_CAPTURE},
	    .timeout_s = 60,
	};

	snprintf(reuid, sizeof(reuid), "--reuid=%u", (unsigned)uid);
	snprintf(regid, sizeof(regid), "--regid=%u", (unsigned)gid);
	join(api_arg, api_dir, "/");
	child_run(&spec, r);
}

static void setuid_ignores_environment(void **state)
{
	char setpriv[PATH_BYTES], built[PATH_BYTES], prog[PATH_BYTES], env_dir[PATH_BYTES];
	char api_dir[PATH_BYTES], env_opt[PATH_BYTES + 64], trace[PATH_BYTES], map[PATH_BYTES];
	char said[PATH_BYTES];
	char tmpl[] = "/tmp/xfdr-setuid-XXXXXX";
	struct child_result r;
	struct statvfs vfs;
	struct passwd *pw;
	struct group *gr;
	uid_t uid;
	gid_t gid;
	int euid;

	(void)state;
	if (geteuid() != 0)
		SUID_SKIP("not root (euid %d): it cannot install a set-user-ID-root program",
			  (int)geteuid());
	if (!in_path("setpriv", setpriv))
		SUID_SKIP("no setpriv in PATH (util-linux): it cannot run the program as nobody");
	pw = getpwnam("nobody");
	if (!pw)
		SUID_SKIP("no user nobody");
	uid = pw->pw_uid;
	gr = getgrnam("nogroup");
	gid = gr ? gr->gr_gid : pw->pw_gid;

	/* A directory only root can change, holding the program and the two outputs. */
	assert_non_null(mkdtemp(tmpl));
	snprintf(suid_top, sizeof(suid_top), "%s", tmpl);
	assert_int_equal(chmod(suid_top, 0755), 0);
	if (statvfs(suid_top, &vfs) == 0 && (vfs.f_flag & ST_NOSUID))
		SUID_SKIP("%s is on a file system mounted nosuid", suid_top);
	join(built, ts_dir, "setuid_prog");
	build_setuid_prog(built);
	join(prog, suid_top, "/setuid_prog");
	copy_file(built, prog);
	assert_int_equal(chmod(prog, 0755), 0);
	assert_int_equal(chown(prog, 0, 0), 0);
	assert_int_equal(chmod(prog, 04755), 0);
	join(env_dir, suid_top, "/env-out");
	join(api_dir, suid_top, "/api-out");
	assert_int_equal(mkdir(env_dir, 0700), 0);
	assert_int_equal(mkdir(api_dir, 0700), 0);
	snprintf(env_opt, sizeof(env_opt), "XFDR_OPTIONS=start=1:output=%s/", env_dir);

	/* As nobody: set-user-ID root, AT_SECURE; XFDR_OPTIONS must change nothing. */
	run_setuid_prog(setpriv, prog, api_dir, env_opt, 1, uid, gid, &r);
	euid = (int)out_long(r.out, "euid=");
	if (euid != 0) {
		child_result_free(&r);
		SUID_SKIP("the set-user-ID bit gave euid %d, not 0 (nosuid mount or no_new_privs)",
			  euid);
	}
	if (r.status || r.signal)
		fail_msg("%s as nobody: status %d signal %d\n%s%s", prog, r.status, r.signal, r.out,
			 r.err);
	assert_int_equal(out_long(r.out, "uid="), (long)uid);
	assert_int_equal(out_long(r.out, "secure="), 1);
	assert_int_equal(out_long(r.out, "flush="), 0);
	if (ts_dir_entries(env_dir))
		fail_msg(
		    "the set-user-ID program wrote into %s, named by its caller's XFDR_OPTIONS",
		    env_dir);
	if (ts_count(r.err, IGNORED_LINE) != 1 || ts_count(r.err, "XFDR_OPTIONS ignored") != 1)
		fail_msg("expected \"%s\" once on stderr, got:\n%s", IGNORED_LINE, r.err);
	/* The directory is checked with the ids that write there (root's), not the caller's. */
	if (ts_count(r.err, "output directory"))
		fail_msg("a writable output directory was reported as not writable:\n%s", r.err);
	find_one(api_dir, ".xray", trace);
	out_word(r.out, "path=", said);
	assert_string_equal(said, trace);
	join(map, trace, ".map");
	root_file_check(trace);
	root_file_check(map);
	assert_int_equal(ts_dir_entries(api_dir), 2);
	setuid_trace_check(trace);
	child_result_free(&r);

	/* As root, not AT_SECURE: the same XFDR_OPTIONS is obeyed (started at load, its output). */
	run_setuid_prog(setpriv, prog, api_dir, env_opt, 0, uid, gid, &r);
	if (r.status || r.signal)
		fail_msg("%s as root: status %d signal %d\n%s%s", prog, r.status, r.signal, r.out,
			 r.err);
	assert_int_equal(out_long(r.out, "secure="), 0);
	assert_int_equal(ts_count(r.err, "XFDR_OPTIONS ignored"), 0);
	find_one(env_dir, ".xray", trace);
	out_word(r.out, "path=", said);
	assert_string_equal(said, trace);
	assert_int_equal(ts_dir_entries(env_dir), 2);
	assert_int_equal(ts_dir_entries(api_dir), 2);
	setuid_trace_check(trace);
	child_result_free(&r);
	suid_cleanup();
}

/* A failed set-user-ID test leaves its directory: remove it with the group's. */
static int group_teardown(void **state)
{
	suid_cleanup();
	return ts_group_teardown(state);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(planted_links_process_mode),
	    cmocka_unit_test(planted_links_thread_files),
	    cmocka_unit_test(planted_links_live_all),
	    cmocka_unit_test(planted_links_live_dangling),
	    cmocka_unit_test(planted_link_live_map_alone),
	    cmocka_unit_test(default_mode_0600),
	    cmocka_unit_test(file_mode_exactly),
	    cmocka_unit_test(file_mode_option_values),
	    cmocka_unit_test(file_mode_init_refuses),
	    cmocka_unit_test(file_mode_from_environment),
	    cmocka_unit_test(setuid_ignores_environment),
	};

	if (argc == 4 && !strcmp(argv[1], "--child"))
		return child_main(argv[2], argv[3]);
	return cmocka_run_group_tests(tests, ts_group_setup, group_teardown);
}
