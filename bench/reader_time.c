/*
 * bench/reader_time.c - run one command, print its wall time and peak memory.
 *
 * usage: reader_time OUT ERR COMMAND [ARG...]
 *
 * Runs COMMAND with stdout to the file OUT and stderr to the file ERR (both truncated), waits
 * for it with wait4() and prints one line on stdout:
 *
 *   STATUS WALL_NS MAXRSS_KB
 *
 * STATUS is the exit status (127: could not be started), or minus the signal that ended it;
 * WALL_NS the CLOCK_MONOTONIC time from fork() to the end of wait4(); MAXRSS_KB the child's
 * ru_maxrss (its peak resident set, in KiB, file pages it mapped included). wait4() gives the
 * child's own figures, so nothing depends on GNU time being installed. Exit status: 0 when the
 * line was printed, 2 when COMMAND could not be timed at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int redirect(const char *path, int fd)
{
	int f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (f < 0)
		return -1;
	if (dup2(f, fd) < 0) {
		close(f);
		return -1;
	}
	close(f);
	return 0;
}

int main(int argc, char **argv)
{
	struct rusage ru;
	uint64_t t0, t1;
	int status, code;
	pid_t pid;

	if (argc < 4) {
		fprintf(stderr, "usage: reader_time OUT ERR COMMAND [ARG...]\n");
		return 2;
	}
	fflush(stdout);
	t0 = now_ns();
	pid = fork();
	if (pid < 0) {
		perror("reader_time: fork");
		return 2;
	}
	if (pid == 0) {
		if (redirect(argv[1], STDOUT_FILENO) || redirect(argv[2], STDERR_FILENO)) {
			perror("reader_time: redirect");
			_exit(127);
		}
		execvp(argv[3], argv + 3);
		fprintf(stderr, "reader_time: %s: %s\n", argv[3], strerror(errno));
		_exit(127);
	}
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("reader_time: wait4");
			return 2;
		}
	}
	t1 = now_ns();
	if (WIFEXITED(status))
		code = WEXITSTATUS(status);
	else
		code = -WTERMSIG(status);
	printf("%d %llu %ld\n", code, (unsigned long long)(t1 - t0), ru.ru_maxrss);
	return 0;
}
