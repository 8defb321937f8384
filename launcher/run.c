/*
 * launcher/run.c - run a program under the recorder (run.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launcher/options_text.h"
#include "launcher/run.h"

static int fail(struct xfdr_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct xfdr_error *err, const char *fmt, ...)
{
	va_list ap;

	err->offset = 0;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- The program and the runtime ---------------------------------------------------------- */

int launch_find_program(const char *name, char *path)
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

int launch_find_runtime(char *lib, struct xfdr_error *err)
{
	char exe[PATH_MAX], *slash;
	struct stat st;

	if (!realpath("/proc/self/exe", exe)) {
		return fail(err, "cannot find the runtime: /proc/self/exe: %s", strerror(errno));
	}
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	if ((size_t)snprintf(lib, PATH_MAX, "%s/lib/libxfdr.so.0", exe) >= PATH_MAX) {
		return fail(err, "cannot find the runtime: %s/lib/libxfdr.so.0: %s", exe,
			    strerror(ENAMETOOLONG));
	}
	if (stat(lib, &st) || !S_ISREG(st.st_mode)) {
		return fail(err,
			    "cannot find the runtime to preload: tried %s (beside this command's "
			    "bin/); reinstall xfdr",
			    lib);
	}
	if (launch_options_split(lib))
		return fail(err, "%s: LD_PRELOAD cannot carry a path with ':' or white space", lib);
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

int launch_set_preload(const char *lib, struct xfdr_error *err)
{
	const char *old = getenv("LD_PRELOAD"), *p, *keep_end;
	char *v;
	size_t n;

	if (!old || !*old)
		return setenv("LD_PRELOAD", lib, 1) ? fail(err, "setenv: %s", strerror(errno)) : 0;
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
	if (!v)
		return fail(err, "out of memory");
	if (keep_end == old)
		snprintf(v, n, "%s:%s", lib, old);
	else
		snprintf(v, n, "%.*s:%s%s", (int)(keep_end - old), old, lib, keep_end);
	n = (size_t)setenv("LD_PRELOAD", v, 1);
	free(v);
	return n ? fail(err, "setenv: %s", strerror(errno)) : 0;
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
 * by the program; quiet: its notes go there alone. Returns its descriptor, or -1 (the summary
 * then knows less).
 */
static int messages_open(int quiet)
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
	    snprintf(env, sizeof(env), "%d:%llu:%llu%s", fd, (unsigned long long)st.st_dev,
		     (unsigned long long)st.st_ino, quiet ? ":quiet" : "") >= (int)sizeof(env) ||
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

int launch_run(char **argv, int quiet, struct launch_run *r, struct xfdr_error *err)
{
	struct sigaction sa, old;
	sigset_t block, saved_mask;
	struct timespec mono;
	int pfd[2], e = 0, ignored[NFORWARDED], mfd;
	ssize_t got;
	size_t i;

	memset(r, 0, sizeof(*r));
	mfd = messages_open(quiet);
	sigemptyset(&block);
	for (i = 0; i < NFORWARDED; i++) {
		sigaction(forwarded[i], NULL, &old);
		/* An ignored signal stays ignored, for the program too (nohup, `cmd &`). */
		ignored[i] = old.sa_handler == SIG_IGN;
		sigaddset(&block, forwarded[i]);
	}
	if (pipe2(pfd, O_CLOEXEC)) {
		e = errno;
		if (mfd >= 0)
			close(mfd);
		return fail(err, "pipe: %s", strerror(e));
	}
	fflush(NULL);
	/* Blocked until the handlers know the child: nothing is lost between fork and wait. */
	sigprocmask(SIG_BLOCK, &block, &saved_mask);
	clock_gettime(CLOCK_REALTIME, &r->start);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	r->pid = fork();
	if (r->pid < 0) {
		e = errno;
		sigprocmask(SIG_SETMASK, &saved_mask, NULL);
		close(pfd[0]);
		close(pfd[1]);
		if (mfd >= 0)
			close(mfd);
		return fail(err, "fork: %s", strerror(e));
	}
	if (r->pid == 0) {
		sigprocmask(SIG_SETMASK, &saved_mask, NULL);
		close(pfd[0]);
		execvp(argv[0], argv);
		e = errno;
		if (write(pfd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(e == ENOENT ? 127 : 126);
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
		got = read(pfd[0], &e, sizeof(e));
	while (got < 0 && errno == EINTR);
	close(pfd[0]);
	r->exec_errno = got == (ssize_t)sizeof(e) ? e : 0;
	while (waitpid(r->pid, &r->status, 0) < 0) {
		if (errno != EINTR) {
			r->wait_errno = errno;
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

int launch_exit_like(const struct launch_run *r, int fallback)
{
	struct rlimit no_core = {0, 0};
	struct sigaction sa;
	sigset_t set;
	int sig;

	if (!WIFSIGNALED(r->status))
		return WIFEXITED(r->status) ? WEXITSTATUS(r->status) : fallback;
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
