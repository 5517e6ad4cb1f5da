#!/usr/bin/env bash
# s3-setup.sh — start a local S3-compatible server for cairn's S3
# remote-cache tests and benchmarks, on loopback only.
#
# Usage: scripts/s3-setup.sh
#
# Server: Versity S3 Gateway (versitygw, Apache-2.0) $S3_VGW_VERSION (v1.7.0),
# posix backend (objects are files under $S3LOCAL_DIR/data, metadata in
# user xattrs), single-account mode, on 127.0.0.1:$S3LOCAL_PORT (7070),
# path-style addressing. Built from its Go module (go mod download + go build
# with its own go.mod) into $S3_VGW_BIN if that binary is missing.
#
# After starting it polls the port until the server answers (at most
# $S3LOCAL_READY_TIMEOUT s, default 60), creates bucket $S3LOCAL_BUCKET
# (cache), and writes to $S3LOCAL_DIR/env the exports a client needs:
# AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL_S3,
# CAIRN_S3_PATH_STYLE=1 and CAIRN_TEST_S3_URL (s3://BUCKET). The credentials
# are test-only values of this loopback server.
#
# Idempotent: a server of ours already running (pid file whose /proc/PID/stat
# names versitygw, not a zombie) is left alone. Refuses to start when the port
# is held by another process. Stop with scripts/s3-teardown.sh.
#
# Knobs: S3LOCAL_DIR (/var/tmp/s3local), S3LOCAL_PORT (7070), S3LOCAL_BUCKET
# (cache), S3_VGW_VERSION (v1.7.0), S3_VGW_BIN ($S3LOCAL_DIR/bin/versitygw),
# S3LOCAL_READY_TIMEOUT (60).
set -euo pipefail

DIR=${S3LOCAL_DIR:-/var/tmp/s3local}
PORT=${S3LOCAL_PORT:-7070}
BUCKET=${S3LOCAL_BUCKET:-cache}
VERSION=${S3_VGW_VERSION:-v1.7.0}
BIN=${S3_VGW_BIN:-$DIR/bin/versitygw}
READY_TIMEOUT=${S3LOCAL_READY_TIMEOUT:-60}
RUN=$DIR/run
ACCESS=localtest
SECRET=localtestsecret
REGION=us-east-1
MODULE=github.com/versity/versitygw

log() { printf 's3-setup: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

case ${1:-} in
  "") ;;
  -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  *) echo "usage: $0" >&2; exit 2 ;;
esac
for v in PORT READY_TIMEOUT; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a number, got '${!v}'"
done
mkdir -p "$DIR/data" "$DIR/logs" "$RUN" "$(dirname "$BIN")"
exec 9>"$RUN/lock"
command -v flock >/dev/null 2>&1 && { flock -w 900 9 || die "another s3-setup/teardown holds $RUN/lock"; }

# ours PID -> true if PID is a live versitygw.
ours() {
  local stat comm st
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  comm=${stat#*(}; comm=${comm%)*}
  st=${stat##*) }; st=${st%% *}
  [ "$comm" = versitygw ] && [ "$st" != Z ]
}

# answers -> true once something accepts connections on the port.
answers() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

write_env() {
  cat >"$DIR/env.tmp" <<ENV
export AWS_ACCESS_KEY_ID=$ACCESS
export AWS_SECRET_ACCESS_KEY=$SECRET
export AWS_REGION=$REGION
export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$PORT
export CAIRN_S3_PATH_STYLE=1
export CAIRN_TEST_S3_URL=s3://$BUCKET
ENV
  mv "$DIR/env.tmp" "$DIR/env"
  cat "$DIR/env"
}

create_bucket() {
  local e=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 code
  code=$(curl -sS -o "$DIR/logs/bucket.out" -w '%{http_code}' --aws-sigv4 "aws:amz:$REGION:s3" \
    --user "$ACCESS:$SECRET" -H "x-amz-content-sha256: $e" -X PUT "http://127.0.0.1:$PORT/$BUCKET") || die "create bucket: curl failed"
  case $code in
    200) log "bucket $BUCKET created" ;;
    409) log "bucket $BUCKET exists" ;;
    *) die "create bucket $BUCKET: HTTP $code: $(head -c 300 "$DIR/logs/bucket.out")" ;;
  esac
}

if [ -f "$RUN/versitygw.pid" ] && ours "$(cat "$RUN/versitygw.pid")"; then
  log "already running (ours, pid $(cat "$RUN/versitygw.pid"))"
  create_bucket
  write_env
  exit 0
fi
answers && die "port $PORT is held by another process; set S3LOCAL_PORT"

command -v curl >/dev/null 2>&1 || {
  log "installing curl"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 curl >/dev/null
}

if [ ! -x "$BIN" ]; then
  log "building versitygw $VERSION from its Go module (a few minutes the first time)"
  # go install pkg@version asks the module proxy for the version list, which
  # it may refuse: build the downloaded module with its own go.mod instead.
  src=$(go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$src" ] || die "go mod download $MODULE@$VERSION failed"
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  cp -r "$src/." "$tmp/"; chmod -R u+w "$tmp"
  (cd "$tmp" && GOFLAGS=-mod=mod go build -o "$BIN.tmp" ./cmd/versitygw) || die "go build versitygw failed"
  mv "$BIN.tmp" "$BIN"
fi

log "starting versitygw on 127.0.0.1:$PORT (data $DIR/data)"
# setsid: the server outlives this script and the CI step's process group;
# 9>&-: it must not hold the setup lock, or every later setup and teardown
# would wait for it.
setsid "$BIN" --access "$ACCESS" --secret "$SECRET" --region "$REGION" --port "127.0.0.1:$PORT" --quiet \
  posix "$DIR/data" >"$DIR/logs/versitygw.log" 2>&1 </dev/null 9>&- &
echo $! >"$RUN/versitygw.pid"
deadline=$((SECONDS + READY_TIMEOUT))
until answers; do
  if ! ours "$(cat "$RUN/versitygw.pid")"; then
    tail -20 "$DIR/logs/versitygw.log" >&2; die "versitygw exited"
  fi
  [ $SECONDS -lt $deadline ] || { tail -20 "$DIR/logs/versitygw.log" >&2; die "versitygw did not answer within ${READY_TIMEOUT}s"; }
  sleep 0.1
done
create_bucket
write_env
