/*
 * rebuild/file_io.h - whole reads and writes at an offset, for the rebuild library: its
 * inputs are read and its outputs written with pread(2) and pwrite(2), never loaded whole,
 * retried after a signal and after a short transfer.
 *
 * The rebuild library's interface (rebuild/, not installed).
 */
#ifndef XFDR_REBUILD_FILE_IO_H
#define XFDR_REBUILD_FILE_IO_H

#include <stddef.h>
#include <stdint.h>

#include "xfdr/reader.h"

/* pread all of n bytes at off. Returns 0, 1 when the file ends first, -1 (errno) on error. */
int rb_pread_all(int fd, void *buf, size_t n, uint64_t off);

/* pwrite all of n bytes at off. Returns 0, or the errno (EIO: a write that wrote nothing). */
int rb_pwrite_all(int fd, const void *p, size_t n, uint64_t off);

/*
 * rb_write_at - pwrite all of n bytes at off to fd, the file name. Returns 0, or -1 with err
 * filled ("NAME: offset N: expected to write N bytes, found <reason>").
 */
int rb_write_at(int fd, const char *name, const void *p, size_t n, uint64_t off,
		struct xfdr_error *err);

/* An input file, opened by the caller; bytes is its size when opened. */
struct rb_file {
	int fd;
	const char *name;
	uint64_t bytes;
};

/*
 * rb_file_read - an rb_pool_source's read() over a struct rb_file (ctx): all of n bytes at at.
 * Returns 0, 1 when the file ends first, -1 with err filled on an I/O error.
 */
int rb_file_read(void *ctx, uint64_t at, void *buf, size_t n, struct xfdr_error *err);

/*
 * rb_file_read_all - all of n bytes of f at at, which the file held when it was opened: its end
 * first is an error too ("NAME: offset AT: expected N bytes, found fewer (the file shrank while
 * it was read)"). Returns 0, or -1 with err filled.
 */
int rb_file_read_all(const struct rb_file *f, uint64_t at, void *buf, size_t n,
		     struct xfdr_error *err);

/* err filled with "NAME: Cannot allocate memory" (offset 0). Returns -1. */
int rb_fail_no_memory(const char *name, struct xfdr_error *err);

#endif /* XFDR_REBUILD_FILE_IO_H */
