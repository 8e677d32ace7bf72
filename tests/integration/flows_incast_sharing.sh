#!/usr/bin/env bash
# flows_incast_sharing [ROUTING]: 8-to-1 incast, GPUs 8..15 (node 1) to GPU 0 (node 0), 4 MB each,
# all at t = 0. The link into GPU 0 (50e9 B/s) is the bottleneck: shared fairly, every flow ends
# after 8 x 4e6 / 50e9 s = 640 us plus the path latency, at packet and at flow fidelity.
#  - ecmp (default): through one switch, the textbook incast: a 16-GPU platform of radix-32
#    switches has a single leaf; path gpu-leaf-gpu, 2 links and 1 switch (0.83 us).
#  - adaptive: on tiny-16 through the spines (4 links, 3 switches: 1.29 us). With ECMP there, the
#    flows that collide on a spine get less of the FIFO at the last hop than max-min gives them
#    (docs/ARCHITECTURE.md, "Where the flow engine departs from the packet engine").
set -euo pipefail
. "$(dirname "$0")/common.sh"
routing=${1:-ecmp}

flows=$DATA/flows/incast_8to1_4MB.csv
if [ "$routing" = ecmp ]; then
  platform=$WORK/one-leaf-16.xml
  run_ok platform --gpus 16 --radix 32 -o "$platform"
  expected=$(python3 -c 'print(repr(8 * 4e6 / 50e9 * 1e6 + 0.5 + 2 * 0.1 + 1 * 0.13))') # 640.83 us
else
  platform=$PLATFORMS/tiny-16.xml
  expected=$(python3 -c 'print(repr(8 * 4e6 / 50e9 * 1e6 + 0.5 + 4 * 0.1 + 3 * 0.13))') # 641.29 us
fi
for fidelity in packet flow; do
  run_ok flows --platform "$platform" --flows "$flows" --fidelity "$fidelity" \
    --cfg=fabric/routing:"$routing" --out "$WORK/$fidelity"
  python3 - "$WORK/$fidelity/flows.csv" "$expected" <<'EOF' || die "$fidelity fidelity, $routing routing: unfair incast"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
expected = float(sys.argv[2])
assert len(rows) == 8, "%d rows" % len(rows)
bad = ["%s->%s %.2f us" % (r["src"], r["dst"], float(r["fct_us"])) for r in rows
       if abs(float(r["fct_us"]) - expected) > 0.05 * expected]
if bad:
    sys.exit("FCT not within 5%% of %.2f us: %s" % (expected, ", ".join(bad)))
EOF
done
mean_packet=$(jget "$WORK/packet/summary.json" mean_fct_us)
mean_flow=$(jget "$WORK/flow/summary.json" mean_fct_us)
approx "$routing routing: mean FCT at flow fidelity vs packet fidelity (us)" "$mean_flow" "$mean_packet" 0.05
echo "PASS flows_incast_sharing $routing"
