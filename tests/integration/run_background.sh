#!/usr/bin/env bash
# sgfabric run --background FILE: flows of a flow file (storage, checkpoints, another tenant)
# posted beside the job, into the same fabric.
#  - a background that shares no link with the job leaves the job's results exactly as without
#    it (iteration time, breakdown, collectives, slowest rank), on ib, roce and maxmin: its flows take
#    ids outside the job's sequence, so the job's flow-hashed ECMP paths (maxmin; roce hashes
#    per queue pair) and tie-breaks do not move;
#  - one that loads the job's NIC links slows the iteration on every fabric;
#  - summary.json's "background" counts every flow and byte; a replay reproduces the run;
#  - a malformed file is refused naming FILE:LINE, and nothing is written.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"
# 32 GPUs, 4 per leaf, not rail-optimized: the job runs on GPUs 0-15 (leaves 0-3), GPUs 16-31 are
# on leaves 4-7. tp 8, dp 2: a data-parallel all-reduce between nodes 0 and 1 each iteration.
run_ok platform --gpus 32 --radix 8 -o p.xml
run_ok workload --model llama3-8b --gpus 16 --tp 8 --pp 1 --global-batch 8 -o w.txt
python3 - <<'PY'
def write(name, dst0, every_us, mib):
    with open(name, "w") as f:
        f.write("src,dst,bytes,start_us\n")
        for i in range(8):
            for t in range(0, 800000, every_us):
                f.write("%d,%d,%d,%d\n" % (16 + i, dst0 + i, mib * 2**20, t))
write("apart.csv", 24, 50000, 256)   # node 2 -> node 3: leaves 4-7 and their spine links only
write("onto.csv", 8, 5000, 128)      # node 2 -> node 1: onto the job's NIC down-links, all iteration
PY
for fab in ib roce maxmin; do
  run_ok run --platform p.xml --workload w.txt --fabric $fab --no-progress -o alone-$fab
  run_ok run --platform p.xml --workload w.txt --fabric $fab --no-progress --background apart.csv -o apart-$fab
  run_ok run --platform p.xml --workload w.txt --fabric $fab --no-progress --background onto.csv -o onto-$fab
done
python3 - <<'PY' || die "background interference (above)"
import json
def load(d):
    return json.load(open(d + "/summary.json"))
JOB = ("iteration_time_s", "mfu", "breakdown", "slowest_rank", "collectives", "compute_stragglers")
for fab in ("ib", "roce", "maxmin"):
    alone, apart, onto = load("alone-" + fab), load("apart-" + fab), load("onto-" + fab)
    assert "background" not in alone, "a run without --background has a background member"
    for key in JOB:
        assert alone.get(key) == apart.get(key), "%s: %s moved with a background on other links" % (fab, key)
    b = apart["background"]
    assert b["flows"] == 8 * 16 and b["bytes"] == 8 * 16 * 256 * 2**20 and b["finished"] == b["flows"], b
    # The fabric-wide counters count the background's bytes too.
    assert apart["counters"]["fabric_bytes"] == alone["counters"]["fabric_bytes"] + b["bytes"], fab
    slow = onto["iteration_time_s"] / alone["iteration_time_s"]
    assert slow > 1.05, "%s: a background on the job's links slowed the iteration by only %.3fx" % (fab, slow)
    assert onto["breakdown"]["exposed_comm_s"]["dp"] > alone["breakdown"]["exposed_comm_s"]["dp"], fab
    o = onto["background"]
    # Per byte, the background that shares the job's links is slower than the one running free.
    assert o["finished"] == o["flows"] == 8 * 160 and o["fct_mean_s"] / 128 > 1.05 * b["fct_mean_s"] / 256, (o, b)
    print("%s: alone %.4f s, background apart identical, onto its links %.4f s (x%.3f); background FCT mean "
          "%.2f ms apart, %.2f ms onto" % (fab, alone["iteration_time_s"], onto["iteration_time_s"], slow,
                                           1e3 * b["fct_mean_s"], 1e3 * o["fct_mean_s"]))
PY
# The manifest names the background file: a replay finds it and reproduces the summary.
run_ok replay apart-roce --out apart-roce.again
grep -q "byte-identical" "$WORK/last.stdout" || die "the replay of a run with --background differs"

# A malformed background file: FILE:LINE, exit 1, no results directory.
printf 'src,dst,bytes,start_us\n16,24,1000,0\n16,99,1000,0\n' >bad.csv
status=0
"$SGF" run --platform p.xml --workload w.txt --fabric ib --no-progress --background bad.csv -o bad-out \
  >out.txt 2>err.txt || status=$?
[ "$status" -ne 0 ] || die "a background naming GPU 99 of 32 was accepted"
grep -q "bad.csv:3" err.txt || { cat err.txt >&2; die "the refusal does not name bad.csv:3"; }
[ ! -e bad-out ] || die "a refused run left bad-out behind"
echo "run --background: ok"
