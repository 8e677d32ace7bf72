#!/usr/bin/env bash
# compare_no_shell: compare starts its runs and the chart script with an argv, never through a
# shell, so an --out holding shell syntax is just a name: the command in it is not run, and the
# result lands under that exact name.
set -euo pipefail
. "$(dirname "$0")/common.sh"

# The names are relative, run from WORK: "touch PWNED" would create WORK/PWNED.
cd "$WORK"
pwned=$WORK/PWNED
for out in "x'\$(touch PWNED)'y" "a\"\$(touch PWNED)\"b" "c;touch PWNED;\`touch PWNED\`"; do
  run_ok compare --fabrics roce,ideal --gpus 16 --model llama3-8b --tp 8 --pp 2 --global-batch 8 \
    --platform "$PLATFORMS/tiny-16.xml" --out "$out"
  echo "compare --out $out: exit 0"
  [ ! -e "$pwned" ] || die "--out $out ran the command in it: $pwned exists"
  for f in comparison.json roce/summary.json ideal/summary.json manifest.json; do
    [ -s "$out/$f" ] || die "$out/$f is missing"
  done
  if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    [ -s "$out/compare.png" ] || die "matplotlib is installed but $out/compare.png is missing (the chart did not run)"
  fi
done
echo "PASS compare_no_shell"
