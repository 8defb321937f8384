/*
 * tests/e2e/faults_prog.c - the program tests/system/test_runtime_faults.c runs under xfdr
 * (preloaded, -finstrument-functions) to see what its files become when writing them fails.
 * It knows nothing of xfdr except in "flushloop", where it finds xfdr_flush() with dlsym.
 *
 *   calls FSIZE N    setrlimit(RLIMIT_FSIZE) to FSIZE bytes (0: leave it), N calls of work(),
 *                    "calls done" on stderr, exit(7): the flush at exit must not make the
 *                    program die by SIGXFSZ
 *   dl LIB N         dlopen LIB, call its faults_lib_outer(N), dlclose it, exit(7)
 *   flushloop N      N calls, then flush again and again (the test kills it meanwhile)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void work(unsigned long i)
{
	sink += i;
}

static void calls(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		work(i);
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "calls")) {
		unsigned long long fsize = strtoull(argv[2], NULL, 10);

		if (fsize) {
			struct rlimit r = {.rlim_cur = fsize, .rlim_max = fsize};

			if (setrlimit(RLIMIT_FSIZE, &r)) {
				perror("setrlimit");
				return 2;
			}
		}
		calls(strtoul(argv[3], NULL, 10));
		fputs("calls done\n", stderr);
		exit(7);
	}
	if (argc == 4 && !strcmp(argv[1], "dl")) {
		void *h = dlopen(argv[2], RTLD_NOW);
		void (*outer)(unsigned long);

		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 2;
		}
		*(void **)&outer = dlsym(h, "faults_lib_outer");
		if (!outer)
			return 2;
		outer(strtoul(argv[3], NULL, 10));
		if (dlclose(h))
			return 3;
		calls(3);
		exit(7);
	}
	if (argc == 3 && !strcmp(argv[1], "flushloop")) {
		int (*flush)(char *, size_t);

		*(void **)&flush = dlsym(RTLD_DEFAULT, "xfdr_flush");
		if (!flush)
			return 2;
		for (;;) {
			calls(strtoul(argv[2], NULL, 10));
			flush(NULL, 0);
		}
	}
	fprintf(stderr, "usage: faults_prog calls FSIZE N | dl LIB N | flushloop N\n");
	return 2;
}
