/*
 * runtime/base/newfile.h - create files and give them their names without ever writing
 * through, truncating or replacing what someone else put at the name.
 *
 * The runtime writes into directories other users may share (/tmp), at names they can predict
 * (the program's name and pid). A name found taken, by a file or a symbolic link to anywhere,
 * is never opened for writing and never replaced: creation fails with -EEXIST and the caller
 * takes the next name or reports the path. Every file gets exactly the mode set with
 * newfile_set_mode() (0600 by default: traces hold call arguments and payloads, as a core
 * dump holds memory), whatever the umask.
 *
 * Context: everything here is async-signal-safe (open, fchmod, renameat2, link, linkat, unlink,
 * fstatat), so a flush in a signal handler uses it.
 */
#ifndef XFDR_RUNTIME_BASE_NEWFILE_H
#define XFDR_RUNTIME_BASE_NEWFILE_H

#define NEWFILE_DEFAULT_MODE 0600u

/*
 * newfile_set_mode - the permission bits of every file created from now on. Context: init only
 * (exclusive through rt_state.ctl); a flush reads it.
 */
void newfile_set_mode(unsigned mode);

/*
 * newfile_create - create path, which must not exist (not even as a dangling symbolic link),
 * open with access (O_WRONLY or O_RDWR) and close-on-exec, mode as set. Returns the descriptor,
 * or a negative errno (-EEXIST: the name is taken).
 */
int newfile_create(const char *path, int access);

/*
 * newfile_create_unnamed - a new file, open for writing with mode as set, in the directory of
 * path but without a name (O_TMPFILE): nothing of it is at any name until newfile_name() gives
 * it one, so a process that dies while writing it leaves nothing behind. A negative errno
 * (-EOPNOTSUPP: the file system cannot) means: use newfile_create().
 * newfile_name - give the unnamed file fd the name path, which must be free (-EEXIST when it is
 * taken, by a file or a link). Returns 0 or a negative errno of linkat(2).
 */
int newfile_create_unnamed(const char *path);
int newfile_name(int fd, const char *path);

/*
 * newfile_rename - give the file at from (ours, complete) the name to, which must be free.
 * Returns 0, -EEXIST when to is taken (from is left as it is), or a negative errno of
 * rename(2). A file system without RENAME_NOREPLACE gets link(2) and unlink(2), and one without
 * hard links a check of to just before rename(2) (a name taken in between is then replaced:
 * the link itself, never what it leads to).
 */
int newfile_rename(const char *from, const char *to);

/* newfile_taken - is there anything at path, a symbolic link included (as far as we can see)? */
int newfile_taken(const char *path);

#endif /* XFDR_RUNTIME_BASE_NEWFILE_H */
