#!/usr/bin/env bash
# coll_sharp: in-network reduction and PXN through the command line (docs/collectives.md,
# "In-network reduction"). What must show:
#  - SHARP all-reduce on InfiniBand: each of the N NICs sends the buffer S once (N*S injected),
#    a ring 2(N-1)/N S each (2(N-1)*S), for the same members (sgfabric run, summary.json's
#    fabric_bytes_by_group), and for a large message SHARP's busbw is well above the ring's
#    (sgfabric coll);
#  - coll/algorithm:sharp on RoCE is refused: non-zero exit, a message that says why (run and
#    coll); coll/sharp:on there is no error and changes nothing;
#  - NVLS inside a node: every GPU sends S once over NVLink (N*S; the ring 2(N-1)*S), in less time
#    than the ring, and a higher busbw for a large message;
#  - PXN on a rail-optimized fat-tree: an all-to-all across 2 nodes puts bytes on the spines
#    without PXN and none with it (every inter-node transfer stays on its rail's leaf), more on
#    NVLink, and the collective's time differs;
#  - sgfabric compare with coll/sharp:on runs the data-parallel all-reduces with SHARP on ib and
#    without on roce.
set -euo pipefail
. "$(dirname "$0")/common.sh"

S=16777216
N=16
SIMPLE=--cfg=coll/protocol:simple # whole bytes: no LL/LL128 flag bytes in the counts

# algo DIR: the algorithm of summary.json's first collective.
algo() {
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["collectives"][0]["algorithm"])' "$1/summary.json"
}
# busbw DIR: busbw of the ib.csv (or roce.csv) row of `sgfabric coll -o DIR`.
busbw() {
  python3 -c 'import csv,sys; print(list(csv.DictReader(open(sys.argv[1])))[-1]["busbw_GBps"])' "$1"
}
# spine_bytes DIR: bytes carried by the links of DIR/links.csv with a spine at one end.
spine_bytes() {
  python3 -c 'import csv,sys
print(sum(float(r["bytes"]) for r in csv.DictReader(open(sys.argv[1])) if "spine" in r["from"] + r["to"]))' \
    "$1/links.csv"
}

# ---- SHARP: bytes per NIC, busbw, refused on RoCE ----
run_ok platform --gpus $N --gpus-per-node 1 --radix 8 -o "$WORK/flat16.xml"
for a in ring sharp; do
  run_ok run --platform "$WORK/flat16.xml" --workload "$DATA/workloads/allreduce-dp16.trace" --fabric ib \
    --cfg=coll/algorithm:$a $SIMPLE --no-progress --out "$WORK/ar-$a"
  [ "$(algo "$WORK/ar-$a")" = $a ] || die "coll/algorithm:$a ran $(algo "$WORK/ar-$a")"
done
ring_nic=$(jget "$WORK/ar-ring/summary.json" fabric_bytes_by_group.dp)
sharp_nic=$(jget "$WORK/ar-sharp/summary.json" fabric_bytes_by_group.dp)
echo "NIC bytes of a ${S} B all-reduce over $N GPUs: ring $ring_nic (2(N-1)S = $((2 * (N - 1) * S))), sharp $sharp_nic (N*S = $((N * S)))"
equal "ring fabric_bytes_by_group.dp" "$ring_nic" $((2 * (N - 1) * S))
equal "sharp fabric_bytes_by_group.dp" "$sharp_nic" $((N * S))
python3 -c "import sys; r = $sharp_nic / $ring_nic; print('  sharp/ring = %.3f' % r); sys.exit(0 if 0.5 <= r < 0.55 else 1)" ||
  die "SHARP's NIC bytes are not about half the ring's"

for a in ring sharp; do
  run_ok coll --platform "$WORK/flat16.xml" --fabrics ib --sizes 256M:256M --cfg=coll/algorithm:$a --out "$WORK/bw-$a"
done
bw_ring=$(busbw "$WORK/bw-ring/ib.csv")
bw_sharp=$(busbw "$WORK/bw-sharp/ib.csv")
echo "busbw at 256 MiB on ib: ring $bw_ring GB/s, sharp $bw_sharp GB/s"
python3 -c "import sys; sys.exit(0 if $bw_sharp > 1.5 * $bw_ring else 1)" || die "SHARP's busbw is not well above the ring's"

# Refused on RoCE, by run and by coll.
status=0
"$SGF" run --platform "$WORK/flat16.xml" --workload "$DATA/workloads/allreduce-dp16.trace" --fabric roce \
  --cfg=coll/algorithm:sharp --no-progress --out "$WORK/roce-sharp" >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
echo "run on roce with coll/algorithm:sharp: exit $status: $(cat "$WORK/stderr")"
[ "$status" -eq 1 ] || die "run on roce with coll/algorithm:sharp exited $status, expected 1"
grep -q "^sgfabric run: coll/algorithm:sharp needs IB SHARP" "$WORK/stderr" || die "no clear message"
[ ! -e "$WORK/roce-sharp" ] || die "a refused run left $WORK/roce-sharp"
status=0
"$SGF" coll --platform "$WORK/flat16.xml" --fabrics roce --sizes 1M:1M --cfg=coll/algorithm:sharp \
  >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
echo "coll on roce with coll/algorithm:sharp: exit $status"
[ "$status" -ne 0 ] || die "coll on roce with coll/algorithm:sharp succeeded"
grep -q "needs IB SHARP" "$WORK/stderr" || die "coll: no clear message"
# coll/sharp:on on RoCE: allowed, and nothing changes.
run_ok run --platform "$WORK/flat16.xml" --workload "$DATA/workloads/allreduce-dp16.trace" --fabric roce \
  --cfg=coll/algorithm:ring $SIMPLE --no-progress --out "$WORK/roce-off"
