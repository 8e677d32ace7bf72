#!/usr/bin/env bash
# failures_packet: failures at packet fidelity (docs/failures.md), on ib and roce.
#  - a 4 MB ring all-reduce over the 128 GPUs of ft2-128 with leaf0--spine4 down 20 us in: it
#    completes (every transfer delivered all its bytes), slower than without the failure, with
#    packets dropped and bytes retransmitted (InfiniBand: the RC transport's timeout, 2^18 x
#    4.096 us; RoCE: go-back-N until the routing moves the QP, 950 ms);
#  - eight 2 MB transfers leaf0 -> leaf8 across the same failure (sgfabric flows): every byte
#    posted is delivered, summary.json counts the drops per event and in the fabric's counter;
#  - GPU 3's NIC link down with no other path: the communicator timeout fails the job (exit 3,
#    job_failed_at_s, the stalled flow without fct), as at flow fidelity; on InfiniBand without a
#    communicator timeout the QP runs out of retries and fails the job too.
set -euo pipefail
. "$(dirname "$0")/common.sh"

platform=$PLATFORMS/ft2-128.xml
printf 'time_us,action,target\n20,down,leaf0--spine4\n' >"$WORK/down.csv"

coll_time() {
  local fabric=$1
  shift
  "$SGF" coll --platform "$platform" --fabrics "$fabric" -b 4M -e 4M --fidelity packet --cfg coll/algorithm:ring "$@" \
    >"$WORK/stdout.txt" 2>"$WORK/err" || { cat "$WORK/err" >&2; die "coll $fabric $* failed"; }
  awk '$1 == 4194304 { print $6 }' "$WORK/stdout.txt"
}

python3 -c '
print("src,dst,bytes,start_us")
for k in range(8):
    print("%d,%d,2000000,0" % (8 * k, 64 + 8 * k))' >"$WORK/across.csv"

for fabric in ib roce; do
  base=$(coll_time $fabric)
  failed=$(coll_time $fabric --failures "$WORK/down.csv")
  line=$(grep "sgfabric coll: $fabric: failure: leaf0--spine4 down" "$WORK/err") || die "$fabric: no failure report"
  echo "$fabric ring: $base us without the failure, $failed us with it; $line"
  retx=$(sed -n 's/.* \([0-9]*\) bytes retransmitted.*/\1/p' <<<"$line")
  dropped=$(sed -n 's/.* \([0-9]*\) packets ([0-9]* bytes) dropped.*/\1/p' <<<"$line")
  python3 -c 'import sys; b, f, r, d = map(float, sys.argv[1:]); sys.exit(0 if f > b and r > 0 and d > 0 else 1)' \
    "$base" "$failed" "$retx" "$dropped" || die "$fabric: ring $failed us (base $base), $retx B resent, $dropped dropped"

  run_ok flows --platform "$platform" --flows "$WORK/across.csv" --fabric $fabric --fidelity packet \
    --failures "$WORK/down.csv" -o "$WORK/across-$fabric"
  python3 - "$WORK/across-$fabric/summary.json" "$WORK/across-$fabric/flows.csv" <<'PY' || die "$fabric: across"
import csv, json, sys
s = json.load(open(sys.argv[1]))
f = s["failures"]
ev = f["events"][0]
print("  flows: %d B delivered, %d packets dropped, %d B retransmitted, drops %d" %
      (s["bytes_delivered"], f["packets_dropped"], f["bytes_retransmitted"], s["counters"]["drops"]))
assert s["bytes_delivered"] == 8 * 2000000, s["bytes_delivered"]
assert s["job_failed_at_s"] is None
assert ev["packets_dropped"] > 0 and 0 < ev["bytes_dropped"] <= 4096 * ev["packets_dropped"], ev
assert ev["bytes_retransmitted"] > 0 and f["bytes_retransmitted"] == ev["bytes_retransmitted"], f
assert s["counters"]["drops"] >= ev["packets_dropped"], s["counters"]
assert all(r["fct_us"] for r in csv.DictReader(open(sys.argv[2])))
PY
done

