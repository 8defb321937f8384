/*
 * examples/crash.c - a program that crashes, recorded unmodified: built with gcc's
 * -finstrument-functions only and run with LD_PRELOAD=libxfdr.so.0 XFDR_OPTIONS=start=1
 * (or xfdr record).
 *
 * It parses a few "records", then dereferences NULL three calls deep. xfdr's crash handler
 * records the crashing thread's backtrace, writes the trace, and lets the process die by
 * SIGSEGV as it would have: `xfdr dump` shows the calls that led to the crash, then the crash
 * with its frames named.
 */
#include <stdio.h>
#include <string.h>

struct record {
	const char *name;
	const char *owner; /* NULL in the last one: the bug */
};

static const struct record records[] = {
    {"alpha", "ann"},
    {"beta", "bob"},
    {"gamma", NULL},
};

static size_t owner_length(const struct record *r)
{
	return strlen(r->owner); /* crashes on the record without an owner */
}

static size_t describe(const struct record *r)
{
	return strlen(r->name) + owner_length(r);
}

static size_t process(const struct record *r)
{
	return describe(r) + 1;
}

int main(void)
{
	size_t i, total = 0;

	for (i = 0; i < sizeof(records) / sizeof(records[0]); i++)
		total += process(&records[i]);
	printf("%zu\n", total);
	return 0;
}
