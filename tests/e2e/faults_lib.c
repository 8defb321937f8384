/*
 * tests/e2e/faults_lib.c - the library tests/e2e/faults_prog.c dlopen()s, calls and
 * dlclose()s before the flush (tests/system/test_runtime_faults.c): its functions must keep
 * their names in the .map although the library is gone when it is written.
 */
volatile unsigned long faults_lib_sink;

__attribute__((noinline)) static void faults_lib_inner(unsigned long i)
{
	faults_lib_sink += i;
}

__attribute__((noinline)) void faults_lib_outer(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		faults_lib_inner(i);
}
