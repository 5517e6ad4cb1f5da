#!/usr/bin/env bash
# httpcache-setup.sh — start local Bazel-HTTP-cache servers for cairn's
# remote-cache tests, on loopback only.
#
# Usage: scripts/httpcache-setup.sh [all|nginx|bazel-remote]   (default: all)
#
#   nginx         nginx with WebDAV PUT on 127.0.0.1:$HTTPCACHE_NGINX_PORT (8181):
#                 GET/HEAD/PUT/DELETE on /ac/<64 hex> and /cas/<64 hex>,
#                 /status answers "ok". Opaque bytes; checks no hashes.
#                 Installed from Debian (nginx-light, else nginx) if missing.
#   bazel-remote  bazel-remote v2.6.1 on 127.0.0.1:$HTTPCACHE_BR_PORT (8282),
#                 no gRPC, AC validation off, 5 GB max. Built from its Go
#                 module (go mod download + go build with its own go.mod) into
#                 $HTTPCACHE_BR_BIN if that binary is missing.
#
# How: each server runs as its own instance under $HTTPCACHE_DIR
# (default /var/tmp/httpcache): nginx/{nginx.conf,data,tmp,logs},
# bazel-remote/{data,logs}, pids in run/. After starting, it polls /status
# until the server answers (at most $HTTPCACHE_READY_TIMEOUT s, default 60),
# then writes one `export HTTPCACHE_…_URL=…` line per running server to
# $HTTPCACHE_DIR/env and prints them.
#
# Idempotent: a server of ours that is already running (pid file whose
# /proc/PID/stat names the right program in a state other than Z) is left
# alone, unless its config/flags changed, in which case it is restarted.
# Refuses to start when the port is held by a process that is not ours.
# Exits non-zero, with the tail of the server's log, if a server does not
# come up. Stop with scripts/httpcache-teardown.sh.
#
# Knobs: HTTPCACHE_DIR, HTTPCACHE_NGINX_PORT, HTTPCACHE_BR_PORT,
# HTTPCACHE_BR_VERSION (v2.6.1), HTTPCACHE_BR_BIN ($HTTPCACHE_DIR/bin/bazel-remote),
# HTTPCACHE_BR_MAX_SIZE_GB (5), HTTPCACHE_READY_TIMEOUT (60),
# HTTPCACHE_NGINX_BIN (nginx from PATH or /usr/sbin/nginx).
set -euo pipefail

DIR=${HTTPCACHE_DIR:-/var/tmp/httpcache}
NGINX_PORT=${HTTPCACHE_NGINX_PORT:-8181}
BR_PORT=${HTTPCACHE_BR_PORT:-8282}
BR_VERSION=${HTTPCACHE_BR_VERSION:-v2.6.1}
BR_BIN=${HTTPCACHE_BR_BIN:-$DIR/bin/bazel-remote}
BR_MAX_SIZE_GB=${HTTPCACHE_BR_MAX_SIZE_GB:-5}
READY_TIMEOUT=${HTTPCACHE_READY_TIMEOUT:-60}
RUN=$DIR/run
BR_MODULE=github.com/buchgr/bazel-remote/v2

log() { printf 'httpcache-setup: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() { echo "usage: $0 [all|nginx|bazel-remote]" >&2; exit 2; }
[ $# -le 1 ] || usage
case ${1:-all} in
  all) want_nginx=1; want_br=1 ;;
  nginx) want_nginx=1; want_br=0 ;;
  bazel-remote) want_nginx=0; want_br=1 ;;
  -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  *) usage ;;
