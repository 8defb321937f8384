/*
 * tests/unit/reader/test_reader_malformed.c - the reader on broken input: every truncation point,
 * seeded bit flips, random and grammar-shaped random files, and one test per rule of the
 * grammar with the exact offset and wording of the message.
 *
 * Robustness contract under test: every call returns 0/1 or -1 with one line of the form
 * "NAME: offset N: expected X, found Y"; nothing crashes, hangs or reads outside the image
 * (each image is an exact-size heap copy, so ASan flags any overread).
 *
 * XFDR_FUZZ_ITERATIONS scales the seeded runs (`make fuzz`); XFDR_FUZZ_SEED replays one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "xfdr/reader.h"

#include "tests/support/child.h"
#include "tests/support/image.h"
#include "tests/support/scratch.h"

/* ---- a small encoder for the generated images (spec bit layout, either byte order) ------- */

static void put_int(struct img *m, uint64_t v, int bytes, int big)
{
	for (int i = 0; i < bytes; i++)
		PUT(m, BYTE(v, big ? bytes - 1 - i : i));
}

static void g_header(struct img *m, int big, uint64_t buffer_size)
{
	put_int(m, 1, 2, big);
	put_int(m, 1, 2, big);
	put_int(m, 3, 4, big);
	put_int(m, 2000000000ull, 8, big);
	put_int(m, buffer_size, 8, big);
	PUT(m, Z8);
}

static void g_md(struct img *m, int big, unsigned kind)
{
	PUT(m, (uint8_t)(big ? 0x80u | kind : kind << 1 | 1u));
}

/* Close a metadata record started at `start`: zero reserved bytes up to 16. */
static void g_md_end(struct img *m, size_t start)
{
	img_pad_to(m, start + 16, 0);
}

static void g_fn(struct img *m, int big, unsigned action, uint32_t fid, uint32_t delta)
{
	uint32_t w =
	    big ? action << 28 | (fid & 0x0fffffffu) : (fid & 0x0fffffffu) << 4 | action << 1;

	put_int(m, w, 4, big);
	put_int(m, delta, 4, big);
}

static void g_preamble(struct img *m, int big, uint16_t tid, uint64_t sec, uint32_t usec,
		       uint16_t cpu, uint64_t tsc)
{
	size_t s = m->len;

	g_md(m, big, 0);
	put_int(m, tid, 2, big);
	g_md_end(m, s);
	g_md(m, big, 4);
	put_int(m, sec, 8, big);
	put_int(m, usec, 4, big);
	g_md_end(m, s + 16);
	g_md(m, big, 2);
	put_int(m, cpu, 2, big);
	put_int(m, tsc, 8, big);
	g_md_end(m, s + 32);
}

static void g_tsc_md(struct img *m, int big, unsigned kind, uint16_t cpu, uint64_t tsc)
{
	size_t s = m->len;

	g_md(m, big, kind);
	if (kind == 2)
		put_int(m, cpu, 2, big);
	put_int(m, tsc, 8, big);
	g_md_end(m, s);
}

static void g_custom(struct img *m, int big, uint32_t bytes, uint64_t tsc, const void *payload,
		     size_t n)
{
	size_t s = m->len;

	g_md(m, big, 5);
	put_int(m, bytes, 4, big);
	put_int(m, tsc, 8, big);
	g_md_end(m, s);
	img_put(m, payload, n);
}

static void g_arg(struct img *m, int big, uint64_t v)
{
	size_t s = m->len;

	g_md(m, big, 6);
	put_int(m, v, 8, big);
	g_md_end(m, s);
}

static void g_eob(struct img *m, int big)
{
	size_t s = m->len;

	g_md(m, big, 1);
	g_md_end(m, s);
}

/*
 * The base file for truncations and bit flips: three 160-byte buffers.
 *  b0 (32):  tid 7 (3 s); Entry 1; Custom "hello"; Entry_Args 2 + arg 99; TSCWrap; Exit 2;
 *            Exit 1; EOB at 165; padding to 192
 *  b1 (192): tid 8 (2 s); 7 Entry/Exit pairs of fid 3, exactly full at 352
 *  b2 (352): tid 7 (1 s); NewCPUId; Tail_Exit 4; EOB at 424; padding to 512
 */
static void base_file(struct img *m, int big)
{
	m->len = 0;
	g_header(m, big, 160);
	g_preamble(m, big, 7, 3, 0, 1, 1000);
	g_fn(m, big, 0, 1, 5);
	g_custom(m, big, 5, 1100, "hello", 5);
	g_fn(m, big, 3, 2, 1);
	g_arg(m, big, 99);
	g_tsc_md(m, big, 3, 0, 5000);
	g_fn(m, big, 1, 2, 3);
	g_fn(m, big, 1, 1, 1);
	AT(m, 165);
	g_eob(m, big);
	img_pad_to(m, 192, 0);
	g_preamble(m, big, 8, 2, 0, 0, 10);
	for (int i = 0; i < 7; i++) {
		g_fn(m, big, 0, 3, 1);
		g_fn(m, big, 1, 3, 1);
	}
	AT(m, 352);
	g_preamble(m, big, 7, 1, 0, 2, 20);
	g_tsc_md(m, big, 2, 3, 30);
	g_fn(m, big, 2, 4, 2);
	AT(m, 424);
	g_eob(m, big);
	img_pad_to(m, 512, 0);
}

