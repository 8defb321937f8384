/*
 * rebuild/salvage.c - the whole valid buffers of a cut trace file (salvage.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rebuild/salvage.h"

struct rb_salvage_plan rb_salvage_plan(const struct rb_file *in, const struct xfdr_header *h)
{
	struct rb_salvage_plan p = {.buffer_size = h->buffer_size};

	if (in->bytes > XFDR_FILE_HEADER_BYTES) {
		p.whole = (in->bytes - XFDR_FILE_HEADER_BYTES) / h->buffer_size;
		p.tail = (in->bytes - XFDR_FILE_HEADER_BYTES) % h->buffer_size;
	}
	return p;
}

/*
 * Where the file's next data at or after at is (SEEK_DATA): the holes of a sparse file were
 * never written, read as zeros and hold no buffer. UINT64_MAX when no data follows; at itself
 * when the file system cannot tell.
 */
static uint64_t next_data(int fd, uint64_t at)
{
	off_t o = lseek(fd, (off_t)at, SEEK_DATA);

	if (o >= 0)
		return (uint64_t)o;
	return errno == ENXIO ? UINT64_MAX : at;
}

/* The end of the data that starts at at (SEEK_HOLE); UINT64_MAX when it cannot tell. */
static uint64_t data_end(int fd, uint64_t at)
{
	off_t o = lseek(fd, (off_t)at, SEEK_HOLE);

	return o >= 0 ? (uint64_t)o : UINT64_MAX;
}

struct walk {
	const struct rb_file *in;
	const struct rb_salvage_plan *plan;
	int out_fd;
	const char *out_name;
	void (*note)(void *ctx, const struct rb_salvage_note *n);
	void *note_ctx;
	uint8_t *img; /* the header, then one buffer: a one-buffer trace for the reader */
	uint64_t kept;
	struct xfdr_error *err;
};

static void say(const struct walk *w, enum rb_salvage_fate fate, uint64_t first, uint64_t last,
		uint64_t at, const char *why)
{
	const struct rb_salvage_note n = {fate, first, last, at, why};

	if (w->note)
		w->note(w->note_ctx, &n);
}

/* Buffer i, read into the image at at: kept when the reader finds it valid, else said. */
static int take(struct walk *w, uint64_t i, uint64_t at)
{
	uint64_t bs = w->plan->buffer_size;
	size_t img_bytes = (size_t)(XFDR_FILE_HEADER_BYTES + bs);
	struct xfdr_trace *t;
	struct xfdr_error why;
	const char *words;
	int rc;

	if (rb_file_read_all(w->in, at, w->img + XFDR_FILE_HEADER_BYTES, (size_t)bs, w->err))
		return -1;
	rc = xfdr_trace_open_memory(w->img, img_bytes, w->in->name, &t, &why);
	if (rc == 0) {
		rc = xfdr_trace_verify(t, &why);
		xfdr_trace_close(t);
	}
	if (rc == 0) {
		if (rb_write_at(w->out_fd, w->out_name, w->img + XFDR_FILE_HEADER_BYTES, (size_t)bs,
				XFDR_FILE_HEADER_BYTES + w->kept * bs, w->err))
			return -1;
		w->kept++;
		say(w, RB_SALVAGE_KEPT, i, i, at, NULL);
		return 0;
	}
	/* why.offset is in the one-buffer image; say where that is in the file. */
	words = strstr(why.text, ": expected");
	say(w, RB_SALVAGE_INVALID, i, i, at + why.offset - XFDR_FILE_HEADER_BYTES,
	    words ? words : "");
	return 0;
}

static int walk_buffers(struct walk *w)
{
	uint64_t bs = w->plan->buffer_size, whole = w->plan->whole;
	uint64_t i, j, at, data, data_to = 0;

	for (i = 0; i < whole; i++) {
		at = XFDR_FILE_HEADER_BYTES + i * bs;
		if (at >= data_to) {
			data = next_data(w->in->fd, at);
			if (data >= at + bs) {
				/* Buffers i to j - 1 are in a hole. */
				j = data == UINT64_MAX ? whole
						       : (data - XFDR_FILE_HEADER_BYTES) / bs;
				if (j > whole)
					j = whole;
				say(w, RB_SALVAGE_HOLE, i, j - 1, at, NULL);
				i = j - 1;
				continue;
			}
			data_to = data_end(w->in->fd, data);
		}
		if (take(w, i, at))
			return -1;
	}
	return 0;
}

int64_t rb_salvage(const struct rb_file *in, const struct rb_salvage_plan *plan, int out_fd,
		   const char *out_name, void (*note)(void *ctx, const struct rb_salvage_note *n),
		   void *note_ctx, struct xfdr_error *err)
{
	struct walk w = {in, plan, out_fd, out_name, note, note_ctx, NULL, 0, err};
	int rc;

	w.img = malloc(plan->whole ? (size_t)(XFDR_FILE_HEADER_BYTES + plan->buffer_size)
				   : XFDR_FILE_HEADER_BYTES);
	if (!w.img)
		return rb_fail_no_memory(in->name, err);
	rc = rb_file_read_all(in, 0, w.img, XFDR_FILE_HEADER_BYTES, err);
	if (!rc)
		rc = walk_buffers(&w);
	if (!rc)
		rc = rb_write_at(out_fd, out_name, w.img, XFDR_FILE_HEADER_BYTES, 0, err);
	free(w.img);
	return rc ? -1 : (int64_t)w.kept;
}
