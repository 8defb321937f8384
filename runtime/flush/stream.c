/*
 * runtime/flush/stream.c - mode=stream (see stream.h).
 *
 * The writer thread wakes every millisecond while there is work, and backs off to
 * STREAM_IDLE_MS_MAX when there is none: a pool holds far more than that many milliseconds of
 * events at any rate a program reaches (16 MiB is 2 million records), and the program never
 * wakes it, so the hooks make no system call for it.
 *
 * Which buffers and in what order: the full ones, by claim order, whose claim came before the
 * writer read the pool's claim counter (with acquire; pool_claim() adds with release after the
 * thread's previous buffer was marked full). A thread fills its buffers in claim order, so
 * every earlier buffer of a thread whose buffer is chosen is full too, or written already: each
 * thread's buffers reach the file in time order. A written buffer is handed back (full to
 * free, pool_hand_back()); one a flusher holds pinned at that moment is remembered as written
 * (written_gen) and handed back on a later round, never written twice.
 *
 * The token: one word, TOKEN_FREE or its holder. The writer takes it for one buffer at a time
 * and does not take it again while a flush waits (wanted), so a flush waits one buffer write
 * at most, however much the writer has to do.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/base/monotonic.h"
#include "runtime/base/print.h"
#include "runtime/flush/drops.h"
#include "runtime/flush/flush.h"
#include "runtime/flush/map_functions.h"
#include "runtime/flush/mapfile.h"
#include "runtime/flush/output.h"
#include "runtime/flush/stream.h"
#include "runtime/pool/pool.h"
#include "runtime/record/clock.h"
#include "writer/file.h"
#include "writer/fsize.h"
#include "xfdr/format.h"

enum { TOKEN_FREE = 0, TOKEN_WRITER = 1, TOKEN_FLUSH = 2 };

#define STREAM_IDLE_MS_MAX 4
#define WRITTEN_MARK (1ull << 32) /* written_gen: written in generation (low 32 bits) */

void (*stream_test_before_write)(void);

static struct {
	uint32_t token;
	uint32_t wanted; /* a flush waits for the token */
	uint32_t stop;	 /* the writer thread ends */
	uint32_t on;	 /* stream_start() succeeded for this pool */
	uint32_t ended;	 /* a final flush ended the file: the next buffer begins a new one */
	int failed;	 /* a write failed (said once): the writer waits for the next flush */
	int thread_made;
	pthread_t thread;
	uint64_t max_bytes;
	uint32_t max_files;
	/* Allocated by stream_start(); what follows is the token holder's. */
	struct pool_flush_ctx writer; /* the writer thread's scratch: order, notes, copy */
	uint64_t *written_gen;	      /* by buffer index: WRITTEN_MARK | gen, not handed back yet */
	uint32_t *kept;		      /* max_files: the <n> of the newest files, a ring */
	int fd;			      /* the current file, -1: none */
	dev_t dev;		      /* what fd must still lead to (the program may close it) */
	ino_t ino;
	uint64_t bytes;		 /* of the current file: header and buffers */
	uint64_t file_buffers;	 /* buffers of events in the current file */
	uint32_t file_n;	 /* its <n> */
	uint64_t files;		 /* files begun */
	char path[PATH_MAX];	 /* the current file */
	char map_path[PATH_MAX]; /* its .map */
	char old_path[PATH_MAX]; /* a file stream_max_files removes */
} stream = {.fd = -1};

int stream_running(void)
{
	return (int)xfdr_load_acquire(&stream.on);
}

void stream_resume(void)
{
	xfdr_store_relaxed(&stream.ended, 0u);
}

/* ---- the token ------------------------------------------------------------------------------ */