/* ---- checking one image -------------------------------------------------------------------- */

/* The message is one line, names the image and the offset, and says what was expected. */
static void check_message(const struct xfdr_error *err, const char *name, size_t len)
{
	char prefix[128];
	int n = snprintf(prefix, sizeof(prefix), "%s: offset %llu: expected ", name,
			 (unsigned long long)err->offset);

	if (strncmp(err->text, prefix, (size_t)n) || !strstr(err->text, ", found ") ||
	    strchr(err->text, '\n')) {
		print_error("bad message: %s\n", err->text);
		fail();
	}
	assert_true(err->offset <= len);
	if (len)
		assert_true(err->offset < len);
}

/*
 * XFDR_ORDER_THREAD: within a buffer, file order; from one buffer to the next, the key
 * (thread id, wall seconds, wall microseconds, buffer number) strictly grows.
 */
static void check_thread_order(const struct xfdr_event *a, const struct xfdr_event *b)
{
	if (a->buffer_index == b->buffer_index) {
		assert_true(a->offset < b->offset);
		return;
	}
	if (a->thread_id != b->thread_id) {
		assert_true(a->thread_id < b->thread_id);
		return;
	}
	if (a->wall_seconds != b->wall_seconds) {
		assert_true(a->wall_seconds < b->wall_seconds);
		return;
	}
	if (a->wall_micros != b->wall_micros) {
		assert_true(a->wall_micros < b->wall_micros);
		return;
	}
	assert_true(a->buffer_index < b->buffer_index);
}

struct outcome {
	int valid;
	uint64_t offset; /* of the violation when !valid */
	uint64_t events; /* when valid */
	char text[512];
};

/*
 * Open, verify and walk one image in every way the API allows, checking the invariants that
 * hold for any input. Returns what happened.
 */
static struct outcome exercise(const uint8_t *bytes, size_t len, const char *name)
{
	struct outcome out = {0};
	uint8_t *copy = malloc(len ? len : 1);
	struct xfdr_trace *t;
	struct xfdr_error err, err2;
	struct xfdr_record_cursor c;
	struct xfdr_record r;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	uint64_t prev_end = 32, records = 0, fn_or_custom = 0, n;
	struct xfdr_event prev;
	int rc;

	assert_non_null(copy);
	memcpy(copy, bytes, len);
	if (xfdr_trace_open_memory(copy, len, name, &t, &err)) {
		assert_null(t);
		check_message(&err, name, len);
		out.offset = err.offset;
		memcpy(out.text, err.text, sizeof(out.text));
		free(copy);
		return out;
	}

	/* Records: each starts at or after the end of the previous one and stays inside. */
	xfdr_records_begin(t, &c);
	while ((rc = xfdr_records_next(&c, &r, &err)) == 1) {
		assert_true(r.offset >= prev_end);
		assert_true(r.size >= 8);
		assert_true(r.offset + r.size <= len);
		if (r.is_metadata && r.kind == XFDR_MD_CUSTOM_EVENT)
			assert_true(r.payload + r.payload_bytes <= copy + len);
		if (r.is_metadata && r.kind == XFDR_MD_END_OF_BUFFER)
			assert_true(r.offset + r.size + r.skipped_bytes <= len);
		prev_end = r.offset + r.size;
		assert_true(++records <= len / 8);
		if (!r.is_metadata || r.kind == XFDR_MD_CUSTOM_EVENT)
			fn_or_custom++;
	}
	if (rc < 0) {
		check_message(&err, name, len);
		/* The cursor stays on the violation: asking again gives the same answer. */
		assert_int_equal(xfdr_records_next(&c, &r, &err2), -1);
		assert_string_equal(err.text, err2.text);
	}
	/* verify agrees with the walk, and so does events_begin, on every call. */
	assert_int_equal(xfdr_trace_verify(t, &err2), rc < 0 ? -1 : 0);
	if (rc < 0) {
		assert_string_equal(err.text, err2.text);
		assert_int_equal(xfdr_events_begin(t, XFDR_ORDER_THREAD, &it, &err2), -1);
		assert_string_equal(err.text, err2.text);
		out.offset = err.offset;
		memcpy(out.text, err.text, sizeof(out.text));
		goto out;
	}

	out.valid = 1;
	for (int order = XFDR_ORDER_FILE; order <= XFDR_ORDER_THREAD; order++) {
		assert_int_equal(xfdr_events_begin(t, order, &it, &err), 0);
		n = 0;
		while ((rc = xfdr_events_next(&it, &ev, &err)) == 1) {
			assert_true(ev.offset < len);
			assert_true(ev.buffer_index < xfdr_trace_buffer_count(t));
			if (ev.type == XFDR_EVENT_CUSTOM)
				assert_true(ev.payload + ev.payload_bytes <= copy + len);
			for (uint32_t i = 0; i < ev.arg_count; i++)
				(void)xfdr_event_arg(t, &ev, i);
			if (ev.arg_count)
				assert_true(ev.args + 16 * (size_t)ev.arg_count <= copy + len);
			assert_true(++n <= fn_or_custom);
			if (order == XFDR_ORDER_THREAD && n > 1)
				check_thread_order(&prev, &ev);
			prev = ev;
		}
		assert_int_equal(rc, 0);
		assert_int_equal(n, fn_or_custom);
	}
	out.events = fn_or_custom;
out:
	xfdr_trace_close(t);
	free(copy);
	return out;
}

