#!/bin/sh
# questions.sh OUT: writes ten questions, one per line.
set -eu
: > "$1"
for i in 1 2 3 4 5 6 7 8 9 10; do
  echo "what is $i times 7" >> "$1"
done
