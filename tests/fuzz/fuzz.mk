# tests/fuzz/fuzz.mk - libFuzzer targets for the reader, the .map parser, the pool image,
# `xfdr recover` on its three input files, the ELF readers (a crash frame's module, the program
# of `xfdr record`), the summary `xfdr record` makes of the files its program left, and the
# runtime's XFDR_OPTIONS parser. Included by the top Makefile after its variables.
#
#   make fuzz          every target for FUZZ_SECONDS (default 300) each; new corpus entries
#                      are kept in $(BUILD)/fuzz/corpus/TARGET, crashes in $(BUILD)/fuzz/crashes
#   make check-fuzz    replay the committed corpus, the generated seeds and every file of
#                      tests/fuzz/regressions/ through every target, then FUZZ_CHECK_SECONDS
#                      (default 15) of fuzzing each; part of `make check` (tests/checks.mk)
#   make fuzz-minimize merge $(BUILD)/fuzz/corpus into the committed tests/fuzz/corpus/*.tar.xz
#                      (libFuzzer -merge=1: only inputs that add coverage; keep it small)
#
# The targets are built with clang (FUZZ_CC) whatever CC is, from the sources, into
# $(BUILD)/fuzz: -fsanitize=fuzzer,address,undefined, every sanitizer report fatal. The seeds
# are made at build time by seedgen (tests/fuzz/seedgen.c, built with CC against the libraries):
# what the runtime writes and the versions 2 to 5.

FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 300
FUZZ_CHECK_SECONDS ?= 15
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_TARGETS := reader names pool recover elf record options
FUZZ_BINS    := $(patsubst %,$(FUZZ_DIR)/fuzz_%,$(FUZZ_TARGETS))
FUZZ_CFLAGS  := -std=gnu11 $(WARN) -D_GNU_SOURCE -Iinclude -I. -pthread -g -O1 \
	-fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
	-fno-sanitize-recover=all -DXFDR_VERSION_STRING='"$(VERSION)"'
FUZZ_LDFLAGS := -fsanitize=fuzzer,address,undefined -pthread -lm $(COMMAND_LIBS)
# Every run: one input at most 10 s, quiet targets (the report still reaches the log).
FUZZ_RUN_FLAGS := -timeout=10 -close_fd_mask=3 -rss_limit_mb=2048 -print_final_stats=0

# The targets link libraries built with FUZZ_CC and the sanitizers: the reader, the analysis,
# the rebuild library and the writer it encodes through, the launcher, and the command's
# objects but its main (the verbs fuzz_pool and fuzz_recover run whole); the linker takes from
# each only what a target calls.
FUZZ_LIB_READER   := $(FUZZ_DIR)/lib/libxfdr_reader.a
FUZZ_LIB_ANALYSIS := $(FUZZ_DIR)/lib/libxfdr_analysis.a
FUZZ_LIB_REBUILD  := $(FUZZ_DIR)/lib/libxfdr_rebuild.a
FUZZ_LIB_WRITER   := $(FUZZ_DIR)/lib/libxfdr_writer.a
FUZZ_LIB_LAUNCHER := $(FUZZ_DIR)/lib/libxfdr_launcher.a
FUZZ_LIB_COMMAND  := $(FUZZ_DIR)/lib/libxfdr_command.a
FUZZ_LIBS         := $(FUZZ_LIB_COMMAND) $(FUZZ_LIB_LAUNCHER) $(FUZZ_LIB_REBUILD) \
	$(FUZZ_LIB_ANALYSIS) $(FUZZ_LIB_READER) $(FUZZ_LIB_WRITER)
FUZZ_OPT_OBJS    := $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,runtime/control/options.c runtime/base/print.c \
	runtime/symbols/patterns.c writer/fsize.c)
FUZZ_SEEDGEN     := $(FUZZ_DIR)/seedgen
FUZZ_SEEDS       := $(FUZZ_DIR)/seeds/.done
# The committed corpus: one archive per target (tests/fuzz/corpus/TARGET.tar.xz), unpacked
# into $(FUZZ_DIR)/committed/TARGET before a run.
FUZZ_COMMITTED   := $(FUZZ_DIR)/committed/.done

.PHONY: fuzz-build fuzz-minimize

$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

fuzz_objs = $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(1))
fuzz_archive = @mkdir -p $(@D) && rm -f $@ && $(AR) rcs $@ $(filter %.o,$^)

$(FUZZ_LIB_READER): $(call fuzz_objs,$(READER_SRCS)) Makefile
	$(fuzz_archive)
$(FUZZ_LIB_ANALYSIS): $(call fuzz_objs,$(ANALYSIS_SRCS)) Makefile
	$(fuzz_archive)
$(FUZZ_LIB_REBUILD): $(call fuzz_objs,$(REBUILD_SRCS)) Makefile
	$(fuzz_archive)
$(FUZZ_LIB_LAUNCHER): $(call fuzz_objs,$(LAUNCHER_SRCS)) Makefile
	$(fuzz_archive)
$(FUZZ_LIB_WRITER): $(call fuzz_objs,$(WRITER_SRCS)) Makefile
	$(fuzz_archive)
$(FUZZ_LIB_COMMAND): $(call fuzz_objs,$(filter-out command/xfdr.c,$(COMMAND_SRCS))) Makefile
	$(fuzz_archive)

$(FUZZ_DIR)/fuzz_reader: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_reader.o $(FUZZ_LIBS)
	$(FUZZ_CC) -o $@ $^ $(FUZZ_LDFLAGS)

$(FUZZ_DIR)/fuzz_pool: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_pool.o $(FUZZ_LIBS)
	$(FUZZ_CC) -o $@ $^ $(FUZZ_LDFLAGS)

