/*
 * runtime/pool/pool_file.c - backing=file: the pool in two files that outlive the process.
 *
 *   <path>       the live trace: the 32-byte version 1 header (pool_locator.c writes it), then
 *                buffer i at 32 + i * buffer_bytes; exactly that long. Buffers are 8-byte
 *                aligned (buffer_bytes is a multiple of 8), all the hot path needs.
 *   <path>.pool  the XFDRPOOL locator (xfdr/format.h), then the descriptors at 128.
 *
 * Both are mapped MAP_SHARED: the records the hot path writes, and the used_bytes it
 * store-releases after them, are in the page cache as they happen, at no extra cost per
 * event, and stay there when the process dies by SIGKILL, the OOM killer or a crash without
 * a handler. `xfdr recover <path>` turns them into a trace. They survive the process, not
 * the machine: nothing forces them to disk (msync would cost the hot path).
 *
 * Cost: the same stores as with anonymous memory. On a file system with writeback (not tmpfs)
 * the kernel write-protects a page when it writes it back, and the next store to it takes a
 * minor fault: about once per page per dirty_expire interval (30 s by default), never per
 * event. No huge pages: the pages are the page cache's.
 *
 * Space: fallocate(2) reserves every block at init, so a full file system fails xfdr_init()
 * with -ENOSPC instead of a SIGBUS in a recording thread later, and a file larger than
 * RLIMIT_FSIZE fails it with -EFBIG before the call (writer/fsize.h), not by SIGXFSZ.
 * A file system without fallocate (EOPNOTSUPP) gets ftruncate(2): its blocks are allocated
 * when pages are populated, so only a shortage within the first buffers is found at init.
 *
 * Names: created by newfile_create() (exclusive, never through a link, the files' mode). The
 * path holds our pid, so a file found there that this process did not make was most likely
 * left by an earlier process with the same pid (containers reuse small pids), killed before it
 * could flush: recovering it is what the files are for, so it is never overwritten but moved
 * aside with its .pool and .map to "<path less .xray>-stale<k>.xray", with one stderr line.
 * Anything else found there (a link someone planted) is moved aside the same way: a rename
 * moves the link, never what it leads to, and the next free stale name is never replaced.
 *
 * State: own_path, the live trace this process made, and the device and inode of both files,
 * for pool_file_unlink(): it removes a name only while it still leads to our file (another
 * process with our pid number, in another pid namespace writing to the same directory, may
 * have moved ours aside and made its own). Init only (serialized by rt_state.ctl); a fork child
 * forgets them without unlinking (pool_file_forget()).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/base/compiler.h"
#include "writer/fsize.h"
#include "runtime/base/newfile.h"
#include "runtime/base/print.h"
#include "runtime/pool/pool.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older headers lack the name */
#endif

#define STALE_TRIES 1000u

static char own_path[PATH_MAX]; /* the live trace we made and have not unlinked; "" if none */
/* Which files they are: unlinked only while the names still lead to them. */
static struct stat own_trace, own_pool;

static void report(const char *what, const char *path, int neg_errno)
{
	pr_line_file_error("backing=file", what, path, neg_errno);
}

void pool_file_report(const char *what, int neg_errno)
{
	report(what, own_path, neg_errno);
}

/* out = a + b (PATH_MAX bytes). Returns 0 or -ENAMETOOLONG. */
static int join(char *out, const char *a, const char *b)
{
	struct pr_buf pb = {.text = out, .cap = PATH_MAX};

	pr_str(&pb, a);
	pr_str(&pb, b);
	pr_cstr(&pb);
	return pb.truncated ? -ENAMETOOLONG : 0;
}

/* Unlink path if it is still the file st describes. */
static void unlink_if_same(const char *path, const struct stat *st)
{
	struct stat now;

	if (!lstat(path, &now) && now.st_dev == st->st_dev && now.st_ino == st->st_ino)
		unlink(path);
}

/* Do path, path.pool or path.map exist? The last alone is no pool, only a name list. */
static int set_exists(const char *path, int with_map)
{
	char other[PATH_MAX];

	if (newfile_taken(path))
		return 1;
	if (!join(other, path, ".pool") && newfile_taken(other))
		return 1;
	return with_map && !join(other, path, ".map") && newfile_taken(other);
}

/* "<path less .xray>-stale<k>.xray" (no .xray: "<path>-stale<k>"). Returns 0 or -errno. */
static int stale_name(char *out, const char *path, uint32_t k)
{
	size_t len = strlen(path);
	int xray = len >= 5 && !strcmp(path + len - 5, ".xray");
	struct pr_buf b = {.text = out, .cap = PATH_MAX};

	pr_strn(&b, path, xray ? len - 5 : len);
	pr_str(&b, "-stale");
	pr_u64(&b, k);
	if (xray)
		pr_str(&b, ".xray");
	pr_cstr(&b);
	return b.truncated ? -ENAMETOOLONG : 0;
}

