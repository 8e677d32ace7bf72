#!/usr/bin/env bash
# workload_compare: "sgfabric compare --fabrics roce,ideal" on a small fast job (Llama 3 8B,
# 16 GPUs, TP 8, PP 2, 8 micro-batches) writes DIR/comparison.json, DIR/roce/summary.json,
# DIR/ideal/summary.json and, when /usr/bin/python3 has matplotlib, DIR/compare.png; it prints a
# table with an "MFU" row whose values are the runs' mfu.
set -euo pipefail
. "$(dirname "$0")/common.sh"

dir=$WORK/cmp
start=$(date +%s.%N)
run_ok compare --fabrics roce,ideal --gpus 16 --model llama3-8b --tp 8 --pp 2 --global-batch 8 --out "$dir"
end=$(date +%s.%N)
cat "$WORK/last.stdout"
echo "(compare took $(python3 -c "print('%.1f' % ($end - $start))") s wall)"
for f in comparison.json roce/summary.json ideal/summary.json; do
  [ -s "$dir/$f" ] || die "$dir/$f is missing or empty"
done
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  [ -s "$dir/compare.png" ] || die "matplotlib is installed but $dir/compare.png is missing"
  head -c 8 "$dir/compare.png" | od -An -c | grep -q 'P   N   G' || die "$dir/compare.png is not a PNG"
  echo "compare.png: $(wc -c <"$dir/compare.png") bytes"
else
  echo "no matplotlib for /usr/bin/python3: compare.png not required"
fi
grep -qE '^MFU +[0-9.]+ % +[0-9.]+ %' "$WORK/last.stdout" || die "the table has no 'MFU' row with two percentages"
python3 - "$dir" "$WORK/last.stdout" <<'PY' || die "comparison.json does not match the runs (above)"
import json, re, sys
d, table = sys.argv[1], open(sys.argv[2]).read()
c = json.load(open(d + "/comparison.json"))
assert c["fabrics"] == ["roce", "ideal"], c["fabrics"]
rows = {r["label"]: r for r in c["rows"]}
mfu = [json.load(open("%s/%s/summary.json" % (d, f)))["mfu"] for f in ("roce", "ideal")]
print("MFU roce %.4f %%, ideal %.4f %%; comparison.json says %s" % (100 * mfu[0], 100 * mfu[1], rows["MFU"]["values"]))
for got, want in zip(rows["MFU"]["values"], mfu):
    assert abs(got - 100 * want) <= 1e-9 * abs(100 * want), (got, want)
shown = [float(x) for x in re.search(r"^MFU +([0-9.]+) % +([0-9.]+) %", table, re.M).groups()]
for got, want in zip(shown, mfu):
    assert abs(got - 100 * want) <= 0.005 + 1e-9, (got, want)
for f in ("roce", "ideal"):
    s = json.load(open("%s/%s/summary.json" % (d, f)))
    assert s["fabric"] == f, s["fabric"]
    assert s["iteration_time_s"] > 0
PY
echo "PASS"
