/*
 * command/record.c - `xfdr record`: run a program with the recorder, then summarize its trace.
 *
 * What it does, in order:
 *  1. The output directory: created if missing (like mkdir -p), made absolute (the program may
 *     chdir()), and refused if XFDR_OPTIONS could not carry it (':' or white space split it).
 *  2. The program: found as execvp() finds it and inspected (elf_probe.c) to choose how to
 *     record it. A program already linked with xfdr (libxfdr.a: it defines xfdr_init; or
 *     DT_NEEDED libxfdr.so.0) runs as it is: preloading a second runtime would record every
 *     call twice. XRay sleds without xfdr are refused: compiler-rt keeps XRay's entry points
 *     hidden inside the executable, where a preloaded library cannot reach them. Hooks
 *     (-finstrument-functions, -pg -mfentry) and manual xfdr_* references get libxfdr.so.0
 *     preloaded (never libxfdr.so, the linker script). A file that is not ELF (a script) is
 *     run with the preload, silently; an ELF program with no instrumentation is refused unless
 *     --force (its shared libraries may be instrumented).
 *  3. XFDR_OPTIONS = the caller's, then start=1, output=DIR/, mode=, then each --option: the
 *     runtime applies keys left to right (runtime/control/options.c), so later ones win.
 *  4. fork + execvp. A failed exec is reported through a close-on-exec pipe, as a shell would
 *     (127 not found, 126 found but not runnable). While the program runs, signals a terminal
 *     sends to the whole foreground process group (si_code SI_KERNEL) already reached the
 *     program and are not forwarded; the same signals sent to xfdr alone by kill() (si_code
 *     <= 0) are forwarded. Either way xfdr stays alive to write the summary.
 *  5. The traces: "*-<pid>-<n>.xray" (and "-t<tid>.xray" per thread) in the output directory
 *     that are new or changed since the start (a listing taken before the run), the program's
 *     own pid first; other pids are its children. The newest of the program's is summarized:
 *     verified with the reader library, then threads, function records, drops and the ring's
 *     overwritten buffers (from the .map, else the trace's XFDRDROP event) and the functions
 *     with the most self time (account.c's pairing).
 *  6. The exit status is the program's; after a death by signal, xfdr dies by the same signal
 *     (without a core file of its own), so a shell sees what it would have seen.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "command/cli.h"
#include "command/option_table.h"
#include "command/elf_probe.h"
#include "command/record.h"

/* The runtime ignores an XFDR_OPTIONS this long or longer (env_store in lifecycle.c). */
#define RT_OPTIONS_MAX 4096
#define DEFAULT_TOP 10

struct record_opts {
	const char *dir;      /* -o; NULL: the current directory */
	int mode;	      /* index in mode_names; -1: the recorder's default */
	const char **options; /* --option KEY=VALUE, in order */
	size_t noptions;
	int force;
	int quiet;
	long top;
	char **argv; /* PROGRAM ARGS..., NULL-terminated */
};

/* ---- Options ------------------------------------------------------------------------------- */

static const char *const mode_names[] = {"ring", "bounded", NULL};

static const char record_head[] =
    "usage: xfdr record [-o DIR] [--mode=bounded|ring] [--option KEY=VALUE]... [--force]\n"
    "                   [--top=N] [-q] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Run PROGRAM with the xfdr recorder started at load, wait for it, then print on\n"
    "stderr where its trace is and a summary: how the program ended, threads, function\n"
    "records, drops, after a crash the crashing thread's frames (the crash site first),\n"
    "and the functions with the most self time; without a trace, why (whether xfdr was\n"
    "in the program, whether its handler of the fatal signal ran, what it said). stdout\n"
    "is left to the program. Options end at PROGRAM, so its own options need no\n"
    "quoting; write '--' before a PROGRAM whose name starts with '-'.\n";