/* ---- seeded randomness ----------------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* splitmix64: tiny, and every seed gives a usable stream. */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static uint64_t fuzz_seed(const char *test)
{
	const char *s = getenv("XFDR_FUZZ_SEED");
	uint64_t seed =
	    s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);

	print_message("%s: seed %llu (replay with XFDR_FUZZ_SEED=%llu)\n", test,
		      (unsigned long long)seed, (unsigned long long)seed);
	rng_state = seed;
	return seed;
}

static uint64_t fuzz_iterations(uint64_t dflt)
{
	const char *s = getenv("XFDR_FUZZ_ITERATIONS");
	uint64_t n = s ? strtoull(s, NULL, 0) : 0;

	return n ? n : dflt;
}

/* ---- truncation, flips, random files -------------------------------------------------------- */

/*
 * Cutting the base file anywhere: below 32 bytes the header is missing (offset 0); otherwise
 * only a cut on a buffer boundary leaves a valid file (of fewer buffers), and any other cut is
 * reported at the start of the partial buffer.
 */
static void test_every_truncation(void **state)
{
	/* Events in the first 0, 1, 2, 3 buffers: 5 in b0, 14 in b1, 1 in b2. */
	static const uint64_t events_in_first[] = {0, 5, 19, 20};
	struct img m;
	struct outcome o;
	size_t len;

	(void)state;
	for (int big = 0; big <= 1; big++) {
		base_file(&m, big);
		assert_int_equal(m.len, 512);
		for (len = 0; len <= m.len; len++) {
			o = exercise(m.b, len, "cut.xray");
			if (len >= 32 && (len - 32) % 160 == 0) {
				assert_true(o.valid);
				assert_int_equal(o.events, events_in_first[(len - 32) / 160]);
				continue;
			}
			assert_false(o.valid);
			assert_int_equal(o.offset, len < 32 ? 0 : 32 + (len - 32) / 160 * 160);
		}
	}
}

/*
 * Half of the flips hit the first byte of a record (discriminant, kind, action) or a size
 * field, where a flip changes the structure; the others land anywhere.
 */
