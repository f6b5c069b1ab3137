#!/bin/bash
# Remote v7 / v3 over loopback vs direct (in-process emulator, 2 devices), interleaved in one
# session: autd3-perftest stop-and-wait p50 (2000 sends) and streaming cmd/s (10000 sends).
# Usage: tests/remote/bench_versions.sh BUILD_DIR [ROUNDS]   (docs/remote.md, Benchmark)
B=$1; R=${2:-3}
$B/tools/remote-server/autd3-remote-server --listen 127.0.0.1:0 > "${TMPDIR:-/tmp}/autd3-bench-server.log" 2>&1 &
SP=$!
sleep 0.5
PORT=$(grep -o 'listening on 127.0.0.1:[0-9]*' "${TMPDIR:-/tmp}/autd3-bench-server.log" | sed 's/.*://')
PT=$B/tools/perftest/autd3-perftest
for r in $(seq 1 $R); do
  for m in direct v7 v3; do
    case $m in
      direct) L="--link emulator";;
      v7) L="--link remote --address 127.0.0.1:$PORT --remote-protocol 7";;
      v3) L="--link remote --address 127.0.0.1:$PORT --remote-protocol 3";;
    esac
    sw=$($PT $L --devices 2 --mode stop-and-wait --count 2000 2>&1 | grep -m1 "p50" | awk '{print $3}')
    st=$($PT $L --devices 2 --mode streaming --count 10000 2>&1 | grep -m1 "cmd / sec" | awk '{print $5}')
    echo "round $r $m stop-and-wait-p50-ms $sw streaming-cmd/s $st"
  done
done
kill $SP; wait $SP
