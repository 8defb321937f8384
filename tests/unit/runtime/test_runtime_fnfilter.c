/*
 * tests/unit/runtime/test_runtime_fnfilter.c - the include= and exclude= lists
 * (runtime/symbols/fnfilter.h): their syntax, which names they keep (C++ in its three forms),
 * the once-per-process setting, naming by address, and the line about patterns that matched
 * nothing. The lists are set once per process, so one set serves every test here.
 *
 * The mangled names are written out by hand from the Itanium C++ ABI.
 */
#include "tests/support/runtime_test.h"

#include "runtime/symbols/fnfilter.h"
#include "runtime/symbols/patterns.h"

/* include: everything of ns, main, and this file's target; exclude: some of them again. */
static const char include_list[] = "main,ns::*,fnfilter_target_*,never_called_*";
static const char exclude_list[] = "ns::bar*,_ZN2ns3bazEv,ns::qux(int\\, char),a\\,b";

/* Named by the symbolizer from this binary's symbol table (not static: a .symtab entry). */
__attribute__((noinline)) int fnfilter_target_kept(int x);
__attribute__((noinline)) int fnfilter_target_kept(int x)
{
	return x + 1;
}

__attribute__((noinline)) int other_function(int x);
__attribute__((noinline)) int other_function(int x)
{
	return x * 3;
}

static void list_syntax(void **state)
{
	const char *why = NULL;
	char long_list[PATTERNS_TEXT_MAX + 1];
	char many[65 * 2 + 1];
	int i;

	(void)state;
	assert_int_equal(patterns_check(NULL, &why), 0);
	assert_int_equal(patterns_check("", &why), 0);
	assert_int_equal(patterns_check("a,b*,c\\,d,std::*", &why), 0);
	assert_int_equal(patterns_check("a,,b", &why), -EINVAL);
	assert_string_equal(why, "an empty pattern (two commas, or one at an end)");
	assert_int_equal(patterns_check("a,", &why), -EINVAL);
	assert_int_equal(patterns_check(",a", &why), -EINVAL);
	assert_int_equal(patterns_check("a\\", &why), -EINVAL);
	assert_string_equal(why, "a backslash ends it (write \\\\ for a backslash)");
	for (i = 0; i < 65; i++) {
		many[2 * i] = 'x';
		many[2 * i + 1] = ',';
	}
	many[2 * 64 + 1] = '\0'; /* 65 patterns */
	assert_int_equal(patterns_check(many, &why), -EINVAL);
	assert_string_equal(why, "more than 64 patterns");
	many[2 * 63 + 1] = '\0'; /* 64 */
	assert_int_equal(patterns_check(many, &why), 0);
	memset(long_list, 'a', sizeof(long_list) - 1);
	long_list[sizeof(long_list) - 1] = '\0';
	assert_int_equal(patterns_check(long_list, &why), -EINVAL);
	assert_string_equal(why, "longer than 2047 bytes");
}

static void set_once(void **state)
{
	(void)state;
	assert_false(fnfilter_on());
	/* Nothing set: a later call may still set the lists. */
	assert_int_equal(fnfilter_configure(NULL, ""), 0);
	assert_false(fnfilter_on());
	assert_int_equal(fnfilter_configure("a,,b", NULL), -EINVAL);
	assert_false(fnfilter_on());
	assert_int_equal(fnfilter_configure(include_list, exclude_list), 0);
	assert_true(fnfilter_on());
	assert_string_equal(fnfilter_text(FNFILTER_INCLUDE), include_list);
	assert_string_equal(fnfilter_text(FNFILTER_EXCLUDE), exclude_list);
	/* The same lists again: fine; others: refused, the first kept. */
	assert_int_equal(fnfilter_configure(include_list, exclude_list), 0);
	assert_int_equal(fnfilter_configure("main", NULL), -EBUSY);
	assert_string_equal(fnfilter_text(FNFILTER_INCLUDE), include_list);
}

static void names_kept(void **state)
{
	(void)state;
	assert_true(fnfilter_keeps_name("main"));
	/* not in the include list, and no symbol at all */
	assert_false(fnfilter_keeps_name("other_function"));
	assert_false(fnfilter_keeps_name(NULL));
	/* ns::foo(int): kept through its demangled name ns::* */
	assert_true(fnfilter_keeps_name("_ZN2ns3fooEi"));
	/* ns::bar(): left out by ns::bar* */
	assert_false(fnfilter_keeps_name("_ZN2ns3barEv"));
	/* ns::baz(): left out by its mangled name */
	assert_false(fnfilter_keeps_name("_ZN2ns3bazEv"));
	/* ns::qux(int, char): left out by its demangled name with parameters, comma quoted */
	assert_false(fnfilter_keeps_name("_ZN2ns3quxEic"));
	/* ns::qux(int): another overload, kept */
	assert_true(fnfilter_keeps_name("_ZN2ns3quxEi"));
	/* not a valid mangled name: matched as it is, and ns::* does not match it */
	assert_false(fnfilter_keeps_name("_ZN2ns"));
}

static void addresses_named(void **state)
{
	(void)state;
	assert_true(fnfilter_keeps_addr((uintptr_t)fnfilter_target_kept));
	assert_false(fnfilter_keeps_addr((uintptr_t)other_function));
	/* an address no file holds: no name, so not in the include list */
	assert_false(fnfilter_keeps_addr((uintptr_t)16));
	assert_int_equal(fnfilter_target_kept(1) + other_function(1), 5);
}

static void count_left_out(void **state)
{
	uint64_t before = fnfilter_functions_left_out();

	(void)state;
	fnfilter_count_left_out();
	fnfilter_count_left_out();
	assert_int_equal(fnfilter_functions_left_out(), before + 2);
}

static void report(void *arg)
{
	(void)arg;
	fnfilter_report_unmatched();
}

/* After names_kept: every pattern matched something but these two. Said once. */
static void unmatched_said_once(void **state)
{
	char err[2048];

	(void)state;
	ts_capture_stderr(report, NULL, err, sizeof(err));
	assert_string_equal(err, "xfdr: include=never_called_*, exclude=a\\,b: these patterns "
				 "matched no function called while recording (names as the .map "
				 "shows them, C++ ones also demangled)\n");
	ts_capture_stderr(report, NULL, err, sizeof(err));
	assert_string_equal(err, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(list_syntax),    cmocka_unit_test(set_once),
	    cmocka_unit_test(names_kept),     cmocka_unit_test(addresses_named),
	    cmocka_unit_test(count_left_out), cmocka_unit_test(unmatched_said_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
