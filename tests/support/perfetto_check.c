/*
 * tests/support/perfetto_check.c - the Perfetto checker, run (perfetto_check.h).
 */
#include "tests/support/perfetto_check.h"

#include <stdio.h>

#include "tests/support/child.h"
#include "tests/support/e2e_calls.h"

/* Debian's python3: the one its python3-protobuf package is installed for. */
#define PYTHON "/usr/bin/python3"

char *perfetto_check(const char *mode, const char *trace, const char *llvm)
{
	char script[TH_PATH_BYTES], schema[TH_PATH_BYTES];
	char *argv[] = {PYTHON, script, (char *)mode, (char *)trace, schema, (char *)llvm, NULL};
	char what[600];

	th_src_file(script, "tests/system/perfetto_check.py");
	th_src_file(schema, "tests/system");
	snprintf(what, sizeof(what), "the Perfetto checker on %s", trace);
	return child_output(argv, what);
}
