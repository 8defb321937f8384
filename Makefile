# xfdr - build, test, benchmark, install. Plain GNU make; see README.md.
#
#   make deps     install the Debian packages the project needs (harmless if present)
#   make          libxfdr.a, libxfdr.so, libxfdr_reader.a and the xfdr command, in $(BUILD)/
#   make check    every test (unit, interop with llvm-xray, sanitizers, clang build); < 10 min
#   make bench    overhead benchmarks, xfdr beside the floor and every peer (bench/README.md)
#   make bench-deps   the peers' Debian packages (uftrace, LTTng-UST, babeltrace)
#   make stress / make fuzz   long runs (STRESS_SECONDS, FUZZ_SECONDS), not part of check
#   make install PREFIX=/usr/local DESTDIR=    make uninstall PREFIX=... DESTDIR=...
#
# Variables: BUILD (output folder), CC, DEBUG=1 (-g3), SAN=address,undefined (all code).

BUILD   ?= build
PREFIX  ?= /usr/local
DESTDIR ?=
LLVM_XRAY ?= llvm-xray
VERSION := 0.1.0
SOVERSION := 0

WARN        := -Wall -Wextra -Werror
BASE_CFLAGS := -std=gnu11 $(WARN) -D_GNU_SOURCE -Iinclude -I. -pthread
ifeq ($(DEBUG),1)
BASE_CFLAGS += -g3
endif
ifneq ($(SAN),)
BASE_CFLAGS += -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all -DXFDR_SANITIZED
SAN_LDFLAGS := -fsanitize=$(SAN)
endif

RUNTIME_CFLAGS ?= -O2 -fPIC -fvisibility=hidden -fno-omit-frame-pointer
READER_CFLAGS  ?= -O2 -fPIC -DXFDR_VERSION_STRING='"$(VERSION)"'
TEST_CFLAGS    ?= -O0 -g
BENCH_CFLAGS   ?= -O2 -fno-omit-frame-pointer

# libiberty (a static archive only) demangles C++ names for the include=/exclude= filters; its
# symbols stay inside libxfdr.so (--exclude-libs), which then needs nothing of it at run time.
# The tests link libxfdr.a with the same list (CHILD_RUNTIME_LIBS, tests/support/child.h).
RUNTIME_LIBS := -lurcu-bp -lurcu-cds -lurcu-common -lunwind -liberty -lpthread -ldl
TEST_LIBS    := -lcmocka
# What the xfdr command needs beyond libc: ISA-L (igzip) for Perfetto's compressed packets, zlib
# for pprof's gzip stream, libdw for source lines, threads for Perfetto's writers and verify.
COMMAND_LIBS := -lisal -lz -ldw -lelf -lpthread

