/*
 * command/protobuf.h - protocol buffers' wire format, written (never read: reading is protoc's,
 * in the tests): varints, tags, strings and nested messages, into a growing buffer.
 *
 * A nested message is opened with pb_open(), which writes its tag and keeps one byte for its
 * length; pb_close() fills the length in, moving the body up when the length needs more than
 * one byte. So the common small message costs no copy, and every length is the shortest
 * varint, as protobuf's own encoders write it.
 *
 * An allocation failure sets oom and makes every later call a no-op: callers test it once,
 * at the end of what they write.
 */
#ifndef XFDR_COMMAND_PROTOBUF_H
#define XFDR_COMMAND_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

#define PB_DEPTH_MAX 8 /* nested messages open at once */

enum pb_wire {
	PB_VARINT = 0,
	PB_LEN = 2,
};

struct pb_buf {
	uint8_t *p;
	size_t len, cap;
	size_t open[PB_DEPTH_MAX]; /* the length byte of each message open */
	unsigned depth;
	int oom;
};

/* Room for n more bytes; 0, or -1 with oom set. */
int pb_grow(struct pb_buf *b, size_t n);

static inline int pb_room(struct pb_buf *b, size_t n)
{
	return n <= b->cap - b->len ? 0 : pb_grow(b, n);
}

/* Bytes of v as a varint: 1 to 10. */
static inline size_t pb_varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* v as a varint at p, which has room; returns the end. */
static inline uint8_t *pb_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* A varint field (uint32, uint64, int32 and int64 as two's complement, bool, enum). */
static inline void pb_varint(struct pb_buf *b, unsigned field, uint64_t v)
{
	if (pb_room(b, 20))
		return;
	b->len = (size_t)(pb_put_varint(
			      pb_put_varint(b->p + b->len, (uint64_t)field << 3 | PB_VARINT), v) -
			  b->p);
}

/* A varint without a tag: an element of a packed repeated field opened with pb_open(). */
static inline void pb_packed_varint(struct pb_buf *b, uint64_t v)
{
	if (pb_room(b, 10))
		return;
	b->len = (size_t)(pb_put_varint(b->p + b->len, v) - b->p);
}

/* A length-delimited field of n bytes (bytes, string). */
void pb_bytes(struct pb_buf *b, unsigned field, const void *p, size_t n);
/* A string field: s up to its NUL. */
void pb_string(struct pb_buf *b, unsigned field, const char *s);

/* Open a nested message of field; pb_close() ends it. At most PB_DEPTH_MAX open. */
void pb_open(struct pb_buf *b, unsigned field);
void pb_close(struct pb_buf *b);

/* Empty, keeping the memory. */
static inline void pb_reset(struct pb_buf *b)
{
	b->len = 0;
	b->depth = 0;
}

void pb_free(struct pb_buf *b);

#endif /* XFDR_COMMAND_PROTOBUF_H */
