#!/usr/bin/env bash
# slurm-setup.sh — install and start a single-node Slurm cluster on this
# machine for cairn's Slurm executor tests (Debian 12, root, no systemd).
#
# Usage: scripts/slurm-setup.sh
#
# What it does:
#   1. installs slurm-wlm and munge from Debian if sbatch/slurmctld/slurmd/
#      munged are missing (with service starts denied during the install);
#   2. writes /etc/slurm/slurm.conf for this host (node named `hostname -s`,
#      CPUs/cores from `slurmd -C`, RealMemory 95 % of MemTotal, loopback
#      only, batch_sched_delay=0, jobcomp/filetxt, no accounting);
#   3. starts munged (as user munge), slurmctld and slurmd as plain
#      background daemons and records their pids in $SLURM_LOCAL_RUN
#      (default /run/slurm-local) so slurm-teardown.sh stops only those;
#   4. waits (bounded by SLURM_READY_TIMEOUT s, default 60) until the node
#      is idle, then runs one trivial job and waits for it to complete.
#
# Idempotent: daemons of ours already running with the same configuration
# are left alone; a changed configuration restarts ours. A munged that is
# running but not ours is reused (and left running by teardown). Refuses to
# start slurmctld/slurmd when their ports (6817/6818) are held by another
# process. Stop with scripts/slurm-teardown.sh [--purge].
set -euo pipefail

RUN=${SLURM_LOCAL_RUN:-/run/slurm-local}
READY_TIMEOUT=${SLURM_READY_TIMEOUT:-60}
CONF=/etc/slurm/slurm.conf

log() { printf 'slurm-setup: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

case ${1:-} in
  "") ;;
  -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  *) echo "usage: $0" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || die "must run as root (installs packages, starts daemons)"
[[ $READY_TIMEOUT =~ ^[0-9]+$ ]] || die "SLURM_READY_TIMEOUT must be a number"
start_all=$SECONDS

mkdir -p "$RUN"
exec 9>"$RUN/lock"
flock -w 600 9 || die "another slurm-setup/teardown holds $RUN/lock"

# ---- process helpers -------------------------------------------------------

. "$(dirname "$0")/slurm-procs.sh"

# pid_of COMM -> the pid of a live process named COMM (first one), if any.
pid_of() {
  local d
  for d in /proc/[0-9]*; do
    alive "${d#/proc/}" "$1" && { echo "${d#/proc/}"; return 0; }
  done
  return 1
}

