/*
 * tests/unit/runtime/test_runtime_fnmap_mt.c - the function-id map (runtime/symbols/fnmap*), in
 * process.
 *
 * Ids: first-seen order, stable, unique under concurrent first sight, right through cache
 * collisions and signal handlers that look up while the thread is inside a lookup; the
 * 28-bit overflow path gives FNMAP_ID_NONE, reports once and is listed in the .map lines.
 * Names: the .map lines name a static function of this binary
 * at the address `nm` gives (an independent oracle), a shared library's function, and say
 * <unknown> for anonymous memory and for files that are not valid ELF. Without XRay in the
 * process the XRay hooks report -ENOSYS.
 *
 * The map is process-wide: each case reasons relative to fnmap_ids_given() before it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>
#include <dlfcn.h>
#include <link.h>

#include "runtime/flush/map_functions.h"
#include "runtime/hooks/xray.h"
#include "runtime/symbols/fnmap.h"
#include "runtime/symbols/symbolizer.h"

#define SYNTH_COUNT 20000u
#define MT_THREADS 8

/* Synthetic "function addresses": fnmap takes any address; these are unique and stable. */
static char synth[SYNTH_COUNT];
static char synth_overflow[16];
static char synth_signal[4096];

static char tmp_dir[64];

static uintptr_t synth_addr(uint32_t i)
{
	return (uintptr_t)&synth[i];
}

__attribute__((noinline, used)) void fnmap_probe_function(void);
__attribute__((noinline, used)) void fnmap_probe_function(void)
{
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline)) static int fnmap_probe_static(int x)
{
	__asm__ __volatile__("" ::: "memory");
	return x + 1;
}

/* Capture what fn writes to fd 2 (the runtime prints with write(2)). */
static void capture_stderr(void (*fn)(void *), void *arg, char *out, size_t out_bytes)
{
	char path[128];
	int fd, saved;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/stderr.txt", tmp_dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	saved = dup(2);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fd, 2), 2);
	fn(arg);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	n = read(fd, out, out_bytes - 1);
	assert_true(n >= 0);
	out[n] = '\0';
	close(fd);
	unlink(path);
}

/* The .map function lines as map_write_functions() writes them (caller frees). */
static char *map_lines(void)
{
	char path[128];
	char *text;
	off_t size;
	int fd;

	snprintf(path, sizeof(path), "%s/lines.map", tmp_dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(map_write_functions(fd), 0);
	size = lseek(fd, 0, SEEK_END);
	assert_true(size > 0);
	text = malloc((size_t)size + 1);
	assert_non_null(text);
	assert_int_equal(pread(fd, text, (size_t)size, 0), size);
	text[size] = '\0';
	close(fd);
	unlink(path);
	return text;
}

/* The "function<TAB>id<TAB>..." line of id, without its newline, into out; 0 if none. */
static int map_line_of(const char *text, uint32_t id, char *out, size_t out_bytes)
{
	char key[32];
	const char *p;
	size_t len;

	snprintf(key, sizeof(key), "function\t%u\t", id);
	for (p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, key, strlen(key)))
			continue;
		len = strcspn(p, "\n");
		if (len >= out_bytes)
			len = out_bytes - 1;
		memcpy(out, p, len);
		out[len] = '\0';
		return 1;
	}
	return 0;
}

/* ---- ids ------------------------------------------------------------------------------- */

static void ids_first_seen_and_stable(void **state)
{
	uint32_t base = fnmap_ids_given(), i, id[8];

	(void)state;
	for (i = 0; i < 8; i++)
		id[i] = fnmap_id((const void *)synth_addr(i));
	/* New addresses get consecutive ids in the order they are first seen. */
	for (i = 0; i < 8; i++)
		assert_int_equal(id[i], base + FNMAP_ID_FIRST + i);
	assert_int_equal(fnmap_ids_given(), base + 8);
	/* Seen again, in another order: the same ids, and nothing new is handed out. */
	for (i = 8; i-- > 0;)
		assert_int_equal(fnmap_id((const void *)synth_addr(i)), id[i]);
	for (i = 0; i < 8; i++)
		assert_int_equal(fnmap_addr_of(id[i]), synth_addr(i));
	assert_int_equal(fnmap_ids_given(), base + 8);
	assert_int_equal(fnmap_addr_of(0), 0);
	assert_int_equal(fnmap_addr_of(FNMAP_ID_NONE), 0);
}

