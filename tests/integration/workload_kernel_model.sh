#!/usr/bin/env bash
# workload_kernel_model: compute/model:kernel (docs/compute-model.md) on a Llama 3 8B iteration
# (tiny-16.xml, TP 8, DP 2, ib, flow):
#  - the kernel model times the iteration differently from the roofline, and summary.json's
#    compute_by_class_s adds up to breakdown.compute_s under both models, each class differing;
#  - the kernel shapes do not change the roofline: the trace stripped of gemm=/attn=/ew= gives a
#    byte-identical summary.json under the roofline, and under the kernel model too except the
#    compute/model parameter line (a trace without shapes is timed by the roofline);
#  - a malformed shape is refused naming the file and line.
set -euo pipefail
. "$(dirname "$0")/common.sh"

run_ok workload --model llama3-8b --gpus 16 --tp 8 --pp 1 --global-batch 4 -o "$WORK/w.trace"
grep -q ' gemm=' "$WORK/w.trace" || die "the generated trace lists no GEMM shapes"
sed -E 's/ (gemm|attn|ew)=[^ ]+//g' "$WORK/w.trace" >"$WORK/plain.trace"
grep -qE ' (gemm|attn|ew)=' "$WORK/plain.trace" && die "shapes left in the stripped trace"

go() { # OUT TRACE MODEL
  run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "$2" --fabric ib --fidelity flow --no-progress \
    --out "$WORK/$1" --cfg=compute/model:"$3"
}
go roof "$WORK/w.trace" roofline
go kern "$WORK/w.trace" kernel
go plain-roof "$WORK/plain.trace" roofline
go plain-kern "$WORK/plain.trace" kernel

# Paths differ between runs: compare the summaries with the output directory and trace names unified.
norm() { sed -e "s#$WORK/[a-z-]*#OUT#g" -e 's#plain\.trace#w.trace#g' "$1"; }
diff <(norm "$WORK/roof/summary.json") <(norm "$WORK/plain-roof/summary.json") >/dev/null ||
  die "the roofline's summary.json changed when the shapes were stripped: $(diff <(norm "$WORK/roof/summary.json") <(norm "$WORK/plain-roof/summary.json") | head -5)"
d=$(diff <(norm "$WORK/plain-roof/summary.json") <(norm "$WORK/plain-kern/summary.json") | grep '^[<>]' || true)
[ "$(printf '%s\n' "$d" | grep -c .)" = 2 ] && printf '%s\n' "$d" | grep -q '"compute/model": "kernel"' ||
  die "a trace without shapes is not timed as by the roofline under compute/model:kernel: $d"

python3 - "$WORK/roof/summary.json" "$WORK/kern/summary.json" <<'PY' || die "the kernel model's figures do not hold (above)"
import json, sys
r, k = (json.load(open(p)) for p in sys.argv[1:3])
ok = True
for name, s in (("roofline", r), ("kernel", k)):
    c = s["compute_by_class_s"]
    total = sum(c.values())
    print("%s: iteration %.6f s, MFU %.2f %%, compute %.6f s = gemm %.6f + attn %.6f + elemwise %.6f + optimizer %.6f"
          % (name, s["iteration_time_s"], 100 * s["mfu"], s["breakdown"]["compute_s"], c["gemm"], c["attn"],
             c["elemwise"], c["optimizer"]))
    if abs(total - s["breakdown"]["compute_s"]) > 1e-9 * total:
        print("  compute_by_class_s does not add up to breakdown.compute_s"); ok = False
if r["parameters"]["compute/model"] != "roofline" or k["parameters"]["compute/model"] != "kernel":
    print("parameters.compute/model is not the model asked for"); ok = False
if abs(k["iteration_time_s"] / r["iteration_time_s"] - 1) < 0.005:
    print("the kernel model's iteration is within 0.5 % of the roofline's"); ok = False
for cl in ("gemm", "attn", "elemwise", "optimizer"):
    a, b = r["compute_by_class_s"][cl], k["compute_by_class_s"][cl]
    if not (a > 0 and b > 0 and abs(b / a - 1) > 0.02):
        print("class %s: roofline %.6f s, kernel %.6f s: not distinct" % (cl, a, b)); ok = False
sys.exit(0 if ok else 1)
PY

sed -E '0,/ gemm=[^ ]+/s// gemm=8192:768/' "$WORK/w.trace" >"$WORK/bad.trace"
line=$(grep -n ' gemm=8192:768$\| gemm=8192:768 ' "$WORK/bad.trace" | head -1 | cut -d: -f1)
if "$SGF" run --platform "$PLATFORMS/tiny-16.xml" --workload "$WORK/bad.trace" --fabric ib --no-progress \
  --out "$WORK/bad" --cfg=compute/model:kernel >/dev/null 2>"$WORK/bad.stderr"; then
  die "a malformed gemm= was accepted"
fi
grep -q "bad.trace:$line: field 'gemm': '8192:768' is not M:N:K" "$WORK/bad.stderr" ||
  die "the malformed shape's error does not name the file and line $line: $(cat "$WORK/bad.stderr")"
echo "PASS"
