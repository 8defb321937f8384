/*
 * tests/support/child.h - the tests' one way to run a program as a child process.
 *
 * One call starts the program, gives its stdout and stderr the destinations asked for, waits
 * for it (at most a timeout, if one is set) and returns how it ended. Used for the xfdr
 * command (child_xfdr(): its arguments in, its status and output out) and llvm-xray (output
 * captured into memory), the compilers and the e2e programs of
 * the hook tests (output appended to a log file, extra environment, a timeout) and the test
 * binary re-executed as its own child (stderr to /dev/null).
 *
 * The child is started with posix_spawn(), not fork(): under a sanitizer, copying the test's
 * huge mappings made every run slow, and nothing runs in the child before exec.
 */
#ifndef XFDR_TESTS_SUPPORT_CHILD_H
#define XFDR_TESTS_SUPPORT_CHILD_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * What a program linked with libxfdr.a needs after it, as the Makefile's RUNTIME_LIBS less the
 * threads and dl flags (each test's link line ends its own way): for argv arrays of compilers.
 */
#define CHILD_RUNTIME_LIBS "-lurcu-bp", "-lurcu-cds", "-lurcu-common", "-lunwind", "-liberty"

/* Where one of the child's streams goes. Zero, the default, is the test's own stream. */
enum child_sink {
	CHILD_INHERIT = 0, /* the test's own stdout or stderr */
	CHILD_CAPTURE,	   /* into child_result.out or .err; both drained at once by poll() */
	CHILD_DEVNULL,	   /* /dev/null */
	CHILD_FILE,	   /* appended to .path, created 0644 if missing */
	CHILD_FD,	   /* a copy of the test's descriptor .fd (a pty, say) */
	CHILD_CLOSED,	   /* closed: the program runs without it */
	CHILD_STDOUT,	   /* stderr only: wherever stdout goes, as 2>&1 */
};

struct child_stream {
	enum child_sink to;
	const char *path; /* CHILD_FILE */
	int fd;		  /* CHILD_FD */
};

/*
 * What to run. argv is NULL-terminated; argv[0] is also the program unless .program is set.
 * A program name without '/' is searched in the test's own PATH (not in env_add's).
 * env_add: NULL, or NULL-terminated "NAME=value" entries, each replacing the inherited NAME.
 * timeout_s: 0 waits for ever; otherwise at the deadline the child is killed with SIGKILL, what
 * it wrote so far is printed (captured text, or its CHILD_FILE) and the test fails with
 * "<argv[0]> did not finish within <timeout_s> s".
 */
struct child_spec {
	char *const *argv;
	const char *program;
	char *const *env_add;
	struct child_stream out, err;
	unsigned timeout_s;
};

struct child_result {
	pid_t pid;		 /* the child's id; -1 if it could not be started */
	int status;		 /* exit status; 127 if not started; 128 + n after signal n */
	int signal;		 /* n if signal n ended it, else 0 */
	char *out, *err;	 /* CHILD_CAPTURE: all it wrote, NUL-terminated; else "" */
	size_t out_len, err_len; /* without the NUL */
};

/*
 * child_run - run spec and wait for the child; fill r (free it with child_result_free()).
 * A child that cannot be started (program not found, a redirection that fails) is reported
 * as status 127, as a shell does. Fails the test only on a timeout or when the test itself
 * runs out of pipes or memory.
 */
void child_run(const struct child_spec *spec, struct child_result *r);

/* child_run() with stdout and stderr captured and nothing else set. */
void child_capture(char *const argv[], struct child_result *r);

/*
 * child_output - run argv with stdout and stderr captured; returns its stdout (free it). A
 * program not found, or one that does not exit 0, fails the test, naming what (e.g. "the JSON
 * checker on FILE") and showing both outputs.
 */
char *child_output(char *const argv[], const char *what);

/* Free the captured text; pid, status and signal stay readable. */
void child_result_free(struct child_result *r);

/* The xfdr command under test ($XFDR_BIN; the test fails when it is not set). */
const char *child_xfdr_bin(void);

/*
 * child_xfdr - run the xfdr command under test with the arguments (NULL-terminated, at most
 * 30), stdout and stderr captured into r (free it with child_result_free()); returns its exit
 * status. Death by a signal fails the test, showing its stderr.
 * child_xfdr_to - the same with the streams and the rest of *how (its argv and program are
 * ignored): CHILD_CLOSED stdout, say, or stderr to a pty.
 * child_xfdr_v - child_xfdr_to() with the arguments in ap (how NULL: both captured).
 * child_xfdr_ok - the same as child_xfdr(), output captured and freed; fails the test, showing both
 * outputs, unless xfdr exits 0.
 * child_xfdr_silent - the same, and fails the test unless stderr is empty too.
 * child_xfdr_refused - the same; fails the test unless xfdr exits 1 with stderr exactly want_err.
 */
int child_xfdr(struct child_result *r, ...);
int child_xfdr_to(struct child_result *r, const struct child_spec *how, ...);
int child_xfdr_v(struct child_result *r, const struct child_spec *how, va_list ap);
void child_xfdr_ok(const char *arg, ...);
void child_xfdr_silent(const char *arg, ...);
void child_xfdr_refused(const char *want_err, const char *arg, ...);

/*
 * child_xfdr_on_terminal - the xfdr command with the arguments (NULL-terminated) and its
 * stdout on a pseudo-terminal, stderr captured into r (free it with child_result_free());
 * returns how many bytes reached the terminal.
 */
size_t child_xfdr_on_terminal(struct child_result *r, ...);
/* The llvm-xray to compare with ($XFDR_LLVM_XRAY, else llvm-xray from PATH). */
const char *child_llvm_xray(void);

/* Print a file the child wrote (a log) to stderr, each line behind "  | "; quiet if absent. */
void child_print_file(const char *path);

#endif /* XFDR_TESTS_SUPPORT_CHILD_H */
