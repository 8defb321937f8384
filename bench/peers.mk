# bench/peers.mk - the other tracers in the per-event table, each on both workloads: compiler-rt's
# XRay FDR runtime (twice: recording every call, and as shipped), uftrace and LTTng-UST; and
# `make bench-deps`, which installs the Debian packages of the peers.
# Included by bench/bench.mk after the xfdr rows, so these rows come after them; uses its
# BENCH_* variables and the top Makefile's SUDO and LLVM_XRAY. Only bench/callee.c is
# instrumented, each peer's way; the harness never is.

# ---- the packages: uftrace; LTTng's tools, its UST library (liblttng-ust1 holds
# liblttng-ust-cyg-profile-fast.so.1, the function tracer preloaded) and babeltrace (v1) to
# read its traces. clang and llvm-xray come with `make deps`. Same pattern as `deps`.
BENCH_DEB_PACKAGES := uftrace lttng-tools liblttng-ust1 babeltrace

.PHONY: bench-deps
bench-deps:
	@if dpkg-query -W -f='$${Status}\n' $(BENCH_DEB_PACKAGES) 2>/dev/null | grep -vq 'install ok installed' \
	    || [ $$(dpkg-query -W -f='$${Status}\n' $(BENCH_DEB_PACKAGES) 2>/dev/null | wc -l) -ne $(words $(BENCH_DEB_PACKAGES)) ]; then \
		echo "installing: $(BENCH_DEB_PACKAGES)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(BENCH_DEB_PACKAGES); \
	else echo "bench-deps: all packages present"; fi

# The peers' runtimes and the sanitizers' cannot share a program (XRay's runtime will not link
# with them, a preloaded tracer would come before ASan's), so the peers are built without SAN's
# flags even in a sanitizer build (their timings mean nothing there anyway).
BENCH_PEER_FLAGS := $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(BENCH_FLAGS))

# ---- LLVM's XRay FDR runtime (clang; sleds only in callee.c) --------------------------------
# Two rows: llvm_fdr with func_duration_threshold_us=0 (FDR otherwise erases every call
# shorter than 5 us, i.e. nearly everything here), the row the table compares every other row
# with; llvm_fdr_default with FDR's defaults, what it records as shipped (a "filter:" row).
# Each flushes its file into $(BENCH_FDR_DIR), which bench/fdr_count.sh counts with llvm-xray
# (untimed) and deletes. Buffers of whole MiB, at least a twelfth of the run's records
# (8 bytes each, warm-up included), so the thread fills at most 13 of the 16: llvm-xray 14
# orders more than 16 buffers of a thread wrongly and its account then fails (bench/README.md,
# "Reader verbs"). One switch per MiB instead of xfdr's per 64 KiB costs FDR nothing it pays per
# event.
BENCH_FDR_DIR := $(BENCH_DIR)/fdr-trace
BENCH_FDR_BUF_BYTES := $(shell echo $$(( (($(BENCH_REPS) + 1) * $(BENCH_EVENTS) * 8 / 12 / 1048576 + 1) * 1048576 )))
# $(1): what XRAY_FDR_OPTIONS adds to the shared settings.
BENCH_LLVM_ENV = XRAY_OPTIONS="patch_premain=true xray_mode=xray-fdr verbosity=0 \
xray_logfile_base=$(BENCH_FDR_DIR)/" XRAY_FDR_OPTIONS="buffer_size=$(BENCH_FDR_BUF_BYTES) \
buffer_max=16 grace_period_ms=0 no_file_flush=false$(1)"
BENCH_FDR_FILTER := filter: FDR erases every call shorter than func_duration_threshold_us (5 us)
# $(1): the row's key; $(2): fdr_count.sh's further options.
BENCH_FDR_CHECK = |check| sh bench/fdr_count.sh -k $(1) -m $(BENCH_DIR)/bench_llvm_fdr \
	-x $(LLVM_XRAY) $(2) $(BENCH_FDR_DIR)
BENCH_LLVM_OBJS := $(BENCH_DIR)/llvm/harness.o $(BENCH_DIR)/llvm/bench_llvm_fdr.o \
	$(BENCH_DIR)/llvm/callee_xray.o

