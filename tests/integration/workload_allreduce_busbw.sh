#!/usr/bin/env bash
# workload_allreduce_busbw: "sgfabric run" of a hand-written trace holding one all-reduce of
# S = 16 MiB on a 16-rank dp group (tiny-16.xml, ideal fabric). What must show:
#  - summary.json's collectives[0] reports algbw = S/t and busbw = algbw * 2(N-1)/N, nccl-tests'
#    definition (t = the collective's time_s);
#  - with coll/algorithm:ring, t = 2(N-1) steps of S/(N*B) + NIC latency + path latency, the ring
#    being paced by its two node-crossing hops (gpu7->gpu8, gpu15->gpu0: 4 links, 3 switches),
#    within 1%, at both fidelities;
#  - with the default algorithm (hierarchical on 2 nodes x 8 GPUs) the fabric carries only the
#    inter-node rings: 2(L-1)*S bytes, NVLink 2L(g-1)*S;
#  - the iteration is the collective (no compute), charged to exposed dp communication;
#  - those are the dataflow's times and bytes, so these runs take NCCL's protocol costs away
#    (Simple, no launch, base or step latency: $NOCOST); with the default costs (auto protocol)
#    the same all-reduce takes longer by at least the launch and the lowest base latency.
set -euo pipefail
. "$(dirname "$0")/common.sh"

trace=$DATA/workloads/allreduce-dp16.trace
S=16777216
N=16
B=50e9         # 400 Gbps
NIC=500e-9     # fabric/nic-latency default
LINK=100e-9
SWITCH=130e-9

# check_busbw DIR: the reported bandwidths follow from bytes and time.
check_busbw() {
  local s=$1/summary.json
  local op group count bytes t algbw busbw
  read -r op group count bytes t algbw busbw < <(python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))["collectives"]
assert len(c) == 1, c
c = c[0]
print(c["op"], c["group"], c["count"], repr(c["bytes"]), repr(c["time_s"]), repr(c["algbw_GBps"]), repr(c["busbw_GBps"]))' "$s") ||
    die "cannot read collectives[0] of $s"
  [ "$op" = allreduce ] || die "collectives[0].op is $op"
  [ "$group" = dp ] || die "collectives[0].group is $group"
  equal "collectives[0].count" "$count" 1
  equal "collectives[0].bytes" "$bytes" "$S"
  local exp_algbw exp_busbw
  exp_algbw=$(python3 -c "print(repr($S / $t / 1e9))")
  exp_busbw=$(python3 -c "print(repr($S / $t / 1e9 * 2 * ($N - 1) / $N))")
  echo "  t = $t s, algbw $algbw GB/s (S/t = $exp_algbw), busbw $busbw GB/s (S/t*2(N-1)/N = $exp_busbw)"
  approx "algbw_GBps" "$algbw" "$exp_algbw" 1e-9
  approx "busbw_GBps" "$busbw" "$exp_busbw" 1e-9
  approx "iteration_time_s (the collective is the iteration)" "$(jget "$s" iteration_time_s)" "$t" 1e-6
  # Ranks are done when their own transfers are (some before others): the mean rank waits on dp
  # for most of t; the rest of t is other_s (until the median rank's end) and straggler_s (after).
  local dp other straggler
  dp=$(jget "$s" breakdown.exposed_comm_s.dp)
  other=$(jget "$s" breakdown.other_s)
  straggler=$(jget "$s" breakdown.straggler_s)
  echo "  breakdown: exposed dp $dp s + other $other s + stragglers $straggler s"
  approx "breakdown.exposed_comm_s.dp + other_s + straggler_s" "$(python3 -c "print($dp + $other + $straggler)")" "$t" 1e-6
  python3 -c "import sys; sys.exit(0 if 0.5 * $t < $dp <= $t * (1 + 1e-9) else 1)" ||
    die "breakdown.exposed_comm_s.dp = $dp is not most of the collective's $t s"
  equal "breakdown.compute_s" "$(jget "$s" breakdown.compute_s)" 0
  echo "$t" >"$1.time"
}

NOCOST="--cfg=coll/protocol:simple --cfg=coll/launch-latency:0us --cfg=coll/simple-base-latency:0us
  --cfg=coll/simple-step-latency-net:0us --cfg=coll/simple-step-latency-nvlink:0us"
