/*
 * tests/system/test_cli_flame.c - `xfdr flame`: the SVG read back and checked against times
 * known from how the traces were made, rendered by a real browser.
 *
 *  - The hand-built trace of test_cli_stack.c (its times worked out there): the frames are
 *    read back from the SVG's one-frame-per-line markup; the outermost level adds up to the
 *    "all" frame, each frame's width is its known share of the total, each frame sits inside
 *    its caller and its callees together are no wider; the tooltips say the known times.
 *    Merged and per thread. python3's xml.etree must parse the file (names with XML's
 *    special characters and bytes that are not UTF-8 are escaped or replaced).
 *  - 10,000 distinct stacks: the graph is made quickly, stays small, and keeps the sums.
 *  - Headless Chromium draws the SVG into a PNG, decoded by python3 (zlib): it must show the
 *    frame colours and text, not a blank page. Without chromium the test fails (make deps
 *    installs it), except under XFDR_SANITIZED=1, where that one part is skipped.
 *  - Bad options exit 2, bad input 1, each with one line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>

#include "tests/support/child.h"
#include "tests/support/scratch.h"
#include "tests/support/text.h"
#include "tests/support/trace_gen.h"

#define K 1000ull /* every hand-made time is in thousands of ticks; the file runs at 2 GHz */
#define BASE 1000000ull
#define INNER_W 1180.0 /* the default width, 1200, less 10 px on each side */

/* ---- building traces ---------------------------------------------------------------------- */

/* The buffers' order in the files this test writes. */
#define SHUFFLE_SEED 7

static void fn(struct tg_trace *tr, uint16_t tid, unsigned action, uint32_t fid, uint64_t t)
{
	struct tg_event *e = tg_push(tg_thread_of(tr, tid));

	e->action = action;
	e->fid = fid;
	e->tsc = BASE + t * K;
}

#define IN(tid, fid, t) fn(&tr, tid, XFDR_FN_ENTER, fid, t)
#define OUT(tid, fid, t) fn(&tr, tid, XFDR_FN_EXIT, fid, t)

/*
 * The trace of test_cli_stack.c: subtree times (thousands of ticks) main 300 (self 130, 2
 * calls) { a 90 { b 50 } b 30 c 50 }, #5 50 { #6 0 }, #7 50, #8 50, #9 10 { #10 0 }; the whole
 * 460; per thread 200, 150, 110. Function 4 is named with XML's special characters and a byte
 * that is not UTF-8.
 */
static const char *known_trace(void)
{
	struct tg_trace tr;

	memset(&tr, 0, sizeof(tr));
	IN(1, 1, 0), IN(1, 2, 10), IN(1, 3, 20), OUT(1, 3, 50), OUT(1, 2, 60), IN(1, 3, 70);
	OUT(1, 3, 100), IN(1, 2, 100), IN(1, 3, 110), OUT(1, 3, 130), OUT(1, 2, 140);
	OUT(1, 1, 200);
	IN(2, 1, 1000), IN(2, 4, 1010), OUT(2, 4, 1060), OUT(2, 1, 1100), IN(2, 5, 1200);
	IN(2, 6, 1250);
	IN(3, 8, 300), OUT(3, 8, 350), OUT(3, 7, 400), IN(3, 9, 450), IN(3, 10, 460);
	scratch_write_text("known.xray.map", "function\t1\tmain\t0x1000\t-\t-\n"
					     "function\t2\ta\t0x1010\t-\t-\n"
					     "function\t3\tb\t0x1020\t-\t-\n"
					     "function\t4\tc<&>\"'\xff\t0x1030\t-\t-\n");
	return tg_write_scratch(&tr, 256, "known.xray", SHUFFLE_SEED);
}

/* ---- reading the SVG back ----------------------------------------------------------------- */

struct frame {
	double x, y, w;
	char title[160];
};

struct svg {
	struct frame *f;
	size_t n;
	size_t bytes;
	char *text;
};

static void svg_free(struct svg *s)
{
	free(s->f);
	free(s->text);
}

