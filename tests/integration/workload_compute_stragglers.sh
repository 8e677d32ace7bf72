#!/usr/bin/env bash
# workload_compute_stragglers: the straggler/... parameters (docs/compute-model.md, "Stragglers")
# slow a GPU's compute, and a synchronous data-parallel job runs at its slowest member's pace.
# Four ranks, dp 4, each computes 10 ms then all-reduces 64 MiB (tiny-16.xml, ib, flow):
#  - GPU 2 at 1.2x: the iteration grows by exactly 0.2 x 10 ms (the all-reduce starts when the
#    last member calls it), the other ranks wait that long in the dp all-reduce (mean exposed dp
#    grows by 3/4 x 2 ms), and compute_stragglers names rank 2 as the slowest to compute;
#  - log-normal jitter: the same seed gives the same iteration, another seed another one; the
#    iteration is the slowest rank's compute plus the all-reduce;
#  - a throttled fraction of the platform's GPUs: round(0.25 x 16) = 4 GPUs slowed;
#  - a malformed list or a GPU the platform lacks: an error naming the parameter.
set -euo pipefail
. "$(dirname "$0")/common.sh"

cat >"$WORK/job.trace" <<'TRACE'
sgf-workload 1
model name=straggler-test layers=1 hidden=64 heads=1 kv_heads=1 ffn=64 vocab=1 seq=1 experts=0 topk=0 gated=1
layout gpus=4 tp=1 pp=1 vpp=1 dp=4 ep=1 cp=1
gpu H100
batch micro=1 global=4 microbatches=1 recompute=0 zero1=0 seq_parallel=0 grad_bytes=4
stages layers=1 vfirst=0 vlayers=1
program 0 ops=2
0 compute ph=fwd mb=0 l=0 class=gemm time=10e-3
1 coll ph=bwd mb=0 coll=allreduce group=dp bytes=67108864
end
TRACE

go() { # NAME ARGS...
  local name=$1
  shift
  run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "$WORK/job.trace" --fabric ib --fidelity flow \
    --no-progress --out "$WORK/$name" "$@"
}
go base
go slow --cfg=straggler/slow-gpus:2:1.2
go jitter1 --cfg=straggler/jitter:0.1 --seed 1
go jitter1b --cfg=straggler/jitter:0.1 --seed 1
go jitter2 --cfg=straggler/jitter:0.1 --seed 2
go throttled --cfg=straggler/throttled-fraction:0.25 --cfg=straggler/throttle-factor:1.5

python3 - "$WORK" <<'PY' || die "compute stragglers are wrong"
import json, sys
w = sys.argv[1]
s = {d: json.load(open("%s/%s/summary.json" % (w, d))) for d in
     ("base", "slow", "jitter1", "jitter1b", "jitter2", "throttled")}
it = {d: v["iteration_time_s"] for d, v in s.items()}
dp = {d: v["breakdown"]["exposed_comm_s"]["dp"] for d, v in s.items()}
print("iterations:", it)
base = s["base"]["compute_stragglers"]
if base["gpus_slowed"] != 0 or base["max_factor"] != 1:
    sys.exit("no straggler set, yet %r" % base)
if abs(it["slow"] - it["base"] - 0.2 * 10e-3) > 1e-9:
    sys.exit("GPU 2 at 1.2x: iteration %r, expected %r + 2 ms" % (it["slow"], it["base"]))
if abs(dp["slow"] - dp["base"] - 0.75 * 2e-3) > 1e-9:
    sys.exit("mean dp wait %r, expected %r + 1.5 ms (three ranks wait 2 ms)" % (dp["slow"], dp["base"]))
c = s["slow"]["compute_stragglers"]
if (c["gpus_slowed"], c["max_factor"], c["slowest_compute"]["rank"], c["slowest_compute"]["gpu"]) != (1, 1.2, 2, 2) \
        or abs(c["slowest_compute"]["compute_s"] - 12e-3) > 1e-12:
    sys.exit("compute_stragglers %r" % c)
if open("%s/jitter1/summary.json" % w).read().replace("jitter1", "") != \
        open("%s/jitter1b/summary.json" % w).read().replace("jitter1b", ""):
    sys.exit("the same seed gave different results")
if it["jitter1"] == it["jitter2"]:
    sys.exit("another seed gave the same jittered iteration")
for d in ("jitter1", "jitter2"):
    slowest = s[d]["compute_stragglers"]["slowest_compute"]["compute_s"]
    if abs(it[d] - (slowest + it["base"] - 10e-3)) > 1e-9:
        sys.exit("%s: iteration %r, expected the slowest compute %r plus the all-reduce" % (d, it[d], slowest))
if s["throttled"]["compute_stragglers"]["gpus_slowed"] != 4:
    sys.exit("throttled: %r" % s["throttled"]["compute_stragglers"])
PY

name=bad-gpu expect_failure run "straggler/slow-gpus|GPU 99 does not exist" --platform "$PLATFORMS/tiny-16.xml" \
  --workload "$WORK/job.trace" --fabric ib --cfg=straggler/slow-gpus:99:1.2
name=bad-list expect_failure run "straggler/slow-gpus|is not a list of GPU:FACTOR" --platform "$PLATFORMS/tiny-16.xml" \
  --workload "$WORK/job.trace" --fabric ib --cfg=straggler/slow-gpus:2:x
name=below-one expect_failure run "straggler/slow-gpus|outside [1, 100]" --platform "$PLATFORMS/tiny-16.xml" \
  --workload "$WORK/job.trace" --fabric ib --cfg=straggler/slow-gpus:2:0.5
echo "PASS"
