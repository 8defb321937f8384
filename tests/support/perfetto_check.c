/*
 * tests/support/perfetto_check.c - the Perfetto checker, run (perfetto_check.h).
 */
#include "tests/support/perfetto_check.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/child.h"
#include "tests/support/e2e_calls.h"

/* Debian's python3: the one its python3-protobuf package is installed for. */
#define PYTHON "/usr/bin/python3"

char *perfetto_check(const char *mode, const char *trace, const char *llvm)
{
	char script[TH_PATH_BYTES], schema[TH_PATH_BYTES];
	char *argv[] = {PYTHON, script, (char *)mode, (char *)trace, schema, (char *)llvm, NULL};
	struct child_result r;
	char *out;

	th_src_file(script, "tests/system/perfetto_check.py");
	th_src_file(schema, "tests/system");
	child_capture(argv, &r);
	if (r.status == 127)
		fail_msg("%s is needed to check the output (make deps installs it)", PYTHON);
	if (r.status != 0)
		fail_msg("the Perfetto checker refused %s:\n%s%s", trace, r.out, r.err);
	out = strdup(r.out);
	assert_non_null(out);
	child_result_free(&r);
	return out;
}
