#!/bin/sh
# score.sh ANSWERS OUT: counts the answers.
set -eu
echo "answers: $(wc -l < "$1" | tr -d ' ')" > "$2"