static void test_bit_flips(void **state)
{
	struct img base[2], m;
	uint64_t targets[2][64], iters = fuzz_iterations(4000), i, valid = 0;
	size_t ntargets[2] = {0, 0};

	(void)state;
	fuzz_seed("bit flips");
	for (int big = 0; big <= 1; big++) {
		struct xfdr_trace *t;
		struct xfdr_record_cursor c;
		struct xfdr_record r;
		struct xfdr_error err;

		base_file(&base[big], big);
		assert_true(exercise(base[big].b, base[big].len, "flip.xray").valid);
		assert_int_equal(
		    xfdr_trace_open_memory(base[big].b, base[big].len, "flip.xray", &t, &err), 0);
		xfdr_records_begin(t, &c);
		while (xfdr_records_next(&c, &r, &err) == 1 && ntargets[big] < 64)
			targets[big][ntargets[big]++] = r.offset;
		xfdr_trace_close(t);
		targets[big][ntargets[big]++] = 16; /* buffer_size */
	}
	for (i = 0; i < iters; i++) {
		int big = (int)(i & 1), flips = 1 + (int)below(4);

		m = base[big];
		while (flips--) {
			uint64_t bit = below(m.len * 8);

			if (below(2))
				bit = targets[big][below(ntargets[big])] * 8 + below(8);
			m.b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
		valid += exercise(m.b, m.len, "flip.xray").valid;
	}
	print_message("bit flips: %llu of %llu flipped files still valid\n",
		      (unsigned long long)valid, (unsigned long long)iters);
}

/* Random bytes, with and without a valid header in front. */
static void test_random_files(void **state)
{
	struct img m;
	uint64_t iters = fuzz_iterations(4000), i;

	(void)state;
	fuzz_seed("random files");
	for (i = 0; i < iters; i++) {
		int big = (int)below(2);
		uint64_t bs = 48 + below(160), n = below(5);

		m.len = 0;
		if (i % 3)
			g_header(&m, big, bs);
		else
			n = 1, bs = below(400);
		for (uint64_t k = 0; k < n * bs; k++)
			PUT(&m, (uint8_t)rnd());
		/* Sometimes a valid preamble, so the body's random bytes get decoded. */
		if (i % 3 == 2 && n)
			for (uint64_t k = 0; k < n; k++) {
				size_t save = m.len;

				m.len = 32 + k * bs;
				g_preamble(&m, big, (uint16_t)rnd(), rnd(), (uint32_t)rnd(), 0,
					   rnd());
				m.len = save;
			}
		exercise(m.b, m.len, "random.xray");
	}
}

/*
 * Grammar-shaped random files with a known answer: the generator writes valid records, and
 * now and then one invalid one; it knows the offset of the first invalid record, the events
 * of a valid file and their absolute TSCs (NewCPUId/TSCWrap set the base, a function record
 * adds its delta, a custom event has its own TSC and moves nothing).
 */
struct gen_event {
	uint64_t offset, tsc;
	int custom;
	uint32_t args;
};

struct gen {
	struct img m;
	int big;
	uint64_t bad_offset; /* 0: valid */
	struct gen_event ev[1024];
	size_t n;
};

static void gen_bad(struct gen *g)
{
	if (!g->bad_offset)
		g->bad_offset = g->m.len;
}

static void gen_buffer(struct gen *g, uint64_t bs)
{
	struct img *m = &g->m;
	size_t end = m->len + bs;
	uint64_t base = below(1000);
	int args_ok = 0; /* the previous record was Entry_Args or CallArgument */
	struct gen_event *entry_args = NULL;

	g_preamble(m, g->big, (uint16_t)below(4), below(3), (uint32_t)below(3), 0, base);
	while (m->len < end) {
		size_t room = end - m->len, at = m->len;
		unsigned pick = (unsigned)below(100);

		if (room < 16 || pick < 40) {
			unsigned action = (unsigned)below(4);
			uint32_t delta = (uint32_t)below(1u << 20);

			if (room < 8) {
				/* Cannot be filled: the record is cut by the buffer end. */
				gen_bad(g);
				img_pad_to(m, end, 0);
				break;
			}
			if (below(200) == 0) {
				action = 4 + (unsigned)below(4);
				gen_bad(g);
			}
			g_fn(m, g->big, action, (uint32_t)rnd(), delta);
			base += delta;
			g->ev[g->n++] = (struct gen_event){at, base, 0, 0};
			entry_args = action == 3 ? &g->ev[g->n - 1] : NULL;
			args_ok = action == 3;
		} else if (pick < 55) {
			if (!args_ok && below(10))
				continue;
			if (!args_ok)
				gen_bad(g);
			g_arg(m, g->big, rnd());
			if (entry_args)
				entry_args->args++;
			args_ok = 1;
		} else if (pick < 65) {
			base = rnd();
			g_tsc_md(m, g->big, 2 + (unsigned)below(2), (uint16_t)rnd(), base);
			entry_args = NULL;
			args_ok = 0;
		} else if (pick < 80) {
			uint8_t payload[64];
			uint32_t bytes = (uint32_t)below(40);
			uint64_t tsc = rnd();

			if (below(30) == 0)
				bytes = (uint32_t)(room - 16 + 1 + below(3));
			if (16 + (uint64_t)bytes > room) {
				gen_bad(g);
				g_custom(m, g->big, bytes, tsc, "", 0);
				img_pad_to(m, end, 0);
				break;
			}
			for (uint32_t k = 0; k < bytes; k++)
				payload[k] = (uint8_t)rnd();
			g_custom(m, g->big, bytes, tsc, payload, bytes);
			g->ev[g->n++] = (struct gen_event){at, tsc, 1, 0};
			entry_args = NULL;
			args_ok = 0;
		} else if (pick < 90) {
			/* EndOfBuffer; the padding is garbage that must never be read. */
			g_eob(m, g->big);
			while (m->len < end)
				PUT(m, (uint8_t)rnd());
		} else if (pick < 92) {
			/* A record that does not belong in a body. */
			unsigned kind =
			    below(3) == 0 ? 7 + (unsigned)below(121) : (unsigned)below(2) * 4;

			gen_bad(g);
			g_md(m, g->big, kind);
			g_md_end(m, at);
		}
	}
}

static void test_grammar_shaped_random(void **state)
{
	static struct gen g;
	uint64_t iters = fuzz_iterations(4000) / 2, i, valid = 0;

	(void)state;
	fuzz_seed("grammar-shaped random");
	for (i = 0; i < iters; i++) {
		uint64_t bs = 48 + below(200), nbuf = below(5);
		struct outcome o;

		g.m.len = 0;
		g.big = (int)below(2);
		g.bad_offset = 0;
		g.n = 0;
		g_header(&g.m, g.big, bs);
		for (uint64_t k = 0; k < nbuf; k++)
			gen_buffer(&g, bs);
		assert_int_equal(g.m.len, 32 + nbuf * bs);
		o = exercise(g.m.b, g.m.len, "gen.xray");
		if (g.bad_offset) {
			if (o.valid || o.offset != g.bad_offset) {
				print_error(
				    "iteration %llu: expected a violation at %llu, got %s\n",
				    (unsigned long long)i, (unsigned long long)g.bad_offset,
				    o.valid ? "a valid file" : o.text);
				fail();
			}
			continue;
		}
		if (!o.valid) {
			print_error("iteration %llu: valid file rejected: %s\n",
				    (unsigned long long)i, o.text);
			fail();
		}
		valid++;
		assert_int_equal(o.events, g.n);
		{
			struct xfdr_trace *t;
			struct xfdr_event_iter it;
			struct xfdr_event ev;
			struct xfdr_error err;
			size_t k = 0;

			assert_int_equal(
			    xfdr_trace_open_memory(g.m.b, g.m.len, "gen.xray", &t, &err), 0);
			assert_int_equal(xfdr_events_begin(t, XFDR_ORDER_FILE, &it, &err), 0);
			while (xfdr_events_next(&it, &ev, &err) == 1) {
				assert_int_equal(ev.offset, g.ev[k].offset);
				assert_int_equal(ev.tsc, g.ev[k].tsc);
				assert_int_equal(ev.type, g.ev[k].custom ? XFDR_EVENT_CUSTOM
									 : XFDR_EVENT_FUNCTION);
				assert_int_equal(ev.arg_count, g.ev[k].args);
				k++;
			}
			assert_int_equal(k, g.n);
			xfdr_trace_close(t);
		}
	}
	print_message("grammar-shaped random: %llu of %llu files valid\n",
		      (unsigned long long)valid, (unsigned long long)iters);
	assert_true(valid > iters / 20);
}

/* ---- one test per rule: exact offset and wording ------------------------------------------- */

/* 32 NewBuffer tid 1, 48 WallClockTime 0 s, 64 NewCPUId cpu 0 tsc 100. */
static void preamble_le(struct img *m)
{
	PUT(m, 0x01, L16(1), Z13);
	PUT(m, 0x09, L64(0), L32(0), Z3);
	PUT(m, 0x05, L16(0), L64(100), Z5);
}

/* The image must be rejected with exactly this message (and the offset it names). */
static void expect_error(const struct img *m, uint64_t offset, const char *text)
{
	struct outcome o = exercise(m->b, m->len, "bad.xray");

	if (o.valid) {
		print_error("accepted; expected: %s\n", text);
		fail();
	}
	assert_string_equal(o.text, text);
	assert_int_equal(o.offset, offset);
}

static void test_bad_version(void **state)
{
	struct img m = {0};

	(void)state;
	img_header(&m, 64);
	m.b[0] = 0x06; /* versions 2 to 5 are compiler-rt's (test_reader_versions.c) */
	expect_error(&m, 0,
		     "bad.xray: offset 0: expected version 1 to 5 (bytes 0N 00 or 00 0N), found "
		     "version 6 (bytes 06 00)");
	m.b[0] = 0x00;
	expect_error(&m, 0,
		     "bad.xray: offset 0: expected version 1 to 5 (bytes 0N 00 or 00 0N), found "
		     "version 0 (bytes 00 00)");
	m.b[1] = 0x06; /* what a big-endian version 6 writer would put there */
	expect_error(&m, 0,
		     "bad.xray: offset 0: expected version 1 to 5 (bytes 0N 00 or 00 0N), found "
		     "version 6 (bytes 00 06)");
	m.b[0] = 0x01;
	m.b[1] = 0x01;
	expect_error(&m, 0,
		     "bad.xray: offset 0: expected version 1 to 5 (bytes 0N 00 or 00 0N), found "
		     "version 257 (bytes 01 01)");
}

static void test_bad_type(void **state)
{
	struct img m = {0};

	(void)state;
	img_header(&m, 64);
	m.b[2] = 0x00;
	expect_error(&m, 2,
		     "bad.xray: offset 2: expected type 1 (Flight Data Recorder), found "
		     "type 0");
	/* Big-endian: 00 02 is type 2. */
	m.len = 0;
	PUT(&m, 0x00, 0x01, 0x00, 0x02, Z8, Z8, Z8, 0, 0, 0, 0);
	expect_error(&m, 2,
		     "bad.xray: offset 2: expected type 1 (Flight Data Recorder), found "
		     "type 2");
}

static void test_short_header(void **state)
{
	struct img m = {0};

	(void)state;
	expect_error(&m, 0,
		     "bad.xray: offset 0: expected a 32-byte file header, found an empty "
		     "file");
	img_header(&m, 64);
	m.len = 31;
	expect_error(&m, 0, "bad.xray: offset 0: expected a 32-byte file header, found 31 bytes");
	m.len = 1;
	expect_error(&m, 0, "bad.xray: offset 0: expected a 32-byte file header, found 1 bytes");
}

/* A buffer too small for NewBuffer + WallClockTime + NewCPUId would end inside its preamble. */
static void test_buffer_ends_inside_preamble(void **state)
{
	struct img m = {0};

	(void)state;
	img_header(&m, 40);
	preamble_le(&m);
	m.len = 32 + 40;
	expect_error(&m, 16,
		     "bad.xray: offset 16: expected a buffer_size of at least 48 bytes "
		     "(NewBuffer, WallClockTime, NewCPUId), found 40");
	m.len = 0;
	img_header(&m, 47);
	m.len = 32 + 47;
	expect_error(&m, 16,
		     "bad.xray: offset 16: expected a buffer_size of at least 48 bytes "
		     "(NewBuffer, WallClockTime, NewCPUId), found 47");
	/* 0 must not divide anything: one byte after the header is already a buffer. */
	m.len = 0;
	img_header(&m, 0);
	m.len = 33;
	expect_error(&m, 16,
		     "bad.xray: offset 16: expected a buffer_size of at least 48 bytes "
		     "(NewBuffer, WallClockTime, NewCPUId), found 0");
}

/*
 * A header and no buffers is a valid file whatever its buffer_size (Format := Header
 * ThreadBuffer* EOF): no buffer has to hold a preamble. It has no buffers, threads or events;
 * `xfdr verify` takes it.
 */
static void test_header_only_any_buffer_size(void **state)
{
	static const uint64_t sizes[] = {0, 1, 8, 47, 48, 65536, UINT64_MAX};
	struct xfdr_trace *t;
	struct xfdr_error err;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct child_result r;
	uint64_t threads;
	const char *path;
	size_t i;

	(void)state;
	assert_int_equal(scratch_make("/tmp/xfdr-test-malformed-XXXXXX"), 0);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct img m = {0};

		img_header(&m, sizes[i]);
		assert_int_equal(m.len, 32);
		assert_int_equal(xfdr_trace_open_memory(m.b, m.len, "empty.xray", &t, &err), 0);
		assert_int_equal(xfdr_trace_header(t)->buffer_size, sizes[i]);
		assert_int_equal(xfdr_trace_buffer_count(t), 0);
		assert_int_equal(xfdr_trace_verify(t, &err), 0);
		assert_int_equal(xfdr_trace_threads(t, &threads, &err), 0);
		assert_int_equal(threads, 0);
		assert_int_equal(xfdr_events_begin(t, XFDR_ORDER_THREAD, &it, &err), 0);
		assert_int_equal(xfdr_events_next(&it, &ev, &err), 0);
		xfdr_trace_close(t);

		path = scratch_write("empty.xray", m.b, m.len);
		assert_int_equal(child_xfdr(&r, "verify", path, NULL), 0);
		assert_string_equal(r.err, "");
		child_result_free(&r);
	}
	assert_int_equal(scratch_remove(), 0);
}

