/*
 * bench/bench_llvm_fdr.c - the peer: LLVM's own XRay FDR runtime on the same call pattern.
 *
 * Built with clang; only bench/callee.c carries XRay sleds (-fxray-instrument
 * -fxray-instruction-threshold=1), this loop and the harness carry none. The runtime is
 * configured by the environment, as a user would run it:
 *   XRAY_OPTIONS="patch_premain=true xray_mode=xray-fdr verbosity=0 xray_logfile_base=DIR/"
 *   XRAY_FDR_OPTIONS="buffer_size=... buffer_max=... func_duration_threshold_us=0 ..."
 * Two rows, chosen by -k (bench/peers.mk gives each its XRAY_FDR_OPTIONS):
 *   llvm_fdr          func_duration_threshold_us=0 turns off FDR's rewinding of short calls,
 *                     so FDR records every call, as xfdr does: the row every other row is
 *                     compared with (bench/table.awk).
 *   llvm_fdr_default  FDR's default threshold (5 us): every call shorter is erased again at
 *                     its exit, which here is nearly all of them. What FDR records as shipped.
 * xray_mode=xray-fdr only selects the mode; FDR starts recording when the program calls
 * __xray_log_init_mode() (until then its handler returns at once, having recorded nothing),
 * so main() does that first, with an empty string so XRAY_FDR_OPTIONS alone configures it.
 *
 * After the timed loops the program finalizes logging, counts the function records the
 * runtime kept (in memory: FDR drops events silently when its queue runs dry, so this count
 * is how the row knows the configuration held every event) and flushes them into
 * xray_logfile_base, where the row's check counts them again with llvm-xray.
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
	struct bench_cfg cfg;
	double ns[101];
	char note[160];
	const char *mode, *key = "llvm_fdr", *label = "LLVM XRay FDR (compiler-rt 14)";
	uint64_t expected, recorded;
	int filtered = 0, rc, flushed;

	bench_init(&cfg, argc, argv);
	if (cfg.row && !strcmp(cfg.row, "llvm_fdr_default")) {
		key = cfg.row;
		label = "LLVM XRay FDR, default 5 us threshold";
		filtered = 1;
	} else if (cfg.row && strcmp(cfg.row, key) != 0) {
		fprintf(stderr, "bench_llvm_fdr: -k must be llvm_fdr or llvm_fdr_default\n");
		return 2;
	}
	mode = __xray_log_get_current_mode();
	if (!mode || strcmp(mode, "xray-fdr") != 0) {
		printf("row\t%s\t%s\t-\t-\t-\t0\t0\tFAILED: XRAY_OPTIONS did not select xray-fdr\t-"
		       "\t%s\t0\n",
		       key, label, bench_workload_name(&cfg));
		return 1;
	}
	rc = __xray_log_init_mode("xray-fdr", "");
	if (rc != XRAY_LOG_INITIALIZED) {
		printf("row\t%s\t%s\t-\t-\t-\t0\t0\tFAILED: __xray_log_init_mode returned %d\t-"
		       "\t%s\t0\n",
		       key, label, rc, bench_workload_name(&cfg));
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
	flushed = __xray_log_flushLog();

	expected = (uint64_t)(cfg.reps + 1) * cfg.events;
	recorded = seen.enters + seen.exits;
	if (rc != 0 || seen.malformed || seen.other)
		snprintf(note, sizeof(note),
			 "FAILED: could not count records (finalize %d, odd %llu)", rc,
			 (unsigned long long)seen.other);
	else if (flushed != XRAY_LOG_FLUSHED)
		snprintf(note, sizeof(note), "FAILED: __xray_log_flushLog returned %d", flushed);
	else if (filtered)
		snprintf(note, sizeof(note), "kept %llu of %llu events in memory",
			 (unsigned long long)recorded, (unsigned long long)expected);
	else if (recorded != expected || seen.enters != seen.exits)
		snprintf(note, sizeof(note), "DROPPED %llu of %llu events: raise buffer_max",
			 (unsigned long long)(expected - recorded), (unsigned long long)expected);
	else
		snprintf(note, sizeof(note), "counted %llu of %llu events in memory",
			 (unsigned long long)recorded, (unsigned long long)expected);
	bench_print_row(&cfg, key, label, ns, note);
	return rc != 0 || seen.malformed || seen.other || flushed != XRAY_LOG_FLUSHED ||
	       (!filtered && recorded != expected);
}
