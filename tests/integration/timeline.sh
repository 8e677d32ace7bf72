#!/usr/bin/env bash
# timeline: "sgfabric run --timeline" writes DIR/timeline.json (docs/outputs.md, "timeline.json").
# Llama 3 8B on 16 GPUs (TP 8, PP 2, 8 micro-batches), tiny-16.xml, IB, flow fidelity. What must
# hold:
#  - timeline_check.py passes: the trace-event format (ph, ts, pid, tid, name; dur >= 0; spans
#    on one track nest or are disjoint), every rank's spans end at summary.json's iteration time,
#    each rank's main track tiles its program, compute spans average to breakdown.compute_s,
#    one collective span per collective instance of summary.json, with bytes and busbw;
#  - the checker rejects a timeline with one compute span removed (it checks something);
#  - byte-identical timeline.json from two identical runs; summary.json is the same with and
#    without --timeline, and without it there is no timeline.json;
#  - --timeline-max-events N keeps N spans, warns, and records how many were dropped;
#    a bad N is a usage error naming the option;
#  - --timeline-links US adds per-link utilisation counters, at flow and packet fidelity, without
#    changing summary.json, and stops sampling on a deadlocked trace;
#  - compare --timeline passes it to its runs.
set -euo pipefail
. "$(dirname "$0")/common.sh"
CHECK=$SRC/tests/integration/timeline_check.py

run_ok workload --model llama3-8b --gpus 16 --tp 8 --pp 2 --global-batch 8 --seed 1 -o "$WORK/llama.trace"
args=(run --platform "$PLATFORMS/tiny-16.xml" --workload "$WORK/llama.trace" --fabric ib --fidelity flow --seed 7
  --no-progress)
run_ok "${args[@]}" --timeline --out "$WORK/t1"
python3 "$CHECK" "$WORK/t1" || die "timeline.json fails the check"
grep -q '"timeline.json"' "$WORK/t1/manifest.json" || die "manifest.json does not list timeline.json"

# The checker itself: a compute span removed must be found.
python3 - "$WORK/t1" "$WORK/broken" <<'PY'
import json, os, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst)
shutil.copy(src + "/summary.json", dst)
tl = json.load(open(src + "/timeline.json"))
ev = tl["traceEvents"]
ev.pop([i for i, e in enumerate(ev) if e.get("cat") == "compute"][10])
json.dump(tl, open(dst + "/timeline.json", "w"))
PY
if python3 "$CHECK" "$WORK/broken" >"$WORK/broken.out"; then
  die "the checker accepts a timeline with a compute span missing"
fi
grep -q "gap" "$WORK/broken.out" || die "the checker did not report the gap: $(cat "$WORK/broken.out")"

run_ok "${args[@]}" --timeline --out "$WORK/t2"
cmp "$WORK/t1/timeline.json" "$WORK/t2/timeline.json" || die "timeline.json differs between identical runs"
run_ok "${args[@]}" --out "$WORK/plain"
[ ! -e "$WORK/plain/timeline.json" ] || die "timeline.json written without --timeline"
cmp "$WORK/t1/summary.json" "$WORK/plain/summary.json" || die "--timeline changes summary.json"

run_ok "${args[@]}" --timeline --timeline-max-events 1000 --out "$WORK/cut"
grep -q "timeline keeps its first 1000 spans" "$WORK/last.stderr" || die "no warning for a truncated timeline"
python3 - "$WORK/cut/timeline.json" "$WORK/t1/timeline.json" <<'PY' || die "the truncated timeline is wrong"
import json, sys
cut, full = (json.load(open(p)) for p in sys.argv[1:])
spans = [e for e in cut["traceEvents"] if e["ph"] == "X"]
n = full["otherData"]["events"]
assert len(spans) == 1000 == cut["otherData"]["events"], len(spans)
assert cut["otherData"]["dropped_events"] == n - 1000, (cut["otherData"], n)
PY
if "$SGF" "${args[@]}" --timeline --timeline-max-events 0 --out "$WORK/bad" 2>"$WORK/bad.err"; then
  die "--timeline-max-events 0 accepted"
else
  rc=$?
fi
[ "$rc" = 2 ] || die "--timeline-max-events 0: exit $rc, expected 2"
grep -q -- "--timeline-max-events" "$WORK/bad.err" || die "the error does not name --timeline-max-events"
[ ! -e "$WORK/bad" ] || die "a refused run left $WORK/bad"

# Link utilisation counters, flow and packet fidelity: valid, some link busy, results unchanged
# (packet fidelity on 2 micro-batches only, to stay fast).
run_ok workload --model llama3-8b --gpus 16 --tp 8 --pp 2 --global-batch 2 --seed 1 -o "$WORK/small.trace"
for fid in flow packet; do
  trace=$WORK/llama.trace
  [ $fid = flow ] || trace=$WORK/small.trace
  run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "$trace" --fabric ib --fidelity $fid --seed 7 \
    --no-progress --timeline --timeline-links 1000 --out "$WORK/links-$fid"
  python3 "$CHECK" "$WORK/links-$fid" >"$WORK/links.out" || { cat "$WORK/links.out"; die "$fid: the links' timeline fails the check"; }
  python3 - "$WORK/links-$fid/timeline.json" <<'PY' || die "$fid: the link counters are wrong"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
c = [e for e in ev if e["ph"] == "C"]
names = {e["name"] for e in c}
busy = max(e["args"]["utilisation"] for e in c)
assert len(names) >= 32 and busy > 0.5, (len(names), busy)  # the TP all-reduces fill NVLink
print("%d link counters, %d events, peak utilisation %.3f" % (len(names), len(c), busy))
PY
done
run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "$WORK/small.trace" --fabric ib --fidelity packet --seed 7 \
  --no-progress --out "$WORK/plain-packet"
cmp "$WORK/links-packet/summary.json" "$WORK/plain-packet/summary.json" || die "--timeline-links changes summary.json"
cmp "$WORK/links-flow/summary.json" "$WORK/plain/summary.json" || die "--timeline-links changes summary.json"
# The sampler stops on a deadlocked trace (else the simulation would never end).
if timeout 60 "$SGF" run --platform "$PLATFORMS/tiny-16.xml" --workload "$DATA/workloads/deadlock.trace" --fabric maxmin \
  --no-progress --timeline --timeline-links 10 --out "$WORK/dead" 2>"$WORK/dead.err"; then
  die "a deadlocked trace succeeded"
else
  rc=$?
fi
[ "$rc" = 1 ] || die "deadlocked trace with --timeline-links: exit $rc, expected 1"
grep -q "never finished" "$WORK/dead.err" || die "no deadlock message: $(cat "$WORK/dead.err")"
if "$SGF" "${args[@]}" --timeline-links 1000 --out "$WORK/bad" 2>"$WORK/bad.err"; then
  die "--timeline-links without --timeline accepted"
fi
grep -q -- "--timeline-links needs --timeline" "$WORK/bad.err" || die "no message for --timeline-links alone"

run_ok compare --fabrics ib,ideal --gpus 16 --model llama3-8b --tp 8 --pp 2 --global-batch 8 --timeline \
  --out "$WORK/cmp"
for f in ib ideal; do
  python3 "$CHECK" "$WORK/cmp/$f" || die "compare's $f run: timeline.json fails the check"
done
echo "PASS: timeline.json valid, deterministic, truncated on request; $(stat -c %s "$WORK/t1/timeline.json") bytes"
