# slurm-procs.sh — process helpers shared by slurm-setup.sh and
# slurm-teardown.sh (sourced; needs $RUN, the directory of the pid files).

# proc_state PID -> "<comm> <state>" from /proc/PID/stat.
proc_state() {
  local stat comm rest
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  comm=${stat#*(}; comm=${comm%)*}
  rest=${stat##*) }
  printf '%s %s\n' "$comm" "${rest%% *}"
}

# alive PID COMM: exists, named COMM, not a zombie (PID 1 here reaps late).
alive() {
  local st
  st=$(proc_state "$1") || return 1
  case $st in "$2 "[ZXx]) return 1 ;; "$2 "*) return 0 ;; *) return 1 ;; esac
}

# ours NAME [COMM] -> prints the recorded pid of our daemon NAME if it is
# alive and named COMM (default NAME).
ours() {
  local f=$RUN/$1.pid pid
  [ -s "$f" ] || return 1
  pid=$(tr -dc '0-9' <"$f")
  [ -n "$pid" ] && alive "$pid" "${2:-$1}" && echo "$pid"
}
