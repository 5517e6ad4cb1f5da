#!/bin/sh
# Fuzz every Go fuzz target of the module for FUZZTIME each (default 60s),
# one at a time, and print one line per target with its executions,
# corpus growth and whether it found a crasher; exit non-zero if any did.
# The long reliability tier (CAIRN_LONG=1) runs it: make fuzz FUZZTIME=60s.
set -u
FUZZTIME=${FUZZTIME:-60s}
GO=${GO:-go}
cd "$(dirname "$0")/.."
failed=0
total=0
for file in $(git ls-files '*_test.go'); do
	pkg=./$(dirname "$file")
	for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(f \*testing\.F).*/\1/p' "$file"); do
		total=$((total + 1))
		log=$(mktemp)
		nice -n 19 "$GO" test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" -fuzzminimizetime=5s -parallel=1 "$pkg" >"$log" 2>&1
		rc=$?
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
echo "FIGURE T31 targets=$total crashing_targets=$failed"
[ $failed -eq 0 ]
