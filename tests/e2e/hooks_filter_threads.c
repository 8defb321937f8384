/*
 * tests/e2e/hooks_filter_threads.c - two threads calling a function that exclude= leaves out,
 * each a known number of times (test_hooks_filter.c builds it with gcc -O2
 * -finstrument-functions -pthread and runs it with exclude=skipped). It does not know about
 * xfdr.
 *
 * main starts two threads and joins them; thread k runs worker(n_k), which calls skipped(i)
 * n_k times (WORKER_A_CALLS, WORKER_B_CALLS); skipped calls kept once:
 *   worker -> n x (skipped -> kept)
 * With skipped left out, each worker thread records n calls of kept directly inside worker,
 * and its thread line counts n filtered calls. The exit status is 1 if a thread failed.
 */
#include <pthread.h>

#define WORKER_A_CALLS 200
#define WORKER_B_CALLS 300

static volatile int sink;

__attribute__((noinline)) int kept(int x);
__attribute__((noinline)) int skipped(int x);
__attribute__((noinline)) void *worker(void *arg);

__attribute__((noinline)) int kept(int x)
{
	sink = x;
	return x + 1;
}

__attribute__((noinline)) int skipped(int x)
{
	int r = kept(x);

	sink = r;
	return r;
}

__attribute__((noinline)) void *worker(void *arg)
{
	long n = (long)arg, i;

	for (i = 0; i < n; i++)
		sink = skipped((int)i);
	return arg;
}

int main(void)
{
	pthread_t t[2];

	if (pthread_create(&t[0], NULL, worker, (void *)(long)WORKER_A_CALLS))
		return 1;
	if (pthread_create(&t[1], NULL, worker, (void *)(long)WORKER_B_CALLS))
		return 1;
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	return 0;
}
