#!/usr/bin/env bash
# roce_trace_flow_fidelity: roce/trace-flow and roce/trace-port at flow fidelity record the fluid
# DCQCN model (docs/roce.md, "Parameters"): 8 x 4 MiB into gpu0 of tiny-16 with the paper preset
# (fluid model on). The flow's trace shows DCQCN's cuts (RC below the line rate) and the port's trace
# a standing fluid queue; tracing leaves the results as they are. Without the fluid model
# (the nic preset) flow fidelity has nothing to trace: the parameter is refused, exit 1.
set -euo pipefail
. "$(dirname "$0")/common.sh"

{
  echo "src,dst,bytes,start_us"
  for i in $(seq 8 15); do echo "$i,0,4194304,0"; done
} >"$WORK/incast.csv"
P=(--platform "$SRC/platforms/tiny-16.xml" --flows "$WORK/incast.csv" --fabric roce --fidelity flow --seed 1)

"$SGF" flows "${P[@]}" --cfg=roce/dcqcn:paper --out "$WORK/plain" >/dev/null
"$SGF" flows "${P[@]}" --cfg=roce/dcqcn:paper --cfg=roce/trace-flow:3 '--cfg=roce/trace-port:leaf0->gpu0' \
  --cfg=roce/trace-interval:10us --out "$WORK/traced" >/dev/null
cmp -s "$WORK/plain/flows.csv" "$WORK/traced/flows.csv" || die "tracing changed flows.csv"

python3 - "$WORK/traced" <<'PY' || die "the flow-fidelity traces"
import csv, sys
d = sys.argv[1]
rate = list(csv.DictReader(open(d + "/roce_flow_rate.csv")))
assert list(rate[0].keys()) == ["time_s", "rc_Bps", "rt_Bps", "alpha"], rate[0].keys()
line = 50e9  # 400 Gb/s
rcs = [float(r["rc_Bps"]) for r in rate]
assert len(rate) > 20, "%d rows of the flow's trace" % len(rate)
assert min(rcs) < line / 4, "no DCQCN cut in the fluid flow's trace: RC %.3g..%.3g" % (min(rcs), max(rcs))
times = [float(r["time_s"]) for r in rate]
assert times == sorted(times) and all(b - a >= 10e-6 - 1e-12 for a, b in zip(times[1:], times[2:])), "rows not 10 us apart"
port = list(csv.DictReader(open(d + "/roce_port_queue.csv")))
assert list(port[0].keys()) == ["time_s", "fluid_queue_bytes", "pfc_held"], port[0].keys()
assert max(float(r["fluid_queue_bytes"]) for r in port) > 1e6, "no fluid queue at leaf0->gpu0"
assert {r["pfc_held"] for r in port} <= {"0", "1"}
print("PASS: %d rows of RC (down to %.3g B/s), %d of the fluid queue (peak %.3g B)" %
      (len(rate), min(rcs), len(port), max(float(r["fluid_queue_bytes"]) for r in port)))
PY

status=0
"$SGF" flows "${P[@]}" --cfg=roce/trace-flow:3 --out "$WORK/nic" 2>"$WORK/err" >/dev/null || status=$?
[ "$status" -eq 1 ] || die "nic preset, flow fidelity, roce/trace-flow: exit $status, expected 1"
grep -q "parameter 'roce/trace-flow': at flow fidelity DCQCN's state and the queues are traced from the fluid model" \
  "$WORK/err" || die "no message naming the parameter: $(cat "$WORK/err")"
[ ! -e "$WORK/nic" ] || die "a refused run left $WORK/nic"
echo "PASS"
