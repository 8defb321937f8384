/*
 * bench/harness.h - the measuring part shared by every benchmark program.
 *
 * Each program measures one or more rows and prints them on stdout as tab-separated lines
 * that bench/run.sh turns into the table:
 *
 *   info <TAB> key <TAB> value
 *   row  <TAB> key <TAB> label <TAB> median <TAB> min <TAB> max <TAB> reps <TAB> events <TAB> note
 *        <TAB> minor page faults taken inside the timed repetitions (all of them together)
 *        <TAB> workload (leaf or tree) <TAB> calls the callee counted, warm-up included
 *   trace <TAB> key <TAB> events recorded <TAB> trace bytes <TAB> events dropped <TAB> note
 *   process <TAB> key <TAB> whole-process wall time in ms
 *
 * ns values are per event (one function entry or one exit), timed with CLOCK_MONOTONIC around
 * the whole loop so the clock that times the loop is not the clock the loop reads.
 * A "trace" line comes from the step that counts what a recorder wrote (bench/trace_count.c
 * for xfdr, the peer scripts for the others), run after the program, untimed; it covers the
 * whole run, warm-up included, so a clean run records (reps + 1) x events. A "process" line
 * comes from a wrapper that times the traced program itself (bench/peer_lttng.sh, whose
 * session set-up is not the program's); without one, bench/run.sh times the row's command.
 * The harness is never instrumented: only bench/callee.c is built with -fxray-instrument,
 * -finstrument-functions or -pg, so every row pays for exactly the calls it names.
 */
#ifndef XFDR_BENCH_HARNESS_H
#define XFDR_BENCH_HARNESS_H

#include <stdint.h>

#if defined(__clang__)
#define BENCH_NOINSTR __attribute__((no_instrument_function, xray_never_instrument))
#else
#define BENCH_NOINSTR __attribute__((no_instrument_function))
#endif

/* Compiler-only barrier: keeps each event's work inside its iteration, costs no instruction. */
#define bench_barrier() __asm__ __volatile__("" ::: "memory")

/* The function id every hook in the benchmarks reports for the measured callee. */
enum { BENCH_FID = 1 };

/*
 * The two call patterns every row measures (-w): a noinline leaf called in a loop
 * (bench_callee, events / 2 calls a repetition), and a recursive binary call tree
 * (bench_tree(depth): 2^(depth+1) - 1 calls, the depth chosen so a repetition makes at most
 * -n events). Both count their calls in bench_calls, so the binary checks its call count.
 */
enum bench_workload { BENCH_LEAF, BENCH_TREE };

/*
 * What argv sets: "-r 7 -n 2000000 -w leaf [-k ROW]" for every program; the recorder programs also
 * take their buffer size and count ("-b 65536 -m 2016"), where to flush ("-o DIR"), which
 * clock to force ("-c rdtsc") and any other xfdr option ("-O mode=ring"); 0 or NULL when not
 * given. For the tree, events is what one
 * repetition really makes (2 per call), not -n.
 */
struct bench_cfg {
	unsigned reps;
	uint64_t events;
	enum bench_workload workload;
	unsigned tree_depth;
	uint64_t buf_bytes;
	uint64_t buf_count;
	const char *out_dir;
	const char *clock;
	const char *row; /* -k: the one row a program of several rows measures (NULL: all) */
	/* -O KEY=VALUE, repeatable: more xfdr options (mode, func_duration_threshold_us...) */
	const char *xfdr_opts[8];
	unsigned n_xfdr_opts;
};

/* Whether -k left `key` to measure. */
int bench_wants(const struct bench_cfg *cfg, const char *key);

/* One measured loop: performs exactly `events` events (events / 2 calls for a call pattern). */
typedef void (*bench_loop_fn)(uint64_t events);

/*
 * The loop of every row whose instrumentation is in the callee (hooks, sleds, -pg, peers):
 * the leaf loop or one call tree, as -w chose. Rows that instrument the caller themselves
 * (the macros, the no-op hook) bring their own loops for both workloads.
 */
void bench_loop_workload(uint64_t events);

/*
 * bench_init - parse argv, pin the process to the CPU it runs on, print the info lines.
 * Exits with status 2 and a message on a bad argument. Pinning that fails is reported as an
 * info line, not an error: the numbers are still valid, only noisier.
 */
void bench_init(struct bench_cfg *cfg, int argc, char **argv);

/*
 * bench_run_row - run `loop` once unmeasured (warm-up: page faults, caches, branch predictors),
 * then cfg->reps timed times, and print one row line with the median, min and max ns/event.
 * `note` may be NULL. Returns the median ns/event.
 */
double bench_run_row(const struct bench_cfg *cfg, const char *key, const char *label,
		     bench_loop_fn loop, const char *note);

/*
 * bench_measure - like bench_run_row() without printing: fills ns[0..reps-1], warm-up
 * included only when `warmup` is set. For programs that must check their recording before
 * they can write the row's note (bench_print_row() then prints it).
 */
void bench_measure(const struct bench_cfg *cfg, bench_loop_fn loop, int warmup, double *ns);
void bench_print_row(const struct bench_cfg *cfg, const char *key, const char *label, double *ns,
		     const char *note);

/* CLOCK_MONOTONIC in ns; qsort's comparison of doubles; a positive integer from argv or exit 2. */
uint64_t bench_now_ns(void);
int bench_cmp_double(const void *a, const void *b);
uint64_t bench_parse_u64(const char *s, const char *what);

/* Machine facts, printed as info lines by the program that measures the floor. */
void bench_print_machine(void);

/* The measured callees (bench/callee.c): noinline, in their own translation unit. */
void bench_callee(uint64_t i);
void bench_tree(unsigned depth);

/* Calls of bench_callee and bench_tree so far; a macro-instrumented tree counts its own. */
extern volatile uint64_t bench_calls;

/* "leaf" or "tree" */
const char *bench_workload_name(const struct bench_cfg *cfg);

#endif
