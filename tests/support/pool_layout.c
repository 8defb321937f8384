/*
 * tests/support/pool_layout.c - a dead recorder's pool, by hand (see pool_layout.h).
 *
 * Little-endian records, from the spec's tables: a metadata record's byte 0 is kind << 1 | 1
 * (NewBuffer 0x01, EndOfBuffer 0x03, NewCPUId 0x05, WallClockTime 0x09, CallArgument 0x0d);
 * NewBuffer u16 thread id at 1; WallClockTime u64 seconds at 1, u32 microseconds at 9;
 * NewCPUId u16 cpu at 1, u64 TSC at 3; CallArgument u64 at 1. A function record is the u32
 * action << 1 | id << 4, then the u32 TSC delta.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/child.h"
#include "tests/support/pool_layout.h"
#include "tests/support/scratch.h"
#include "tests/support/text.h"
#include "xfdr/format.h"

static void le(uint8_t *p, uint64_t v, unsigned bytes)
{
	unsigned i;

	for (i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void pl_init(struct pl_pool *p, uint32_t count, uint64_t buffer_bytes, uint64_t pid,
	     uint64_t buffers_addr, uint64_t locator_addr, uint64_t tsc_hz, uint32_t session,
	     uint32_t flags)
{
	uint8_t *l;

	p->count = count;
	p->buffer_bytes = buffer_bytes;
	p->bufs = calloc(count, buffer_bytes);
	p->meta_bytes = XFDR_POOL_HEADER_BYTES + (size_t)count * PL_STRIDE;
	p->meta = calloc(1, p->meta_bytes);
	assert_non_null(p->bufs);
	assert_non_null(p->meta);
	l = p->meta;
	memcpy(l, "XFDRPOOL", 8);
	le(l + 8, 1, 4);    /* layout version */
	le(l + 12, 128, 4); /* header_bytes */
	le(l + 16, pid, 8);
	le(l + 24, buffers_addr, 8);
	le(l + 32, buffer_bytes, 8);
	le(l + 40, count, 4);
	le(l + 44, PL_STRIDE, 4);
	le(l + 48, tsc_hz, 8);
	le(l + 56, session, 4);
	le(l + 60, flags, 4);
	le(l + 64, PL_USED_AT, 4);
	le(l + 68, PL_CTL_AT, 4);
	le(l + 72, PL_CLAIM_AT, 4);
	le(l + 76, PL_TID_AT, 4);
	le(l + 80, PL_THREAD_AT, 4);
	le(l + 84, PL_FIRST_AT, 4);
	le(l + 88, PL_LAST_AT, 4);
	le(l + 96, locator_addr ? locator_addr + 128 : 0, 8);
}

void pl_free(struct pl_pool *p)
{
	free(p->bufs);
	free(p->meta);
	p->bufs = p->meta = NULL;
}

void pl_loc32(struct pl_pool *p, unsigned off, uint32_t v)
{
	le(p->meta + off, v, 4);
}

void pl_loc64(struct pl_pool *p, unsigned off, uint64_t v)
{
	le(p->meta + off, v, 8);
}

void pl_desc(struct pl_pool *p, uint32_t i, unsigned state, uint32_t gen, uint64_t used,
	     uint64_t claim_seq, uint32_t tid, uint32_t thread_id, uint64_t first_tsc,
	     uint64_t last_tsc)
{
	uint8_t *d = p->meta + XFDR_POOL_HEADER_BYTES + (size_t)i * PL_STRIDE;

	assert_true(i < p->count);
	le(d + PL_THREAD_AT, thread_id, 4);
	le(d + PL_TID_AT, tid, 4);
	le(d + PL_CTL_AT, (uint64_t)gen << 32 | state, 8);
	le(d + PL_FIRST_AT, first_tsc, 8);
	le(d + PL_LAST_AT, last_tsc, 8);
	le(d + PL_USED_AT, used, 8);
	le(d + PL_CLAIM_AT, claim_seq, 8);
}

static uint8_t *at_(struct pl_pool *p, uint32_t i, size_t at, size_t n)
{
	assert_true(i < p->count && at + n <= p->buffer_bytes);
	return p->bufs + (size_t)i * p->buffer_bytes + at;
}

size_t pl_preamble(struct pl_pool *p, uint32_t i, uint16_t thread_id, uint64_t sec, uint32_t usec,
		   uint16_t cpu, uint64_t tsc)
{
	uint8_t *b = at_(p, i, 0, 48);

	memset(b, 0, 48);
	b[0] = 0x01;
	le(b + 1, thread_id, 2);
	b[16] = 0x09;
	le(b + 17, sec, 8);
	le(b + 25, usec, 4);
	b[32] = 0x05;
	le(b + 33, cpu, 2);
	le(b + 35, tsc, 8);
	return 48;
}

