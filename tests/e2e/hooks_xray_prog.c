/*
 * tests/e2e/hooks_xray_prog.c - a program with a known call tree, for xfdr as the handler of
 * clang's XRay sleds (test_hooks_xray.c builds it with -fxray-instrument at -O0 and -O2,
 * linked with libxfdr.a, and checks every event).
 *
 * With argument n (3 in the test) main does, in order:
 *   a custom event "xfdr-hooks"                     __xray_customevent
 *   depth(n) -> ... -> depth(0)                     recursion, n + 1 frames
 *   tail(n) -> leaf(2n)                             at -O2 a jump: TAIL sled, then leaf
 *   logged(n)                                       entry with its first argument
 * noinline keeps every function a function at -O2; the volatile stores keep the results
 * needed and the recursion from becoming a loop.
 */
static volatile int sink;

__attribute__((noinline)) static int depth(int n)
{
	int r;

	if (n <= 0)
		return 0;
	r = depth(n - 1);
	sink = r;
	return r + 1;
}

__attribute__((noinline)) int leaf(int x);
__attribute__((noinline)) int leaf(int x)
{
	sink = x;
	return x + 1;
}

__attribute__((noinline)) int tail(int x);
__attribute__((noinline)) int tail(int x)
{
	return leaf(x * 2);
}

/* xray_log_args takes effect only together with xray_always_instrument. */
__attribute__((noinline, xray_always_instrument, xray_log_args(1))) int logged(int x);
__attribute__((noinline, xray_always_instrument, xray_log_args(1))) int logged(int x)
{
	sink = x;
	return x * 3;
}

int main(int argc, char **argv)
{
	static const char event[] = "xfdr-hooks";
	int n = argc > 1 ? argv[1][0] - '0' : 3;

	__xray_customevent(event, sizeof(event) - 1);
	sink = depth(n);
	sink = tail(n);
	sink = logged(n);
	return 0;
}
