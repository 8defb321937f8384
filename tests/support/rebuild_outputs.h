/*
 * tests/support/rebuild_outputs.h - what the verbs that rebuild a trace (`xfdr recover`,
 * `xfdr core`) promise about OUT and OUT.map, checked the same way for both.
 */
#ifndef XFDR_TESTS_SUPPORT_REBUILD_OUTPUTS_H
#define XFDR_TESTS_SUPPORT_REBUILD_OUTPUTS_H

/*
 * rebuild_expect_only_regular_replaced - `xfdr VERB --force -o OUT INPUT` replaces a regular
 * file, nothing else: with OUT a FIFO, a directory, a link to a device (/dev/null: rename()
 * would replace the link, never the device, so the check cannot harm it) or a link to a FIFO,
 * or with OUT.map a FIFO, the verb exits 1 with one line naming the file and what it is, and
 * writes nothing (no OUT, no OUT.map, no temporary file; the FIFO and the others intact).
 * With also (e.g. "--salvage", or NULL) the refusals are checked again with that option.
 * Then a regular OUT is replaced by a trace `xfdr verify` accepts. Uses the scratch directory
 * (scratch_make_non_regular()); fails the cmocka test on any difference.
 */
void rebuild_expect_only_regular_replaced(const char *verb, const char *input, const char *also);

#endif /* XFDR_TESTS_SUPPORT_REBUILD_OUTPUTS_H */
