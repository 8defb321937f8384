# bench/hooks.mk - the per-event rows of xfdr's hook mechanisms, each beside the same mechanism
# with an empty handler: what each way in costs, and how much of that is the bare mechanism.
# Included by bench/bench.mk (uses its BENCH_* variables); programs in $(BENCH_DIR)/hooks/.
#
# Per mechanism, in this order, once per workload; bench/callee.c alone is instrumented and the
# loop is bench_loop_workload() (bench/harness.h):
#   noop_cyg          -finstrument-functions (gcc), empty hooks in the program (noop_cyg.c)
#   xfdr_cyg_linked   the same callee, libxfdr.a linked, set up through the C API
#   xfdr_cyg_exclude  xfdr_cyg_linked with the callees left out (exclude=): the hook's call
#                     and its id-cache lookup per event, nothing recorded
#   xfdr_cyg_preload  the same callee, no xfdr in the link: libxfdr.so.0 preloaded, configured
#                     by XFDR_OPTIONS (start=1 at load, flushed at exit)
#   noop_fentry       gcc -pg -mfentry -minstrument-return=call, stubs that only return
#   xfdr_fentry       the same callee, libxfdr.a's __fentry__/__return__
#   xfdr_fentry_exclude  the same with the callees left out
#   noop_xray         clang XRay sleds, patched by compiler-rt, an empty handler
#   xfdr_xray         the same callee, libxfdr.a's XRay handler (xfdr_start() patches)
# The xfdr rows get the buffers of the other xfdr rows and are counted the same way
# ($(BENCH_XFDR_CHECK)); the empty rows record nothing and have no trace line.

BENCH_HOOKS_DIR := $(BENCH_DIR)/hooks
# -pg only when compiling: at link time gcc would add gprof's start-up code (SIGPROF, gmon.out).
# -minstrument-return is gcc's alone: with CC=clang the fentry callee is still built by gcc.
BENCH_GCC ?= gcc
BENCH_FENTRY_FLAGS := -pg -mfentry -minstrument-return=call
# The clang programs link compiler-rt's XRay runtime, which cannot share a program with the
# sanitizers' runtimes: built without SAN's flags, as the LLVM peer is.
BENCH_HOOKS_CLANG_FLAGS := $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(BENCH_FLAGS))
# Every xfdr row's pool, here through the environment: the default mode (ring), as the C API
# rows run; the pool holds every event, so nothing is overwritten or dropped either way.
BENCH_PRELOAD_ENV := LD_PRELOAD=$(abspath $(BUILD))/lib/libxfdr.so.0 \
	XFDR_OPTIONS=start=1:buffer_size=$(BENCH_BUF_BYTES):buffer_max=$(BENCH_BUF_COUNT):output=$(BENCH_DIR)/trace/

# ---- the instrumented callees ------------------------------------------------------------------
$(BENCH_HOOKS_DIR)/callee_cyg.o: bench/callee.c $(BENCH_HDRS)
	@mkdir -p $(@D)
	$(CC) $(BENCH_FLAGS) -finstrument-functions -c $< -o $@

$(BENCH_HOOKS_DIR)/callee_fentry.o: bench/callee.c $(BENCH_HDRS)
	@mkdir -p $(@D)
	$(BENCH_GCC) $(BENCH_FLAGS) $(BENCH_FENTRY_FLAGS) -c $< -o $@

$(BENCH_HOOKS_DIR)/callee_xray.o: bench/callee.c $(BENCH_HDRS)
	@mkdir -p $(@D)
	$(BENCH_CLANG) $(BENCH_HOOKS_CLANG_FLAGS) $(BENCH_XRAY_FLAGS) -c $< -o $@

# ---- gcc programs: -finstrument-functions and fentry ------------------------------------------
BENCH_HOOKS_XFDR_SRCS := bench/harness.c bench/xfdr_row.c bench/bench_xfdr_hooks.c
BENCH_HOOKS_NOOP_SRCS := bench/harness.c bench/bench_hooks.c

$(BENCH_HOOKS_DIR)/noop_cyg: $(BENCH_HOOKS_NOOP_SRCS) bench/noop_cyg.c \
		$(BENCH_HOOKS_DIR)/callee_cyg.o $(BENCH_HDRS)
	@mkdir -p $(@D)
	$(CC) $(BENCH_FLAGS) -DHOOKS_NOOP_CYG -o $@ $(BENCH_HOOKS_NOOP_SRCS) bench/noop_cyg.c \
		$(BENCH_HOOKS_DIR)/callee_cyg.o $(SAN_LDFLAGS)

$(BENCH_HOOKS_DIR)/xfdr_cyg_linked: $(BENCH_HOOKS_XFDR_SRCS) $(BENCH_HOOKS_DIR)/callee_cyg.o \
		$(BENCH_XFDR_HDRS) $(LIBXFDR_A)
	@mkdir -p $(@D) $(BENCH_DIR)/trace
	$(CC) $(BENCH_FLAGS) -DHOOKS_CYG -o $@ $(BENCH_HOOKS_XFDR_SRCS) \
		$(BENCH_HOOKS_DIR)/callee_cyg.o $(LIBXFDR_A) $(SAN_LDFLAGS) $(RUNTIME_LIBS)

# Not linked with xfdr: its hooks resolve to glibc's empty ones until libxfdr.so.0 is preloaded.
$(BENCH_HOOKS_DIR)/xfdr_cyg_preload: $(BENCH_HOOKS_NOOP_SRCS) $(BENCH_HOOKS_DIR)/callee_cyg.o \
		$(BENCH_HDRS)
	@mkdir -p $(@D) $(BENCH_DIR)/trace
	$(CC) $(BENCH_FLAGS) -DHOOKS_CYG_PRELOAD -o $@ $(BENCH_HOOKS_NOOP_SRCS) \
		$(BENCH_HOOKS_DIR)/callee_cyg.o $(SAN_LDFLAGS)

