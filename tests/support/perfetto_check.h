/*
 * tests/support/perfetto_check.h - run tests/system/perfetto_check.py, which decodes what
 * `xfdr convert --output-format=perfetto` wrote with protoc against Perfetto's field numbers
 * (tests/system/perfetto_subset.proto) and checks what a viewer relies on.
 */
#ifndef XFDR_TESTS_SUPPORT_PERFETTO_CHECK_H
#define XFDR_TESTS_SUPPORT_PERFETTO_CHECK_H

/*
 * perfetto_check - the checker in mode "lines" on trace, or "same" on trace and llvm-xray's
 * trace_event JSON llvm (NULL for "lines"). Returns what it printed (free it); a checker that
 * refuses the file, or a missing python3, fails the test.
 */
char *perfetto_check(const char *mode, const char *trace, const char *llvm);

#endif /* XFDR_TESTS_SUPPORT_PERFETTO_CHECK_H */