/* A record cut by the end of the file: the file is not the header plus whole buffers. */
static void test_cut_by_file_end(void **state)
{
	struct img m = {0};

	(void)state;
	img_header(&m, 72);
	preamble_le(&m);
	PUT(&m, 0x10, 0x00, 0x00, 0x00, L32(1));
	PUT(&m, 0x03, Z15);
	AT(&m, 104);
	PUT(&m, 0x01, L16(1), Z7); /* a second buffer cut inside its NewBuffer */
	expect_error(&m, 104,
		     "bad.xray: offset 104: expected a file size of 32 + n * 72 bytes "
		     "(whole buffers), found 114 bytes (32 + 1 * 72 + 10)");
	m.len = 52;
	expect_error(&m, 32,
		     "bad.xray: offset 32: expected a file size of 32 + n * 72 bytes "
		     "(whole buffers), found 52 bytes (32 + 0 * 72 + 20)");
	/* A buffer_size near 2^64 must not overflow the size arithmetic. */
	m.len = 0;
	img_header(&m, 0xffffffffffffffffull);
	PUT(&m, 0x01);
	expect_error(&m, 32,
		     "bad.xray: offset 32: expected a file size of 32 + n * "
		     "18446744073709551615 bytes (whole buffers), found 33 bytes (32 + 0 * "
		     "18446744073709551615 + 1)");
}

