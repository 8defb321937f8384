/*
 * command/record.h - what the two halves of `xfdr record` share: record.c runs the program,
 * record_report.c finds the traces it wrote and summarizes them.
 */
#ifndef XFDR_COMMAND_RECORD_H
#define XFDR_COMMAND_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct run {
	pid_t pid;
	int status;	       /* from waitpid() */
	int exec_errno;	       /* exec failed: the program never ran */
	struct timespec start; /* realtime, before the fork */
	double seconds;	       /* how long it ran */
	char *messages;	       /* what the runtime said, "xfdr: " lines (malloc'd; NULL: none) */
};

/* A trace file: "<prefix>-<pid>-<n>.xray" or "<prefix>-<pid>-<n>-t<tid>.xray". */
struct found {
	char *name;
	uint64_t pid, n, tid; /* tid: 0 for the process file and for "-t0" (drops alone) */
	int per_thread;	      /* a "-t<tid>" file, whose sidecar is "<prefix>-<pid>-<n>.map" */
	ino_t ino;
	struct timespec mtime;
	off_t bytes;
};

struct listing {
	struct found *v;
	size_t n, cap;
};

/* The traces in dir now (a failed listing is empty). Returns 0 or -1 with errno. */
int list_traces(const char *dir, struct listing *l);
void listing_free(struct listing *l);

/*
 * record_report - on stderr: how prog ended, where its trace is (a trace of dir not in before,
 * of the program's pid), a summary of it with the top functions by total time, or why there
 * is none; then the other traces written during the run. opts is the XFDR_OPTIONS it ran with.
 */
void record_report(const char *prog, long top, const struct run *r, const char *opts,
		   const char *dir, const struct listing *before);

/* The value the runtime will use for key in the XFDR_OPTIONS text (the last one); 0 if none. */
int record_option_value(const char *text, const char *key, char *out, size_t n);
/* Whether key is set to a false value (0, no, false, off) in the XFDR_OPTIONS text. */
int record_option_false(const char *text, const char *key);

#endif /* XFDR_COMMAND_RECORD_H */