/* Read the frames: every line that starts with "<g><title>". */
static void svg_read(const char *path, struct svg *s)
{
	FILE *fp = fopen(path, "rb");
	size_t cap = 0;
	char *p, *line;
	long len;

	memset(s, 0, sizeof(*s));
	assert_non_null(fp);
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	len = ftell(fp);
	rewind(fp);
	s->text = malloc((size_t)len + 1);
	assert_non_null(s->text);
	assert_int_equal(fread(s->text, 1, (size_t)len, fp), (size_t)len);
	s->text[len] = '\0';
	s->bytes = (size_t)len;
	fclose(fp);
	for (line = s->text; (p = strstr(line, "\n<g><title>")) != NULL; line = p + 1) {
		struct frame *f;
		static const char rect[] = "</title><rect class=\"f\" x=\"";
		const char *t = p + 11, *e = strstr(t, rect);

		assert_non_null(e);
		if (s->n == cap) {
			cap = cap ? 2 * cap : 256;
			s->f = realloc(s->f, cap * sizeof(*s->f));
			assert_non_null(s->f);
		}
		f = &s->f[s->n++];
		snprintf(f->title, sizeof(f->title), "%.*s", (int)(e - t), t);
		assert_int_equal(sscanf(e + sizeof(rect) - 1, "%lf\" y=\"%lf\" width=\"%lf\"",
					&f->x, &f->y, &f->w),
				 3);
	}
}

static const struct frame *frame_titled(const struct svg *s, const char *prefix)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		if (!strncmp(s->f[i].title, prefix, strlen(prefix)))
			return &s->f[i];
	}
	fail_msg("no frame titled '%s...'", prefix);
	return NULL;
}

/*
 * The geometry every flame graph must have: one "all" frame at the bottom; every other frame
 * one level (16 px) above a frame that spans it; callees together no wider than their caller;
 * the outermost level adding up to "all" (when nothing there was left out). Returns the
 * number of outermost frames.
 */
static size_t check_geometry(const struct svg *s, int level1_complete)
{
	const struct frame *all = frame_titled(s, "all (");
	double eps = 0.011, sum1 = 0;
	size_t i, j, level1 = 0;
	double *inside = calloc(s->n, sizeof(*inside));

	assert_non_null(inside);
	assert_true(s->n >= 1);
	assert_true(all->w > INNER_W - 0.01 && all->w < INNER_W + 0.01);
	for (i = 0; i < s->n; i++) {
		const struct frame *c = &s->f[i];
		size_t parent = s->n;

		if (c == all)
			continue;
		assert_true(c->y < all->y);
		for (j = 0; j < s->n && parent == s->n; j++) {
			const struct frame *p = &s->f[j];

			if (p->y == c->y + 16 && p->x <= c->x + eps &&
			    c->x + c->w <= p->x + p->w + eps)
				parent = j;
		}
		if (parent == s->n)
			fail_msg("frame '%s' at x %.2f y %.0f w %.2f has no caller under it",
				 c->title, c->x, c->y, c->w);
		assert_true(c->w <= s->f[parent].w + eps);
		inside[parent] += c->w;
		if (&s->f[parent] == all) {
			sum1 += c->w;
			level1++;
		}
	}
	for (i = 0; i < s->n; i++) {
		if (inside[i] > s->f[i].w + eps * (double)s->n)
			fail_msg("callees of '%s' are %.3f px wide, it is %.3f", s->f[i].title,
				 inside[i], s->f[i].w);
	}
	if (level1_complete &&
	    !(sum1 > INNER_W - eps * (double)level1 && sum1 < INNER_W + eps * (double)level1))
		fail_msg("outermost frames add up to %.3f px, not %.1f", sum1, INNER_W);
	free(inside);
	return level1;
}

static void assert_width(const struct svg *s, const char *title, double share)
{
	const struct frame *f = frame_titled(s, title);

	if (f->w < INNER_W * share - 0.006 || f->w > INNER_W * share + 0.006)
		fail_msg("'%s' is %.3f px wide, want %.3f", title, f->w, INNER_W * share);
}

/* ---- python3 helpers: XML parse, PNG decode ------------------------------------------------ */