size_t pl_fn(struct pl_pool *p, uint32_t i, size_t at, unsigned action, uint32_t fid,
	     uint32_t delta)
{
	uint8_t *b = at_(p, i, at, 8);

	le(b, (uint32_t)(action << 1 | fid << 4), 4);
	le(b + 4, delta, 4);
	return at + 8;
}

size_t pl_arg(struct pl_pool *p, uint32_t i, size_t at, uint64_t value)
{
	uint8_t *b = at_(p, i, at, 16);

	memset(b, 0, 16);
	b[0] = 0x0d;
	le(b + 1, value, 8);
	return at + 16;
}

size_t pl_end_of_buffer(struct pl_pool *p, uint32_t i, size_t at)
{
	uint8_t *b = at_(p, i, at, 16);

	memset(b, 0, 16);
	b[0] = 0x03;
	return at + 16;
}

size_t pl_bytes(struct pl_pool *p, uint32_t i, size_t at, const void *bytes, size_t n)
{
	memcpy(at_(p, i, at, n), bytes, n);
	return at + n;
}

void pl_write_file(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

void pl_write_live(const struct pl_pool *p, const char *path, uint64_t hz)
{
	size_t n = 32 + (size_t)p->count * p->buffer_bytes;
	uint8_t *f = calloc(1, n);

	assert_non_null(f);
	le(f, 1, 2);	 /* version */
	le(f + 2, 1, 2); /* type: FDR */
	le(f + 4, 3, 4); /* constant and nonstop TSC */
	le(f + 8, hz, 8);
	le(f + 16, p->buffer_bytes, 8);
	memcpy(f + 32, p->bufs, (size_t)p->count * p->buffer_bytes);
	pl_write_file(path, f, n);
	free(f);
}

void pl_write_pool(const struct pl_pool *p, const char *path)
{
	pl_write_file(path, p->meta, p->meta_bytes);
}

void pl_write_core(const char *path, uint16_t e_type, const struct pl_seg *segs, size_t n)
{
	size_t i, off, total;
	uint8_t *f, *eh, *ph;

	/* Header, program headers, then each segment's bytes at the next page boundary. */
	off = (64 + 56 * n + 4095) & ~(size_t)4095;
	total = off;
	for (i = 0; i < n; i++)
		total += (segs[i].filesz + 4095) & ~(uint64_t)4095;
	f = calloc(1, total);
	assert_non_null(f);
	eh = f;
	memcpy(eh,
	       "\x7f"
	       "ELF",
	       4);
	eh[4] = 2; /* ELFCLASS64 */
	eh[5] = 1; /* little-endian */
	eh[6] = 1; /* EV_CURRENT */
	le(eh + 16, e_type, 2);
	le(eh + 18, 62, 2); /* x86-64 */
	le(eh + 20, 1, 4);
	le(eh + 32, 64, 8); /* e_phoff */
	le(eh + 52, 64, 2); /* e_ehsize */
	le(eh + 54, 56, 2); /* e_phentsize */
	le(eh + 56, n, 2);
	for (i = 0; i < n; i++) {
		ph = f + 64 + 56 * i;
		le(ph, segs[i].type ? segs[i].type : 1 /* PT_LOAD */, 4);
		le(ph + 4, 6, 4); /* read, write */
		le(ph + 8, off, 8);
		le(ph + 16, segs[i].vaddr, 8);
		le(ph + 32, segs[i].filesz, 8);
		le(ph + 40, segs[i].memsz, 8);
		le(ph + 48, 4096, 8);
		if (segs[i].filesz)
			memcpy(f + off, segs[i].data, segs[i].filesz);
		off += (segs[i].filesz + 4095) & ~(uint64_t)4095;
	}
	pl_write_file(path, f, total);
	free(f);
}

/* Claim k of the scenario: wall 100 s + k * 20 ms, TSC 1000000 + k * 40000000. */
static size_t scenario_preamble(struct pl_pool *p, uint32_t i, unsigned k, uint16_t thread_id)
{
	uint64_t us = 100000000ull + k * 20000ull;

	return pl_preamble(p, i, thread_id, us / 1000000, (uint32_t)(us % 1000000), thread_id - 1,
			   1000000ull + k * 40000000ull);
}

#define T(k) (1000000ull + (k)*40000000ull)

void pl_scenario(struct pl_pool *p, uint64_t buffers_addr, uint64_t locator_addr, uint64_t tsc_hz,
		 uint32_t session)
{
	static const uint8_t torn_cpu[8] = {0x05, 0, 0, 0x10, 0x27, 0, 0, 0};
	size_t at;

	pl_init(p, PL_SCENARIO_COUNT, PL_SCENARIO_BUFFER_BYTES, PL_SCENARIO_PID, buffers_addr,
		locator_addr, tsc_hz, session, XFDR_POOL_INVARIANT_TSC | XFDR_POOL_FILE_BACKED);

	/* Claim 0, buffer 6: thread 1, full; a record of an earlier use after used_bytes. */
	at = scenario_preamble(p, 6, 0, 1);
	at = pl_fn(p, 6, at, XFDR_FN_ENTER, 1, 10);
	at = pl_fn(p, 6, at, XFDR_FN_ENTER, 2, 20);
	at = pl_fn(p, 6, at, XFDR_FN_EXIT, 2, 30);
	pl_desc(p, 6, PL_FULL, 3, at, 0, 1001, 1, T(0), T(0) + 60);
	pl_fn(p, 6, at, XFDR_FN_EXIT, 9, 1);

	/* Claim 1, buffer 2: thread 2, full, with a call argument. */
	at = scenario_preamble(p, 2, 1, 2);
	at = pl_fn(p, 2, at, XFDR_FN_ENTER, 3, 5);
	at = pl_fn(p, 2, at, XFDR_FN_EXIT, 3, 5);
	at = pl_fn(p, 2, at, XFDR_FN_ENTER_ARGS, 4, 7);
	at = pl_arg(p, 2, at, 42);
	at = pl_fn(p, 2, at, XFDR_FN_EXIT, 4, 1);
	pl_desc(p, 2, PL_FULL, 1, at, 1, 1002, 2, T(1), T(1) + 18);

	/* Claim 2, buffer 0: thread 1, full, closed by an EndOfBuffer inside used_bytes. */
	at = scenario_preamble(p, 0, 2, 1);
	at = pl_fn(p, 0, at, XFDR_FN_EXIT, 1, 100);
	at = pl_end_of_buffer(p, 0, at);
	pl_desc(p, 0, PL_FULL, 1, at, 2, 1001, 1, T(2), T(2) + 100);

	/* Claim 3, buffer 5: thread 2, open; valid-looking stale records after used_bytes. */
	at = scenario_preamble(p, 5, 3, 2);
	at = pl_fn(p, 5, at, XFDR_FN_ENTER, 5, 1);
	at = pl_fn(p, 5, at, XFDR_FN_ENTER, 6, 2);
	pl_desc(p, 5, PL_OWNED, 2, at, 3, 1002, 2, T(3), 0);
	at = pl_fn(p, 5, at, XFDR_FN_EXIT, 6, 3);
	pl_fn(p, 5, at, XFDR_FN_EXIT, 5, 4);

	/* Claim 4, buffer 3: thread 1, open, its last record torn (8 of NewCPUId's 16 bytes). */
	at = scenario_preamble(p, 3, 4, 1);
	at = pl_fn(p, 3, at, XFDR_FN_ENTER, 7, 3);
	at = pl_fn(p, 3, at, XFDR_FN_EXIT, 7, 4);
	at = pl_bytes(p, 3, at, torn_cpu, sizeof(torn_cpu));
	pl_desc(p, 3, PL_OWNED, 1, at, 4, 1001, 1, T(4), 0);

	/* Claim 5, buffer 4: being claimed; its bytes are an earlier use's. */
	at = pl_preamble(p, 4, 1, 90, 0, 0, 500);
	at = pl_fn(p, 4, at, XFDR_FN_ENTER, 8, 1);
	pl_desc(p, 4, PL_CLAIMING, 4, at, 5, 1001, 1, 0, 0);

	/* Claim 6, buffer 7: the descriptor announces a preamble at TSC 999 not yet written. */
	at = pl_preamble(p, 7, 2, 95, 0, 1, 7);
	at = pl_fn(p, 7, at, XFDR_FN_ENTER, 9, 1);
	pl_desc(p, 7, PL_FULL, 2, at, 6, 1002, 2, 999, 0);

	/* Buffer 1: free, never used (all zero). */
}

/* The value after "key: " in a YAML flow mapping line, up to ',' or ' }'. */
static int yaml_field(const char *line, const char *key, char *out, size_t n)
{
	const char *p = strstr(line, key), *e;
	size_t len;

	if (!p)
		return 0;
	p += strlen(key);
	e = p;
	while (*e && *e != ',' && *e != '}' && *e != '\n')
		e++;
	while (e > p && e[-1] == ' ')
		e--;
	len = (size_t)(e - p) < n - 1 ? (size_t)(e - p) : n - 1;
	memcpy(out, p, len);
	out[len] = '\0';
	return 1;
}

char *pl_llvm_events(const char *path, uint64_t *hz)
{
	char *argv[] = {(char *)child_llvm_xray(), "convert", "--output-format=yaml", (char *)path,
			NULL};
	struct child_result r;
	char *out, *line, *next, fid[32], thread[32], kind[64], tsc[32];
	size_t cap, len = 0;
	const char *h;

	child_capture(argv, &r);
	if (r.status != 0) {
		print_error("%s failed on %s (status %d): %s\n", argv[0], path, r.status, r.err);
		fail();
	}
	if (hz) {
		h = strstr(r.out, "cycle-frequency:");
		assert_non_null(h);
		*hz = strtoull(h + strlen("cycle-frequency:"), NULL, 10);
	}
	cap = r.out_len + 1;
	out = malloc(cap);
	assert_non_null(out);
	out[0] = '\0';
	for (line = r.out; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strncmp(line, "  - {", 5))
			continue;
		if (!yaml_field(line, "thread: ", thread, sizeof(thread)))
			strcpy(thread, "0");
		assert_true(yaml_field(line, "func-id: ", fid, sizeof(fid)));
		assert_true(yaml_field(line, "kind: ", kind, sizeof(kind)));
		assert_true(yaml_field(line, "tsc: ", tsc, sizeof(tsc)));
		len += (size_t)snprintf(out + len, cap - len, "t%s %s f%s @%s\n", thread, kind, fid,
					tsc);
		assert_true(len < cap);
	}
	child_result_free(&r);
	return out;
}

