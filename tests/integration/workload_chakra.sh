#!/usr/bin/env bash
# workload_chakra RANKS: a Chakra execution trace of RANKS ranks (chakra_et_gen.py: tp 2 x dp
# RANKS/2 process groups, an all-reduce on each tp group, an all-gather on each dp group, compute
# nodes with recorded durations, a send/recv pair per tp group, a metadata node joining two
# branches, a world all-reduce) runs with "sgfabric run --workload chakra:PREFIX" on tiny-16.xml:
#   - the layout found from the process groups is tp 2 x dp RANKS/2;
#   - the compute of the breakdown (mean over ranks) is the trace's: 400 + 10 * rank us per rank;
#   - the collectives are those of the trace, on the tp, dp and world groups, and the messages
#     are there (count and bytes);
#   - with a 1 GiB all-gather the iteration is at least the dependency chain
#     fwd -> tp all-reduce -> all-gather -> (metadata node) -> opt -> world all-reduce, which it
#     would not be if the dependencies through the metadata node were dropped;
#   - a node without duration takes the roofline of its num_ops and tensor_size;
#   - the same trace with every rank's nodes in reverse file order (each node before the nodes it
#     depends on) imports through the topological sort and gives the same compute and collectives;
#   - a CPU-side collective call without comm_type/comm_size (unlinked PyTorch host trace) is
#     timed by its duration and moves no data; a ctrl_deps on a missing id is ignored; both warn;
#   - process groups of one rank each and no messages import (groups of one member, tp = 1).
set -euo pipefail
. "$(dirname "$0")/common.sh"
ranks=${1:-4}
gen=$SRC/tests/integration/chakra_et_gen.py

python3 "$gen" "$WORK/et" --ranks "$ranks"
run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "chakra:$WORK/et" --no-progress --out "$WORK/base"
python3 "$gen" "$WORK/big" --ranks "$ranks" --ag-size $((1 << 30))
run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "chakra:$WORK/big" --no-progress --out "$WORK/big-out"
python3 "$gen" "$WORK/roof" --ranks "$ranks" --roofline
run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "chakra:$WORK/roof" --no-progress --out "$WORK/roof-out"

python3 "$gen" "$WORK/rev" --ranks "$ranks" --reverse
run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "chakra:$WORK/rev" --no-progress --out "$WORK/rev-out"

python3 "$gen" "$WORK/host" --ranks "$ranks" --variant host
run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "chakra:$WORK/host" --no-progress --out "$WORK/host-out"
grep -q "CPU-side collective calls have no comm_type" "$WORK/last.stderr" || die "no warning on the host-side collective calls"
grep -q "control dependencies (ctrl_deps) name nodes their file does not have" "$WORK/last.stderr" ||
  die "no warning on the missing control dependencies"

python3 - "$ranks" "$WORK/base/summary.json" "$WORK/big-out/summary.json" "$WORK/roof-out/summary.json" \
  "$WORK/base/manifest.json" "$WORK/rev-out/summary.json" "$WORK/host-out/summary.json" <<'PY' || die "the Chakra import did not run as it should (above)"
import json, sys
n = int(sys.argv[1])
base, big, roof, manifest, rev, host = (json.load(open(p)) for p in sys.argv[2:8])
ok = True
def check(cond, msg):
    global ok
    if not cond:
        print("  " + msg); ok = False
