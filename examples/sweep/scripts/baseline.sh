#!/bin/sh
# baseline.sh OUT: the prompt every model starts from.
set -eu
echo "Answer the question carefully." > "$1"
