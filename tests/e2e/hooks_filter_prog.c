/*
 * tests/e2e/hooks_filter_prog.c - a program with a known call tree for the include=, exclude=
 * and max_depth= options (test_hooks_filter.c builds it for each hook: -finstrument-functions,
 * -pg -mfentry, XRay). It does not know about xfdr.
 *
 * main calls a(i) for i = 0, 1, 2; a calls b once; b calls c twice:
 *   main -> 3 x (a -> b -> 2 x c)       3 calls of a and of b, 6 of c
 * noinline and the volatile stores after each call keep every call a call (no inlining, no
 * sibling jump); the functions are extern so that gcc does not clone them (a.constprop.0).
 */
static volatile int sink;

__attribute__((noinline)) int c(int x);
__attribute__((noinline)) int b(int x);
__attribute__((noinline)) int a(int x);

__attribute__((noinline)) int c(int x)
{
	sink = x;
	return x + 1;
}

__attribute__((noinline)) int b(int x)
{
	int r = c(x);

	r += c(r);
	sink = r;
	return r;
}

__attribute__((noinline)) int a(int x)
{
	int r = b(x);

	sink = r;
	return r + 1;
}

int main(void)
{
	int i;

	for (i = 0; i < 3; i++)
		sink = a(i);
	return 0;
}
