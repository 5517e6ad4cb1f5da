#!/bin/sh
# optimize.sh MODEL DATA OUT: "optimise" a prompt against MODEL over the
# examples in DATA for $CAIRN_PARAM_ROUNDS rounds.
set -eu
. "$(dirname "$0")/model.sh"
model=$1 data=$2 out=$3
rounds=${CAIRN_PARAM_ROUNDS:-3}
prompt="You are a careful assistant."
i=1
while [ "$i" -le "$rounds" ]; do
	score=$(model_call "$model" "$prompt $(cat "$data")")
	prompt="$prompt (round $i: $((score % 97)))"
	echo "round $i: score $((score % 97))" >&2
	i=$((i + 1))
done
printf '{"model": "%s", "rounds": %s, "prompt": "%s"}\n' "$model" "$rounds" "$prompt" > "$out"