# No other path: GPU 3's NIC link down for good.
printf 'src,dst,bytes,start_us\n3,99,2000000,0\n1,97,2000000,0\n' >"$WORK/f.csv"
printf 'time_us,action,target\n10,down,gpu3\n' >"$WORK/nic.csv"
for fabric in ib roce; do
  status=0
  "$SGF" flows --platform "$platform" --flows "$WORK/f.csv" --fabric $fabric --fidelity packet \
    --failures "$WORK/nic.csv" --cfg coll/timeout:50ms -o "$WORK/nic-$fabric" 2>"$WORK/err" || status=$?
  cat "$WORK/err"
  [ "$status" -eq 3 ] || die "$fabric: exit status $status, expected 3 (job failed)"
  grep -q "job failed at .* made no progress since .* (link gpu3--leaf3 down; coll/timeout 0.05 s)" "$WORK/err" ||
    die "$fabric: no job-failed message"
  grep -q "^3,99,2000000,0,$" "$WORK/nic-$fabric/flows.csv" || die "$fabric: the stalled flow has an fct"
  grep -q "^1,97,2000000,0,[0-9]" "$WORK/nic-$fabric/flows.csv" || die "$fabric: the other flow has no fct"
  approx "$fabric: job_failed_at_s" "$(jget "$WORK/nic-$fabric/summary.json" job_failed_at_s)" 0.050011 1e-5
done

# InfiniBand without a communicator timeout: the QP's 8 timeouts of 2^10 x 4.096 us fail the job.
status=0
"$SGF" flows --platform "$platform" --flows "$WORK/f.csv" --fabric ib --fidelity packet --failures "$WORK/nic.csv" \
  --cfg coll/timeout:0s --cfg ib/transport-timeout:10 -o "$WORK/qp" 2>"$WORK/err" || status=$?
cat "$WORK/err"
[ "$status" -eq 3 ] || die "ib: exit status $status, expected 3 (QP in error)"
grep -q "InfiniBand RC transport retry count exceeded (8 timeouts" "$WORK/err" || die "ib: no retry-exceeded message"
approx "ib: job_failed_at_s" "$(jget "$WORK/qp/summary.json" job_failed_at_s)" \
  "$(python3 -c 'print(10e-6 + 8 * 4.096e-6 * 2**10)')" 1e-4

# A timeout shorter than the subnet manager's recovery: ib/transport-timeout 12 (16.8 ms) x 8 =
# 134 ms > 124 ms, so the ring's QP that lost packets retries into the dead link until its count
# runs out; coll exits 3 like run and flows. With the switches' 1 ms self-healing it recovers.
status=0
"$SGF" coll --platform "$platform" --fabrics ib -b 4M -e 4M --fidelity packet --cfg coll/algorithm:ring \
  --failures "$WORK/down.csv" --cfg ib/transport-timeout:12 >"$WORK/stdout.txt" 2>"$WORK/err" || status=$?
[ "$status" -eq 3 ] || { cat "$WORK/err" >&2; die "coll ib: exit status $status, expected 3"; }
grep -q "sgfabric coll: job failed at 0.134.* InfiniBand RC transport retry count exceeded" "$WORK/err" ||
  { cat "$WORK/err" >&2; die "coll ib: no retry-exceeded message"; }
healed=$(coll_time ib --failures "$WORK/down.csv" --cfg ib/transport-timeout:12 --cfg ib/failover:ar)
echo "ib ring, ib/transport-timeout:12, ib/failover:ar: $healed us"
python3 -c 'import sys; sys.exit(0 if 16777 < float(sys.argv[1]) < 3 * 16777 else 1)' "$healed" ||
  die "ib ring with ib/failover:ar: $healed us, expected one 16.8 ms timeout and a little more"
echo "PASS failures_packet"
