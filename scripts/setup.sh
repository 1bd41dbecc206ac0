#!/usr/bin/env bash
# Everything a fresh Debian machine needs to run pytest-gaia2: a virtualenv with the plugin,
# a Docker engine that answers, and the reference oracle image.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
# uv (in the test extra) installs it in seconds where pip took half a minute of CPU; pip if uv cannot come.
if .venv/bin/python -m pip install -q uv >/dev/null 2>&1; then
  .venv/bin/uv pip install -q --python .venv/bin/python -e '.[test]'
else
  .venv/bin/python -m pip install -q -U pip >/dev/null
  .venv/bin/python -m pip install -q -e '.[test]'
fi
bash scripts/ensure-docker.sh
.venv/bin/python -m pytest_gaia2.reference.build
