/*
 * command/record.c - `xfdr record`: run a program with the recorder, then summarize its trace.
 * How a program is run and its traces found is the launcher's (launcher/); here are the
 * options, the choices and every message.
 *
 * What it does, in order:
 *  1. The output directory: created if missing (like mkdir -p), made absolute (the program may
 *     chdir()), and refused if XFDR_OPTIONS could not carry it (':' or white space split it).
 *  2. The program: found as execvp() finds it and inspected (launcher/elf_probe.c) to
 *     choose how to record it. A program already linked with xfdr (libxfdr.a: it defines
 *     xfdr_init; or DT_NEEDED libxfdr.so.0) runs as it is: preloading a second runtime would
 *     record every call twice. XRay sleds without xfdr are refused: compiler-rt keeps XRay's
 *     entry points hidden inside the executable, where a preloaded library cannot reach them.
 *     Hooks (-finstrument-functions, -pg -mfentry) and manual xfdr_* references get
 *     libxfdr.so.0 preloaded (never libxfdr.so, the linker script). A file that is not ELF (a
 *     script) is run with the preload, silently; an ELF program with no instrumentation is
 *     refused unless --force (its shared libraries may be instrumented).
 *  3. XFDR_OPTIONS = the caller's, then start=1, output=DIR/, mode=, then each --option: the
 *     runtime applies keys left to right (runtime/control/options.c), so later ones win.
 *  4. fork + execvp (launcher/run.c). A failed exec is reported through a close-on-exec pipe,
 *     as a shell would (127 not found, 126 found but not runnable). While the program runs,
 *     signals a terminal sends to the whole foreground process group (si_code SI_KERNEL)
 *     already reached the program and are not forwarded; the same signals sent to xfdr alone
 *     by kill() (si_code <= 0) are forwarded. Either way xfdr stays alive to write the summary.
 *  5. The traces (launcher/trace_listing.c): "*-<pid>-<n>.xray" (and "-t<tid>.xray" per
 *     thread) in the output directory that are new or changed since the start (a listing
 *     taken before the run), the program's own pid first; other pids are its children. The
 *     newest of the program's is summarized: verified with the reader library, then threads,
 *     function records, drops and the ring's overwritten buffers (from the .map, else the
 *     trace's XFDRDROP event; analysis/trace_facts.c) and the functions with the most self
 *     time (analysis/latency.c).
 *  6. The exit status is the program's; after a death by signal, xfdr dies by the same signal
 *     (without a core file of its own), so a shell sees what it would have seen.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/event_cost.h"
#include "analysis/latency.h"
#include "analysis/trace_facts.h"
#include "analysis/window.h"
#include "command/cli.h"
#include "command/option_table.h"
#include "launcher/elf_probe.h"
#include "launcher/options_text.h"
#include "launcher/run.h"
#include "launcher/trace_listing.h"

#define DEFAULT_TOP 10
#define SUMMARY_COLUMNS 100
#define LIST_MAX 10 /* other traces listed by name */
#define BUSIEST_MIN_EVENTS 1000

struct record_opts {
	const char *dir;      /* -o; NULL: the current directory */
	int mode;	      /* index in mode_names; -1: the recorder's default */
	const char **options; /* --option KEY=VALUE, in order */
	size_t noptions;
	const char *include;   /* --include GLOBS; NULL: none */
	const char *exclude;   /* --exclude GLOBS; NULL: none */
	const char *max_depth; /* --max-depth N; NULL: none */
	int force;
	int quiet;
	long top;
	char **argv; /* PROGRAM ARGS..., NULL-terminated */
};

/* ---- Options ------------------------------------------------------------------------------- */

static const char *const mode_names[] = {"ring", "bounded", "stream", NULL};

