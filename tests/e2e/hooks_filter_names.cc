/*
 * tests/e2e/hooks_filter_names.cc - C++ names for the include= and exclude= patterns
 * (test_hooks_filter.c builds it with g++ -finstrument-functions and matches its functions by
 * mangled name, demangled with parameters, and demangled without). It does not know about
 * xfdr.
 *
 * main calls, in order:
 *   ns::foo(1) -> Counter::add
 *   ns::bar(2) -> ns::foo -> Counter::add
 *   Counter::mix(3, 4) -> Counter::add      two parameters: "Counter::mix(int, int)"
 * noinline and the volatile stores after each call keep every call a call.
 */
namespace ns
{
int foo(int x);
int bar(int x);
} // namespace ns

struct Counter {
	int total;
	int add(int x);
	int mix(int x, int y);
};

static volatile int sink;
static Counter counter;

__attribute__((noinline)) int Counter::add(int x)
{
	total += x;
	sink = total;
	return total;
}

__attribute__((noinline)) int Counter::mix(int x, int y)
{
	int r = add(x * y);

	sink = r;
	return r;
}

__attribute__((noinline)) int ns::foo(int x)
{
	int r = counter.add(x);

	sink = r;
	return r;
}

__attribute__((noinline)) int ns::bar(int x)
{
	int r = ns::foo(x + 1);

	sink = r;
	return r;
}

int main()
{
	sink = ns::foo(1);
	sink = ns::bar(2);
	sink = counter.mix(3, 4);
	return 0;
}
