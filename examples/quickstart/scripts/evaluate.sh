#!/bin/sh
# evaluate.sh MODEL DATA OUT PROMPT_JSON...: score each prompt on MODEL
# over every example and write the metrics as JSON.
set -eu
. "$(dirname "$0")/model.sh"
model=$1 data=$2 out=$3
shift 3
n=$(wc -l < "$data")
{
	printf '{"model": "%s", "examples": %d, "scores": {' "$model" "$n"
	sep=""
	for p in "$@"; do
		name=$(basename "$p" .json)
		score=$(model_call "$model" "$(cat "$p")")
		printf '%s"%s": %d.%02d' "$sep" "$name" $((score % 100)) $((score / 100 % 100))
		sep=", "
	done
	printf '}}\n'
} > "$out"
