#!/usr/bin/env bash
# workload_compare: "sgfabric compare --fabrics roce,ideal" on a small fast job (Llama 3 8B,
# 16 GPUs, TP 8, PP 2, 8 micro-batches) writes DIR/comparison.json, DIR/roce/summary.json,
# DIR/ideal/summary.json and, when /usr/bin/python3 has matplotlib, DIR/compare.png; it prints a
# table with an "MFU" row whose values are the runs' mfu, under the scenario's one-line title
# (comparison.json's scenario.title, which states model, layout, batches, GPU, platform, fidelity
# and seed). Every row's key resolves in each run's summary.json (value = summary value x scale);
# counters flow fidelity does not model are null in JSON and n/a in the table, never 0; integers
# print as integers; tokens/s has its unit; every breakdown part (dp_ep, other) has a row.
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
summaries = []
for f in ("roce", "ideal"):
    s = json.load(open("%s/%s/summary.json" % (d, f)))
    assert s["fabric"] == f, s["fabric"]
    assert s["iteration_time_s"] > 0
    summaries.append(s)
# What was simulated.
sc = c["scenario"]
w = summaries[0]["workload"]
for key in ("model", "gpus", "tp", "pp", "vpp", "dp", "ep", "cp", "micro_batch", "global_batch", "seq", "gpu"):
    assert sc[key] == w[key], (key, sc[key], w[key])
assert (sc["gpus"], sc["tp"], sc["pp"], sc["dp"], sc["global_batch"]) == (16, 8, 2, 1, 8), sc
p = sc["platform"]
assert (p["tiers"], p["radix"], p["rail_optimized"], p["oversubscription"], p["link_rate"]) == (2, 64, True, "1,1", "400Gbps"), p
assert sc["fidelity"] == "flow" and sc["seed"] == 1, sc
assert table.splitlines()[0] == sc["title"], (table.splitlines()[0], sc["title"])
assert "llama3-8b on 16 H100" in sc["title"] and "flow fidelity, seed 1" in sc["title"], sc["title"]
# Every key resolves in the summaries; the values are theirs, scaled.
def lookup(s, path):
    for part in path.split("."):
        if not isinstance(s, dict) or part not in s:
            return KeyError
        s = s[part]
    return s
for r in c["rows"]:
    found = [lookup(s, r["key"]) for s in summaries]
    assert any(v is not KeyError for v in found), "row %s: key %s is in no summary.json" % (r["label"], r["key"])
    for v, got in zip(found, r["values"]):
        if v is KeyError or v is None:
            assert got is None, (r["label"], got)
        else:
            assert abs(got - v * r["scale"]) <= 1e-12 * abs(v * r["scale"]) + 1e-300, (r["label"], got, v)
        if r["unit"] == "count" and got is not None:
            assert isinstance(got, int), (r["label"], got)
# Flow fidelity models no PFC frames nor ECN marks: null / n/a, never 0.
assert rows["PFC pause frames"]["values"][0] is None and rows["ECN marks"]["values"][0] is None, rows["ECN marks"]
assert re.search(r"^PFC pause frames +n/a", table, re.M), "no n/a for PFC pause frames"
assert re.search(r"^ECN marks +n/a", table, re.M), "no n/a for ECN marks"
assert not re.search(r"[0-9]e[+-][0-9]", table), "a number in exponent form in the table"
assert re.search(r"^throughput +[0-9]+ tokens/s +[0-9]+ tokens/s", table, re.M), "tokens/s without its unit"
for label in ("exposed comm: dp_ep", "other waiting", "pipeline bubble"):
    assert re.search("^" + label + " ", table, re.M), "no row " + label
    assert label in rows, label
# The breakdown rows add up to the iteration time (what the chart stacks).
parts = [k for k in rows if rows[k]["key"].startswith("breakdown.")]
for i in range(2):
    total = sum(rows[k]["values"][i] for k in parts)
    it = rows["iteration time"]["values"][i]
    assert abs(total - it) <= 1e-3 * it, (total, it)
m = json.load(open(d + "/manifest.json"))
assert m["command"][0] == "compare" and set(m["inputs"]) == {"platform.xml", "workload.txt"}, m
# How each collective's rings moved, as the runs say; alike here (400 Gb/s), so no note
for row in c["collectives"]:
    want = [next(e.get("rings") for e in s["collectives"] if (e["op"], e["group"]) == (row["op"], row["group"]))
            for s in summaries]
    assert row["rings"] == want, (row, want)
assert "(rings:" not in table, "a rings note where the fabrics' rings moved alike"
PY
# At 100 Gb/s RoCE's rings move step by step (DCQCN holds its congested ports), the ideal
# fabric's stay pipelined: the table says so under the collectives
run_ok compare --fabrics roce,ideal --gpus 16 --model llama3-8b --tp 8 --pp 2 --global-batch 8 --link-rate 100Gbps \
  --out "$WORK/c100"
grep -q "^  (rings: roce steps, ideal pipelined;" "$WORK/last.stdout" ||
  die "no note that the fabrics' rings moved differently at 100 Gb/s: $(grep -n rings "$WORK/last.stdout")"
echo "PASS"
