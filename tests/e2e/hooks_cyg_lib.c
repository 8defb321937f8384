/*
 * tests/e2e/hooks_cyg_lib.c - the shared library of hooks_cyg_prog.c: an exported function
 * calling a static one, so that names come from the library's own symbol table.
 */
int lib_twice(int x);

static volatile int lib_sink;

static int lib_helper(int x)
{
	lib_sink = x;
	return x + x;
}

int lib_twice(int x)
{
	return lib_helper(x) + 0 * lib_sink;
}
