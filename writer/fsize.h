/*
 * writer/fsize.h - keep the writes of the writer and the runtime inside RLIMIT_FSIZE.
 *
 * A write(2), ftruncate(2) or fallocate(2) that would take a regular file past the soft
 * RLIMIT_FSIZE makes the kernel send SIGXFSZ, whose default action kills the program: the
 * recorder would end the program it records. So every write the runtime makes to a file is
 * checked first and refused with -EFBIG, the error the kernel gives once SIGXFSZ is ignored.
 * The limit is read at each check (getrlimit(2): one system call, no lock, no allocation;
 * the program may change it at any time), so all of it is async-signal-safe.
 */
#ifndef XFDR_WRITER_FSIZE_H
#define XFDR_WRITER_FSIZE_H

#include <stddef.h>
#include <stdint.h>

/* fsize_limit - the soft RLIMIT_FSIZE in bytes; UINT64_MAX when unlimited. */
uint64_t fsize_limit(void);

/*
 * fsize_check - may a file grow to end bytes? Returns 0, or -EFBIG when end passes the limit.
 */
int fsize_check(uint64_t end);

/*
 * fsize_check_write - may n bytes be written to fd at offset (offset < 0: its file position)?
 * Returns 0 (also for what is not a regular file: no SIGXFSZ there), or -EFBIG.
 */
int fsize_check_write(int fd, int64_t offset, size_t n);

#endif /* XFDR_WRITER_FSIZE_H */
