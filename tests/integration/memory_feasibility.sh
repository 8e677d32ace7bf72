#!/usr/bin/env bash
# memory_feasibility: the per-GPU memory check (workloads/model/wl_memory.h, docs/compute-model.md,
# "Memory per GPU").
#  - Llama 3 70B, seq 8192, TP 8, PP 4, no recomputation, on H100 (80 GB): stage 0 keeps 4
#    micro-batches of 20 layers' activations (286 GB): sgfabric workload refuses it (exit 2, the
#    breakdown on stderr, no trace written); --ignore-memory writes it with a warning; sgfabric run
#    refuses that trace (exit 2) unless --ignore-memory, then runs it with a warning, and
#    summary.json's memory says it does not fit;
#  - with --recompute full the same job fits;
#  - the default compare scenario (GPT-3 175B, TP 8, PP 8) does not fit without recomputation and
#    fits with what compare adds by default (--recompute selective --sequence-parallel);
#  - a feasible compare prints its memory and writes it into comparison.json and each summary.json;
#  - a SimAI import does not give the model's dimensions: memory null in summary.json, "memory n/a"
#    on run's line, never a 0.
set -euo pipefail
. "$(dirname "$0")/common.sh"

job=(--model llama3-70b --seq 8192 --gpus 32 --tp 8 --pp 4 --global-batch 4 --gpu H100)
status=0
"$SGF" workload "${job[@]}" -o "$WORK/70b.trace" >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
cat "$WORK/stderr"
[ "$status" -eq 2 ] || die "the infeasible 70B job: exit status $status, expected 2"
grep -q "^sgfabric workload: the job does not fit in GPU memory: stage 0: weights .* activations .* of 80 GB (H100)" \
  "$WORK/stderr" || die "the refusal does not give the breakdown"
grep -q -- "--ignore-memory" "$WORK/stderr" || die "the refusal does not name --ignore-memory"
[ ! -e "$WORK/70b.trace" ] || die "a refused job left a trace"

run_ok workload "${job[@]}" --ignore-memory -o "$WORK/70b.trace"
grep -q "warning: the job does not fit in GPU memory (--ignore-memory)" "$WORK/last.stderr" ||
  die "--ignore-memory gives no warning"
grep -q "^memory per GPU, stage 0: .*: does not fit$" "$WORK/last.stdout" || die "workload does not print the memory"
cat "$WORK/last.stdout"

run_ok platform --gpus 32 -o "$WORK/p32.xml"
status=0
"$SGF" run --platform "$WORK/p32.xml" --workload "$WORK/70b.trace" --fabric maxmin --no-progress \
  --out "$WORK/r-refused" >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
[ "$status" -eq 2 ] || die "run of the infeasible trace: exit status $status, expected 2"
grep -q "^sgfabric run: .*70b.trace: the job does not fit in GPU memory: stage 0: weights" "$WORK/stderr" ||
  die "run's refusal does not give the breakdown: $(cat "$WORK/stderr")"
[ ! -e "$WORK/r-refused" ] || die "a refused run left a results directory"
run_ok run --platform "$WORK/p32.xml" --workload "$WORK/70b.trace" --fabric maxmin --no-progress --ignore-memory \
  --out "$WORK/r"
grep -q "warning: the job does not fit in GPU memory" "$WORK/last.stderr" || die "run --ignore-memory gives no warning"
grep -qE "MFU [0-9.]+ %, memory [0-9.]+ of 80 GB per GPU; results in" "$WORK/last.stdout" ||
  die "run's line has no memory: $(cat "$WORK/last.stdout")"
cat "$WORK/last.stdout"
[ "$(jget "$WORK/r/summary.json" memory.fits)" = False ] || die "summary.json: memory.fits is not false"
total=$(jget "$WORK/r/summary.json" memory.total_bytes)
python3 - "$WORK/r/summary.json" <<'PY' || die "summary.json's memory does not add up"
import json, sys
m = json.load(open(sys.argv[1]))["memory"]
parts = m["weights_bytes"] + m["gradients_bytes"] + m["optimizer_bytes"] + m["activations_bytes"] + m["other_bytes"]
print("70B, no recomputation: %.1f GB per GPU (activations %.1f GB, %d micro-batches in flight) of %.0f GB"
      % (m["total_bytes"] / 1e9, m["activations_bytes"] / 1e9, m["inflight_microbatches"], m["capacity_bytes"] / 1e9))
sys.exit(0 if abs(parts - m["total_bytes"]) <= 1e-9 * m["total_bytes"] and m["stage"] == 0
         and m["inflight_microbatches"] == 4 and m["capacity_bytes"] == 80e9 else 1)
PY
python3 -c "import sys; sys.exit(0 if $total > 280e9 else 1)" || die "70B without recomputation: $total bytes, expected > 280 GB"

run_ok workload "${job[@]}" --recompute full -o "$WORK/70b-full.trace"
grep -q "^memory per GPU, stage 0: .* of 80 GB (H100)$" "$WORK/last.stdout" || die "the full-recompute job does not fit"

gpt3=(--model gpt3-175b --gpus 1024 --tp 8 --pp 8)
status=0
"$SGF" workload "${gpt3[@]}" -o "$WORK/gpt3.trace" >/dev/null 2>"$WORK/stderr" || status=$?
[ "$status" -eq 2 ] || die "GPT-3 175B on TP 8, PP 8 without recomputation should not fit (exit $status)"
run_ok workload "${gpt3[@]}" --recompute selective --sequence-parallel -o "$WORK/gpt3.trace"
grep "^memory" "$WORK/last.stdout"

run_ok compare --model llama3-8b --gpus 16 --tp 8 --pp 2 --global-batch 4 --fabrics maxmin -o "$WORK/cmp"
grep -qE "^memory per GPU \(stage [01], the largest\): weights .* total [0-9.]+ GB of 80 GB$" "$WORK/last.stdout" ||
  die "compare does not print the memory: $(head -3 "$WORK/last.stdout")"
python3 - "$WORK/cmp" <<'PY' || die "comparison.json and summary.json disagree on the memory"
import json, sys
c = json.load(open(sys.argv[1] + "/comparison.json"))["scenario"]["memory"]
s = json.load(open(sys.argv[1] + "/maxmin/summary.json"))["memory"]
print("llama3-8b, TP 8, PP 2: %.2f GB per GPU on stage %d" % (c["total_bytes"] / 1e9, c["stage"]))
sys.exit(0 if c == s and c["fits"] and 10e9 < c["total_bytes"] < 80e9 else 1)
PY

run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "simai:$DATA/workloads/simai/data-ga1.txt" --fabric maxmin \
  --no-progress --out "$WORK/simai"
[ "$(jget "$WORK/simai/summary.json" memory)" = None ] || die "a SimAI import got a memory figure"
grep -q ", memory n/a; results in" "$WORK/last.stdout" || die "run's line for a SimAI import: $(cat "$WORK/last.stdout")"
echo "PASS"
