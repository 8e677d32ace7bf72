#!/usr/bin/env bash
# failures_no_path: GPU 3's NIC link goes down 50 ms into a Llama-3 8B iteration (64 GPUs, TP 8,
# PP 2, flow fidelity, roce and ib): no other path leaves that GPU. With coll/timeout:500ms the
# run stops with "job failed at t" (t = when its transfer stalled + 500 ms), exit status 3, and a
# complete results directory whose summary.json has job_failed_at_s and no MFU; the link coming
# back up at 200 ms (before the timeout) lets the iteration finish, slower than without the
# failure. The same failure through a flow file (sgfabric flows) leaves the unfinished flow's
# fct_us empty.
set -euo pipefail
. "$(dirname "$0")/common.sh"

run_ok platform --gpus 64 --radix 16 -o "$WORK/p.xml"
run_ok workload --model llama3-8b --gpus 64 --tp 8 --pp 2 --global-batch 16 -o "$WORK/w.trace"
printf 'time_us,action,target\n50000,down,gpu3--leaf0\n' >"$WORK/down.csv"
printf 'time_us,action,target\n50000,down,gpu3\n200000,up,gpu3\n' >"$WORK/downup.csv"

for fabric in roce ib; do
  run_ok run --platform "$WORK/p.xml" --workload "$WORK/w.trace" --fabric $fabric --no-progress -o "$WORK/base-$fabric"
  status=0
  "$SGF" run --platform "$WORK/p.xml" --workload "$WORK/w.trace" --fabric $fabric --no-progress \
    --failures "$WORK/down.csv" --cfg coll/timeout:500ms -o "$WORK/failed-$fabric" >"$WORK/stdout.txt" 2>"$WORK/err" || status=$?
  cat "$WORK/err"
  [ "$status" -eq 3 ] || die "$fabric: exit status $status, expected 3 (job failed)"
  grep -q "job failed at .* made no progress since .* (link gpu3--leaf0 down; coll/timeout 0.5 s)" "$WORK/err" ||
    die "$fabric: no job-failed message"
  for f in summary.json manifest.json links.csv; do
    [ -s "$WORK/failed-$fabric/$f" ] || die "$fabric: the failed job's $f is missing"
  done
  python3 - "$WORK/failed-$fabric/summary.json" <<'PY' || die "$fabric: failed job's summary"
import json, sys
s = json.load(open(sys.argv[1]))
t = s["job_failed_at_s"]
ev = s["failures"]["events"][0]
assert t is not None and s["iteration_time_s"] is None and s["mfu"] is None, s
assert 0.55 <= t <= 0.56 + 0.45, t  # stalled at or after 50 ms, failed 500 ms later, before the iteration's end
assert ev["flows_affected"] > 0 and ev["flows_rerouted"] == 0, ev
assert s["sim_time_s"] == t
PY
  run_ok run --platform "$WORK/p.xml" --workload "$WORK/w.trace" --fabric $fabric --no-progress \
    --failures "$WORK/downup.csv" --cfg coll/timeout:500ms -o "$WORK/repaired-$fabric"
  python3 - "$WORK/base-$fabric/summary.json" "$WORK/repaired-$fabric/summary.json" <<'PY' || die "$fabric: repaired"
import json, sys
b, r = (json.load(open(p)) for p in sys.argv[1:])
print("without failure %.4f s, NIC link down 50-200 ms %.4f s" % (b["iteration_time_s"], r["iteration_time_s"]))
assert r["job_failed_at_s"] is None
assert r["iteration_time_s"] > b["iteration_time_s"] and r["mfu"] < b["mfu"]
assert r["counters"]["fabric_bytes"] == b["counters"]["fabric_bytes"]
PY
done

# flows: GPU 3 -> GPU 35 stalls for good; GPU 1 -> GPU 33 finishes.
printf 'src,dst,bytes,start_us\n3,35,100000000,0\n1,33,100000000,0\n' >"$WORK/f.csv"
printf 'time_us,action,target\n100,down,gpu3\n' >"$WORK/nic.csv"
status=0
"$SGF" flows --platform "$WORK/p.xml" --flows "$WORK/f.csv" --fabric ib --fidelity flow --failures "$WORK/nic.csv" \
  --cfg coll/timeout:50ms -o "$WORK/flows" 2>"$WORK/err" || status=$?
[ "$status" -eq 3 ] || { cat "$WORK/err" >&2; die "flows: exit status $status, expected 3"; }
grep -q "^3,35,100000000,0,$" "$WORK/flows/flows.csv" || die "flows: the stalled flow has an fct"
grep -q "^1,33,100000000,0,[0-9]" "$WORK/flows/flows.csv" || die "flows: the other flow has no fct"
approx "flows: job_failed_at_s" "$(jget "$WORK/flows/summary.json" job_failed_at_s)" 0.0501 1e-9
# A schedule naming a link the platform lacks is refused with FILE:LINE.
printf 'time_us,action,target\n# a comment\n100,down,gpu3--leaf9\n' >"$WORK/bad.csv"
name="bad failure schedule"
expect_failure flows "bad.csv:3: 'gpu3--leaf9' is neither a link id" --platform "$WORK/p.xml" --flows "$WORK/f.csv" \
  --fidelity flow --failures "$WORK/bad.csv"
