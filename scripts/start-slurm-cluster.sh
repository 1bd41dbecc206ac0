#!/usr/bin/env bash
# A real one-node SLURM cluster on this machine, for examples/slurm/ and tests/integration/test_slurm.py:
# Debian's Slurm (22.05 on bookworm) with munge, started by hand (no systemd needed).
#
#   bash scripts/start-slurm-cluster.sh          install if missing, write slurm.conf, start, wait for an idle node
#   bash scripts/start-slurm-cluster.sh --stop   stop the daemons this script started (and only those)
#
# Idempotent: a daemon already running is left as it is. A slurm.conf this script did not write is
# never overwritten. Exit code 77 means "this machine cannot host the cluster" (not root, no apt-get,
# packages unavailable, someone else's slurm.conf), with the reason on stderr; anything else non-zero
# is a failure to start.
set -euo pipefail

MARKER="# Written by pytest-gaia2 scripts/start-slurm-cluster.sh; it rewrites this file."
CONF=/etc/slurm/slurm.conf
STATE=/run/pytest-gaia2-slurm   # pid files of the daemons this script started
LOGS=/var/log/slurm
NODE=$(hostname -s)

cannot() { echo "start-slurm-cluster: $*" >&2; exit 77; }
die() { echo "start-slurm-cluster: $*" >&2; exit 1; }

# The pid of a daemon this script started, when that process is still the daemon.
ours() {
  local pid
  pid=$(cat "$STATE/$1.pid" 2>/dev/null) || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ] && echo "$pid"
}

stop() {
  local name pid
  for name in slurmd slurmctld munged; do
    if pid=$(ours "$name"); then
      kill -TERM "$pid"
      for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.2; done
      [ -d "/proc/$pid" ] && kill -KILL "$pid"
      echo "start-slurm-cluster: stopped $name ($pid)"
    fi
    rm -f "$STATE/$name.pid"
  done
}

install() {
  local missing=() pkg
  for pkg in slurmctld slurmd slurm-client munge; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return
  command -v apt-get >/dev/null || cannot "no apt-get to install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${missing[@]}" >/dev/null 2>&1; } \
    || cannot "apt-get could not install ${missing[*]}"
}

# Cores only (CR_Core): with CR_Core_Memory each task would reserve the whole node unless --mem is given.
config() {
  local memory
  memory=$(awk '/^MemTotal:/ { print int($2 / 1024 * 0.9) }' /proc/meminfo)
  cat <<EOF
$MARKER
ClusterName=local
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
# Seconds between SIGTERM and SIGKILL when a job is cancelled or reaches its time limit.
KillWait=30
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
}

write_config() {
  local wanted
  wanted=$(config)
  if [ -e "$CONF" ]; then
    head -n 1 "$CONF" | grep -qxF "$MARKER" \
      || cannot "$CONF exists and was not written by this script; move it away to let the script write its own"
    [ "$(cat "$CONF")" = "$wanted" ] && return
  fi
  printf '%s\n' "$wanted" > "$CONF.tmp"
  mv "$CONF.tmp" "$CONF"
  if ours slurmctld >/dev/null; then scontrol reconfigure; fi
}

# Start one daemon in its own session, output to a log file, unless one is running already.
start() {
  local name=$1
  shift
  ours "$name" >/dev/null && return
  if pgrep -x "$name" >/dev/null; then
    echo "start-slurm-cluster: a $name this script did not start is running; using it"
    return
  fi
  setsid "$@" >"$LOGS/$name.out" 2>&1 </dev/null &
  echo $! > "$STATE/$name.pid"
}

node_state() { sinfo -h -n "$NODE" -o %T 2>/dev/null | head -n 1; }

if [ "${1:-}" = --stop ]; then
  stop
  exit 0
fi
[ $# -eq 0 ] || die "usage: $0 [--stop]"
[ "$(id -u)" = 0 ] || cannot "needs root (installs packages, writes $CONF, starts daemons)"

install
mkdir -p "$STATE" /var/spool/slurmctld /var/spool/slurmd "$LOGS" /run/munge
chown slurm:slurm /var/spool/slurmctld "$LOGS"
chown munge:munge /run/munge
write_config

# munged forks into the background itself and writes its pid file; that pid is the one to record.
if ! ours munged >/dev/null && ! pgrep -x munged >/dev/null; then
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 1 50); do [ -s /run/munge/munged.pid ] && break; sleep 0.1; done
  cp /run/munge/munged.pid "$STATE/munged.pid"
fi
start slurmctld slurmctld -D
start slurmd slurmd -D

for _ in $(seq 1 60); do
  case $(node_state) in
    idle | mixed | allocated | completing) echo "start-slurm-cluster: node $NODE is up ($(nproc) CPUs); stop with $0 --stop"; exit 0 ;;
  esac
  sleep 1
done
die "node $NODE is not up after 60 s (state: '$(node_state)'); see $LOGS/slurmctld.log and $LOGS/slurmd.log"
