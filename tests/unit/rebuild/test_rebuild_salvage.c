/*
 * tests/unit/rebuild/test_rebuild_salvage.c - the rebuild library's salvage of a cut trace
 * (rebuild/salvage.h), in process: which buffers it keeps, what it says of the others, the
 * exact bytes it writes, and its errors (a write refused, a file that shrank, no memory).
 * `xfdr recover --salvage` as a whole, holes of sparse files included, is tested through the
 * binary in tests/system/test_cli_recover.c.
 *
 * The input is built byte by byte (tests/support/image.h), buffer size 128:
 *   @0    header
 *   @32   buffer 0, thread 7: NewBuffer, WallClockTime, NewCPUId @64, enter/exit of 1 @80
 *   @160  buffer 1, thread 8: NewBuffer, WallClockTime, NewCPUId @192, kind 127 @208: invalid
 *   @288  buffer 2, thread 9: as buffer 0 with function 2
 *   @416  40 bytes of a buffer the flush did not finish; the file ends at 456.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "rebuild/live_files.h"
#include "rebuild/salvage.h"
#include "tests/support/alloc_hook.h"
#include "tests/support/image.h"
#include "tests/support/scratch.h"

/* NewCPUId: 0x05 (kind 2), u16 cpu, u64 tsc, 5 reserved. */
#define CPU(cpu, tsc) 0x05, L16(cpu), L64(tsc), Z5
/* Function record word: action << 1 | id << 4 (bit 0 = 0), then the u32 delta. */
#define FN(action, id, delta) L32((uint32_t)(action) << 1 | (uint32_t)(id) << 4), L32(delta)
#define ENTER 0
#define EXIT 1

#define FILE_BYTES 456

static struct img cut;

static void build(struct img *m)
{
	img_init(m, 128);
	img_buffer(m, 7, 10, 5);
	AT(m, 64);
	PUT(m, CPU(3, 1000), FN(ENTER, 1, 5), FN(EXIT, 1, 5));
	img_close(m);
	AT(m, 160);
	img_buffer(m, 8, 10, 6);
	PUT(m, CPU(3, 2000));
	AT(m, 208);
	PUT(m, 0xff, Z15); /* metadata kind 127: no such record */
	img_close(m);
	AT(m, 288);
	img_buffer(m, 9, 10, 7);
	PUT(m, CPU(1, 3000), FN(ENTER, 2, 5), FN(EXIT, 2, 5));
	img_close(m);
	AT(m, 416);
	img_pad_to(m, FILE_BYTES, 0x11);
}

/* The cut file on disk, open for reading, with its header read and its plan made. */
struct input {
	struct rb_file f;
	struct xfdr_header h;
	struct rb_salvage_plan plan;
};

static void input_open(struct input *in, const char *name)
{
	struct xfdr_error err;
	int fd;

	build(&cut);
	assert_int_equal(cut.len, FILE_BYTES);
	fd = open(scratch_write(name, cut.b, cut.len), O_RDWR);
	assert_true(fd >= 0);
	in->f.fd = fd;
	in->f.name = name;
	in->f.bytes = FILE_BYTES;
	if (rb_live_header_read(&in->f, &in->h, &err))
		fail_msg("%s", err.text);
	in->plan = rb_salvage_plan(&in->f, &in->h);
}

/* What rb_salvage() said, in order. */
struct notes {
	struct rb_salvage_note v[8];
	char why[8][160];
	size_t n;
};

static void keep_note(void *ctx, const struct rb_salvage_note *n)
{
	struct notes *ns = ctx;

	assert_true(ns->n < 8);
	ns->v[ns->n] = *n;
	snprintf(ns->why[ns->n], sizeof(ns->why[0]), "%s", n->why ? n->why : "(null)");
	ns->n++;
}