static void test_missing_new_buffer(void **state)
{
	struct img m = {0};

	(void)state;
	img_header(&m, 64);
	PUT(&m, 0x10, 0x00, 0x00, 0x00, L32(1));
	img_pad_to(&m, 96, 0);
	expect_error(&m, 32,
		     "bad.xray: offset 32: expected NewBuffer at the start of buffer 0, "
		     "found Function record (Entry)");
	/* Buffer 1 after a good buffer 0 that ended with EndOfBuffer. */
	m.len = 0;
	img_header(&m, 64);
	preamble_le(&m);
	PUT(&m, 0x03, Z15);
	AT(&m, 96);
	PUT(&m, 0x09, L64(0), L32(0), Z3);
	img_pad_to(&m, 160, 0);
	expect_error(&m, 96,
		     "bad.xray: offset 96: expected NewBuffer at the start of buffer 1, "
		     "found WallClockTime record");
}

static void test_missing_wall_clock(void **state)
{
	struct img m = {0};

	(void)state;
	img_header(&m, 64);
	PUT(&m, 0x01, L16(1), Z13);
	PUT(&m, 0x05, L16(0), L64(100), Z5);
	img_pad_to(&m, 96, 0);
	expect_error(&m, 48,
		     "bad.xray: offset 48: expected WallClockTime after NewBuffer, found "
		     "NewCPUId record");
	/* An EndOfBuffer cannot close a buffer before its preamble is complete. */
	m.len = 48;
	PUT(&m, 0x03, Z15);
	img_pad_to(&m, 96, 0);
	expect_error(&m, 48,
		     "bad.xray: offset 48: expected WallClockTime after NewBuffer, found "
		     "EndOfBuffer record");
}

static void test_missing_new_cpu_id(void **state)
{
	struct img m = {0};

	(void)state;
	img_header(&m, 64);
	PUT(&m, 0x01, L16(1), Z13);
	PUT(&m, 0x09, L64(0), L32(0), Z3);
	AT(&m, 64);
	PUT(&m, 0x10, 0x00, 0x00, 0x00, L32(1));
	img_pad_to(&m, 96, 0);
	expect_error(&m, 64,
		     "bad.xray: offset 64: expected NewCPUId after WallClockTime, found "
		     "Function record (Entry)");
	m.len = 64;
	PUT(&m, 0x07, L64(5), Z7);
	img_pad_to(&m, 96, 0);
	expect_error(&m, 64,
		     "bad.xray: offset 64: expected NewCPUId after WallClockTime, found "
		     "TSCWrap record");
}

