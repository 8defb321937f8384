# bench/bench.mk - `make bench`: xfdr beside the floor and every peer (compiler-rt's XRay FDR,
# uftrace, LTTng-UST), per event on two workloads, then instructions per event, start-up, the
# reader verbs beside llvm-xray, the ways in, two threads, flush throughput and a call-heavy
# program traced by every peer. Included by the top-level Makefile; uses its BUILD, CC,
# BASE_CFLAGS, BENCH_CFLAGS, LIBXFDR_A, RUNTIME_LIBS. Everything is built in $(BUILD)/bench/.
# Method: bench/README.md.
#
#   make bench-deps                     the peers' Debian packages (bench/peers.mk)
#   make bench                          every table, on stdout (about 7 minutes once built)
#   make bench BENCH_REPS=11 BENCH_EVENTS=4000000 BENCH_PROCS=5
#   make bench-events                   the per-event table alone (bench-instr, bench-startup, bench-fork,
#                                       bench-reader, bench-ways, bench-threads, bench-flush,
#                                       bench-real, bench-fidelity: each other table alone)
#
# Each row of the per-event table is one program run by bench/run.sh, one after the other. A
# row is added by building its program and appending its command line to BENCH_RUNS (here,
# bench/hooks.mk, bench/peers.mk); a row whose program is not built yet is listed as
# 'pending:LABEL' so the table keeps its shape.

BENCH_DIR    := $(BUILD)/bench
BENCH_REPS   ?= 7
BENCH_EVENTS ?= 2000000
# Each row's program runs this many times, each a new process (bench/run.sh says why).
BENCH_PROCS  ?= 3
BENCH_ARGS   := -r $(BENCH_REPS) -n $(BENCH_EVENTS)
# Every row runs once per workload (bench/harness.h): the leaf loop, then the call tree.
BENCH_WORKLOADS := leaf tree
# The LLVM peer needs clang: the XRay sleds and compiler-rt's runtime come with it.
BENCH_CLANG  ?= clang
BENCH_XRAY_FLAGS := -fxray-instrument -fxray-instruction-threshold=1

# Both recorders get 64 KiB buffers and enough of them for every event of the run, warm-up
# included: (reps + 1) x events x 8 bytes, at 8000 records a buffer (8192 less the preamble).
BENCH_BUF_BYTES := 65536
BENCH_BUF_COUNT := $(shell echo $$(( ($(BENCH_REPS) + 1) * $(BENCH_EVENTS) / 8000 + 16 )))

BENCH_SRCS_BASE := bench/harness.c bench/callee.c bench/noop_hook.c bench/bench_base.c
BENCH_HDRS      := bench/harness.h
BENCH_FLAGS     := $(BASE_CFLAGS) $(BENCH_CFLAGS)

# ---- floor, clock references, uninstrumented call, no-op hook (built with $(CC)) ------------
$(BENCH_DIR)/bench_base: $(BENCH_SRCS_BASE) $(BENCH_HDRS)
	@mkdir -p $(@D)
	$(CC) $(BENCH_FLAGS) -o $@ $(BENCH_SRCS_BASE) $(SAN_LDFLAGS)

BENCH_PROGS := $(BENCH_DIR)/bench_base
# The floor and the clocks make no call: measured once, with the leaf.
BENCH_RUNS  := $(foreach k,floor clock_rdtscp clock_getcpu,'$(BENCH_DIR)/bench_base $(BENCH_ARGS) -w leaf -k $(k)')
BENCH_RUNS  += $(foreach w,$(BENCH_WORKLOADS),$(foreach k,call hook,\
	'$(BENCH_DIR)/bench_base $(BENCH_ARGS) -w $(w) -k $(k)'))

# ---- xfdr through XFDR_ENTER/XFDR_EXIT (built with $(CC), linked with libxfdr.a) ------------
# Twice: with the clock xfdr picks here (clock=auto) and forced to clock=rdtsc, what the
# target VMs without rdtscp pay (rdtsc + the CPU from the rseq area, or sched_getcpu). Each
# run flushes into $(BENCH_DIR)/trace, counts the records with libxfdr_reader, and deletes
# the file.
BENCH_XFDR_SRCS := bench/harness.c bench/xfdr_row.c bench/callee.c
BENCH_XFDR_HDRS := $(BENCH_HDRS) bench/xfdr_row.h include/xfdr/xfdr.h include/xfdr/reader.h \
		runtime/pool/pool.h runtime/pool/pool_types.h
