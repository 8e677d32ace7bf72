#!/usr/bin/env bash
# roce_flow_estimates: RoCE at flow fidelity writes its estimated congestion signals
# (docs/roce.md, "Flow fidelity: estimated counters"): on the 8-to-1 incast of
# workloads/examples (400 Gb/s, nic preset, where DCQCN cannot hold the receiver's port) the
# marks, CNPs, cuts and paused time are positive, the per-port maps add up to the totals and
# mark the congested port most; DCQCN off leaves marks and pauses but no CNP or cut; FIFO shares off
# (plain max-min) estimates nothing: null, and no maps.
set -euo pipefail
. "$(dirname "$0")/common.sh"

flows=$SRC/workloads/examples/incast-8to1.csv
platform=$PLATFORMS/tiny-16.xml

check() { # DIR DCQCN(on|off)
  python3 - "$1/summary.json" "$2" <<'PY' || die "$1: estimates are wrong"
import json, sys
c = json.load(open(sys.argv[1]))["counters"]
dcqcn = sys.argv[2] == "on"
for key in ("ecn_marks_est", "cnps_est", "dcqcn_rate_cuts_est", "pfc_paused_s_est"):
    if c.get(key) is None:
        sys.exit("%s is %r, not a number" % (key, c.get(key)))
if c["ecn_marks_est"] <= 0 or c["pfc_paused_s_est"] <= 0:
    sys.exit("no marks or no pauses estimated: %r, %r" % (c["ecn_marks_est"], c["pfc_paused_s_est"]))
if dcqcn and not (0 < c["dcqcn_rate_cuts_est"] <= c["cnps_est"]):
    sys.exit("DCQCN on: CNPs %r, cuts %r" % (c["cnps_est"], c["dcqcn_rate_cuts_est"]))
if not dcqcn and (c["cnps_est"] != 0 or c["dcqcn_rate_cuts_est"] != 0):
    sys.exit("DCQCN off: CNPs %r, cuts %r (no CNP without DCQCN)" % (c["cnps_est"], c["dcqcn_rate_cuts_est"]))
marks, paused = c["ecn_marks_est_per_port"], c["pfc_paused_s_est_per_port"]
# the receiver's port marks the incast's packets while it is saturated (not the last flow's
# tail, alone below the port's rate): most of the 32 MB / 4096 B, and more than any other port
at = marks.get("leaf0->gpu0", 0)
if not 0.5 * 32e6 / 4096 < at <= 32e6 / 4096 or at != max(marks.values()):
    sys.exit("leaf0->gpu0 marks %r of %r packets; per port %r" % (at, 32e6 / 4096, marks))
if abs(sum(marks.values()) - c["ecn_marks_est"]) > len(marks):  # each port rounded
    sys.exit("per-port marks add up to %r, total %r" % (sum(marks.values()), c["ecn_marks_est"]))
if abs(sum(paused.values()) - c["pfc_paused_s_est"]) > 1e-9 * c["pfc_paused_s_est"]:
    sys.exit("per-port paused time adds up to %r, total %r" % (sum(paused.values()), c["pfc_paused_s_est"]))
PY
}

run_ok flows --platform "$platform" --flows "$flows" --fabric roce --fidelity flow --out "$WORK/nic"
check "$WORK/nic" on
run_ok flows --platform "$platform" --flows "$flows" --fabric roce --fidelity flow --cfg=roce/dcqcn:off \
  --out "$WORK/off"
check "$WORK/off" off

run_ok flows --platform "$platform" --flows "$flows" --fabric roce --fidelity flow --cfg=roce/flow-fifo:off \
  --out "$WORK/maxmin"
python3 - "$WORK/maxmin/summary.json" <<'PY' || die "flow-fifo:off: the estimates are not null"
import json, sys
c = json.load(open(sys.argv[1]))["counters"]
for key in ("ecn_marks_est", "cnps_est", "dcqcn_rate_cuts_est", "pfc_paused_s_est"):
    if c.get(key, "absent") is not None:
        sys.exit("%s is %r" % (key, c.get(key, "absent")))
if "ecn_marks_est_per_port" in c or "pfc_paused_s_est_per_port" in c:
    sys.exit("per-port maps written where nothing is estimated")
PY
echo "roce flow estimates: ok"