static void test_unknown_kind(void **state)
{
	struct img m = {0};

	(void)state;
	img_header(&m, 128);
	preamble_le(&m);
	AT(&m, 80);
	PUT(&m, 0x0f, Z15); /* kind 7 (BufferExtents in later versions) */
	img_pad_to(&m, 160, 0);
	expect_error(&m, 80,
		     "bad.xray: offset 80: expected a metadata record kind 0-6 (NewBuffer "
		     ".. CallArgument), found kind 7");
	m.b[80] = 0xff;
	expect_error(&m, 80,
		     "bad.xray: offset 80: expected a metadata record kind 0-6 (NewBuffer "
		     ".. CallArgument), found kind 127");
	/* At the start of a buffer the kind is checked before the grammar. */
	m.b[32] = 0x13; /* kind 9: Pid */
	expect_error(&m, 32,
		     "bad.xray: offset 32: expected a metadata record kind 0-6 (NewBuffer "
		     ".. CallArgument), found kind 9");
	/* Big-endian: 0x87 is kind 7. */
	m.len = 0;
	PUT(&m, 0x00, 0x01, 0x00, 0x01, 0, 0, 0, 0, Z8, Z7, 64, Z8);
	PUT(&m, 0x80, B16(1), Z13);
	PUT(&m, 0x84, Z15);
	PUT(&m, 0x82, Z15);
	AT(&m, 80);
	PUT(&m, 0x87, Z15);
	expect_error(&m, 80,
		     "bad.xray: offset 80: expected a metadata record kind 0-6 (NewBuffer "
		     ".. CallArgument), found kind 7");
}

static void test_bad_action(void **state)
{
	struct img m = {0};

	(void)state;
	img_header(&m, 128);
	preamble_le(&m);
	AT(&m, 80);
	PUT(&m, 0x18, 0x00, 0x00, 0x00, L32(1)); /* fid 1, action 4 */
	img_pad_to(&m, 160, 0);
	expect_error(&m, 80,
		     "bad.xray: offset 80: expected a function record action 0-3 (Entry, "
		     "Exit, Tail_Exit, Entry_Args), found action 4");
	m.b[80] = 0x1e;
	expect_error(&m, 80,
		     "bad.xray: offset 80: expected a function record action 0-3 (Entry, "
		     "Exit, Tail_Exit, Entry_Args), found action 7");
	/* Big-endian: action bits 28-30, so first byte 0x40 is action 4. */
	m.len = 0;
	PUT(&m, 0x00, 0x01, 0x00, 0x01, 0, 0, 0, 0, Z8, Z7, 64, Z8);
	PUT(&m, 0x80, B16(1), Z13);
	PUT(&m, 0x84, Z15);
	PUT(&m, 0x82, Z15);
	PUT(&m, 0x40, 0x00, 0x00, 0x01, 0, 0, 0, 1);
	img_pad_to(&m, 32 + 64, 0);
	expect_error(&m, 80,
		     "bad.xray: offset 80: expected a function record action 0-3 (Entry, "
		     "Exit, Tail_Exit, Entry_Args), found action 4");
}

static void test_preamble_record_in_body(void **state)
{
	struct img m = {0};

	(void)state;
	img_header(&m, 128);
	preamble_le(&m);
	PUT(&m, 0x10, 0x00, 0x00, 0x00, L32(1));
	AT(&m, 88);
	PUT(&m, 0x01, L16(2), Z13);
	img_pad_to(&m, 160, 0);
	expect_error(&m, 88,
		     "bad.xray: offset 88: expected NewCPUId, TSCWrap, Function, "
		     "CustomEventMarker, CallArgument or EndOfBuffer in the body of buffer "
		     "0, found NewBuffer record");
	m.len = 80;
	PUT(&m, 0x09, L64(1), L32(2), Z3);
	img_pad_to(&m, 160, 0);
	expect_error(&m, 80,
		     "bad.xray: offset 80: expected NewCPUId, TSCWrap, Function, "
		     "CustomEventMarker, CallArgument or EndOfBuffer in the body of buffer "
		     "0, found WallClockTime record");
}

static void test_misplaced_call_argument(void **state)
{
	static const char *const after[] = {
	    "NewCPUId record",		"Function record (Entry)", "TSCWrap record",
	    "CustomEventMarker record", "Function record (Exit)",
	};
	struct img m = {0};
	char want[256];
	size_t at;
	int i;

	(void)state;
	for (i = 0; i < 5; i++) {
		m.len = 0;
		img_header(&m, 160);
		preamble_le(&m);
		AT(&m, 80);
		switch (i) {
		case 1:
			PUT(&m, 0x10, 0x00, 0x00, 0x00, L32(1));
			break;
		case 2:
			PUT(&m, 0x07, L64(5), Z7);
			break;
		case 3:
			PUT(&m, 0x0b, L32(2), L64(5), Z3, 'h', 'i');
			break;
		case 4: /* Entry_Args, CallArgument, then Exit breaks the run */
			PUT(&m, 0x16, 0x00, 0x00, 0x00, L32(1));
			PUT(&m, 0x0d, L64(1), Z7);
			PUT(&m, 0x12, 0x00, 0x00, 0x00, L32(1));
			break;
		}
		at = m.len;
		PUT(&m, 0x0d, L64(7), Z7);
		img_pad_to(&m, 192, 0);
		snprintf(
		    want, sizeof(want),
		    "bad.xray: offset %zu: expected CallArgument only after "
		    "Function record (Entry_Args) or CallArgument, found CallArgument after %s",
		    at, after[i]);
		expect_error(&m, at, want);
	}
}

