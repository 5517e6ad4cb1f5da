#!/bin/sh
# demo.sh CAIRN: the budget story end to end (make demo-budget runs it).
set -u
cairn=${1:-cairn}
step() { printf '\n$ %s\n' "$*"; "$@"; echo "(exit $?)"; }
step "$cairn" run -j 1
step "$cairn" resume -var call_budget=1
step "$cairn" resume -var call_budget=1 -var run_budget=1
step "$cairn" runs
step cat out/score.txt
