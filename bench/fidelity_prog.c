/*
 * bench/fidelity_prog.c - the program of `make bench-fidelity`: main starts THREADS threads,
 * each calls an empty function CALLS times (main calls it once first), built with
 * -finstrument-functions and run under xfdr. What the trace says of it is bench/fidelity_read.c's.
 */
#include <pthread.h>
#include <stdio.h>

#define THREADS 8
#define CALLS 100

__attribute__((noinline)) void empty_call(void)
{
	__asm__ __volatile__("" ::: "memory");
}

/* Not instrumented: a thread's first event is empty_call's entry (its slot, buffer, pages). */
__attribute__((no_instrument_function)) static void *worker(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < CALLS; i++)
		empty_call();
	return NULL;
}

int main(void)
{
	pthread_t th[THREADS];
	int i;

	empty_call();
	for (i = 0; i < THREADS; i++)
		if (pthread_create(&th[i], NULL, worker, NULL)) {
			perror("pthread_create");
			return 1;
		}
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	return 0;
}
