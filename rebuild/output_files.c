/*
 * rebuild/output_files.c - new files renamed into place, only over a regular file
 * (output_files.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rebuild/output_files.h"

__attribute__((format(printf, 2, 3))) static int fail(struct xfdr_error *err, const char *fmt, ...)
{
	va_list ap;

	err->offset = 0;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	return -1;
}

/* What the file of mode m is, for "OUT: a FIFO, not a regular file". */
static const char *file_kind(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	return "an unknown kind of file";
}

/* May a new file be renamed over path, whatever is there? 0, or -1 with err filled. */
static int replaceable(const char *path, struct xfdr_error *err)
{
	struct stat st;

	if (lstat(path, &st) != 0 || S_ISREG(st.st_mode))
		return 0; /* nothing there (creating it says why it cannot be), or a file */
	if (!S_ISLNK(st.st_mode))
		return fail(err, "%s: %s, not a regular file: not replaced", path,
			    file_kind(st.st_mode));
	/* rename() replaces the link itself; still, a link to a device or a folder is no output. */
	if (stat(path, &st) != 0) {
		if (errno == ENOENT)
			return 0; /* a dangling link */
		return fail(err, "%s: a symbolic link that cannot be followed (%s): not replaced",
			    path, strerror(errno));
	}
	if (S_ISREG(st.st_mode))
		return 0;
	return fail(err, "%s: a symbolic link to %s, not to a regular file: not replaced", path,
		    file_kind(st.st_mode));
}

int rb_output_check(const char *path, int force, struct xfdr_error *err)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return 0;
	if (replaceable(path, err))
		return -1;
	return force ? 0 : 1;
}

/*
 * Temporary files and termination signals. Between mkstemp() and the rename, a new file exists
 * under its temporary name only; SIGINT, SIGTERM or SIGHUP there (^C, kill, a closed terminal)
 * would leave it behind. So while any is open, those signals run tmp_on_signal(), which removes
 * every temporary file open, puts the signal's default action back and raises it again: the
 * process still ends by that signal, as its parent expects. A signal the process was started
 * with ignored stays ignored. The list is changed with the three signals blocked, so the handler
 * sees each slot either empty or naming a file that exists (or no longer does, once renamed).
 */
static const int tmp_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define TMP_SIGNAL_COUNT (sizeof(tmp_signals) / sizeof(tmp_signals[0]))
static const char *volatile tmp_open[4]; /* the tmp names of open new files */
#define TMP_SLOTS (sizeof(tmp_open) / sizeof(tmp_open[0]))
static struct sigaction tmp_old_action[TMP_SIGNAL_COUNT];
static unsigned tmp_open_count;

/* Context: a signal handler (unlink(), sigaction() and raise() are async-signal-safe). */
static void tmp_on_signal(int sig)
{
	struct sigaction dfl;
	size_t i;

	for (i = 0; i < TMP_SLOTS; i++) {
		if (tmp_open[i])
			unlink(tmp_open[i]);
	}
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	/* Blocked until the handler returns, then delivered with the default action. */
	raise(sig);
}

static void tmp_block(sigset_t *old)
{
	sigset_t set;
	size_t i;

	sigemptyset(&set);
	for (i = 0; i < TMP_SIGNAL_COUNT; i++)
		sigaddset(&set, tmp_signals[i]);
	sigprocmask(SIG_BLOCK, &set, old);
}

/* With the signals blocked: name tmp in the list (none free: not cleaned on a signal). */
static void tmp_track(const char *tmp)
{
	struct sigaction sa;
	size_t i;

	for (i = 0; i < TMP_SLOTS && tmp_open[i]; i++)
		;
	if (i == TMP_SLOTS)
		return;
	tmp_open[i] = tmp;
	if (tmp_open_count++)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = tmp_on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < TMP_SIGNAL_COUNT; i++)
		sigaddset(&sa.sa_mask, tmp_signals[i]);
	for (i = 0; i < TMP_SIGNAL_COUNT; i++) {
		sigaction(tmp_signals[i], NULL, &tmp_old_action[i]);
		if (tmp_old_action[i].sa_handler != SIG_IGN)
			sigaction(tmp_signals[i], &sa, NULL);
	}
}

/* With the signals blocked: tmp is renamed or removed; the last one puts the old actions back. */
static void tmp_untrack(const char *tmp)
{
	size_t i;

	for (i = 0; i < TMP_SLOTS && tmp_open[i] != tmp; i++)
		;
	if (i == TMP_SLOTS)
		return;
	tmp_open[i] = NULL;
	if (--tmp_open_count)
		return;
	for (i = 0; i < TMP_SIGNAL_COUNT; i++)
		sigaction(tmp_signals[i], &tmp_old_action[i], NULL);
}

int rb_new_file_open(struct rb_new_file *f, const char *path, struct xfdr_error *err)
{
	sigset_t old;
	int e;

	f->path = path;
	f->fd = -1;
	if ((size_t)snprintf(f->tmp, sizeof(f->tmp), "%s.tmp.XXXXXX", path) >= sizeof(f->tmp))
		return fail(err, "%s: cannot create: %s", path, strerror(ENAMETOOLONG));
	tmp_block(&old);
	f->fd = mkostemp(f->tmp, O_CLOEXEC);
	e = errno;
	if (f->fd >= 0)
		tmp_track(f->tmp);
	sigprocmask(SIG_SETMASK, &old, NULL);
	/* mkstemp() makes it 0600, the mode the runtime gives traces: they hold what it recorded.
	 */
	return f->fd < 0 ? fail(err, "%s: cannot create: %s", path, strerror(e)) : 0;
}

/* Close and rename, the signals blocked. Returns 0, or -1 with err filled and tmp removed. */
static int commit_one(struct rb_new_file *f, struct xfdr_error *err)
{
	int closed = close(f->fd) == 0, e = closed ? 0 : errno;

	f->fd = -1;
	if (closed && rename(f->tmp, f->path) != 0)
		e = errno;
	if (e)
		unlink(f->tmp);
	tmp_untrack(f->tmp);
	if (e)
		return fail(err, "%s: %s: %s", f->path, closed ? "cannot create" : "write error",
			    strerror(e));
	return 0;
}

void rb_new_file_abort(struct rb_new_file *f)
{
	sigset_t old;

	if (f->fd < 0)
		return;
	close(f->fd);
	f->fd = -1;
	tmp_block(&old);
	unlink(f->tmp);
	tmp_untrack(f->tmp);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

int rb_new_files_commit(struct rb_new_file *const *files, size_t n, struct xfdr_error *err)
{
	sigset_t old;
	size_t i;
	int rc = 0;

	tmp_block(&old);
	for (i = 0; i < n && !rc; i++)
		rc = replaceable(files[i]->path, err);
	for (i = 0; i < n && !rc; i++)
		rc = commit_one(files[i], err);
	sigprocmask(SIG_SETMASK, &old, NULL);
	for (i = 0; i < n; i++)
		rb_new_file_abort(files[i]);
	return rc;
}
