#!/usr/bin/env bash
# workload_pipeline_bubble: compute-only pipelines (fixed-duration forward tf and backward tb per
# micro-batch and stage, 1-byte activations) written by a small generator below, replayed by
# "sgfabric run" (tiny-16.xml, ideal fabric, flow fidelity). What must show:
#  - 1F1B with p stages and m micro-batches: iteration = (m+p-1)(tf+tb) and bubble fraction
#    1 - compute/iteration = (p-1)/(m+p-1), within 2%;
#  - Megatron's interleaved schedule with v chunks per stage (each chunk tf/v, tb/v): the bubble
#    time shrinks by v: iteration = m(tf+tb) + (p-1)(tf+tb)/v, within 2%;
#  - the breakdown accounts for it: bubble_s = iteration - compute (docs/outputs.md: the
#    receives' wait for unsent messages plus the cool-down of stages that
#    finish early).
set -euo pipefail
. "$(dirname "$0")/common.sh"

TF=1e-3
TB=2e-3

# gen P M V FILE: the trace of p stages, m micro-batches, v chunks (1: 1F1B, else interleaved).
gen() {
  python3 - "$@" <<'PY'
import sys
p, m, v = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
tf, tb = float(sys.argv[5]), float(sys.argv[6])
out = open(sys.argv[4], "w")
V = p * v
out.write("sgf-workload 1\n")
out.write("model name=compute-only layers=%d hidden=64 heads=1 kv_heads=1 ffn=64 vocab=1 seq=1 experts=0 topk=0 gated=1\n" % V)
out.write("layout gpus=%d tp=1 pp=%d vpp=%d dp=1 ep=1 cp=1\n" % (p, p, v))
out.write("gpu H100\n")
out.write("batch micro=1 global=%d microbatches=%d recompute=0 zero1=0 seq_parallel=0 grad_bytes=4\n" % (m, m))
out.write("generator seed=1 by=workload_pipeline_bubble.sh/%s\n" % ("1f1b" if v == 1 else "interleaved"))
out.write("stages layers=%s vfirst=%s vlayers=%s\n" % (",".join([str(v)] * p),
          ",".join(str(c * p + s) for c in range(v) for s in range(p)), ",".join(["1"] * V)))

def tag(mb, vs, d):  # identity of the message consumed by virtual stage vs
    return (mb * V + vs) * 2 + d

for s in range(p):
    ops = []
    def fwd(c, mb):
        vs = c * p + s
        if vs > 0:
            ops.append("recv ph=fwd mb=%d ch=%d group=pp peer=-1 tag=%d bytes=1" % (mb, c, tag(mb, vs, 0)))
        ops.append("compute ph=fwd mb=%d ch=%d l=%d class=gemm time=%.17g" % (mb, c, vs, tf / v))
        if vs < V - 1:
            ops.append("send ph=fwd mb=%d ch=%d group=pp peer=+1 tag=%d bytes=1 async" % (mb, c, tag(mb, vs + 1, 0)))
    def bwd(c, mb):
        vs = c * p + s
        if vs < V - 1:
            ops.append("recv ph=bwd mb=%d ch=%d group=pp peer=+1 tag=%d bytes=1" % (mb, c, tag(mb, vs, 1)))
        ops.append("compute ph=bwd mb=%d ch=%d l=%d class=gemm time=%.17g" % (mb, c, vs, tb / v))
        if vs > 0:
            ops.append("send ph=bwd mb=%d ch=%d group=pp peer=-1 tag=%d bytes=1 async" % (mb, c, tag(mb, vs - 1, 1)))
    if v == 1:  # 1F1B: min(p-s-1, m) warm-up forwards, steady 1F1B, cool-down backwards
        w = min(p - s - 1, m)
        for i in range(w):
            fwd(0, i)
        for i in range(m - w):
            fwd(0, w + i)
            bwd(0, i)
        for i in range(m - w, m):
            bwd(0, i)
    else:  # Megatron-LM forward_backward_pipelining_with_interleaving (m a multiple of p)
        assert m % p == 0
        total = m * v
        def chunk(k, forward):
            c = (k % (p * v)) // p
            return c if forward else v - 1 - c
        def micro(k):
            return (k // (p * v)) * p + k % p
        w = min((p - s - 1) * 2 + (v - 1) * p, total)
        for k in range(w):
            fwd(chunk(k, True), micro(k))
        for i in range(total - w):
            fwd(chunk(w + i, True), micro(w + i))
            bwd(chunk(i, False), micro(i))
        for i in range(total - w, total):
            bwd(chunk(i, False), micro(i))
    out.write("program %d ops=%d\n" % (s, len(ops)))
    for i, o in enumerate(ops):
        out.write("%d %s\n" % (i, o))
    out.write("end\n")
PY
}

# run_case NAME P M V: generates, runs, prints and checks.
run_case() {
  local name=$1 p=$2 m=$3 v=$4
  gen "$p" "$m" "$v" "$WORK/$name.trace" "$TF" "$TB"
  run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "$WORK/$name.trace" --fabric ideal --fidelity flow \
    --no-progress --out "$WORK/$name"
  local s=$WORK/$name/summary.json it compute bubble
  it=$(jget "$s" iteration_time_s)
  compute=$(jget "$s" breakdown.compute_s)
  bubble=$(jget "$s" breakdown.bubble_s)
  local exp_it exp_frac frac
  exp_it=$(python3 -c "print(repr($m * ($TF + $TB) + ($p - 1) * ($TF + $TB) / $v))")
  exp_frac=$(python3 -c "print(repr(($p - 1) / $v / ($m + ($p - 1) / $v)))")
  frac=$(python3 -c "print(repr(1 - $compute / $it))")
  echo "$name: p=$p m=$m v=$v: iteration $it s (expected $exp_it s), compute per rank $compute s," \
    "bubble fraction $frac (expected $exp_frac), reported bubble_s $bubble s, other_s $(jget "$s" breakdown.other_s) s"
  approx "$name: compute per rank = m(tf+tb)" "$compute" "$(python3 -c "print($m * ($TF + $TB))")" 1e-9
  approx "$name: iteration time" "$it" "$exp_it" 0.02
  approx "$name: bubble fraction" "$frac" "$exp_frac" 0.02
  # The breakdown puts the whole idle time in bubble_s: receives waiting for an unsent message
  # (warm-up) and stages done early waiting for the last one (cool-down); nothing is left over.
  local other
  other=$(jget "$s" breakdown.other_s)
  approx "$name: bubble_s / iteration" "$(python3 -c "print($bubble / $it)")" "$exp_frac" 0.02
  python3 -c "import sys; sys.exit(0 if abs($other) <= 1e-6 * $it else 1)" ||
    die "$name: other_s = $other, expected 0 (all idle time is bubble)"
  if [ "$v" = 1 ]; then
    # 1F1B: every stage idles (p-1)(tf+tb) in all.
    approx "$name: bubble_s" "$bubble" "$(python3 -c "print(($p - 1) * ($TF + $TB))")" 0.02
  fi
  echo "$it" >"$WORK/$name.it"
}

run_case 1f1b-p4-m8 4 8 1
run_case 1f1b-p4-m4 4 4 1
run_case 1f1b-p2-m8 2 8 1
run_case interleaved-p4-m8-v2 4 8 2
run_case interleaved-p4-m8-v4 4 8 4

# The bubble time (iteration - m(tf+tb)) of the interleaved schedule is that of 1F1B divided by v.
bubble_time() { python3 -c "print(repr($(cat "$WORK/$1.it") - 8 * ($TF + $TB)))"; }
b1=$(bubble_time 1f1b-p4-m8)
for v in 2 4; do
  bv=$(bubble_time interleaved-p4-m8-v$v)
  ratio=$(python3 -c "print(repr($b1 / $bv))")
  echo "bubble time: 1F1B $b1 s, interleaved v=$v $bv s: shrunk $ratio times (expected $v)"
  approx "bubble shrink factor with v=$v" "$ratio" "$v" 0.02
done
echo "PASS"