esac
for v in NGINX_PORT BR_PORT READY_TIMEOUT BR_MAX_SIZE_GB; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a number, got '${!v}'"
done
[ "$NGINX_PORT" != "$BR_PORT" ] || die "nginx and bazel-remote ports are both $NGINX_PORT"
case $DIR in /*) ;; *) die "HTTPCACHE_DIR must be absolute, got '$DIR'" ;; esac
case $BR_BIN in /*) ;; *) BR_BIN=$PWD/$BR_BIN ;; esac

mkdir -p "$RUN"
# One setup/teardown at a time (a fresh bazel-remote build takes minutes).
exec 9>"$RUN/lock"
if command -v flock >/dev/null 2>&1; then
  flock -w 900 9 || die "another httpcache-setup/teardown holds $RUN/lock"
fi

# ---- process helpers -------------------------------------------------------

# proc_state PID -> prints "<comm> <state>" from /proc/PID/stat; fails if gone.
proc_state() {
  local stat comm rest
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  comm=${stat#*(}; comm=${comm%)*}
  rest=${stat##*) }
  printf '%s %s\n' "$comm" "${rest%% *}"
}

# running_ours PIDFILE COMM -> prints the pid if the pid file names a live
# (not zombie) process called COMM.
running_ours() {
  local pid st
  [ -s "$1" ] || return 1
  pid=$(tr -dc '0-9' <"$1")
  [ -n "$pid" ] || return 1
  st=$(proc_state "$pid") || return 1
  case $st in "$2 Z"|"$2 X"|"$2 x") return 1 ;; "$2 "*) echo "$pid" ;; *) return 1 ;; esac
}

# stop_pid PID COMM SIGNAL: signal, then wait (bounded) until gone or zombie;
# escalate to SIGKILL (of its process group, when it leads one) if it will not go.
stop_pid() {
  local pid=$1 comm=$2 sig=$3 i st pgrp
  kill "-$sig" "$pid" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do
    st=$(proc_state "$pid") || return 0
    case $st in "$comm "[ZXx]) return 0 ;; "$comm "*) ;; *) return 0 ;; esac
    sleep 0.1
  done
  log "$comm (pid $pid) ignored SIG$sig for 30 s; sending SIGKILL"
  pgrp=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f3) || true
  if [ "$pgrp" = "$pid" ]; then kill -KILL -- "-$pid" 2>/dev/null || true; fi
  kill -KILL "$pid" 2>/dev/null || true
}

# http_status URL -> prints the HTTP status code (000 if no answer).
http_status() {
  if command -v curl >/dev/null 2>&1; then
    curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$1" 2>/dev/null || true
    return 0
  fi
  # Fallback without curl: a bare HTTP/1.0 request through bash's /dev/tcp.
  local hostport=${1#http://} path line
  path=/${hostport#*/}; hostport=${hostport%%/*}
  # shellcheck disable=SC2016  # expanded by the inner bash
  line=$(timeout 2 bash -c 'exec 3<>"/dev/tcp/${1%:*}/${1##*:}" &&
    printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$2" "$1" >&3 && head -n1 <&3' _ "$hostport" "$path" 2>/dev/null) || true
  line=${line#HTTP/* }
  [[ ${line:0:3} =~ ^[0-9]{3}$ ]] && echo "${line:0:3}" || echo 000
}

# port_in_use PORT: some socket listens on TCP port PORT (any address).
# Reads the kernel's tables rather than connecting: a connect probe times out
# spuriously on a loaded machine.
port_in_use() {
  local hex
  hex=$(printf '%04X' "$1")
  # /proc/net/tcp{,6}: "sl local_address rem_address st ..."; st 0A = LISTEN.
  awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { found = 1 }
    END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

port_holder() {
  if command -v ss >/dev/null 2>&1; then
    ss -ltnpH "sport = :$1" 2>/dev/null | sed 's/^/    /' >&2 || true
  fi
}

# wait_ready NAME URL PIDFILE COMM LOGFILE: poll URL until 200, bounded by
# READY_TIMEOUT; fail early if the process dies.
wait_ready() {
  local name=$1 url=$2 pidfile=$3 comm=$4 logf=$5 start=$SECONDS code seen_pid=0 pid
  while :; do
    if running_ours "$pidfile" "$comm" >/dev/null; then
      seen_pid=1
      code=$(http_status "$url")
      [ "$code" != 200 ] || return 0
    elif [ "$seen_pid" = 1 ]; then
      log "$name exited before answering on $url"
      fail_log "$logf"
    fi
    if [ $((SECONDS - start)) -ge "$READY_TIMEOUT" ]; then
      log "$name did not answer 200 on $url within ${READY_TIMEOUT}s (last: ${code:-no pid yet})"
      # Do not leave a half-started server that a later setup would take as up.
      if pid=$(running_ours "$pidfile" "$comm"); then stop_pid "$pid" "$comm" TERM; fi
      rm -f "$pidfile"
      fail_log "$logf"
    fi
    sleep 0.1
  done
}

fail_log() {
  if [ -s "$1" ]; then
    log "last lines of $1:"
    tail -n 30 "$1" | sed 's/^/    /' >&2
  else
    log "($1 is empty)"
  fi
  exit 1
}

# ---- nginx -----------------------------------------------------------------

NG=$DIR/nginx

find_nginx() {
  if [ -n "${HTTPCACHE_NGINX_BIN:-}" ]; then echo "$HTTPCACHE_NGINX_BIN"; return; fi
  command -v nginx 2>/dev/null || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || return 1
}

install_nginx() {
  command -v apt-get >/dev/null 2>&1 || die "nginx is not installed and there is no apt-get"
  [ "$(id -u)" = 0 ] || die "nginx is not installed; installing it needs root"
  log "installing nginx from Debian"
  # Without a policy-rc.d, the package's postinst would start the system
  # nginx on port 80 (and fail the install if 80 is taken). Deny service
  # starts for the duration of the install; remove only our own policy file.
  local policy=/usr/sbin/policy-rc.d made_policy=0 rc=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# temporary, from cairn scripts/httpcache-setup.sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    made_policy=1
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  local apt=(apt-get -o DPkg::Lock::Timeout=120 -y -qq)
  export DEBIAN_FRONTEND=noninteractive
  # A fresh image may have no package lists yet: update only if needed.
  if ! apt-cache show nginx-light >/dev/null 2>&1 && ! apt-cache show nginx >/dev/null 2>&1; then
    "${apt[@]}" update || true
  fi
  if ! "${apt[@]}" install --no-install-recommends nginx-light >/dev/null; then
    "${apt[@]}" update || true
    "${apt[@]}" install --no-install-recommends nginx-light >/dev/null ||
      "${apt[@]}" install --no-install-recommends nginx >/dev/null || rc=$?
  fi
  if [ "$made_policy" = 1 ]; then rm -f "$policy"; trap - EXIT; fi
  [ "$rc" = 0 ] || die "apt-get could not install nginx (exit $rc)"
}

nginx_conf() {
  local user=""
  if [ "$(id -u)" = 0 ]; then
    if id -u www-data >/dev/null 2>&1; then user="user www-data;"; else user="user nobody;"; fi
  fi
  cat <<EOF
# Generated by cairn scripts/httpcache-setup.sh; rewritten on every setup.
# Bazel HTTP cache protocol: GET/HEAD/PUT on /ac/<sha256 hex>, /cas/<sha256 hex>.
$user
worker_processes 2;
pid "$RUN/nginx.pid";
error_log "$NG/logs/error.log" warn;
events { worker_connections 512; }
http {
  access_log off;
  sendfile on;
  client_max_body_size 0;
  client_body_temp_path "$NG/tmp";   # same filesystem as root: PUT = write temp + rename
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    root "$NG/data";
    location ~ "^/(ac|cas)/[0-9a-f]{64}\$" {   # quotes needed: {64} would end the block
      dav_methods PUT DELETE;
      create_full_put_path on;
      dav_access user:rw group:r all:r;
      limit_except GET HEAD PUT DELETE { deny all; }
    }
    location = /status { return 200 "ok\n"; }
    location / { return 404; }
  }
}
EOF
}

setup_nginx() {
  local bin pid url=http://127.0.0.1:$NGINX_PORT
  bin=$(find_nginx) || { install_nginx; bin=$(find_nginx) || die "nginx still not found after install"; }
  mkdir -p "$NG/data" "$NG/tmp" "$NG/logs"
  nginx_conf >"$NG/nginx.conf.new"
  if pid=$(running_ours "$RUN/nginx.pid" nginx); then
    if cmp -s "$NG/nginx.conf.new" "$NG/nginx.conf"; then
      log "nginx already running (ours, pid $pid) on $url"
      rm -f "$NG/nginx.conf.new"
      return 0
    fi
    log "nginx config changed: restarting ours (pid $pid)"
    stop_pid "$pid" nginx QUIT
  fi
  rm -f "$RUN/nginx.pid"
  if port_in_use "$NGINX_PORT"; then
    log "port $NGINX_PORT is held by a process that is not ours (no live pid in $RUN/nginx.pid):"
    port_holder "$NGINX_PORT"
    die "refusing to start nginx; free the port or set HTTPCACHE_NGINX_PORT"
  fi
  mv "$NG/nginx.conf.new" "$NG/nginx.conf"
  if [ "$(id -u)" = 0 ]; then
    local owner=www-data
    id -u www-data >/dev/null 2>&1 || owner=nobody
    chown "$owner:" "$NG/data" "$NG/tmp"   # files below are created by the workers
  fi
  : >"$NG/logs/error.log"
  local args=(-e "$NG/logs/error.log" -p "$NG/" -c "$NG/nginx.conf")
  "$bin" -t -q "${args[@]}" 2>>"$NG/logs/error.log" || { log "nginx config test failed"; fail_log "$NG/logs/error.log"; }
  log "starting nginx on $url"
  "$bin" "${args[@]}" 2>>"$NG/logs/error.log" 9>&- || { log "nginx failed to start"; fail_log "$NG/logs/error.log"; }
  wait_ready nginx "$url/status" "$RUN/nginx.pid" nginx "$NG/logs/error.log"
  log "nginx ready (pid $(cat "$RUN/nginx.pid")) on $url"
}

# ---- bazel-remote ----------------------------------------------------------

BR=$DIR/bazel-remote

build_bazel_remote() {
  command -v go >/dev/null 2>&1 || die "bazel-remote binary $BR_BIN is missing and go is not installed"
  log "building bazel-remote $BR_VERSION into $BR_BIN (about a minute or more)"
  local start=$SECONDS work src
  work=$(mktemp -d "${TMPDIR:-/tmp}/httpcache-br.XXXXXX")
  # `go install …@latest` / `…@version` do not work against this module proxy
  # (the version list is refused); download the exact version and build it
  # with its own go.mod/go.sum instead. Run outside any module.
  src=$(cd "$work" && GOWORK=off go mod download -json "$BR_MODULE@$BR_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || true
  if [ -z "$src" ] || [ ! -d "$src" ]; then
    rm -rf "$work"
    die "go mod download of $BR_MODULE@$BR_VERSION failed"
  fi
  mkdir -p "$work/src"
  cp -r "$src/." "$work/src/"
  chmod -R u+w "$work/src"
  mkdir -p "$(dirname "$BR_BIN")"
  # Plain `go build` (no -trimpath / CGO_ENABLED=0): other flags would
  # recompile the whole standard library instead of reusing the build cache.
  if ! (cd "$work/src" && go build -ldflags "-X main.gitTags=$BR_VERSION" -o "$BR_BIN.tmp.$$" .); then
    rm -rf "$work" "$BR_BIN.tmp.$$"
    die "go build of bazel-remote $BR_VERSION failed"
  fi
  mv -f "$BR_BIN.tmp.$$" "$BR_BIN"
  rm -rf "$work"
  log "built bazel-remote in $((SECONDS - start)) s"
}

setup_bazel_remote() {
  local pid url=http://127.0.0.1:$BR_PORT
  [ -x "$BR_BIN" ] || build_bazel_remote
  mkdir -p "$BR/data" "$BR/logs"
  local args=(--dir "$BR/data" --max_size "$BR_MAX_SIZE_GB"
    --http_address "127.0.0.1:$BR_PORT" --grpc_address none
    --access_log_level none --disable_http_ac_validation)
  printf '%s\n' "$BR_BIN" "${args[@]}" >"$RUN/bazel-remote.args.new"
  if pid=$(running_ours "$RUN/bazel-remote.pid" bazel-remote); then
    if cmp -s "$RUN/bazel-remote.args.new" "$RUN/bazel-remote.args"; then
      log "bazel-remote already running (ours, pid $pid) on $url"
      rm -f "$RUN/bazel-remote.args.new"
      return 0
    fi
    log "bazel-remote flags changed: restarting ours (pid $pid)"
    stop_pid "$pid" bazel-remote TERM
  fi
  rm -f "$RUN/bazel-remote.pid"
  if port_in_use "$BR_PORT"; then
    log "port $BR_PORT is held by a process that is not ours (no live pid in $RUN/bazel-remote.pid):"
    port_holder "$BR_PORT"
    die "refusing to start bazel-remote; free the port or set HTTPCACHE_BR_PORT"
  fi
  mv "$RUN/bazel-remote.args.new" "$RUN/bazel-remote.args"
  local logf=$BR/logs/bazel-remote.log
  log "starting bazel-remote on $url"
  # setsid: own session, so it outlives this shell and its job control.
  # The inner sh writes its own pid and execs, so the pid file names
  # bazel-remote even if setsid had to fork.
  # shellcheck disable=SC2016  # $$ and $0 belong to the inner sh
  setsid sh -c 'echo $$ >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' \
    "$RUN/bazel-remote.pid" "$BR_BIN" "${args[@]}" >"$logf" 2>&1 </dev/null 9>&- &
  wait_ready bazel-remote "$url/status" "$RUN/bazel-remote.pid" bazel-remote "$logf"
  log "bazel-remote ready (pid $(cat "$RUN/bazel-remote.pid")) on $url"
}

# ---- main ------------------------------------------------------------------

[ "$want_nginx" = 0 ] || setup_nginx
[ "$want_br" = 0 ] || setup_bazel_remote

# The env file lists every server of ours that is running now.
{
  if running_ours "$RUN/nginx.pid" nginx >/dev/null; then
    port=$(sed -n 's/^ *listen 127\.0\.0\.1:\([0-9]*\);/\1/p' "$NG/nginx.conf")
    echo "export HTTPCACHE_NGINX_URL=http://127.0.0.1:${port:-$NGINX_PORT}"
  fi
  if running_ours "$RUN/bazel-remote.pid" bazel-remote >/dev/null; then
    port=$(sed -n 's/^127\.0\.0\.1:\([0-9]*\)$/\1/p' "$RUN/bazel-remote.args")
    echo "export HTTPCACHE_BAZEL_REMOTE_URL=http://127.0.0.1:${port:-$BR_PORT}"
  fi
} >"$DIR/env.tmp"
mv "$DIR/env.tmp" "$DIR/env"
cat "$DIR/env"
