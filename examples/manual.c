/*
 * examples/manual.c - instrumenting by hand: the XFDR_* macros and the C API, no compiler
 * flag. Ids are the program's own (listed below); the trace is written by xfdr_flush().
 * usage: XFDR_OPTIONS=output=DIR/ manual     (prints the trace's path)
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "xfdr/xfdr.h"

/* Function ids: any number below 2^28; tools show them as numbers. */
enum {
	ID_MAIN = 1,
	ID_LOAD_CONFIG = 2,
	ID_PARSE_LINE = 3,
	ID_HANDLE_REQUEST = 4,
	ID_CHECKSUM = 5,
};

static const char *const config[] = {"threads=4", "mode=fast", "log=off"};

static unsigned checksum(const char *s)
{
	XFDR_SCOPE(ID_CHECKSUM); /* the exit is recorded however the block is left */
	unsigned sum = 0;

	while (*s)
		sum = sum * 31u + (unsigned char)*s++;
	return sum;
}

static int parse_line(unsigned line_no, const char *line)
{
	int ok;

	/* An entry that logs arguments: Entry_Args followed by two CallArgument records. */
	XFDR_ENTER_ARGS(ID_PARSE_LINE, line_no, strlen(line));
	ok = strchr(line, '=') != NULL;
	XFDR_EXIT(ID_PARSE_LINE);
	return ok;
}

static int load_config(void)
{
	XFDR_SCOPE(ID_LOAD_CONFIG);
	static const char note[] = "config loaded";
	unsigned i;
	int ok = 1;

	for (i = 0; i < sizeof(config) / sizeof(config[0]); i++)
		ok &= parse_line(i + 1, config[i]);
	/* A custom event: any bytes, kept in the trace with a timestamp. */
	xfdr_custom_event(note, sizeof(note) - 1);
	return ok;
}

static unsigned handle_request(unsigned n)
{
	XFDR_SCOPE(ID_HANDLE_REQUEST);
	char text[32];

	snprintf(text, sizeof(text), "request-%u", n);
	return checksum(text);
}

int main(void)
{
	char path[4096];
	unsigned i, sum = 0;
	int rc;

	/* NULL: the defaults, then XFDR_OPTIONS from the environment. */
	rc = xfdr_init(NULL);
	if (!rc)
		rc = xfdr_start();
	if (rc) {
		fprintf(stderr, "xfdr: cannot start recording: %s\n", strerror(-rc));
		return 1;
	}
	XFDR_ENTER(ID_MAIN);
	if (!load_config())
		fprintf(stderr, "bad configuration\n");
	for (i = 0; i < 1000; i++)
		sum += handle_request(i);
	XFDR_EXIT(ID_MAIN);
	xfdr_stop();
	rc = xfdr_flush(path, sizeof(path));
	if (rc) {
		fprintf(stderr, "xfdr_flush: %s\n", strerror(-rc));
		return 1;
	}
	printf("handled 1000 requests (checksum %08x); trace: %s\n", sum, path);
	return 0;
}
