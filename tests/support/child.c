/*
 * tests/support/child.c - run a program as a child process (see child.h).
 *
 * Life of one run: build the environment (inherited, with env_add replacing names), turn each
 * stream's sink into posix_spawn file actions (stdout first, so that stderr's CHILD_STDOUT
 * copies the finished stdout), spawn, then drain the capture pipes with poll() until both
 * reach end of file, then reap the child. With a timeout, both waits are bounded by one
 * deadline on CLOCK_MONOTONIC.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/child.h"

extern char **environ;

/*
 * Every test process starts from default dispositions and an empty signal mask, so that what
 * it and its children (spawned, forked, or under a pty) do with signals does not depend on how
 * the run was started: a background job of a POSIX shell, or a runner, starts with SIGINT and
 * SIGQUIT ignored, which xfdr rightly leaves alone and every child would inherit. Ignored
 * dispositions and the mask are all that an exec carries over (a sanitizer's handlers, set up
 * before this runs, stay). The support objects are linked into every test program, so this
 * runs before each one's main().
 */
__attribute__((constructor)) static void signals_from_default(void)
{
	struct sigaction cur, dfl;
	sigset_t none;
	int sig;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	for (sig = 1; sig < NSIG; sig++)
		if (!sigaction(sig, NULL, &cur) && !(cur.sa_flags & SA_SIGINFO) &&
		    cur.sa_handler == SIG_IGN)
			sigaction(sig, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* environ with each "NAME=value" of add replacing the inherited NAME; strings not copied. */
static char **merged_env(char *const *add)
{
	size_t n_env = 0, n_add = 0, i, j, k;
	char **env;

	while (environ[n_env])
		n_env++;
	while (add[n_add])
		n_add++;
	env = calloc(n_env + n_add + 1, sizeof(*env));
	assert_non_null(env);
	for (i = j = 0; i < n_env; i++) {
		int keep = 1;

		for (k = 0; k < n_add && keep; k++)
			keep = strncmp(environ[i], add[k], strcspn(add[k], "=") + 1) != 0;
		if (keep)
			env[j++] = environ[i];
	}
	for (k = 0; k < n_add; k++)
		env[j++] = add[k];
	env[j] = NULL;
	return env;
}

/* File actions that give the child's descriptor fd (1 or 2) the sink of s. */
static void add_sink(posix_spawn_file_actions_t *fa, int fd, const struct child_stream *s,
		     int pipe_w)
{
	int rc = 0;

	switch (s->to) {
	case CHILD_INHERIT:
		break;
	case CHILD_CAPTURE:
		rc = posix_spawn_file_actions_adddup2(fa, pipe_w, fd);
		break;
	case CHILD_DEVNULL:
		rc = posix_spawn_file_actions_addopen(fa, fd, "/dev/null", O_WRONLY, 0);
		break;
	case CHILD_FILE:
		assert_non_null(s->path);
		rc = posix_spawn_file_actions_addopen(fa, fd, s->path,
						      O_WRONLY | O_CREAT | O_APPEND, 0644);
		break;
	case CHILD_FD:
		rc = posix_spawn_file_actions_adddup2(fa, s->fd, fd);
		break;
	case CHILD_CLOSED:
		rc = posix_spawn_file_actions_addclose(fa, fd);
		break;
	case CHILD_STDOUT:
		assert_int_equal(fd, STDERR_FILENO);
		rc = posix_spawn_file_actions_adddup2(fa, STDOUT_FILENO, fd);
		break;
	default:
		fail_msg("unknown child sink %d", (int)s->to);
	}
	assert_int_equal(rc, 0);
}

static void append(char **buf, size_t *len, const char *p, size_t n)
{
	*buf = realloc(*buf, *len + n + 1);
	assert_non_null(*buf);
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = '\0';
}

/* Milliseconds left until deadline (0 once passed); -1, "for ever", without a timeout. */
static int ms_left(const struct timespec *deadline)
{
	struct timespec now;
	int64_t ms;

	if (!deadline)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (int64_t)(deadline->tv_sec - now.tv_sec) * 1000 +
	     (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms > 0 ? (int)ms : 0;
}

static void print_text(const char *text)
{
	const char *nl;

	for (; *text; text = nl + 1) {
		nl = strchrnul(text, '\n');
		fprintf(stderr, "  | %.*s\n", (int)(nl - text), text);
		if (!*nl)
			break;
	}
}

/* The deadline passed: kill and reap the child, show what it wrote, fail the test. */
static void timed_out(const struct child_spec *spec, struct child_result *r, struct pollfd pf[2])
{
	int i, st;

	kill(r->pid, SIGKILL);
	for (i = 0; i < 2; i++)
		if (pf[i].fd >= 0)
			close(pf[i].fd);
	while (waitpid(r->pid, &st, 0) < 0)
		assert_int_equal(errno, EINTR);
	print_text(r->out);
	print_text(r->err);
	if (spec->out.to == CHILD_FILE)
		child_print_file(spec->out.path);
	if (spec->err.to == CHILD_FILE &&
	    !(spec->out.to == CHILD_FILE && !strcmp(spec->out.path, spec->err.path)))
		child_print_file(spec->err.path);
	child_result_free(r);
	fail_msg("%s did not finish within %u s", spec->argv[0], spec->timeout_s);
}

/* Read what is ready on the capture pipes; a pipe at end of file is closed and set to -1. */
static void drain(struct pollfd pf[2], struct child_result *r)
{
	char chunk[65536];
	ssize_t n;
	int i;

	for (i = 0; i < 2; i++) {
		if (pf[i].fd < 0 || !pf[i].revents)
			continue;
		n = read(pf[i].fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(pf[i].fd);
			pf[i].fd = -1;
			continue;
		}
		if (i == 0)
			append(&r->out, &r->out_len, chunk, (size_t)n);
		else
			append(&r->err, &r->err_len, chunk, (size_t)n);
	}
}

void child_run(const struct child_spec *spec, struct child_result *r)
{
	const struct child_stream *sink[2] = {&spec->out, &spec->err};
	struct timespec deadline_at, *deadline = NULL;
	int pipes[2][2] = {{-1, -1}, {-1, -1}};
	const char *program = spec->program ? spec->program : spec->argv[0];
	posix_spawn_file_actions_t fa;
	struct pollfd pf[2];
	char **env = NULL;
	pid_t done;
	int i, rc, st;

	memset(r, 0, sizeof(*r));
	r->pid = -1;
	append(&r->out, &r->out_len, "", 0);
	append(&r->err, &r->err_len, "", 0);
	if (spec->env_add)
		env = merged_env(spec->env_add);
	assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
	for (i = 0; i < 2; i++) {
		if (sink[i]->to == CHILD_CAPTURE)
			assert_int_equal(pipe2(pipes[i], O_CLOEXEC), 0);
		add_sink(&fa, i + 1, sink[i], pipes[i][1]);
	}
	fflush(NULL);
	rc = posix_spawnp(&r->pid, program, &fa, NULL, spec->argv, env ? env : environ);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	for (i = 0; i < 2; i++) {
		if (pipes[i][1] >= 0)
			close(pipes[i][1]);
		pf[i] = (struct pollfd){.fd = pipes[i][0], .events = POLLIN};
	}
	if (rc) {
		for (i = 0; i < 2; i++)
			if (pf[i].fd >= 0)
				close(pf[i].fd);
		r->pid = -1;
		r->status = 127;
		return;
	}
	if (spec->timeout_s) {
		clock_gettime(CLOCK_MONOTONIC, &deadline_at);
		deadline_at.tv_sec += spec->timeout_s;
		deadline = &deadline_at;
	}
	while (pf[0].fd >= 0 || pf[1].fd >= 0) {
		int wait_ms = ms_left(deadline);

		if (wait_ms == 0)
			timed_out(spec, r, pf);
		rc = poll(pf, 2, wait_ms);
		if (rc < 0) {
			assert_int_equal(errno, EINTR);
			continue;
		}
		drain(pf, r);
	}
	for (;;) {
		done = waitpid(r->pid, &st, deadline ? WNOHANG : 0);
		if (done == r->pid)
			break;
		if (done < 0) {
			assert_int_equal(errno, EINTR);
			continue;
		}
		if (ms_left(deadline) == 0)
			timed_out(spec, r, pf);
		nanosleep(&(struct timespec){.tv_nsec = 5000000}, NULL);
	}
	if (WIFSIGNALED(st)) {
		r->signal = WTERMSIG(st);
		r->status = 128 + r->signal;
	} else {
		r->status = WEXITSTATUS(st);
	}
}

void child_capture(char *const argv[], struct child_result *r)
{
	struct child_spec spec = {
	    .argv = argv,
	    .out = {.to = CHILD_CAPTURE},
	    .err = {.to = CHILD_CAPTURE},
	};

	child_run(&spec, r);
}

char *child_output(char *const argv[], const char *what)
{
	struct child_result r;
	char *out;

	child_capture(argv, &r);
	if (r.status == 127)
		fail_msg("%s: %s not found (make deps installs it)", what, argv[0]);
	if (r.status != 0)
		fail_msg("%s: %s exited %d:\n%s%s", what, argv[0], r.status, r.out, r.err);
	out = r.out;
	r.out = NULL;
	child_result_free(&r);
	return out;
}

void child_result_free(struct child_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
	r->out_len = r->err_len = 0;
}

void child_print_file(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		fprintf(stderr, "  | %s", line);
	fclose(f);
}

const char *child_xfdr_bin(void)
{
	const char *s = getenv("XFDR_BIN");

	if (!s || !*s) {
		print_error("XFDR_BIN is not set (run through make check)\n");
		fail();
	}
	return s;
}

const char *child_llvm_xray(void)
{
	const char *s = getenv("XFDR_LLVM_XRAY");

	return s && *s ? s : "llvm-xray";
}

/* Run xfdr with first and the rest of ap as its arguments (into argv), as *how says. */
static void xfdr_v(struct child_result *r, const struct child_spec *how, char *argv[32],
		   const char *first, va_list ap)
{
	struct child_spec spec = *how;
	int n = 0;

	argv[n++] = (char *)child_xfdr_bin();
	argv[n] = (char *)first;
	while (argv[n]) {
		assert_true(n < 31);
		argv[++n] = va_arg(ap, char *);
	}
	spec.argv = argv;
	spec.program = NULL;
	child_run(&spec, r);
	if (r->signal) {
		print_error("%s %s died of signal %d; stderr: %s\n", argv[0],
			    argv[1] ? argv[1] : "", r->signal, r->err);
		fail();
	}
	if (r->status == 127)
		print_error("could not run %s\n", argv[0]);
}

static const struct child_spec capture_both = {
    .out = {.to = CHILD_CAPTURE},
    .err = {.to = CHILD_CAPTURE},
};

int child_xfdr_v(struct child_result *r, const struct child_spec *how, va_list ap)
{
	char *argv[32];

	xfdr_v(r, how ? how : &capture_both, argv, va_arg(ap, const char *), ap);
	return r->status;
}

int child_xfdr(struct child_result *r, ...)
{
	char *argv[32];
	va_list ap;

	va_start(ap, r);
	xfdr_v(r, &capture_both, argv, va_arg(ap, const char *), ap);
	va_end(ap);
	return r->status;
}

int child_xfdr_to(struct child_result *r, const struct child_spec *how, ...)
{
	char *argv[32];
	va_list ap;

	va_start(ap, how);
	xfdr_v(r, how, argv, va_arg(ap, const char *), ap);
	va_end(ap);
	return r->status;
}

size_t child_xfdr_on_terminal(struct child_result *r, ...)
{
	struct child_spec how = {.err = {.to = CHILD_CAPTURE}};
	char *argv[32], seen[256];
	size_t n = 0;
	ssize_t got;
	int master, slave;
	va_list ap;

	assert_int_equal(openpty(&master, &slave, NULL, NULL, NULL), 0);
	how.out.to = CHILD_FD;
	how.out.fd = slave;
	va_start(ap, r);
	xfdr_v(r, &how, argv, va_arg(ap, const char *), ap);
	va_end(ap);
	close(slave);
	/* Until EIO: the child's side is closed. What it wrote is counted, not kept. */
	while ((got = read(master, seen, sizeof(seen))) > 0)
		n += (size_t)got;
	close(master);
	return n;
}

/* "xfdr ARGS..." of a command that did not end as expected, for the message that follows. */
static void print_command(char *const *argv)
{
	int i;

	print_error("xfdr");
	for (i = 1; argv[i]; i++)
		print_error(" %s", argv[i]);
}

/*
 * Did xfdr with the arguments in ap exit 0 (and with silent, write nothing on stderr)? When not,
 * says what it did.
 */
static int xfdr_succeeded(int silent, const char *arg, va_list ap)
{
	struct child_result r;
	char *argv[32];
	int ok;

	xfdr_v(&r, &capture_both, argv, arg, ap);
	ok = !r.status && !(silent && r.err_len);
	if (!ok) {
		print_command(argv);
		print_error(" exited %d:\n%s%s", r.status, silent ? "" : r.out, r.err);
	}
	child_result_free(&r);
	return ok;
}

void child_xfdr_ok(const char *arg, ...)
{
	va_list ap;
	int ok;

	va_start(ap, arg);
	ok = xfdr_succeeded(0, arg, ap);
	va_end(ap);
	if (!ok)
		fail();
}

void child_xfdr_silent(const char *arg, ...)
{
	va_list ap;
	int ok;

	va_start(ap, arg);
	ok = xfdr_succeeded(1, arg, ap);
	va_end(ap);
	if (!ok)
		fail();
}

void child_xfdr_refused(const char *want_err, const char *arg, ...)
{
	struct child_result r;
	char *argv[32];
	va_list ap;

	va_start(ap, arg);
	xfdr_v(&r, &capture_both, argv, arg, ap);
	va_end(ap);
	if (r.status != 1 || strcmp(r.err, want_err)) {
		print_command(argv);
		print_error(" exited %d, expected 1 with stderr:\n%s\nbut stderr was:\n%s",
			    r.status, want_err, r.err);
		fail();
	}
	child_result_free(&r);
}
