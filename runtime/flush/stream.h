/*
 * runtime/flush/stream.h - mode=stream: a writer thread writes every full buffer to the trace
 * file as it fills and hands it back to the pool, so a run of any length is recorded through
 * a small pool, and the program never waits for the disk.
 *
 * The stream is one file "<prefix>-<pid>-<n>.xray", or with stream_max_bytes several, each
 * with its own <n> (the next free one) and at most that many bytes: each a whole trace (the
 * header, whole buffers; every buffer decodes alone), valid after every buffer written, so a
 * process that dies by SIGKILL loses only the buffers not written yet. With stream_max_files
 * only the newest K files are kept. Each file gets its .map when the next one begins; the last
 * one when the stream is flushed.
 *
 * One writer at a time holds the stream's token (the file, its size, its <n>): the writer
 * thread, or a flush, which asks for it and waits while the writer finishes its buffer. A
 * flush while recording writes the full buffers and the current file's .map; a final flush
 * (recording off: exit, termination, a crash, xfdr_stop() then xfdr_flush()) also writes the
 * buffers still being filled, then the drop-count buffer and the .map, and ends the file. The
 * writer resumes into a new file if recording starts again.
 */
#ifndef XFDR_RUNTIME_FLUSH_STREAM_H
#define XFDR_RUNTIME_FLUSH_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/pool/pool_types.h"

/*
 * stream_start - the pool is set up in stream mode (pool_setup(), POOL_STREAM): start the
 * writer thread for it (all signals blocked on it). max_bytes 0: one file; else at most that
 * many bytes a file (at least the header and two buffers). max_files 0: keep every file.
 * Context: init, after pool_setup(); not in a signal handler. Returns 0, -ENOMEM, or the
 * negative error of pthread_create() (after one stderr line).
 */
int stream_start(uint64_t max_bytes, uint32_t max_files);

/*
 * stream_stop - end the writer thread and forget the stream (its last file stays as the last
 * flush left it). Nothing when no stream runs. Context: init, before the pool is set up again;
 * not in a signal handler.
 */
void stream_stop(void);

/*
 * stream_forget_after_fork - in a fork child: the writer thread is the parent's and did not
 * come along, and the file is the parent's: forget both without writing. Async-signal-safe.
 */
void stream_forget_after_fork(void);

/* stream_running - 1 when this session's pool is a stream (stream_start() succeeded). */
int stream_running(void);

/* stream_resume - recording starts (again): the writer writes into a new file if the last was
 * ended by a final flush. Context: any; async-signal-safe. */
void stream_resume(void);

/*
 * stream_flush - the flush of a stream (see above), in flush context ctx (pool_types.h), final
 * or not; waits for the token up to wait_ms. path_out gets the file's name.
 * Returns 0, -EBUSY when the token did not come in time (a writer stuck in a slow write; for
 * a final flush the writer ends the file after that write, and the caller writes what is not
 * in the stream yet into a file of its own, flush_run(): the buffer of that write may be in
 * both), or a negative errno of the file (after one stderr line naming it).
 * Context: async-signal-safe (waits with nanosleep).
 */
int stream_flush(enum pool_flush_id ctx, int final, unsigned wait_ms, char *path_out,
		 size_t path_bytes);

/*
 * stream_test_before_write - tests only: called by the writer thread before each buffer it
 * writes, holding the token (NULL: nothing), to hold it there as a slow disk would.
 */
extern void (*stream_test_before_write)(void) XFDR_HIDDEN;

#endif /* XFDR_RUNTIME_FLUSH_STREAM_H */