BENCH_XFDR_ARGS := $(BENCH_ARGS) -b $(BENCH_BUF_BYTES) -m $(BENCH_BUF_COUNT) -o $(BENCH_DIR)/trace
# Appended to an xfdr row's command: count what it flushed into $(BENCH_DIR)/trace (the
# row's trace line; untimed), then delete it. $(1): the row's key.
BENCH_XFDR_CHECK = |check| $(BENCH_DIR)/trace_count -d $(1) $(BENCH_DIR)/trace

$(BENCH_DIR)/trace_count: bench/trace_count.c include/xfdr/reader.h $(LIBREADER_A)
	@mkdir -p $(@D)
	$(CC) $(BENCH_FLAGS) -o $@ bench/trace_count.c $(LIBREADER_A) $(SAN_LDFLAGS)

$(BENCH_DIR)/bench_xfdr_manual: $(BENCH_XFDR_SRCS) bench/bench_xfdr_manual.c $(BENCH_XFDR_HDRS) \
		$(LIBXFDR_A) $(LIBREADER_A)
	@mkdir -p $(@D)/trace
	$(CC) $(BENCH_FLAGS) -o $@ $(BENCH_XFDR_SRCS) bench/bench_xfdr_manual.c \
		$(LIBREADER_A) $(LIBXFDR_A) $(SAN_LDFLAGS) $(RUNTIME_LIBS)

BENCH_PROGS += $(BENCH_DIR)/bench_xfdr_manual $(BENCH_DIR)/trace_count
# Then the flight-recorder features, each in a row of its own: ring mode wrapping around a
# pool of 64 buffers all the time (every buffer reused: the newest 4 MiB kept, the rest
# counted as overwritten), and short-call elision (every call here is shorter than 5 us:
# each entry is erased again at its exit, and counted).
# And mode=stream through the default pool (256 buffers, 16 MiB): the writer thread writes
# every buffer to the file as it fills, so the row holds the sustained rate a stream records
# at without a drop (the table marks any drop; trace_count counts every event in the file).
# 64 buffers (4 MiB, about 10 ms of this loop) dropped a few thousand events in one process
# of three on the Intel VM: the writer's nap and the page cache's writeback outlast them.
BENCH_RING_ARGS := $(BENCH_ARGS) -b $(BENCH_BUF_BYTES) -m 64 -o $(BENCH_DIR)/trace -O mode=ring
BENCH_STREAM_ARGS := $(BENCH_ARGS) -b $(BENCH_BUF_BYTES) -m 256 -o $(BENCH_DIR)/trace -O mode=stream
BENCH_RUNS  += $(foreach w,$(BENCH_WORKLOADS),\
	'$(BENCH_DIR)/bench_xfdr_manual $(BENCH_XFDR_ARGS) -w $(w) $(call BENCH_XFDR_CHECK,xfdr_manual)' \
	'$(BENCH_DIR)/bench_xfdr_manual $(BENCH_XFDR_ARGS) -w $(w) -c rdtsc -k xfdr_manual_rdtsc $(call BENCH_XFDR_CHECK,xfdr_manual_rdtsc)' \
	'$(BENCH_DIR)/bench_xfdr_manual $(BENCH_RING_ARGS) -w $(w) -k xfdr_ring $(call BENCH_XFDR_CHECK,xfdr_ring)' \
	'$(BENCH_DIR)/bench_xfdr_manual $(BENCH_STREAM_ARGS) -w $(w) -k xfdr_stream $(call BENCH_XFDR_CHECK,xfdr_stream)' \
	'$(BENCH_DIR)/bench_xfdr_manual $(BENCH_XFDR_ARGS) -w $(w) -O func_duration_threshold_us=5 -k xfdr_elide $(call BENCH_XFDR_CHECK,xfdr_elide)')

