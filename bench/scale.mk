# bench/scale.mk - three tables `make bench` prints after the ways table: xfdr in two threads
# at once (bench/two_threads.c), flush throughput against the disk's (bench/flush_rate.c), and a
# call-heavy C program traced in every way and by the peers (bench/real_run.sh). Included by
# bench/bench.mk; uses its BENCH_DIR, BENCH_FLAGS, BENCH_CLANG, BENCH_XRAY_FLAGS and the
# trace_count program. Method: bench/README.md.
#
#   make bench-threads BENCH_THREADS_REPS=7 BENCH_THREADS_EVENTS=2000000
#   make bench-flush   BENCH_FLUSH_MIB="64 256" BENCH_FLUSH_BUFS="65536 1048576"
#   make bench-real    BENCH_REAL_SCALE=200000 BENCH_REAL_REPS=3

# ---- two threads recording at once (bench/two_threads.c) ---------------------------------------
# Each configuration flushes into $(BENCH_DIR)/threads-out/, where trace_count reads the file back
# and deletes it.
BENCH_THREADS_REPS   ?= 7
BENCH_THREADS_EVENTS ?= 2000000

$(BENCH_DIR)/threads: bench/two_threads.c bench/two_threads_callee.c $(BENCH_XFDR_SRCS) $(BENCH_XFDR_HDRS) \
		$(LIBXFDR_A)
	@mkdir -p $(@D)
	$(CC) $(BENCH_FLAGS) -o $@ bench/two_threads.c bench/two_threads_callee.c $(BENCH_XFDR_SRCS) \
		$(LIBXFDR_A) $(SAN_LDFLAGS) $(RUNTIME_LIBS)

BENCH_THREADS_CMD = mkdir -p $(BENCH_DIR)/threads-out && $(BENCH_DIR)/threads \
	-C $(BENCH_DIR)/trace_count -o $(BENCH_DIR)/threads-out/ -r $(BENCH_THREADS_REPS) \
	-n $(BENCH_THREADS_EVENTS)

.PHONY: bench-threads
bench-threads: $(BENCH_DIR)/threads $(BENCH_DIR)/trace_count
	@$(BENCH_THREADS_CMD)

bench: $(BENCH_DIR)/threads $(BENCH_DIR)/trace_count

# ---- flush throughput against the disk's (bench/flush_rate.c) ------------------------------------
# Pools of each size in MiB, in buffers of each size; files go to $(BENCH_DIR)/flush-out/ and
# are deleted after each measurement.
BENCH_FLUSH_MIB  ?= 64 256
BENCH_FLUSH_BUFS ?= 65536 1048576
BENCH_FLUSH_REPS ?= 3

$(BENCH_DIR)/flush_rate: bench/flush_rate.c $(BENCH_XFDR_SRCS) $(BENCH_XFDR_HDRS) $(LIBXFDR_A)
	@mkdir -p $(@D)
	$(CC) $(BENCH_FLAGS) -o $@ bench/flush_rate.c $(BENCH_XFDR_SRCS) $(LIBXFDR_A) $(SAN_LDFLAGS) \
		$(RUNTIME_LIBS)

BENCH_FLUSH_CMD = mkdir -p $(BENCH_DIR)/flush-out && $(BENCH_DIR)/flush_rate \
	-o $(BENCH_DIR)/flush-out -r $(BENCH_FLUSH_REPS) $(foreach m,$(BENCH_FLUSH_MIB),-m $(m)) \
	$(foreach b,$(BENCH_FLUSH_BUFS),-b $(b))

.PHONY: bench-flush
bench-flush: $(BENCH_DIR)/flush_rate
	@$(BENCH_FLUSH_CMD)

bench: $(BENCH_DIR)/flush_rate

# ---- a call-heavy C program in every way (bench/real_workload.c, bench/real_run.sh) ------------
# One program per way, -O2 like a release build; the uninstrumented builds are linked with
# nothing else. For each way: its compiler, its compile flags and its link flags (commas for
# spaces). The XRay builds instrument every function the compiler leaves (instruction
# threshold 1), as in the per-event table; -pg only when compiling (at link time gcc would add
# gprof's gcrt1.o); the FDR build calls FDR's init and flush itself (-DREAL_XRAY_FDR).
BENCH_REAL_SCALE ?= 50000
BENCH_REAL_REPS  ?= 3
BENCH_REAL_DIR   := $(BENCH_DIR)/real
BENCH_REAL_CFLAGS := -O2 -g
BENCH_REAL_LINK  := -L$(abspath $(BUILD)/lib),-lxfdr,-Xlinker,-rpath,-Xlinker,$(abspath $(BUILD)/lib),-pthread
BENCH_REAL_COMMA := ,
BENCH_REAL_SPACE := $(subst ,, )
BENCH_REAL_XRAY  := $(subst $(BENCH_REAL_SPACE),$(BENCH_REAL_COMMA),$(strip $(BENCH_XRAY_FLAGS)))
# name|compiler|compile flags|link flags: the uninstrumented builds first, one per compiler
BENCH_REAL_WAYS = \
	gcc_none|$(CC)|| \
	clang_none|$(BENCH_CLANG)|| \
	xfdr_cyg|$(CC)|-finstrument-functions|$(BENCH_REAL_LINK) \
	xfdr_fentry|$(CC)|-pg,-mfentry,-minstrument-return=call|$(BENCH_REAL_LINK) \
	xfdr_xray|$(BENCH_CLANG)|$(BENCH_REAL_XRAY)|-fxray-instrument,$(BENCH_REAL_LINK) \
	llvm_fdr|$(BENCH_CLANG)|$(BENCH_REAL_XRAY),-DREAL_XRAY_FDR|-fxray-instrument \
	uftrace|$(CC)|-pg| \
	lttng|$(CC)|-finstrument-functions|

$(BENCH_REAL_DIR)/.built: bench/real_workload.c $(LIBXFDR_SO) $(LIBXFDR_LD) $(LIBXFDR_XRAY_A) \
		bench/scale.mk
	@mkdir -p $(@D)
	@set -e; for w in $(foreach w,$(BENCH_REAL_WAYS),'$(w)'); do \
		name=$${w%%|*}; rest=$${w#*|}; cc=$${rest%%|*}; rest=$${rest#*|}; \
		flags=$$(echo "$${rest%%|*}" | tr , ' '); link=$$(echo "$${rest#*|}" | tr , ' '); \
		echo "$$cc $(BENCH_REAL_CFLAGS) $$flags -c bench/real_workload.c; link $$link"; \
		$$cc $(BENCH_REAL_CFLAGS) $$flags -c bench/real_workload.c -o $(@D)/$$name.o; \
		$$cc -o $(@D)/$$name $(@D)/$$name.o $$link; \
	done
	@touch $@

BENCH_REAL_CMD = sh bench/real_run.sh -d $(BENCH_REAL_DIR) -c $(BENCH_DIR)/trace_count \
	-x $(LLVM_XRAY) -s $(BENCH_REAL_SCALE) -r $(BENCH_REAL_REPS) \
	$(foreach w,$(BENCH_REAL_WAYS),$(firstword $(subst |, ,$(w))))

.PHONY: bench-real
bench-real: $(BENCH_REAL_DIR)/.built $(BENCH_DIR)/trace_count
	@$(BENCH_REAL_CMD)

bench: $(BENCH_REAL_DIR)/.built