static const char record_tail[] =
    "How PROGRAM is recorded is read from its ELF file:\n"
    "  -finstrument-functions, or gcc -pg -mfentry -minstrument-return=call: the runtime\n"
    "      is preloaded (LD_PRELOAD=PREFIX/lib/libxfdr.so.0, found next to this command)\n"
    "  linked with xfdr (libxfdr.a, or -lxfdr, e.g. clang -fxray-instrument ... -lxfdr):\n"
    "      run as it is, never with a second runtime preloaded\n"
    "  clang -fxray-instrument without xfdr linked in: refused, since a preloaded library\n"
    "      cannot reach XRay's hidden entry points; link it with -lxfdr\n"
    "  no instrumentation: refused, unless --force\n"
    "  not an ELF file (a script): run with the runtime preloaded\n"
    "XFDR_OPTIONS is the caller's XFDR_OPTIONS, then start=1, output=DIR/, mode=MODE and\n"
    "each --option in order; the runtime reports unknown keys and bad values itself.\n"
    "\n"
    "Signals: Ctrl-C and the other signals a terminal sends reach PROGRAM directly and\n"
    "do not end xfdr record; SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent\n"
    "to xfdr record alone (kill PID) are passed on to PROGRAM. The recorder writes its\n"
    "trace at exit and on SIGINT and SIGTERM; after SIGKILL or _exit() there is none.\n"
    "\n"
    "Examples:\n"
    "  gcc -finstrument-functions -g prog.c -o prog && xfdr record ./prog input.txt\n"
    "  clang -fxray-instrument prog.c -lxfdr -o prog && xfdr record ./prog\n"
    "  xfdr record -o traces --mode=ring --option buffer_max=64 ./prog\n"
    "  xfdr account traces/xfdr-prog-*.xray\n"
    "\n"
    "Exit status: PROGRAM's; if a signal killed it, xfdr record dies by the same signal.\n"
    "Without running PROGRAM: 2 for a usage error, a DIR that cannot be created, a\n"
    "PROGRAM refused as above or a runtime that cannot be found; 127 when PROGRAM is not\n"
    "found, 126 when it cannot be executed.\n";

static int is_sep(char c)
{
	return c == ':' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
	       c == '\f';
}

static int has_sep(const char *s)
{
	for (; *s; s++)
		if (is_sep(*s))
			return 1;
	return 0;
}