$(BENCH_HOOKS_DIR)/noop_fentry: $(BENCH_HOOKS_NOOP_SRCS) bench/noop_fentry.S \
		$(BENCH_HOOKS_DIR)/callee_fentry.o $(BENCH_HDRS)
	@mkdir -p $(@D)
	$(CC) $(BENCH_FLAGS) -DHOOKS_NOOP_FENTRY -o $@ $(BENCH_HOOKS_NOOP_SRCS) bench/noop_fentry.S \
		$(BENCH_HOOKS_DIR)/callee_fentry.o $(SAN_LDFLAGS)

# __fentry__ and __return__ pull runtime/hooks/fentry.c's object out of libxfdr.a.
$(BENCH_HOOKS_DIR)/xfdr_fentry: $(BENCH_HOOKS_XFDR_SRCS) $(BENCH_HOOKS_DIR)/callee_fentry.o \
		$(BENCH_XFDR_HDRS) $(LIBXFDR_A)
	@mkdir -p $(@D) $(BENCH_DIR)/trace
	$(CC) $(BENCH_FLAGS) -DHOOKS_FENTRY -o $@ $(BENCH_HOOKS_XFDR_SRCS) \
		$(BENCH_HOOKS_DIR)/callee_fentry.o $(LIBXFDR_A) $(SAN_LDFLAGS) $(RUNTIME_LIBS)

# ---- clang programs: XRay sleds (linked by clang -fxray-instrument: compiler-rt's runtime) ----
$(BENCH_HOOKS_DIR)/noop_xray: $(BENCH_HOOKS_NOOP_SRCS) bench/noop_xray.c \
		$(BENCH_HOOKS_DIR)/callee_xray.o $(BENCH_HDRS)
	@mkdir -p $(@D)
	$(BENCH_CLANG) $(BENCH_HOOKS_CLANG_FLAGS) -DHOOKS_NOOP_XRAY -fxray-instrument -o $@ \
		$(BENCH_HOOKS_NOOP_SRCS) bench/noop_xray.c $(BENCH_HOOKS_DIR)/callee_xray.o

# libxfdr.a's XRay hook reaches compiler-rt's hidden entry points through the static link.
$(BENCH_HOOKS_DIR)/xfdr_xray: $(BENCH_HOOKS_XFDR_SRCS) $(BENCH_HOOKS_DIR)/callee_xray.o \
		$(BENCH_XFDR_HDRS) $(LIBXFDR_A)
	@mkdir -p $(@D) $(BENCH_DIR)/trace
	$(BENCH_CLANG) $(BENCH_HOOKS_CLANG_FLAGS) -DHOOKS_XRAY -fxray-instrument -o $@ \
		$(BENCH_HOOKS_XFDR_SRCS) $(BENCH_HOOKS_DIR)/callee_xray.o $(LIBXFDR_A) $(RUNTIME_LIBS)

# ---- the rows -----------------------------------------------------------------------------------
# The exclude rows: the same programs with the workload's callee of bench/callee.c left out by
# exclude=, so each event costs the hook's call and its id-cache lookup and nothing is recorded.
BENCH_EXCLUDE_CALLEES = -O exclude=$(if $(filter tree,$(1)),bench_tree,bench_callee)
BENCH_PROGS += $(addprefix $(BENCH_HOOKS_DIR)/,noop_cyg xfdr_cyg_linked xfdr_cyg_preload \
	noop_fentry xfdr_fentry noop_xray xfdr_xray) $(BENCH_DIR)/trace_count
BENCH_RUNS  += $(foreach w,$(BENCH_WORKLOADS),\
	'$(BENCH_HOOKS_DIR)/noop_cyg $(BENCH_ARGS) -w $(w)' \
	'$(BENCH_HOOKS_DIR)/xfdr_cyg_linked $(BENCH_XFDR_ARGS) -w $(w) $(call BENCH_XFDR_CHECK,xfdr_cyg_linked)' \
	'$(BENCH_HOOKS_DIR)/xfdr_cyg_linked $(BENCH_XFDR_ARGS) -w $(w) $(call BENCH_EXCLUDE_CALLEES,$(w)) -k xfdr_cyg_exclude $(call BENCH_XFDR_CHECK,xfdr_cyg_exclude)' \
	'$(BENCH_PRELOAD_ENV) $(BENCH_HOOKS_DIR)/xfdr_cyg_preload $(BENCH_ARGS) -w $(w) $(call BENCH_XFDR_CHECK,xfdr_cyg_preload)' \
	'$(BENCH_HOOKS_DIR)/noop_fentry $(BENCH_ARGS) -w $(w)' \
	'$(BENCH_HOOKS_DIR)/xfdr_fentry $(BENCH_XFDR_ARGS) -w $(w) $(call BENCH_XFDR_CHECK,xfdr_fentry)' \
	'$(BENCH_HOOKS_DIR)/xfdr_fentry $(BENCH_XFDR_ARGS) -w $(w) $(call BENCH_EXCLUDE_CALLEES,$(w)) -k xfdr_fentry_exclude $(call BENCH_XFDR_CHECK,xfdr_fentry_exclude)' \
	'$(BENCH_HOOKS_DIR)/noop_xray $(BENCH_ARGS) -w $(w)' \
	'$(BENCH_HOOKS_DIR)/xfdr_xray $(BENCH_XFDR_ARGS) -w $(w) $(call BENCH_XFDR_CHECK,xfdr_xray)')
