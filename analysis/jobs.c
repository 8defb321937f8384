/*
 * analysis/jobs.c - work shared out among threads (jobs.h).
 */
#include <pthread.h>
#include <unistd.h>

#include "analysis/jobs.h"

unsigned jobs_for(uint64_t pieces)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t n = pieces;

	if (cpus > 0 && (uint64_t)cpus < n)
		n = (uint64_t)cpus;
	return n < 1 ? 1 : n > JOBS_MAX ? JOBS_MAX : (unsigned)n;
}

unsigned jobs_run(void *(*fn)(void *), void *const *arg, unsigned jobs)
{
	pthread_t tid[JOBS_MAX];
	unsigned started = 0, k;

	if (jobs > JOBS_MAX)
		jobs = JOBS_MAX;
	while (started + 1 < jobs && !pthread_create(&tid[started], NULL, fn, arg[started + 1]))
		started++;
	fn(arg[0]);
	for (k = 0; k < started; k++)
		pthread_join(tid[k], NULL);
	return started + 1;
}
