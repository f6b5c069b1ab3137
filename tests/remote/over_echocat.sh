#!/bin/bash
# Inside autd3-netns: autd3-remote-server drives echocat on the veth master end
# (emulated devices on the other end); autd3-perftest talks to it through the
# Remote link, in both wire versions (v7, v3) and both modes (streaming,
# stop-and-wait). Function only: the runs prove every send is answered, not how
# fast (docs/remote.md "Benchmark" has the figures). The server's log (with
# each session's stage and CPU lines) is printed at the end.
# usage: over_echocat.sh BUILD_DIR MASTER_IFNAME [COUNT]
set -u
B="$1" IF="$2" N="${3:-300}" PORT=18090
log="$(mktemp /tmp/autd3-remote-echocat.XXXXXX)"
"$B/tools/remote-server/autd3-remote-server" --link echocat --interface "$IF" --devices 2 \
  --listen 127.0.0.1:$PORT 2>"$log" &
SP=$!
# With --devices the link opens before the server listens: wait for that (bounded, 60 s: qemu is slow).
for _ in $(seq 1 600); do
  grep -q "listening on" "$log" && break
  kill -0 $SP 2>/dev/null || break
  sleep 0.1
done
rc=0
for proto in 7 3; do
  for mode in streaming stop-and-wait; do
    echo "=== ARMT v$proto $mode $N"
    "$B/tools/perftest/autd3-perftest" --link remote --address 127.0.0.1:$PORT --remote-protocol $proto --devices 2 \
      --count "$N" --mode $mode || rc=1
  done
done
kill -TERM $SP
wait $SP
src=$?
cat "$log"
rm -f "$log"
[ $rc -eq 0 ] && [ $src -eq 0 ]
