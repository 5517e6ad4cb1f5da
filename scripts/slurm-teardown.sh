#!/usr/bin/env bash
# slurm-teardown.sh — stop the Slurm daemons started by scripts/slurm-setup.sh.
#
# Usage: scripts/slurm-teardown.sh [--purge]
#
# Cancels the cluster's jobs first (while the controller is up), then stops
# only the daemons whose pids setup recorded in $SLURM_LOCAL_RUN (default
# /run/slurm-local) and only if /proc/PID/stat still names that program:
# slurmd, slurmctld, then munged (a munged that setup found running and
# reused is not ours and is left alone). Waits (bounded, 30 s) for each to
# go; a zombie counts as gone. Deletes slurmctld's stale root-owned pid file.
# --purge also wipes job state, spool and logs (job ids restart at 1).
# Installed packages are left installed. Idempotent.
set -euo pipefail

RUN=${SLURM_LOCAL_RUN:-/run/slurm-local}
log() { printf 'slurm-teardown: %s\n' "$*" >&2; }

purge=0
case ${1:-} in
  "") ;;
  --purge) purge=1 ;;
  -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  *) echo "usage: $0 [--purge]" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { log "must run as root"; exit 1; }

if [ -d "$RUN" ]; then
  exec 9>"$RUN/lock"
  flock -w 600 9 || { log "another slurm-setup/teardown holds $RUN/lock"; exit 1; }
fi

. "$(dirname "$0")/slurm-procs.sh"

rc=0
stop() {
  local name=$1 pid i
  if ! pid=$(ours "$name"); then
    [ -e "$RUN/$name.pid" ] && log "$name: not running (stale pid file)"
    rm -f "$RUN/$name.pid"
    return 0
  fi
  log "$name: stopping pid $pid"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do alive "$pid" "$name" || break; sleep 0.1; done
  if alive "$pid" "$name"; then
    log "$name: still there after 30 s; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do alive "$pid" "$name" || break; sleep 0.1; done
    alive "$pid" "$name" && { log "$name: pid $pid survived SIGKILL"; rc=1; return 0; }
  fi
  rm -f "$RUN/$name.pid"
}

if ours slurmctld >/dev/null; then
  # Cancel every job of this cluster so no job step outlives slurmd.
  if [ -n "$(squeue -h -o %i 2>/dev/null)" ]; then
    log "cancelling the cluster's jobs"
    scancel --full $(squeue -h -o %i 2>/dev/null) 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      [ -z "$(squeue -h -t PD,R,CG,S -o %i 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
fi
stop slurmd
stop slurmctld
stop munged
# slurmctld runs as user slurm and cannot delete its root-owned pid file.
for f in /run/slurmctld.pid /run/slurmd.pid; do
  if [ -s "$f" ]; then
    pid=$(tr -dc '0-9' <"$f")
    n=$(basename "$f" .pid)
    [ -n "$pid" ] && alive "$pid" "$n" || rm -f "$f"
  fi
done

if [ "$purge" = 1 ]; then
  if [ "$rc" != 0 ]; then log "not purging: a daemon is still running"; exit 1; fi
  log "purging job state, spool and logs"
  rm -rf /var/lib/slurm/slurmctld/* /var/lib/slurm/slurmd/* 2>/dev/null || true
  rm -f /var/log/slurm/*.log 2>/dev/null || true
fi
log done
exit "$rc"