/* A --option argument: KEY=VALUE, KEY a name, nothing that would split XFDR_OPTIONS. */
static int check_option(const char *kv)
{
	const char *eq = strchr(kv, '=');
	const char *p;

	if (!eq || eq == kv)
		return cli_usage("'--option' takes KEY=VALUE (an XFDR_OPTIONS key), not '%s'", kv);
	for (p = kv; p < eq; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_'))
			return cli_usage("'--option %s': the key must be letters, digits and '_'",
					 kv);
	if (has_sep(eq + 1))
		return cli_usage("'--option %s': XFDR_OPTIONS cannot carry ':' or white space in "
				 "a value",
				 kv);
	return 0;
}

static int add_option(void *opts, const char *kv)
{
	struct record_opts *o = opts;
	int rc = check_option(kv);

	if (rc == 0)
		o->options[o->noptions++] = kv;
	return rc;
}

static int parse_dir(void *dir, const char *arg)
{
	if (!*arg)
		return cli_usage("'--output' needs a directory");
	*(const char **)dir = arg;
	return 0;
}

static int parse_top(void *top, const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (*arg < '0' || *arg > '9' || *end || errno || v > 1000000)
		return cli_usage("'--top' takes a number from 0 to 1000000, not '%s'", arg);
	*(long *)top = v;
	return 0;
}

/* Returns 0 with *o filled (free o->options), -1 after --help, or a status after an error. */
static int parse_record_opts(int argc, char **argv, struct record_opts *o)
{
	const struct cli_option options[] = {
	    CLI_OPT_CALL('o', "output", &o->dir, parse_dir, "DIR",
			 "write the traces into DIR (default: the current directory),\n"
			 "created if missing"),
	    CLI_OPT_WORD(0, "mode", &o->mode, mode_names, "MODE",
			 "ring (the recorder's default): when the buffer pool is\n"
			 "full, reuse the oldest buffer, keeping the newest events;\n"
			 "bounded: keep the first events and count the rest as drops"),
	    {.kind = CLI_OPTION_CALL,
	     .long_name = "option",
	     .arg = CLI_ARG_SPACED,
	     .arg_name = "KEY=VALUE",
	     .value = o,
	     .call = add_option,
	     .help = "another XFDR_OPTIONS key for the runtime, e.g.\n"
		     "buffer_max=1024, buffer_size=1m, flush_signal=USR2\n"
		     "(repeatable; a later key wins over an earlier one)"},
	    CLI_OPT_FLAG(0, "force", &o->force, 1,
			 "run PROGRAM even if it shows no instrumentation (its shared\n"
			 "libraries may be instrumented)"),
	    CLI_OPT_CALL(0, "top", &o->top, parse_top, "N",
			 "list the N functions with the most self time (default 10;\n"
			 "0: none)"),
	    CLI_OPT_FLAG('q', "quiet", &o->quiet, 1, "no summary; only errors"),
	    CLI_OPT_HELP,
	    CLI_OPT_END,
	};
	/* Options end at PROGRAM, whose own options are its business. */
	const struct cli_command cmd = {
	    .head = record_head,
	    .tail = record_tail,
	    .column = 25,
	    .flags = CLI_STOP_AT_OPERAND,
	    .operands = CLI_SOME_OPERANDS,
	    .operand = "PROGRAM",
	    .options = options,
	};

	memset(o, 0, sizeof(o[0]));
	o->mode = -1;
	o->top = DEFAULT_TOP;
	o->options = calloc((size_t)argc, sizeof(*o->options));
	if (!o->options) {
		cli_error("out of memory");
		return CLI_USAGE;
	}
	return cli_options_parse(&cmd, argc, argv, &o->argv);
}

/* ---- The output directory ------------------------------------------------------------------ */

/* mkdir -p path. Returns 0 or an errno. */
static int make_dirs(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path), i;
	struct stat st;

	if (len >= sizeof(buf))
		return ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0777) && errno != EEXIST)
			return errno;
		buf[i] = path[i];
	}
	if (stat(path, &st))
		return errno;
	return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

/* DIR created, checked and made absolute into abs (PATH_MAX). Returns 0 or a status. */
static int output_dir(const char *dir, char *abs)
{
	int err = make_dirs(dir);

	if (err) {
		cli_error("%s: cannot create the output directory: %s", dir, strerror(err));
		return CLI_USAGE;
	}
	if (!realpath(dir, abs)) {
		cli_error("%s: %s", dir, strerror(errno));
		return CLI_USAGE;
	}
	if (access(abs, W_OK | X_OK)) {
		cli_error("%s: cannot write traces there: %s", dir, strerror(errno));
		return CLI_USAGE;
	}
	if (has_sep(abs)) {
		/* The given name may do where the absolute one cannot. */
		if (has_sep(dir) || strlen(dir) >= PATH_MAX) {
			cli_error(
			    "%s: XFDR_OPTIONS cannot carry a directory name with ':' or white "
			    "space; choose another with -o",
			    dir);
			return CLI_USAGE;
		}
		strcpy(abs, dir);
	}
	return 0;
}

/* ---- The program ------------------------------------------------------------------------- */

/*
 * The file execvp() would run for name, into path (PATH_MAX): name itself when it has a '/',
 * else the first executable regular file in $PATH. Returns 0, or -1 when none is found (exec
 * then says why).
 */
