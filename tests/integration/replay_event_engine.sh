#!/usr/bin/env bash
# replay_event_engine: --cfg=replay/engine:events runs the ranks inside the fabric's events instead
# of one SimGrid actor each (docs/performance.md, B4). What must hold:
#  - the same iteration as the actor engine (relative difference below 1e-3; only the order of
#    ranks acting at one date differs), the same compute time, exposed communication per group
#    within 1 % of the iteration, on ib and roce at flow fidelity (a 64-GPU 2:1 fat-tree, Llama-3
#    8B, TP 8, PP 2: pipeline receives, data-parallel and tensor-parallel collectives) and on ib at
#    packet fidelity;
#  - deterministic: byte-identical summary.json from two runs;
#  - summary.json records the engine;
#  - --timeline passes timeline_check.py (every rank's main track tiles its program) with the
#    events engine, with as many compute spans as the actor engine;
#  - two jobs on one fabric both finish;
#  - a deadlocked trace fails as with actors: rank named, non-zero exit, nothing written;
#  - an unknown engine is refused, naming the parameter.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$WORK"
run_ok platform --gpus 64 --radix 16 --oversubscription 2 -o p64.xml
run_ok workload --model llama3-8b --gpus 64 --tp 8 --pp 2 --global-batch 16 -o w64.txt
run_ok workload --model llama3-8b --gpus 16 --tp 8 --pp 2 --global-batch 4 -o w16.txt

# same A B: the two runs' iterations and breakdowns agree.
same() {
  python3 - "$1/summary.json" "$2/summary.json" <<'PY' || die "$1 and $2 disagree (above)"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
ia, ib = a["iteration_time_s"], b["iteration_time_s"]
assert abs(ia - ib) <= 1e-3 * ia, ("iteration", ia, ib)
ba, bb = a["breakdown"], b["breakdown"]
assert ba["compute_s"] == bb["compute_s"], ("compute", ba["compute_s"], bb["compute_s"])
for g, v in ba["exposed_comm_s"].items():
    assert abs(v - bb["exposed_comm_s"][g]) <= 0.01 * ia, ("exposed", g, v, bb["exposed_comm_s"][g])
assert a["parameters"]["replay/engine"] == "actors" and b["parameters"]["replay/engine"] == "events"
# The events engine's compute runs and wake-ups are fabric events: more of them, the same flows.
assert b["counters"]["events"] > a["counters"]["events"], ("events", a["counters"]["events"], b["counters"]["events"])
print("%s: iteration %.6f vs %.6f s (%+.2e)" % (sys.argv[1], ia, ib, ib / ia - 1))
PY
}

for fab in ib roce; do
  run_ok run --platform p64.xml --workload w64.txt --fabric $fab --no-progress -o $fab-actors
  run_ok run --platform p64.xml --workload w64.txt --fabric $fab --no-progress --cfg=replay/engine:events \
    -o $fab-events
  same $fab-actors $fab-events
done
run_ok run --platform p64.xml --workload w64.txt --fabric ib --no-progress --cfg=replay/engine:events -o ib-events2
cmp -s ib-events/summary.json ib-events2/summary.json || die "two runs with the events engine differ"

tiny=$PLATFORMS/tiny-16.xml
run_ok run --platform "$tiny" --workload w16.txt --fabric ib --fidelity packet --no-progress -o pkt-actors
run_ok run --platform "$tiny" --workload w16.txt --fabric ib --fidelity packet --no-progress \
  --cfg=replay/engine:events -o pkt-events
same pkt-actors pkt-events

run_ok run --platform "$tiny" --workload w16.txt --fabric ib --no-progress --timeline -o tl-actors
run_ok run --platform "$tiny" --workload w16.txt --fabric ib --no-progress --timeline --cfg=replay/engine:events \
  -o tl-events
python3 "$SRC/tests/integration/timeline_check.py" tl-events || die "the events engine's timeline fails the check"
python3 - tl-actors/timeline.json tl-events/timeline.json <<'PY' || die "the timelines' compute spans differ"
import collections, json, sys
def spans(p):
    c = collections.Counter()
    for e in json.load(open(p))["traceEvents"]:
        if e.get("cat") == "compute":
            c[e["pid"]] += 1
    return c
a, b = spans(sys.argv[1]), spans(sys.argv[2])
assert a == b and sum(a.values()) > 0, (a, b)
print("compute spans per rank: the same (%d in all)" % sum(a.values()))
PY

run_ok platform --gpus 32 --radix 8 -o p32.xml
run_ok workload --model llama3-8b --gpus 16 --tp 8 --pp 1 --global-batch 8 -o a.txt
run_ok run --platform p32.xml --workload a.txt --workload a.txt --fabric roce --no-progress --no-alone \
  --cfg=replay/engine:events -o two-jobs
grep -q "^job 1 (a.txt): iteration" "$WORK/last.stdout" || die "no result for the second job"

name=deadlock SIMGRID_FIRST=1 expect_failure run "deadlock.trace|rank 1 never finished its program" \
  --platform "$tiny" --workload "$DATA/workloads/deadlock.trace" --fabric maxmin --no-progress \
  --cfg=replay/engine:events
name=unknown_engine expect_failure run "replay/engine" --platform "$tiny" --workload w16.txt --fabric ib \
  --no-progress --cfg=replay/engine:fibers
echo "replay_event_engine: ok"