run_ok run --platform "$WORK/flat16.xml" --workload "$DATA/workloads/allreduce-dp16.trace" --fabric roce \
  --cfg=coll/algorithm:auto --cfg=coll/sharp:on $SIMPLE --no-progress --out "$WORK/roce-on"
[ "$(algo "$WORK/roce-on")" = ring ] || die "coll/sharp:on on roce ran $(algo "$WORK/roce-on")"
equal "roce fabric bytes, coll/sharp:on" "$(jget "$WORK/roce-on/summary.json" fabric_bytes_by_group.dp)" $((2 * (N - 1) * S))

# ---- NVLS inside a node ----
run_ok platform --gpus 8 -o "$WORK/node8.xml"
S8=67108864
for a in ring nvls; do
  run_ok run --platform "$WORK/node8.xml" --workload "$DATA/workloads/allreduce-tp8.trace" --fabric ib \
    --cfg=coll/algorithm:$a $SIMPLE --no-progress --out "$WORK/tp-$a"
  [ "$(algo "$WORK/tp-$a")" = $a ] || die "coll/algorithm:$a ran $(algo "$WORK/tp-$a")"
done
nvl_ring=$(jget "$WORK/tp-ring/summary.json" nvlink_bytes_by_group.tp)
nvl_nvls=$(jget "$WORK/tp-nvls/summary.json" nvlink_bytes_by_group.tp)
time_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["collectives"][0]["time_s"])' "$1/summary.json"; }
echo "NVLink bytes of a $S8 B all-reduce over 8 GPUs: ring $nvl_ring, nvls $nvl_nvls; time ring $(time_of "$WORK/tp-ring") s, nvls $(time_of "$WORK/tp-nvls") s"
equal "ring nvlink_bytes_by_group.tp" "$nvl_ring" $((14 * S8))
equal "nvls nvlink_bytes_by_group.tp" "$nvl_nvls" $((8 * S8))
python3 -c "import sys; sys.exit(0 if $(time_of "$WORK/tp-nvls") < $(time_of "$WORK/tp-ring") else 1)" ||
  die "NVLS is not faster than the ring inside a node"
for a in ring nvls; do
  run_ok coll --platform "$WORK/node8.xml" --fabrics ib --sizes 1G:1G --cfg=coll/algorithm:$a --out "$WORK/nbw-$a"
done
echo "busbw at 1 GiB, 8 GPUs: ring $(busbw "$WORK/nbw-ring/ib.csv") GB/s, nvls $(busbw "$WORK/nbw-nvls/ib.csv") GB/s"
python3 -c "import sys; sys.exit(0 if $(busbw "$WORK/nbw-nvls/ib.csv") > $(busbw "$WORK/nbw-ring/ib.csv") else 1)" ||
  die "NVLS's busbw is not above the ring's"

# ---- PXN: an all-to-all's inter-node traffic stays on its rail ----
run_ok platform --gpus 16 --rail-optimized -o "$WORK/rail16.xml"
for x in off on; do
  run_ok run --platform "$WORK/rail16.xml" --workload "$DATA/workloads/alltoall-dp16.trace" --fabric ib \
    --cfg=coll/pxn:$x --no-progress --out "$WORK/a2a-$x"
done
sp_off=$(spine_bytes "$WORK/a2a-off")
sp_on=$(spine_bytes "$WORK/a2a-on")
echo "all-to-all over 2 rail-optimized nodes: spine bytes $sp_off without PXN, $sp_on with; NVLink $(jget "$WORK/a2a-off/summary.json" nvlink_bytes_by_group.dp) / $(jget "$WORK/a2a-on/summary.json" nvlink_bytes_by_group.dp); time $(time_of "$WORK/a2a-off") / $(time_of "$WORK/a2a-on") s"
python3 -c "import sys; sys.exit(0 if $sp_off > 0 else 1)" || die "without PXN the all-to-all crossed no spine"
equal "spine bytes with PXN" "$sp_on" 0
python3 -c "import sys; sys.exit(0 if $(jget "$WORK/a2a-on/summary.json" nvlink_bytes_by_group.dp) > $(jget "$WORK/a2a-off/summary.json" nvlink_bytes_by_group.dp) else 1)" ||
  die "PXN did not relay over NVLink"
[ "$(time_of "$WORK/a2a-on")" != "$(time_of "$WORK/a2a-off")" ] || die "PXN changed nothing in the all-to-all's time"

# ---- compare: ib with SHARP against roce ----
run_ok compare --gpus 16 --model llama3-8b --tp 8 --pp 1 --cfg=coll/sharp:on --out "$WORK/cmp"
dp_algo() {
  python3 -c 'import json,sys
print([c["algorithm"] for c in json.load(open(sys.argv[1]))["collectives"] if c["group"] == "dp"][0])' "$1/summary.json"
}
echo "compare, coll/sharp:on: dp all-reduce on ib: $(dp_algo "$WORK/cmp/ib"), on roce: $(dp_algo "$WORK/cmp/roce")"
[ "$(dp_algo "$WORK/cmp/ib")" = sharp ] || die "ib's dp all-reduce did not use SHARP"
[ "$(dp_algo "$WORK/cmp/roce")" != sharp ] || die "roce's dp all-reduce used SHARP"
echo "PASS"
