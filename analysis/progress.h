/*
 * analysis/progress.h - how a long analysis tells how far it is, without printing: the caller
 * passes two callbacks (the xfdr command draws a percentage, a test may count, NULL: nobody).
 */
#ifndef XFDR_ANALYSIS_PROGRESS_H
#define XFDR_ANALYSIS_PROGRESS_H

#include <stdint.h>

struct progress {
	void (*phase)(void *ctx, const char *what);		  /* a new stage, e.g. "sorting" */
	void (*update)(void *ctx, uint64_t done, uint64_t total); /* done of total units */
	void *ctx;
};

static inline void progress_phase(const struct progress *p, const char *what)
{
	if (p && p->phase)
		p->phase(p->ctx, what);
}

static inline void progress_update(const struct progress *p, uint64_t done, uint64_t total)
{
	if (p && p->update)
		p->update(p->ctx, done, total);
}

#endif /* XFDR_ANALYSIS_PROGRESS_H */
