#!/bin/bash
# Inside autd3-netns: autd3-remote-server drives echocat on the veth master end
# (emulated devices on the other end); autd3-perftest talks to it through the
# Remote link. usage: over_echocat.sh BUILD_DIR MASTER_IFNAME
set -u
B="$1" IF="$2" PORT=18090
log="$(mktemp /tmp/autd3-remote-echocat.XXXXXX)"
"$B/tools/remote-server/autd3-remote-server" --link echocat --interface "$IF" --devices 2 \
  --listen 127.0.0.1:$PORT 2>"$log" &
SP=$!
# With --devices the link opens before the server listens: wait for that (bounded, 30 s).
for _ in $(seq 1 300); do
  grep -q "listening on" "$log" && break
  kill -0 $SP 2>/dev/null || break
  sleep 0.1
done
"$B/tools/perftest/autd3-perftest" --link remote --address 127.0.0.1:$PORT --devices 2 --count 300 --mode streaming
rc=$?
kill -TERM $SP
wait $SP
src=$?
cat "$log"
rm -f "$log"
[ $rc -eq 0 ] && [ $src -eq 0 ]
