#!/bin/sh
# Fuzz every Go fuzz target of the module for FUZZTIME each (default 60s),
# one at a time, and print one line per target with its executions,
# corpus growth and whether it found a crasher; exit non-zero if any did.
# The long reliability tier (CAIRN_LONG=1) runs it: make fuzz FUZZTIME=60s.
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context
# deadline exceeded" at the end of -fuzztime, with no failing input: its
# workers' context is cancelled a moment after the deadline is seen
# (go.dev/issue/75804, fixed in Go 1.27). So the fuzzing runs under
# FUZZ_GOTOOLCHAIN (default go1.27.3, which the Go module proxy serves; the
# module itself still builds and tests with its own Go). If that toolchain
# cannot be had, the machine's Go is used, and a target failing that way is
# fuzzed once more: a failure that wrote no failing input and says only
# that is the coordinator's, not the code's.
set -u
FUZZTIME=${FUZZTIME:-60s}
GO=${GO:-go}
FUZZ_GOTOOLCHAIN=${FUZZ_GOTOOLCHAIN-go1.27.3}
cd "$(dirname "$0")/.."
if [ -n "$FUZZ_GOTOOLCHAIN" ]; then
	if v=$(GOTOOLCHAIN=$FUZZ_GOTOOLCHAIN "$GO" version 2>&1); then
		export GOTOOLCHAIN=$FUZZ_GOTOOLCHAIN
		echo "fuzzing with $v"
	else
		echo "fuzz.sh: cannot use GOTOOLCHAIN=$FUZZ_GOTOOLCHAIN, fuzzing with $("$GO" version): $v" >&2
	fi
fi
flakes=0
failed=0
total=0
for file in $(git ls-files '*_test.go'); do
	pkg=./$(dirname "$file")
	for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(f \*testing\.F).*/\1/p' "$file"); do
		total=$((total + 1))
		log=$(mktemp)
		for try in 1 2; do
			nice -n 19 "$GO" test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" -fuzzminimizetime=5s -parallel=1 "$pkg" >"$log" 2>&1
			rc=$?
			# Only the coordinator's race (see above) earns a second try.
			if [ $rc -eq 0 ] || [ $try -eq 2 ] ||
				grep -q 'Failing input written' "$log" ||
				! grep -q '^    context deadline exceeded$' "$log" ||
				[ "$(grep -c -e '^--- FAIL' -e '^    ' "$log")" -ne 2 ]; then
				break
			fi
			flakes=$((flakes + 1))
			echo "fuzz.sh: $pkg.$target: the fuzz coordinator's deadline race (go.dev/issue/75804), no failing input; fuzzing it once more"
		done
		last=$(grep 'fuzz: elapsed' "$log" | tail -1)
		execs=$(echo "$last" | sed -n 's/.*execs: \([0-9]*\).*/\1/p')
		newi=$(echo "$last" | sed -n 's/.*new interesting: \([0-9]*\).*/\1/p')
		crashers=0
		if [ $rc -ne 0 ]; then
			crashers=1
			failed=$((failed + 1))
			# The whole log but the progress lines: a failure without a
			# failing input (a worker judged hung) says why only there.
			grep -v 'fuzz: elapsed' "$log" | tail -40
		fi
		echo "FIGURE T31 target=$pkg.$target fuzztime=$FUZZTIME execs=${execs:-0} new_interesting=${newi:-0} crashers=$crashers"
		rm -f "$log"
	done
done
echo "FIGURE T31 targets=$total crashing_targets=$failed coordinator_retries=$flakes"
[ $failed -eq 0 ]
