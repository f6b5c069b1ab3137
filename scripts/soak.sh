#!/usr/bin/env bash
# Exactly-once soak (docs/reliability.md has the method and the table):
# streaming tagged frames through echocat -> autd3-emu (2 devices) in a private
# namespace, with frame loss, an unplug every 30 s and a power cycle every 2 min
# (alternating device 1 and device 0, the DC reference), then compare the client's
# per-device outcomes with the devices' own execution logs.
#
#   scripts/soak.sh [--seconds 3600] [--build build] [--loss 0.01]
#                   [--unplug-every 30] [--power-cycle-every 120] [--seed 1]
# (--seed: autd3-emu's fault draws, so a run's loss pattern is reproducible)
#
# Exit: 0 exact, 1 not exact, 77 cannot run here (nothing built / no namespaces).
set -u
SECONDS_=3600 BUILD=build LOSS=0.01 UNPLUG=30 CYCLE=120 SEED=1
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    --loss) LOSS="$2"; shift 2 ;;
    --unplug-every) UNPLUG="$2"; shift 2 ;;
    --power-cycle-every) CYCLE="$2"; shift 2 ;;
    --seed) SEED="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "soak.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
HERE="$(cd "$(dirname "$0")" && pwd)"
SOAK="$BUILD/tests/reliability/autd3-eo-soak"
[ -x "$SOAK" ] || { echo "SKIPPED: $SOAK is not built (cmake --build $BUILD --target autd3-eo-soak)"; exit 77; }
[ -x "$BUILD/tools/emu/autd3-emu" ] || { echo "SKIPPED: autd3-emu is not built"; exit 77; }
echo "soak: ${SECONDS_} s, loss $LOSS, unplug every ${UNPLUG} s, power cycle every ${CYCLE} s, echocat -> autd3-emu (2 devices)"
"$HERE/../tools/netns/autd3-netns" --devices 2 --build "$BUILD" --emu-args "--seed $SEED" -- \
  "$SOAK" --interface @MASTER@ --seconds "$SECONDS_" --loss "$LOSS" --unplug-every "$UNPLUG" \
  --power-cycle-every "$CYCLE" --devices 2
rc=$?
case $rc in
  125|126) echo "SKIPPED: autd3-netns could not set up the namespace (exit $rc)"; exit 77 ;;
esac
exit $rc
