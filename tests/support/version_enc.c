/* tests/support/version_enc.c - see version_enc.h. */
#include "tests/support/version_enc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xfdr/format.h"

/* A test that writes past the image is wrong: stop at once, naming it. */
static void enc_room(const struct enc *e, size_t n)
{
	if (e->len + n > sizeof(e->b)) {
		fprintf(stderr, "version_enc: %zu bytes past the %zu-byte image\n",
			e->len + n - sizeof(e->b), sizeof(e->b));
		abort();
	}
}

void e_int(struct enc *e, uint64_t v, int bytes)
{
	enc_room(e, (size_t)bytes);
	for (int i = 0; i < bytes; i++)
		e->b[e->len++] = (uint8_t)(v >> (8 * (e->big ? bytes - 1 - i : i)));
}

void e_put(struct enc *e, const void *p, size_t n)
{
	enc_room(e, n);
	memcpy(e->b + e->len, p, n);
	e->len += n;
}

size_t e_md(struct enc *e, unsigned kind)
{
	size_t at = e->len;

	e_int(e, e->big ? 0x80u | kind : kind << 1 | 1u, 1);
	return at;
}

/* Close the metadata record started at `at`: zero bytes up to 16. */
void e_end(struct enc *e, size_t at)
{
	while (e->len < at + 16)
		e_int(e, 0, 1);
}

size_t e_fn(struct enc *e, unsigned action, uint32_t fid, uint32_t delta)
{
	size_t at = e->len;

	e_int(e, e->big ? action << 28 | fid : fid << 4 | action << 1, 4);
	e_int(e, delta, 4);
	return at;
}

void e_header(struct enc *e, unsigned version, int big)
{
	e->len = 0;
	e->big = big;
	e->version = version;
	e_int(e, version, 2);
	e_int(e, 1, 2);
	e_int(e, 3, 4);
	e_int(e, 2000000000ull, 8);
	e_int(e, 16384, 8); /* the runtime's buffer_size: capacity, not length */
	e_int(e, 0, 8);
}

/* A BufferExtents record whose count e_extents_end() fills in. */
size_t e_extents(struct enc *e)
{
	size_t at = e_md(e, XFDR_MD_BUFFER_EXTENTS);

	e_int(e, 0, 8);
	e_end(e, at);
	return at;
}

void e_extents_end(struct enc *e, size_t at)
{
	size_t save = e->len;

	e->len = at + 1;
	e_int(e, save - at - 16, 8);
	e->len = save;
}

size_t e_buffer(struct enc *e, uint32_t tid, uint32_t pid, uint64_t sec, uint32_t usec,
		uint16_t cpu, uint64_t tsc)
{
	size_t at = e_extents(e), r;

	r = e_md(e, XFDR_MD_NEW_BUFFER);
	e_int(e, tid, 4);
	e_end(e, r);
	r = e_md(e, XFDR_MD_WALL_CLOCK_TIME);
	e_int(e, sec, 8);
	e_int(e, usec, 4);
	e_end(e, r);
	if (e->version >= 3) {
		r = e_md(e, XFDR_MD_PID);
		e_int(e, pid, 4);
		e_end(e, r);
	}
	r = e_md(e, XFDR_MD_NEW_CPU_ID);
	e_int(e, cpu, 2);
	e_int(e, tsc, 8);
	e_end(e, r);
	return at;
}

size_t e_tsc(struct enc *e, unsigned kind, uint16_t cpu, uint64_t tsc)
{
	size_t at = e_md(e, kind);

	if (kind == XFDR_MD_NEW_CPU_ID)
		e_int(e, cpu, 2);
	e_int(e, tsc, 8);
	e_end(e, at);
	return at;
}

size_t e_arg(struct enc *e, uint64_t v)
{
	size_t at = e_md(e, XFDR_MD_CALL_ARGUMENT);

	e_int(e, v, 8);
	e_end(e, at);
	return at;
}

/* Versions 2-4: an absolute TSC (and in 4 a CPU); version 5: tsc is the signed delta. */
size_t e_custom(struct enc *e, const char *payload, uint64_t tsc, uint16_t cpu)
{
	size_t at = e_md(e, XFDR_MD_CUSTOM_EVENT), n = strlen(payload);

	e_int(e, n, 4);
	if (e->version >= 5) {
		e_int(e, (uint32_t)tsc, 4);
	} else {
		e_int(e, tsc, 8);
		if (e->version == 4)
			e_int(e, cpu, 2);
	}
	e_end(e, at);
	e_put(e, payload, n);
	return at;
}

size_t e_typed(struct enc *e, const char *payload, int32_t delta, uint16_t type)
{
	size_t at = e_md(e, XFDR_MD_TYPED_EVENT), n = strlen(payload);

	e_int(e, n, 4);
	e_int(e, (uint32_t)delta, 4);
	e_int(e, type, 2);
	e_end(e, at);
	e_put(e, payload, n);
	return at;
}

void build_sample(struct enc *e, unsigned version, int big, struct sample_offsets *o)
{
	struct sample_offsets dummy;
	size_t at;

	if (!o)
		o = &dummy;
	e_header(e, version, big);
	at = o->buf[0] = e_buffer(e, 70000, 4242, 5, 7, 2, 1000);
	e_fn(e, XFDR_FN_ENTER, 1, 10);
	e_fn(e, XFDR_FN_ENTER_ARGS, 2, 5);
	e_arg(e, 42);
	e_arg(e, 43);
	o->custom = e_custom(e, "hello-a", version >= 5 ? 7 : 999, 3);
	e_typed(e, "tp", 3, 77);
	e_tsc(e, XFDR_MD_NEW_CPU_ID, 5, 2000);
	e_fn(e, XFDR_FN_EXIT, 2, 4);
	e_tsc(e, XFDR_MD_TSC_WRAP, 0, 1ull << 32);
	o->last_exit = e_fn(e, XFDR_FN_EXIT, 1, 1);
	e_extents_end(e, at);
	at = o->buf[1] = e_buffer(e, 12, 4242, 5, 9, 1, 5000);
	e_fn(e, XFDR_FN_ENTER, 3, 1);
	o->typed_neg = e_typed(e, "neg", -2, 5);
	e_fn(e, XFDR_FN_TAIL_EXIT, 3, 2);
	e_extents_end(e, at);
	at = o->buf[2] = e_buffer(e, 70000, 4242, 6, 8, 2, 3000);
	e_fn(e, XFDR_FN_ENTER, 4, 0);
	e_fn(e, XFDR_FN_EXIT, 4, 6);
	e_extents_end(e, at);
}
