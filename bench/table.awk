# bench/table.awk - the table of `make bench` from the lines bench/run.sh collects (the row
# protocol of bench/harness.h, one block per program run: cmd, its lines, wall, end).
#
# Per workload, every row's ns per call, the ns it adds per event to the uninstrumented
# program ("+ns/ev": the row's median less the "call" row's; the floor's and the clocks' own
# cost, as they make no call), that added cost over the floor's and over compiler-rt FDR's
# (row key llvm_fdr), its spread, the trace bytes per call, the events dropped and the whole
# process's wall time. Exit status 1 when a row failed or a recorder lost events.

function add(list, item) { return list == "" ? item : list "; " item }
function fmt(v, p) { return v == "" || v == "-" ? "-" : sprintf("%." p "f", v) }

$1 == "cmd"    { cmds[++ncmd] = sprintf("  run %d: %s", $2, $3); run = $2; nrun_rows = 0 }
$1 == "stderr" { errs[++nerr] = $2 }
$1 == "info" {
	if ($2 == "compiler" && !seen_compiler[$3]++)
		compilers = add(compilers, $3)
	else if ($2 == "pinned")
		pinned = add(pinned, "run " run " " $3)
	else
		info[$2] = $3
}
$1 == "row" {
	r = ++nrow
	key[r] = $2; label[r] = $3; med[r] = $4; lo[r] = $5; hi[r] = $6
	reps[r] = $7; events[r] = $8; note[r] = $9; faults[r] = $10; wl[r] = $11 == "" ? "leaf" : $11
	runof[r] = run; run_rows[run]++; has_rows[wl[r]] = 1
	if ($7 > 0 && !(wl[r] in reps_shown))
		reps_shown[wl[r]] = $7 " x " $8 " events"
	if ($2 == "floor") {
		floor = $4; floor_lo = $5
	} else if ($2 == "call") {
		call[wl[r]] = $4; call_lo[wl[r]] = $5
	}
	else if ($2 == "llvm_fdr")
		fdr_row[wl[r]] = r
}
$1 == "trace"   { t_events[run, $2] = $3; t_bytes[run, $2] = $4; t_drops[run, $2] = $5; t_note[run, $2] = $6 }
$1 == "process" { process[run] = $3 }
$1 == "wall"    { wall[run] = $2 }
$1 == "status"  { failed_run[run] = $2 }

# The ns a row adds per event: its own cost for rows that make no call, else less the call's.
function added(r) {
	if (med[r] == "-")
		return "-"
	if (key[r] == "floor" || key[r] ~ /^clock_/)
		return med[r]
	if (key[r] == "call" || !(wl[r] in call))
		return "-"
	return med[r] - call[wl[r]]
}

# The same from the fastest repetitions: host load only ever adds time, so the minima compare
# rows the way a quiet machine would.
function added_lo(r) {
	if (lo[r] == "-")
		return "-"
	if (key[r] == "floor" || key[r] ~ /^clock_/)
		return lo[r]
	if (key[r] == "call" || !(wl[r] in call_lo))
		return "-"
	return lo[r] - call_lo[wl[r]]
}