static void test_record_cut_by_buffer_end(void **state)
{
	struct img m = {0};

	(void)state;
	/* 60-byte buffers: after the preamble and an Entry, 4 bytes are left at 88. */
	img_header(&m, 60);
	preamble_le(&m);
	PUT(&m, 0x10, 0x00, 0x00, 0x00, L32(1));
	AT(&m, 88);
	PUT(&m, 0x12, 0x00, 0x00, 0x00);
	/* A valid second buffer right behind: nothing may be read from it. */
	AT(&m, 92);
	preamble_le(&m);
	img_pad_to(&m, 152, 0);
	expect_error(&m, 88,
		     "bad.xray: offset 88: expected 8 bytes for Function record (Exit), "
		     "found 4 before the end of the buffer at offset 92");
	/* 70-byte buffer: a TSCWrap at 88 has 14 bytes. */
	m.len = 0;
	img_header(&m, 70);
	preamble_le(&m);
	PUT(&m, 0x10, 0x00, 0x00, 0x00, L32(1));
	PUT(&m, 0x07, L64(5), 0, 0, 0, 0, 0);
	AT(&m, 102);
	expect_error(&m, 88,
		     "bad.xray: offset 88: expected 16 bytes for TSCWrap record, found 14 "
		     "before the end of the buffer at offset 102");
	/* 64-byte buffer: an EndOfBuffer at 88 has 8 bytes. */
	m.len = 0;
	img_header(&m, 64);
	preamble_le(&m);
	PUT(&m, 0x10, 0x00, 0x00, 0x00, L32(1));
	PUT(&m, 0x03, Z7);
	AT(&m, 96);
	expect_error(&m, 88,
		     "bad.xray: offset 88: expected 16 bytes for EndOfBuffer record, found "
		     "8 before the end of the buffer at offset 96");
}

static void test_custom_payload_cut(void **state)
{
	struct img m = {0};

	(void)state;
	img_header(&m, 128);
	preamble_le(&m);
	AT(&m, 80);
	PUT(&m, 0x0b, L32(100), L64(5), Z3);
	img_pad_to(&m, 160, 0);
	expect_error(&m, 80,
		     "bad.xray: offset 80: expected 116 bytes for a CustomEventMarker and "
		     "its 100-byte payload, found 80 before the end of the buffer at offset "
		     "160");
	/* One byte too many: 64 payload bytes fit exactly, 65 do not. */
	m.b[81] = 64;
	assert_true(exercise(m.b, m.len, "bad.xray").valid);
	m.b[81] = 65;
	expect_error(&m, 80,
		     "bad.xray: offset 80: expected 81 bytes for a CustomEventMarker and "
		     "its 65-byte payload, found 80 before the end of the buffer at offset "
		     "160");
	m.b[81] = m.b[82] = m.b[83] = m.b[84] = 0xff;
	expect_error(&m, 80,
		     "bad.xray: offset 80: expected 4294967311 bytes for a "
		     "CustomEventMarker and its 4294967295-byte payload, found 80 before "
		     "the end of the buffer at offset 160");
}

/*
 * The padding after EndOfBuffer is skipped unread, even when it looks like records (a
 * NewBuffer, an unknown kind), and reserved bytes anywhere are ignored.
 */
static void test_padding_and_reserved_ignored(void **state)
{
	struct img m = {0};
	struct outcome o;

	(void)state;
	PUT(&m, 0x01, 0x00, 0x01, 0x00, 0xff, 0xff, 0xff, 0xff, L64(1000), L64(160), 0xff, 0xff,
	    0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
	PUT(&m, 0x01, L16(1), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xff);
	PUT(&m, 0x09, L64(0), L32(0), 0xff, 0xff, 0xff);
	PUT(&m, 0x05, L16(0), L64(100), 0xff, 0xff, 0xff, 0xff, 0xff);
	PUT(&m, 0x07, L64(200), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
	PUT(&m, 0x16, 0x00, 0x00, 0x00, L32(1));
	PUT(&m, 0x0d, L64(1), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
	PUT(&m, 0x0b, L32(0), L64(5), 0xff, 0xff, 0xff);
	AT(&m, 136);
	PUT(&m, 0x03, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xff);
	PUT(&m, 0x01, L16(9), Z13);
	PUT(&m, 0xff);
	img_pad_to(&m, 192, 0x0f);
	o = exercise(m.b, m.len, "pad.xray");
	assert_true(o.valid);
	assert_int_equal(o.events, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bad_version),
	    cmocka_unit_test(test_bad_type),
	    cmocka_unit_test(test_short_header),
	    cmocka_unit_test(test_buffer_ends_inside_preamble),
	    cmocka_unit_test(test_header_only_any_buffer_size),
	    cmocka_unit_test(test_cut_by_file_end),
	    cmocka_unit_test(test_missing_new_buffer),
	    cmocka_unit_test(test_missing_wall_clock),
	    cmocka_unit_test(test_missing_new_cpu_id),
	    cmocka_unit_test(test_unknown_kind),
	    cmocka_unit_test(test_bad_action),
	    cmocka_unit_test(test_preamble_record_in_body),
	    cmocka_unit_test(test_misplaced_call_argument),
	    cmocka_unit_test(test_record_cut_by_buffer_end),
	    cmocka_unit_test(test_custom_payload_cut),
	    cmocka_unit_test(test_padding_and_reserved_ignored),
	    cmocka_unit_test(test_every_truncation),
	    cmocka_unit_test(test_bit_flips),
	    cmocka_unit_test(test_random_files),
	    cmocka_unit_test(test_grammar_shaped_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
