#!/usr/bin/env bash
# flows_determinism: the same inputs and seed give byte-identical results at both fidelities;
# the manifest records the inputs' SHA-256, the seed and both versions.
set -euo pipefail
. "$(dirname "$0")/common.sh"

platform=$PLATFORMS/ft2-128.xml
flows=$WORK/perm-128.csv
# A random permutation of 128 GPUs without fixed points, 1 MB each, all at t = 0.
python3 - "$flows" <<'EOF'
import random, sys
rng = random.Random(7)
dst = list(range(128))
while any(i == d for i, d in enumerate(dst)):
    rng.shuffle(dst)
with open(sys.argv[1], "w") as f:
    f.write("src,dst,bytes,start_us\n")
    for i, d in enumerate(dst):
        f.write("%d,%d,1000000,0\n" % (i, d))
EOF

for fidelity in packet flow; do
  for run in a b; do
    run_ok flows --platform "$platform" --flows "$flows" --fidelity "$fidelity" --seed 7 --out "$WORK/$fidelity-$run"
  done
  for file in flows.csv summary.json links.csv; do
    cmp -s "$WORK/$fidelity-a/$file" "$WORK/$fidelity-b/$file" ||
      die "$fidelity fidelity: $file differs between two identical runs: $(diff "$WORK/$fidelity-a/$file" "$WORK/$fidelity-b/$file" | head -5)"
  done
  rows=$(($(wc -l <"$WORK/$fidelity-a/flows.csv") - 1))
  [ "$rows" -eq 128 ] || die "$fidelity fidelity: flows.csv has $rows rows, expected 128"
  python3 -c 'import csv, sys
bad = [r for r in csv.DictReader(open(sys.argv[1])) if not float(r["fct_us"]) > 0]
sys.exit("flows without a positive fct_us: %s" % bad[:3] if bad else 0)' "$WORK/$fidelity-a/flows.csv" ||
    die "$fidelity fidelity: bad fct_us in flows.csv"

  # The manifest: both inputs' SHA-256 (keyed by the paths given), the seed, the versions.
  manifest=$WORK/$fidelity-a/manifest.json
  for input in "$platform" "$flows"; do
    want=$(sha256sum "$input" | cut -d' ' -f1)
    got=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["inputs"][sys.argv[2]]["sha256"])' "$manifest" "$input") ||
      die "$manifest has no inputs entry for $input"
    [ "$got" = "$want" ] || die "$manifest: sha256 of $input is $got, sha256sum says $want"
  done
  [ "$(jget "$manifest" seed)" = 7 ] || die "$manifest: seed is $(jget "$manifest" seed), expected 7"
  for key in sgfabric_version simgrid_version; do
    [ -n "$(jget "$manifest" "$key")" ] || die "$manifest: empty $key"
  done
done

# Another seed changes the ECMP choices but must still complete every flow.
run_ok flows --platform "$platform" --flows "$flows" --seed 12345 --out "$WORK/seed"
[ "$(jget "$WORK/seed/summary.json" flows)" = 128 ] || die "--seed 12345: summary.json flows is not 128"
[ "$(jget "$WORK/seed/manifest.json" seed)" = 12345 ] || die "--seed 12345: manifest seed is not 12345"
equal "--seed 12345: bytes_delivered" "$(jget "$WORK/seed/summary.json" bytes_delivered)" 128e6
echo "PASS flows_determinism"