void pl_expect_scenario_map(const char *map, const char *out)
{
	char want[1024], *text;
	size_t n;

	text = (char *)pl_read_file(map, &n);
	assert_non_null(text);
	snprintf(want, sizeof(want),
		 "xfdr-map\t1\npid\t4242\ntrace\t%s\ntsc_hz\t2000000000\nconstant_tsc\t1\n"
		 "nonstop_tsc\t1\nbuffer_size\t256\nbuffer_max\t8\nbuffers_written\t5\n"
		 "thread\t1001\t1\t<unknown>\t0\t0\t0\t0\t0\t0\t0\t0\t0\n"
		 "thread\t1002\t2\t<unknown>\t0\t0\t0\t0\t0\t0\t0\t0\t0\n",
		 out);
	text_assert_equal(text, want);
	free(text);
}

void pl_expect_events(const char *path, const char *want, uint64_t hz)
{
	uint64_t got_hz = 0;
	char *events = pl_llvm_events(path, &got_hz);

	text_assert_equal(events, want);
	if (hz)
		assert_int_equal(got_hz, hz);
	free(events);
}

void pl_expect_error(const char *verb, const char *input, int status, const char *want)
{
	struct child_result r;
	char out[300];

	snprintf(out, sizeof(out), "%s.err.xray", input);
	child_xfdr(&r, verb, "-o", out, input, NULL);
	if (r.status != status || text_count_lines(r.err) != 1 ||
	    strncmp(r.err, want, strlen(want))) {
		print_error("status %d, stderr [%s], expected %d and one line starting [%s]\n",
			    r.status, r.err, status, want);
		fail();
	}
	assert_int_equal(r.out_len, 0);
	assert_false(scratch_exists(out));
	child_result_free(&r);
}