# ---- sources -----------------------------------------------------------------------------
WRITER_SRCS  := $(sort $(wildcard writer/*.c))
# The runtime: one sub-folder per concern (base, control, hooks, record, pool, flush, symbols).
# runtime/link/ is not part of the libraries: it is linked into the program (see below).
RUNTIME_SRCS := $(sort $(filter-out runtime/link/%,$(wildcard runtime/*/*.c)))
LINK_SRCS    := $(sort $(wildcard runtime/link/*.c))
# The reader library (reader/): decoding and verifying traces and their .map sidecars.
READER_SRCS  := $(sort $(wildcard reader/*.c))
# Analysis over decoded traces (analysis/): call pairing, the latency table, the stack tree,
# llvm-xray's orders. A library that never prints; errors come back in a struct xfdr_error.
ANALYSIS_SRCS := $(sort $(wildcard analysis/*.c))
# Traces rebuilt from what a dead process left (rebuild/): the pool image behind `recover` and
# `core`. A library on the reader (decoding) and the writer (encoding); it never prints.
REBUILD_SRCS := $(sort $(wildcard rebuild/*.c))
# Running a program under the recorder (launcher/): how it was instrumented (elf_probe.c), the
# XFDR_OPTIONS text, fork/exec/wait with signals passed on, the traces it left. `xfdr record`'s
# library; it never prints.
LAUNCHER_SRCS := $(sort $(wildcard launcher/*.c))
# The xfdr command (command/): one file per verb, what they share, the dispatcher (xfdr.c).
COMMAND_SRCS := $(sort $(wildcard command/*.c))
# Tests (README.md, "tests/"): unit tests, one folder per library and the runtime, each driving
# its layer in the test's own process; system tests, which run whole programs (the xfdr
# command, instrumented programs from tests/e2e, llvm-xray on what they write).
UNIT_SRCS    := $(sort $(wildcard tests/unit/*/test_*.c))
SYSTEM_SRCS  := $(sort $(wildcard tests/system/test_*.c))
TEST_SRCS    := $(UNIT_SRCS) $(SYSTEM_SRCS)
# Concurrency tests (test_*_mt.c) also run under ThreadSanitizer.
MT_SRCS      := $(filter %_mt.c,$(TEST_SRCS))
TEST_SUPPORT_SRCS := $(sort $(wildcard tests/support/*.c))

OBJ := $(BUILD)/obj
LIBXFDR_OBJS   := $(patsubst %.c,$(OBJ)/rt/%.o,$(WRITER_SRCS) $(RUNTIME_SRCS))
READER_OBJS    := $(patsubst %.c,$(OBJ)/rd/%.o,$(READER_SRCS))
COMMAND_OBJS   := $(patsubst %.c,$(OBJ)/rd/%.o,$(filter-out command/xfdr.c,$(COMMAND_SRCS)))
ANALYSIS_OBJS  := $(patsubst %.c,$(OBJ)/rd/%.o,$(ANALYSIS_SRCS))
REBUILD_OBJS   := $(patsubst %.c,$(OBJ)/rd/%.o,$(REBUILD_SRCS))
LAUNCHER_OBJS  := $(patsubst %.c,$(OBJ)/rd/%.o,$(LAUNCHER_SRCS))
# The writer again, built as the command's code: the rebuild library encodes through it.
WRITER_RD_OBJS := $(patsubst %.c,$(OBJ)/rd/%.o,$(WRITER_SRCS))
SUPPORT_OBJS   := $(patsubst %.c,$(OBJ)/test/%.o,$(TEST_SUPPORT_SRCS))
# The tests' helpers, as an archive: a test links only the helpers it calls (a reader test
# never pulls in the runtime through a runtime helper).
SUPPORT_A      := $(BUILD)/lib/libxfdr_testsupport.a

# libxfdr.so.$(VERSION) is the shared runtime (soname libxfdr.so.$(SOVERSION), the name to
# preload); libxfdr.so, what -lxfdr finds, is a linker script like glibc's libc.so: the shared
# runtime plus libxfdr_xray.a, whose one object hands compiler-rt's XRay entry points (hidden
# symbols, reachable only from inside the executable) to the shared runtime.
LINK_OBJS   := $(patsubst %.c,$(OBJ)/rt/%.o,$(LINK_SRCS))
LIBXFDR_A   := $(BUILD)/lib/libxfdr.a
LIBXFDR_REAL := $(BUILD)/lib/libxfdr.so.$(VERSION)
LIBXFDR_SO  := $(BUILD)/lib/libxfdr.so.$(SOVERSION)
LIBXFDR_LD  := $(BUILD)/lib/libxfdr.so
LIBXFDR_XRAY_A := $(BUILD)/lib/libxfdr_xray.a
LIBREADER_A := $(BUILD)/lib/libxfdr_reader.a
LIBANALYSIS_A := $(BUILD)/lib/libxfdr_analysis.a
LIBCOMMAND_A := $(BUILD)/lib/libxfdr_command.a
LIBREBUILD_A := $(BUILD)/lib/libxfdr_rebuild.a
LIBLAUNCHER_A := $(BUILD)/lib/libxfdr_launcher.a
LIBWRITER_A  := $(BUILD)/lib/libxfdr_writer.a
XFDR_BIN    := $(BUILD)/bin/xfdr
# Each test's binary, by its file's name: $(call test_bins,DIR,SRCS) in DIR/tests/.
test_bins = $(patsubst %.c,$(1)/tests/%,$(notdir $(2)))
UNIT_BINS   := $(call test_bins,$(BUILD),$(UNIT_SRCS))
SYSTEM_BINS := $(call test_bins,$(BUILD),$(SYSTEM_SRCS))

.PHONY: all deps bench stress fuzz install uninstall clean examples demo
.DEFAULT_GOAL := all
# Keep test objects: make must not end `make check` by deleting intermediates.
.SECONDARY:

all: $(LIBXFDR_A) $(LIBXFDR_SO) $(LIBXFDR_LD) $(LIBXFDR_XRAY_A) $(LIBREADER_A) $(LIBANALYSIS_A) \
	$(XFDR_BIN)

# ---- dependencies --------------------------------------------------------------------------
DEB_PACKAGES := build-essential clang clang-format llvm libclang-rt-14-dev liburcu-dev libcmocka-dev \
	libunwind-dev liblzma-dev xz-utils pkg-config gdb valgrind chromium python3 fonts-dejavu-core \
	man-db mandoc libisal-dev zlib1g-dev protobuf-compiler python3-protobuf golang-go libdw-dev \
	libiberty-dev
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
deps:
	@if dpkg-query -W -f='$${Status}\n' $(DEB_PACKAGES) 2>/dev/null | grep -vq 'install ok installed' \
	    || [ $$(dpkg-query -W -f='$${Status}\n' $(DEB_PACKAGES) 2>/dev/null | wc -l) -ne $(words $(DEB_PACKAGES)) ]; then \
		echo "installing: $(DEB_PACKAGES)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(DEB_PACKAGES); \
	else echo "deps: all packages present"; fi
	@# Node.js and npm come with the machine; Debian's only where they are missing.
	@command -v npm >/dev/null || DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nodejs npm
	@$(MAKE) -s $(NPM_STAMP)

# The viewers the tests open our output in (tests/npm/package.json), at the lock file's versions.
NPM_DIR := tests/npm
NPM_STAMP := $(NPM_DIR)/node_modules/.package-lock.json
$(NPM_STAMP): $(NPM_DIR)/package.json $(NPM_DIR)/package-lock.json
	cd $(NPM_DIR) && npm ci --no-audit --no-fund --ignore-scripts

# ---- objects and libraries -----------------------------------------------------------------
$(OBJ)/rt/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(RUNTIME_CFLAGS) -MMD -MP -c $< -o $@

# The hooks' entry points are leaves on their fast paths: without the frame-pointer set-up
# (push, mov, pop: three instructions of about forty per event). A frame-pointer walker
# (perf --call-graph=fp) that samples inside one misses the instrumented caller, as with any
# leaf function built so.
$(OBJ)/rt/runtime/hooks/%.o: RUNTIME_CFLAGS += -fomit-frame-pointer
# The fentry stubs' common case runs with only the general registers saved (fentry.c).
$(OBJ)/rt/runtime/hooks/fentry_fast.o: RUNTIME_CFLAGS += -mgeneral-regs-only

$(OBJ)/rd/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(READER_CFLAGS) -MMD -MP -c $< -o $@

$(OBJ)/test/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(TEST_CFLAGS) -MMD -MP -c $< -o $@

$(LIBXFDR_A): $(LIBXFDR_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(LIBXFDR_REAL): $(LIBXFDR_OBJS)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libxfdr.so.$(SOVERSION) -Wl,--exclude-libs,libiberty.a -o $@ $^ \
		$(SAN_LDFLAGS) $(RUNTIME_LIBS)

$(LIBXFDR_SO): $(LIBXFDR_REAL)
	ln -sf $(notdir $<) $@

$(LIBXFDR_XRAY_A): $(LINK_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

# The linker script names files by absolute path (as libc.so does): $(1) is their folder,
# $(2) the script to write.
xfdr_ld_script = printf '%s\n' \
	'/* GNU ld script: -lxfdr links the shared xfdr runtime and, for clang -fxray-instrument' \
	'   programs, the object that hands XRay'"'"'s hidden entry points to it. */' \
	'EXTERN ( xfdr_xray_exe_api )' \
	'GROUP ( $(1)/libxfdr.so.$(SOVERSION) $(1)/libxfdr_xray.a )' >$(2)

$(LIBXFDR_LD): $(LIBXFDR_SO) $(LIBXFDR_XRAY_A) Makefile
	$(call xfdr_ld_script,$(abspath $(@D)),$@)

# The archives depend on the Makefile too: an object taken off a list leaves its archive.
$(LIBREADER_A): $(READER_OBJS) Makefile
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $(filter %.o,$^)

# Not installed: the command's own, built as a library so that tests and fuzz targets link it.
$(LIBANALYSIS_A): $(ANALYSIS_OBJS) Makefile
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $(filter %.o,$^)

# Not installed, as the analysis: the rebuild library and the writer it encodes through.
$(LIBREBUILD_A): $(REBUILD_OBJS) Makefile
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $(filter %.o,$^)

# Not installed, as the analysis: `xfdr record`'s launcher.
$(LIBLAUNCHER_A): $(LAUNCHER_OBJS) Makefile
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $(filter %.o,$^)

$(LIBWRITER_A): $(WRITER_RD_OBJS) Makefile
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $(filter %.o,$^)

# The verbs and what they share, as an archive that unit tests link too; xfdr.c is main().
$(LIBCOMMAND_A): $(COMMAND_OBJS) Makefile
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $(filter %.o,$^)

XFDR_LIBS := $(LIBCOMMAND_A) $(LIBLAUNCHER_A) $(LIBREBUILD_A) $(LIBANALYSIS_A) $(LIBREADER_A) \
	$(LIBWRITER_A)
$(XFDR_BIN): $(OBJ)/rd/command/xfdr.o $(XFDR_LIBS)
	@mkdir -p $(@D)
	$(CC) -pthread -o $@ $< $(XFDR_LIBS) $(SAN_LDFLAGS) $(COMMAND_LIBS) -lm

# ---- tests ---------------------------------------------------------------------------------
$(SUPPORT_A): $(SUPPORT_OBJS) Makefile
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $(filter %.o,$^)

# The runtime's archive comes last: it holds the writer the rebuild library encodes through.
# A test's binary is named after its file, wherever under tests/ the file is.
$(foreach t,$(TEST_SRCS),$(eval $(call test_bins,$(BUILD),$(t)): $(patsubst %.c,$(OBJ)/test/%.o,$(t))))
$(BUILD)/tests/%: $(SUPPORT_A) $(LIBCOMMAND_A) $(LIBLAUNCHER_A) $(LIBREBUILD_A) $(LIBANALYSIS_A) \
		$(LIBREADER_A) $(LIBXFDR_A)
	@mkdir -p $(@D)
	$(CC) -pthread -o $@ $(filter $(OBJ)/test/tests/%.o,$^) $(SUPPORT_A) $(LIBCOMMAND_A) $(LIBLAUNCHER_A) $(LIBREBUILD_A) \
		$(LIBANALYSIS_A) $(LIBREADER_A) $(LIBXFDR_A) $(SAN_LDFLAGS) \
		$(TEST_LIBS) $(RUNTIME_LIBS) $(COMMAND_LIBS) -lm

TEST_ENV := XFDR_BIN=$(abspath $(XFDR_BIN)) XFDR_BUILD=$(abspath $(BUILD)) \
	XFDR_LLVM_XRAY=$(LLVM_XRAY) XFDR_SRC=$(CURDIR)

# ---- benchmarks and long runs ----------------------------------------------------------------
# bench/bench.mk defines `bench` (it needs clang -fxray-instrument for the LLVM peer).
-include bench/bench.mk
# examples/examples.mk defines `examples` and `demo`.
-include examples/examples.mk

# tests/fuzz/fuzz.mk defines `fuzz` (libFuzzer, FUZZ_SECONDS per target) and the targets
# check-fuzz (tests/checks.mk) replays and runs briefly.
-include tests/fuzz/fuzz.mk

# Every check-* rule, and `check` itself, which runs them all.
include tests/checks.mk

# The stress test for STRESS_SECONDS (check runs it for 30 s), then every test in its long form.
STRESS_SECONDS ?= 300
stress: check-build
	$(TEST_ENV) XFDR_STRESS_SECONDS=$(STRESS_SECONDS) sh tests/run_tests.sh $(BUILD)/tests/test_stress_mt
	$(TEST_ENV) XFDR_STRESS=1 sh tests/run_tests.sh \
		$(filter-out %/test_stress_mt,$(UNIT_BINS) $(SYSTEM_BINS))

# ---- install -------------------------------------------------------------------------------
# Paths inside the installed linker script are the final ones ($(PREFIX)), not $(DESTDIR)'s.
LIBDIR  := $(PREFIX)/lib
# Into the running system as root, the loader's cache learns of libxfdr.so.0 at once.
LDCONFIG = @if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi
INSTALLED := bin/xfdr include/xfdr/format.h include/xfdr/reader.h include/xfdr/xfdr.h \
	lib/libxfdr.a lib/libxfdr_xray.a lib/libxfdr_reader.a lib/libxfdr.so.$(VERSION) \
	lib/libxfdr.so.$(SOVERSION) lib/libxfdr.so lib/pkgconfig/xfdr.pc share/man/man1/xfdr.1

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include/xfdr \
		$(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(XFDR_BIN) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 include/xfdr/format.h include/xfdr/reader.h include/xfdr/xfdr.h \
		$(DESTDIR)$(PREFIX)/include/xfdr/
	install -m 644 $(LIBXFDR_A) $(LIBXFDR_XRAY_A) $(LIBREADER_A) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(LIBXFDR_REAL) $(DESTDIR)$(LIBDIR)/
	ln -sf libxfdr.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libxfdr.so.$(SOVERSION)
	$(call xfdr_ld_script,$(LIBDIR),$(DESTDIR)$(LIBDIR)/libxfdr.so)
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' xfdr.pc.in \
		> $(DESTDIR)$(LIBDIR)/pkgconfig/xfdr.pc
	install -m 644 doc/xfdr.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	$(LDCONFIG)

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/,$(INSTALLED))
	-rmdir $(DESTDIR)$(PREFIX)/include/xfdr 2>/dev/null
	$(LDCONFIG)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
