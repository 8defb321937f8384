/*
 * command/protobuf.c - protocol buffers' wire format, written (protobuf.h).
 */
#include <stdlib.h>
#include <string.h>

#include "command/protobuf.h"

int pb_grow(struct pb_buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 256;
	uint8_t *p;

	if (b->oom)
		return -1;
	while (cap - b->len < n) {
		if (cap > SIZE_MAX / 2)
			goto fail;
		cap *= 2;
	}
	p = realloc(b->p, cap);
	if (!p)
		goto fail;
	b->p = p;
	b->cap = cap;
	return 0;
fail:
	b->oom = 1;
	return -1;
}

void pb_bytes(struct pb_buf *b, unsigned field, const void *p, size_t n)
{
	uint8_t *q;

	if (n > SIZE_MAX - 32 || pb_room(b, n + 32))
		return;
	q = pb_put_varint(b->p + b->len, (uint64_t)field << 3 | PB_LEN);
	q = pb_put_varint(q, n);
	if (n)
		memcpy(q, p, n);
	b->len = (size_t)(q - b->p) + n;
}

void pb_string(struct pb_buf *b, unsigned field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

void pb_open(struct pb_buf *b, unsigned field)
{
	uint8_t *q;

	if (b->depth == PB_DEPTH_MAX) {
		/* a caller's bug, not the data's: fail the output rather than write it wrong */
		b->oom = 1;
		return;
	}
	if (pb_room(b, 16))
		return;
	q = pb_put_varint(b->p + b->len, (uint64_t)field << 3 | PB_LEN);
	b->open[b->depth++] = (size_t)(q - b->p);
	b->len = (size_t)(q - b->p) + 1;
}

void pb_close(struct pb_buf *b)
{
	size_t at, body, extra;

	if (b->oom || !b->depth)
		return;
	at = b->open[--b->depth];
	body = b->len - at - 1;
	extra = pb_varint_size(body) - 1;
	if (extra) {
		if (pb_room(b, extra))
			return;
		memmove(b->p + at + 1 + extra, b->p + at + 1, body);
		b->len += extra;
	}
	pb_put_varint(b->p + at, body);
}

void pb_free(struct pb_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}
