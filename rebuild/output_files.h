/*
 * rebuild/output_files.h - the files a rebuild writes (a trace and its .map sidecar): each
 * created under a temporary name beside its path ("PATH.tmp.XXXXXX", made by mkstemp(3): a new
 * file, mode 0600 like every trace the runtime writes, for what it holds) and renamed over the
 * path once whole, so that an interrupted or failed run never leaves a half-written file under
 * the real name, and a link at the path is replaced, never written through. Only a regular
 * file (or a link to one, or nothing) is ever replaced: never a device such as /dev/null, a
 * FIFO, a socket or a directory.
 *
 * While a new file is open, SIGINT, SIGTERM and SIGHUP first remove the temporary files, then
 * end the process as they would have (the signal raised again with its default action); a
 * signal the process was started with ignored stays ignored. That is process state: one
 * thread at a time creates and commits new files.
 *
 * The rebuild library's interface (rebuild/, not installed). Nothing here prints: errors come
 * back in a struct xfdr_error, one line naming the file ("PATH: cannot create: ...").
 */
#ifndef XFDR_REBUILD_OUTPUT_FILES_H
#define XFDR_REBUILD_OUTPUT_FILES_H

#include <stddef.h>

#include "xfdr/reader.h"

/*
 * rb_output_check - may a new file be renamed over path? 0 when nothing is there, or, with
 * force, a regular file (or a symbolic link to one, or a dangling one: rename() replaces the
 * link, never what it points to). 1 when a regular file is there and force is 0 (err
 * untouched: the caller words the refusal). -1 with err filled for anything else, whatever
 * force says ("PATH: a FIFO, not a regular file: not replaced").
 */
int rb_output_check(const char *path, int force, struct xfdr_error *err);

/* A new file being written: fd is the temporary file's, -1 once committed or aborted. */
struct rb_new_file {
	char tmp[4096];
	const char *path;
	int fd;
};

/* Create f's temporary file for path. Returns 0, or -1 with err filled. */
int rb_new_file_open(struct rb_new_file *f, const char *path, struct xfdr_error *err);

/* Close and remove the temporary file (nothing when already committed or aborted). */
void rb_new_file_abort(struct rb_new_file *f);

/*
 * rb_new_files_commit - put the n new files in place, in order: each path is checked again
 * (rb_output_check() with force: it may have changed since the caller looked), then each file
 * closed and renamed, with the termination signals held until all are. On a failure the files
 * not renamed yet are removed (those renamed before it stay). Returns 0, or -1 with err
 * filled.
 */
int rb_new_files_commit(struct rb_new_file *const *files, size_t n, struct xfdr_error *err);

#endif /* XFDR_REBUILD_OUTPUT_FILES_H */
