# tests/checks.mk - every check-* rule, and `make check`, which runs them all (< 10 min).
# Included by the top Makefile after its variables; the rules use those of bench/bench.mk,
# examples/examples.mk and tests/fuzz/fuzz.mk, which it includes as well.

.PHONY: check check-build check-exports check-headers check-format check-layers check-clang \
	check-san check-tsan check-unit check-system check-install check-man check-fuzz check-bench \
	check-examples check-functions check-fentry-fast

# cmocka's summaries come last: the plain runs are the final steps.
check: check-format check-layers check-functions check-build check-exports check-fentry-fast check-headers check-clang check-san \
	check-tsan check-examples check-man check-install check-fuzz check-bench
	$(MAKE) --no-print-directory check-unit
	$(MAKE) --no-print-directory check-system

# Every C file and header of the project as clang-format (.clang-format) writes it.
check-format:
	sh tests/check_format.sh

# Who may include whom: the writer only the public headers, the runtime and the reader never
# each other, the command's verbs no other verb (tests/check_layers.sh).
check-layers:
	sh tests/check_layers.sh

# No function outside tests and bench over 100 lines (tests/check_functions.sh).
check-functions:
	sh tests/check_functions.sh

check-build: all $(UNIT_BINS) $(SYSTEM_BINS)

check-exports: $(LIBXFDR_SO) $(LIBREADER_A)
	sh tests/check_exports.sh $(LIBXFDR_SO) $(LIBREADER_A)

check-headers:
	sh tests/check_headers.sh "$(CC)"

# The fentry stubs' common case runs with the vector registers unsaved: it may use none and
# call nothing (tests/check_fentry_fast.sh). Not in sanitizer builds, whose stubs save them.
check-fentry-fast: $(OBJ)/rt/runtime/hooks/fentry_fast.o
	sh tests/check_fentry_fast.sh $<

# Warning-free under clang as well as gcc.
check-clang:
	$(MAKE) --no-print-directory BUILD=$(BUILD)/clang CC=clang check-build

# Every test again under AddressSanitizer and UBSan.
check-san:
	$(MAKE) --no-print-directory BUILD=$(BUILD)/asan SAN=address,undefined check-build
	$(TEST_ENV) XFDR_BIN=$(abspath $(BUILD)/asan/bin/xfdr) XFDR_SANITIZED=1 \
		sh tests/run_tests.sh $(call test_bins,$(BUILD)/asan,$(TEST_SRCS))

check-tsan:
	$(if $(MT_SRCS),$(MAKE) --no-print-directory BUILD=$(BUILD)/tsan SAN=thread \
		$(call test_bins,$(BUILD)/tsan,$(MT_SRCS)))
	$(if $(MT_SRCS),$(TEST_ENV) XFDR_SANITIZED=1 TSAN_OPTIONS=halt_on_error=1 \
		sh tests/run_tests.sh $(call test_bins,$(BUILD)/tsan,$(MT_SRCS)))

# Unit tests (tests/unit/LAYER/), then system tests (tests/system/).
check-unit: check-build
	$(TEST_ENV) sh tests/run_tests.sh $(UNIT_BINS)

check-system: check-build
	$(TEST_ENV) sh tests/run_tests.sh $(SYSTEM_BINS)

# The man page names every command, option and XFDR_OPTIONS key, and mandoc finds no fault.
check-man: $(XFDR_BIN)
	sh tests/check_man.sh $(XFDR_BIN) doc/xfdr.1 $(CURDIR)

# The benchmark's machinery at a tiny size, peers that need bench-deps left out: every row
# runs and records every event, its counts agree with llvm-xray, its table catches a loss.
check-bench: all
	sh tests/check_bench.sh "$(MAKE)" $(BUILD) $(LLVM_XRAY)

# Install into a scratch prefix, build and record examples against it with pkg-config only.
check-install: all
	sh tests/check_install.sh $(CURDIR) $(BUILD) $(abspath $(BUILD))/install-check $(LLVM_XRAY)

# The examples, recorded and read back by xfdr and llvm-xray (examples/check.sh).
check-examples: all examples
	sh examples/check.sh $(EXAMPLES_DIR) $(XFDR_BIN) $(LLVM_XRAY) $(LIBXFDR_SO)

# Replays first (every committed input and regression, every target), then a short run.
check-fuzz: fuzz-build $(BUILD)/tests/test_reader_malformed $(XFDR_BIN)
	@mkdir -p $(FUZZ_DIR)/crashes
	@set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_DIR)/corpus/$$t; \
		echo "fuzz_$$t: replaying the corpus, the seeds and tests/fuzz/regressions"; \
		$(FUZZ_DIR)/fuzz_$$t $(FUZZ_RUN_FLAGS) -runs=0 \
			-artifact_prefix=$(FUZZ_DIR)/crashes/$$t- \
			$(FUZZ_DIR)/corpus/$$t $(FUZZ_DIR)/committed/$$t \
			$(FUZZ_DIR)/seeds/$$t tests/fuzz/regressions >$(FUZZ_DIR)/replay-$$t.log 2>&1 \
			|| { cat $(FUZZ_DIR)/replay-$$t.log; exit 1; }; \
	done
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz_$$t: $(FUZZ_CHECK_SECONDS) s"; \
		$(FUZZ_DIR)/fuzz_$$t $(FUZZ_RUN_FLAGS) -max_total_time=$(FUZZ_CHECK_SECONDS) \
			-artifact_prefix=$(FUZZ_DIR)/crashes/$$t- \
			$$(test -f tests/fuzz/$$t.dict && echo -dict=tests/fuzz/$$t.dict) \
			$(FUZZ_DIR)/corpus/$$t $(FUZZ_DIR)/committed/$$t \
			$(FUZZ_DIR)/seeds/$$t >$(FUZZ_DIR)/check-$$t.log 2>&1 \
			|| { tail -60 $(FUZZ_DIR)/check-$$t.log; \
			     echo "fuzz_$$t: crash in $(FUZZ_DIR)/crashes/$$t-*"; exit 1; }; \
	done
	@echo "check-fuzz: no crash, hang or sanitizer report"