static int find_program(const char *name, char *path)
{
	const char *dirs = getenv("PATH"), *p, *colon;
	struct stat st;
	size_t dlen, nlen = strlen(name);

	if (strchr(name, '/')) {
		if (nlen >= PATH_MAX)
			return -1;
		memcpy(path, name, nlen + 1);
		return 0;
	}
	if (!dirs)
		dirs = "/bin:/usr/bin";
	for (p = dirs;; p = colon + 1) {
		colon = strchr(p, ':');
		dlen = colon ? (size_t)(colon - p) : strlen(p);
		/* An empty entry is the current directory, as for execvp(). */
		if (dlen + nlen + 2 <= PATH_MAX) {
			if (dlen) {
				memcpy(path, p, dlen);
				path[dlen] = '/';
				memcpy(path + dlen + 1, name, nlen + 1);
			} else {
				memcpy(path, name, nlen + 1);
			}
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0)
				return 0;
		}
		if (!colon)
			return -1;
	}
}

enum how { RUN_PLAIN, RUN_PRELOAD };

static void advise_flags(void)
{
	cli_error("build it with one of:");
	cli_error("  gcc or clang -finstrument-functions ...       (recorded through LD_PRELOAD)");
	cli_error("  gcc -pg -mfentry -minstrument-return=call ... (recorded through LD_PRELOAD)");
	cli_error("  clang -fxray-instrument ... $(pkg-config --libs xfdr)");
	cli_error("or use --force to run it anyway (e.g. its shared libraries are instrumented)");
}

/* Decide from the program's file how to run it. Returns 0 with *how, or CLI_USAGE (refused). */
static int choose_how(const char *name, const char *path, int force, enum how *how)
{
	struct elf_probe p;
	int linked, hooks;

	*how = RUN_PRELOAD;
	/* Unreadable or not a regular file: exec will tell, with the preload in place. */
	if (!path || elf_probe_file(path, &p) || !p.elf)
		return 0;
	if (!p.inspected) {
		cli_error("%s: not a 64-bit little-endian ELF file; running it with the runtime "
			  "preloaded",
			  name);
		return 0;
	}
	linked = p.xfdr_static || p.xfdr_needed;
	hooks = p.cyg || p.fentry;
	if (linked) {
		*how = RUN_PLAIN;
		return 0;
	}
	if (p.xray && !hooks) {
		cli_error(
		    "%s has XRay sleds (clang -fxray-instrument) but is not linked with xfdr:",
		    name);
		cli_error(
		    "compiler-rt keeps XRay's entry points hidden inside the executable, so a "
		    "preloaded runtime cannot patch them;");
		cli_error("link it with -lxfdr: clang -fxray-instrument ... $(pkg-config --libs "
			  "xfdr)");
		return CLI_USAGE;
	}
	if (p.xray)
		cli_error("%s: its XRay sleds will not be recorded (link with -lxfdr for them); "
			  "recording its -finstrument-functions or -mfentry hooks",
			  name);
	if (hooks || p.xfdr_api || force)
		return 0;
	if (!p.sections)
		cli_error("%s has no section table to inspect: no instrumentation found", name);
	else
		cli_error("%s has no instrumentation (no XRay sleds, no -finstrument-functions or "
			  "-mfentry hooks, no xfdr calls)",
			  name);
	advise_flags();
	return CLI_USAGE;
}

/*
 * The runtime next to this command: dirname(realpath(/proc/self/exe))/../lib/libxfdr.so.0,
 * into lib (PATH_MAX). Returns 0 or CLI_USAGE after naming what was tried.
 */
static int find_runtime(char *lib)
{
	char exe[PATH_MAX], *slash;
	struct stat st;

	if (!realpath("/proc/self/exe", exe)) {
		cli_error("cannot find the runtime: /proc/self/exe: %s", strerror(errno));
		return CLI_USAGE;
	}
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	if ((size_t)snprintf(lib, PATH_MAX, "%s/lib/libxfdr.so.0", exe) >= PATH_MAX) {
		cli_error("cannot find the runtime: %s/lib/libxfdr.so.0: %s", exe,
			  strerror(ENAMETOOLONG));
		return CLI_USAGE;
	}
	if (stat(lib, &st) || !S_ISREG(st.st_mode)) {
		cli_error("cannot find the runtime to preload: tried %s (beside this command's "
			  "bin/); reinstall xfdr",
			  lib);
		return CLI_USAGE;
	}
	if (has_sep(lib)) {
		cli_error("%s: LD_PRELOAD cannot carry a path with ':' or white space", lib);
		return CLI_USAGE;
	}
	return 0;
}

