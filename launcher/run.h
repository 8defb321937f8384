/*
 * launcher/run.h - run a program the way `xfdr record` does: found as execvp() finds it, with
 * the runtime preloaded when it needs it, forked and waited for with the signals meant for it
 * passed on, and what the runtime said on the way kept for the summary.
 *
 * The launcher's interface (launcher/, libxfdr_launcher.a, not installed). Nothing here prints:
 * errors come back in a struct xfdr_error, one line without the verb's prefix.
 */
#ifndef XFDR_LAUNCHER_RUN_H
#define XFDR_LAUNCHER_RUN_H

#include <sys/types.h>
#include <time.h>

#include "xfdr/reader.h"

/*
 * launch_find_program - the file execvp() would run for name, into path (PATH_MAX bytes): name
 * itself when it has a '/', else the first executable regular file in $PATH (an empty entry is
 * the current directory). Returns 0, or -1 when none is found (exec then says why).
 */
int launch_find_program(const char *name, char *path);

/*
 * launch_find_runtime - the shared runtime beside this command, into lib (PATH_MAX bytes):
 * dirname(realpath(/proc/self/exe))/../lib/libxfdr.so.0, which must be a regular file whose
 * path LD_PRELOAD can carry. Returns 0, or -1 with err naming what was tried.
 */
int launch_find_runtime(char *lib, struct xfdr_error *err);

/*
 * launch_set_preload - LD_PRELOAD with lib first, after any sanitizer runtimes already there
 * (they refuse to start unless first). Returns 0, or -1 with err filled.
 */
int launch_set_preload(const char *lib, struct xfdr_error *err);

struct launch_run {
	pid_t pid;
	int status;	       /* from waitpid() (127 << 8 when waiting failed) */
	int exec_errno;	       /* exec failed: the program never ran */
	int wait_errno;	       /* waitpid() failed with this */
	struct timespec start; /* realtime, before the fork */
	double seconds;	       /* how long it ran */
	char *messages;	       /* what the runtime said, "xfdr: " lines (malloc'd; NULL: none) */
};

/*
 * launch_run - fork, execvp(argv[0], argv), wait. A failed exec is reported through a
 * close-on-exec pipe (r->exec_errno; the child ends 127 for ENOENT, else 126). While the
 * program runs, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to this process
 * alone (kill, sigqueue: si_code <= 0) are passed on to it; those a terminal sent to the whole
 * foreground process group already reached it and are not; either way this process keeps
 * waiting. A signal ignored at the start stays ignored, for the program too (nohup). The
 * runtime's lines (XFDR_RECORD_MESSAGES, runtime/base/print.c) are kept, the newest 64 KiB;
 * with quiet, its notes (the files it wrote, its drop counts) are kept there and not printed.
 * SIGPIPE is ignored after: the summary goes to stderr, which may be a closed pipe.
 * Returns 0 with *r filled (free r->messages), or -1 with err filled when it could not fork.
 */
int launch_run(char **argv, int quiet, struct launch_run *r, struct xfdr_error *err);

/*
 * launch_exit_like - leave as the program left: returns its exit status, or, after a death by
 * a signal, dies by the same signal (without a core file of this process beside the
 * program's); returns fallback when neither (cannot happen with a waited-for status).
 */
int launch_exit_like(const struct launch_run *r, int fallback);

#endif /* XFDR_LAUNCHER_RUN_H */