/* More addresses than cache entries, looked up round after round: every hit is right. */
static void cache_collisions(void **state)
{
	uint32_t ids[3000], i, round;

	(void)state;
	for (i = 0; i < 3000; i++)
		ids[i] = fnmap_id((const void *)synth_addr(100 + i));
	for (round = 0; round < 5; round++)
		for (i = 0; i < 3000; i++) {
			uint32_t k = round & 1 ? 2999 - i : (i * 7) % 3000;

			assert_int_equal(fnmap_id((const void *)synth_addr(100 + k)), ids[k]);
		}
	for (i = 0; i < 3000; i++)
		assert_int_equal(fnmap_addr_of(ids[i]), synth_addr(100 + i));
}

struct mt_arg {
	uint32_t seed;
	uint32_t ids[SYNTH_COUNT];
};

static void *mt_worker(void *p)
{
	struct mt_arg *a = p;
	uint32_t i, round;

	/* Each thread walks the same new addresses in its own order, twice. */
	for (round = 0; round < 2; round++)
		for (i = 0; i < SYNTH_COUNT - 4000; i++) {
			uint32_t k = 4000 + (i * 7919u + a->seed * 104729u) % (SYNTH_COUNT - 4000);
			uint32_t id = fnmap_id((const void *)synth_addr(k));

			if (round && a->ids[k] != id)
				a->ids[k] = UINT32_MAX; /* changed: caught below */
			else if (!round)
				a->ids[k] = id;
		}
	return NULL;
}

static void concurrent_first_sight(void **state)
{
	static struct mt_arg args[MT_THREADS];
	pthread_t th[MT_THREADS];
	uint32_t base = fnmap_ids_given(), i, t, given, n = SYNTH_COUNT - 4000, live = 0;
	uint8_t *seen;

	(void)state;
	for (t = 0; t < MT_THREADS; t++) {
		args[t].seed = t;
		assert_int_equal(pthread_create(&th[t], NULL, mt_worker, &args[t]), 0);
	}
	for (t = 0; t < MT_THREADS; t++)
		assert_int_equal(pthread_join(th[t], NULL), 0);
	given = fnmap_ids_given() - base;
	/* Lost races may burn ids, never reuse them. */
	assert_true(given >= n);
	seen = calloc((size_t)given + 1, 1);
	assert_non_null(seen);
	for (i = 4000; i < SYNTH_COUNT; i++) {
		uint32_t id = args[0].ids[i];

		for (t = 1; t < MT_THREADS; t++)
			assert_int_equal(args[t].ids[i], id);
		assert_true(id > base && id <= base + given);
		assert_int_equal(seen[id - base], 0);
		seen[id - base] = 1;
		assert_int_equal(fnmap_addr_of(id), synth_addr(i));
	}
	/* The burnt ids own no address. */
	for (i = 1; i <= given; i++)
		live += fnmap_addr_of(base + i) != 0;
	assert_int_equal(live, n);
	free(seen);
}

/* ---- overflow ----------------------------------------------------------------------------- */

struct overflow_run {
	uint32_t ids[6];
	uint32_t known;
	uint32_t known_again;
};

static void overflow_lookups(void *p)
{
	struct overflow_run *r = p;
	uint32_t i;

	for (i = 0; i < 6; i++)
		r->ids[i] = fnmap_id((const void *)&synth_overflow[i]);
	r->known_again = fnmap_id((const void *)synth_addr(0));
	/* Refused lookups are not cached: each one is counted. */
	r->ids[5] = fnmap_id((const void *)&synth_overflow[5]);
}

