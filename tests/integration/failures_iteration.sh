#!/usr/bin/env bash
# failures_iteration: spine0 (all its links) fails 380 ms (during the data-parallel all-reduce) into a Llama-3 8B iteration (64 GPUs,
# TP 8, PP 2) on a 2-tier fat-tree of radix-16 switches that is not rail-optimized (its DP traffic
# crosses the spines), at flow fidelity, on ib and roce. The iteration is slower than without the
# failure and MFU lower; InfiniBand's switch-local recovery (ib/failover:ar, 1 ms) costs less than
# the subnet manager's re-sweep (sm: 100 ms + 16 switches x 1 ms); RoCE's BFD detection and route
# update (950 ms) cost the most. summary.json's failures report the event, its delay and the time to
# recover, flows re-routed and bytes retransmitted; every byte posted is delivered.
set -euo pipefail
. "$(dirname "$0")/common.sh"

run_ok platform --gpus 64 --radix 16 -o "$WORK/p.xml"
run_ok workload --model llama3-8b --gpus 64 --tp 8 --pp 2 --global-batch 16 -o "$WORK/w.trace"
printf 'time_us,action,target\n380000,down,spine0\n' >"$WORK/spine.csv"

iter() { jget "$WORK/$1/summary.json" iteration_time_s; }
for fabric in ib roce; do
  run_ok run --platform "$WORK/p.xml" --workload "$WORK/w.trace" --fabric $fabric --no-progress -o "$WORK/base-$fabric"
  run_ok run --platform "$WORK/p.xml" --workload "$WORK/w.trace" --fabric $fabric --no-progress \
    --failures "$WORK/spine.csv" -o "$WORK/fail-$fabric"
done
run_ok run --platform "$WORK/p.xml" --workload "$WORK/w.trace" --fabric ib --no-progress --failures "$WORK/spine.csv" \
  --cfg ib/failover:ar -o "$WORK/fail-ib-ar"
# The schedule is an input of the manifest: replay finds it and gives the same summary.json.
run_ok replay "$WORK/fail-roce" --out "$WORK/replayed"
for d in base-ib fail-ib fail-ib-ar base-roce fail-roce; do
  echo "$d: iteration $(iter $d) s, MFU $(jget "$WORK/$d/summary.json" mfu)"
done
python3 - "$WORK" <<'PY' || die "failure outcome"
import json, sys
w = sys.argv[1]
s = {d: json.load(open("%s/%s/summary.json" % (w, d))) for d in ["base-ib", "fail-ib", "fail-ib-ar", "base-roce", "fail-roce"]}
it = {d: v["iteration_time_s"] for d, v in s.items()}
assert "failures" not in s["base-ib"] and "job_failed_at_s" not in s["base-ib"], "keys without --failures"
for fab in ["ib", "roce"]:
    assert it["fail-" + fab] > it["base-" + fab], fab + ": not slower"
    assert s["fail-" + fab]["mfu"] < s["base-" + fab]["mfu"], fab + ": MFU not lower"
assert it["base-ib"] < it["fail-ib-ar"] < it["fail-ib"], "ib: ar should recover faster than sm"
assert it["fail-roce"] - it["base-roce"] > it["fail-ib"] - it["base-ib"], "roce's BFD should cost more than ib's SM"
for d, delay in [("fail-ib", 0.116), ("fail-ib-ar", 0.001), ("fail-roce", 0.95)]:
    f = s[d]["failures"]
    ev = f["events"][0]
    assert s[d]["job_failed_at_s"] is None
    assert ev["target"] == "spine0" and ev["links"] == 8 and ev["applied"], ev
    assert abs(ev["recovery_delay_s"] - delay) < 1e-9, (d, ev)
    assert abs(ev["time_to_recover_s"] - delay) < 1e-9, (d, ev)
    assert ev["flows_affected"] > 0 and ev["flows_rerouted"] > 0, (d, ev)
    assert ev["flows_without_path"] == 0, (d, ev)
    assert f["bytes_retransmitted"] == ev["bytes_retransmitted"] > 0, (d, f)
    # Every byte posted delivered: the iteration finished, with the bytes of the run without it.
    base = s["base-" + d.split("-")[1]]
    for k in ("fabric_bytes", "nvlink_bytes"):
        assert s[d]["counters"][k] == base["counters"][k], (d, k)
    assert s[d]["fabric_bytes_by_group"] == base["fabric_bytes_by_group"], d
PY
