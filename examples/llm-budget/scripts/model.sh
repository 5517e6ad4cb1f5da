#!/bin/sh
# model.sh MODEL QUESTION: a stand-in for a paid API call. It answers
# deterministically and reports its cost through $CAIRN_REPORT, as a real
# client would after each request.
set -eu
n=$(echo "$2" | tr -cd '0-9 ' | awk '{print $1 * $2}')
echo "model $1: paid call for \"$2\"" >&2
sleep 0.2 # the API's latency
echo '{"cost": 0.05, "iterations": 1}' >> "$CAIRN_REPORT"
echo "$2 = $n"
