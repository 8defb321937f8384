/*
 * tests/support/version_enc.h - an encoder of FDR files of versions 2 to 5, either byte order,
 * laid out as compiler-rt's FDR runtime writes them; and the sample file of each version that
 * tests/system/test_reader_versions.c checks against llvm-xray and tests/fuzz/seedgen.c seeds
 * the reader's fuzzing with. Each e_* call appends one record and returns its offset.
 */
#ifndef XFDR_TESTS_SUPPORT_VERSION_ENC_H
#define XFDR_TESTS_SUPPORT_VERSION_ENC_H

#include <stddef.h>
#include <stdint.h>

struct enc {
	uint8_t b[8192];
	size_t len;
	int big;
	unsigned version;
};

/*
 * The sample of a version: three buffers.
 *  A: thread 70000, pid 4242 (v3+), 5 s 7 us, cpu 2 tsc 1000: Entry 1 +10 (1010), Entry_Args 2 +5
 *     (1015) with args 42 and 43, custom "hello-a" (v2-4: tsc 999; v4: cpu 3; v5: +7 -> 1022),
 *     typed "tp" +3 type 77 (v2-4: 1018; v5: 1025), NewCPUId cpu 5 tsc 2000, Exit 2 +4 (2004),
 *     TSCWrap 2^32, Exit 1 +1 (2^32 + 1)
 *  B: thread 12, 5 s 9 us, cpu 1 tsc 5000: Entry 3 +1 (5001), typed "neg" -2 type 5 (4999),
 *     Tail_Exit 3 +2 (5001)
 *  C: thread 70000 again, 6 s 8 us, cpu 2 tsc 3000: Entry 4 +0, Exit 4 +6 (3006)
 */
struct sample_offsets {
	size_t buf[3], custom, typed_neg, last_exit;
};

/* The value v in `bytes` bytes of the image's byte order; raw bytes. */
void e_int(struct enc *e, uint64_t v, int bytes);
void e_put(struct enc *e, const void *p, size_t n);
/* Start a metadata record of kind (XFDR_MD_*); e_end() pads it to 16 bytes. */
size_t e_md(struct enc *e, unsigned kind);
void e_end(struct enc *e, size_t at);
size_t e_fn(struct enc *e, unsigned action, uint32_t fid, uint32_t delta);
/* Start the image: the file header of version (buffer_size 16384, 2 GHz). */
void e_header(struct enc *e, unsigned version, int big);
/* A BufferExtents record whose count e_extents_end() fills in. */
size_t e_extents(struct enc *e);
void e_extents_end(struct enc *e, size_t at);
/* A buffer's preamble: extents, NewBuffer, WallClockTime, Pid (v3+), NewCPUId. */
size_t e_buffer(struct enc *e, uint32_t tid, uint32_t pid, uint64_t sec, uint32_t usec,
		uint16_t cpu, uint64_t tsc);
/* NewCPUId (with cpu) or TSCWrap. */
size_t e_tsc(struct enc *e, unsigned kind, uint16_t cpu, uint64_t tsc);
size_t e_arg(struct enc *e, uint64_t v);
/* Versions 2-4: an absolute TSC (and in 4 a CPU); version 5: tsc is the signed delta. */
size_t e_custom(struct enc *e, const char *payload, uint64_t tsc, uint16_t cpu);
size_t e_typed(struct enc *e, const char *payload, int32_t delta, uint16_t type);
/* The sample above into e; o (may be NULL) gets its offsets. */
void build_sample(struct enc *e, unsigned version, int big, struct sample_offsets *o);

#endif
