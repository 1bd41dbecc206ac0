#!/usr/bin/bash
# Reference-image init, run as root by `bash /opt/gaia2-init-entrypoint.sh`.
#
# Same sequence as Gaia2's images: reset and initialise the state dir from the
# scenario, derive FAKETIME, seed /tmp/faketime.rc, start the event daemon as
# gaia2 in the background (log /tmp/gaia2-eventd.log), start the agent as user
# agent, then exec the adapter as gaia2. setpriv (not su) is used for that exec
# so the Python process becomes PID 1 and handles SIGTERM itself.
#
# Privileges as in Gaia2's agent images: /var/gaia2 is gaia2's alone (700), the
# scenario (the answer key) is readable by gaia2 only, and the agent, another
# user, reaches the judge's state only through the adapter's tool socket.
#
# Every container of a test run pays for this script, so it spawns as little as it can: logging,
# times and path pieces are bash builtins, and the Python programs start with -S (no site
# packages: they use the standard library only).

set -uo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

SCENARIO="${GAIA2_SCENARIO:-/var/gaia2/custom_scenario.json}"
STATE="${GAIA2_STATE_DIR:-/var/gaia2/state}"
PORT="${GAIA2_ADAPTER_PORT:-8090}"
LOG=/tmp/entrypoint.log

log() {
    local line
    printf -v line '[%(%H:%M:%S)T] [gaia2-init] %s' -1 "$*"
    printf '%s\n' "$line" >> "$LOG"
    printf '%s\n' "$line" >&2
}
as_gaia2() { HOME=/var/gaia2 GAIA2_STATE_DIR="$STATE" setpriv --reuid=gaia2 --regid=gaia2 --init-groups "$@"; }
as_agent() { HOME=/home/agent setpriv --reuid=agent --regid=agent --init-groups "$@"; }

: >> "$LOG"
chown gaia2:gaia2 "$LOG" /var/gaia2
chmod 700 /var/gaia2

if [ -f "$SCENARIO" ]; then
    log "Initializing state for $SCENARIO ..."
    [ -d "$STATE" ] || mkdir -p "$STATE"
    compgen -G "$STATE/*" > /dev/null && rm -rf "${STATE:?}"/*
    chown gaia2:gaia2 "$SCENARIO"
    chmod 600 "$SCENARIO"
    chown -R gaia2:gaia2 "$STATE"
    chmod 700 "$STATE"
    # One Python start lays out the state and prints the scenario's start time (for FAKETIME).
    start="$(as_gaia2 python3 -S /opt/gaia2_ref_init.py state "$SCENARIO" "$STATE")" \
        || { log "ERROR: state initialisation failed"; start=""; }
    # Sequential chains: app state carried from the chain's last judged scenario replaces the
    # initial state of the apps this scenario has too.
    if [ -d /var/gaia2/carried_state ]; then
        for carried in /var/gaia2/carried_state/*.json; do
            name="${carried##*/}"
            if [ -f "$carried" ] && [ ! -L "$carried" ] && [ -f "$STATE/$name" ]; then
                cat "$carried" > "$STATE/$name" && log "Carried app state: $name"
            fi
        done
    fi

    if [ -z "${FAKETIME:-}" ] && [ -n "$start" ]; then
        export FAKETIME="$start"
        log "Auto-detected FAKETIME from scenario: $FAKETIME"
    fi
    if [ -n "${FAKETIME:-}" ]; then
        printf '%s\n' "$FAKETIME" > /tmp/faketime.rc
    else
        : > /tmp/faketime.rc
    fi
    chown gaia2:gaia2 /tmp/faketime.rc
    chmod 644 /tmp/faketime.rc

    daemon_args=(--scenario "$SCENARIO" --state-dir "$STATE" --poll-interval 0.5)
    [ -n "${FAKETIME:-}" ] && daemon_args+=(--faketime-path /tmp/faketime.rc)
    [ -n "${GAIA2_TIME_SPEED:-}" ] && daemon_args+=(--time-speed "$GAIA2_TIME_SPEED")
    : >> /tmp/gaia2-eventd.log && chown gaia2:gaia2 /tmp/gaia2-eventd.log
    as_gaia2 python3 -S -u /opt/gaia2_ref_daemon.py "${daemon_args[@]}" >> /tmp/gaia2-eventd.log 2>&1 &
    log "Event daemon started as gaia2 (pid $!, log /tmp/gaia2-eventd.log)"
else
    log "No scenario found at $SCENARIO"
fi

# The agent's home (carried along a chain by the runner) and its trace belong to the agent.
{ [ -d /home/agent ] || mkdir -p /home/agent; } && chown -R agent:agent /home/agent
TRACE="${GAIA2_TRACE_FILE:-/tmp/trace.jsonl}"
[ -f "$TRACE" ] && [ ! -L "$TRACE" ] && chown agent:agent "$TRACE"

# The tool socket's folder is the adapter's; the socket itself is open to the agent.
TOOLS="${GAIA2_TOOLS_SOCKET:-/tmp/gaia2-tools/agent.sock}"
TOOLS_DIR=.
[[ "$TOOLS" == */* ]] && TOOLS_DIR="${TOOLS%/*}"
TOOLS_DIR="${TOOLS_DIR:-/}"
mkdir -p "$TOOLS_DIR" && chown gaia2:gaia2 "$TOOLS_DIR" && chmod 755 "$TOOLS_DIR"
export GAIA2_TOOLS_SOCKET="$TOOLS"

# The agent gets the scenario on its stdin (it is an oracle by design); its output goes to the
# container's log and, through gaia2's tee, to /tmp/entrypoint.log, which it cannot write itself.
scenario_in=/dev/null
[ -f "$SCENARIO" ] && scenario_in="$SCENARIO"
log "Starting the agent as agent"
as_agent python3 -S -u /opt/gaia2_ref_agent.py < "$scenario_in" 2>&1 | as_gaia2 tee -a "$LOG" >&2 &

log "Starting the adapter as gaia2 on port $PORT"
export HOME=/var/gaia2 GAIA2_STATE_DIR="$STATE" GAIA2_SCENARIO="$SCENARIO" GAIA2_ADAPTER_PORT="$PORT" \
    PYTHONUNBUFFERED=1
exec setpriv --reuid=gaia2 --regid=gaia2 --init-groups python3 -S /opt/gaia2_ref_adapter.py
