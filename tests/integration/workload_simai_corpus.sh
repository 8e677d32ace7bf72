#!/usr/bin/env bash
# workload_simai_corpus: every SimAI/AICB-format file of tests/integration/data/workloads/simai
# (DATA, HYBRID_TRANSFORMER, HYBRID_TRANSFORMER_FWD_IN_BCKWD, MICRO; ga 1 and ga > 1 unrolled as
# AICB writes it; pp 2 with pp_comm with a colon, without one, as a float; no all_gpus; header
# fields SimAI does not read; MoE rows) runs with "sgfabric run --workload simai:FILE" on a
# 16-GPU A100 platform (ideal fabric, flow fidelity). For each file, against the file itself
# read here independently:
#  - compute_s equals the file's one-pass sum of the four time columns (a rank runs every row
#    once: AICB already unrolled the ga micro-batches into the rows, so no ga factor);
#  - the layout's GPU count is all_gpus, or the platform's 16 without it (and stderr says so);
#    the GPU type is the platform's (A100); microbatches is ga;
#  - pp > 1 gives a pipeline bubble; pp2-compute-only.txt (2 stages, 4 blocks of tf = 1 ms forward
#    and tb = 2 ms backward, no collectives) gives 1F1B's (m+p-1)(tf+tb) = 15 ms and a 3 ms bubble;
#  - the breakdown adds up to the iteration, including the world group MICRO files run on;
#  - a warning on stderr names the ignored header fields, and only for unknown-keys.txt.
set -euo pipefail
. "$(dirname "$0")/common.sh"

corpus=$DATA/workloads/simai
platform=$WORK/a100-16.xml
run_ok platform --gpus 16 --gpus-per-node 8 --radix 8 --gpu A100 -o "$platform"
n=0
for file in "$corpus"/*.txt; do
  name=$(basename "$file" .txt)
  out=$WORK/$name
  run_ok run --platform "$platform" --workload "simai:$file" --fabric ideal --fidelity flow --no-progress --out "$out"
  cp "$WORK/last.stderr" "$out.stderr"
  python3 - "$file" "$out/summary.json" "$out.stderr" <<'PY' || die "$file: the import does not simulate the file as it should (above)"
import json, math, sys
path, summary, stderr = sys.argv[1:4]
lines = open(path).read().split("\n")
head = lines[0].split()
keys = {}
for i, t in enumerate(head[1:], 1):
    k = t[:-1] if t.endswith(":") else t
    if i + 1 < len(head) and (t.endswith(":") or t == "pp_comm"):
        keys[k] = head[i + 1]
ga, pp = int(float(keys.get("ga", 1))), int(float(keys.get("pp", 1)))
gpus = int(keys["all_gpus"]) if "all_gpus" in keys else 16
rows = [l.split() for l in lines[2:] if l.strip()]
assert len(rows) == int(lines[1]), "row count"
one_pass = sum(float(r[2]) + float(r[5]) + float(r[8]) + float(r[11]) for r in rows) * 1e-9
s = json.load(open(summary))
err = open(stderr).read()
w, b, it = s["workload"], s["breakdown"], s["iteration_time_s"]
name = path.rsplit("/", 1)[-1]
print("  %-22s %-32s gpus %2d pp %d ga %d: iteration %.6f s, compute %.6f s (rows once %.6f, x ga %.6f), bubble %.6f s"
      % (name, head[0], w["gpus"], w["pp"], ga, it, b["compute_s"], one_pass, ga * one_pass, b["bubble_s"]))
ok = True
def check(cond, msg):
    global ok
    if not cond:
        print("    FAIL: " + msg)
        ok = False
check(math.isclose(b["compute_s"], one_pass, rel_tol=1e-9), "compute_s is not the rows' one-pass sum")
check(w["gpus"] == gpus and w["pp"] == pp and w["microbatches"] == ga, "layout or micro-batches differ from the header")
check(w["gpu"] == "A100", "GPU type %r is not the platform's A100" % w["gpu"])
check(("all_gpus" in keys) != ("no all_gpus in the header: the job spans the platform's 16 GPUs" in err),
      "stderr does not say (only) when the GPU count comes from the platform")
total = b["compute_s"] + b["bubble_s"] + b["straggler_s"] + b["other_s"] + sum(b["exposed_comm_s"].values())
check(abs(total - it) <= 1e-6 * it, "breakdown sums to %r, iteration is %r" % (total, it))
groups = {c["group"] for c in s["collectives"]}
if head[0] == "MICRO":
    check(groups == {"world"} and b["exposed_comm_s"].get("world", 0) > 0,
          "MICRO: collectives on %s, exposed world %r" % (sorted(groups), b["exposed_comm_s"].get("world")))
if pp > 1:
    check(b["bubble_s"] > 0 and "pp" in groups, "pp %d: no bubble or no pipeline messages" % pp)
if name == "pp2-compute-only.txt":
    check(math.isclose(it, 5 * 3e-3, rel_tol=1e-3) and math.isclose(b["bubble_s"], 3e-3, rel_tol=1e-2),
          "1F1B with p=2, m=4: want iteration 15 ms and bubble 3 ms")
want_warning = "ignoring header fields SimAI does not read: 'expert_parallel_npu_group', 'mode'"
# The run's own note that the file uses fewer GPUs than the platform is not the import's.
own = [l for l in err.splitlines() if "warning:" in l and "stay idle" not in l]
if name == "unknown-keys.txt":
    check(len(own) == 1 and want_warning in own[0], "no single warning naming the ignored fields")
else:
    check(not own, "unexpected warning: " + " | ".join(own))
sys.exit(0 if ok else 1)
PY
  n=$((n + 1))
done
[ "$n" -ge 12 ] || die "only $n files in $corpus"
echo "PASS ($n files)"
