#!/usr/bin/env bash
# One benchmark session, the README's performance table: every link, 2 devices,
# 1 ms, the default device model, and echocat's long-chain, 500 us and RT rows.
# B = a build dir (SOEM rows need -DSOEM_ROOT=...; the appliance rows through SOEM
# -DAUTD3_REMOTE_SERVER_WITH_SOEM=ON as well). Every row runs RUNS times
# (default 3), the whole set in turn so that each run sees every row in the same
# machine state; the summary at the end gives each figure's median and range.
# The raw runs stay in OUT (default a new directory under /tmp), with the
# remote server's log of each run's appliance rows. About 15 minutes per run.
B=${B:-build}
RUNS=${RUNS:-3}
OUT=${OUT:-$(mktemp -d /tmp/autd3-bench.XXXXXX)}
mkdir -p "$OUT"
P=$B/tools/perftest/autd3-perftest
H=$B/tools/hostcheck/autd3-hostcheck
HERE="$(cd "$(dirname "$0")" && pwd)"
N="$HERE/../tools/netns/autd3-netns"
sum() { grep -E "cmd / sec|^  mean|^  p50|^  p95|^  p99|^  max|^  min|stale cycles|lost cycles|timeouts|cpu  |late wake|jitter" ; }

one_run() {
# What the host costs a bus thread before any link works (autd3-hostcheck,
# docs/echocat.md "What the host costs"): the floor under every row below.
if [ -x "$H" ]; then
echo "=== host: one timed wake-up per 1 ms cycle, 10000 cycles"; $H --count 10000 | grep -E "cpu  |late"
if [ "$(id -u)" = 0 ]; then echo "=== host RT (SCHED_FIFO 80): one timed wake-up per 1 ms cycle, 10000 cycles"; $H --count 10000 --rt-priority 80 | grep -E "cpu  |late"; fi
echo "=== host: spinning thread, 5 s"; $H --count 5000 --spin | grep -E "gap"
fi
echo "=== emulator link (in-process) streaming 100000"; $P --link emulator --devices 2 --count 100000 --mode streaming 2>/dev/null | sum
echo "=== emulator link stop-and-wait 10000"; $P --link emulator --devices 2 --count 10000 --mode stop-and-wait 2>/dev/null | sum
$N --devices 2 --build $B -- sh -c "
echo '=== echocat streaming 100000'; $P --link echocat --interface \$AUTD3_TEST_IFNAME --devices 2 --count 100000 --mode streaming 2>/dev/null | grep -E 'cmd / sec|stale|lost|cpu  |late wake|jitter|wake-ups per'
echo '=== echocat stop-and-wait 10000'; $P --link echocat --interface \$AUTD3_TEST_IFNAME --devices 2 --count 10000 --mode stop-and-wait 2>/dev/null | grep -E '^  mean|^  p50|^  p95|^  p99|^  max|^  min|cpu  |stale|lost'
echo '=== ethercrab streaming 20000'; $P --link ethercrab --interface \$AUTD3_TEST_IFNAME --devices 2 --count 20000 --mode streaming 2>/dev/null | grep -E 'cmd / sec|stale|lost|cpu  '
echo '=== ethercrab stop-and-wait 2000'; $P --link ethercrab --interface \$AUTD3_TEST_IFNAME --devices 2 --count 2000 --mode stop-and-wait 2>/dev/null | grep -E '^  mean|^  p50|^  p99|^  max|cpu  '
echo '=== soem streaming 20000'; $P --link soem --interface \$AUTD3_TEST_IFNAME --devices 2 --count 20000 --mode streaming 2>&1 | grep -E 'cmd / sec|stale|lost|cpu  |rror'
echo '=== soem stop-and-wait 2000'; $P --link soem --interface \$AUTD3_TEST_IFNAME --devices 2 --count 2000 --mode stop-and-wait 2>&1 | grep -E '^  mean|^  p50|^  p99|^  max|cpu  |rror'
echo '=== echocat 500us streaming 20000'; $P --link echocat --interface \$AUTD3_TEST_IFNAME --devices 2 --cycle-us 500 --count 20000 --mode streaming 2>/dev/null | grep -E 'cmd / sec|stale|lost|cpu  |late wake|wake-ups per'
"
# The appliance rows (docs/remote.md "Benchmark"): Remote -> autd3-remote-server -> each EtherCAT link the
# server has built in (SOEM only with -DAUTD3_REMOTE_SERVER_WITH_SOEM=ON), ARMT v7 and v3 clients, streaming
# and stop-and-wait, between that link's direct rows (before and after), each server row with the server's
# own stale/lost cycles and CPU per bus cycle; the server's whole log (its per-stage lines) stays in OUT.
for L in echocat ethercrab soem; do
$N --devices 2 --build $B -- bash "$HERE/bench-appliance.sh" "$B" @MASTER@ $L "$OUT/server-$L-run$r.log" 10000 3000
done
# The long-chain rows (docs/echocat.md "The wire limit and long chains"): the
# emulator's 100 Mbit/s wire model, the largest chain the wire carries at 1 ms
# (18) and at 500 us (9), and one beyond each (refused at open, naming the cycle).
for NC in "18 1000" "9 500" "19 1000" "10 500"; do set -- $NC
$N --devices $1 --build $B --emu-args "--wire" -- sh -c "
echo '=== echocat --wire $1 devices, $2 us, streaming 5000'; $P --link echocat --interface \$AUTD3_TEST_IFNAME --devices $1 --cycle-us $2 --count 5000 --mode streaming 2>&1 | grep -E 'cmd / sec|stale|lost|cpu  |late wake|after edge|wake-ups per|failed'
"
done
# The RT rows (500 us and 100 000 sends under --privileged + RT priority; docs/echocat.md).
$N --privileged --devices 2 --build $B -- sh -c "chrt -f -p 70 \$AUTD3_EMU_PID
echo '=== echocat RT streaming 100000'; $P --link echocat --interface \$AUTD3_TEST_IFNAME --devices 2 --count 100000 --mode streaming --rt-priority 80 2>/dev/null | grep -E 'cmd / sec|stale|lost|cpu  |late wake|wake-ups per'
echo '=== echocat RT 500us streaming 20000'; $P --link echocat --interface \$AUTD3_TEST_IFNAME --devices 2 --cycle-us 500 --count 20000 --mode streaming --rt-priority 80 2>/dev/null | grep -E 'cmd / sec|stale|lost|cpu  |late wake|wake-ups per'
"
$B/tools/twincat-emu/autd3-twincat-emu --devices 2 --listen 127.0.0.1:48911 > /dev/null 2>&1 & TC=$!
sleep 1
echo "=== twincat streaming 20000"; $P --link twincat --twincat-server 127.0.0.1 --twincat-port 48911 --ams-net-id 127.0.0.1.1.1 --devices 2 --count 20000 --mode streaming 2>/dev/null | sum
echo "=== twincat stop-and-wait 5000"; $P --link twincat --twincat-server 127.0.0.1 --twincat-port 48911 --ams-net-id 127.0.0.1.1.1 --devices 2 --count 5000 --mode stop-and-wait 2>/dev/null | sum
kill $TC
$B/tools/remote-server/autd3-remote-server --link emulator --listen 127.0.0.1:48912 > /dev/null 2>&1 & RS=$!
sleep 1
echo "=== remote->emulator streaming 20000"; $P --link remote --address 127.0.0.1:48912 --devices 2 --count 20000 --mode streaming 2>/dev/null | sum
echo "=== remote->emulator stop-and-wait 5000"; $P --link remote --address 127.0.0.1:48912 --devices 2 --count 5000 --mode stop-and-wait 2>/dev/null | sum
echo "=== emulator direct stop-and-wait 5000"; $P --link emulator --devices 2 --count 5000 --mode stop-and-wait 2>/dev/null | sum
kill $RS
# Firmware v12 (the legacy msg_id client, stop-and-wait per frame; docs/legacy.md), same machine state.
echo "=== v12 emulator link streaming 5000"; $P --protocol v12 --devices 2 --count 5000 --mode streaming 2>/dev/null | sum
echo "=== v12 emulator link stop-and-wait 2000"; $P --protocol v12 --devices 2 --count 2000 --mode stop-and-wait 2>/dev/null | sum
$N --devices 2 --build $B --emu-args "--firmware v12" -- sh -c "
echo '=== v12 echocat stop-and-wait 2000'; $P --link echocat --interface \$AUTD3_TEST_IFNAME --devices 2 --count 2000 --mode stop-and-wait --protocol v12 2>/dev/null | grep -E 'cmd / sec|^  mean|^  p50|^  p99|cpu  '
echo '=== v12 ethercrab stop-and-wait 2000'; $P --link ethercrab --interface \$AUTD3_TEST_IFNAME --devices 2 --count 2000 --mode stop-and-wait --protocol v12 2>/dev/null | grep -E 'cmd / sec|^  mean|^  p50|^  p99|cpu  '
echo '=== v12 soem stop-and-wait 2000'; $P --link soem --interface \$AUTD3_TEST_IFNAME --devices 2 --count 2000 --mode stop-and-wait --protocol v12 2>&1 | grep -E 'cmd / sec|^  mean|^  p50|^  p99|cpu  |rror'
"
$B/tools/twincat-emu/autd3-twincat-emu --devices 2 --listen 127.0.0.1:48913 --firmware v12 > /dev/null 2>&1 & TC12=$!
sleep 1
echo "=== v12 twincat stop-and-wait 2000"; $P --link twincat --twincat-server 127.0.0.1 --twincat-port 48913 --ams-net-id 127.0.0.1.1.1 --devices 2 --count 2000 --mode stop-and-wait --protocol v12 2>/dev/null | sum
kill $TC12
}

