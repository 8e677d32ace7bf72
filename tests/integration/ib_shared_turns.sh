#!/usr/bin/env bash
# ib_shared_turns: two leaves into one on tiny-16 (leaves of 4 GPUs, 4 spines). GPUs 0-3 (leaf 0)
# send 4 MB each to 8-11 (leaf 2); GPUs 4 and 5 (leaf 1) to 8 and 9, GPUs 6 and 7 to 12 and 13
# (leaf 3). GPU 8's and 9's links are congested. A spine's link to leaf 2 then waits for credits,
# and the spine serves its two input ports in turn over all their packets for leaf 2: leaf 0's
# turns carry four transfers, one of them for GPU 8, leaf 1's two, one for GPU 8. So 4 -> 8 reaches
# GPU 8 at twice 0 -> 8's rate and takes two thirds of its link (about 33 GB/s), and leaf 0's four
# transfers move at 17 GB/s each until leaf 1's end. Turns shared among the GPU 8 traffic alone
# gave 0 -> 8 and 4 -> 8 half each, and leaf 0's transfers were capped as the congestion tree's
# victims at 12.4 GB/s: 202.6 us against 162 us at packet fidelity (ib_arbiter.c,
# split_upstream; docs/ib.md, "Input-port shares"). Every flow within 5 % of packet fidelity.
set -euo pipefail
. "$(dirname "$0")/common.sh"

cat >"$WORK/flows.csv" <<'EOF_FLOWS'
src,dst,bytes,start_us
0,8,4000000,0
1,9,4000000,0
2,10,4000000,0
3,11,4000000,0
4,8,4000000,0
5,9,4000000,0
6,12,4000000,0
7,13,4000000,0
EOF_FLOWS
flows_both "$PLATFORMS/tiny-16.xml" "$WORK/flows.csv" ib
each_flow_within 5 8 || die "IB flow fidelity departs from packet fidelity with two leaves into one"
echo "PASS ib_shared_turns"