static void overflow_gives_none_and_reports(void **state)
{
	uint32_t base = fnmap_ids_given(), i;
	uint64_t before = fnmap_unassigned(FNMAP_OVERFLOW);
	struct overflow_run r;
	char err[1024], line[256];
	char *text;

	(void)state;
	r.known = fnmap_id((const void *)synth_addr(0));
	/* Room for exactly three more ids. */
	fnmap_inspect_limit_ids(base + FNMAP_ID_FIRST + 3);
	capture_stderr(overflow_lookups, &r, err, sizeof(err));
	fnmap_inspect_limit_ids(FNMAP_ID_NONE);
	for (i = 0; i < 3; i++)
		assert_int_equal(r.ids[i], base + FNMAP_ID_FIRST + i);
	for (i = 3; i < 6; i++)
		assert_int_equal(r.ids[i], FNMAP_ID_NONE);
	assert_int_equal(r.known_again, r.known);
	assert_int_equal(fnmap_unassigned(FNMAP_OVERFLOW) - before, 4);
	/* One line, however many lookups were refused. */
	assert_int_equal(strlen(err) > 0, 1);
	assert_non_null(strstr(err, "more distinct functions than 28-bit ids"));
	assert_non_null(strstr(err, "268435455"));
	assert_ptr_equal(strchr(err, '\n'), err + strlen(err) - 1);
	text = map_lines();
	assert_true(map_line_of(text, FNMAP_ID_NONE, line, sizeof(line)));
	assert_string_equal(line, "function\t268435455\t<unassigned>\t-\t-\t-");
	snprintf(line, sizeof(line), "functions_unassigned\toverflow\t%llu\n",
		 (unsigned long long)fnmap_unassigned(FNMAP_OVERFLOW));
	assert_non_null(strstr(text, line));
	free(text);
	/* With the limit lifted, new functions get ids again, after the three. */
	assert_int_equal(fnmap_id((const void *)&synth_overflow[3]), base + FNMAP_ID_FIRST + 3);
}

/* ---- names ------------------------------------------------------------------------------- */

/* The value of symbol `name` in this executable, by nm (not by our code). */
static uint64_t nm_value(const char *name)
{
	char cmd[256], line[512];
	uint64_t v = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nm /proc/%d/exe", (int)getpid());
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long value;
		char type, sym[256];

		if (sscanf(line, "%llx %c %255s", &value, &type, sym) == 3 && !strcmp(sym, name))
			v = value;
	}
	pclose(f);
	if (!v)
		fail_msg("nm does not list %s", name);
	return v;
}

static void names_from_symbol_tables(void **state)
{
	char exe[512], line[1024], expect[1024];
	uint32_t id_pub, id_static, id_anon, id_lib;
	void *anon;
	ssize_t n;
	char *text;

	(void)state;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	anon = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(anon != MAP_FAILED);
	id_pub = fnmap_id((const void *)(uintptr_t)fnmap_probe_function);
	id_static = fnmap_id((const void *)(uintptr_t)fnmap_probe_static);
	id_anon = fnmap_id((const char *)anon + 16);
	id_lib = fnmap_id((const void *)(uintptr_t)_cmocka_run_group_tests);
	assert_int_equal(fnmap_probe_static(1), 2);
	text = map_lines();
	assert_non_null(strstr(text, "functions\tcyg\t"));

	assert_true(map_line_of(text, id_pub, line, sizeof(line)));
	snprintf(expect, sizeof(expect), "function\t%u\tfnmap_probe_function\t%#llx\t%s\t%#llx",
		 id_pub, (unsigned long long)(uintptr_t)fnmap_probe_function, exe,
		 (unsigned long long)nm_value("fnmap_probe_function"));
	assert_string_equal(line, expect);

	/* A static function: in .symtab only, where dladdr() would not look. */
	assert_true(map_line_of(text, id_static, line, sizeof(line)));
	snprintf(expect, sizeof(expect), "function\t%u\tfnmap_probe_static\t%#llx\t%s\t%#llx",
		 id_static, (unsigned long long)(uintptr_t)fnmap_probe_static, exe,
		 (unsigned long long)nm_value("fnmap_probe_static"));
	assert_string_equal(line, expect);

	assert_true(map_line_of(text, id_anon, line, sizeof(line)));
	snprintf(expect, sizeof(expect), "function\t%u\t<unknown>\t%#llx\t-\t-", id_anon,
		 (unsigned long long)(uintptr_t)((const char *)anon + 16));
	assert_string_equal(line, expect);

	assert_true(map_line_of(text, id_lib, line, sizeof(line)));
	assert_non_null(strstr(line, "\t_cmocka_run_group_tests\t"));
	assert_non_null(strstr(line, "libcmocka"));

	assert_non_null(strstr(text, "functions_unnamed\t"));
	free(text);
	munmap(anon, 4096);
}

/*
 * Files mapped executable that are not usable ELF: the module is named, the name unknown,
 * and nothing faults. Each is a page-sized file mapped PROT_EXEC where /tmp allows it.
 */
