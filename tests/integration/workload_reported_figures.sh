#!/usr/bin/env bash
# workload_reported_figures: the figures of summary.json hold up to a first check. Llama 3 8B on
# tiny-16.xml (2 nodes x 8 GPUs, 400 Gb/s = 50 GB/s NICs, 450 GB/s NVLink), TP 8, DP 2, on each
# fabric at flow fidelity (packet fidelity takes 30 s here; workload_allreduce_busbw covers it):
#  - every collective's busbw_GBps = algbw_GBps x nccl-tests' factor for its group size
#    (2(n-1)/n all-reduce; (n-1)/n all-gather, reduce-scatter, all-to-all; 1 broadcast), from the
#    same aggregate, and no busbw exceeds the line rate of the links its group crossed (NIC rate
#    when its bytes stayed off NVLink, NVLink rate when they stayed off the fabric);
#  - the breakdown adds up: compute + every exposed group + bubble + stragglers + other equals
#    iteration_time_s within 0.1 %;
#  - integral counts are JSON integers.
set -euo pipefail
. "$(dirname "$0")/common.sh"

run_ok workload --model llama3-8b --gpus 16 --tp 8 --pp 1 --global-batch 4 -o "$WORK/w.trace"
for case in maxmin:flow ib:flow roce:flow; do
  fabric=${case%%:*}
  fidelity=${case#*:}
  out=$WORK/$fabric-$fidelity
  run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "$WORK/w.trace" --fabric "$fabric" \
    --fidelity "$fidelity" --no-progress --out "$out"
  python3 - "$out/summary.json" "$fabric $fidelity" <<'PY' || die "$fabric, $fidelity: the reported figures do not hold (above)"
import json, sys
s = json.load(open(sys.argv[1]))
what = sys.argv[2]
NIC, NVLINK = 50e9, 450e9
sizes = {"tp": 8, "dp": 2, "mp": 8}  # mp: tp x pp, the gradient norm's all-reduce
factor = {"allreduce": lambda n: 2 * (n - 1) / n, "reducescatter": lambda n: (n - 1) / n,
          "allgather": lambda n: (n - 1) / n, "alltoall": lambda n: (n - 1) / n, "broadcast": lambda n: 1}
ok = True
for c in s["collectives"]:
    if "busbw_GBps" not in c:
        continue
    g, n = c["group"], sizes[c["group"]]
    fab, nvl = s["fabric_bytes_by_group"][g], s["nvlink_bytes_by_group"][g]
    line = NIC if nvl == 0 else NVLINK if fab == 0 else max(NIC, NVLINK)
    want = c["algbw_GBps"] * factor[c["op"]](n)
    print("%s: %s %s x%d: algbw %.2f GB/s, busbw %.2f GB/s (algbw x factor %.2f), line rate %.0f GB/s"
          % (what, c["op"], g, c["count"], c["algbw_GBps"], c["busbw_GBps"], want, line / 1e9))
    if abs(c["busbw_GBps"] - want) > 1e-9 * want:
        print("  busbw is not algbw x nccl-tests' factor"); ok = False
    if c["busbw_GBps"] * 1e9 > line * (1 + 1e-9):
        print("  busbw exceeds the line rate of the links crossed"); ok = False
    if not isinstance(c["count"], int):
        print("  count is not an integer"); ok = False
b = s["breakdown"]
parts = b["compute_s"] + sum(b["exposed_comm_s"].values()) + b["bubble_s"] + b["straggler_s"] + b["other_s"]
it = s["iteration_time_s"]
print("%s: breakdown sums to %.9g s, iteration_time_s %.9g s (%+.4f %%)" % (what, parts, it, 100 * (parts / it - 1)))
if abs(parts - it) > 1e-3 * it:
    print("  the breakdown does not add up to the iteration"); ok = False
if b["other_s"] < -1e-9 * it:
    print("  other_s is negative"); ok = False
for key in ("events", "fabric_bytes"):
    if not isinstance(s["counters"][key], int):
        print("  counters.%s is %r, not an integer" % (key, s["counters"][key])); ok = False
sys.exit(0 if ok else 1)
PY
done
echo "PASS"