$(FUZZ_DIR)/fuzz_recover: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_recover.o $(FUZZ_LIBS)
	$(FUZZ_CC) -o $@ $^ $(FUZZ_LDFLAGS)

$(FUZZ_DIR)/fuzz_elf: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_elf.o $(FUZZ_LIB_LAUNCHER) $(FUZZ_LIB_READER)
	$(FUZZ_CC) -o $@ $^ $(FUZZ_LDFLAGS)

$(FUZZ_DIR)/fuzz_record: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_record.o $(FUZZ_LIBS)
	$(FUZZ_CC) -o $@ $^ $(FUZZ_LDFLAGS)

$(FUZZ_DIR)/fuzz_names: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_names.o $(FUZZ_LIB_READER)
	$(FUZZ_CC) -o $@ $^ $(FUZZ_LDFLAGS)

$(FUZZ_DIR)/fuzz_options: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_options.o $(FUZZ_OPT_OBJS)
	$(FUZZ_CC) -o $@ $^ $(FUZZ_LDFLAGS)

# The seed generator records with the runtime: built like the tests, with CC.
$(FUZZ_SEEDGEN): tests/fuzz/seedgen.c $(SUPPORT_A) $(LIBREADER_A) $(LIBXFDR_A)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(TEST_CFLAGS) -o $@ $< $(SUPPORT_A) $(LIBREADER_A) $(LIBXFDR_A) \
		$(SAN_LDFLAGS) $(TEST_LIBS) $(RUNTIME_LIBS) -lm

$(FUZZ_SEEDS): $(FUZZ_SEEDGEN)
	rm -rf $(FUZZ_DIR)/seeds && mkdir -p $(FUZZ_DIR)/seeds
	XFDR_OPTIONS= $(FUZZ_SEEDGEN) $(FUZZ_DIR)/seeds >$(FUZZ_DIR)/seedgen.log 2>&1 \
		|| { cat $(FUZZ_DIR)/seedgen.log; exit 1; }
	@touch $@

$(FUZZ_COMMITTED): $(wildcard tests/fuzz/corpus/*.tar.xz)
	rm -rf $(FUZZ_DIR)/committed
	@set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_DIR)/committed/$$t; \
		if [ -f tests/fuzz/corpus/$$t.tar.xz ]; then \
			tar -C $(FUZZ_DIR)/committed/$$t -xJf tests/fuzz/corpus/$$t.tar.xz; fi; \
	done
	@touch $@

fuzz-build: $(FUZZ_BINS) $(FUZZ_SEEDS) $(FUZZ_COMMITTED)


fuzz: fuzz-build $(BUILD)/tests/test_reader_malformed $(XFDR_BIN)
	@mkdir -p $(FUZZ_DIR)/crashes
	@set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_DIR)/corpus/$$t; \
		echo "fuzz_$$t: $(FUZZ_SECONDS) s"; \
		$(FUZZ_DIR)/fuzz_$$t $(FUZZ_RUN_FLAGS) -max_total_time=$(FUZZ_SECONDS) \
			-artifact_prefix=$(FUZZ_DIR)/crashes/$$t- \
			$$(test -f tests/fuzz/$$t.dict && echo -dict=tests/fuzz/$$t.dict) \
			$(FUZZ_DIR)/corpus/$$t $(FUZZ_DIR)/committed/$$t $(FUZZ_DIR)/seeds/$$t \
			|| { echo "fuzz_$$t failed: see $(FUZZ_DIR)/crashes/$$t-*"; exit 1; }; \
	done
	@echo "fuzz: new corpus entries in $(FUZZ_DIR)/corpus/, crashes (none if empty) in $(FUZZ_DIR)/crashes/"
	@ls -l $(FUZZ_DIR)/crashes
	@echo "fuzz: the reader's own truncation and bit-flip test, long form"
	$(TEST_ENV) XFDR_FUZZ_ITERATIONS=2000000 sh tests/run_tests.sh $(BUILD)/tests/test_reader_malformed

# Fold what `make fuzz` found into the committed corpus: the inputs of $(BUILD)/fuzz/corpus
# (cut to FUZZ_MINIMIZE_MAX_LEN bytes) that add coverage beyond the generated seeds and what
# is committed already (libFuzzer -merge=1), packed again as tests/fuzz/corpus/TARGET.tar.xz
# (sorted, owner and times zeroed: the same inputs make the same archive); the seeds
# themselves are made at build time and stay out.
FUZZ_MINIMIZE_MAX_LEN ?= 1024
fuzz-minimize: fuzz-build
	@set -e; for t in $(FUZZ_TARGETS); do \
		m=$(FUZZ_DIR)/minimize/$$t; rm -rf $$m; mkdir -p $$m $(FUZZ_DIR)/corpus/$$t; \
		cp -R $(FUZZ_DIR)/seeds/$$t/. $$m/; ls $$m >$(FUZZ_DIR)/minimize/$$t.seeds; \
		cp -R $(FUZZ_DIR)/committed/$$t/. $$m/; \
		$(FUZZ_DIR)/fuzz_$$t $(FUZZ_RUN_FLAGS) -merge=1 -max_len=$(FUZZ_MINIMIZE_MAX_LEN) \
			$$m $(FUZZ_DIR)/corpus/$$t >$(FUZZ_DIR)/minimize/$$t.log 2>&1; \
		(cd $$m && xargs rm -f <../$$t.seeds); \
		tar -C $$m -cJf tests/fuzz/corpus/$$t.tar.xz --sort=name --owner=0 --group=0 \
			--numeric-owner --mtime=@0 .; \
	done
	ls -l tests/fuzz/corpus

-include $(shell find $(FUZZ_DIR)/obj -name '*.d' 2>/dev/null)