static int token_try(uint32_t who)
{
	uint32_t free_ = TOKEN_FREE;

	return __atomic_compare_exchange_n(&stream.token, &free_, who, 0, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

static void token_give(void)
{
	xfdr_store_release(&stream.token, (uint32_t)TOKEN_FREE);
}

/* A flush takes the token: the writer lets go after its buffer. 0, or -EBUSY after wait_ms. */
static int token_wait(unsigned wait_ms)
{
	uint64_t deadline = mono_ms() + wait_ms;

	__atomic_add_fetch(&stream.wanted, 1u, __ATOMIC_RELAXED);
	while (!token_try(TOKEN_FLUSH)) {
		if (mono_ms() >= deadline) {
			__atomic_sub_fetch(&stream.wanted, 1u, __ATOMIC_RELAXED);
			return -EBUSY;
		}
		nanosleep(&(struct timespec){.tv_nsec = 200000L}, NULL);
	}
	__atomic_sub_fetch(&stream.wanted, 1u, __ATOMIC_RELAXED);
	return 0;
}

/* ---- the files (under the token) ------------------------------------------------------------ */

static void report(const char *what, const char *path, int rc)
{
	pr_line_file_error("mode=stream", what, path, rc);
}

/* The stream lines of a file's .map, after map_write_tail(): see doc/map-format.md. */
static int stream_map_lines(int fd, const struct drop_totals *drops)
{
	char text[256];
	struct pr_buf b = PR_BUF_INIT(text);

	pr_str(&b, "stream_file\t");
	pr_u64(&b, stream.files);
	pr_str(&b, "\nstream_max_bytes\t");
	pr_u64(&b, stream.max_bytes);
	pr_str(&b, "\nstream_max_files\t");
	pr_u64(&b, stream.max_files);
	/* In a stream, no buffer to take means the writer had not handed one back yet. */
	pr_str(&b, "\nstream_behind\t");
	pr_u64(&b, drops->cause[DROP_NO_BUFFER]);
	pr_char(&b, '\n');
	return pr_flush(&b, fd);
}

/* Write (or write again) the current file's .map with the drop counts drops. */
static int write_map(const struct drop_totals *drops)
{
	struct map_flush st = {.buffers_written = stream.file_buffers};
	uint64_t tsc_hz = clock_tsc_hz();
	int fd, rc;

	unlink(stream.map_path); /* ours: the name was free when the file began */
	fd = output_create_part(stream.map_path);
	if (fd < 0) {
		report("cannot write", stream.map_path, fd);
		return fd;
	}
	rc = map_write_head(fd);
	if (!rc)
		rc = map_write_trace(fd, stream.path);
	if (!rc)
		rc = map_write_tail(fd, tsc_hz, &st, drops);
	if (!rc)
		rc = stream_map_lines(fd, drops);
	if (!rc)
		rc = map_write_functions(fd);
	if (close(fd) && !rc && errno != EINTR)
		rc = -errno;
	rc = output_finish(stream.map_path, rc);
	if (rc)
		report("cannot write", stream.map_path, rc);
	return rc;
}

/* The current file's descriptor still leads to it: the program may have closed it. */
static int fd_is_ours(void)
{
	struct stat st;

	return !fstat(stream.fd, &st) && st.st_dev == stream.dev && st.st_ino == stream.ino;
}

/* End the current file: its .map, then the descriptor (when it is still ours). */
static void file_end(void)
{
	struct drop_totals drops;

	if (stream.fd < 0)
		return;
	drops_sum(&drops);
	(void)write_map(&drops);
	if (fd_is_ours())
		close(stream.fd);
	stream.fd = -1;
}

/* stream_max_files: the file begun max_files files ago goes, with its .map. */
static void keep_newest(void)
{
	uint32_t slot;

	if (!stream.max_files || !stream.kept)
		return;
	slot = (uint32_t)((stream.files - 1) % stream.max_files);
	if (stream.files > stream.max_files) {
		struct pr_buf b = PR_BUF_INIT(stream.old_path);

		if (!output_name(&b, (uint64_t)getpid(), stream.kept[slot], ".xray", -1))
			unlink(stream.old_path);
		b = (struct pr_buf)PR_BUF_INIT(stream.old_path);
		if (!output_name(&b, (uint64_t)getpid(), stream.kept[slot], ".xray.map", -1))
			unlink(stream.old_path);
	}
	stream.kept[slot] = stream.file_n;
}

/*
 * Begin a file: the next free "<prefix>-<pid>-<n>.xray", its header, and its final name at
 * once (a header alone is a valid trace; every buffer after it is written whole).
 */
static int file_begin(void)
{
	struct pr_buf b = PR_BUF_INIT(stream.path), mb = PR_BUF_INIT(stream.map_path);
	struct stat st;
	int fd, rc;

	fd = output_create_unique(&b, (uint64_t)getpid(), ".xray", ".xray.map", &stream.file_n);
	if (fd < 0) {
		if (!xfdr_load_relaxed(&stream.failed))
			report("cannot create", stream.path, fd);
		return fd;
	}
	rc = flush_write_header(fd, clock_tsc_hz());
	if (!rc && fstat(fd, &st))
		rc = -errno;
	if (!rc)
		rc = output_name(&mb, (uint64_t)getpid(), stream.file_n, ".xray.map", -1);
	rc = output_finish(stream.path, rc);
	if (rc) {
		close(fd);
		if (!xfdr_load_relaxed(&stream.failed))
			report("cannot create", stream.path, rc);
		return rc;
	}
	stream.fd = fd;
	stream.dev = st.st_dev;
	stream.ino = st.st_ino;
	stream.bytes = XFDR_FILE_HEADER_BYTES;
	stream.file_buffers = 0;
	stream.files++;
	keep_newest();
	return 0;
}

/*
 * Room for one more buffer, and one for the drop counts a final flush adds: a new file when
 * there is none (the last was ended), the program closed its descriptor, or stream_max_bytes
 * or RLIMIT_FSIZE would be passed (writer/fsize.h: never SIGXFSZ).
 */
static int make_room(void)
{
	size_t bb = rt_pool.buffer_bytes;

	/* Its number may be the program's now: file_end() writes the .map, closes nothing. */
	if (stream.fd >= 0 && !fd_is_ours()) {
		report("the program closed the descriptor of", stream.path, -EBADF);
		file_end();
	}
	if (stream.fd >= 0 && stream.file_buffers &&
	    ((stream.max_bytes && stream.bytes + 2 * (uint64_t)bb > stream.max_bytes) ||
	     fsize_check(stream.bytes + 2 * (uint64_t)bb)))
		file_end();
	return stream.fd >= 0 ? 0 : file_begin();
}

/*
 * Append len bytes of one buffer (closed and padded to the buffer size). A failure is said
 * once: the writer then stops until a flush tries again (the full buffers wait, and what does
 * not fit meanwhile is counted as stream_behind).
 */
static int append(uint8_t *data, size_t len)
{
	int rc = make_room();

	if (!rc) {
		rc = wr_write_buffer_at(stream.fd, data, len, rt_pool.buffer_bytes, stream.bytes);
		if (rc && !xfdr_load_relaxed(&stream.failed))
			report("cannot write", stream.path, rc);
	}
	if (rc) {
		xfdr_store_relaxed(&stream.failed, rc);
		return rc;
	}
	stream.bytes += rt_pool.buffer_bytes;
	stream.file_buffers++;
	return 0;
}

/* ---- the buffers ---------------------------------------------------------------------------- */

/* Hand d back if it was written in its generation; 1 when it is not waiting any more. */
static int hand_back_written(uint32_t i, uint32_t gen)
{
	if (stream.written_gen[i] != (WRITTEN_MARK | gen))
		return 0;
	if (pool_hand_back(&rt_pool.descs[i], gen))
		stream.written_gen[i] = 0;
	return 1;
}

/*
 * The full buffers to write, in claim order, into x->order (see the top of this file); those
 * written already are handed back instead. Returns how many.
 */
static uint32_t choose_full(struct pool_flush_ctx *x)
{
	/* pairs with the release in pool_claim() */
	uint64_t limit = xfdr_load_acquire(&rt_pool.claims);
	uint32_t i, n = 0;

	for (i = 0; i < rt_pool.count; i++) {
		struct pool_desc *d = &rt_pool.descs[i];
		/* pairs with the release in pool_mark_full() */
		uint64_t c = xfdr_load_acquire(&d->ctl);
		uint64_t seq;

		if (POOL_STATE(c) != POOL_FULL || hand_back_written(i, POOL_GEN(c)))
			continue;
		seq = xfdr_load_relaxed(&d->claim_seq);
		if (seq >= limit)
			continue;
		x->notes[i].gen = POOL_GEN(c);
		x->notes[i].seq = seq;
		/* final: marked full with the acquire of ctl above */
		x->notes[i].used = xfdr_load_relaxed(&d->used_bytes);
		x->order[n++] = i;
	}
	flush_sort_by_claim(x, n);
	return n;
}

/* Copy full buffer i (pinned) and append it; then hand it back. */
static int write_full(struct pool_flush_ctx *x, uint32_t i)
{
	uint32_t gen = x->notes[i].gen;
	size_t used = flush_copy_buffer(x, i);
	int rc;

	if (!used)
		return 0;
	rc = append(x->copy, used);
	if (rc)
		return rc;
	stream.written_gen[i] = WRITTEN_MARK | gen;
	hand_back_written(i, gen);
	return 0;
}

/* The writer thread's round: every full buffer, one token at a time. Returns buffers written. */
static uint32_t writer_round(void)
{
	struct pool_flush_ctx *x = &stream.writer;
	uint32_t n, k, written = 0;

	/* Ended by a final flush: nothing is written until recording starts again. */
	if (xfdr_load_relaxed(&stream.ended) || xfdr_load_relaxed(&stream.wanted) ||
	    xfdr_load_relaxed(&stream.failed) || !token_try(TOKEN_WRITER))
		return 0;
	n = choose_full(x);
	token_give();
	for (k = 0; k < n; k++) {
		if (xfdr_load_relaxed(&stream.wanted) || xfdr_load_relaxed(&stream.stop) ||
		    xfdr_load_relaxed(&stream.ended) || !token_try(TOKEN_WRITER))
			break;
		if (stream_test_before_write)
			stream_test_before_write();
		/* A flush may have written it meanwhile: then it is no longer full in gen. */
		if (POOL_STATE(xfdr_load_acquire(&rt_pool.descs[x->order[k]].ctl)) == POOL_FULL &&
		    !write_full(x, x->order[k]))
			written++;
		/* A final flush gave up waiting for this write (stream_flush()): end the file. */
		if (xfdr_load_relaxed(&stream.ended))
			file_end();
		token_give();
	}
	return written;
}

static void *writer_main(void *arg)
{
	unsigned idle_ms = 1;

	(void)arg;
	while (!xfdr_load_relaxed(&stream.stop)) {
		if (writer_round()) {
			idle_ms = 1;
			continue;
		}
		nanosleep(&(struct timespec){.tv_nsec = (long)idle_ms * 1000000L}, NULL);
		if (idle_ms < STREAM_IDLE_MS_MAX)
			idle_ms *= 2;
	}
	return NULL;
}

/* ---- life cycle ----------------------------------------------------------------------------- */

static void scratch_free(void)
{
	free(stream.writer.order);
	free(stream.writer.notes);
	free(stream.writer.copy);
	free(stream.written_gen);
	free(stream.kept);
	memset(&stream.writer, 0, sizeof(stream.writer));
	stream.written_gen = NULL;
	stream.kept = NULL;
}

int stream_start(uint64_t max_bytes, uint32_t max_files)
{
	uint32_t n = rt_pool.count;
	sigset_t all, old;
	int rc;

	stream_stop();
	scratch_free(); /* a fork child's copies of its parent's */
	stream.writer.order = calloc(n, sizeof(*stream.writer.order));
	stream.writer.notes = calloc(n, sizeof(*stream.writer.notes));
	stream.writer.copy = malloc(rt_pool.buffer_bytes);
	stream.written_gen = calloc(n, sizeof(*stream.written_gen));
	stream.kept = max_files ? calloc(max_files, sizeof(*stream.kept)) : NULL;
	if (!stream.writer.order || !stream.writer.notes || !stream.writer.copy ||
	    !stream.written_gen || (max_files && !stream.kept)) {
		scratch_free();
		return -ENOMEM;
	}
	stream.max_bytes = max_bytes;
	stream.max_files = max_files;
	stream.fd = -1;
	stream.files = 0;
	xfdr_store_relaxed(&stream.ended, 0u);
	xfdr_store_relaxed(&stream.stop, 0u);
	xfdr_store_relaxed(&stream.failed, 0);
	xfdr_store_relaxed(&stream.wanted, 0u);
	xfdr_store_relaxed(&stream.token, (uint32_t)TOKEN_FREE);
	/* No signal of the program's, nor our flush signal, is ever handled on the writer. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&stream.thread, NULL, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		char text[160];
		struct pr_buf b = PR_BUF_INIT(text);

		pr_str(&b, "mode=stream: cannot start the writer thread: ");
		pr_str(&b, pr_errno_name(-rc));
		pr_line(&b);
		scratch_free();
		return -rc;
	}
	pthread_setname_np(stream.thread, "xfdr-stream"); /* visible in top -H: cosmetic */
	stream.thread_made = 1;
	xfdr_store_release(&stream.on, 1u);
	return 0;
}

void stream_stop(void)
{
	if (!stream.thread_made)
		return;
	xfdr_store_relaxed(&stream.stop, 1u);
	pthread_join(stream.thread, NULL);
	stream.thread_made = 0;
	xfdr_store_relaxed(&stream.on, 0u);
	if (stream.fd >= 0)
		file_end();
	scratch_free();
}

void stream_forget_after_fork(void)
{
	/* The parent's: the child's copy of the descriptor goes, nothing is written. */
	if (stream.fd >= 0 && fd_is_ours())
		close(stream.fd);
	stream.fd = -1;
	/* The child's copies of the scratch: freed by its stream_start() (free() is not safe here).
	 */
	stream.thread_made = 0;
	xfdr_store_relaxed(&stream.on, 0u);
	xfdr_store_relaxed(&stream.token, (uint32_t)TOKEN_FREE);
	xfdr_store_relaxed(&stream.wanted, 0u);
}

/* ---- flushes -------------------------------------------------------------------------------- */

/* Write every full buffer now (the flush's own context x). Returns 0 or the first error. */
static int flush_full(struct pool_flush_ctx *x)
{
	uint32_t n = choose_full(x), k;
	int rc = 0;

	for (k = 0; k < n && !rc; k++)
		rc = write_full(x, x->order[k]);
	return rc;
}

/*
 * The end of a final flush: the buffers still being filled, as they are now (their owners
 * record no more: recording is off), then the drop-count buffer and the .map.
 */
static int flush_final(struct pool_flush_ctx *x)
{
	struct drop_totals drops;
	uint32_t n = flush_snapshot(x, 0), k;
	int rc = 0;

	for (k = 0; k < n && !rc; k++) {
		uint32_t i = x->order[k];
		size_t used;

		/* Written and waiting to be handed back: in the file already. */
		if (stream.written_gen[i] == (WRITTEN_MARK | x->notes[i].gen))
			continue;
		used = flush_copy_buffer(x, i);
		if (used)
			rc = append(x->copy, used);
		/* Full and whole in the file: handed back, as the writer would. */
		if (used && !rc &&
		    xfdr_load_acquire(&rt_pool.descs[i].ctl) ==
			POOL_CTL(x->notes[i].gen, POOL_FULL) &&
		    xfdr_load_relaxed(&rt_pool.descs[i].used_bytes) == used) {
			stream.written_gen[i] = WRITTEN_MARK | x->notes[i].gen;
			hand_back_written(i, x->notes[i].gen);
		}
	}
	if (!rc)
		rc = make_room();
	drops_sum(&drops);
	if (!rc) {
		rc = flush_write_drop_buffer_at(stream.fd, x, stream.bytes, n, &drops, NULL);
		if (rc)
			report("cannot write", stream.path, rc);
	}
	if (rc)
		return rc;
	stream.bytes += rt_pool.buffer_bytes;
	rc = write_map(&drops);
	if (fd_is_ours())
		close(stream.fd);
	stream.fd = -1;
	xfdr_store_relaxed(&stream.ended, 1u);
	if (!rc && drops.total)
		drops_report(&drops, stream.map_path);
	return rc;
}

int stream_flush(enum pool_flush_id ctx, int final, unsigned wait_ms, char *path_out,
		 size_t path_bytes)
{
	struct pool_flush_ctx *x = &rt_pool.flush[ctx];
	struct drop_totals drops;
	int rc;

	if (!stream_running())
		return -EINVAL;
	rc = token_wait(wait_ms);
	/*
	 * The writer is stuck in a write. A final flush leaves the stream to it (it ends the file
	 * after that write and writes no more) and the caller writes the rest to a file of its
	 * own: the buffer in that write may then be in both files, never in neither.
	 */
	if (rc && final)
		xfdr_store_relaxed(&stream.ended, 1u);
	if (rc)
		return rc;
	xfdr_store_relaxed(&stream.failed, 0); /* a flush tries again */
	/* A stream ended by a final flush: a flush while nothing records writes nothing new. */
	if (!xfdr_load_relaxed(&stream.ended) || final) {
		rc = flush_full(x);
		if (!rc && final)
			rc = flush_final(x);
		else if (!rc && !(rc = make_room())) {
			drops_sum(&drops);
			rc = write_map(&drops);
		}
	}
	if (path_out && path_bytes) {
		size_t len = strnlen(stream.path, path_bytes - 1);

		memcpy(path_out, stream.path, len);
		path_out[len] = '\0';
	}
	token_give();
	return rc;
}