# Time the hypervisor took from this guest during a run (/proc/stat "steal",
# all CPUs; Linux guests only): a noisy neighbour shows here, not in the rows.
steal() { awk '/^cpu /{ print $9 + 0; exit }' /proc/stat 2>/dev/null || echo 0; }
for r in $(seq 1 "$RUNS"); do
  echo "### run $r of $RUNS ($(date -u +%H:%M:%S) UTC)" >&2
  s0=$(steal); t0=$(date +%s)
  one_run > "$OUT/run$r.txt" 2>&1
  s1=$(steal); t1=$(date +%s); hz=$(getconf CLK_TCK); cpus=$(nproc)
  { echo "=== host: time stolen by the hypervisor during the run"
    awk -v d=$((s1 - s0)) -v hz="$hz" -v c="$cpus" -v t=$((t1 - t0 > 0 ? t1 - t0 : 1)) \
      'BEGIN { printf "  steal         : %.2f %% of %d CPUs over %d s\n", 100 * d / hz / c / t, c, t }'
  } >> "$OUT/run$r.txt"
done
# The summary: for every row and figure, the median over the runs (the figure's
# first number; its unit and words from the first run) and the range.
awk -v runs="$RUNS" '
  FNR == 1 { split("", occ) }
  /^=== / { title = $0; if (!(title in seen)) { seen[title] = 1; order[++nt] = title } ; next }
  /:/ {
    i = index($0, ":"); label = substr($0, 1, i - 1); rest = substr($0, i + 1)
    # a label may repeat in a row (perftest: latency in ms, then in cycles): keep them apart
    if (++occ[title SUBSEP label] > 1) label = label "#" occ[title SUBSEP label]
    k = title SUBSEP label
    if (!(k in nv)) { keys[title, ++nk[title]] = label; nv[k] = 0 }
    if (match(rest, /-?[0-9]+(\.[0-9]+)?/)) {
      x = substr(rest, RSTART, RLENGTH) + 0; u = substr(rest, RSTART + RLENGTH)
      # perftest prints a time in us or ms as it fits: the summary in ms
      if (u ~ /^ us/) { x /= 1000; u = " ms" substr(u, 4) } else if (u ~ /^ s( |$)/) { x *= 1000; u = " ms" substr(u, 3) }
      v[k, ++nv[k]] = x
      if (!(k in unit)) unit[k] = u
    } else if (!(k in text)) text[k] = rest
  }
  END {
    printf "### summary: median (min .. max) of %d runs\n", runs
    for (t = 1; t <= nt; t++) {
      print order[t]
      for (j = 1; j <= nk[order[t]]; j++) {
        label = keys[order[t], j]; k = order[t] SUBSEP label; n = nv[k]
        if (n == 0) { printf "%s:%s\n", label, text[k]; continue }
        for (a = 1; a <= n; a++) s[a] = v[k, a]
        for (a = 2; a <= n; a++) { x = s[a]; for (b = a - 1; b >= 1 && s[b] > x; b--) s[b + 1] = s[b]; s[b + 1] = x }
        med = n % 2 ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
        printf "%s: %g%s   (%g .. %g, %d runs)\n", label, med, unit[k], s[1], s[n], n
      }
    }
  }' "$OUT"/run*.txt
echo "raw runs: $OUT"
