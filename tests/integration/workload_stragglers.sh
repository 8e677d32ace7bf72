#!/usr/bin/env bash
# workload_stragglers: a rank that ends late because of its own communication holds up the others,
# and the breakdown says so (breakdown.straggler_s, docs/outputs.md) instead of calling it idle or
# bubble. Four ranks, tp 2, dp 2, pp 1, on tiny-16.xml (ideal fabric, flow fidelity): each computes
# 1 ms, then all-reduces 64 MiB over its dp group.
#  - "nvlink": the four ranks on gpu0..3 (one node): both dp groups reduce over NVLink and end
#    together: straggler_s = 0;
#  - "mixed": dp group {0, 2} on gpu0, gpu1 (NVLink), dp group {1, 3} on gpu2, gpu8 (through the
#    fabric, slower). The NVLink pair ends when the whole "nvlink" job ends (tA, its iteration),
#    the fabric pair at tB, this job's iteration. The stage's median end (lower middle) is tA, so
#    the NVLink ranks wait tB - tA for stragglers and the fabric ranks nothing:
#    straggler_s = (tB - tA) / 2, bubble_s = 0, other_s = 0, and the breakdown adds up.
set -euo pipefail
. "$(dirname "$0")/common.sh"

cat >"$WORK/job.trace" <<'TRACE'
sgf-workload 1
model name=straggler-test layers=1 hidden=64 heads=1 kv_heads=1 ffn=64 vocab=1 seq=1 experts=0 topk=0 gated=1
layout gpus=4 tp=2 pp=1 vpp=1 dp=2 ep=1 cp=1
gpu H100
batch micro=1 global=2 microbatches=1 recompute=0 zero1=0 seq_parallel=0 grad_bytes=4
stages layers=1 vfirst=0 vlayers=1
program 0 ops=2
0 compute ph=fwd mb=0 l=0 class=gemm time=1e-3
1 coll ph=bwd mb=0 coll=allreduce group=dp bytes=67108864
end
TRACE

# place NAME GPU0 GPU1 GPU2 GPU3: rank r on the r-th GPU given.
place() {
  local name=$1
  shift
  {
    printf '<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n<platform version="4.1">\n'
    local r=0
    for g in "$@"; do
      printf '  <actor host="gpu%d" function="rank"><argument value="%d"/></actor>\n' "$g" "$r"
      r=$((r + 1))
    done
    printf '</platform>\n'
  } >"$WORK/$name.xml"
  run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "$WORK/job.trace" --deployment "$WORK/$name.xml" \
    --fabric ideal --fidelity flow --no-progress --out "$WORK/$name"
}

place nvlink 0 2 1 3
place mixed 0 2 1 8
sa=$WORK/nvlink/summary.json
sb=$WORK/mixed/summary.json
ta=$(jget "$sa" iteration_time_s)
tb=$(jget "$sb" iteration_time_s)
strag_a=$(jget "$sa" breakdown.straggler_s)
strag=$(jget "$sb" breakdown.straggler_s)
echo "dp groups both on NVLink: iteration $ta s, straggler_s $strag_a s"
echo "one dp group through the fabric: iteration $tb s, straggler_s $strag s" \
  "(expected (tB - tA)/2 = $(python3 -c "print(($tb - $ta) / 2)") s), bubble_s $(jget "$sb" breakdown.bubble_s) s," \
  "other_s $(jget "$sb" breakdown.other_s) s"
python3 -c "import sys; sys.exit(0 if $tb > 1.5 * $ta else 1)" || die "the fabric dp group should be much slower ($tb vs $ta s)"
equal "straggler_s when every rank ends together" "$strag_a" 0
approx "straggler_s" "$strag" "$(python3 -c "print(($tb - $ta) / 2)")" 1e-6
equal "bubble_s without a pipeline" "$(jget "$sb" breakdown.bubble_s)" 0
python3 - "$sb" <<'PY' || die "the breakdown does not add up to the iteration time"
import json, sys
s = json.load(open(sys.argv[1]))
b = s["breakdown"]
total = b["compute_s"] + b["bubble_s"] + b["straggler_s"] + b["other_s"] + sum(b["exposed_comm_s"].values())
print("breakdown sum %.9f s, iteration %.9f s, other_s %.3g s" % (total, s["iteration_time_s"], b["other_s"]))
sys.exit(0 if abs(total - s["iteration_time_s"]) <= 1e-9 * s["iteration_time_s"] and abs(b["other_s"]) <= 1e-9 else 1)
PY
echo "PASS"
