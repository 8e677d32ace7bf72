#!/usr/bin/env bash
# replay: "sgfabric replay DIR --out NEW" re-runs a result from its manifest.json and reports
# whether summary.json is byte-identical (exit 0) or not (exit 1, naming the first differing key).
#  - flows (RoCE, packet fidelity), run (flow fidelity) and compare (with a --platform file, which
#    DIR must hold a copy of, or a platform it generates again identically) replay to identical
#    summaries, from another working directory;
#  - compare's DIR has its own manifest.json whose inputs are files in DIR with their SHA-256, and
#    each per-fabric manifest names inputs by paths that exist relative to DIR;
#  - bad cases: a tampered summary (exit 1, the key named), an input changed since the run, a
#    directory without manifest, --out equal to DIR (each a clear message, no crash).
set -euo pipefail
. "$(dirname "$0")/common.sh"

platform=$PLATFORMS/tiny-16.xml
cp "$DATA/flows/one_0_8_1MB.csv" "$WORK/flows.csv"
cd "$WORK"
run_ok flows --platform "$platform" --flows flows.csv --fabric roce --out flows-result
run_ok workload --model llama3-8b --gpus 16 --tp 8 --pp 2 --global-batch 8 -o w.trace
run_ok run --platform "$platform" --workload w.trace --fabric ib --fidelity flow --no-progress --out run-result
run_ok compare --fabrics roce,ib --platform "$platform" --gpus 16 --model llama3-8b --tp 8 --pp 2 --global-batch 8 \
  --out cmp
# A --model-file is an input of compare too: DIR keeps a copy (model.txt) that replay uses.
printf 'name: tiny\nlayers: 4\nhidden: 1024\nheads: 8\nffn: 4096\nvocab: 32000\nseq: 2048\n' >model.cfg
run_ok compare --fabrics roce,ib --platform "$platform" --model-file model.cfg --gpus 16 --tp 8 --pp 1 \
  --global-batch 4 --out cmp-model
cmp -s model.cfg cmp-model/model.txt || die "cmp-model/model.txt is not a copy of the --model-file"
# Without --platform, compare generates one in a temporary directory that is renamed to DIR: the
# file records its command with its own name, so that the replay generates the same bytes.
run_ok compare --fabrics ib --gpus 16 --model llama3-8b --tp 8 --pp 2 --global-batch 8 --fidelity flow \
  --out cmp-generated
grep -q 'value="sgfabric platform .* -o platform.xml"' cmp-generated/platform.xml ||
  die "the generated platform.xml does not record its command with -o platform.xml"

# compare's directory describes itself.
cmp -s "$platform" cmp/platform.xml || die "cmp/platform.xml is not a copy of the --platform file"
python3 - cmp <<'PY' || die "compare's manifests do not name inputs that exist (above)"
import hashlib, json, os, sys
d = sys.argv[1]
top = json.load(open(os.path.join(d, "manifest.json")))
assert top["command"][0] == "compare", top["command"]
assert top["fabrics"] == ["roce", "ib"], top
assert set(top["inputs"]) == {"platform.xml", "workload.txt"}, top["inputs"]
for name, entry in top["inputs"].items():
    got = hashlib.sha256(open(os.path.join(d, name), "rb").read()).hexdigest()
    assert got == entry["sha256"], (name, got, entry)
for f in ("roce", "ib"):
    m = json.load(open(os.path.join(d, f, "manifest.json")))
    for name, entry in m["inputs"].items():
        path = os.path.join(d, name)
        assert os.path.isfile(path), "%s/manifest.json names %s, which is not in %s" % (f, name, d)
        assert hashlib.sha256(open(path, "rb").read()).hexdigest() == entry["sha256"], name
print("compare's manifests: inputs %s, each present in DIR with its SHA-256" % sorted(top["inputs"]))
PY

mkdir elsewhere
cd elsewhere
for result in flows-result run-result cmp-model cmp-generated cmp; do
  run_ok replay "../$result" --out "../$result.again"
  cat "$WORK/last.stdout"
  grep -q "byte-identical" "$WORK/last.stdout" || die "replay of $result did not report byte-identical"
done
grep -q "identical: ib/summary.json" "$WORK/last.stdout" || die "the compare replay did not check ib/summary.json"
cd "$WORK"

# A tampered summary: exit 1 and the first differing key.
cp -r run-result tampered
python3 - tampered/summary.json <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
i = s.index('"fabric_bytes": ') + len('"fabric_bytes": ')
open(p, "w").write(s[:i] + "1" + s[i:])
PY
status=0
"$SGF" replay tampered --out tampered.again >"$WORK/out.txt" 2>"$WORK/err.txt" || status=$?
cat "$WORK/out.txt"
[ "$status" -eq 1 ] || die "replay of a tampered summary exited $status, expected 1"
grep -q "differs: summary.json, first at key counters.fabric_bytes" "$WORK/out.txt" ||
  die "the differing key counters.fabric_bytes is not named"

# An input changed since the run.
echo "0,8,2000,0" >>flows.csv
status=0
"$SGF" replay flows-result --out changed.again >"$WORK/out.txt" 2>"$WORK/err.txt" || status=$?
cat "$WORK/err.txt"
[ "$status" -eq 1 ] || die "replay with a changed input exited $status, expected 1"
grep -q "input flows.csv has changed since the run" "$WORK/err.txt" || die "the changed input is not named"
[ ! -e changed.again ] || die "a replay that could not run left changed.again behind"

# Not a result directory; --out equal to DIR.
mkdir not-a-result
status=0
"$SGF" replay not-a-result >"$WORK/out.txt" 2>"$WORK/err.txt" || status=$?
cat "$WORK/err.txt"
[ "$status" -eq 1 ] && grep -q "not-a-result/manifest.json: cannot read" "$WORK/err.txt" ||
  die "replay of a directory without manifest: exit $status"
status=0
"$SGF" replay run-result --out run-result >"$WORK/out.txt" 2>"$WORK/err.txt" || status=$?
cat "$WORK/err.txt"
[ "$status" -eq 2 ] || die "replay --out DIR exited $status, expected 2"
echo "PASS"
