/*
 * tests/fuzz/fuzz_support.h - what the verb-running fuzz targets share: the verbs' stdout goes
 * to /dev/null, inputs are memfds named by /proc/self/fd paths, outputs go to a scratch folder.
 */
#ifndef XFDR_TESTS_FUZZ_SUPPORT_H
#define XFDR_TESTS_FUZZ_SUPPORT_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Each target uses what it needs of this: the rest is marked unused. */
#define FUZZ_UNUSED __attribute__((unused))

/* The scratch folder for the verbs' outputs: "/tmp/xfdr-fuzz-XXXXXX", made at start. */
static FUZZ_UNUSED char fuzz_out_dir[64];

/* The outputs are removed after each input: only the folder is left at the end. */
static FUZZ_UNUSED void fuzz_remove_out_dir(void)
{
	rmdir(fuzz_out_dir);
}

/* Every verb's output goes to stdout: keep it out of the fuzzer's log; make the folder. */
static FUZZ_UNUSED void fuzz_setup(void)
{
	int null = open("/dev/null", O_WRONLY);

	if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
		abort();
	close(null);
	snprintf(fuzz_out_dir, sizeof(fuzz_out_dir), "/tmp/xfdr-fuzz-XXXXXX");
	if (!mkdtemp(fuzz_out_dir))
		abort();
	atexit(fuzz_remove_out_dir);
}

/* A memfd for one input file, and the path the verbs open it by. */
static FUZZ_UNUSED int fuzz_memfd(const char *name, char *path, size_t path_bytes)
{
	int fd = memfd_create(name, 0);

	if (fd < 0)
		abort();
	snprintf(path, path_bytes, "/proc/self/fd/%d", fd);
	return fd;
}

#endif
