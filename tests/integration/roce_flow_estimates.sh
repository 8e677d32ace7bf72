#!/usr/bin/env bash
# roce_flow_estimates: RoCE at flow fidelity writes its estimated congestion signals
# (docs/roce.md, "Flow fidelity: estimated counters"): on the 8-to-1 incast of
# workloads/examples (400 Gb/s, nic preset, where DCQCN cannot hold the receiver's port) the
# marks, CNPs, cuts and paused time are positive, the per-port maps add up to the totals and
# mark the congested port most; DCQCN off leaves marks and pauses but no CNP or cut; FIFO shares off
# (plain max-min) estimates nothing: null, and no maps. Where DCQCN holds a port instead (2-to-1
# at 100 Gb/s, where the senders' floor rates leave it room), the port's held time says so (the
# receiver's port, held for the transfer, which lasts longer than at its payload rate: the port
# is used at the utilisation the packet model measures, below 1) and its marks are estimated
# from that measure (roce/flow-held-ports), its pauses on the links feeding it; with the measure
# off they are not, and the held time is counted as not estimated. None held at 400 Gb/s, where the FIFO pass marks the port; null
# with ECN off (nothing holds).
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
if dcqcn and (c.get("dcqcn_held_s_est") is None or "leaf0->gpu0" in c["dcqcn_held_s_est_per_port"]):
    sys.exit("the marked receiver port counted as held by DCQCN: %r" % c.get("dcqcn_held_s_est_per_port"))
if not dcqcn and c.get("dcqcn_held_s_est", "absent") is not None:
    sys.exit("DCQCN off: held time %r, not null" % c.get("dcqcn_held_s_est", "absent"))
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
# Lossy RoCE (PFC off): flow fidelity does not model buffer drops, so the go-back-N estimates,
# which count random loss only, are null rather than 0
run_ok flows --platform "$platform" --flows "$flows" --fabric roce --fidelity flow --cfg=roce/pfc:off \
  --out "$WORK/lossy"
python3 - "$WORK/lossy/summary.json" <<'PY' || die "pfc:off: the go-back-N estimates are not null"
import json, sys
c = json.load(open(sys.argv[1]))["counters"]
for key in ("gbn_timeouts_est", "retransmitted_bytes_est"):
    if c.get(key, "absent") is not None:
        sys.exit("%s is %r" % (key, c.get(key, "absent")))
PY
# 2-to-1 at 100 Gb/s (two GPUs of node 1 to GPU 0): DCQCN holds the receiver's port (max-min, no
# FIFO marks); held for the whole transfer, 2 x 8 MB at the payload rate
run_ok platform --gpus 16 --radix 8 --link-rate 100Gbps -o "$WORK/p100.xml"
printf 'src,dst,bytes,start_us\n8,0,8000000,0\n9,0,8000000,0\n' >"$WORK/two.csv"
run_ok flows --platform "$WORK/p100.xml" --flows "$WORK/two.csv" --fabric roce --fidelity flow --out "$WORK/held"
run_ok flows --platform "$WORK/p100.xml" --flows "$WORK/two.csv" --fabric roce --fidelity flow \
  --cfg=roce/ecn:off --out "$WORK/held-noecn"
run_ok flows --platform "$WORK/p100.xml" --flows "$WORK/two.csv" --fabric roce --fidelity flow \
  --cfg=roce/flow-held-ports:off --out "$WORK/held-unmeasured"
python3 - "$WORK/held/summary.json" "$WORK/held-noecn/summary.json" "$WORK/held-unmeasured/summary.json" <<'PY' || die "DCQCN-held ports are wrong"
import json, sys
s = json.load(open(sys.argv[1]))
c = s["counters"]
held = c["dcqcn_held_s_est_per_port"]
ports = [p for p in held if p.endswith("->gpu0")]
# both flows share the receiver's port for the whole transfer: 2 x 8 MB at 100 Gb/s, at the
# utilisation the packet model measured for two senders (below 1: longer than at line rate)
expect = 2 * 8e6 * 8 / 100e9
if len(ports) != 1 or not 1.02 * expect < held[ports[0]] <= 1.3 * expect:
    sys.exit("held per port %r, expected the receiver's port for a little more than %g s" % (held, expect))