void pl_expect_usage(const char *want, ...)
{
	struct child_result r;
	va_list ap;

	va_start(ap, want);
	child_xfdr_v(&r, NULL, ap);
	va_end(ap);
	assert_int_equal(r.status, 2);
	text_assert_contains(r.err, want);
	child_result_free(&r);
}

void pl_expect_help(const char *verb, ...)
{
	struct child_result r;
	const char *want;
	char usage[64];
	va_list ap;

	snprintf(usage, sizeof(usage), "usage: xfdr %s ", verb);
	child_xfdr(&r, verb, "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.err_len, 0);
	assert_int_equal(strncmp(r.out, usage, strlen(usage)), 0);
	va_start(ap, verb);
	while ((want = va_arg(ap, const char *)) != NULL)
		text_assert_contains(r.out, want);
	va_end(ap);
	child_result_free(&r);

	child_xfdr(&r, "help", verb, NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(strncmp(r.out, usage, strlen(usage)), 0);
	child_result_free(&r);
}

uint8_t *pl_read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	long size;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		b = malloc((size_t)size + 1);
		if (b && fread(b, 1, (size_t)size, f) != (size_t)size) {
			free(b);
			b = NULL;
		}
		if (b) {
			b[size] = 0;
			*n = (size_t)size;
		}
	}
	fclose(f);
	return b;
}
