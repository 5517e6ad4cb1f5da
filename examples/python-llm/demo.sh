#!/bin/sh
# demo.sh CAIRN: the Python story end to end (make demo-python runs it).
set -u
cairn=${1:-cairn}
step() { printf '\n$ %s\n' "$*"; "$@"; echo "(exit $?)"; }
step "$cairn" run -j 1
step "$cairn" logs 'answer["small-1"]' --stderr
step "$cairn" run -j 1 -var small_budget=1
step "$cairn" run -j 1 -var small_budget=1 --force 'answer["large-1"]'
step cat out/score.txt