stop_ours() {
  local name=$1 comm=$2 pid i
  pid=$(ours "$name" "$comm") || { rm -f "$RUN/$name.pid"; return 0; }
  log "stopping our $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do alive "$pid" "$comm" || break; sleep 0.1; done
  alive "$pid" "$comm" && { log "$name ignored SIGTERM for 30 s: SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; }
  rm -f "$RUN/$name.pid"
}

port_in_use() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { found = 1 }
    END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# wait_pidfile FILE COMM -> waits (10 s) for a daemon's own pid file naming a live COMM.
wait_pidfile() {
  local i pid
  for ((i = 0; i < 100; i++)); do
    if [ -s "$1" ]; then
      pid=$(tr -dc '0-9' <"$1")
      if [ -n "$pid" ] && alive "$pid" "$2"; then echo "$pid"; return 0; fi
    fi
    sleep 0.1
  done
  return 1
}

tail_log() { [ -s "$1" ] && { log "last lines of $1:"; tail -n 20 "$1" | sed 's/^/    /' >&2; }; return 0; }

# ---- 1. packages -----------------------------------------------------------

have_all() {
  command -v sbatch >/dev/null && [ -x /usr/sbin/slurmctld ] && [ -x /usr/sbin/slurmd ] && [ -x /usr/sbin/munged ]
}
if ! have_all; then
  command -v apt-get >/dev/null || die "Slurm is not installed and there is no apt-get"
  log "installing slurm-wlm and munge from Debian"
  t=$SECONDS
  policy=/usr/sbin/policy-rc.d made_policy=0
  if [ ! -e "$policy" ]; then
    # Deny service starts during the install: we start the daemons ourselves.
    printf '#!/bin/sh\n# temporary, from cairn scripts/slurm-setup.sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    made_policy=1
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt=(timeout 900 apt-get -o DPkg::Lock::Timeout=600 -y -qq)
  if ! apt-cache show slurm-wlm >/dev/null 2>&1; then "${apt[@]}" update >/dev/null || true; fi
  if ! "${apt[@]}" install --no-install-recommends slurm-wlm munge >/dev/null; then
    "${apt[@]}" update >/dev/null || true
    "${apt[@]}" install --no-install-recommends slurm-wlm munge >/dev/null || die "apt-get could not install slurm-wlm munge"
  fi
  if [ "$made_policy" = 1 ]; then rm -f "$policy"; trap - EXIT; fi
  have_all || die "slurm-wlm installed but sbatch/slurmctld/slurmd/munged still missing"
  log "installed in $((SECONDS - t)) s"
fi
id -u munge >/dev/null 2>&1 || die "user munge is missing (the munge package creates it)"
id -u slurm >/dev/null 2>&1 || die "user slurm is missing (the slurm-wlm packages create it)"

# ---- 2. configuration ------------------------------------------------------

host=$(hostname -s)
[ -n "$host" ] || die "hostname -s is empty"
# slurmd -C: "NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24152"
hw=$(/usr/sbin/slurmd -C 2>/dev/null | head -n1) || true
field() { sed -n "s/.*[[:space:]]$1=\([0-9]*\).*/\1/p" <<<"$hw"; }
cpus=$(field CPUs); sockets=$(field SocketsPerBoard); cores=$(field CoresPerSocket); threads=$(field ThreadsPerCore)
[ -n "$cpus" ] || cpus=$(nproc)
[ -n "$sockets" ] && [ -n "$cores" ] && [ -n "$threads" ] || { sockets=1; cores=$cpus; threads=1; }
mem_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
real_mem=$((mem_kb / 1024 * 95 / 100))

mkdir -p /etc/slurm
cat >"$CONF.new" <<EOF
# Generated by cairn scripts/slurm-setup.sh; rewritten on every setup.
ClusterName=localcluster
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=6817
SlurmdPort=6818
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=slurm
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmdSpoolDir=/var/lib/slurm/slurmd
StateSaveLocation=/var/lib/slurm/slurmctld
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=/var/log/slurm/jobcomp.log
MinJobAge=300
MaxJobCount=20000
KillWait=5
SlurmctldTimeout=30
SlurmdTimeout=60
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus SocketsPerBoard=$sockets CoresPerSocket=$cores ThreadsPerCore=$threads RealMemory=$real_mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
changed=0
cmp -s "$CONF.new" "$CONF" || changed=1
mv "$CONF.new" "$CONF"
chmod 644 "$CONF"

install -d -o slurm -g slurm -m 755 /var/lib/slurm /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm
touch /var/log/slurm/jobcomp.log && chown slurm:slurm /var/log/slurm/jobcomp.log

# ---- 3. daemons --------------------------------------------------------------

# munge
if [ ! -s /etc/munge/munge.key ]; then
  log "creating /etc/munge/munge.key"
  install -d -o munge -g munge -m 700 /etc/munge
  setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/mungekey --create --keyfile=/etc/munge/munge.key
fi
chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
install -d -o munge -g munge -m 755 /run/munge
install -d -o munge -g munge -m 700 /var/log/munge /var/lib/munge 2>/dev/null || true
if pid=$(ours munged munged); then
  log "munged already running (ours, pid $pid)"
elif pid=$(pid_of munged); then
  log "munged already running (not ours, pid $pid): reusing it"
else
  rm -f /run/munge/munged.pid
  setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged 9>&- ||
    { tail_log /var/log/munge/munged.log; die "munged failed to start"; }
  pid=$(wait_pidfile /run/munge/munged.pid munged) || die "munged wrote no pid file"
  echo "$pid" >"$RUN/munged.pid"
  log "started munged (pid $pid)"
fi

if [ "$changed" = 1 ]; then
  if ours slurmd slurmd >/dev/null || ours slurmctld slurmctld >/dev/null; then
    log "slurm.conf changed: restarting our daemons"
  fi
  stop_ours slurmd slurmd
  stop_ours slurmctld slurmctld
fi

# start_daemon NAME PIDFILE PORT CMD...
start_daemon() {
  local name=$1 pidfile=$2 port=$3 pid
  shift 3
  if pid=$(ours "$name" "$name"); then
    log "$name already running (ours, pid $pid)"
    return 0
  fi
  if pid=$(pid_of "$name"); then
    die "$name is running (pid $pid) but was not started by this script; stop it first"
  fi
  port_in_use "$port" && die "port $port is held by another process; refusing to start $name"
  # A stale pid file (root-owned, slurmctld cannot delete it) breaks the
  # packages' prerm later; start from a clean one.
  rm -f "$pidfile"
  "$@" 9>&- || { tail_log "/var/log/slurm/$name.log"; die "$name failed to start"; }
  pid=$(wait_pidfile "$pidfile" "$name") || { tail_log "/var/log/slurm/$name.log"; die "$name wrote no pid file $pidfile"; }
  echo "$pid" >"$RUN/$name.pid"
  log "started $name (pid $pid)"
}
start_daemon slurmctld /run/slurmctld.pid 6817 /usr/sbin/slurmctld
start_daemon slurmd /run/slurmd.pid 6818 /usr/sbin/slurmd -N "$host"

# ---- 4. readiness --------------------------------------------------------------

deadline=$((SECONDS + READY_TIMEOUT))
state=""
while :; do
  state=$(sinfo -h -N -n "$host" -o '%T' 2>/dev/null | head -n1) || true
  case $state in
    idle|mixed|allocated) break ;;
    down*|drain*)
      # A node left down by an earlier cluster's state: bring it back.
      scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true ;;
  esac
  if [ "$SECONDS" -ge "$deadline" ]; then
    tail_log /var/log/slurm/slurmctld.log
    tail_log /var/log/slurm/slurmd.log
    die "node $host not idle within ${READY_TIMEOUT}s (state: ${state:-no answer})"
  fi
  sleep 0.2
done
log "node $host is $state"

# Smoke job: submit, poll scontrol until it completes.
smoke=$(mktemp -d /tmp/slurm-smoke.XXXXXX)
jid=$(sbatch --parsable -J cairn-smoke -o "$smoke/out" -e "$smoke/out" --wrap 'echo ok' 2>&1) || { rm -rf "$smoke"; die "sbatch of the smoke job failed: $jid"; }
jid=${jid%%;*}
while :; do
  js=$(scontrol -o show job "$jid" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2) || true
  case $js in
    COMPLETED) break ;;
    FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED)
      cat "$smoke/out" >&2 2>/dev/null || true; rm -rf "$smoke"; die "smoke job $jid ended $js" ;;
  esac
  if [ "$SECONDS" -ge "$deadline" ]; then
    scancel "$jid" 2>/dev/null || true; rm -rf "$smoke"
    die "smoke job $jid not completed within ${READY_TIMEOUT}s (state: ${js:-unknown})"
  fi
  sleep 0.1
done
grep -qx ok "$smoke/out" || { rm -rf "$smoke"; die "smoke job $jid completed but wrote no 'ok'"; }
rm -rf "$smoke"
log "smoke job $jid COMPLETED; cluster ready in $((SECONDS - start_all)) s"
