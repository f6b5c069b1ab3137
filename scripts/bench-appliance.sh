#!/usr/bin/env bash
# The appliance rows of scripts/bench.sh (docs/remote.md "Benchmark"), run inside tools/netns/autd3-netns:
# for one EtherCAT link, the direct rows, then the same rows through the Remote link to autd3-remote-server
# wrapping that link on the same adapter (ARMT v7 and v3 clients, streaming and stop-and-wait), then the
# direct rows again, so that both see the same machine state. Each server row carries the server's own
# figures for that session (the wrapped link's stale/lost cycles, CPU per bus cycle of its bus thread and
# event loop); the server's whole log goes to LOG (its per-stage lines included).
# usage: bench-appliance.sh BUILD_DIR IFNAME LINK LOG [STREAM_COUNT SAW_COUNT]
set -u
B=$1 IF=$2 LINK=$3 LOG=$4 NS=${5:-20000} NW=${6:-5000}
HERE="$(cd "$(dirname "$0")" && pwd)"
P=$B/tools/perftest/autd3-perftest
S=$B/tools/remote-server/autd3-remote-server
PORT=18091
pick() { grep -E 'cmd / sec|^  mean|^  p50|^  p99|^  max|stale cycles|lost cycles|cpu  |rror' ; }

direct() { # $1: before / after the server rows
  echo "=== $LINK direct ($1) streaming $NS"; $P --link "$LINK" --interface "$IF" --devices 2 --count "$NS" --mode streaming 2>&1 | pick
  echo "=== $LINK direct ($1) stop-and-wait $NW"; $P --link "$LINK" --interface "$IF" --devices 2 --count "$NW" --mode stop-and-wait 2>&1 | pick
}

# The server's figures of the session that just ended (its log lines come right after the client closed).
server_figures() {
  local want=$1
  for _ in $(seq 1 50); do
    [ "$(grep -c 'CPU per bus cycle: ' "$LOG")" -ge "$want" ] && break
    sleep 0.1
  done
  grep 'link cycles this session: ' "$LOG" | sed -n "${want}p" |
    sed -E 's/.*session: [0-9]+, ([0-9]+) stale, ([0-9]+) lost.*/  server stale cycles : \1\n  server lost cycles  : \2/'
  grep 'CPU per bus cycle: ' "$LOG" | sed -n "${want}p" |
    sed -E 's/.*bus thread ([0-9.]+) us, network thread ([0-9.]+) us.*/  server bus thread cpu : \1 us per bus cycle\n  server network cpu    : \2 us per bus cycle/'
}

direct before
$S --link "$LINK" --interface "$IF" --devices 2 --listen 127.0.0.1:$PORT 2> "$LOG" &
SP=$!
for _ in $(seq 1 600); do # the link opens before the server listens (bounded, 60 s)
  grep -q "listening on" "$LOG" && break
  kill -0 $SP 2> /dev/null || break
  sleep 0.1
done
if ! grep -q "listening on" "$LOG"; then
  echo "=== appliance: autd3-remote-server --link $LINK did not start:"; sed 's/^/  /' "$LOG"
  kill -TERM $SP 2> /dev/null
  wait $SP
  direct after
  exit 0
fi
k=0
for proto in 7 3; do
  echo "=== appliance v$proto -> server -> $LINK streaming $NS"
  $P --link remote --address 127.0.0.1:$PORT --remote-protocol $proto --devices 2 --count "$NS" --mode streaming 2>&1 | pick
  k=$((k + 1)); server_figures $k
  echo "=== appliance v$proto -> server -> $LINK stop-and-wait $NW"
  $P --link remote --address 127.0.0.1:$PORT --remote-protocol $proto --devices 2 --count "$NW" --mode stop-and-wait 2>&1 | pick
  k=$((k + 1)); server_figures $k
done
# The published Python clients (PyPI autd3-link-remote 0.9.0: v7, 0.2.0: v3; scripts/setup-deps.sh's venvs), stop-and-wait.
for pv in "7 $B/.venv/bin/python 0.9.0" "3 $B/.venv-armt3/bin/python 0.2.0"; do
  set -- $pv
  [ -x "$2" ] || continue
  echo "=== appliance: published Python client v$1 ($3) -> server -> $LINK stop-and-wait $NW"
  "$2" "$HERE/../tests/remote/armt_peer.py" v$1 bench 127.0.0.1:$PORT 2 "$NW" 2>&1 | grep -E ' : |rror|SKIPPED'
  k=$((k + 1)); server_figures $k
done
kill -TERM $SP
wait $SP
direct after
