/*
 * analysis/jobs.h - work shared out among threads of this process: one per CPU online, each
 * taking the next piece not taken yet (a shared counter), so that a worker the system could
 * not start leaves its share to the others.
 */
#ifndef XFDR_ANALYSIS_JOBS_H
#define XFDR_ANALYSIS_JOBS_H

#include <stdint.h>

#define JOBS_MAX 16u /* workers at most, whatever the CPUs */

/* jobs_for - workers for pieces pieces of work: the CPUs online, at most pieces and JOBS_MAX,
 * at least 1. */
unsigned jobs_for(uint64_t pieces);

/*
 * jobs_run - fn(arg[k]) for k < jobs (<= JOBS_MAX) at once: arg[0] on this thread, the others
 * on threads of their own; fewer when the system gives fewer threads. Returns how many ran
 * (at least 1: arg[0]'s), all ended.
 */
unsigned jobs_run(void *(*fn)(void *), void *const *arg, unsigned jobs);

#endif /* XFDR_ANALYSIS_JOBS_H */