static void plan_of_the_cut_file(void **state)
{
	struct input in;

	(void)state;
	input_open(&in, "plan.xray.part");
	assert_int_equal(in.plan.buffer_size, 128);
	assert_int_equal(in.plan.whole, 3);
	assert_int_equal(in.plan.tail, 40);
	close(in.f.fd);
}

static void valid_buffers_kept_byte_for_byte(void **state)
{
	struct input in;
	struct notes ns = {0};
	struct xfdr_error err;
	uint8_t out[512];
	int fd;

	(void)state;
	input_open(&in, "cut.xray.part");
	fd = open(scratch_path("cut.xray"), O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(rb_salvage(&in.f, &in.plan, fd, "cut.xray", keep_note, &ns, &err), 2);

	assert_int_equal(ns.n, 3);
	assert_int_equal(ns.v[0].fate, RB_SALVAGE_KEPT);
	assert_int_equal(ns.v[0].first, 0);
	assert_int_equal(ns.v[0].at, 32);
	assert_int_equal(ns.v[1].fate, RB_SALVAGE_INVALID);
	assert_int_equal(ns.v[1].first, 1);
	assert_int_equal(ns.v[1].last, 1);
	assert_int_equal(ns.v[1].at, 208); /* the record, not the buffer */
	assert_non_null(strstr(ns.why[1], "127"));
	assert_memory_equal(ns.why[1], ": expected ", 11);
	assert_int_equal(ns.v[2].fate, RB_SALVAGE_KEPT);
	assert_int_equal(ns.v[2].first, 2);
	assert_int_equal(ns.v[2].at, 288);

	/* The header, buffer 0, buffer 2: nothing else. */
	assert_int_equal(pread(fd, out, sizeof(out), 0), 32 + 2 * 128);
	assert_memory_equal(out, cut.b, 32 + 128);
	assert_memory_equal(out + 160, cut.b + 288, 128);
	close(fd);
	close(in.f.fd);
}

static void write_refused(void **state)
{
	struct input in;
	struct xfdr_error err;
	int fd;

	(void)state;
	input_open(&in, "ro.xray.part");
	fd = open(scratch_path("ro.xray"), O_RDONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(rb_salvage(&in.f, &in.plan, fd, "ro.xray", NULL, NULL, &err), -1);
	assert_string_equal(err.text, "ro.xray: offset 32: expected to write 128 bytes, found Bad "
				      "file descriptor");
	assert_int_equal(err.offset, 32);
	close(fd);
	close(in.f.fd);
}

/* The file loses its end between the plan and the walk (another process truncates it). */
static void file_shrank(void **state)
{
	struct input in;
	struct xfdr_error err;
	int fd;

	(void)state;
	input_open(&in, "shrank.xray.part");
	assert_int_equal(ftruncate(in.f.fd, 200), 0);
	fd = open(scratch_path("shrank.xray"), O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(rb_salvage(&in.f, &in.plan, fd, "shrank.xray", NULL, NULL, &err), -1);
	assert_string_equal(err.text, "shrank.xray.part: offset 160: expected 128 bytes, found "
				      "fewer (the file shrank while it was read)");
	close(fd);
	close(in.f.fd);
}

static void no_memory(void **state)
{
	struct input in;
	struct xfdr_error err;
	int64_t kept;
	int fd;

	(void)state;
	input_open(&in, "nomem.xray.part");
	fd = open(scratch_path("nomem.xray"), O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	alloc_failing = 1;
	kept = rb_salvage(&in.f, &in.plan, fd, "nomem.xray", NULL, NULL, &err);
	alloc_failing = 0;
	assert_int_equal(kept, -1);
	assert_string_equal(err.text, "nomem.xray.part: Cannot allocate memory");
	close(fd);
	close(in.f.fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(plan_of_the_cut_file),
	    cmocka_unit_test(valid_buffers_kept_byte_for_byte),
	    cmocka_unit_test(write_refused),
	    cmocka_unit_test(file_shrank),
	    cmocka_unit_test(no_memory),
	};

	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