function print_row(i,    elided, over, filt, a, a_lo, ratio, ratio_lo, vs_fdr, spread, bpc, drops, proc, pf, expected, k, f, nt) {
	a = added(i)
	ratio = floor > 0 && a != "-" ? fmt(a / floor, 2) : "-"
	a_lo = added_lo(i)
	ratio_lo = floor_lo > 0 && a_lo != "-" ? fmt(a_lo / floor_lo, 2) : "-"
	vs_fdr = "-"
	f = fdr_row[wl[i]]
	if (f != "" && a != "-" && a > 0 && added(f) != "-")
		vs_fdr = sprintf("%.1fx", added(f) / a)
	spread = lo[i] == "-" ? "-" : lo[i] ".." hi[i]
	k = runof[i] SUBSEP key[i]
	expected = (reps[i] + 1) * events[i]
	bpc = drops = "-"
	nt = note[i]
	if (k in t_events) {
		if (t_bytes[k] != "-" && expected > 0)
			bpc = fmt(t_bytes[k] / (expected / 2), 1)
		drops = t_drops[k]
		# xfdr's accounting (bench/trace_count.c): calls elided, records overwritten in ring mode
		elided = match(t_note[k], /elided [0-9]+ calls/) ? substr(t_note[k], RSTART + 7) + 0 : 0
		over = match(t_note[k], /overwritten [0-9]+ events/) ? substr(t_note[k], RSTART + 12) + 0 : 0
		# calls exclude= left out: counted at their entry, each call two events
		filt = match(t_note[k], /filtered [0-9]+ calls/) ? substr(t_note[k], RSTART + 9) + 0 : 0
		if (t_note[k] ~ /^FAILED/)
			nt = add(nt, t_note[k])
		else if (t_note[k] ~ /^filter:/)
			nt = add(nt, "recorded " t_events[k] " of " expected " events (" t_note[k] ")")
		else if (drops != "-" && drops > 0)
			nt = add(nt, "DROPPED " drops " of " expected " events")
		else if (t_events[k] + 2 * elided + over + 2 * filt != expected)
			nt = add(nt, "MISSING " expected - t_events[k] - 2 * elided - over - 2 * filt " of " expected " events")
		else if (elided + over + filt > 0)
			nt = add(nt, "recorded " t_events[k] " of " expected " events" \
				(elided ? ", " elided " calls elided" : "") \
				(over ? ", " over " overwritten (ring)" : "") \
				(filt ? ", " filt " calls left out (exclude=)" : "") ": all accounted for")
		else
			nt = add(nt, "recorded all " expected " events")
	}
	proc = run_rows[runof[i]] == 1 ? (runof[i] in process ? process[runof[i]] : wall[runof[i]]) : "-"
	pf = "-"
	if (faults[i] != "-" && reps[i] > 0)
		pf = sprintf("%.2f", faults[i] * 1000 / (reps[i] * events[i]))
	if (med[i] == "-")
		printf "%-3d %-44s %8s %8s %7s %7s  %-13s %7s %6s %8s %8s %6s  %s\n", i, label[i], "-",
			"-", "-", "-", "-", "-", "-", "-", "-", "-", nt
	else
		printf "%-3d %-44s %8s %8s %7s %7s  %-13s %7s %6s %8s %8s %6s  %s\n", i, label[i],
			key[i] == "floor" || key[i] ~ /^clock_/ ? "-" : fmt(2 * med[i], 2),
			fmt(a, 2), ratio, vs_fdr, spread, ratio_lo, bpc, drops, proc, pf, nt
	if (nt ~ /DROPPED|FAILED|MISSING/ || runof[i] in failed_run)
		bad = bad "\n  row " i ": " label[i] ": " nt
}

END {
	print "xfdr overhead: one event = one function entry or one exit; one call = two events"
	print "command:  " shown
	for (i = 1; i <= ncmd; i++)
		print cmds[i]
	print "machine:  " info["cpu"] "; " info["online_cpus"] " online CPUs"
	print "          rdtscp " info["rdtscp"] "; invariant TSC " info["invariant_tsc"] \
		(info["tsc_hz"] != "" ? "; TSC " info["tsc_hz"] : "")
	print "          " info["kernel"]
	print "compiler: " compilers
	print "pinned:   " pinned
	print "method:   each row's program run " info["processes"] " times, each a new process; per process the"
	print "          median of its repetitions after one warm-up repetition; the row shows the median"
	print "          of those medians and the min..max of every repetition (ns per event);"
	print "          CLOCK_MONOTONIC around each whole repetition"
	print "columns:  ns/call = 2 x median; +ns/ev = ns added per event to the uninstrumented"
	print "          program (floor and clocks: their own cost); x floor = +ns/ev / the floor's;"
	print "          vs FDR = compiler-rt FDR's +ns/ev / this row's; min x fl = x floor from the"
	print "          fastest repetitions (row min - uninstrumented min) / floor min: load only adds time;"
	print "          B/call = trace bytes per call made;"
	print "          dropped = events the recorder reports dropped; process ms = the whole"
	print "          process, start-up and flush included; faults = minor faults per 1000 events"
	for (w = 0; w < 2; w++) {
		wname = w == 0 ? "leaf" : "tree"
		if (!(wname in has_rows))
			continue
		print ""
		print (wname == "leaf" ? "leaf: a noinline leaf called in a loop" : \
			"tree: a recursive binary call tree (bench_tree)") \
			(wname in reps_shown ? ", " reps_shown[wname] " a repetition" : "")
		printf "%-3s %-44s %8s %8s %7s %7s  %-13s %7s %6s %8s %8s %6s  %s\n", "#", "row",
			"ns/call", "+ns/ev", "x floor", "vs FDR", "min..max", "min x fl", "B/call", "dropped",
			"process", "faults", "note"
		for (i = 1; i <= nrow; i++)
			if (wl[i] == wname)
				print_row(i)
	}
	if (nerr > 0) {
		print ""
		print "stderr of the programs (each distinct line once):"
		for (i = 1; i <= nerr; i++)
			print "  " errs[i]
	}
	if (bad != "") {
		print ""
		print "NOT A CLEAN RUN:" bad
		exit 1
	}
}