# ---- xfdr through its hooks (-finstrument-functions, fentry, XRay), each beside an empty handler
# bench/hooks.mk: the rows come before the LLVM peer's.
include bench/hooks.mk

# ---- the peers: compiler-rt's XRay FDR, uftrace, LTTng-UST (and `make bench-deps`) ----------
# bench/peers.mk: their rows come after xfdr's.
include bench/peers.mk

# ---- start-up: xfdr_init() and pool population, beside the old MAP_POPULATE ------------------
# Its own table, printed after the per-event one (bench/startup.c prints it itself). It maps up
# to 4 GiB, one pool at a time, never while another program of the benchmark runs.
BENCH_STARTUP_REPS ?= 3

$(BENCH_DIR)/startup: bench/startup.c include/xfdr/xfdr.h runtime/pool/pool.h \
		runtime/pool/pool_types.h $(LIBXFDR_A)
	@mkdir -p $(@D)
	$(CC) $(BENCH_FLAGS) -o $@ bench/startup.c $(LIBXFDR_A) $(SAN_LDFLAGS) $(RUNTIME_LIBS)

# ---- fork children that record nothing, beside a parent without xfdr (bench/fork_cost.c) ----
BENCH_FORK_REPS ?= 9
BENCH_FORK_CMD = $(BENCH_DIR)/fork_cost -r $(BENCH_FORK_REPS)

$(BENCH_DIR)/fork_cost: bench/fork_cost.c include/xfdr/xfdr.h $(LIBXFDR_A)
	@mkdir -p $(@D)
	$(CC) $(BENCH_FLAGS) -o $@ bench/fork_cost.c $(LIBXFDR_A) $(SAN_LDFLAGS) $(RUNTIME_LIBS)

# ---- the targets ------------------------------------------------------------------------------
# Exit status 1 when a table reports a failure; every table is printed in full either way.
BENCH_EVENTS_CMD = sh bench/run.sh -p $(BENCH_PROCS) 'make $(strip $(MAKEOVERRIDES) $(MAKECMDGOALS))' \
	$(BENCH_RUNS)

.PHONY: bench bench-events bench-startup bench-fork
bench-events: all $(BENCH_PROGS)
	@$(BENCH_EVENTS_CMD)

bench: all $(BENCH_PROGS) $(BENCH_DIR)/startup $(BENCH_DIR)/fork_cost
	@status=0; \
	$(BENCH_EVENTS_CMD) || status=1; \
	echo; \
	$(BENCH_INSTR_CMD) || status=1; \
	echo; \
	$(BENCH_DIR)/startup -r $(BENCH_STARTUP_REPS) || status=1; \
	echo; \
	$(BENCH_FORK_CMD) || status=1; \
	echo; \
	$(BENCH_READER_CMD) || status=1; \
	$(BENCH_READER_BIG_CMD) || status=1; \
	$(BENCH_READER_PROG_CMD) || status=1; \
	echo; \
	$(BENCH_WAYS_CMD) || status=1; \
	echo; \
	$(BENCH_THREADS_CMD) || status=1; \
	echo; \
	$(BENCH_FLUSH_CMD) || status=1; \
	echo; \
	$(BENCH_REAL_CMD) || status=1; \
	echo; \
	$(BENCH_FIDELITY_CMD) || status=1; \
	exit $$status

# ---- the recorder's time inside the calls it records (bench/fidelity.sh) ----------------------
# bench/fidelity_prog.c (8 threads x 100 calls of an empty function) with -finstrument-functions
# and libxfdr.so, recorded BENCH_FIDELITY_REPS times; bench/fidelity_read.c reads each trace.
# `make bench` prints it last.
BENCH_FIDELITY_REPS ?= 5
BENCH_FIDELITY_CMD = sh bench/fidelity.sh $(BENCH_DIR) $(BENCH_FIDELITY_REPS)

$(BENCH_DIR)/fidelity_prog: bench/fidelity_prog.c $(LIBXFDR_LD)
	@mkdir -p $(@D)
	$(CC) -O2 -g -finstrument-functions -o $@ bench/fidelity_prog.c \
		-L$(abspath $(BUILD)/lib) -lxfdr -Wl,-rpath,$(abspath $(BUILD)/lib) -pthread $(SAN_LDFLAGS)