static const char py_script[] =
    "import sys, zlib, struct, xml.etree.ElementTree as ET\n"
    "if sys.argv[1] == 'xml':\n"
    "    root = ET.parse(sys.argv[2]).getroot()\n"
    "    ns = '{http://www.w3.org/2000/svg}'\n"
    "    print(len(root.findall('.//' + ns + 'rect')), len(root.findall('.//' + ns + 'title')))\n"
    "    sys.exit(0)\n"
    "data = open(sys.argv[2], 'rb').read()\n"
    "assert data[:8] == b'\\x89PNG\\r\\n\\x1a\\n'\n"
    "pos, idat, w = 8, b'', 0\n"
    "while pos < len(data):\n"
    "    n, kind = struct.unpack('>I4s', data[pos:pos + 8])\n"
    "    body = data[pos + 8:pos + 8 + n]\n"
    "    if kind == b'IHDR':\n"
    "        w, h, depth, ctype, _, _, inter = struct.unpack('>IIBBBBB', body)\n"
    "        assert depth == 8 and ctype in (2, 6) and inter == 0\n"
    "        bpp = 3 if ctype == 2 else 4\n"
    "    elif kind == b'IDAT':\n"
    "        idat += body\n"
    "    pos += 12 + n\n"
    "raw, stride = zlib.decompress(idat), w * bpp\n"
    "prev, rows, i = bytearray(stride), [], 0\n"
    "for y in range(h):\n"
    "    ft, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])\n"
    "    i += 1 + stride\n"
    "    for x in range(stride):\n"
    "        a = line[x - bpp] if x >= bpp else 0\n"
    "        b, c = prev[x], prev[x - bpp] if x >= bpp else 0\n"
    "        if ft == 1: line[x] = (line[x] + a) & 255\n"
    "        elif ft == 2: line[x] = (line[x] + b) & 255\n"
    "        elif ft == 3: line[x] = (line[x] + (a + b) // 2) & 255\n"
    "        elif ft == 4:\n"
    "            p = a + b - c\n"
    "            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)\n"
    "            pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)\n"
    "            line[x] = (line[x] + pr) & 255\n"
    "    rows.append(line)\n"
    "    prev = line\n"
    "bg = warm = grey = dark = other = 0\n"
    "for line in rows:\n"
    "    for x in range(0, stride, bpp):\n"
    "        r, g, b = line[x], line[x + 1], line[x + 2]\n"
    "        if (r, g, b) in ((247, 247, 240), (255, 255, 255)): bg += 1\n"
    "        elif r >= 200 and 55 <= g <= 235 and b <= 60: warm += 1\n"
    "        elif (r, g, b) == (200, 200, 190): grey += 1\n"
    "        elif r < 110 and g < 110 and b < 110: dark += 1\n"
    "        else: other += 1\n"
    "print(w, h, bg, warm, grey, dark, other)\n";

