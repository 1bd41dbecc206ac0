#!/usr/bin/env bash
# A second Docker engine on this machine, for the several-engines tests and benchmarks:
# its own socket, data root, exec root, pid file, containerd namespace, cgroup parent and
# Linux bridge (gaia2br0, 172.31.250.1/24). Idempotent: an engine that answers is left alone.
#   scripts/start-second-engine.sh          start it (waits until it answers) and print its URL
#   scripts/start-second-engine.sh --stop   stop it and remove its bridge (the data root stays)
#
# It runs with --iptables=false: two dockerd on one host share the DOCKER* iptables chains
# and the second one's rules would fight the first one's. Without iptables, published ports
# still work (docker-proxy listens on 127.0.0.1 and forwards to the container), and the host
# reaches the bridge's subnet directly; containers on it get no outbound NAT (the reference
# image needs none; give real model endpoints through host.docker.internal or the first engine).
set -euo pipefail

NAME=${GAIA2_ENGINE2_NAME:-gaia2-docker2}
SOCK=/var/run/$NAME.sock
PIDFILE=/var/run/$NAME.pid
DATA_ROOT=/var/lib/$NAME
EXEC_ROOT=/var/run/$NAME
BRIDGE=${GAIA2_ENGINE2_BRIDGE:-gaia2br0}
BRIDGE_CIDR=${GAIA2_ENGINE2_CIDR:-172.31.250.1/24}
LOG=/var/log/$NAME.log

answers() { DOCKER_HOST=unix://$SOCK docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
running_pid() { [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && cat "$PIDFILE"; }

if [ "${1:-}" = "--stop" ]; then
  if pid=$(running_pid); then
    kill "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  rm -f "$PIDFILE" "$SOCK"
  ip link show "$BRIDGE" >/dev/null 2>&1 && ip link delete "$BRIDGE" type bridge
  echo "start-second-engine: stopped"
  exit 0
fi

if [ "$(id -u)" != 0 ]; then echo "start-second-engine: needs root" >&2; exit 1; fi
command -v dockerd >/dev/null || { echo "start-second-engine: dockerd is not installed (scripts/ensure-docker.sh)" >&2; exit 1; }

if ! answers; then
  if ! running_pid >/dev/null; then
    if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
      ip link add "$BRIDGE" type bridge
      ip addr add "$BRIDGE_CIDR" dev "$BRIDGE"
    fi
    ip link set "$BRIDGE" up
    mkdir -p "$DATA_ROOT" "$EXEC_ROOT"
    echo '{}' > "$DATA_ROOT/daemon.json"  # never /etc/docker/daemon.json: that one is the first engine's
    rm -f "$PIDFILE"
    setsid dockerd \
      --host "unix://$SOCK" --pidfile "$PIDFILE" --data-root "$DATA_ROOT" --exec-root "$EXEC_ROOT" \
      --config-file "$DATA_ROOT/daemon.json" --bridge "$BRIDGE" --iptables=false --ip-masq=false \
      --containerd-namespace "$NAME" --containerd-plugins-namespace "$NAME-plugins" \
      --cgroup-parent "$NAME" >"$LOG" 2>&1 </dev/null &
  fi
  for _ in $(seq 1 120); do answers && break; sleep 0.5; done
fi
answers || { echo "start-second-engine: the engine did not answer within 60 s; see $LOG" >&2; exit 1; }
echo "unix://$SOCK"