$(BENCH_DIR)/llvm/%.o: bench/%.c $(BENCH_HDRS)
	@mkdir -p $(@D)
	$(BENCH_CLANG) $(BENCH_PEER_FLAGS) -c $< -o $@

$(BENCH_DIR)/llvm/callee_xray.o: bench/callee.c $(BENCH_HDRS)
	@mkdir -p $(@D)
	$(BENCH_CLANG) $(BENCH_PEER_FLAGS) $(BENCH_XRAY_FLAGS) -c $< -o $@

$(BENCH_DIR)/bench_llvm_fdr: $(BENCH_LLVM_OBJS)
	@mkdir -p $(BENCH_FDR_DIR)
	$(BENCH_CLANG) -pthread -fxray-instrument -o $@ $^

BENCH_PROGS += $(BENCH_DIR)/bench_llvm_fdr
BENCH_RUNS  += $(foreach w,$(BENCH_WORKLOADS),\
	'$(call BENCH_LLVM_ENV, func_duration_threshold_us=0) $(BENCH_DIR)/bench_llvm_fdr $(BENCH_ARGS) -w $(w) -k llvm_fdr $(call BENCH_FDR_CHECK,llvm_fdr)' \
	'$(call BENCH_LLVM_ENV,) $(BENCH_DIR)/bench_llvm_fdr $(BENCH_ARGS) -w $(w) -k llvm_fdr_default $(call BENCH_FDR_CHECK,llvm_fdr_default,-f "$(BENCH_FDR_FILTER)")')

# ---- uftrace and LTTng-UST: one program, run from outside by the peer's script ----------------
# bench/bench_peer.c measures bench_loop_workload() under -k's key; callee.c is built with -pg
# for uftrace (gcc's mcount calls, which uftrace's preloaded libmcount answers) and with
# -finstrument-functions for LTTng-UST's cyg-profile library. Linked without -pg: mcount then
# comes from libc (gprof's, replaced by libmcount), and no gcrt1.o writes a gmon.out at exit.
# The scripts print the program's row, a process line (the program alone under the tracer) and
# the trace line (counted after it, untimed); see their headers.
BENCH_PEER_DIR := $(BENCH_DIR)/peer

$(BENCH_PEER_DIR)/%.o: bench/%.c $(BENCH_HDRS)
	@mkdir -p $(@D)
	$(CC) $(BENCH_PEER_FLAGS) -c $< -o $@

$(BENCH_PEER_DIR)/callee_pg.o: bench/callee.c $(BENCH_HDRS)
	@mkdir -p $(@D)
	$(CC) $(BENCH_PEER_FLAGS) -pg -c $< -o $@

$(BENCH_PEER_DIR)/callee_cyg.o: bench/callee.c $(BENCH_HDRS)
	@mkdir -p $(@D)
	$(CC) $(BENCH_PEER_FLAGS) -finstrument-functions -c $< -o $@

$(BENCH_DIR)/bench_peer_%: $(BENCH_PEER_DIR)/harness.o $(BENCH_PEER_DIR)/bench_peer.o \
		$(BENCH_PEER_DIR)/callee_%.o
	$(CC) -pthread -o $@ $^

# BENCH_PEERS= leaves them out (make check-bench, on a machine without bench-deps).
BENCH_PEERS ?= uftrace lttng_ust
BENCH_PROGS += $(BENCH_DIR)/bench_peer_pg $(BENCH_DIR)/bench_peer_cyg
BENCH_RUNS  += $(foreach w,$(BENCH_WORKLOADS),\
	$(if $(filter uftrace,$(BENCH_PEERS)),'sh bench/peer_uftrace.sh -k uftrace -- $(BENCH_DIR)/bench_peer_pg $(BENCH_ARGS) -w $(w) -k uftrace') \
	$(if $(filter lttng_ust,$(BENCH_PEERS)),'sh bench/peer_lttng.sh -k lttng_ust -- $(BENCH_DIR)/bench_peer_cyg $(BENCH_ARGS) -w $(w) -k lttng_ust'))
