#!/usr/bin/env bash
# workload_determinism FIDELITY: same inputs and seed, byte-identical summary.json. Llama 3 8B,
# 16 GPUs (TP 8, PP 2, 8 micro-batches) on tiny-16.xml, ideal fabric, seed 7, run twice.
set -euo pipefail
. "$(dirname "$0")/common.sh"
[ $# -eq 1 ] || die "usage: $0 SGFABRIC_BINARY SOURCE_DIR packet|flow"
fidelity=$1

run_ok workload --model llama3-8b --gpus 16 --tp 8 --pp 2 --global-batch 8 --seed 1 -o "$WORK/llama.trace"
for k in 1 2; do
  start=$(date +%s.%N)
  run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "$WORK/llama.trace" --fabric ideal \
    --fidelity "$fidelity" --seed 7 --no-progress --out "$WORK/run$k"
  end=$(date +%s.%N)
  echo "run $k ($fidelity): iteration $(jget "$WORK/run$k/summary.json" iteration_time_s) s," \
    "MFU $(jget "$WORK/run$k/summary.json" mfu), sha256 $(sha256sum <"$WORK/run$k/summary.json" | cut -c1-16)," \
    "$(python3 -c "print('%.2f' % ($end - $start))") s wall"
done
cmp "$WORK/run1/summary.json" "$WORK/run2/summary.json" ||
  { diff "$WORK/run1/summary.json" "$WORK/run2/summary.json" | head -20 >&2; die "summary.json differs between identical runs"; }
[ "$(jget "$WORK/run1/summary.json" seed)" = 7 ] || die "summary.json does not record seed 7"
[ "$(jget "$WORK/run1/summary.json" fidelity)" = "$fidelity" ] || die "summary.json does not record the fidelity"
echo "PASS: byte-identical summary.json ($(wc -c <"$WORK/run1/summary.json") bytes)"
