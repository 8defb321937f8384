/*
 * tests/e2e/env_api_prog.c - a program that sets xfdr up itself, as examples/manual.c does:
 * xfdr_init() with its own options (buffer_size 8192, buffer_max 8, output argv[1]), then
 * xfdr_start(), then five calls of function 7; the flush at exit writes the trace. Linked
 * with libxfdr.a; test_runtime_env_api runs it under several XFDR_OPTIONS.
 * Exit status: 0, 3 if xfdr_init() failed, 4 if xfdr_start() failed, 2 for bad usage.
 */
#include <stdio.h>
#include <string.h>

#include "xfdr/xfdr.h"

int main(int argc, char **argv)
{
	struct xfdr_options o;
	int rc, i;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTPUT_DIR/\n", argv[0]);
		return 2;
	}
	xfdr_options_default(&o);
	o.buffer_size = 8192;
	o.buffer_max = 8;
	o.output = argv[1];
	rc = xfdr_init(&o);
	if (rc) {
		fprintf(stderr, "cannot set up recording: %s\n", strerror(-rc));
		return 3;
	}
	rc = xfdr_start();
	if (rc) {
		fprintf(stderr, "cannot start recording: %s\n", strerror(-rc));
		return 4;
	}
	for (i = 0; i < 5; i++) {
		XFDR_ENTER(7);
		XFDR_EXIT(7);
	}
	return 0;
}
