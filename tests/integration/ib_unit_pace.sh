#!/usr/bin/env bash
# ib_unit_pace: the flows one upstream port sends into a full switch input buffer, held by
# different congested outputs, leave its queue at one pace (docs/ib.md, "Congestion trees",
# ib/flow-unit-pace). tiny-16 (leaves of 4 GPUs, 4 spines, AR): 8 -> 6, 10 -> 6, 9 -> 4 and
# 11 -> 7 from leaf 2, 15 -> 4 from leaf 3, 4 MB each, every transfer spread over the spines.
# Leaf 1's input buffers from the spines hold packets for GPUs 4, 6 and 7, and each spine's
# queue from leaf 2 releases a packet whenever one of those buffers frees a credit, whatever
# its GPU: at packet fidelity leaf 2's four transfers end together (209-216 us). Each at its
# own output's share (ib/flow-unit-pace:off), 8 -> 6 and 10 -> 6 ended at 162 us.
set -euo pipefail
. "$(dirname "$0")/common.sh"

printf "src,dst,bytes,start_us\n9,4,4000000,0\n10,6,4000000,0\n8,6,4000000,0\n11,7,4000000,0\n15,4,4000000,0\n" \
  >"$WORK/flows.csv"
flows_both "$PLATFORMS/tiny-16.xml" "$WORK/flows.csv" ib
run_ok flows --platform "$PLATFORMS/tiny-16.xml" --flows "$WORK/flows.csv" --fabric ib --fidelity flow --seed 1 \
  --cfg=ib/flow-unit-pace:off -o "$WORK/off"
python3 - "$WORK/packet/flows.csv" "$WORK/flow/flows.csv" "$WORK/off/flows.csv" <<'EOF_CHECK' ||
import csv, statistics, sys
packet, flow, off = ([float(r["fct_us"]) for r in csv.DictReader(open(f))] for f in sys.argv[1:])
print("  FCT (us), packet / flow / flow without the one pace:")
for p, f, o in zip(packet, flow, off):
    print("    %.1f / %.1f / %.1f" % (p, f, o))
err = statistics.mean(flow) / statistics.mean(packet) - 1
err_off = statistics.mean(off) / statistics.mean(packet) - 1
print("  mean FCT error %+.1f%% (without: %+.1f%%)" % (100 * err, 100 * err_off))
if abs(err) > 0.05 or max(abs(f / p - 1) for p, f in zip(packet, flow)) > 0.08:
    sys.exit("flow fidelity not within 5 % of packet fidelity on the mean, or a transfer off by more than 8 %")
if err_off > -0.10:
    sys.exit("without the one pace flow fidelity was expected 10 % optimistic or more")
EOF_CHECK
  die "leaf 2's transfers into leaf 1 do not move at one pace"

# Where no flow of the buffer is a victim (every one held at an output of its own), the tree's
# filling of the buffer must still be a date the caps are recomputed at: 13 -> 6, 14 -> 6 and
# 12 -> 7 from leaf 3 beside 8 -> 7 from leaf 2 (tiny-16 held-out pattern seed 29's fabric
# transfers). Leaf 1's input buffers from the spines hold leaf 3's packets for GPUs 6 and 7, and
# GPU 7 gives 8 -> 7 three quarters of its link: 13 -> 6 and 14 -> 6 end at 210 us at packet
# fidelity, 162 us (their share of GPU 6's link from the start) when no timer fired at the date
# the tree filled those buffers.
printf "src,dst,bytes,start_us\n13,6,4000000,0\n14,6,4000000,0\n12,7,4000000,0\n8,7,4000000,0\n" \
  >"$WORK/seed29.csv"
flows_both "$PLATFORMS/tiny-16.xml" "$WORK/seed29.csv" ib
each_flow_within 6 4 ||
  die "leaf 3's transfers into leaf 1 do not move at one pace once the tree has filled the buffers"
echo "PASS ib_unit_pace"
