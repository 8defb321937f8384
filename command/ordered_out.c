/*
 * command/ordered_out.c - several threads' parts of one output, in order (ordered_out.h).
 *
 * One lock orders everything: whether part k's turn has come, the writes to the output, the
 * copy of a waiting part. The parts are large (Perfetto's chunks are up to 256 KiB), so a
 * write per lock is cheap beside making it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/tempfile.h"
#include "command/ordered_out.h"

#define OO_COPY_BYTES (256u << 10) /* a waiting part is copied out this much at a time */

struct oo_part {
	int fd;	   /* where it waits for its turn; -1: nothing written ahead */
	int ended; /* whole */
};

struct ordered_out {
	pthread_mutex_t lock;
	struct cli_out *o;
	size_t parts, turn; /* turn: the part that writes straight through */
	int failed;
	struct oo_part part[];
};

struct ordered_out *ordered_out_new(struct cli_out *o, size_t parts)
{
	struct ordered_out *s;
	size_t i;

	if (parts > (SIZE_MAX - sizeof(*s)) / sizeof(s->part[0]) ||
	    !(s = malloc(sizeof(*s) + parts * sizeof(s->part[0])))) {
		cli_error("out of memory");
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->o = o;
	s->parts = parts;
	s->turn = 0;
	s->failed = 0;
	for (i = 0; i < parts; i++)
		s->part[i] = (struct oo_part){.fd = -1};
	return s;
}

/* Under the lock. Read without it (ordered_failed()), so atomically. */
static void fail(struct ordered_out *s)
{
	__atomic_store_n(&s->failed, 1, __ATOMIC_RELAXED);
}

/* Under the lock: a temporary file failed (errno). */
static void temp_failed(struct ordered_out *s, const char *doing)
{
	if (!s->failed)
		cli_error("%s: %s a temporary file in $TMPDIR (else /tmp): %s", s->o->name, doing,
			  strerror(errno ? errno : EIO));
	fail(s);
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Under the lock: what part k wrote ahead goes out, and its file is closed. */
static void drain(struct ordered_out *s, size_t k)
{
	struct oo_part *pt = &s->part[k];
	uint8_t *buf = NULL;
	off_t at = 0;
	ssize_t n;

	if (pt->fd < 0)
		return;
	if (!s->failed && !(buf = malloc(OO_COPY_BYTES))) {
		cli_error("out of memory");
		fail(s);
	}
	while (!s->failed && (n = pread(pt->fd, buf, OO_COPY_BYTES, at)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			temp_failed(s, "reading");
			break;
		}
		cli_put(s->o, buf, (size_t)n);
		at += n;
		if (s->o->err)
			fail(s);
	}
	free(buf);
	close(pt->fd);
	pt->fd = -1;
}

int ordered_put(struct ordered_out *s, size_t k, const void *p, size_t n)
{
	struct oo_part *pt = &s->part[k];
	int rc;

	pthread_mutex_lock(&s->lock);
	if (s->failed) {
		/* nothing more is written */
	} else if (k == s->turn) {
		cli_put(s->o, p, n);
		if (s->o->err)
			fail(s);
	} else {
		if (pt->fd < 0 && (pt->fd = temp_file_open("part")) < 0)
			temp_failed(s, "creating");
		else if (write_all(pt->fd, p, n))
			temp_failed(s, "writing");
	}
	rc = s->failed ? -1 : 0;
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int ordered_end(struct ordered_out *s, size_t k)
{
	int rc;

	pthread_mutex_lock(&s->lock);
	s->part[k].ended = 1;
	while (s->turn < s->parts && s->part[s->turn].ended) {
		s->turn++;
		if (s->turn < s->parts)
			drain(s, s->turn);
	}
	rc = s->failed ? -1 : 0;
	pthread_mutex_unlock(&s->lock);
	return rc;
}

void ordered_abandon(struct ordered_out *s)
{
	pthread_mutex_lock(&s->lock);
	fail(s);
	pthread_mutex_unlock(&s->lock);
}

int ordered_failed(struct ordered_out *s)
{
	return __atomic_load_n(&s->failed, __ATOMIC_RELAXED);
}

void ordered_out_free(struct ordered_out *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->parts; i++)
		if (s->part[i].fd >= 0)
			close(s->part[i].fd);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
