/*
 * tests/e2e/hooks_fentry_prog.c - a program with a known call tree for the -pg -mfentry hooks
 * (test_hooks_fentry.c builds it with gcc -pg -mfentry -minstrument-return=call at -O0 and -O2,
 * preloaded and linked, and checks every entry and exit). It does not know about xfdr.
 *
 * `prog calls`: main -> run_calls(3), which calls in order (n = 3):
 *   depth(n) -> ... -> depth(0)          recursion, n + 1 frames
 *   twice(n)                             inlined at -O2 (no events), a call at -O0
 *   tailer(n) -> leaf                    hooks_fentry_tail.c: a sibling jmp without __return__
 *   sibling(n) -> leaf                   gcc 12 -O2: __return__, then jmp leaf
 *   mix, six, make_pair, make_big, vsum, scale_ld: values through the hooks' registers
 *   jump_return(n) -> nest1 -> nest2 -> nest3, longjmp back, jump_return returns
 *   jump_call(n)   -> nest1 -> nest2 -> nest3, longjmp back, jump_call calls leaf
 * `prog deep N`: main -> deep(N) -> ... (N frames of deep), deeper than the shadow stack.
 * `prog threads`: main -> run_threads, which starts 3 threads (each worker -> leaf) and joins
 * them.
 * Each call checks its result: the exit status is 2 when a value did not survive the hooks.
 * noipa keeps gcc from cloning (a .map name like depth.constprop.0) or inlining what must stay.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOIPA __attribute__((noipa))

int tailer(int x);
int leaf(int x);

static volatile int sink;
static jmp_buf env;
static int wrong;

/* A macro, not a function: at -O0 a function would be one more instrumented call. */
#define check(ok, what)                                                                            \
	do {                                                                                       \
		if (!(ok)) {                                                                       \
			fprintf(stderr, "wrong value through the hooks: %s\n", what);              \
			wrong = 1;                                                                 \
		}                                                                                  \
	} while (0)

NOIPA int leaf(int x)
{
	sink = x;
	return x + 1;
}

NOIPA static int depth(int n)
{
	int r;

	if (n <= 0)
		return 0;
	r = depth(n - 1);
	sink = r;
	return r + 1;
}

/* Small, static, called once: gcc -O2 inlines it. */
static int twice(int x)
{
	return x + x;
}

NOIPA static int sibling(int x)
{
	return leaf(x * 2);
}

NOIPA static double mix(double a, float b, int c)
{
	return a * b + c;
}

NOIPA static long six(long a, long b, long c, long d, long e, long f)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f;
}

struct pair {
	long lo, hi; /* returned in rax:rdx */
};

NOIPA static struct pair make_pair(long x)
{
	struct pair p = {x + 1, x + 2};

	return p;
}

struct big {
	long v[5]; /* returned through the pointer in rdi (rax at return) */
};

NOIPA static struct big make_big(long x)
{
	struct big b;
	int i;

	for (i = 0; i < 5; i++)
		b.v[i] = x * i;
	return b;
}

/* Variadic: al holds the count of vector registers at entry. */
NOIPA static double vsum(int n, ...)
{
	double s = 0;
	va_list ap;
	int i;

	va_start(ap, n);
	for (i = 0; i < n; i++)
		s += va_arg(ap, double);
	va_end(ap);
	return s;
}

/* long double: on the stack in, st0 out. */
NOIPA static long double scale_ld(long double x)
{
	return x * 3;
}

NOIPA static void nest3(int x)
{
	sink = x;
	longjmp(env, 1);
}

NOIPA static void nest2(int x)
{
	nest3(x + 1);
	sink = x;
}

NOIPA static void nest1(int x)
{
	nest2(x + 1);
	sink = x;
}

NOIPA static int jump_return(int x)
{
	if (!setjmp(env))
		nest1(x);
	return x;
}

NOIPA static int jump_call(int x)
{
	if (!setjmp(env))
		nest1(x);
	return leaf(x);
}

NOIPA static int deep(int n)
{
	int r;

	if (n <= 1)
		return 1;
	r = deep(n - 1);
	sink = r;
	return r + 1;
}

NOIPA static void *worker(void *arg)
{
	sink = leaf((int)(long)arg);
	return arg;
}

NOIPA static void run_calls(int n)
{
	struct pair p;
	struct big b;

	check(depth(n) == n, "depth");
	check(twice(n) == 2 * n, "twice");
	check(tailer(n) == 2 * n + 1, "tailer");
	check(sibling(n) == 2 * n + 1, "sibling");
	check(mix(1.5, 2.5f, n) == 1.5 * 2.5 + n, "mix (double, float)");
	check(six(1, 2, 3, 4, 5, n) == 1 + 4 + 9 + 16 + 25 + 6 * n, "six (6 arguments)");
	p = make_pair(n);
	check(p.lo == n + 1 && p.hi == n + 2, "make_pair (rax:rdx)");
	b = make_big(n);
	check(b.v[0] == 0 && b.v[1] == n && b.v[4] == 4 * n, "make_big (memory)");
	check(vsum(3, 0.5, 1.5, (double)n) == 2.0 + n, "vsum (variadic)");
	check(scale_ld(0.5L + n) == (0.5L + n) * 3, "scale_ld (long double)");
	check(jump_return(n) == n, "jump_return");
	check(jump_call(n) == n + 1, "jump_call");
}

NOIPA static int run_threads(void)
{
	pthread_t t[3];
	long i;

	for (i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i)) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "calls";

	if (!strcmp(mode, "calls"))
		run_calls(3);
	else if (!strcmp(mode, "deep") && argc > 2)
		check(deep(atoi(argv[2])) == atoi(argv[2]), "deep");
	else if (!strcmp(mode, "threads"))
		return run_threads();
	else
		return 1;
	return wrong ? 2 : 0;
}
