#!/usr/bin/env bash
# One benchmark session, the README's performance table: every link, 2 devices,
# 1 ms, the default device model. B = a build dir (SOEM rows need -DSOEM_ROOT=...).
# Takes about 10 minutes.
B=${B:-build}
P=$B/tools/perftest/autd3-perftest
N="$(dirname "$0")/../tools/netns/autd3-netns"
sum() { grep -E "cmd / sec|^  mean|^  p50|^  p95|^  p99|^  max|^  min|stale cycles|lost cycles|timeouts|cpu  |late wake|jitter" ; }
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
# The long-chain rows (docs/echocat.md "The wire limit and long chains"): the
# emulator's 100 Mbit/s wire model, the largest chain the wire carries at 1 ms
# (18) and at 500 us (9), and one beyond each (refused at open, naming the cycle).
for NC in "18 1000" "9 500" "19 1000" "10 500"; do set -- $NC
$N --devices $1 --build $B --emu-args "--wire" -- sh -c "
echo '=== echocat --wire $1 devices, $2 us, streaming 5000'; $P --link echocat --interface \$AUTD3_TEST_IFNAME --devices $1 --cycle-us $2 --count 5000 --mode streaming 2>&1 | grep -E 'cmd / sec|stale|lost|cpu  |late wake|after edge|wake-ups per|failed'
"
done
# The RT rows (issue 17: 500 us and 100 000 sends under --privileged + RT priority).
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
