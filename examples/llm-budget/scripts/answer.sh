#!/bin/sh
# answer.sh QUESTIONS OUT: asks the model each question through cairn memo,
# so a rerun replays the calls already made instead of paying for them.
set -eu
: > "$2"
while IFS= read -r q; do
  # memo reads its stdin whole (it is part of the key): give it /dev/null
  # so that it does not swallow the rest of the questions.
  cairn memo -- sh scripts/model.sh "$CAIRN_PARAM_MODEL" "$q" >> "$2" < /dev/null
done < "$1"