static void hostile_files_give_no_name(void **state)
{
	static const char *const kinds[] = {"garbage", "elf-bad-offsets", "elf-truncated"};
	unsigned char page[4096];
	unsigned i;

	(void)state;
	for (i = 0; i < 3; i++) {
		struct sym_table st;
		struct sym_result r;
		char path[128];
		void *map;
		int fd;

		memset(page, 0, sizeof(page));
		if (i == 0) {
			unsigned j;

			for (j = 0; j < sizeof(page); j++)
				page[j] = (unsigned char)(j * 131u + 7u);
		} else {
			/* A 64-bit little-endian ELF header whose tables lie far outside the file.
			 */
			memcpy(page, "\177ELF\2\1\1", 7);
			page[16] = 3;			  /* ET_DYN */
			page[18] = 62;			  /* EM_X86_64 */
			memset(page + 32, 0xff, 8);	  /* e_phoff */
			memset(page + 40, 0x7f, 8);	  /* e_shoff */
			page[54] = 56;			  /* e_phentsize */
			page[56] = 0xff, page[57] = 0xff; /* e_phnum */
			page[58] = 64;			  /* e_shentsize */
			page[60] = 0xff, page[61] = 0xff; /* e_shnum */
		}
		snprintf(path, sizeof(path), "%s/%s", tmp_dir, kinds[i]);
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0700);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, page, i == 2 ? 40 : sizeof(page)), i == 2 ? 40 : 4096);
		map = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		close(fd);
		if (map == MAP_FAILED) {
			unlink(path);
			skip(); /* /tmp mounted noexec */
		}
		assert_int_equal(sym_open(&st), 0);
		sym_lookup(&st, (uintptr_t)map + 8, &r);
		assert_non_null(r.module);
		assert_string_equal(r.module, path);
		assert_null(r.name);
		sym_close(&st);
		munmap(map, 4096);
		unlink(path);
	}
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY), out;

	assert_true(in >= 0);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	assert_true(out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	close(in);
	close(out);
}

static const char *name_at(uintptr_t addr, char *module, size_t module_bytes)
{
	static char name[128];
	struct sym_table st;
	struct sym_result r;

	assert_int_equal(sym_open(&st), 0);
	sym_lookup(&st, addr, &r);
	snprintf(module, module_bytes, "%s", r.module ? r.module : "");
	snprintf(name, sizeof(name), "%s", r.name ? r.name : "");
	sym_close(&st);
	return name;
}

/*
 * Which file is mapped: a library whose file was replaced by an identical copy (a new inode,
 * as overlay filesystems show it) is still named, from the first page we have mapped; one
 * replaced by different content is not (its old symbols are gone from the disk).
 */
