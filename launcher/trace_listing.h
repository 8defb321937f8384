/*
 * launcher/trace_listing.h - the trace files the runtime writes into its output directory,
 * "<prefix>-<pid>-<n>.xray" (a process file, n its flush) and "<prefix>-<pid>-<n>-t<tid>.xray"
 * (a thread's), listed before and after a run so that `xfdr record` tells which the run wrote.
 */
#ifndef XFDR_LAUNCHER_TRACE_LISTING_H
#define XFDR_LAUNCHER_TRACE_LISTING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct launch_trace {
	char *name;	      /* the file name in the directory */
	uint64_t pid, n, tid; /* tid: 0 for the process file and for "-t0" (drops alone) */
	int per_thread;	      /* a "-t<tid>" file, whose sidecar is "<prefix>-<pid>-<n>.map" */
	ino_t ino;
	struct timespec mtime;
	off_t bytes;
};

struct launch_listing {
	struct launch_trace *v;
	size_t n, cap;
};

/*
 * launch_trace_name_parse - is name a trace's file name? Read from the right: ".xray", an
 * optional "-t<tid>", "-<n>", "-<pid>" (decimal, at most 19 digits) and a prefix of at least
 * one byte. Returns 1 with pid, n, tid and per_thread of *t set, else 0.
 */
int launch_trace_name_parse(const char *name, struct launch_trace *t);

/*
 * launch_list_traces - the regular files of dir with a trace's name, in directory order.
 * Returns 0, or -1 with errno (dir unreadable, no memory: l is then empty).
 */
int launch_list_traces(const char *dir, struct launch_listing *l);
void launch_listing_free(struct launch_listing *l);

/* Sort l by pid, a pid's newest flush (highest n) first, then by tid. */
void launch_listing_sort(struct launch_listing *l);

/* Was t in the listing before, unchanged (inode, modification time and size)? */
int launch_trace_was_there(const struct launch_listing *before, const struct launch_trace *t);

#endif /* XFDR_LAUNCHER_TRACE_LISTING_H */
