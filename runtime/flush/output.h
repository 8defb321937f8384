/*
 * runtime/flush/output.h - where flushes write: directory, file-name prefix, one file per
 * process or per thread, and the <n> of "<prefix>-<pid>-<n>.xray".
 */
#ifndef XFDR_RUNTIME_FLUSH_OUTPUT_H
#define XFDR_RUNTIME_FLUSH_OUTPUT_H

#include <limits.h>
#include <stdint.h>

#include "runtime/base/compiler.h"
#include "runtime/base/print.h"

#define OUTPUT_PREFIX_BYTES 256

struct flush_output {
	char dir[PATH_MAX];		  /* "" or ending in '/' */
	char prefix[OUTPUT_PREFIX_BYTES]; /* file names start with it */
	int per_thread_files;
};

/* Written only by output_configure() (init, exclusive through rt_state.ctl), read by flushes. */
extern struct flush_output flush_output XFDR_HIDDEN;

/*
 * output_configure - the "output" option: "DIR/" or an existing directory gives
 * DIR/xfdr-<program>; "DIR/name" gives DIR/name; "" the current directory. Context: init
 * only (stat(2)). Returns 0 or -ENAMETOOLONG (then the previous setting is half overwritten:
 * init fails and no flush can run).
 */
int output_configure(const char *output, int per_thread_files);

/*
 * output_name - dir + prefix + "-<pid>-<n>" (+ "-t<tid>" when tid >= 0) + suffix into b,
 * NUL-terminated. Returns 0 or -ENAMETOOLONG if it was cut. Context: async-signal-safe.
 */
int output_name(struct pr_buf *b, uint64_t pid, uint32_t n, const char *suffix, int64_t tid);

/*
 * output_live_name - dir + prefix + "-<pid>-live" + suffix into b: the files of a file-backed
 * pool. Returns 0 or -ENAMETOOLONG. Context: async-signal-safe.
 */
int output_live_name(struct pr_buf *b, uint64_t pid, const char *suffix);

/*
 * Every file a flush writes is written under "<name>.part" and renamed to its name once
 * complete, so a name without the suffix is always a whole file; a ".part" that stays is a
 * flush that did not complete (the process died in it).
 */
#define OUTPUT_PART_SUFFIX ".part"

/*
 * output_create_unique - create "<prefix>-<pid>-<n><suffix>.part" for the first <n>, from the
 * one after the last used, at which nothing exists: neither the file, nor its part (being
 * written, or left by a flush that died), nor, with sidecar, "<prefix>-<pid>-<n><sidecar>" and
 * its part (the file that will be made beside it); a symbolic link counts as taken. b gets the
 * final name, *n_out the <n> (on failure: the <n> of the file the error is for). Each <n> is
 * tried by one call only, however many run at once (a fatal-path flush beside an ordinary
 * one): two flushes of the process never get one name. Returns the open descriptor,
 * -ENAMETOOLONG, -EEXIST (no free name in 10000 tries) or the negative errno of open(2).
 * Context: async-signal-safe, lock-free.
 */
int output_create_unique(struct pr_buf *b, uint64_t pid, const char *suffix, const char *sidecar,
			 uint32_t *n_out);

/*
 * output_create_part - create "<final>.part" for writing (newfile.h: never an existing file or
 * link; -EEXIST if there is one). Returns the descriptor or a negative errno.
 * Context: async-signal-safe.
 */
int output_create_part(const char *final);

/*
 * output_finish - after "<final>.part" was written and closed with result rc: rename it to
 * final (rc 0), or remove it (rc < 0, or the rename failed). final must be free: a file or link
 * found there is left as it is, and the result is -EEXIST. Returns rc, or the negative errno of
 * the rename. Context: async-signal-safe.
 */
int output_finish(const char *final, int rc);

/*
 * output_check_dir - can files be created in the output directory ("." when none) now?
 * Returns 0 or a negative errno (ENOENT, ENOTDIR, EACCES, EROFS...). Context: any.
 */
int output_check_dir(void);

/* output_after_fork - a fork child counts its own file names from 0. Context: the child. */
void output_after_fork(void);

#endif /* XFDR_RUNTIME_FLUSH_OUTPUT_H */