/* An earlier process's files at path: move them aside (see the top of the file). */
static void move_stale(const char *path)
{
	static const char *const ext[] = {"", ".pool", ".map"};
	char aside[PATH_MAX], from[PATH_MAX], to[PATH_MAX], text[2 * PATH_MAX + 160];
	struct pr_buf b = PR_BUF_INIT(text);
	uint32_t k;
	unsigned i;

	if (!set_exists(path, 0))
		return;
	for (k = 1; k <= STALE_TRIES; k++)
		if (stale_name(aside, path, k) || !set_exists(aside, 1))
			break;
	if (k > STALE_TRIES || stale_name(aside, path, k))
		return; /* then O_EXCL refuses the name, and init reports it */
	for (i = 0; i < sizeof(ext) / sizeof(ext[0]); i++)
		if (!join(from, path, ext[i]) && !join(to, aside, ext[i]))
			newfile_rename(from, to);
	pr_str(&b, "backing=file: ");
	pr_str(&b, path);
	pr_str(&b, " was left by an earlier process with this pid; moved to ");
	pr_str(&b, aside);
	pr_str(&b, " (xfdr recover reads it)");
	pr_line(&b);
}

/*
 * Create path with bytes reserved (its size is then bytes). Returns the descriptor, or a
 * negative errno after one stderr line.
 */
static int create_sized(const char *path, size_t bytes)
{
	int fd = newfile_create(path, O_RDWR), rc;

	if (fd < 0) {
		report("cannot create", path, fd);
		return fd;
	}
	/* Past RLIMIT_FSIZE both calls would kill the program with SIGXFSZ: refuse first. */
	rc = fsize_check(bytes);
	if (!rc) {
		do
			rc = fallocate(fd, 0, 0, (off_t)bytes);
		while (rc && errno == EINTR);
		if (rc && (errno == EOPNOTSUPP || errno == ENOSYS))
			rc = ftruncate(fd, (off_t)bytes);
		if (rc)
			rc = -errno;
	}
	if (rc) {
		char what[64];
		struct pr_buf b = PR_BUF_INIT(what);

		pr_str(&b, "cannot reserve ");
		pr_u64(&b, bytes);
		pr_str(&b, " bytes for");
		pr_cstr(&b);
		report(what, path, rc);
		close(fd);
		unlink(path);
		return rc;
	}
	return fd;
}

/* Map fd shared, bytes rounded up to pages into *mapped. NULL when mmap fails. */
static uint8_t *map_shared(int fd, size_t bytes, size_t *mapped)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t n = (bytes + page - 1) & ~(page - 1);
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	*mapped = n;
	return p == MAP_FAILED ? NULL : p;
}

/*
 * Populate the descriptor file's pages for writing: the hot path stores used_bytes there, and
 * a shared mapping populated only for reading would fault at the first store. Old kernels
 * without MADV_POPULATE_WRITE: rewrite each page's first byte with itself. Returns 0 or -errno.
 */
static int populate_all(uint8_t *p, size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), off;
	volatile uint8_t *v = p;

	if (!madvise(p, n, MADV_POPULATE_WRITE))
		return 0;
	if (errno != EINVAL)
		return -errno;
	for (off = 0; off < n; off += page)
		v[off] = v[off];
	return 0;
}

int pool_file_map(const char *path, size_t trace_file_bytes, size_t pool_file_bytes,
		  struct pool_maps *out)
{
	char pool[PATH_MAX];
	int tfd, pfd, rc;

	memset(out, 0, sizeof(*out));
	if (join(pool, path, ".pool") || strlen(path) >= sizeof(own_path))
		return -ENAMETOOLONG;
	move_stale(path);
	tfd = create_sized(path, trace_file_bytes);
	if (tfd < 0)
		return tfd;
	pfd = create_sized(pool, pool_file_bytes);
	if (pfd < 0) {
		close(tfd);
		unlink(path);
		return pfd;
	}
	out->trace = map_shared(tfd, trace_file_bytes, &out->trace_bytes);
	out->pool = map_shared(pfd, pool_file_bytes, &out->pool_bytes);
	rc = out->trace && out->pool ? 0 : -ENOMEM;
	if (!rc && (fstat(tfd, &own_trace) || fstat(pfd, &own_pool)))
		rc = -errno;
	close(tfd);
	close(pfd);
	if (!rc) {
		rc = populate_all(out->pool, out->pool_bytes);
		if (rc && rc != -ENOMEM)
			report("cannot populate", pool, rc);
	}
	if (rc) {
		if (out->trace)
			munmap(out->trace, out->trace_bytes);
		if (out->pool)
			munmap(out->pool, out->pool_bytes);
		unlink(path);
		unlink(pool);
		memset(out, 0, sizeof(*out));
		return rc;
	}
	strcpy(own_path, path);
	return 0;
}

void pool_file_unlink(void)
{
	char pool[PATH_MAX];

	if (!own_path[0])
		return;
	unlink_if_same(own_path, &own_trace);
	if (!join(pool, own_path, ".pool"))
		unlink_if_same(pool, &own_pool);
	own_path[0] = '\0';
}

void pool_discard_files(void)
{
	pool_file_unlink();
}

void pool_file_forget(void)
{
	own_path[0] = '\0';
}