static void replaced_files(void **state)
{
	char lib[128], copy[128], other[128], module[256];
	struct link_map *lm;
	uintptr_t fn;
	void *h;

	(void)state;
	/* The library this binary's cmocka calls come from. */
	h = dlopen("libcmocka.so.0", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(h);
	assert_int_equal(dlinfo(h, RTLD_DI_LINKMAP, &lm), 0);
	snprintf(lib, sizeof(lib), "%s/libcopy.so", tmp_dir);
	snprintf(copy, sizeof(copy), "%s/libcopy.so.new", tmp_dir);
	snprintf(other, sizeof(other), "/proc/%d/exe", (int)getpid());
	copy_file(lm->l_name, lib);
	dlclose(h);
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	fn = (uintptr_t)dlsym(h, "_cmocka_run_group_tests");
	assert_true(fn != 0);
	assert_string_equal(name_at(fn, module, sizeof(module)), "_cmocka_run_group_tests");
	assert_string_equal(module, lib);

	copy_file(lib, copy);
	assert_int_equal(rename(copy, lib), 0);
	assert_string_equal(name_at(fn, module, sizeof(module)), "_cmocka_run_group_tests");

	copy_file(other, copy);
	assert_int_equal(rename(copy, lib), 0);
	assert_string_equal(name_at(fn, module, sizeof(module)), "");
	assert_string_equal(module, lib);
	dlclose(h);
	unlink(lib);
}

static void section_lookup(void **state)
{
	(void)state;
	assert_int_equal(sym_file_has_section("/proc/self/exe", ".text"), 1);
	assert_int_equal(sym_file_has_section("/proc/self/exe", ".symtab"), 1);
	assert_int_equal(sym_file_has_section("/proc/self/exe", "xray_instr_map"), 0);
	assert_int_equal(sym_file_has_section("/proc/self/exe", ".tex"), 0);
	assert_int_equal(sym_file_has_section("/nonexistent/file", ".text"), 0);
	assert_int_equal(sym_file_has_section("/proc/self/maps", ".text"), 0);
}

/* ---- signal handlers inside lookups ---------------------------------------------------------- */

static uint32_t signal_ids[sizeof(synth_signal)];
static volatile sig_atomic_t signal_runs, signal_wrong;

static void on_alarm(int sig)
{
	uint32_t i = (uint32_t)signal_runs * 13u % sizeof(synth_signal);

	(void)sig;
	if (fnmap_id(&synth_signal[i]) != signal_ids[i])
		signal_wrong = signal_wrong + 1;
	signal_runs = signal_runs + 1;
}

/*
 * A timer signal lands in the middle of lookups (hits and misses: twice the cache's
 * entries cycle through it); the handler's own lookups must get the right ids and must not
 * disturb the interrupted one.
 */
static void signal_handler_lookups(void **state)
{
	struct itimerval every = {{0, 200}, {0, 200}}, off = {{0, 0}, {0, 0}};
	struct sigaction sa;
	uint32_t i, round, wrong = 0;

	(void)state;
	for (i = 0; i < sizeof(synth_signal); i++)
		signal_ids[i] = fnmap_id(&synth_signal[i]);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	assert_int_equal(setitimer(ITIMER_REAL, &every, NULL), 0);
	for (round = 0; round < 400 || signal_runs < 50; round++) {
		for (i = 0; i < sizeof(synth_signal); i++)
			wrong += fnmap_id(&synth_signal[(i * 31u) % sizeof(synth_signal)]) !=
				 signal_ids[(i * 31u) % sizeof(synth_signal)];
		if (round > 100000)
			break;
	}
	assert_int_equal(setitimer(ITIMER_REAL, &off, NULL), 0);
	signal(SIGALRM, SIG_DFL);
	assert_int_equal(wrong, 0);
	assert_int_equal(signal_wrong, 0);
	assert_true(signal_runs >= 50);
}

/* ---- threads come and go ------------------------------------------------------------------ */

struct short_lived_arg {
	void *cache;
	int failed;
};

static void *short_lived(void *p)
{
	struct short_lived_arg *a = p;
	uint32_t i;

	for (i = 0; i < 64; i++)
		if (fnmap_id((const void *)synth_addr(i)) == FNMAP_ID_NONE)
			a->failed = 1;
	a->cache = fnmap_self.cache;
	return NULL;
}

/* A thread's cache is mapped on its first miss and unmapped when the thread exits. */
static void thread_caches_released(void **state)
{
	unsigned i;

	(void)state;
	for (i = 0; i < 100; i++) {
		struct short_lived_arg a = {NULL, 0};
		unsigned char vec[1];
		pthread_t t;

		assert_int_equal(pthread_create(&t, NULL, short_lived, &a), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_int_equal(a.failed, 0);
		assert_non_null(a.cache);
		/* mincore() fails with ENOMEM for an address that is not mapped. */
		assert_int_equal(mincore(a.cache, 4096, vec), -1);
		assert_int_equal(errno, ENOMEM);
	}
}

/* ---- XRay absent ----------------------------------------------------------------------------- */

static void xray_absent(void **state)
{
	char *text;

	(void)state;
	assert_int_equal(hooks_xray_install(), -ENOSYS);
	assert_int_equal(hooks_xray_uninstall(), -ENOSYS);
	/* Nothing registered XRay's ids: the .map lists only this map's (earlier cases made some).
	 */
	text = map_lines();
	assert_null(strstr(text, "functions\txray"));
	assert_non_null(strstr(text, "functions\tcyg\t"));
	free(text);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/xfdr-fnmap-XXXXXX");
	assert_non_null(mkdtemp(tmp_dir));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rmdir(tmp_dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(ids_first_seen_and_stable),
	    cmocka_unit_test(cache_collisions),
	    cmocka_unit_test(concurrent_first_sight),
	    cmocka_unit_test(overflow_gives_none_and_reports),
	    cmocka_unit_test(names_from_symbol_tables),
	    cmocka_unit_test(hostile_files_give_no_name),
	    cmocka_unit_test(section_lookup),
	    cmocka_unit_test(replaced_files),
	    cmocka_unit_test(signal_handler_lookups),
	    cmocka_unit_test(thread_caches_released),
	    cmocka_unit_test(xray_absent),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
