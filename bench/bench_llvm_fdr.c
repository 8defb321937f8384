/*
 * bench/bench_llvm_fdr.c - the peer: LLVM's own XRay FDR runtime on the same call pattern.
 *
 * Built with clang; only bench/callee.c carries XRay sleds (-fxray-instrument
 * -fxray-instruction-threshold=1), this loop and the harness carry none. The runtime is
 * configured by the environment, as a user would run it:
 *   XRAY_OPTIONS="patch_premain=true xray_mode=xray-fdr verbosity=0"
 *   XRAY_FDR_OPTIONS="buffer_size=... buffer_max=... func_duration_threshold_us=0 ..."
 * func_duration_threshold_us=0 turns off FDR's rewinding of short calls: with its default
 * (5 us) every call here would be erased again, so the peer would record nothing and the
 * comparison would be meaningless. no_file_flush=true: writing the file is not timed by any
 * row, and the records are counted in memory instead (see count_buffer()).
 * xray_mode=xray-fdr only selects the mode; FDR starts recording when the program calls
 * __xray_log_init_mode() (until then its handler returns at once, having recorded nothing),
 * so main() does that first, with an empty string so XRAY_FDR_OPTIONS alone configures it.
 *
 * After the timed loops the program finalizes logging and counts the function records the
 * runtime kept. FDR drops events silently when its queue runs dry, so this count is the only
 * way to know the configuration held every event; the row's note says what was found.
 */
#include "bench/harness.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/*
 * compiler-rt's <xray/xray_log_interface.h> is C++ only. These are its extern "C" entry
 * points with the enums it returns spelled as int (same ABI) and struct XRayBuffer
 * redeclared with the same two members.
 */
struct xray_buffer {
	const void *data;
	size_t size;
};
const char *__xray_log_get_current_mode(void);
int __xray_log_init_mode(const char *mode, const char *config);
int __xray_log_finalize(void);
int __xray_log_flushLog(void);
int __xray_log_process_buffers(void (*fn)(const char *mode, struct xray_buffer buf));

enum { XRAY_LOG_INITIALIZED = 2, XRAY_LOG_FINALIZED = 4, XRAY_LOG_FLUSHED = 2 };

static struct {
	unsigned calls;		/* the first buffer the iterator yields is the file header */
	uint64_t enters, exits; /* function records, by kind */
	uint64_t other;		/* records we did not expect: another kind */
	int malformed;
} seen;

/*
 * Each buffer after the header is a BufferExtents metadata record followed by that many
 * bytes of records: bit 0 of a record's first byte is 1 for a 16-byte metadata record, 0 for
 * an 8-byte function record (bits 1-3 kind, bits 4-31 function id).
 */
BENCH_NOINSTR static void count_buffer(const char *mode, struct xray_buffer buf)
{
	const unsigned char *p = buf.data, *end = p + buf.size;
	uint32_t word;

	(void)mode;
	if (seen.calls++ == 0)
		return;
	while (p < end) {
		if (p[0] & 1) {
			/* Metadata kinds 5 and 8 carry a payload; this program writes neither. */
			unsigned kind = p[0] >> 1;

			if (kind == 5 || kind == 8 || end - p < 16) {
				seen.malformed = 1;
				return;
			}
			p += 16;
			continue;
		}
		if (end - p < 8) {
			seen.malformed = 1;
			return;
		}
		/* Only bench/callee.c has sleds: every function record is one of its callees. */
		memcpy(&word, p, sizeof(word));
		if (((word >> 1) & 7) == 0)
			seen.enters++;
		else if (((word >> 1) & 7) == 1)
			seen.exits++;
		else
			seen.other++;
		p += 8;
	}
}

BENCH_NOINSTR int main(int argc, char **argv)
{
	static const char key[] = "llvm_fdr", label[] = "LLVM XRay FDR (compiler-rt 14)";
	struct bench_cfg cfg;
	double ns[101];
	char note[160];
	const char *mode;
	uint64_t expected, recorded;
	int rc;

	bench_init(&cfg, argc, argv);
	mode = __xray_log_get_current_mode();
	if (!mode || strcmp(mode, "xray-fdr") != 0) {
		printf(
		    "row\t%s\t%s\t-\t-\t-\t0\t0\tFAILED: XRAY_OPTIONS did not select xray-fdr\t-\n",
		    key, label);
		return 1;
	}
	rc = __xray_log_init_mode("xray-fdr", "");
	if (rc != XRAY_LOG_INITIALIZED) {
		printf("row\t%s\t%s\t-\t-\t-\t0\t0\tFAILED: __xray_log_init_mode returned %d\t-\n",
		       key, label, rc);
		return 1;
	}
	bench_measure(&cfg, bench_loop_workload, 1, ns);

	rc = __xray_log_finalize();
	/* A finalized FDR thread hands its buffer back on its next event, which is not logged. */
	bench_callee(0);
	if (rc == XRAY_LOG_FINALIZED)
		rc = __xray_log_process_buffers(count_buffer) == XRAY_LOG_FLUSHED ? 0 : -1;
	else
		rc = -1;
	__xray_log_flushLog();

	expected = (uint64_t)(cfg.reps + 1) * cfg.events;
	recorded = seen.enters + seen.exits;
	if (rc != 0 || seen.malformed || seen.other)
		snprintf(note, sizeof(note),
			 "FAILED: could not count records (finalize %d, odd %llu)", rc,
			 (unsigned long long)seen.other);
	else if (recorded != expected || seen.enters != seen.exits)
		snprintf(note, sizeof(note), "DROPPED %llu of %llu events: raise buffer_max",
			 (unsigned long long)(expected - recorded), (unsigned long long)expected);
	else
		snprintf(note, sizeof(note), "recorded %llu of %llu events, 0 dropped",
			 (unsigned long long)recorded, (unsigned long long)expected);
	bench_print_row(&cfg, key, label, ns, note);
	return rc != 0 || seen.malformed || seen.other || recorded != expected;
}
