#!/usr/bin/env bash
# s3-teardown.sh — stop the S3 server started by scripts/s3-setup.sh.
#
# Usage: scripts/s3-teardown.sh [--purge]
#
# Stops only the pid recorded in $S3LOCAL_DIR/run/versitygw.pid (default
# /var/tmp/s3local), and only if /proc/PID/stat still names versitygw, by
# SIGTERM; waits (bounded, 30 s; a zombie counts as gone), then SIGKILL.
# Removes the pid file and the env file. --purge also deletes the stored
# objects (data/), keeping the binary. Idempotent.
set -euo pipefail

DIR=${S3LOCAL_DIR:-/var/tmp/s3local}
RUN=$DIR/run
log() { printf 's3-teardown: %s\n' "$*" >&2; }

purge=0
case ${1:-} in
  "") ;;
  --purge) purge=1 ;;
  -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  *) echo "usage: $0 [--purge]" >&2; exit 2 ;;
esac

alive() {
  local stat comm st
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  comm=${stat#*(}; comm=${comm%)*}
  st=${stat##*) }; st=${st%% *}
  [ "$comm" = versitygw ] && [ "$st" != Z ]
}

if [ -f "$RUN/versitygw.pid" ]; then
  pid=$(cat "$RUN/versitygw.pid")
  if alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 300); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then log "pid $pid ignored SIGTERM: SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; fi
    log "stopped versitygw (pid $pid)"
  else
    log "versitygw (pid $pid) not running"
  fi
  rm -f "$RUN/versitygw.pid"
else
  log "nothing recorded in $RUN: nothing to stop"
fi
rm -f "$DIR/env"
if [ $purge = 1 ]; then
  rm -rf "$DIR/data"
  log "purged $DIR/data"
fi
