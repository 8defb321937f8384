/*
 * examples/threads.c - a multi-threaded program to record: worker threads count primes in
 * their own ranges. Built with -finstrument-functions and nothing else; recorded with
 * LD_PRELOAD=libxfdr.so.0 (or xfdr record). Each thread gets its own buffers and its own
 * NewBuffer thread id; the .map file names the threads ("worker-1", ...).
 * usage: threads [THREADS]   (default 4)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct job {
	int index;
	unsigned from, to;
	unsigned primes;
};

static int is_prime(unsigned n)
{
	unsigned d;

	if (n < 2)
		return 0;
	for (d = 2; d * d <= n; d++)
		if (n % d == 0)
			return 0;
	return 1;
}

static unsigned count_range(unsigned from, unsigned to)
{
	unsigned n, count = 0;

	for (n = from; n < to; n++)
		count += is_prime(n);
	return count;
}

static void *worker(void *p)
{
	struct job *job = p;
	char name[16];

	snprintf(name, sizeof(name), "worker-%d", job->index);
	pthread_setname_np(pthread_self(), name);
	job->primes = count_range(job->from, job->to);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4, i;
	struct job jobs[64];
	pthread_t tid[64];
	unsigned total = 0;

	if (threads < 1 || threads > 64) {
		fprintf(stderr, "usage: %s [THREADS], 1 <= THREADS <= 64\n", argv[0]);
		return 2;
	}
	for (i = 0; i < threads; i++) {
		jobs[i].index = i + 1;
		jobs[i].from = (unsigned)i * 5000u;
		jobs[i].to = (unsigned)(i + 1) * 5000u;
		if (pthread_create(&tid[i], NULL, worker, &jobs[i])) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	}
	for (i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		total += jobs[i].primes;
	}
	printf("%d threads found %u primes below %u\n", threads, total, (unsigned)threads * 5000u);
	return 0;
}
