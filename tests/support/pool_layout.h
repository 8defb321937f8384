/*
 * tests/support/pool_layout.h - a recorder's pool as it is left behind when the process dies,
 * built by hand for the tests of `xfdr recover` and `xfdr core`.
 *
 * Independent of the code under test: the locator is written field by field from format.h's
 * offsets, the descriptors with a layout of the tests' own (not the runtime's: a stride of 72
 * and fields in an order nothing else uses, so a reader that assumed the runtime's layout
 * would fail), and the records byte by byte from the spec's tables (little-endian), never
 * through writer/ or the reader. Two ways to store it:
 *   - the files of backing=file: "<base>-live.xray" (32-byte header + the buffers, not
 *     terminated) and "<base>-live.xray.pool" (locator + descriptors);
 *   - an ELF64 core file with PT_LOAD segments at chosen addresses.
 * The scenario every test shares (pl_scenario()) and the events it must give
 * (PL_SCENARIO_EVENTS) are here too, with llvm-xray as the oracle that lists them.
 */
#ifndef XFDR_TESTS_SUPPORT_POOL_LAYOUT_H
#define XFDR_TESTS_SUPPORT_POOL_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* The tests' descriptor layout. */
enum {
	PL_STRIDE = 72,
	PL_THREAD_AT = 0, /* u32 */
	PL_TID_AT = 4,	  /* u32 */
	PL_CTL_AT = 8,
	PL_FIRST_AT = 16,
	PL_LAST_AT = 24,
	PL_USED_AT = 40,
	PL_CLAIM_AT = 56,
};

enum { PL_FREE = 0, PL_OWNED = 1, PL_FULL = 2, PL_CLAIMING = 3 };

struct pl_pool {
	uint32_t count;
	uint64_t buffer_bytes;
	uint8_t *bufs;	   /* count * buffer_bytes */
	uint8_t *meta;	   /* the locator (128 bytes) and the descriptors */
	size_t meta_bytes; /* 128 + count * PL_STRIDE */
};

/*
 * pl_init - an all-zero pool (every buffer free) with a valid locator: version 1, header_bytes
 * 128, the given pid, buffers_addr, buffer size and count, stride 72, tsc_hz, session, flags,
 * the descriptor field offsets above, descs_addr = locator_addr + 128 (0 if locator_addr is 0).
 */
void pl_init(struct pl_pool *p, uint32_t count, uint64_t buffer_bytes, uint64_t pid,
	     uint64_t buffers_addr, uint64_t locator_addr, uint64_t tsc_hz, uint32_t session,
	     uint32_t flags);
void pl_free(struct pl_pool *p);

/* Overwrite a locator field (to break it). */
void pl_loc32(struct pl_pool *p, unsigned off, uint32_t v);
void pl_loc64(struct pl_pool *p, unsigned off, uint64_t v);

/* A descriptor: ctl = generation << 32 | state. */
void pl_desc(struct pl_pool *p, uint32_t i, unsigned state, uint32_t gen, uint64_t used,
	     uint64_t claim_seq, uint32_t tid, uint32_t thread_id, uint64_t first_tsc,
	     uint64_t last_tsc);

/*
 * Records by hand into buffer i at byte `at`; each returns the offset after it.
 * pl_preamble: NewBuffer(thread_id) WallClockTime(sec, usec) NewCPUId(cpu, tsc) at 0.
 */
size_t pl_preamble(struct pl_pool *p, uint32_t i, uint16_t thread_id, uint64_t sec, uint32_t usec,
		   uint16_t cpu, uint64_t tsc);
size_t pl_fn(struct pl_pool *p, uint32_t i, size_t at, unsigned action, uint32_t fid,
	     uint32_t delta);
size_t pl_arg(struct pl_pool *p, uint32_t i, size_t at, uint64_t value);
size_t pl_end_of_buffer(struct pl_pool *p, uint32_t i, size_t at);
size_t pl_bytes(struct pl_pool *p, uint32_t i, size_t at, const void *bytes, size_t n);

/* The files of backing=file: path (header with cycle_frequency hz, the buffers), path.pool. */
void pl_write_live(const struct pl_pool *p, const char *path, uint64_t hz);
void pl_write_pool(const struct pl_pool *p, const char *path);
void pl_write_file(const char *path, const void *data, size_t n);

