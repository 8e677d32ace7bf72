#!/usr/bin/env bash
# Several jobs on one fabric: sgfabric run --workload A --workload B [--placement POLICY].
#  - two jobs on disjoint leaves share no link: each runs exactly as alone (slowdown 1, and its
#    iteration equals a separate single-job run on the same GPUs), on ib and roce;
#  - scattered at random over the same leaves they share leaf up-links and spine links: at least
#    one job is slower than alone, on ib and on roce;
#  - summary.json's jobs[] (placement, GPUs, iteration, MFU, alone time, slowdown) and the printed
#    lines; --no-alone skips the alone runs (slowdown null);
#  - refusals: more ranks than GPUs, whole nodes that are not there, an unknown policy,
#    --deployment with two jobs; each a clear message, nothing written.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"
# 32 GPUs, 4 per leaf (8 leaves, 4 spines), nodes of 8 GPUs: two 16-GPU jobs, tp 8, dp 2.
run_ok platform --gpus 32 --radix 8 -o p.xml
run_ok workload --model llama3-8b --gpus 16 --tp 8 --pp 1 --global-batch 8 -o a.txt
run_ok workload --model llama3-8b --gpus 16 --tp 8 --pp 1 --global-batch 8 --seq 4096 -o b.txt
for fab in ib roce; do
  run_ok run --platform p.xml --workload a.txt --workload b.txt --fabric $fab --no-progress -o apart-$fab
  grep -q "^job 1 (b.txt): iteration .* its time alone" "$WORK/last.stdout" || die "no line for job 1"
  run_ok run --platform p.xml --workload a.txt --workload b.txt --placement random --fabric $fab --no-progress \
    -o mixed-$fab
done
# Job b alone on GPUs 16-31, through a deployment file: the reference for its "alone" time.
python3 - <<'PY'
with open("b-on-16.xml", "w") as f:
    f.write("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
            "<platform version=\"4.1\">\n")
    for r in range(16):
        f.write("  <actor host=\"gpu%d\" function=\"rank\"><argument value=\"%d\"/></actor>\n" % (16 + r, r))
    f.write("</platform>\n")
PY
for fab in ib roce; do
  run_ok run --platform p.xml --workload b.txt --deployment b-on-16.xml --fabric $fab --no-progress -o b-alone-$fab
done
python3 - <<'PY' || die "multi-job results (above)"
import json
for fab in ("ib", "roce"):
    apart = json.load(open("apart-%s/summary.json" % fab))
    mixed = json.load(open("mixed-%s/summary.json" % fab))
    alone_b = json.load(open("b-alone-%s/summary.json" % fab))
    a, b = apart["jobs"]
    assert apart["placement"] == "contiguous" and mixed["placement"] == "random"
    assert (a["first_gpu"], a["last_gpu"], b["first_gpu"], b["last_gpu"]) == (0, 15, 16, 31), (a, b)
    # No shared link: exactly as alone, and job b's alone time is a separate run's.
    assert a["slowdown"] == 1 and b["slowdown"] == 1, (a, b)
    assert b["alone_iteration_time_s"] == alone_b["iteration_time_s"], (b, alone_b["iteration_time_s"])
    assert apart["iteration_time_s"] == a["iteration_time_s"] and apart["mfu"] == a["mfu"]
    assert abs(b["mfu"] - alone_b["mfu"]) < 1e-12
    # Scattered over the same leaves: they share links, and it shows.
    worst = max(j["slowdown"] for j in mixed["jobs"])
    assert worst > 1.001, "%s: random placement, slowdowns %s" % (fab, [j["slowdown"] for j in mixed["jobs"]])
    print("%s: apart %s, random %s" % (fab, [round(j["slowdown"], 4) for j in apart["jobs"]],
                                       [round(j["slowdown"], 4) for j in mixed["jobs"]]))
PY
run_ok run --platform p.xml --workload a.txt --workload b.txt --no-alone --fabric ib --no-progress -o no-alone
python3 -c 'import json, sys; j = json.load(open("no-alone/summary.json"))["jobs"]; sys.exit(any(x["slowdown"] is not None for x in j))' ||
  die "--no-alone still reports slowdowns"

refuse() { # refuse EXPECTED_STATUS MESSAGE_PATTERN ARGS...
  local want=$1 pattern=$2
  shift 2
  local status=0
  "$SGF" run --platform p.xml --no-progress "$@" -o refused >out.txt 2>err.txt || status=$?
  [ "$status" -eq "$want" ] || { cat err.txt >&2; die "run $*: exit $status, expected $want"; }
  grep -q "$pattern" err.txt || { cat err.txt >&2; die "run $*: the message does not say '$pattern'"; }
  [ ! -e refused ] || die "run $*: a refused run left its directory"
}
refuse 1 "the 3 jobs have 48 ranks but the platform p.xml has 32 GPUs" --workload a.txt --workload b.txt --workload a.txt
run_ok workload --model llama3-8b --gpus 12 --tp 4 --pp 1 --global-batch 6 --recompute full --ignore-memory -o c.txt
run_ok workload --model llama3-8b --gpus 4 --tp 4 --pp 1 --global-batch 2 --recompute full --ignore-memory -o d.txt
# 12 + 12 + 4 = 28 GPUs fit GPU by GPU, not as 2 + 2 + 1 whole nodes of 8 (the platform has 4).
run_ok run --platform p.xml --workload c.txt --workload c.txt --workload d.txt --ignore-memory --no-alone \
  --no-progress -o packed
refuse 1 "rail-aligned placement gives each job whole nodes" --workload c.txt --workload c.txt --workload d.txt \
  --placement rail-aligned --ignore-memory
refuse 2 "unknown placement 'packed'" --workload a.txt --workload b.txt --placement packed
refuse 2 "several jobs take --placement" --workload a.txt --workload b.txt --deployment b-on-16.xml
echo "multi-job: ok"
