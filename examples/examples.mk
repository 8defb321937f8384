# examples/examples.mk - `make examples`, `make demo`; `make check-examples` is in tests/checks.mk.
# Included by the top-level Makefile; uses its BUILD, CC, LIBXFDR_A, LIBXFDR_SO, RUNTIME_LIBS,
# SAN_LDFLAGS, XFDR_BIN and LLVM_XRAY. Programs are built into $(BUILD)/examples/:
#
#   manual      examples/manual.c, the XFDR_* macros and the C API, linked with libxfdr.a
#   cyg_sort    examples/sort.c with gcc -finstrument-functions only: record it with
#               LD_PRELOAD=libxfdr.so XFDR_OPTIONS=start=1
#   xray_sort   examples/sort.c with clang -fxray-instrument, linked with -lxfdr (the shared
#               runtime; compiler-rt's XRay symbols are hidden, so XRay programs are linked
#               with xfdr, never preloaded); an rpath finds build/lib at run time
#   fentry_sort examples/sort.c with gcc -pg -mfentry -minstrument-return=call (hooks placed
#               after inlining; -pg only when compiling), linked so that __return__ is left
#               to the preloaded runtime: record it with `xfdr record`
#   threads     examples/threads.c with -finstrument-functions only, preloaded like cyg_sort
#   snapshot    examples/snapshot.c, XFDR_SCOPE and xfdr_flush_since(): worker threads save
#               the window of each slowest-so-far request; linked with libxfdr.a
#   crash       examples/crash.c with -finstrument-functions only, preloaded: it dies by
#               SIGSEGV and the trace ends with the crash and its backtrace
#
#   make demo             record cyg_sort and show what was recorded (examples/demo.sh)
#   make check-examples   run every example under xfdr; each trace must pass `xfdr verify`
#                         and `llvm-xray convert` (examples/check.sh)

EXAMPLES_DIR    := $(BUILD)/examples
EXAMPLES_CLANG  ?= clang
EXAMPLES_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -O2 -g -pthread
EXAMPLES_XRAY   := -fxray-instrument -fxray-instruction-threshold=1
EXAMPLES_PROGS  := $(addprefix $(EXAMPLES_DIR)/,manual cyg_sort xray_sort fentry_sort threads snapshot \
	crash)

$(EXAMPLES_DIR)/manual: examples/manual.c include/xfdr/xfdr.h $(LIBXFDR_A)
	@mkdir -p $(@D)
	$(CC) $(EXAMPLES_CFLAGS) -Iinclude -o $@ $< $(LIBXFDR_A) $(SAN_LDFLAGS) $(RUNTIME_LIBS)

$(EXAMPLES_DIR)/cyg_sort: examples/sort.c
	@mkdir -p $(@D)
	$(CC) $(EXAMPLES_CFLAGS) -finstrument-functions -o $@ $<

$(EXAMPLES_DIR)/xray_sort: examples/sort.c $(LIBXFDR_LD)
	@mkdir -p $(@D)
	$(EXAMPLES_CLANG) $(EXAMPLES_CFLAGS) $(EXAMPLES_XRAY) -o $@ $< \
		-L$(BUILD)/lib -lxfdr -Wl,-rpath,'$$ORIGIN/../lib' $(SAN_LDFLAGS)

EXAMPLES_FENTRY := -pg -mfentry -minstrument-return=call
EXAMPLES_PRELOAD_RETURN := -Wl,--unresolved-symbols=ignore-in-object-files \
	-Wl,--export-dynamic-symbol=__return__

$(EXAMPLES_DIR)/fentry_sort: examples/sort.c
	@mkdir -p $(@D)
	$(CC) $(EXAMPLES_CFLAGS) $(EXAMPLES_FENTRY) -c -o $@.o $<
	$(CC) -pthread -o $@ $@.o $(EXAMPLES_PRELOAD_RETURN)

$(EXAMPLES_DIR)/threads: examples/threads.c
	@mkdir -p $(@D)
	$(CC) $(EXAMPLES_CFLAGS) -finstrument-functions -o $@ $<

$(EXAMPLES_DIR)/crash: examples/crash.c
	@mkdir -p $(@D)
	$(CC) $(EXAMPLES_CFLAGS) -O0 -finstrument-functions -o $@ $<

$(EXAMPLES_DIR)/snapshot: examples/snapshot.c include/xfdr/xfdr.h $(LIBXFDR_A)
	@mkdir -p $(@D)
	$(CC) $(EXAMPLES_CFLAGS) -Iinclude -o $@ $< $(LIBXFDR_A) $(SAN_LDFLAGS) $(RUNTIME_LIBS)

examples: $(EXAMPLES_PROGS)

demo: all $(EXAMPLES_DIR)/cyg_sort
	@sh examples/demo.sh $(EXAMPLES_DIR)/cyg_sort $(XFDR_BIN) $(BUILD)/demo