/* A PT_LOAD (or, with type set, another program header) of a core file. */
struct pl_seg {
	uint64_t vaddr;
	const uint8_t *data; /* filesz bytes */
	uint64_t filesz, memsz;
	uint32_t type; /* 0: PT_LOAD */
};

/* An ELF64 little-endian file of type e_type (4: ET_CORE) with these program headers. */
void pl_write_core(const char *path, uint16_t e_type, const struct pl_seg *segs, size_t n);

/*
 * pl_scenario - 8 buffers of 256 bytes, two threads (ids 1 and 2, tids 1001 and 1002), with
 * everything a dead recorder leaves: full buffers, an open (owned) one, an owned one whose
 * last record is torn, one EndOfBuffer-closed inside its used_bytes, a free one, one being
 * claimed (stale preamble), one whose descriptor moved on (stale), stale bytes after used,
 * and claim order unlike index order. A buffer k-th in claim order begins at wall time
 * 100 s + k * 20 ms and TSC 1000000 + k * 40000000: 2 GHz. tsc_hz as given (0: unknown).
 */
#define PL_SCENARIO_BUFFER_BYTES 256u
#define PL_SCENARIO_COUNT 8u
#define PL_SCENARIO_PID 4242u
void pl_scenario(struct pl_pool *p, uint64_t buffers_addr, uint64_t locator_addr, uint64_t tsc_hz,
		 uint32_t session);

/* The scenario's buffers in the order a rebuild writes them (claim order), by pool index. */
#define PL_SCENARIO_KEPT                                                                           \
	{                                                                                          \
		6, 2, 0, 5, 3                                                                      \
	}

/* Its events, in llvm-xray's default (TSC) order, as pl_llvm_events() prints them. */
#define PL_SCENARIO_EVENTS                                                                         \
	"t1 function-enter f1 @1000010\n"                                                          \
	"t1 function-enter f2 @1000030\n"                                                          \
	"t1 function-exit f2 @1000060\n"                                                           \
	"t2 function-enter f3 @41000005\n"                                                         \
	"t2 function-exit f3 @41000010\n"                                                          \
	"t2 function-enter-arg f4 @41000017\n"                                                     \
	"t2 function-exit f4 @41000018\n"                                                          \
	"t1 function-exit f1 @81000100\n"                                                          \
	"t2 function-enter f5 @121000001\n"                                                        \
	"t2 function-enter f6 @121000003\n"                                                        \
	"t1 function-enter f7 @161000003\n"                                                        \
	"t1 function-exit f7 @161000007\n"

/*
 * pl_llvm_events - run `llvm-xray convert --output-format=yaml path` (the oracle) and return
 * its records as "t<thread> <kind> f<func-id> @<tsc>\n" lines (malloc'd), and the header's
 * cycle frequency in *hz (when not NULL). Fails the test if llvm-xray fails.
 */
char *pl_llvm_events(const char *path, uint64_t *hz);

/*
 * pl_expect_scenario_map - the sidecar at map is the one a rebuild of the scenario (tsc_hz 0,
 * rate estimated as 2 GHz) makes from what the pool says, for the trace named out.
 */
void pl_expect_scenario_map(const char *map, const char *out);

/* pl_expect_events - pl_llvm_events(path) must be want exactly and, unless hz is 0, say hz. */
void pl_expect_events(const char *path, const char *want, uint64_t hz);

/*
 * pl_expect_error - `xfdr VERB -o INPUT.err.xray INPUT` must exit with status and print one
 * stderr line starting with want, nothing on stdout, and write no INPUT.err.xray.
 */
void pl_expect_error(const char *verb, const char *input, int status, const char *want);

/*
 * pl_expect_usage - xfdr with the arguments (NULL-terminated) must exit 2, a usage error,
 * with want in its stderr.
 */
void pl_expect_usage(const char *want, ...);

/*
 * pl_expect_help - `xfdr VERB --help` must exit 0 with nothing on stderr and on stdout the
 * usage ("usage: xfdr VERB ...") holding each of the wants (NULL-terminated); `xfdr help VERB`
 * must exit 0 with the same first words.
 */
void pl_expect_help(const char *verb, ...);

/* The file's bytes (malloc'd, *n set); NULL if it cannot be read. */
uint8_t *pl_read_file(const char *path, size_t *n);

#endif /* XFDR_TESTS_SUPPORT_POOL_LAYOUT_H */
