#!/bin/sh
# evaluate.sh PROMPT OUT: scores a prompt (here: its length in words).
set -eu
echo "$(basename "$1" .txt): $(wc -w < "$1" | tr -d ' ')" > "$2"
