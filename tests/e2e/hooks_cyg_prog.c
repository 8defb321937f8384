/*
 * tests/e2e/hooks_cyg_prog.c - a program with a known call tree, for the -finstrument-functions
 * hooks (test_hooks_cyg.c builds it with gcc and clang, -O0 and -O2, and checks every entry
 * and exit). It does not know about xfdr: it is recorded through LD_PRELOAD or by linking.
 *
 * With argument n (3 in the test) main calls, in order:
 *   depth(n) -> depth(n-1) -> ... -> depth(0)      recursion, n + 1 frames
 *   tail(n)  -> leaf(2n)                           a call in tail position
 *   lib_twice(n) -> lib_helper(n)                  in the shared library (hooks_cyg_lib.c)
 * The volatile stores keep each call's result needed and the recursion from being folded.
 * Nothing else is instrumented, so the trace holds exactly these calls and main.
 */
int lib_twice(int x);

static volatile int sink;

static int depth(int n)
{
	int r;

	if (n <= 0)
		return 0;
	r = depth(n - 1);
	sink = r;
	return r + 1;
}

static int leaf(int x)
{
	sink = x;
	return x + 1;
}

int tail(int x);
int tail(int x)
{
	return leaf(x * 2);
}

int main(int argc, char **argv)
{
	/* One digit, parsed here: clang instruments an inlined atoi() from the C library too. */
	int n = argc > 1 ? argv[1][0] - '0' : 3;

	sink = depth(n);
	sink = tail(n);
	sink = lib_twice(n);
	return 0;
}