static const char record_head[] =
    "usage: xfdr record [-o DIR] [--mode=ring|bounded|stream] [--include=GLOBS] [--exclude=GLOBS]\n"
    "                   [--max-depth=N] [--option KEY=VALUE]... [--force] [--top=N] [-q]\n"
    "                   [--] PROGRAM [ARGS...]\n"
    "\n"
    "Run PROGRAM with the xfdr recorder started at load, wait for it, then print on\n"
    "stderr where its trace is and a summary: how the program ended, threads, function\n"
    "records, drops, after a crash the crashing thread's frames (the crash site first),\n"
    "the functions of short calls (under 1 us on average) that left half the events or\n"
    "more (what `xfdr funcs` suggests excluding, with the --exclude that does it), what\n"
    "--include, --exclude and --max-depth left out, and the functions with the most self\n"
    "time, whose total counts a recursive call once; without a trace, why (whether xfdr\n"
    "was in the program, whether its handler of the fatal signal ran, what it said).\n"
    "stdout is left to the program. Options end at PROGRAM, so its own options need no\n"
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
    "XFDR_OPTIONS is the caller's XFDR_OPTIONS, then start=1, output=DIR/, mode=MODE,\n"
    "include=, exclude=, max_depth= (a backslash before each ':' and space of GLOBS) and\n"
    "each --option in order. The runtime checks it before PROGRAM runs: an unknown key,\n"
    "a bad value or a pool larger than this machine's memory is refused with the\n"
    "runtime's own line, and PROGRAM is not run.\n"
    "\n"
    "Signals: Ctrl-C and the other signals a terminal sends reach PROGRAM directly and\n"
    "do not end xfdr record; SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent\n"
    "to xfdr record alone (kill PID) are passed on to PROGRAM. The recorder writes its\n"
    "trace at exit and on SIGINT and SIGTERM; after SIGKILL or _exit() there is none,\n"
    "nor from a process that recorded nothing (an uninstrumented program PROGRAM ran).\n"
    "\n"
    "Examples:\n"
    "  gcc -finstrument-functions -g prog.c -o prog && xfdr record ./prog input.txt\n"
    "  clang -fxray-instrument prog.c -lxfdr -o prog && xfdr record ./prog\n"
    "  xfdr record -o traces --mode=ring --option buffer_max=64 ./prog\n"
    "  xfdr record --mode=stream --option stream_max_bytes=1g ./server\n"
    "  xfdr record --exclude='swap,std::*' --max-depth=20 ./prog\n"
    "  xfdr account traces/xfdr-prog-*.xray\n"
    "  xfdr funcs traces/xfdr-prog-4242-0.xray   what recording each function cost\n"
    "\n"
    "Exit status: PROGRAM's; if a signal killed it, xfdr record dies by the same signal.\n"
    "Without running PROGRAM: 2 for a usage error, options the runtime refuses, a DIR\n"
    "that cannot be created, a PROGRAM refused as above or a runtime that cannot be\n"
    "found; 127 when PROGRAM is not found, 126 when it cannot be executed.\n";

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
	if (launch_options_split(eq + 1))
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

static int parse_patterns(void *list, const char *arg)
{
	if (!*arg)
		return cli_usage(
		    "'--include' and '--exclude' need shell patterns, e.g. 'swap,std::*'");
	*(const char **)list = arg;
	return 0;
}

