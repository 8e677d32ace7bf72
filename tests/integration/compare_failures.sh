#!/usr/bin/env bash
# compare --failures FILE: the same failure schedule in every fabric's run (docs/failures.md).
#  - the table shows each fabric's MFU with the failure, the flows re-routed and the bytes
#    retransmitted, and each fabric's MFU is below its MFU without the failure (its cost);
#  - DIR keeps the schedule (failures.csv), the manifest names it, and replay reproduces the runs;
#  - without --failures none of the failure rows appears.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"
# Not rail-optimized: spines carry the data-parallel traffic, so a spine failure costs something.
run_ok platform --gpus 64 --radix 16 -o p.xml
printf 'time_us,action,target\n380000,down,spine0\n' >spine0.csv
job=(--platform p.xml --model llama3-8b --gpus 64 --tp 8 --pp 2 --global-batch 16)
run_ok compare "${job[@]}" --out base
cp "$WORK/last.stdout" base.txt
run_ok compare "${job[@]}" --failures spine0.csv --out failed
cp "$WORK/last.stdout" failed.txt
grep -q "^failures: flows re-routed" failed.txt || die "compare --failures shows no re-routed flows row"
grep -q "^failures: bytes retransmitted" failed.txt || die "compare --failures shows no retransmitted bytes row"
! grep -q "^failures:" base.txt || die "a compare without --failures shows failure rows"
cmp -s spine0.csv failed/failures.csv || die "DIR does not keep a copy of the schedule"
python3 - <<'PY' || die "the failure's cost (above)"
import json
for fab in ("ib", "roce"):
    base = json.load(open("base/%s/summary.json" % fab))
    failed = json.load(open("failed/%s/summary.json" % fab))
    assert failed["failures"]["flows_rerouted"] > 0 and failed["failures"]["bytes_retransmitted"] > 0, failed["failures"]
    assert failed["mfu"] < base["mfu"], (fab, failed["mfu"], base["mfu"])
    print("%s: MFU %.2f %% -> %.2f %% with spine0 down at 380 ms" % (fab, 100 * base["mfu"], 100 * failed["mfu"]))
m = json.load(open("failed/manifest.json"))
assert "failures.csv" in m["inputs"], m["inputs"]
PY
run_ok replay failed --out failed.again
grep -q "byte-identical" "$WORK/last.stdout" || die "the replay of compare --failures differs"
echo "compare --failures: ok"
