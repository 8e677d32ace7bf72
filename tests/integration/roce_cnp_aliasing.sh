#!/usr/bin/env bash
# roce_cnp_aliasing: why some flows of the paper preset's incast end early at packet fidelity
# (docs/roce.md, "What separates them at 128 GPUs"). 64 x 4 MB into gpu0 of ft2-128 (the flow file
# of docs/validation.md, gen_flows.py incast 128, seed 1). A flow's CNPs come every CNP interval
# (50 us) rounded up to a whole number of its packet spacing at the receiver, which round-robin
# service among ingress ports sets: 83.6 ns x the flows on its leaf up-link x the ingress ports of
# its spine's queue to leaf0 x 8 spines. GPU 98 (alone on leaf10's link to spine2, whose queue to
# leaf0 has 4 ingress ports): 2.68 us, so 50.8 us; GPU 109 (one of three on leaf13's): 8.03 us, so
# 56.2 us, longer than the 55 us rate timer, which then raises its rate between cuts: it ends
# first (3.65 ms), GPU 98 among the last (8.86 ms). Flow ids follow the posting order, GPU by GPU:
# GPU g is id g - 64 here.
set -euo pipefail
. "$(dirname "$0")/common.sh"

python3 "$SRC/analysis/validation/gen_flows.py" incast 128 8 4000000.0 1 "$WORK/incast.csv" >/dev/null
for gpu in 98 109; do
  run_ok flows --platform "$PLATFORMS/ft2-128.xml" --flows "$WORK/incast.csv" --fabric roce --cfg=roce/dcqcn:paper \
    --fidelity packet --seed 1 --cfg=roce/trace-flow:$((gpu - 64)) --cfg=roce/trace-interval:0s -o "$WORK/gpu$gpu"
done
python3 - "$WORK" <<'PY' || die "the CNP gaps or the completion order"
import csv, math, sys
w = sys.argv[1]
for gpu, flows_on_uplink, spine_ingress in ((98, 1, 4), (109, 3, 4)):
    rows = [(float(r["time_s"]), float(r["rc_Bps"])) for r in csv.DictReader(open("%s/gpu%d/roce_flow_rate.csv" % (w, gpu)))]
    cuts = [t1 for (t0, a), (t1, b) in zip(rows, rows[1:]) if b < a]
    gaps = [(b - a) * 1e6 for a, b in zip(cuts, cuts[1:5])]
    spacing = 83.56e-3 * flows_on_uplink * spine_ingress * 8  # us
    predicted = math.ceil(50 / spacing) * spacing
    fct = {int(r["src"]): float(r["fct_us"]) for r in csv.DictReader(open("%s/gpu%d/flows.csv" % (w, gpu)))}[gpu]
    print("  GPU %d: first gaps between cuts %s us, predicted %.1f us; ends at %.0f us" %
          (gpu, " ".join("%.1f" % g for g in gaps), predicted, fct))
    assert all(abs(g - predicted) < 0.2 for g in gaps), (gpu, gaps, predicted)
    if gpu == 98:
        assert max(gaps) < 55 and fct > 8000, (gaps, fct)
    else:
        assert min(gaps) > 55 and fct < 4500, (gaps, fct)
PY
echo "ok"