$(BENCH_DIR)/fidelity_read: bench/fidelity_read.c include/xfdr/reader.h $(LIBREADER_A)
	@mkdir -p $(@D)
	$(CC) $(BENCH_FLAGS) -o $@ bench/fidelity_read.c $(LIBREADER_A) $(SAN_LDFLAGS)

.PHONY: bench-fidelity
bench-fidelity: $(BENCH_DIR)/fidelity_prog $(BENCH_DIR)/fidelity_read
	@$(BENCH_FIDELITY_CMD)

bench: $(BENCH_DIR)/fidelity_prog $(BENCH_DIR)/fidelity_read

bench-startup: $(BENCH_DIR)/startup
	@$(BENCH_DIR)/startup -r $(BENCH_STARTUP_REPS)

bench-fork: $(BENCH_DIR)/fork_cost
	@$(BENCH_FORK_CMD)

# ---- instructions per event: the per-event rows again, under callgrind (bench/instr.sh) ------
# Repeatable where timings are not; `make bench` prints it after the per-event table.
BENCH_INSTR_EVENTS ?= 100000
BENCH_INSTR_CMD = sh bench/instr.sh $(BENCH_INSTR_EVENTS) $(BENCH_RUNS)

.PHONY: bench-instr
bench-instr: all $(BENCH_PROGS)
	@$(BENCH_INSTR_CMD)

# ---- reader verbs: xfdr beside llvm-xray on one 100 MiB+ trace (bench/README.md) ---------------
# `make bench-reader` prints this table alone; `make bench` prints it last. The trace is
# recorded once by bench/gen_big_trace.c (libxfdr, XFDR_ENTER/XFDR_EXIT) and kept in
# $(BENCH_DIR)/reader/ under a name holding its shape; it is recorded again only when the
# generator or libxfdr changes. The defaults give a file every llvm-xray 14 verb reads
# correctly (see the README): 2 threads, 13 buffers each of 4 MiB, 108 MiB with the drop buffer.
#
# A second table follows: xfdr's verbs alone, one run each, on a 1 GiB trace of the same shape
# (BENCH_BIG_TRACE_BUFS buffers a thread: 128, 1 GiB; kept in $(BENCH_DIR)/reader-big/), where
# what matters is that memory stays flat (llvm-xray would need about 20 GB). BENCH_BIG_TRACE_BUFS=0
# leaves it out. Its calls are random: nearly every one has a stack of its own, the worst case
# for `stack` and `flame`. A third table times the analysis verbs on a 1 GiB trace shaped as a
# program's (gen_big_trace -S program: each function calls its own few; about 200 k distinct
# stacks; kept in $(BENCH_DIR)/reader-program/), also left out by BENCH_BIG_TRACE_BUFS=0.
#
#   make bench-reader BENCH_READER_REPS=5 BENCH_READER_ROW_S=60   more runs per row
#   make bench-reader BENCH_TRACE_THREADS=4                        llvm-xray account then fails
BENCH_TRACE_THREADS ?= 2
BENCH_TRACE_BUF     ?= 4194304
BENCH_TRACE_BUFS    ?= 13
BENCH_READER_REPS      ?= 3
BENCH_READER_XRAY_REPS ?= 1
BENCH_READER_ROW_S     ?= 20
BENCH_BIG_TRACE_BUFS   ?= 128
BENCH_TRACE := $(BENCH_DIR)/reader/trace-t$(BENCH_TRACE_THREADS)-b$(BENCH_TRACE_BUF)-n$(BENCH_TRACE_BUFS).xray
BENCH_TRACE_GEN := $(BENCH_DIR)/gen_big_trace -t $(BENCH_TRACE_THREADS) -b $(BENCH_TRACE_BUF) \
	-n $(BENCH_TRACE_BUFS)

$(BENCH_DIR)/gen_big_trace: bench/gen_big_trace.c include/xfdr/xfdr.h include/xfdr/format.h \
		$(LIBXFDR_A)
	@mkdir -p $(@D)
	$(CC) $(BENCH_FLAGS) -o $@ bench/gen_big_trace.c $(LIBXFDR_A) $(SAN_LDFLAGS) $(RUNTIME_LIBS)