/* A sanitizer's runtime, which must stay first in LD_PRELOAD. */
static int is_sanitizer_runtime(const char *entry, size_t n)
{
	const char *base = entry, *p;
	size_t bn;

	for (p = entry; p < entry + n; p++)
		if (*p == '/')
			base = p + 1;
	bn = (size_t)(entry + n - base);
	return (bn > 7 && (!strncmp(base, "libasan", 7) || !strncmp(base, "libtsan", 7) ||
			   !strncmp(base, "liblsan", 7) || !strncmp(base, "libhwasan", 9))) ||
	       (bn > 8 && !strncmp(base, "libubsan", 8)) ||
	       (bn > 13 && !strncmp(base, "libclang_rt.", 12) && memmem(base, bn, "san", 3));
}

/*
 * LD_PRELOAD with lib first, after any sanitizer runtimes already there (they refuse to start
 * unless first). Returns 0, or CLI_USAGE after a message.
 */
static int set_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD"), *p, *keep_end;
	char *v;
	size_t n;

	if (!old || !*old)
		return setenv("LD_PRELOAD", lib, 1) ? CLI_USAGE : 0;
	/* Split as ld.so does: spaces and colons. */
	keep_end = old;
	for (p = old; *p;) {
		while (*p == ' ' || *p == ':')
			p++;
		n = strcspn(p, " :");
		if (!n || !is_sanitizer_runtime(p, n))
			break;
		p += n;
		keep_end = p;
	}
	n = strlen(old) + strlen(lib) + 3;
	v = malloc(n);
	if (!v) {
		cli_error("out of memory");
		return CLI_USAGE;
	}
	if (keep_end == old)
		snprintf(v, n, "%s:%s", lib, old);
	else
		snprintf(v, n, "%.*s:%s%s", (int)(keep_end - old), old, lib, keep_end);
	n = (size_t)setenv("LD_PRELOAD", v, 1);
	free(v);
	return n ? CLI_USAGE : 0;
}

/* XFDR_OPTIONS for the program, into text (RT_OPTIONS_MAX). Returns 0 or CLI_USAGE. */
static int compose_options(const struct record_opts *o, const char *dir, char *text)
{
	const char *caller = getenv("XFDR_OPTIONS");
	size_t n = 0, i;
	int w;

#define ADD(...)                                                                                   \
	do {                                                                                       \
		w = snprintf(text + n, RT_OPTIONS_MAX - n, __VA_ARGS__);                           \
		if (w < 0 || (size_t)w >= RT_OPTIONS_MAX - n)                                      \
			goto too_long;                                                             \
		n += (size_t)w;                                                                    \
	} while (0)

	if (caller && *caller)
		ADD("%s:", caller);
	ADD("start=1:output=%s/", dir);
	if (o->mode >= 0)
		ADD(":mode=%s", mode_names[o->mode]);
	for (i = 0; i < o->noptions; i++)
		ADD(":%s", o->options[i]);
#undef ADD
	return 0;
too_long:
	cli_error("XFDR_OPTIONS would be longer than the %d bytes the runtime reads; shorten the "
		  "options or the output directory",
		  RT_OPTIONS_MAX - 1);
	return CLI_USAGE;
}

/* The value the runtime will use for key in text (the last one), into out; 0 if none. */
int record_option_value(const char *text, const char *key, char *out, size_t n)
{
	size_t klen = strlen(key), len;
	const char *p = text, *e;
	int found = 0;

	while (*p) {
		while (*p && is_sep(*p))
			p++;
		for (e = p; *e && !is_sep(*e); e++)
			;
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

int record_option_false(const char *text, const char *key)
{
	char v[16];

	return record_option_value(text, key, v, sizeof(v)) &&
	       (!strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "false") ||
		!strcasecmp(v, "off"));
}

/* ---- Running it --------------------------------------------------------------------------- */

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define NFORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))

