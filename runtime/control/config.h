/*
 * runtime/control/config.h - what the life cycle itself keeps of the options xfdr_init() was
 * given. The rest lives with its owner: the pool's geometry in rt_pool (pool/), the thread
 * limit in thread_table (record/thread.h), the clock in record/clock.h, where and how files
 * are written in flush_output (flush/output.h).
 * Written only by init (exclusive through rt_state.ctl), read by the exit handler.
 */
#ifndef XFDR_RUNTIME_CONTROL_CONFIG_H
#define XFDR_RUNTIME_CONTROL_CONFIG_H

#include "runtime/base/compiler.h"
#include "xfdr/xfdr.h"

struct rt_config {
	int flush_at_exit;
	/* The options of the last init (output NULL: kept by flush/output.c), for a fork child. */
	struct xfdr_options options;
};

extern struct rt_config rt_cfg XFDR_HIDDEN;

#endif /* XFDR_RUNTIME_CONTROL_CONFIG_H */
