#!/bin/sh
# prepare.sh RAW_DIR OUT: one JSON line per distinct example, sorted.
set -eu
raw=$1 out=$2
cat "$raw"/*.txt | LC_ALL=C sort -u | awk '{ gsub(/"/, "\\\""); printf "{\"id\": %d, \"text\": \"%s\"}\n", NR, $0 }' > "$out"
echo "prepare: $(wc -l < "$out") examples" >&2
