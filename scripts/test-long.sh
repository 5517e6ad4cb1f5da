#!/bin/sh
# The long reliability tier: every test with the full counts of
# RELIABILITY.md (CAIRN_LONG=1), then every fuzz target for FUZZTIME.
# Prints the FIGURE lines the tests log (the figures table of
# RELIABILITY.md) and keeps the whole log in $LONG_LOG.
set -u
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20s}
LONG_LOG=${LONG_LOG:-/tmp/cairn-test-long.log}
cd "$(dirname "$0")/.."
start=$(date +%s)
CAIRN_LONG=1 "$GO" test -v -count=1 -timeout 60m ./... >"$LONG_LOG" 2>&1
rc=$?
grep -h 'FIGURE T' "$LONG_LOG" | sed 's/^ *[a-z_]*\.go:[0-9]*: //' | sort -t' ' -k2,2V
grep -E '^(FAIL|ok|---.FAIL)' "$LONG_LOG" | grep -v '^ok' || true
echo "long tier tests: exit $rc in $(( $(date +%s) - start )) s (log: $LONG_LOG)"
fstart=$(date +%s)
FUZZTIME=$FUZZTIME GO=$GO sh scripts/fuzz.sh
frc=$?
echo "fuzzing: exit $frc in $(( $(date +%s) - fstart )) s"
[ $rc -eq 0 ] && [ $frc -eq 0 ]
