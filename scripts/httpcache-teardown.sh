#!/usr/bin/env bash
# httpcache-teardown.sh — stop the cache servers started by
# scripts/httpcache-setup.sh.
#
# Usage: scripts/httpcache-teardown.sh [--purge]
#
# How: stops only the pids that setup recorded in $HTTPCACHE_DIR/run/
# (default /var/tmp/httpcache/run), and only if /proc/PID/stat still names
# that program: nginx by SIGQUIT to its master (graceful), bazel-remote by
# SIGTERM. Waits (bounded, $HTTPCACHE_STOP_TIMEOUT s, default 30) until each
# is gone; a zombie counts as gone (PID 1 on this machine kind reaps late).
# One that will not go gets SIGKILL. Removes the pid files and the env file.
# --purge also deletes the cached data (nginx/data, nginx/tmp,
# bazel-remote/data), keeping the bazel-remote binary and the logs.
# Idempotent: with nothing running it says so and exits 0.
set -euo pipefail

DIR=${HTTPCACHE_DIR:-/var/tmp/httpcache}
STOP_TIMEOUT=${HTTPCACHE_STOP_TIMEOUT:-30}
RUN=$DIR/run

log() { printf 'httpcache-teardown: %s\n' "$*" >&2; }

purge=0
case ${1:-} in
  "") ;;
  --purge) purge=1 ;;
  -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  *) echo "usage: $0 [--purge]" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "usage: $0 [--purge]" >&2; exit 2; }
[[ $STOP_TIMEOUT =~ ^[0-9]+$ ]] || { log "HTTPCACHE_STOP_TIMEOUT must be a number"; exit 2; }

if [ ! -d "$RUN" ]; then
  log "nothing recorded in $RUN: nothing to stop"
else
  exec 9>"$RUN/lock"
  if command -v flock >/dev/null 2>&1; then
    flock -w 900 9 || { log "another httpcache-setup/teardown holds $RUN/lock"; exit 1; }
  fi
fi

# proc_state PID -> prints "<comm> <state> <pgrp>" from /proc/PID/stat.
proc_state() {
  local stat comm rest st _ppid pgrp
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  comm=${stat#*(}; comm=${comm%)*}
  rest=${stat##*) }
  read -r st _ppid pgrp _ <<<"$rest"
  printf '%s %s %s\n' "$comm" "$st" "$pgrp"
}

# alive PID COMM: the process exists, is called COMM, and is not a zombie.
alive() {
  local st
  st=$(proc_state "$1") || return 1
  case $st in "$2 "[ZXx]" "*) return 1 ;; "$2 "*) return 0 ;; *) return 1 ;; esac
}

# stop NAME PIDFILE COMM SIGNAL
stop() {
  local name=$1 pidfile=$2 comm=$3 sig=$4 pid i pgrp
  if [ ! -e "$pidfile" ]; then
    log "$name: not running (no pid file)"
    return 0
  fi
  pid=$(tr -dc '0-9' <"$pidfile")
  if [ -z "$pid" ] || ! alive "$pid" "$comm"; then
    log "$name: not running (stale pid file ${pid:+for $pid})"
    rm -f "$pidfile"
    return 0
  fi
  log "$name: stopping pid $pid (SIG$sig)"
  kill "-$sig" "$pid" 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
    alive "$pid" "$comm" || break
    sleep 0.1
  done
  if alive "$pid" "$comm"; then
    log "$name: pid $pid still there after ${STOP_TIMEOUT}s; sending SIGKILL"
    pgrp=$(proc_state "$pid" | cut -d' ' -f3) || true
    # Its own process group (setup starts both as session leaders): take
    # nginx's workers along with the master.
    if [ "$pgrp" = "$pid" ]; then kill -KILL -- "-$pid" 2>/dev/null || true; fi
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      alive "$pid" "$comm" || break
      sleep 0.1
    done
    if alive "$pid" "$comm"; then
      log "$name: pid $pid survived SIGKILL"
      return 1
    fi
  fi
  rm -f "$pidfile"
  log "$name: stopped"
}

rc=0
if [ -d "$RUN" ]; then
  stop nginx "$RUN/nginx.pid" nginx QUIT || rc=1
  stop bazel-remote "$RUN/bazel-remote.pid" bazel-remote TERM || rc=1
fi
rm -f "$DIR/env"

if [ "$purge" = 1 ]; then
  if [ "$rc" != 0 ]; then
    log "not purging: a server is still running"
    exit 1
  fi
  log "purging cached data under $DIR (keeping bin/ and logs)"
  rm -rf "$DIR/nginx/data" "$DIR/nginx/tmp" "$DIR/bazel-remote/data"
fi
exit "$rc"