static volatile sig_atomic_t child_pid;

/*
 * A signal a terminal sent to the foreground process group (SI_KERNEL) already reached the
 * program; one sent to xfdr alone (kill, sigqueue: si_code <= 0) is passed on, unless the
 * program sent it. Either way xfdr keeps waiting.
 */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	pid_t pid = (pid_t)child_pid;

	(void)uc;
	if (pid > 0 && si->si_code <= 0 && si->si_pid != pid)
		kill(pid, sig);
	errno = saved;
}

static double since(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

/* The runtime's lines are kept to this much, the newest: enough to tell why. */
#define MESSAGES_MAX (64 * 1024)

/*
 * A file the runtime copies its lines into (print.c: XFDR_RECORD_MESSAGES), unnamed, inherited
 * by the program. Returns its descriptor, or -1 (the summary then knows less).
 */
static int messages_open(void)
{
	const char *tmp = getenv("TMPDIR");
	char path[PATH_MAX], env[96];
	struct stat st;
	int fd;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	fd = open(tmp, O_TMPFILE | O_RDWR | O_APPEND, 0600);
	if (fd < 0 &&
	    (size_t)snprintf(path, sizeof(path), "%s/xfdr-record-XXXXXX", tmp) < sizeof(path)) {
		fd = mkstemp(path);
		if (fd >= 0) {
			unlink(path);
			fcntl(fd, F_SETFL, O_APPEND);
		}
	}
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) ||
	    snprintf(env, sizeof(env), "%d:%llu:%llu", fd, (unsigned long long)st.st_dev,
		     (unsigned long long)st.st_ino) >= (int)sizeof(env) ||
	    setenv("XFDR_RECORD_MESSAGES", env, 1)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The newest MESSAGES_MAX bytes of the file, from a line's start; NULL if empty. */
static char *messages_read(int fd)
{
	off_t size = lseek(fd, 0, SEEK_END), from;
	char *text, *nl;
	ssize_t got;

	if (size <= 0)
		return NULL;
	from = size > MESSAGES_MAX ? size - MESSAGES_MAX : 0;
	text = malloc((size_t)(size - from) + 1);
	if (!text)
		return NULL;
	got = pread(fd, text, (size_t)(size - from), from);
	if (got <= 0) {
		free(text);
		return NULL;
	}
	text[got] = '\0';
	if (from && (nl = strchr(text, '\n')))
		memmove(text, nl + 1, strlen(nl + 1) + 1);
	return text;
}

/* fork, exec, wait. Returns 0 with r filled, or CLI_USAGE when it could not even fork. */
static int run_program(char **argv, struct run *r)
{
	struct sigaction sa, old;
	sigset_t block, saved_mask;
	struct timespec mono;
	int pfd[2], err = 0, ignored[NFORWARDED], mfd;
	ssize_t got;
	size_t i;

	memset(r, 0, sizeof(*r));
	mfd = messages_open();
	sigemptyset(&block);
	for (i = 0; i < NFORWARDED; i++) {
		sigaction(forwarded[i], NULL, &old);
		/* An ignored signal stays ignored, for the program too (nohup, `cmd &`). */
		ignored[i] = old.sa_handler == SIG_IGN;
		sigaddset(&block, forwarded[i]);
	}
	if (pipe2(pfd, O_CLOEXEC)) {
		cli_error("pipe: %s", strerror(errno));
		return CLI_USAGE;
	}
	fflush(NULL);
	/* Blocked until the handlers know the child: nothing is lost between fork and wait. */
	sigprocmask(SIG_BLOCK, &block, &saved_mask);
	clock_gettime(CLOCK_REALTIME, &r->start);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	r->pid = fork();
	if (r->pid < 0) {
		err = errno;
		sigprocmask(SIG_SETMASK, &saved_mask, NULL);
		close(pfd[0]);
		close(pfd[1]);
		if (mfd >= 0)
			close(mfd);
		cli_error("fork: %s", strerror(err));
		return CLI_USAGE;
	}
	if (r->pid == 0) {
		sigprocmask(SIG_SETMASK, &saved_mask, NULL);
		close(pfd[0]);
		execvp(argv[0], argv);
		err = errno;
		if (write(pfd[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(err == ENOENT ? 127 : 126);
	}
	close(pfd[1]);
	child_pid = r->pid;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	for (i = 0; i < NFORWARDED; i++)
		if (!ignored[i])
			sigaction(forwarded[i], &sa, NULL);
	sigprocmask(SIG_SETMASK, &saved_mask, NULL);
	do
		got = read(pfd[0], &err, sizeof(err));
	while (got < 0 && errno == EINTR);
	close(pfd[0]);
	r->exec_errno = got == (ssize_t)sizeof(err) ? err : 0;
	while (waitpid(r->pid, &r->status, 0) < 0) {
		if (errno != EINTR) {
			cli_error("waitpid: %s", strerror(errno));
			r->status = 127 << 8;
			break;
		}
	}
	child_pid = 0;
	r->seconds = since(&mono);
	if (mfd >= 0) {
		r->messages = messages_read(mfd);
		close(mfd);
	}
	/* The summary goes to stderr, which may be a closed pipe: never die of that. */
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* Leave as the program left: its exit status, or death by its signal. */
static int end_like(const struct run *r)
{
	struct rlimit no_core = {0, 0};
	struct sigaction sa;
	sigset_t set;
	int sig;

	if (!WIFSIGNALED(r->status))
		return WIFEXITED(r->status) ? WEXITSTATUS(r->status) : CLI_FAIL;
	sig = WTERMSIG(r->status);
	fflush(NULL);
	/* The program's core, if any, is the one that matters: none of ours beside it. */
	setrlimit(RLIMIT_CORE, &no_core);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	return 128 + sig;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o;
	struct listing before = {NULL, 0, 0};
	struct run r = {0};
	char dir[PATH_MAX], prog[PATH_MAX], lib[PATH_MAX], opts[RT_OPTIONS_MAX];
	enum how how;
	int status;

	status = parse_record_opts(argc, argv, &o);
	if (status)
		goto out;
	status = choose_how(o.argv[0], find_program(o.argv[0], prog) ? NULL : prog, o.force, &how);
	if (status)
		goto out;
	status = output_dir(o.dir ? o.dir : ".", dir);
	if (status)
		goto out;
	if (how == RUN_PRELOAD) {
		status = find_runtime(lib);
		if (!status)
			status = set_preload(lib);
		if (status)
			goto out;
	}
	status = compose_options(&o, dir, opts);
	if (status)
		goto out;
	if (setenv("XFDR_OPTIONS", opts, 1)) {
		cli_error("setenv: %s", strerror(errno));
		status = CLI_USAGE;
		goto out;
	}
	{
		/* --option output=... moves the traces: look where the runtime will write. */
		char out[RT_OPTIONS_MAX];
		struct stat st;

		if (record_option_value(opts, "output", out, sizeof(out))) {
			size_t len = strlen(out);

			if (len && out[len - 1] != '/' &&
			    !(stat(out, &st) == 0 && S_ISDIR(st.st_mode))) {
				char *slash = strrchr(out, '/');

				if (slash)
					slash[slash == out] = '\0';
				else
					strcpy(out, ".");
			}
			while (len > 1 && out[len - 1] == '/')
				out[--len] = '\0';
			if (strlen(out) < sizeof(dir))
				strcpy(dir, out);
		}
	}
	list_traces(dir, &before);
	status = run_program(o.argv, &r);
	if (status)
		goto out;
	if (r.exec_errno) {
		cli_error("%s: %s", o.argv[0], strerror(r.exec_errno));
		status = r.exec_errno == ENOENT ? 127 : 126;
		goto out;
	}
	if (!o.quiet)
		record_report(o.argv[0], o.top, &r, opts, dir, &before);
	status = end_like(&r);
out:
	listing_free(&before);
	free(r.messages);
	free(o.options);
	return status < 0 ? CLI_OK : status;
}
