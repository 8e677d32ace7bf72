#!/usr/bin/env bash
# workload_simai_every_type: workloads/examples/simai-every-type.txt (a hand-written SimAI/AICB
# workload using every comm type, with the _EP and _DP_EP suffixes; all_gpus 8, tp 2, ep 2, ga 2
# unrolled as AICB writes it: one prologue row, two micro-batch blocks, one epilogue row)
# imports and runs with "sgfabric run --workload simai:FILE" on tiny-16.xml at both fidelities:
# the summary has mfu: null (no FLOPs in a SimAI file) and a positive iteration time, and the collectives cover all five
# operations on the tp, dp, ep and dp_ep groups.
set -euo pipefail
. "$(dirname "$0")/common.sh"

example=$SRC/workloads/examples/simai-every-type.txt
[ -f "$example" ] || die "$example is missing"
for fidelity in packet flow; do
  out=$WORK/$fidelity
  run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "simai:$example" --fabric ideal --fidelity "$fidelity" \
    --no-progress --out "$out"
  s=$out/summary.json
  python3 - "$s" <<'PY' || die "$s: the SimAI import did not run as it should (above)"
import json, sys
s = json.load(open(sys.argv[1]))
it, mfu = s.get("iteration_time_s"), s.get("mfu")
w = s["workload"]
print("  %s fidelity: iteration %r s, mfu %r, layout gpus=%d tp=%d pp=%d dp=%d ep=%d, %d micro-batches"
      % (s["fidelity"], it, mfu, w["gpus"], w["tp"], w["pp"], w["dp"], w["ep"], w["microbatches"]))
ok = True
if not isinstance(it, float) or not it > 0:
    print("iteration_time_s missing or not positive"); ok = False
# A SimAI workload gives kernel times, no FLOPs: MFU and HFU are unknown, null (never 0).
if "mfu" not in s or mfu is not None or s.get("hfu", 0) is not None:
    print("mfu/hfu of a workload without FLOPs is %r/%r, expected null" % (mfu, s.get("hfu", 0))); ok = False
if (w["gpus"], w["tp"], w["ep"], w["dp"]) != (8, 2, 2, 4):
    print("layout is not the file's (all_gpus 8, tp 2, ep 2)"); ok = False
ops = {}
for c in s["collectives"]:
    ops.setdefault(c["op"], set()).add(c["group"])
    if c["op"] != "sendrecv" and not c["time_s"] > 0:
        print("collective %s/%s took no time" % (c["op"], c["group"])); ok = False
for op in sorted(ops):
    print("    %-14s on %s" % (op, ", ".join(sorted(ops[op]))))
for op in ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast"):
    if op not in ops:
        print("no %s in the collectives" % op); ok = False
groups = set().union(*ops.values()) if ops else set()
for g in ("tp", "dp", "ep", "dp_ep"):
    if g not in groups:
        print("no collective on group %s" % g); ok = False
b = s["breakdown"]
total = b["compute_s"] + b["bubble_s"] + b["straggler_s"] + b["other_s"] + sum(b["exposed_comm_s"].values())
if abs(total - it) > 1e-6 * it:
    print("breakdown sums to %r, iteration is %r" % (total, it)); ok = False
sys.exit(0 if ok else 1)
PY
done
echo "PASS"