if abs(sum(held.values()) - c["dcqcn_held_s_est"]) > 1e-9:
    sys.exit("per-port held time adds up to %r, total %r" % (sum(held.values()), c["dcqcn_held_s_est"]))
if not (c["dcqcn_held_measures"] >= 1 and c["dcqcn_held_unestimated_s_est"] == 0 and c["ecn_marks_est"] > 0
        and c["cnps_est"] > 0 and c["ecn_marks_est_per_port"].get(ports[0], 0) == c["ecn_marks_est"]
        and c["pfc_paused_s_est"] > 0 and all(link.endswith("->leaf0") or link.startswith("spine")
                                              for link in c["pfc_paused_s_est_per_port"])):
    sys.exit("the measured held port's estimates are wrong: %r" % c)
u = json.load(open(sys.argv[3]))["counters"]
if u["ecn_marks_est"] != 0 or u["dcqcn_held_measures"] != 0 or u["dcqcn_held_unestimated_s_est"] != u["dcqcn_held_s_est"]:
    sys.exit("held ports off: marks %r, measures %r, not estimated %r of %r s held" % (
        u["ecn_marks_est"], u["dcqcn_held_measures"], u["dcqcn_held_unestimated_s_est"], u["dcqcn_held_s_est"]))
c = json.load(open(sys.argv[2]))["counters"]
if c.get("dcqcn_held_s_est", "absent") is not None or c.get("dcqcn_held_s_est_per_port", {}) or \
        c.get("dcqcn_held_unestimated_s_est", "absent") is not None:
    sys.exit("ECN off: held time %r (per port %r), not null" % (c.get("dcqcn_held_s_est", "absent"),
                                                              c.get("dcqcn_held_s_est_per_port")))
PY
# packet fidelity counts the paused time of each port too (pfc_paused_s_per_port), beside the flow
# estimate's map: it adds up to pfc_paused_s and names the links feeding the congested leaf. The
# estimate follows it (docs/roce.md, "The congestion tree, and the buffers that absorb it"): the
# spines' links into leaf0 paused, a congestion tree up to one leaf uplink, and no NIC link,
# whose 4 MB the switches hold; the total within 15 % (measured -5 %; +34 % with pauses held
# until the flows end, +203 % with the tree and no buffer to absorb it)
run_ok flows --platform "$platform" --flows "$flows" --fabric roce --fidelity packet --out "$WORK/packet"
python3 - "$WORK/packet/summary.json" "$WORK/nic/summary.json" <<'PY' || die "the paused time per port is wrong"
import json, sys
c = json.load(open(sys.argv[1]))["counters"]
paused = c["pfc_paused_s_per_port"]
if not c["pfc_paused_s"] > 0 or abs(sum(paused.values()) - c["pfc_paused_s"]) > 1e-9 * c["pfc_paused_s"]:
    sys.exit("per-port paused time adds up to %r, total %r" % (sum(paused.values()), c["pfc_paused_s"]))
if not any(link.endswith("->leaf0") for link in paused):
    sys.exit("no link into leaf0 paused: %r" % paused)
est = json.load(open(sys.argv[2]))["counters"]
for name, links in (("packet", paused), ("flow", est["pfc_paused_s_est_per_port"])):
    if any(link.startswith("gpu") for link in links) or not any(link.startswith("leaf2->") for link in links):
        sys.exit("%s: NIC links paused, or no leaf uplink: %r" % (name, links))
if abs(est["pfc_paused_s_est"] - c["pfc_paused_s"]) > 0.15 * c["pfc_paused_s"]:
    sys.exit("paused time estimated %r s, counted %r s" % (est["pfc_paused_s_est"], c["pfc_paused_s"]))
PY
echo "roce flow estimates: ok"
