/*
 * runtime/flush/crash_record.h - what a crash leaves behind: the crashing thread's backtrace, taken
 * with libunwind from the signal frame, recorded as the "XFDRCRSH" custom event in the
 * thread's own buffer (layout: xfdr/format.h) and kept for the .map of the crash flush.
 *
 * The signal protocol around it (who handles a crash, the flush, the re-raise) is in
 * signals.c; this file only captures and records.
 */
#ifndef XFDR_RUNTIME_FLUSH_CRASH_RECORD_H
#define XFDR_RUNTIME_FLUSH_CRASH_RECORD_H

#include <signal.h>
#include <stdint.h>

#include "xfdr/format.h"

/* Bytes of a signal name with its NUL: "SIGRTMIN+15", "SIG64". */
#define CRASH_SIGNAME_BYTES 16

struct crash_report {
	int signal;
	char signal_name[CRASH_SIGNAME_BYTES]; /* "SIGSEGV" */
	int32_t code;			       /* si_code */
	uint32_t tid;			       /* kernel tid of the crashing thread */
	uint64_t fault_addr;		       /* si_addr of a fault; 0 otherwise */
	uint32_t flags;			       /* XFDR_CRASH_TRUNCATED */
	uint32_t frame_count;
	uint64_t frames[XFDR_CRASH_FRAMES_MAX]; /* frame 0 was executing; then return addresses */
};

/*
 * crash_prepare - one unwind outside any handler, so that libunwind's lazy initialisation (a
 * lock, a signal mask change) is done before a crash needs it. Context: init. Idempotent.
 */
void crash_prepare(void);

/*
 * crash_capture - fill r for signal sig with siginfo si, taken in the thread that runs this,
 * unwinding from the handler's ucontext uc (frame 0 is the interrupted instruction). At most
 * XFDR_CRASH_FRAMES_MAX frames; a deeper stack sets XFDR_CRASH_TRUNCATED. When libunwind
 * cannot start, frame 0 comes from the ucontext alone. Turns libunwind's caching off for the
 * process from then on (a crash ends it, but for a handler of the program that recovers).
 * Context: a signal handler of the crashing thread (libunwind's local unwinder reads the
 * stack, validating addresses with mincore/msync, and finds unwind tables through
 * dl_iterate_phdr, which takes the loader's lock: see the watchdog in signals.c).
 */
void crash_capture(struct crash_report *r, int sig, const siginfo_t *si, void *uc);

/*
 * crash_record - record r as "XFDRCRSH" in the calling thread's buffer, with as many frames as
 * an empty buffer of buffer_bytes can hold (fewer than captured: flagged truncated).
 * Returns as rec_custom_event(): 0, -EAGAIN when not recording, -EDEADLK when the crash is
 * inside the recorder on this thread (counted as a re-entry drop), -ENOBUFS, -EUSERS; or
 * -EMSGSIZE (not counted) when the buffers are too small for even the fixed part.
 * Context: the crashing thread's handler; async-signal-safe.
 */
int crash_record(const struct crash_report *r, size_t buffer_bytes);

/*
 * crash_signal_name - "SIGSEGV", "SIGRTMIN+3", or "SIG<n>" into out. Context: any,
 * async-signal-safe.
 */
void crash_signal_name(int sig, char out[CRASH_SIGNAME_BYTES]);

#endif /* XFDR_RUNTIME_FLUSH_CRASH_RECORD_H */
