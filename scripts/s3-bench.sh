#!/usr/bin/env bash
# s3-bench.sh — cairn's S3 remote against rclone copy, side by side, on the
# local S3 server (scripts/s3-setup.sh). Prints one line per transfer:
# tool, shape, direction, seconds, MB/s, peak RSS; then the no-op cost.
#
# Usage: scripts/s3-bench.sh [small|large|noop|all]   (default: all)
#
#   small  2 GiB as 1,000 blobs of 2 MiB (one phase, 1,000 outputs)
#   large  2 GiB as 2 blobs of 1 GiB
#   noop   a no-op run (everything cached locally) with and without the
#          s3 remote configured, best of $BENCH_NOOP_RUNS (20) each
#
# cairn push: `cairn cache push` of a workspace whose phase ran with the
# remote off; cairn pull: `cairn cache pull` into an empty local cache.
# rclone: `rclone copy` of the same files up to, and back from, the same
# bucket (its defaults: 4 transfers, multipart above 200 MiB; with
# --expect-continue-timeout 0, else every upload of 2 MB or more waits a second
# for a 100 Continue that versitygw never sends). Peak RSS from
# /usr/bin/time. Needs rclone (Debian package) and the env file of
# scripts/s3-setup.sh. Scratch space under $BENCH_DIR (/var/tmp/cairn-s3-bench,
# about 8 GiB while the large shape runs), removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
ENVFILE=${S3LOCAL_DIR:-/var/tmp/s3local}/env
[ -f "$ENVFILE" ] || { echo "s3-bench: no $ENVFILE: run scripts/s3-setup.sh" >&2; exit 1; }
# shellcheck disable=SC1090
. "$ENVFILE"
command -v rclone >/dev/null || { echo "s3-bench: rclone missing: apt-get install rclone" >&2; exit 1; }
BENCH_DIR=${BENCH_DIR:-/var/tmp/cairn-s3-bench}
NOOP_RUNS=${BENCH_NOOP_RUNS:-20}
rm -rf "$BENCH_DIR"; mkdir -p "$BENCH_DIR"
trap 'rm -rf "$BENCH_DIR"' EXIT
go build -o "$BENCH_DIR/cairn" ./cmd/cairn
CAIRN=$BENCH_DIR/cairn
bucket=${CAIRN_TEST_S3_URL#s3://}
round=$(date +%s%N)

export RCLONE_CONFIG_BENCH_TYPE=s3 RCLONE_CONFIG_BENCH_PROVIDER=Other \
  RCLONE_CONFIG_BENCH_ENDPOINT=$AWS_ENDPOINT_URL_S3 RCLONE_CONFIG_BENCH_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID \
  RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY RCLONE_CONFIG_BENCH_REGION=$AWS_REGION \
  RCLONE_CONFIG_BENCH_FORCE_PATH_STYLE=true

# measure TOOL SHAPE DIR BYTES -- CMD...: runs CMD, prints the figures.
measure() {
  local tool=$1 shape=$2 dir=$3 bytes=$4; shift 5
  local t0 t1 rss
  t0=$(date +%s.%N)
  /usr/bin/time -f %M -o "$BENCH_DIR/rss" "$@" >"$BENCH_DIR/out" 2>&1 || { cat "$BENCH_DIR/out" >&2; exit 1; }
  t1=$(date +%s.%N)
  rss=$(tail -1 "$BENCH_DIR/rss")
  awk -v tool="$tool" -v shape="$shape" -v dir="$dir" -v b="$bytes" -v t0="$t0" -v t1="$t1" -v rss="$rss" \
    'BEGIN { s = t1 - t0; printf "%-6s %-14s %-4s %7.2f s %7.1f MB/s  peak RSS %4d MiB\n", tool, shape, dir, s, b / s / 1e6, rss / 1024 }'
}

# shape NAME COUNT SIZE_MIB
shape() {
  local name=$1 count=$2 mib=$3 ws=$BENCH_DIR/$1 bytes
  bytes=$((count * mib * 1048576))
  mkdir -p "$ws/out"
  cat >"$ws/experiment.hcl" <<HCL
phase "gen" {
  command = "mkdir -p out && for i in \$(seq 1 $count); do head -c ${mib}M /dev/urandom > out/f\$i.bin; done"
  outputs = ["out"]
  params  = { round = "$round" }
}
HCL
  (cd "$ws" && CAIRN_CACHE_DIR=$BENCH_DIR/cache-$name CAIRN_REMOTE_CACHE=off "$CAIRN" run >/dev/null)
  local remote=s3://$bucket/bench-$round-$name
  (cd "$ws" && CAIRN_CACHE_DIR=$BENCH_DIR/cache-$name CAIRN_REMOTE_CACHE=$remote \
    measure cairn "$name" push "$bytes" -- "$CAIRN" cache push)
  measure rclone "$name" push "$bytes" -- env -u AWS_CA_BUNDLE rclone --config /dev/null --expect-continue-timeout 0 copy "$ws/out" "bench:$bucket/rclone-$round-$name"
  (cd "$ws" && CAIRN_CACHE_DIR=$BENCH_DIR/pull-$name CAIRN_REMOTE_CACHE=$remote \
    measure cairn "$name" pull "$bytes" -- "$CAIRN" cache pull)
  measure rclone "$name" pull "$bytes" -- env -u AWS_CA_BUNDLE rclone --config /dev/null --expect-continue-timeout 0 copy "bench:$bucket/rclone-$round-$name" "$BENCH_DIR/rclone-$name"
  rm -rf "$ws" "$BENCH_DIR/cache-$name" "$BENCH_DIR/pull-$name" "$BENCH_DIR/rclone-$name"
}

# best SECONDS... -> the smallest
best() { printf '%s\n' "$@" | sort -g | head -1; }

noop() {
  local ws=$BENCH_DIR/noop off=() on=()
  mkdir -p "$ws"
  {
    for i in $(seq 1 20); do
      printf 'phase "p%d" {\n  command = "echo %d > p%d.txt"\n  outputs = ["p%d.txt"]\n}\n' "$i" "$i" "$i" "$i"
    done
  } >"$ws/experiment.hcl"
  export CAIRN_CACHE_DIR=$BENCH_DIR/cache-noop
  (cd "$ws" && CAIRN_REMOTE_CACHE=s3://$bucket/bench-$round-noop "$CAIRN" run >/dev/null)
  for _ in $(seq 1 "$NOOP_RUNS"); do
    for mode in off on; do
      local r=off t0 t1
      [ $mode = on ] && r=s3://$bucket/bench-$round-noop
      t0=$(date +%s%N)
      (cd "$ws" && CAIRN_REMOTE_CACHE=$r "$CAIRN" run >/dev/null)
      t1=$(date +%s%N)
      if [ $mode = on ]; then on+=($(( (t1 - t0) / 1000 ))); else off+=($(( (t1 - t0) / 1000 ))); fi
    done
  done
  local a b
  a=$(best "${off[@]}"); b=$(best "${on[@]}")
  awk -v a="$a" -v b="$b" 'BEGIN { printf "no-op run, 20 phases: %.1f ms without a remote, %.1f ms with s3 (best of each): %+.1f%%\n", a / 1000, b / 1000, (b - a) * 100 / a }'
}

case $what in
  small) shape small 1000 2 ;;
  large) shape large 2 1024 ;;
  noop) noop ;;
  all) shape small 1000 2; shape large 2 1024; noop ;;
  *) echo "usage: $0 [small|large|noop|all]" >&2; exit 2 ;;
esac
