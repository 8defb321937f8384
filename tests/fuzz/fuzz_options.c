/*
 * tests/fuzz/fuzz_options.c - libFuzzer target: the XFDR_OPTIONS parser of the runtime
 * (runtime/control/options.c), as xfdr_init() and the environment use it: parse the input as
 * an XFDR_OPTIONS string into the defaults, check the result, print what differs. Its
 * diagnostics go to stderr (run with -close_fd_mask=2 to keep them out of the log).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/control/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xfdr_options o, def;
	char text[2048], store[1024], diff[1024];
	struct pr_buf b = PR_BUF_INIT(diff);
	opt_keys set = 0;
	int rejected;

	if (size >= sizeof(text))
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	xfdr_options_default(&o);
	xfdr_options_default(&def);
	rejected = opt_parse(&o, text, "XFDR_OPTIONS", store, sizeof(store), &set);
	if (rejected < 0)
		abort();
	/* What parsed is valid alone; the whole may still be refused (memory). */
	(void)opt_check(&o);
	(void)opt_print_differences(&b, &o, &def, 0);
	/* Every key it says it set differs from the default or was given its default. */
	opt_overlay(&def, &o, set);
	if (opt_print_differences(&b, &o, &def, 0) != 0)
		abort();
	return 0;
}
