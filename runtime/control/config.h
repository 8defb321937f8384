/*
 * runtime/control/config.h - the options in effect for the current session, as xfdr_init() fixed them.
 * Written only by init (exclusive through rt_ctl), read by flush and the exit handler.
 */
#ifndef XFDR_RUNTIME_CONTROL_CONFIG_H
#define XFDR_RUNTIME_CONTROL_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/base/compiler.h"

#define CONFIG_PREFIX_BYTES 256

struct rt_config {
	size_t buffer_bytes;
	uint32_t buffer_max;
	uint32_t thread_max;
	char out_dir[PATH_MAX];		      /* "" or ending in '/' */
	char out_prefix[CONFIG_PREFIX_BYTES]; /* file names start with it */
	int per_thread_files;
	int flush_at_exit;
	int clock_source; /* enum clock_source */
	int constant_tsc;
	int nonstop_tsc;
};

extern struct rt_config rt_cfg XFDR_HIDDEN;

#endif /* XFDR_RUNTIME_CONTROL_CONFIG_H */