$(BENCH_DIR)/reader_time: bench/reader_time.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_FLAGS) -o $@ bench/reader_time.c $(SAN_LDFLAGS)

# Written under a temporary name, so an interrupted run never leaves a partial trace cached.
$(BENCH_TRACE): $(BENCH_DIR)/gen_big_trace
	@mkdir -p $(@D)
	@rm -f $(@D)/trace-*.xray $(@D)/trace-*.xray.map $(@D)/*.part-gen*
	$(BENCH_TRACE_GEN) -o $@.tmp
	mv $@.tmp.map $@.map && mv $@.tmp $@

BENCH_BIG_TRACE := $(BENCH_DIR)/reader-big/trace-t$(BENCH_TRACE_THREADS)-b$(BENCH_TRACE_BUF)-n$(BENCH_BIG_TRACE_BUFS).xray
BENCH_BIG_TRACE_GEN := $(BENCH_DIR)/gen_big_trace -t $(BENCH_TRACE_THREADS) -b $(BENCH_TRACE_BUF) \
	-n $(BENCH_BIG_TRACE_BUFS)

$(BENCH_BIG_TRACE): $(BENCH_DIR)/gen_big_trace
	@mkdir -p $(@D)
	@rm -f $(@D)/trace-*.xray $(@D)/trace-*.xray.map $(@D)/*.part-gen*
	$(BENCH_BIG_TRACE_GEN) -o $@.tmp
	mv $@.tmp.map $@.map && mv $@.tmp $@

BENCH_PROG_TRACE := $(BENCH_DIR)/reader-program/trace-t$(BENCH_TRACE_THREADS)-b$(BENCH_TRACE_BUF)-n$(BENCH_BIG_TRACE_BUFS).xray
BENCH_PROG_TRACE_GEN := $(BENCH_BIG_TRACE_GEN) -S program

$(BENCH_PROG_TRACE): $(BENCH_DIR)/gen_big_trace
	@mkdir -p $(@D)
	@rm -f $(@D)/trace-*.xray $(@D)/trace-*.xray.map $(@D)/*.part-gen*
	$(BENCH_PROG_TRACE_GEN) -o $@.tmp
	mv $@.tmp.map $@.map && mv $@.tmp $@

BENCH_READER_DEPS := $(XFDR_BIN) $(BENCH_DIR)/reader_time $(BENCH_TRACE) \
	$(if $(filter-out 0,$(BENCH_BIG_TRACE_BUFS)),$(BENCH_BIG_TRACE) $(BENCH_PROG_TRACE))
BENCH_READER_ARGS = -x $(XFDR_BIN) -l $(LLVM_XRAY) -t $(BENCH_DIR)/reader_time \
	-s $(BENCH_READER_ROW_S)
# The two tables; the second (the 1 GiB trace) a command that does nothing when left out.
BENCH_READER_CMD = sh bench/reader_verbs.sh $(BENCH_READER_ARGS) -n $(BENCH_READER_REPS) \
	-N $(BENCH_READER_XRAY_REPS) \
	-d 'recorded by: $(BENCH_TRACE_GEN) (bench/gen_big_trace.c)' $(BENCH_TRACE)
BENCH_READER_BIG_CMD = $(if $(filter-out 0,$(BENCH_BIG_TRACE_BUFS)),echo && \
	sh bench/reader_verbs.sh $(BENCH_READER_ARGS) -X -n 1 \
	-d 'recorded by: $(BENCH_BIG_TRACE_GEN) (bench/gen_big_trace.c)' $(BENCH_BIG_TRACE),true)
BENCH_READER_PROG_CMD = $(if $(filter-out 0,$(BENCH_BIG_TRACE_BUFS)),echo && \
	sh bench/reader_verbs.sh $(BENCH_READER_ARGS) -A -n 1 \
	-d 'recorded by: $(BENCH_PROG_TRACE_GEN) (bench/gen_big_trace.c)' $(BENCH_PROG_TRACE),true)

.PHONY: bench-reader
bench-reader: $(BENCH_READER_DEPS)
	@status=0; $(BENCH_READER_CMD) || status=1; $(BENCH_READER_BIG_CMD) || status=1; \
	$(BENCH_READER_PROG_CMD) || status=1; \
	exit $$status

# Run by `make bench` after its two tables (the recipe of `bench` above calls it).
bench: $(BENCH_READER_DEPS)

# ---- the ways in, side by side on one workload (bench/ways_run.sh; `make bench-ways`) ---------
# bench/ways_workload.c (a small interpreter whose helpers get inlined) built in each way of
# instrumenting C, every instrumented build linked with -lxfdr (the shared runtime), run under
# xfdr with a pool large enough for every event; bench/ways_run.sh prints events recorded, the
# interpretation's time idle and recording, ns added per event against the uninstrumented build
# and against the same build idle, and whether the .map names the functions. `make bench` prints it last (about 25 s).
#
#   make bench-ways BENCH_WAYS_ITERS=200000 BENCH_WAYS_REPS=5
BENCH_WAYS_ITERS ?= 300000
BENCH_WAYS_REPS  ?= 5
BENCH_WAYS_DIR   := $(BENCH_DIR)/ways
BENCH_WAYS_CFLAGS := -O2 -g
BENCH_WAYS_LINK  := -L$(abspath $(BUILD)/lib) -lxfdr -Wl,-rpath,$(abspath $(BUILD)/lib) -pthread
# name|compiler|instrumenting flags, separated by commas
BENCH_WAYS := \
	gcc_none|$(CC)| \
	gcc_cyg|$(CC)|-finstrument-functions \
	gcc_fentry|$(CC)|-pg,-mfentry,-minstrument-return=call \
	clang_cyg|$(BENCH_CLANG)|-finstrument-functions \
	clang_cyg_after_inlining|$(BENCH_CLANG)|-finstrument-functions-after-inlining \
	clang_xray|$(BENCH_CLANG)|-fxray-instrument \
	clang_xray_t1|$(BENCH_CLANG)|-fxray-instrument,-fxray-instruction-threshold=1

# One program per way; -pg only when compiling (at link time gcc adds gprof's gcrt1.o). The
# uninstrumented build is not linked with xfdr at all.
$(BENCH_WAYS_DIR)/.built: bench/ways_workload.c $(LIBXFDR_SO) $(LIBXFDR_LD) $(LIBXFDR_XRAY_A) \
		bench/bench.mk
	@mkdir -p $(@D)
	@set -e; for w in $(foreach w,$(BENCH_WAYS),'$(w)'); do \
		name=$${w%%|*}; rest=$${w#*|}; cc=$${rest%%|*}; \
		flags=$$(echo "$${rest#*|}" | tr , ' '); \
		link="$(BENCH_WAYS_LINK)"; [ -n "$$flags" ] || link=; \
		case "$$flags" in *xray*) link="$$flags $$link";; esac; \
		echo "$$cc $(BENCH_WAYS_CFLAGS) $$flags -c bench/ways_workload.c; link $$link"; \
		$$cc $(BENCH_WAYS_CFLAGS) $$flags -c bench/ways_workload.c -o $(@D)/$$name.o; \
		$$cc -o $(@D)/$$name $(@D)/$$name.o $$link; \
	done
	@touch $@

BENCH_WAYS_CMD = sh bench/ways_run.sh -d $(BENCH_WAYS_DIR) -c $(BENCH_DIR)/trace_count -n $(BENCH_WAYS_ITERS) \
	-r $(BENCH_WAYS_REPS) $(foreach w,$(BENCH_WAYS),$(firstword $(subst |, ,$(w))))

.PHONY: bench-ways
bench-ways: $(BENCH_WAYS_DIR)/.built $(BENCH_DIR)/trace_count
	@$(BENCH_WAYS_CMD)

# Run by `make bench` after the reader table (the recipe of `bench` above calls it).
bench: $(BENCH_WAYS_DIR)/.built $(BENCH_DIR)/trace_count

# ---- two threads, flush throughput, a call-heavy program in every way (bench/scale.mk) --------
include bench/scale.mk
