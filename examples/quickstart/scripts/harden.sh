#!/bin/sh
# harden.sh MODEL PROMPT_JSON OUT: make the prompt robust on a small model.
set -eu
. "$(dirname "$0")/model.sh"
model=$1 in=$2 out=$3
base=$(sed -n 's/.*"prompt": "\(.*\)"}/\1/p' "$in")
tweak=$(model_call "$model" "$base")
printf '{"model": "%s", "prompt": "%s Be concise. [%s]"}\n' "$model" "$base" "$((tweak % 1000))" > "$out"
