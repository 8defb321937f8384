/*
 * tests/e2e/setuid_prog.c - a program that sets xfdr up itself and is installed set-user-ID
 * root by test_runtime_security: it must write where it says (argv[1]), never where the
 * XFDR_OPTIONS of the user who runs it says.
 *
 * It prints "uid=R euid=E secure=S" first (the test skips when the set-user-ID bit gave no
 * euid 0: a nosuid mount, no_new_privs), then calls xfdr_init() with output argv[1],
 * xfdr_start(), records three calls of function 5 around two of function 6 through the
 * manual API, stops and flushes; it prints "flush=RC path=PATH" and exits. Linked with
 * libxfdr.a: a set-user-ID process ignores LD_LIBRARY_PATH and $ORIGIN rpaths.
 * Exit status: 0; 3 if xfdr_init() failed, 4 if xfdr_start() failed, 5 if the flush failed,
 * 2 for bad usage.
 */
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "xfdr/xfdr.h"

int main(int argc, char **argv)
{
	char path[4096] = "";
	struct xfdr_options o;
	int rc, i;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTPUT_DIR/\n", argv[0]);
		return 2;
	}
	printf("uid=%d euid=%d secure=%lu\n", (int)getuid(), (int)geteuid(), getauxval(AT_SECURE));
	fflush(stdout);
	xfdr_options_default(&o);
	o.buffer_size = 4096;
	o.buffer_max = 8;
	o.output = argv[1];
	o.flush_at_exit = 0;
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
	for (i = 0; i < 3; i++) {
		xfdr_enter(5);
		if (i) {
			xfdr_enter(6);
			xfdr_exit(6);
		}
		xfdr_exit(5);
	}
	xfdr_stop();
	rc = xfdr_flush(path, sizeof(path));
	printf("flush=%d path=%s\n", rc, path);
	return rc ? 5 : 0;
}
