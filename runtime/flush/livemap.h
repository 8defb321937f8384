/*
 * runtime/flush/livemap.h - backing=file: the .map beside the live pool file, written at
 * start and kept current, so that `xfdr recover` can name threads and functions after the
 * process was killed.
 */
#ifndef XFDR_RUNTIME_FLUSH_LIVEMAP_H
#define XFDR_RUNTIME_FLUSH_LIVEMAP_H

/*
 * livemap_start - write map_path now and keep it current until livemap_stop(); NULL: no live
 * map (memory backing). Context: init only. Returns 0 or a negative errno.
 */
int livemap_start(const char *map_path);

/* livemap_stop - stop keeping the live map current (it stays on disk). Context: init, exit. */
void livemap_stop(void);

/*
 * livemap_forget_after_fork - in a fork child: the live map and its keeper are the parent's;
 * drop them without touching the parent's files. Context: the child, right after fork().
 */
void livemap_forget_after_fork(void);

#endif /* XFDR_RUNTIME_FLUSH_LIVEMAP_H */