static int parse_depth(void *depth, const char *arg)
{
	if (!*arg || arg[strspn(arg, "0123456789")])
		return cli_usage("'--max-depth' takes a number of open calls, not '%s'", arg);
	*(const char **)depth = arg;
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
			 "bounded: keep the first events and count the rest as drops;\n"
			 "stream: the whole run, written as buffers fill (a writer\n"
			 "thread; stream_max_bytes= and stream_max_files= through\n"
			 "--option cut it into files and keep the newest)"),
	    CLI_OPT_CALL(0, "include", &o->include, parse_patterns, "GLOBS",
			 "record only the functions whose names match one of these\n"
			 "shell patterns, comma-separated ('\\,' in one): names as the\n"
			 ".map shows them, C++ ones also demangled ('ns::*')"),
	    CLI_OPT_CALL(0, "exclude", &o->exclude, parse_patterns, "GLOBS",
			 "leave out the functions that match (their callees are\n"
			 "recorded under their caller); `xfdr funcs` suggests which.\n"
			 "Calls left out are counted in the .map, not dropped"),
	    CLI_OPT_CALL(0, "max-depth", &o->max_depth, parse_depth, "N",
			 "leave out calls entered with N calls already open, and\n"
			 "everything inside them (0: no limit)"),
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
	    CLI_OPT_FLAG('q', "quiet", &o->quiet, 1,
			 "no summary, and none of the runtime's notes (the files\n"
			 "it wrote, its drop counts); only errors"),
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
	if (launch_options_split(abs)) {
		/* The given name may do where the absolute one cannot. */
		if (launch_options_split(dir) || strlen(dir) >= PATH_MAX) {
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

/* XFDR_OPTIONS for the program, into text (LAUNCH_OPTIONS_MAX). Returns 0 or CLI_USAGE. */
static int compose_options(const struct record_opts *o, const char *dir, char *text)
{
	const char *caller = getenv("XFDR_OPTIONS");
	const char *const filters[][2] = {{"include", o->include}, {"exclude", o->exclude}};
	size_t n = 0, i;
	int w;

#define ADD(...)                                                                                   \
	do {                                                                                       \
		w = snprintf(text + n, LAUNCH_OPTIONS_MAX - n, __VA_ARGS__);                       \
		if (w < 0 || (size_t)w >= LAUNCH_OPTIONS_MAX - n)                                  \
			goto too_long;                                                             \
		n += (size_t)w;                                                                    \
	} while (0)

	if (caller && *caller)
		ADD("%s:", caller);
	ADD("start=1:output=%s/", dir);
	if (o->mode >= 0)
		ADD(":mode=%s", mode_names[o->mode]);
	for (i = 0; i < sizeof(filters) / sizeof(filters[0]); i++) {
		if (!filters[i][1])
			continue;
		ADD(":%s=", filters[i][0]);
		/* escaped, to stay one item */
		w = launch_options_escape(filters[i][1], text + n, LAUNCH_OPTIONS_MAX - n);
		if (w < 0)
			goto too_long;
		n += (size_t)w;
	}
	if (o->max_depth)
		ADD(":max_depth=%s", o->max_depth);
	for (i = 0; i < o->noptions; i++)
		ADD(":%s", o->options[i]);
#undef ADD
	return 0;
too_long:
	cli_error("XFDR_OPTIONS would be longer than the %d bytes the runtime reads; shorten the "
		  "options or the output directory",
		  LAUNCH_OPTIONS_MAX - 1);
	return CLI_USAGE;
}

/* ---- The summary ------------------------------------------------------------------------- */

static const char *const drop_causes[] = {"no_buffer", "reentrant", "too_large", "no_thread_slot"};

/* The first line the lenient read left out, for "map is unusable". */
static void first_left_out(void *ctx, uint64_t line, const char *text)
{
	struct xfdr_error *first = ctx;

	(void)line;
	if (!first->text[0])
		snprintf(first->text, sizeof(first->text), "%s", text);
}

/*
 * The sidecar at path, read as xfdr_names_read_lenient() does, so that its pool facts count
 * whatever else is wrong in it. Returns the names when the sidecar is also valid as a whole
 * (nothing left out), else NULL after saying why; *all gets what was read (NULL: nothing).
 */
static struct xfdr_names *load_map(const char *path, struct xfdr_names **all)
{
	struct xfdr_error err, first = {0, ""};
	FILE *f = fopen(path, "r");

	*all = NULL;
	if (!f) {
		fprintf(stderr, "  map is unusable: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if (xfdr_names_read_lenient(f, path, first_left_out, &first, all, &err) < 0)
		fprintf(stderr, "  map is unusable: %s\n", err.text);
	else if (first.text[0])
		fprintf(stderr, "  map is unusable: %s\n", first.text);
	fclose(f);
	return first.text[0] ? NULL : *all;
}

static const char *signal_name(int sig, char *buf, size_t n)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, n, "SIG%s", abbrev);
	else
		snprintf(buf, n, "signal %d", sig);
	return buf;
}

static const char *size_text(uint64_t bytes, char *buf, size_t n)
{
	if (bytes >= (1u << 30) && bytes % (1u << 30) == 0)
		snprintf(buf, n, "%" PRIu64 " GiB", bytes >> 30);
	else if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
		snprintf(buf, n, "%" PRIu64 " MiB", bytes >> 20);
	else if (bytes >= 1024 && bytes % 1024 == 0)
		snprintf(buf, n, "%" PRIu64 " KiB", bytes >> 10);
	else if (bytes >= (1u << 20))
		snprintf(buf, n, "%.1f MiB", (double)bytes / (1u << 20));
	else if (bytes >= 1024)
		snprintf(buf, n, "%.1f KiB", (double)bytes / 1024);
	else
		snprintf(buf, n, "%" PRIu64 " bytes", bytes);
	return buf;
}

/* "NAME exited with status N" / "was killed by SIGTERM", after how long. */
static void say_ending(const char *prog, const struct launch_run *r)
{
	char sig[32];

	if (WIFSIGNALED(r->status))
		cli_error("%s was killed by %s%s after %.2f s", prog,
			  signal_name(WTERMSIG(r->status), sig, sizeof(sig)),
			  WCOREDUMP(r->status) ? " (core dumped)" : "", r->seconds);
	else
		cli_error("%s exited with status %d after %.2f s", prog, WEXITSTATUS(r->status),
			  r->seconds);
}

/* The sidecar of a trace: TRACE.map, or for a per-thread file "<prefix>-<pid>-<n>.map". */
static void sidecar_of(const char *trace, const struct launch_trace *f, char *map, size_t n)
{
	const char *t;

	snprintf(map, n, "%s.map", trace);
	if (!f->per_thread || access(map, F_OK) == 0)
		return;
	t = strrchr(trace, '-');
	if (t)
		snprintf(map, n, "%.*s.map", (int)(t - trace), trace);
}

/*
 * The drops by cause, and for no_buffer what to do: in bounded mode the pool filled up; in
 * ring mode (which reuses the oldest full buffer) every buffer was some thread's current one,
 * so there were more threads recording than buffers.
 */
static void put_drops(const uint64_t *drop, const char *mode, uint64_t threads)
{
	char text[256], hint[160] = "";
	size_t n = 0, i;

	if (!drop[4]) {
		fprintf(stderr, "  dropped    none\n");
		return;
	}
	for (i = 0; i < 4; i++)
		if (drop[i])
			n += (size_t)snprintf(text + n, sizeof(text) - n, "%s%s %" PRIu64,
					      n ? ", " : "", drop_causes[i], drop[i]);
	if (drop[0] && mode && !strcmp(mode, "bounded"))
		snprintf(hint, sizeof(hint),
			 ": the pool was full; raise buffer_max, or --mode=ring keeps the newest");
	else if (drop[0] && mode && !strcmp(mode, "stream"))
		snprintf(hint, sizeof(hint),
			 ": stream_behind, the writer fell behind; raise buffer_max to ride out "
			 "a slower disk");
	else if (drop[0] && mode && !strcmp(mode, "ring"))
		snprintf(hint, sizeof(hint),
			 ": every buffer was a thread's current one; raise buffer_max above the "
			 "number of threads (%" PRIu64 " here)",
			 threads);
	fprintf(stderr, "  dropped    %" PRIu64 " events (%s)%s\n", drop[4], text, hint);
}

/*
 * When a few functions of short calls left most of the events, name them: what `xfdr funcs`
 * would suggest excluding (analysis/event_cost.h, its default limits), here when they left at
 * least half of all events and BUSIEST_MIN_EVENTS or more (fewer cost nothing worth a line).
 */
static void put_busiest(const struct latency_total *v, size_t n, uint64_t hz, const char *path)
{
	struct latency_row *row = calloc(n ? n : 1, sizeof(*row));
	const struct latency_row **rows = calloc(n ? n : 1, sizeof(*rows));
	const struct latency_row **picked = calloc(n ? n : 1, sizeof(*picked));
	struct event_cost_limits lim = {(hz ? (double)hz : 1e9) * EVENT_COST_SHORTER_THAN_NS * 1e-9,
					EVENT_COST_MIN_SHARE, EVENT_COST_MAX_NAMES};
	uint64_t all = 0, events;
	char *option;
	size_t i, k;

	if (!row || !rows || !picked)
		goto out;
	for (i = 0; i < n; i++) {
		row[i].fid = v[i].fid;
		row[i].name = v[i].name ? v[i].name : "#"; /* unnamed: never picked */
		row[i].count = v[i].count;
		row[i].events = v[i].events;
		row[i].sum = (double)v[i].sum_tsc; /* ticks, as lim.shorter_than */
		rows[i] = &row[i];
		all += v[i].events;
	}
	event_cost_sort(rows, n);
	k = event_cost_pick(rows, n, all, &lim, picked, &events);
	if (!k || 2 * events < all || events < BUSIEST_MIN_EVENTS)
		goto out;
	option = event_cost_exclude_option(picked, k);
	fprintf(stderr, "  busiest    ");
	for (i = 0; i < k; i++)
		fprintf(stderr, "%s%s", i ? ", " : "", picked[i]->name);
	fprintf(
	    stderr,
	    "\n             %.1f%% of the events, in calls under 1 us on average (xfdr funcs %s)\n",
	    100.0 * (double)events / (double)all, path);
	if (option)
		fprintf(stderr, "             to leave them out: xfdr record --%s ...\n", option);
	free(option);
out:
	free(row);
	free(rows);
	free(picked);
}

static void put_top(struct xfdr_trace *t, const struct xfdr_names *names, const struct window *w,
		    long top, const char *path)
{
	struct latency_total *v;
	struct xfdr_error err;
	uint64_t hz = xfdr_trace_header(t)->cycle_frequency;
	size_t n, i, shown, counted = 0;
	char self[32], total[32], per[32], id[16];
	const char *name;
	int width = SUMMARY_COLUMNS - 4 - 12 - 1 - 12 - 1 - 10 - 1 - 12 - 2;

	if (latency_totals(t, names, w, &v, &n, &err)) {
		cli_error("%s", err.text);
		return;
	}
	put_busiest(v, n, hz, path);
	for (i = 0; i < n; i++)
		counted += v[i].count > 0; /* the others only have events */
	if (top <= 0)
		goto out;
	shown = counted < (size_t)top ? counted : (size_t)top;
	if (!counted) {
		fprintf(stderr, "  no complete calls to account\n");
		goto out;
	}
	fprintf(stderr, "  top %zu of %zu functions by self time (outside recorded callees):\n",
		shown, counted);
	fprintf(stderr, "    %12s %12s %10s %12s  %s\n", "self", "total", "calls", "per call",
		"function");
	for (i = 0; shown; i++) {
		if (!v[i].count)
			continue;
		shown--;
		name = v[i].name;
		if (!name) {
			snprintf(id, sizeof(id), "#%u", v[i].fid);
			name = id;
		}
		cli_duration(self, sizeof(self), v[i].self_tsc, hz, CLI_DURATION_SHORT);
		cli_duration(total, sizeof(total), v[i].outer_tsc, hz, CLI_DURATION_SHORT);
		cli_duration(per, sizeof(per), v[i].sum_tsc / v[i].count, hz, CLI_DURATION_SHORT);
		if ((int)strlen(name) > width)
			fprintf(stderr, "    %12s %12s %10" PRIu64 " %12s  %.*s...\n", self, total,
				v[i].count, per, width - 3, name);
		else
			fprintf(stderr, "    %12s %12s %10" PRIu64 " %12s  %s\n", self, total,
				v[i].count, per, name);
	}
out:
	free(v);
}

/*
 * The crash as the crash handler saw it: the signal, then the crashing thread's frames from
 * the .map, the crash site first, each with the function the handler named (or the module
 * and offset where it could not).
 */
static void put_crash(const struct xfdr_names *names, const char *signal, const char *path)
{
	struct xfdr_map_crash c;
	struct xfdr_map_frame fr;
	uint32_t i, n = xfdr_names_frame_count(names);

	if (!xfdr_names_crash(names, &c)) {
		fprintf(stderr, "  crash      %s: its frames are in `xfdr dump %s`\n",
			signal[0] ? signal : "recorded", path);
		return;
	}
	fprintf(stderr,
		"  crash      %s (code %" PRId32 ", address 0x%" PRIx64 ") in thread %" PRIu32
		"%s\n",
		c.signal_name, c.code, c.fault_addr, c.tid, n ? ", innermost frame first:" : "");
	for (i = 0; i < n; i++) {
		const char *module;

		if (!xfdr_names_frame(names, i, &fr))
			continue;
		module = fr.module ? strrchr(fr.module, '/') : NULL;
		module = module ? module + 1 : fr.module ? fr.module : "?";
		if (fr.symbol)
			fprintf(stderr, "    #%-2" PRIu32 " %s (%s)\n", i, fr.symbol, module);
		else if (fr.have_module_vaddr)
			fprintf(stderr, "    #%-2" PRIu32 " 0x%" PRIx64 " (%s+0x%" PRIx64 ")\n", i,
				fr.pc, module, fr.module_vaddr);
		else
			fprintf(stderr, "    #%-2" PRIu32 " 0x%" PRIx64 " (%s)\n", i, fr.pc,
				module);
	}
}

#define SUMMARY_SPANS_MAX 8 /* threads whose spans the summary lists */

/*
 * When a thread's kept history lost part of what it recorded (ring mode), the window every
 * thread's history covers, into *w for the top functions, and each thread's span.
 */
static void put_spans(struct xfdr_trace *t, const struct xfdr_names *names, struct window *w)
{
	uint64_t hz = xfdr_trace_header(t)->cycle_frequency, base = UINT64_MAX, end = 0, since,
		 until;
	struct window_span *s;
	struct xfdr_error err;
	char a[32], b[32], c[32];
	size_t n, i, lost = 0;

	if (window_spans(t, names, &s, &n, &err))
		return;
	for (i = 0; i < n; i++) {
		lost += s[i].lost != 0;
		if (s[i].has_events && s[i].first_tsc < base)
			base = s[i].first_tsc;
		if (s[i].has_events && s[i].last_tsc > end)
			end = s[i].last_tsc;
	}
	if (lost && window_common(s, n, &since, &until) == 1) {
		w->since = since;
		w->until = until;
		fprintf(stderr,
			"  window     %s to %s of %s: where every thread's kept history "
			"holds (the functions below are of it)\n",
			cli_duration(a, sizeof(a), since - base, hz, CLI_DURATION_FULL),
			cli_duration(b, sizeof(b), until - base, hz, CLI_DURATION_FULL),
			cli_duration(c, sizeof(c), end - base, hz, CLI_DURATION_FULL));
	}
	for (i = 0; lost && i < n && i < SUMMARY_SPANS_MAX; i++)
		if (s[i].has_events)
			fprintf(
			    stderr, "    thread %" PRIu32 " (%s) %s to %s%s\n", s[i].thread_id,
			    s[i].name ? s[i].name : "?",
			    cli_duration(a, sizeof(a), s[i].first_tsc - base, hz,
					 CLI_DURATION_FULL),
			    cli_duration(b, sizeof(b), s[i].last_tsc - base, hz, CLI_DURATION_FULL),
			    s[i].lost & WINDOW_LOST_START ? ", older events lost" : "");
	if (lost && n > SUMMARY_SPANS_MAX)
		fprintf(stderr, "    ... and %zu more threads (xfdr dump lists them)\n",
			n - SUMMARY_SPANS_MAX);
	free(s);
}

/* What --include, --exclude and --max-depth left out: calls that are not drops. */
static void put_filtered(const struct xfdr_map_pool *m)
{
	if (!m->have_functions_left_out && !m->max_depth_calls)
		return;
	fprintf(stderr, "  left out   ");
	/* XRay's functions left out are not patched: their calls are not counted */
	if (m->have_functions_left_out) {
		fprintf(stderr, "%" PRIu64 " function%s by --include/--exclude",
			m->functions_left_out, m->functions_left_out == 1 ? "" : "s");
		if (m->filtered_calls)
			fprintf(stderr, " (%" PRIu64 " calls)", m->filtered_calls);
		fprintf(stderr, "%s", m->max_depth_calls ? "; " : "");
	}
	if (m->max_depth_calls)
		fprintf(stderr, "%" PRIu64 " calls deeper than --max-depth", m->max_depth_calls);
	fputc('\n', stderr);
}

/* The summary of one trace file. */
static void summarize(const char *path, const struct launch_trace *f, long top)
{
	struct xfdr_trace *t = NULL;
	struct xfdr_names *names = NULL, *map_lines = NULL;
	struct xfdr_map_pool m;
	struct xfdr_map_crash crash;
	struct xfdr_error err;
	struct trace_facts tf;
	struct window w = WINDOW_ALL;
	char map[2 * PATH_MAX + 8], size[32], bsize[32];
	const uint64_t *drop;
	uint64_t overwritten;
	int have_map;

	sidecar_of(path, f, map, sizeof(map));
	have_map = access(map, F_OK) == 0;
	fprintf(stderr, "  trace      %s (%s)\n", path,
		size_text((uint64_t)f->bytes, size, sizeof(size)));
	fprintf(stderr, "  map        %s\n", have_map ? map : "none (no function names)");
	if (xfdr_trace_open(path, &t, &err) < 0 || xfdr_trace_verify(t, &err) < 0 ||
	    trace_facts_read(t, &tf, &err) < 0) {
		fprintf(stderr, "  INVALID    %s\n", err.text);
		goto out;
	}
	if (have_map)
		names = load_map(map, &map_lines);
	xfdr_names_pool(map_lines, &m);
	if (tf.threads_unrecorded)
		fprintf(stderr,
			"  threads    %" PRIu64 " of %" PRIu64 " (%" PRIu64
			" left no records: every event dropped or overwritten)\n",
			tf.threads, tf.threads + tf.threads_unrecorded, tf.threads_unrecorded);
	else
		fprintf(stderr, "  threads    %" PRIu64 "\n", tf.threads);
	put_spans(t, names, &w);
	fprintf(stderr, "  events     %" PRIu64 " function records\n", tf.functions);
	drop = m.have_drops ? m.dropped : tf.drop;
	if (m.have_drops || tf.have_drops)
		put_drops(drop, m.mode, tf.threads + tf.threads_unrecorded);
	overwritten = m.have_overwritten ? m.overwritten : tf.overwritten;
	if (m.have_buffer_max)
		fprintf(stderr,
			"  pool       %s, %" PRIu64 " buffers of %s; %" PRIu64
			" in the trace, %" PRIu64 " overwritten%s\n",
			m.mode ? m.mode : "?", m.buffer_max,
			size_text(m.buffer_size, bsize, sizeof(bsize)), m.buffers_written,
			overwritten, overwritten ? " (older events lost)" : "");
	else if (overwritten)
		fprintf(stderr, "  overwritten %" PRIu64 " buffers (older events lost)\n",
			overwritten);
	put_filtered(&m);
	if (xfdr_names_crash(map_lines, &crash))
		put_crash(names, crash.signal_name, path);
	put_top(t, names, &w, top, path);
out:
	xfdr_names_free(map_lines);
	if (t)
		xfdr_trace_close(t);
}

/* The last line of the runtime's that starts with prefix ("xfdr: SIGSEGV: "), or NULL. */
static const char *said(const char *messages, const char *prefix, size_t *len)
{
	const char *line = NULL, *p = messages;

	while (p && (p = strstr(p, prefix))) {
		if (p == messages || p[-1] == '\n')
			line = p;
		p += strlen(prefix);
	}
	if (line)
		*len = strcspn(line, "\n");
	return line;
}

/*
 * The program died by a signal and no trace is there. The runtime's own lines (record.c keeps
 * them) tell whether it was in the program, and whether its handler of the signal ran.
 */
static void explain_signal(const struct launch_run *r, const char *opts, const char *name)
{
	char loaded[64], prefix[48];
	const char *line;
	size_t len;
	int sig = WTERMSIG(r->status);
	int crash = sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
		    sig == SIGABRT || sig == SIGTRAP;

	snprintf(loaded, sizeof(loaded), "xfdr: loaded in pid %d\n", (int)r->pid);
	snprintf(prefix, sizeof(prefix), "xfdr: %s: ", name);
	if (!r->messages || !strstr(r->messages, loaded)) {
		cli_error("no trace: the program died by %s, and xfdr was not in it (pid %d): not "
			  "linked with it, and LD_PRELOAD did not reach it (a static or setuid "
			  "program, or a launcher that clears the environment?)",
			  name, (int)r->pid);
	} else if ((line = said(r->messages, prefix, &len))) {
		cli_error("no trace: the program died by %s; xfdr's handler ran and said: %.*s",
			  name, (int)len, line);
	} else if (crash && launch_option_false(opts, "flush_on_crash")) {
		cli_error("no trace: the program died by %s, and XFDR_OPTIONS has flush_on_crash=0",
			  name);
	} else if (crash) {
		cli_error(
		    "no trace: the program died by %s, and xfdr's crash handler never ran: the "
		    "program or a library took the signal from it where xfdr does not see (the "
		    "rt_sigaction system call, a call inside libc), or the signal came while "
		    "blocked",
		    name);
	} else if (sig == SIGTERM || sig == SIGINT) {
		cli_error(
		    "no trace: the program died by %s, which xfdr leaves to the program when it "
		    "handles or ignores it at start (or flush_on_terminate=0)",
		    name);
	} else {
		cli_error(
		    "no trace: the program died by %s, on which xfdr does not flush (it does on "
		    "SIGTERM, SIGINT and crashes; --option flush_signal=SIG for a signal of your "
		    "choice)",
		    name);
	}
}

/* Why no trace was written, as far as can be told. */
/* Did the runtime say that the program's pid recorded nothing, and so wrote no file? */
static int recorded_nothing(const struct launch_run *r)
{
	char line[64];

	snprintf(line, sizeof(line), "xfdr: recorded nothing in pid %d: ", (int)r->pid);
	return r->messages && strstr(r->messages, line) != NULL;
}

static void explain_missing(const struct launch_run *r, const char *opts, const char *dir)
{
	char live[PATH_MAX], sig[32];
	DIR *d;
	struct dirent *e;
	char suffix[48];
	int have_live = 0;

	snprintf(suffix, sizeof(suffix), "-%d-live.xray", (int)r->pid);
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		size_t len = strlen(e->d_name), sl = strlen(suffix);

		if (len > sl && !strcmp(e->d_name + len - sl, suffix)) {
			snprintf(live, sizeof(live), "%s/%s", dir, e->d_name);
			have_live = 1;
		}
	}
	if (d)
		closedir(d);
	if (WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGKILL)
		cli_error("no trace: SIGKILL cannot be caught, so the recorder could not flush%s",
			  have_live ? ""
				    : " (backing=file keeps a pool that `xfdr recover` reads)");
	else if (WIFSIGNALED(r->status))
		explain_signal(r, opts, signal_name(WTERMSIG(r->status), sig, sizeof(sig)));
	else if (recorded_nothing(r))
		cli_error("no trace: nothing was recorded (no instrumented function ran in pid %d, "
			  "so the recorder wrote no file)",
			  (int)r->pid);
	else if (launch_option_false(opts, "flush_at_exit"))
		cli_error("no trace: XFDR_OPTIONS has flush_at_exit=0, and the program flushed "
			  "nothing itself");
	else
		cli_error("no trace: the program may have left through _exit() or exec(), the "
			  "recorder did not start, or its flush could not write the file (see its "
			  "messages above)");
	if (have_live)
		cli_error("its live pool remains: xfdr recover %s", live);
}

/*
 * On stderr: how prog ended, where its trace is (a trace of dir not in before, of the
 * program's pid), a summary of it with the top functions by total time, or why there is none;
 * then the other traces written during the run. opts is the XFDR_OPTIONS it ran with.
 */
static void report(const char *prog, long top, const struct launch_run *r, const char *opts,
		   const char *dir, const struct launch_listing *before)
{
	struct launch_listing after;
	struct launch_trace *mine = NULL;
	char path[PATH_MAX * 2];
	size_t i, listed = 0, others = 0;

	say_ending(prog, r);
	if (launch_list_traces(dir, &after)) {
		cli_error("%s: cannot list the traces: %s", dir, strerror(errno));
		return;
	}
	launch_listing_sort(&after);
	for (i = 0; i < after.n; i++) {
		struct launch_trace *f = &after.v[i];

		if (launch_trace_was_there(before, f))
			continue;
		if (f->pid == (uint64_t)r->pid) {
			if (!mine)
				mine = f;
			else
				others++;
		} else {
			others++;
		}
	}
	if (mine) {
		snprintf(path, sizeof(path), "%s/%s", dir, mine->name);
		summarize(path, mine, top);
	} else if (others && WIFEXITED(r->status)) {
		cli_error("pid %d wrote no trace itself (a script or a launcher?); other processes "
			  "did",
			  (int)r->pid);
	} else {
		explain_missing(r, opts, dir);
	}
	if (!others)
		goto out;
	fprintf(stderr,
		"  also written during the run (%zu: earlier flushes, other threads' files, "
		"child processes):\n",
		others);
	for (i = 0; i < after.n; i++) {
		struct launch_trace *f = &after.v[i];

		if (f == mine || launch_trace_was_there(before, f))
			continue;
		if (listed++ == LIST_MAX) {
			fprintf(stderr, "    ... and %zu more\n", others - LIST_MAX);
			break;
		}
		fprintf(stderr, "    %s/%s (pid %" PRIu64 ")\n", dir, f->name, f->pid);
	}
out:
	launch_listing_free(&after);
}

/* ---- The verb ----------------------------------------------------------------------------- */

/* --option output=... moves the traces: where the runtime will write them, into dir. */
static void traces_dir(const char *opts, char *dir)
{
	char out[LAUNCH_OPTIONS_MAX];
	struct stat st;
	size_t len;

	if (!launch_option_value(opts, "output", out, sizeof(out)))
		return;
	len = strlen(out);
	if (len && out[len - 1] != '/' && !(stat(out, &st) == 0 && S_ISDIR(st.st_mode))) {
		char *slash = strrchr(out, '/');

		if (slash)
			slash[slash == out] = '\0';
		else
			strcpy(out, ".");
	}
	while (len > 1 && out[len - 1] == '/')
		out[--len] = '\0';
	if (strlen(out) < PATH_MAX)
		strcpy(dir, out);
}

/*
 * The runtime beside this command, into lib, and LD_PRELOAD with it when the program needs it
 * (how). A program linked with xfdr needs none: lib is then "" when there is none. Returns 0,
 * or CLI_USAGE after saying why.
 */
static int find_runtime(enum how how, char *lib)
{
	struct xfdr_error err;
	int found = !launch_find_runtime(lib, &err);

	if (!found)
		lib[0] = '\0';
	if (how != RUN_PRELOAD || (found && !launch_set_preload(lib, &err)))
		return 0;
	cli_error("%s", err.text);
	return CLI_USAGE;
}

/*
 * The options checked by the runtime itself (lib; "": none to ask) before the program runs: a
 * typo or an impossible pool would otherwise give one line from the program and a run recorded
 * as nobody asked, or not at all. A program linked with xfdr when no runtime is beside this
 * command checks them itself at its start. Returns 0, or CLI_USAGE after saying why nothing ran.
 */
static int check_options(const char *lib, const char *prog, const char *opts)
{
	struct xfdr_error err;
	int problems;

	if (!*lib)
		return 0;
	problems = launch_options_check(lib, opts, &err);
	if (problems < 0) {
		cli_error("%s", err.text);
		return CLI_USAGE;
	}
	if (problems) {
		cli_error(
		    "%s not run: the runtime would not take XFDR_OPTIONS as given (%s above); "
		    "fix %s",
		    prog, problems == 1 ? "the line" : "the lines",
		    problems == 1 ? "that option" : "those options");
		return CLI_USAGE;
	}
	return 0;
}

/* Run the program; its summary unless --quiet. Returns the status to leave with. */
static int run_and_report(const struct record_opts *o, const char *opts, const char *dir)
{
	struct launch_listing before = {NULL, 0, 0};
	struct launch_run r = {0};
	struct xfdr_error err;
	int status;

	launch_list_traces(dir, &before);
	if (launch_run(o->argv, o->quiet, &r, &err)) {
		cli_error("%s", err.text);
		launch_listing_free(&before);
		return CLI_USAGE;
	}
	if (r.wait_errno)
		cli_error("waitpid: %s", strerror(r.wait_errno));
	if (r.exec_errno) {
		cli_error("%s: %s", o->argv[0], strerror(r.exec_errno));
		status = r.exec_errno == ENOENT ? 127 : 126;
	} else {
		if (!o->quiet)
			report(o->argv[0], o->top, &r, opts, dir, &before);
		status = launch_exit_like(&r, CLI_FAIL);
	}
	launch_listing_free(&before);
	free(r.messages);
	return status;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o;
	char dir[PATH_MAX], prog[PATH_MAX], lib[PATH_MAX], opts[LAUNCH_OPTIONS_MAX];
	enum how how;
	int status;

	status = parse_record_opts(argc, argv, &o);
	if (status)
		goto out;
	status = choose_how(o.argv[0], launch_find_program(o.argv[0], prog) ? NULL : prog, o.force,
			    &how);
	if (!status)
		status = output_dir(o.dir ? o.dir : ".", dir);
	if (!status)
		status = find_runtime(how, lib);
	if (!status)
		status = compose_options(&o, dir, opts);
	if (!status)
		status = check_options(lib, o.argv[0], opts);
	if (status)
		goto out;
	if (setenv("XFDR_OPTIONS", opts, 1)) {
		cli_error("setenv: %s", strerror(errno));
		status = CLI_USAGE;
		goto out;
	}
	traces_dir(opts, dir);
	status = run_and_report(&o, opts, dir);
out:
	free(o.options);
	return status < 0 ? CLI_OK : status;
}