ring_step=$(python3 -c "print(repr($S / ($N * $B) + $NIC + 4 * $LINK + 3 * $SWITCH))")
ring_expected=$(python3 -c "print(repr(2 * ($N - 1) * $ring_step))")
for fidelity in packet flow; do
  out=$WORK/ring-$fidelity
  run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "$trace" --fabric ideal --fidelity "$fidelity" \
    --cfg=coll/algorithm:ring $NOCOST --no-progress --out "$out"
  echo "ring, $fidelity fidelity:"
  check_busbw "$out"
  [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["collectives"][0]["algorithm"])' "$out/summary.json")" = ring ] ||
    die "the ring run did not use the ring"
  # coll/ring:auto: step by step at packet fidelity, one pipelined transfer per edge at flow
  # fidelity on the ideal fabric (its model asks for no steps)
  rings=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["collectives"][0]["rings"])' "$out/summary.json")
  expected_rings=steps
  [ "$fidelity" = packet ] || expected_rings=pipelined
  [ "$rings" = "$expected_rings" ] || die "collectives[0].rings is '$rings' at $fidelity fidelity, expected $expected_rings"
  t=$(cat "$out.time")
  echo "  ring time $t s, expected 2(N-1)*(S/(N*B) + NIC + 4 links + 3 switches) = $ring_expected s"
  approx "ring all-reduce time ($fidelity)" "$t" "$ring_expected" 0.01
  # The two node-crossing hops carry 2(N-1) chunks of S/N each.
  equal "fabric_bytes_by_group.dp (ring)" "$(jget "$out/summary.json" fabric_bytes_by_group.dp)" \
    "$(python3 -c "print(2 * 2 * ($N - 1) * $S / $N)")"
done

# RoCE at 100 Gb/s, where DCQCN holds congested ports, moves rings step by step at flow fidelity
# too (docs/roce.md, "Ring steps"); at 400 Gb/s they stay pipelined.
for rate in 100Gbps 400Gbps; do
  run_ok platform --gpus 16 --radix 8 --link-rate "$rate" -o "$WORK/p$rate.xml"
  run_ok run --platform "$WORK/p$rate.xml" --workload "$trace" --fabric roce --fidelity flow \
    --cfg=coll/algorithm:ring --no-progress --out "$WORK/roce-$rate"
  rings=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["collectives"][0]["rings"])' "$WORK/roce-$rate/summary.json")
  expected_rings=steps
  [ "$rate" = 100Gbps ] || expected_rings=pipelined
  echo "roce at $rate, flow fidelity: rings $rings"
  [ "$rings" = "$expected_rings" ] || die "RoCE at $rate: collectives[0].rings is '$rings', expected $expected_rings"
done

out=$WORK/auto
run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "$trace" --fabric ideal --fidelity packet $NOCOST \
  --no-progress --out "$out"
echo "default algorithm:"
check_busbw "$out"
algo=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["collectives"][0]["algorithm"])' "$out/summary.json")
[ "$algo" = hierarchical ] || die "default algorithm on 2 nodes x 8 GPUs is '$algo', expected hierarchical"
fab=$(jget "$out/summary.json" fabric_bytes_by_group.dp)
nvl=$(jget "$out/summary.json" nvlink_bytes_by_group.dp)
echo "  hierarchical: fabric $fab B (2(L-1)S = $((2 * S))), NVLink $nvl B (2L(g-1)S = $((28 * S))), t = $(cat "$out.time") s"
equal "fabric_bytes_by_group.dp (hierarchical)" "$fab" $((2 * S))
equal "nvlink_bytes_by_group.dp (hierarchical)" "$nvl" $((28 * S))
# NCCL's protocol costs at their defaults: the launch (2 us) and at least LL's base latency (3.6 us)
# come on top of the dataflow's time.
out=$WORK/costs
run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "$trace" --fabric ideal --fidelity flow \
  --no-progress --out "$out"
echo "default algorithm, NCCL's protocol costs (flow fidelity):"
check_busbw "$out"
python3 -c "import sys; sys.exit(0 if $(cat "$out.time") >= $(cat "$WORK/auto.time") + 5.6e-6 else 1)" ||
  die "with NCCL's protocol costs the all-reduce takes $(cat "$out.time") s, not 5.6 us more than $(cat "$WORK/auto.time") s"
echo "  $(cat "$out.time") s with the costs, $(cat "$WORK/auto.time") s without"
proto=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["collectives"][0]["protocol"])' "$out/summary.json")
nocost=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["collectives"][0]["protocol"])' "$WORK/auto/summary.json")
echo "  protocol: $proto (auto), $nocost (forced)"
[ "$nocost" = simple ] || die "collectives[0].protocol is '$nocost' under coll/protocol:simple"
case $proto in simple | ll | ll128) ;; *) die "collectives[0].protocol is '$proto', expected one protocol" ;; esac
echo "PASS"
