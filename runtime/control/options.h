/*
 * runtime/control/options.h - defaults, validation and XFDR_OPTIONS parsing (the keys: xfdr.h).
 */
#ifndef XFDR_RUNTIME_CONTROL_OPTIONS_H
#define XFDR_RUNTIME_CONTROL_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/newfile.h"
#include "runtime/base/print.h"
#include "xfdr/format.h"
#include "xfdr/xfdr.h"

/* A set of option keys, one bit per key of the option table. */
typedef uint32_t opt_keys;

enum {
	OPT_DEFAULT_BUFFER_SIZE = 65536,
	OPT_DEFAULT_BUFFER_MAX = 256,
	OPT_DEFAULT_THREAD_MAX = 4096,
	OPT_DEFAULT_FILE_MODE = NEWFILE_DEFAULT_MODE,
	/*
	 * The smallest buffer that holds what a trace cannot do without: the drop counts every
	 * file ends with (preamble, CustomEventMarker and the XFDRDROP fixed part, filling it
	 * exactly), which also leaves room for any function event group a hook emits (at most an
	 * Entry_Args with one CallArgument, 24 bytes) and the EndOfBuffer after it.
	 */
	OPT_MIN_BUFFER_SIZE =
	    XFDR_BUFFER_PREAMBLE_BYTES + XFDR_MD_RECORD_BYTES + XFDR_DROP_FIXED_BYTES,
	/* The pool must stay addressable and its descriptors countable in 32 bits. */
	OPT_MAX_BUFFER_MAX = 1u << 24,
	OPT_MAX_THREAD_MAX = 1u << 20,
	OPT_MAX_THRESHOLD_US = 1000000000, /* 1000 s: beyond it elision means nothing */
	OPT_MAX_DEPTH = 1000000,	   /* open calls; far past any real stack */
	OPT_STREAM_MAX_FILES = 1000000,	   /* files a stream keeps */
};

/*
 * opt_parse - apply every "key=value" item of text (separated by ':' or white space; a
 * backslash keeps the next character in the item, and so does a double colon) to o.
 * source names the origin in messages ("XFDR_OPTIONS"). Each rejected item gets one stderr
 * line naming the key, the value and the value kept; o keeps its previous value for it.
 * String values point into store, which must outlive o's use. Context: not a signal handler.
 * set (may be NULL) receives the keys that text set. Returns the number of rejected items.
 */
int opt_parse(struct xfdr_options *o, const char *text, const char *source, char *store,
	      size_t store_bytes, opt_keys *set);

/* opt_overlay - copy the fields named by keys from src to dst (strings: the pointer). */
void opt_overlay(struct xfdr_options *dst, const struct xfdr_options *src, opt_keys keys);

/*
 * opt_print_differences - append "key=value" (a's value), space-separated, for every key not
 * in ignore whose value differs between a and b. Returns how many were appended.
 */
int opt_print_differences(struct pr_buf *b, const struct xfdr_options *a,
			  const struct xfdr_options *b_opts, opt_keys ignore);

/* opt_key - the set holding one key, 0 for an unknown key. */
opt_keys opt_key(const char *key);

/* The minimum in the words of the messages, checked against the enum in options.c. */
#define OPT_MIN_BUFFER_SIZE_TEXT "128"

/*
 * opt_check - validate a whole struct (as given to xfdr_init()). Returns NULL when valid, or
 * the key of the first invalid field, after printing one stderr line about it. Beyond each
 * field's rule, the pool and the thread table together must fit in the machine's memory.
 */
const char *opt_check(const struct xfdr_options *o);

#endif /* XFDR_RUNTIME_CONTROL_OPTIONS_H */