w = base["workload"]
print("  layout gpus=%d tp=%d dp=%d pp=%d" % (w["gpus"], w["tp"], w["dp"], w["pp"]))
check((w["gpus"], w["tp"], w["dp"], w["pp"]) == (n, 2, n // 2, 1), "layout is not tp 2 x dp %d" % (n // 2))
want = (400 + 10 * (n - 1) / 2) * 1e-6  # mean over ranks of 400 + 10 * rank us
got = base["breakdown"]["compute_s"]
print("  compute %r s, trace's sum (mean over ranks) %r s" % (got, want))
check(abs(got - want) <= 1e-12 * want, "compute differs from the trace's sum")
colls = {(c["op"], c["group"]): c for c in base["collectives"]}
print("  collectives: " + ", ".join("%s/%s x%d" % (k[0], k[1], c["count"]) for k, c in sorted(colls.items())))
for key, count, nbytes in ((("allreduce", "tp"), n // 2, (n // 2) << 20), (("allgather", "dp"), 2, 2 * (4 << 20)),
                           (("allreduce", "world"), 1, 256 << 10), (("sendrecv", "world"), n // 2, (n // 2) * (64 << 10))):
    c = colls.get(key)
    check(c is not None and c["count"] == count and c["bytes"] == nbytes,
          "%s/%s: expected %d instances of %d bytes in all, got %r" % (key + (count, nbytes, c)))
check(len(colls) == 4, "unexpected collectives %r" % sorted(colls))
check(len(manifest["inputs"]) == n + 1, "the manifest does not name the %d rank files" % n)
# The dependency chain of the 1 GiB all-gather variant.
bc = {(c["op"], c["group"]): c for c in big["collectives"]}
per = lambda k: bc[k]["time_s"] / bc[k]["count"]
chain = 100e-6 + per(("allreduce", "tp")) + per(("allgather", "dp")) + 50e-6 + per(("allreduce", "world"))
it = big["iteration_time_s"]
print("  1 GiB all-gather: iteration %r s, dependency chain %r s" % (it, chain))
check(it >= 0.999 * chain, "the iteration is shorter than the dependency chain: a dependency was not respected")
# Roofline: 2e12 operations, 1e9 bytes on the platform's GPU (H100: 989.4 TFLOPS BF16 dense).
extra = roof["breakdown"]["compute_s"] - want
print("  roofline node: %r s of compute" % extra)
check(roof["workload"]["gpu"] == "H100", "platform GPU is not H100")
check(abs(extra - 2e12 / (989.4e12 * 0.75)) <= 1e-9 * extra, "roofline time is not 2e12 / (989.4e12 * 0.75) s")
# Reverse file order: same work, same collectives (the order of independent nodes may differ).
check(rev["breakdown"]["compute_s"] == got, "reversed file: compute %r, expected %r" % (rev["breakdown"]["compute_s"], got))
rc = sorted((c["op"], c["group"], c["count"], c["bytes"]) for c in rev["collectives"])
check(rc == sorted((c["op"], c["group"], c["count"], c["bytes"]) for c in base["collectives"]),
      "reversed file: collectives %r" % rc)
hc = host["breakdown"]["compute_s"]
print("  host-side collective call: compute %r s" % hc)
check(abs(hc - (want + 20e-6)) <= 1e-12 * hc, "host-side call: compute %r, expected %r" % (hc, want + 20e-6))
check(sorted((c["op"], c["group"], c["count"], c["bytes"]) for c in host["collectives"]) ==
      sorted((c["op"], c["group"], c["count"], c["bytes"]) for c in base["collectives"]),
      "host-side call: the collectives changed")
print("  reversed file order: iteration %r s (file order: %r s)" % (rev["iteration_time_s"], base["iteration_time_s"]))
sys.exit(0 if ok else 1)
PY

python3 "$gen" "$WORK/solo" --ranks "$ranks" --variant solo
run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "chakra:$WORK/solo" --no-progress --out "$WORK/solo-out"
equal "solo: tp" "$(jget "$WORK/solo-out/summary.json" workload.tp)" 1
approx "solo: compute" "$(jget "$WORK/solo-out/summary.json" breakdown.compute_s)" 100e-6 1e-12

# Determinism: the same trace gives the same summary.
run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "chakra:$WORK/et" --no-progress --out "$WORK/again"
cmp -s "$WORK/base/summary.json" "$WORK/again/summary.json" || die "two runs of the same trace differ"
echo "PASS"
