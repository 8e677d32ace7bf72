#!/usr/bin/env bash
# ib_tree_growth: a congestion tree holds victims at a switch input buffer only once it has filled
# the buffers between that one and its bottleneck (docs/ib.md, "Congestion trees grow").
# 3-tier tree of radix 8 (64 GPUs, leaves of 4, pods of 16): 60 -> 24 and 19 -> 24 share GPU 24's
# link; 56 -> 33 leaves pod 3 by the aggregation switches' up-links that 60 -> 24, spread over
# 16 paths, also takes, and shares no link with the bottleneck. 60 -> 24 sends ~1.6 GB/s per path
# beyond its share, so its tree takes tens of microseconds per level to climb back to those
# up-links: with 4 MB each, 56 -> 33 ends at its line rate at packet fidelity (82 us) before the
# tree gets there. Taken as grown from the start (ib/flow-tree-growth:off) it was capped at
# 60 -> 24's rate per path, 102 us; with 40 MB each, 1,008 us against 897 us at packet fidelity.
set -euo pipefail
. "$(dirname "$0")/common.sh"

run_ok platform --gpus 64 --tiers 3 --radix 8 -o "$WORK/p.xml"
# victim_us MB FIDELITY [CFG...]: 56 -> 33's completion time
victim_us() {
  local mb=$1 fidelity=$2 out=$WORK/$1-$2-$#
  shift 2
  printf "src,dst,bytes,start_us\n60,24,%d,0\n19,24,%d,0\n56,33,%d,0\n" "${mb}000000" "${mb}000000" "${mb}000000" \
    >"$WORK/t$mb.csv"
  run_ok flows --platform "$WORK/p.xml" --flows "$WORK/t$mb.csv" --fabric ib --fidelity "$fidelity" --seed 1 "$@" -o "$out"
  python3 -c "import csv,sys; print('%.1f' % [float(r['fct_us']) for r in csv.DictReader(open(sys.argv[1])) if r['src'] == '56'][0])" \
    "$out/flows.csv"
}
for mb in 4 40; do
  packet=$(victim_us $mb packet)
  grows=$(victim_us $mb flow)
  grown=$(victim_us $mb flow --cfg=ib/flow-tree-growth:off)
  echo "  56 -> 33 beside a congestion tree, ${mb} MB each: packet ${packet} us, flow ${grows} us (tree grown at once: ${grown} us)"
  python3 -c "import sys; p, g, o = map(float, sys.argv[1:]); sys.exit(0 if abs(g - p) < abs(o - p) else 1)" \
    "$packet" "$grows" "$grown" || die "${mb} MB: the tree's growth did not bring 56 -> 33 closer to packet fidelity"
done
python3 -c "import sys; p, g, o = map(float, sys.argv[1:]); sys.exit(0 if abs(g / p - 1) < 0.02 and o > 1.15 * p else 1)" \
  "$(victim_us 4 packet)" "$(victim_us 4 flow)" "$(victim_us 4 flow --cfg=ib/flow-tree-growth:off)" ||
  die "4 MB: 56 -> 33 not at its line rate within 2 % of packet fidelity, or not capped with the tree grown at once"
echo "PASS ib_tree_growth"
