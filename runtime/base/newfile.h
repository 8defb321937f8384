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
 * Context: everything here is async-signal-safe (open, fchmod, renameat2, link, unlink,
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