/* Run the script (mode xml or png) on path; its stdout in buf. Fails the test unless it exits 0. */
static void python(const char *mode, const char *path, char *buf, size_t n)
{
	const char *script = scratch_write_text("check.py", py_script);
	char *argv[] = {"python3", (char *)script, (char *)mode, (char *)path, NULL};
	struct child_result r;

	child_capture(argv, &r);
	if (r.status != 0)
		fail_msg("python3 %s %s: status %d: %s", mode, path, r.status, r.err);
	snprintf(buf, n, "%s", r.out);
	child_result_free(&r);
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_known_merged(void **state)
{
	const char *path = known_trace(), *svg = scratch_path("known.svg");
	struct child_result r;
	struct svg s;
	char buf[256];
	size_t n1;

	(void)state;
	assert_int_equal(child_xfdr(&r, "flame", "-o", svg, path, NULL), 0);
	assert_string_equal(r.out, "");
	text_assert_contains(r.err, "note: 5 of 14 calls are incomplete");
	child_result_free(&r);
	svg_read(svg, &s);
	n1 = check_geometry(&s, 1);
	assert_int_equal(n1, 5); /* #5 #7 #8 #9 main */
	/* The two frames of no time, #5;#6 and #9;#10, have nothing to draw: all, 5 + 3 + 1. */
	assert_int_equal(s.n, 10);
	assert_null(strstr(s.text, "not drawn"));
	assert_width(&s, "main (", 300.0 / 460);
	assert_width(&s, "a (", 90.0 / 460);
	assert_width(&s, "#7 (", 50.0 / 460);
	assert_width(&s, "#9 (", 10.0 / 460);
	assert_width(&s, "c&lt;&amp;&gt;&quot;'? (", 50.0 / 460);
	/* 300,000 ticks at 2 GHz: 150 us; self 130,000: 65 us. */
	assert_string_equal(frame_titled(&s, "main (")->title,
			    "main (150.000 us, 65.22%, self 65.000 us, 2 calls)");
	assert_string_equal(frame_titled(&s, "all (")->title, "all (230.000 us, 100.00%)");
	/* Callers below, callees above: b in a is above a, which is above main. */
	assert_true(frame_titled(&s, "a (")->y == frame_titled(&s, "main (")->y - 16);
	text_assert_contains(s.text, "<text class=\"title\" x=\"600.0\" y=\"24\">Flame graph: "
				     "known.xray</text>");
	python("xml", svg, buf, sizeof(buf));
	assert_string_equal(buf, "11 10\n"); /* the background and 10 frames; 10 tooltips */
	svg_free(&s);
}

static void test_known_per_thread_options(void **state)
{
	const char *path = known_trace(), *svg = scratch_path("pt.svg");
	struct child_result r;
	struct svg s;
	char buf[256];
	size_t i;

	(void)state;
	assert_int_equal(child_xfdr(&r, "flame", "--per-thread", "--min-width=0", "--width=2000",
				    "--title=a <b> & c", "-o", svg, path, NULL),
			 0);
	child_result_free(&r);
	svg_read(svg, &s);
	/* Width 2000: all is 1980 px; rescale to check with the same helpers. */
	for (i = 0; i < s.n; i++) {
		s.f[i].x *= INNER_W / 1980.0;
		s.f[i].w *= INNER_W / 1980.0;
	}
	assert_int_equal(check_geometry(&s, 1), 3);
	assert_width(&s, "thread 1 (", 200.0 / 460);
	assert_width(&s, "thread 2 (", 150.0 / 460);
	assert_width(&s, "thread 3 (", 110.0 / 460);
	/* --min-width=0: every frame with time (#6 and #10 have none): all, 3 threads, 10. */
	assert_int_equal(s.n, 14);
	assert_null(strstr(s.text, "not drawn"));
	text_assert_contains(s.text, ">a &lt;b&gt; &amp; c</text>");
	text_assert_contains(s.text, "total 230.000 us in 14 calls of 3 threads");
	python("xml", svg, buf, sizeof(buf));
	svg_free(&s);
}

/*
 * 10,000 distinct stacks: r { m1..m100 { l101..l200 } }, leaf (i, j) lasting 1 + (i * 31 + j *
 * 17) % 400 thousand ticks, so widths range over 400x and many leaves are under 0.1 px.
 */
static void test_ten_thousand_stacks(void **state)
{
	const char *svg = scratch_path("big.svg"), *path;
	struct tg_trace tr;
	struct child_result r;
	struct svg s;
	struct timespec t0, t1;
	uint64_t t = 0;
	unsigned i, j;
	char buf[256];
	double secs;

	(void)state;
	memset(&tr, 0, sizeof(tr));
	IN(1, 0, t);
	for (i = 1; i <= 100; i++) {
		IN(1, i, ++t);
		for (j = 101; j <= 200; j++) {
			IN(1, j, ++t);
			t += 1 + (i * 31 + j * 17) % 400;
			OUT(1, j, t);
		}
		OUT(1, i, ++t);
	}
	OUT(1, 0, ++t);
	path = tg_write_scratch(&tr, 4096, "big.xray", SHUFFLE_SEED);
	assert_int_equal(child_xfdr(&r, "stack", "--no-map", path, NULL), 0);
	assert_int_equal(text_count_lines(r.out), 1 + 100 + 10000); /* every stack has self time */
	child_result_free(&r);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(child_xfdr(&r, "flame", "-o", svg, path, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	child_result_free(&r);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_true(secs < 10);
	svg_read(svg, &s);
	assert_int_equal(check_geometry(&s, 1), 1);
	/* About 1.2 px per 100 leaves: many are under 0.1 px and left out, their time kept. */
	text_assert_contains(s.text, "frames narrower than 0.1 px not drawn");
	assert_true(s.n > 1000 && s.n < 10102);
	if (s.bytes > 3u << 20)
		fail_msg("%zu frames take %zu bytes", s.n, s.bytes);
	python("xml", svg, buf, sizeof(buf));
	svg_free(&s);
}

static void test_chromium_renders(void **state)
{
	const char *path = known_trace(), *svg = scratch_path("render.svg");
	const char *png = scratch_path("render.png");
	char shot[4200], profile[4200], url[4200], buf[256];
	char *argv[] = {"chromium",
			"--headless",
			"--no-sandbox",
			"--disable-gpu",
			"--hide-scrollbars",
			shot,
			profile,
			"--window-size=1200,300",
			url,
			NULL};
	struct child_spec spec = {.argv = argv, .timeout_s = 60};
	struct child_result r;
	unsigned w, h, bg, warm, grey, dark, other;

	(void)state;
	if (getenv("XFDR_SANITIZED") && !strcmp(getenv("XFDR_SANITIZED"), "1"))
		skip();
	assert_int_equal(child_xfdr(&r, "flame", "-o", svg, path, NULL), 0);
	child_result_free(&r);
	snprintf(shot, sizeof(shot), "--screenshot=%s", png);
	snprintf(profile, sizeof(profile), "--user-data-dir=%s", scratch_path("chromium-profile"));
	snprintf(url, sizeof(url), "file://%s", svg);
	spec.out.to = CHILD_CAPTURE;
	spec.err.to = CHILD_CAPTURE;
	child_run(&spec, &r);
	if (r.status == 127)
		fail_msg("chromium not found: 'make deps' installs it (Debian package chromium)");
	if (r.status != 0 || !scratch_exists(png))
		fail_msg("chromium exited %d without %s: %s", r.status, png, r.err);
	child_result_free(&r);
	python("png", png, buf, sizeof(buf));
	assert_int_equal(
	    sscanf(buf, "%u %u %u %u %u %u %u", &w, &h, &bg, &warm, &grey, &dark, &other), 7);
	print_message("rendered %ux%u: background %u, frames %u, all %u, text %u, other %u\n", w, h,
		      bg, warm, grey, dark, other);
	assert_int_equal(w, 1200);
	/* The "all" frame: 1180 x 15 px, less its label. */
	assert_true(grey > 1180 * 15 / 2);
	/* main alone is 770 x 15 px of warm colour, the other frames more. */
	assert_true(warm > 770 * 15 / 2);
	/* Labels: glyphs drawn in black. */
	assert_true(dark > 100);
}

static void test_errors(void **state)
{
	const char *path = known_trace();
	struct child_result r;
	char want[512];

	(void)state;
	assert_int_equal(child_xfdr(&r, "flame", "--width=10", path, NULL), 2);
	text_assert_only_error_line(&r, "xfdr flame: '--width' takes pixels");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "flame", "--width=wide", path, NULL), 2);
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "flame", "--min-width=-1", path, NULL), 2);
	text_assert_only_error_line(&r, "xfdr flame: '--min-width' takes pixels");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "flame", "--min-width=nan", path, NULL), 2);
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "flame", NULL), 2);
	text_assert_only_error_line(&r, "xfdr flame: missing FILE");
	child_result_free(&r);
	assert_int_equal(child_xfdr(&r, "flame", "--help", NULL), 0);
	text_assert_contains(r.out, "usage: xfdr flame");
	child_result_free(&r);
	scratch_write("junk.xray", "not a trace at all, not at all, not at all", 40);
	assert_int_equal(child_xfdr(&r, "flame", scratch_path("junk.xray"), NULL), 1);
	text_assert_only_error_line(&r, scratch_path("junk.xray"));
	child_result_free(&r);
	/* A bad .map is the reader's one line too. */
	scratch_write_text("bad.map", "function\tnot-a-number\tx\n");
	assert_int_equal(child_xfdr(&r, "flame", "--map", scratch_path("bad.map"), path, NULL), 1);
	snprintf(want, sizeof(want), "xfdr flame: %s: line 1: expected", scratch_path("bad.map"));
	text_assert_only_error_line(&r, want);
	child_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_known_merged),
	    cmocka_unit_test(test_known_per_thread_options),
	    cmocka_unit_test(test_ten_thousand_stacks),
	    cmocka_unit_test(test_chromium_renders),
	    cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
