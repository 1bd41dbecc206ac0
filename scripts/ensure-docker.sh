#!/usr/bin/env bash
# Make sure a Docker engine answers: install Debian's docker.io and start dockerd when none does.
set -euo pipefail
if docker info >/dev/null 2>&1; then exit 0; fi
if [ -n "${DOCKER_HOST:-}" ]; then
  echo "ensure-docker: DOCKER_HOST=$DOCKER_HOST does not answer; not starting a local engine" >&2
  exit 1
fi
if ! command -v dockerd >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then
    echo "ensure-docker: no Docker engine answers and dockerd is not installed; install Docker (or run as root)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq docker.io >/dev/null
fi
if ! docker info >/dev/null 2>&1; then
  log=${DOCKERD_LOG:-/var/log/dockerd.log}
  setsid dockerd >"$log" 2>&1 < /dev/null &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
fi
docker info >/dev/null 2>&1 || { echo "ensure-docker: dockerd did not come up; see ${DOCKERD_LOG:-/var/log/dockerd.log}" >&2; exit 1; }
echo "ensure-docker: engine $(docker version --format '{{.Server.Version}}') answers"
