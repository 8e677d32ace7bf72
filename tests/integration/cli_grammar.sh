#!/usr/bin/env bash
# cli_grammar CASE: the command-line conventions every subcommand shares (docs/cli.md).
#   forms            --name=value and --name value, -o and --out give identical results
#   exit_codes       a usage error exits 2, an error met while running exits 1
#   did_you_mean     a misspelled option, model, fabric, GPU, subcommand or area gets a suggestion
#   megatron         Megatron-LM argument names give byte-identical workloads (workload, compare)
#   cfg              --cfg NAME:VALUE equals --cfg=NAME:VALUE; --help-cfg lists the parameters
#   params           params AREA filters with a header, wraps at 80 columns; --markdown escapes |
#   fabrics          compare refuses empty, duplicate and unknown --fabrics entries
#   integers         overflowing or junk integers are refused, naming the option
#   compare_platform compare's platform options and --gpu reach the generated platform
#   run_defaults     run: flow fidelity by default, a one-line result, progress k/m
set -euo pipefail
. "$(dirname "$0")/common.sh"
case_name=${1:?usage: cli_grammar.sh SGFABRIC SRC CASE}
tiny=$PLATFORMS/tiny-16.xml
flows=$DATA/flows/one_0_8_1MB.csv
# A small job: 16 GPUs, a second or two per fabric at flow fidelity.
job=(--gpus 16 --model llama3-8b --tp 8 --pp 2 --global-batch 8)

# expect_status STATUS FRAGMENT SUBCOMMAND ARGS...: sgfabric must exit with STATUS and print a
# "sgfabric SUBCOMMAND: " line containing FRAGMENT.
expect_status() {
  local want=$1 fragment=$2 status=0
  shift 2
  "$SGF" "$@" >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
  echo "sgfabric $* -> exit $status: $(head -c 300 "$WORK/stderr")"
  [ "$status" -eq "$want" ] || die "sgfabric $*: exit status $status, expected $want"
  grep -q "^sgfabric $1: \|^sgfabric: " "$WORK/stderr" || die "sgfabric $*: no 'sgfabric $1: ' line on stderr"
  grep -qF -- "$fragment" "$WORK/stderr" || die "sgfabric $*: stderr does not contain '$fragment'"
}

same_file() {
  cmp -s "$1" "$2" || die "$3: $1 and $2 differ: $(diff "$1" "$2" | head -5)"
}

workload() {
  run_ok workload "$@"
}

case $case_name in
forms)
  # platform: the files differ only in the recorded command line.
  run_ok platform --gpus=16 --radix=8 --gpus-per-node=8 --link-rate=200Gbps -o "$WORK/p1.xml"
  run_ok platform --gpus 16 --radix 8 --gpus-per-node 8 --link-rate 200Gbps --out "$WORK/p2.xml"
  run_ok platform --gpus 16 --radix 8 --gpus-per-node 8 --link-rate 200Gbps -o"$WORK/p3.xml"
  for p in p1 p2 p3; do grep -v 'sgfabric/command' "$WORK/$p.xml" >"$WORK/$p.body"; done
  same_file "$WORK/p1.body" "$WORK/p2.body" "platform: = and space forms"
  same_file "$WORK/p1.body" "$WORK/p3.body" "platform: -oFILE"
  # workload
  run_ok workload --model=llama3-8b --gpus=16 --tp=8 --pp=2 --global-batch=8 -o "$WORK/w1.txt"
  run_ok workload --model llama3-8b --gpus 16 --tp 8 --pp 2 --global-batch 8 --out "$WORK/w2.txt"
  same_file "$WORK/w1.txt" "$WORK/w2.txt" "workload: = and space forms, -o and --out"
  # deployment
  run_ok deployment --workload="$WORK/w1.txt" -o "$WORK/d1.xml"
  run_ok deployment --workload "$WORK/w1.txt" --out="$WORK/d2.xml"
  same_file "$WORK/d1.xml" "$WORK/d2.xml" "deployment"
  # flows
  run_ok flows --platform="$tiny" --flows="$flows" --fabric=ib --fidelity=flow --seed=3 -o "$WORK/f1"
  run_ok flows --platform "$tiny" --flows "$flows" --fabric ib --fidelity flow --seed 3 --out "$WORK/f2"
  same_file "$WORK/f1/flows.csv" "$WORK/f2/flows.csv" "flows"
  same_file "$WORK/f1/summary.json" "$WORK/f2/summary.json" "flows"
  # run
  run_ok run --platform="$tiny" --workload="$WORK/w1.txt" --fabric=roce --seed=5 --no-progress -o "$WORK/r1"
  run_ok run --platform "$tiny" --workload "$WORK/w1.txt" --fabric roce --seed 5 --no-progress --out "$WORK/r2"
  same_file "$WORK/r1/summary.json" "$WORK/r2/summary.json" "run"
  # compare
  run_ok compare --fabrics=ideal --gpus=16 --model=llama3-8b --tp=8 --pp=2 --global-batch=8 -o "$WORK/c1"
  run_ok compare --fabrics ideal "${job[@]}" --out "$WORK/c2"
  same_file "$WORK/c1/comparison.json" "$WORK/c2/comparison.json" "compare"
  same_file "$WORK/c1/workload.txt" "$WORK/c2/workload.txt" "compare"
  echo "every subcommand: --name=value = --name value, -o = --out"
  ;;
exit_codes)
  run_ok workload "${job[@]}" -o "$WORK/w.txt"
  for sub in platform workload deployment run flows compare coll params; do
    expect_status 2 "unknown option '--nosuch'" "$sub" --nosuch
  done
  expect_status 2 "needs a value" run --platform
  expect_status 2 "takes no value" workload --zero1=yes
  expect_status 2 "unexpected argument 'stray'" run stray
  expect_status 2 "required" flows --platform "$tiny"
  expect_status 2 "unknown command" nosuch
  # Errors met while running: a missing or unreadable input, an unwritable output.
  expect_status 1 "$WORK/missing" platform --gpus 16 --radix 8 -o "$WORK/missing/p.xml"
  expect_status 1 "$WORK/missing.model" workload --model-file "$WORK/missing.model" --gpus 8 -o "$WORK/x.txt"
  expect_status 1 "$WORK/missing.txt" deployment --workload "$WORK/missing.txt" -o "$WORK/d.xml"
  expect_status 1 "$WORK/missing.xml" run --platform "$WORK/missing.xml" --workload "$WORK/w.txt" -o "$WORK/r"
  expect_status 1 "$WORK/missing.csv" flows --platform "$tiny" --flows "$WORK/missing.csv" -o "$WORK/f"
  expect_status 1 "missing.xml" compare --fabrics maxmin --platform "$WORK/missing.xml" "${job[@]}" -o "$WORK/c"
  [ ! -e "$WORK/r" ] && [ ! -e "$WORK/f" ] && [ ! -e "$WORK/c" ] || die "a failed run left a result"
  ;;
did_you_mean)
  expect_status 2 "did you mean --fabric?" run --fabirc ib
  expect_status 2 "did you mean --flows?" flows --flow x.csv
  expect_status 2 "did you mean --radix?" platform --radx 8
  expect_status 2 "did you mean --global-batch?" workload --global-bach 8
  expect_status 2 "did you mean --workload?" deployment --workloads x
  expect_status 2 "did you mean --zero1?" compare --zero2
  expect_status 2 "did you mean --markdown?" params --markdwn
  expect_status 2 "did you mean llama3-8b?" workload --model llama3-8 --gpus 8 -o "$WORK/w.txt"
  expect_status 2 "did you mean llama3-8b?" compare --model lama3-8b --gpus 16 --fabrics ideal -o "$WORK/c"
  expect_status 2 "did you mean roce?" run --fabric rocee
  expect_status 2 "did you mean ib?" compare --fabrics ib2,roce
  expect_status 2 "did you mean A100?" workload --model llama3-8b --gpus 8 --gpu A10 -o "$WORK/w.txt"
  expect_status 2 "did you mean A100?" platform --gpus 16 --gpu A1000 -o "$WORK/p.xml"
  expect_status 2 "did you mean compare?" comapre
  expect_status 2 "did you mean roce?" params rocee
  expect_status 2 "did you mean flow?" run --fidelity flwo
  expect_status 2 "did you mean roce/dcqcn?" flows --cfg roce/dcqn:paper --platform "$tiny" --flows "$flows" -o "$WORK/f"
  [ ! -e "$WORK/c" ] || die "a refused compare left $WORK/c"
  ;;
megatron)
  run_ok workload --model llama3-8b --gpus 32 --tp 4 --pp 4 --vpp 2 --seq 4096 --micro-batch 2 \
    --global-batch 64 --zero1 --sequence-parallel -o "$WORK/short.txt"
  run_ok workload --model llama3-8b --gpus 32 --tensor-model-parallel-size 4 --pipeline-model-parallel-size=4 \
    --num-layers-per-virtual-pipeline-stage 4 --seq-length 4096 --micro-batch-size 2 --global-batch-size=64 \
    --use-distributed-optimizer --sequence-parallel -o "$WORK/megatron.txt"
  same_file "$WORK/short.txt" "$WORK/megatron.txt" "workload: Megatron-LM names"
  grep -q 'vpp=2' "$WORK/last.stdout" || die "32 layers / (pp 4 x 4 layers per virtual stage) is not vpp 2"
  # Layers per virtual stage must divide the layers of a pipeline stage: 32 / (4 x 3) does not.
  expect_status 2 "not a multiple of pp x 3" workload --model llama3-8b --gpus 32 --tp 4 --pp 4 \
    --num-layers-per-virtual-pipeline-stage 3 -o "$WORK/x.txt"
  expect_status 2 "not both" workload --model llama3-8b --gpus 32 --tp 4 --pp 4 --vpp 2 \
    --num-layers-per-virtual-pipeline-stage 4 -o "$WORK/x.txt"
  # compare takes the same names and forwards them: its workload.txt is the same trace.
  run_ok workload --model llama3-8b --gpus 16 --tp 8 --pp 2 --global-batch 8 --zero1 -o "$WORK/c-short.txt"
  run_ok compare --fabrics ideal --gpus 16 --model llama3-8b --tensor-model-parallel-size 8 \
    --pipeline-model-parallel-size 2 --global-batch-size 8 --use-distributed-optimizer -o "$WORK/c"
  same_file "$WORK/c-short.txt" "$WORK/c/workload.txt" "compare: Megatron-LM names"
  for sub in workload compare; do
    "$SGF" "$sub" --help >"$WORK/$sub.help"
    grep -qF "default global batch: micro-batch x dp x 4 x pp" "$WORK/$sub.help" ||
      die "$sub --help does not state the default global batch"
  done
  grep -qF -- "--tensor-model-parallel-size" "$WORK/compare.help" || die "compare --help lacks the Megatron-LM names"
  # Recomputation: --recompute alone is full (the flag of earlier versions), an optional value
  # chooses, and Megatron-LM's spellings give the same traces.
  small=(--model llama3-8b --gpus 16 --tp 8 --pp 2 --global-batch 8)
  run_ok workload "${small[@]}" --recompute -o "$WORK/r-flag.txt"
  run_ok workload "${small[@]}" --recompute full -o "$WORK/r-full.txt"
  run_ok workload "${small[@]}" --recompute-granularity=full -o "$WORK/r-gran.txt"
  same_file "$WORK/r-flag.txt" "$WORK/r-full.txt" "--recompute alone and --recompute full"
  same_file "$WORK/r-flag.txt" "$WORK/r-gran.txt" "--recompute-granularity full"
  run_ok workload "${small[@]}" --recompute=selective -o "$WORK/r-sel.txt"
  run_ok workload "${small[@]}" --recompute-activations -o "$WORK/r-act.txt"
  same_file "$WORK/r-sel.txt" "$WORK/r-act.txt" "--recompute-activations (selective)"
  grep -q "recompute=2" "$WORK/r-sel.txt" || die "selective recomputation is not recompute=2 in the trace"
  run_ok workload "${small[@]}" --recompute none -o "$WORK/r-none.txt"
  run_ok workload "${small[@]}" -o "$WORK/r-default.txt"
  same_file "$WORK/r-none.txt" "$WORK/r-default.txt" "--recompute none"
  run_ok workload "${small[@]}" --no-tied-embeddings -o "$WORK/r-untied.txt"
  run_ok workload "${small[@]}" --untie-embeddings-and-output-weights -o "$WORK/r-untie.txt"
  same_file "$WORK/r-untied.txt" "$WORK/r-untie.txt" "--untie-embeddings-and-output-weights"
  expect_status 2 "--recompute: unknown recomputation 'some' (expected none, selective or full)" workload \
    "${small[@]}" --recompute some -o "$WORK/x.txt"
  expect_status 2 "--recompute-granularity: unknown recomputation 'none'" workload "${small[@]}" \
    --recompute-granularity none -o "$WORK/x.txt"
  expect_status 2 "needs the distributed optimizer (--zero1)" workload "${small[@]}" --overlap-param-gather \
    -o "$WORK/x.txt"
  # compare forwards a value-less --recompute and the --no- forms unchanged.
  run_ok compare --fabrics ideal "${small[@]}" --recompute --no-grad-norm --no-overlap-grad-reduce -o "$WORK/c2"
  run_ok workload "${small[@]}" --recompute --no-grad-norm --no-overlap-grad-reduce -o "$WORK/c2-short.txt"
  same_file "$WORK/c2-short.txt" "$WORK/c2/workload.txt" "compare: --recompute alone"
  echo "Megatron-LM names give byte-identical traces"
  ;;
cfg)
  run_ok flows --platform "$tiny" --flows "$flows" --fabric roce --fidelity flow --cfg fabric/mtu:2048 \
    --cfg=fabric/routing:adaptive -o "$WORK/space"
  run_ok flows --platform "$tiny" --flows "$flows" --fabric roce --fidelity flow --cfg=fabric/mtu:2048 \
    --cfg fabric/routing:adaptive -o "$WORK/equals"
  same_file "$WORK/space/summary.json" "$WORK/equals/summary.json" "--cfg with a space"
  python3 - "$WORK/space/summary.json" <<'PY' || die "the --cfg values given with a space did not reach the model"
import json, sys
p = json.load(open(sys.argv[1]))["parameters"]
assert p["fabric/routing"] == "adaptive", p["fabric/routing"]
assert float(p["fabric/mtu"]) == 2048, p["fabric/mtu"]
PY
  expect_status 2 "roce/nosuch" run --cfg roce/nosuch:1 --platform "$tiny" --workload x -o "$WORK/r"
  expect_status 2 "roce/nosuch" compare --cfg roce/nosuch:1 -o "$WORK/c"
  "$SGF" params >"$WORK/params.txt"
  for sub in run flows compare; do
    "$SGF" "$sub" --help-cfg >"$WORK/$sub.cfg" || die "$sub --help-cfg failed"
    same_file "$WORK/params.txt" "$WORK/$sub.cfg" "$sub --help-cfg"
  done
  grep -q '^fabric/mtu ' "$WORK/params.txt" || die "params does not list fabric/mtu"
  echo "--cfg NAME:VALUE works; --help-cfg lists $(grep -c '^[a-z]*/' "$WORK/params.txt") parameters"
  ;;
params)
  "$SGF" params roce >"$WORK/roce.txt"
  head -1 "$WORK/roce.txt" | grep -q '^parameter  *default  *unit / values  *range' || die "params roce: no header"
  rows=$(grep -c '^[a-z]*/' "$WORK/roce.txt")
  other=$(grep '^[a-z]*/' "$WORK/roce.txt" | grep -vc '^roce/' || true)
  [ "$rows" -gt 5 ] && [ "$other" -eq 0 ] || die "params roce: $rows rows, $other outside roce/"
  all=$(grep -c '^roce/' <("$SGF" params))
  [ "$rows" -eq "$all" ] || die "params roce lists $rows rows, params lists $all roce/ rows"
  long=$(awk '/^    / && length > 80' <("$SGF" params) | head -3)
  [ -z "$long" ] || die "descriptions are not wrapped at 80 columns: $long"
  COLUMNS=60 "$SGF" params ib >"$WORK/ib.txt"
  awk '/^    / && length > 60 {bad=1} END {exit bad}' "$WORK/ib.txt" ||
    die "params does not wrap to COLUMNS=60"
  "$SGF" params --markdown >"$WORK/params.md"
  python3 - "$WORK/params.md" <<'PY' || die "params --markdown: a cell holds an unescaped |"
import re, sys
rows = [l.rstrip("\n") for l in open(sys.argv[1]) if l.startswith("|")]
escaped = 0
for l in rows[2:]:
    cells = re.split(r"(?<!\\)\|", l)
    assert len(cells) == 8, "%d cells: %s" % (len(cells) - 2, l)
    escaped += l.count("\\|")
assert escaped > 0, "no escaped | (enum values such as static|dynamic have one)"
print("%d markdown rows, %d escaped |" % (len(rows) - 2, escaped))
PY
  grep -qF 'static\|dynamic' "$WORK/params.md" || die "roce/pfc-threshold's values are not escaped"
  ;;
fabrics)
  for list in , ib,ib ib, ,roce roce,,ib; do
    expect_status 2 "--fabrics" compare --fabrics "$list" "${job[@]}" -o "$WORK/c"
    [ ! -e "$WORK/c" ] && ! compgen -G "$WORK/c.*" >/dev/null || die "--fabrics $list left a result"
  done
  expect_status 2 "twice" compare --fabrics ib,roce,ib -o "$WORK/c"
  expect_status 2 "empty entry" compare --fabrics=, -o "$WORK/c"
  ;;
integers)
  big=99999999999999999999
  expect_status 2 "--seed: '$big'" run --seed $big --platform "$tiny" --workload x -o "$WORK/r"
  expect_status 2 "--seed: '$big'" flows --seed $big --platform "$tiny" --flows "$flows" -o "$WORK/f"
  expect_status 2 "--seed: '$big'" compare --seed=$big -o "$WORK/c"
  expect_status 2 "--seed: '$big'" workload --seed $big --model llama3-8b --gpus 8 -o "$WORK/w.txt"
  expect_status 2 "--seed: '-1'" run --seed -1 --platform "$tiny" --workload x -o "$WORK/r"
  expect_status 2 "--seed: '7x'" flows --seed 7x --platform "$tiny" --flows "$flows" -o "$WORK/f"
  expect_status 2 "--seed: ' 7'" run --seed ' 7' --platform "$tiny" --workload x -o "$WORK/r"
  expect_status 2 "--gpus: '4294967312'" workload --model llama3-8b --gpus 4294967312 -o "$WORK/w.txt"
  expect_status 2 "--tp: '0'" workload --model llama3-8b --gpus 8 --tp 0 -o "$WORK/w.txt"
  expect_status 2 "--tensor-model-parallel-size: '8.0'" workload --model llama3-8b --gpus 8 \
    --tensor-model-parallel-size 8.0 -o "$WORK/w.txt"
  expect_status 2 "--gpus: '1e3'" compare --gpus 1e3 -o "$WORK/c"
  expect_status 2 "--micro-batch: '+2'" compare --micro-batch +2 -o "$WORK/c"
  expect_status 2 "radix" platform --gpus 16 --radix 8x -o "$WORK/p.xml"
  expect_status 2 "gpus" platform --gpus 4294967312 -o "$WORK/p.xml"
  # The largest seed is accepted by run (2^64 - 1).
  run_ok workload --model llama3-8b --gpus 16 --tp 8 --pp 2 --global-batch 8 -o "$WORK/w.txt"
  run_ok run --seed 18446744073709551615 --platform "$tiny" --workload "$WORK/w.txt" --no-progress -o "$WORK/r"
  [ "$(jget "$WORK/r/summary.json" seed)" = 18446744073709551615 ] || die "seed 2^64-1 was not kept"
  expect_status 2 "--seed: '18446744073709551616'" run --seed 18446744073709551616 --platform "$tiny" \
    --workload "$WORK/w.txt" -o "$WORK/r2"
  ;;
compare_platform)
  run_ok compare --fabrics ib "${job[@]}" --gpu A100 --radix 8 --no-rail-optimized --oversubscription 2 \
    --gpus-per-node 4 --link-latency 200ns -o "$WORK/a100"
  p=$WORK/a100/platform.xml
  prop() { sed -n "s/.*prop id=\"sgfabric\/$2\" value=\"\([^\"]*\)\".*/\1/p" "$1"; }
  [ "$(prop "$p" gpu)" = A100 ] || die "--gpu A100 did not reach the platform ($(prop "$p" gpu))"
  [ "$(prop "$p" link-rate)" = 200Gbps ] || die "an A100 platform's NICs are not 200 Gb/s: $(prop "$p" link-rate)"
  [ "$(prop "$p" nvlink-rate)" = 300GBps ] || die "an A100's NVLink is not 300 GB/s: $(prop "$p" nvlink-rate)"
  [ "$(prop "$p" radix)" = 8 ] || die "--radix 8 did not reach the platform"
  [ "$(prop "$p" rail-optimized)" = 0 ] || die "--no-rail-optimized did not reach the platform"
  [ "$(prop "$p" oversubscription)" = 2,1 ] || die "--oversubscription 2: $(prop "$p" oversubscription)"
  [ "$(prop "$p" gpus-per-node)" = 4 ] || die "--gpus-per-node 4 did not reach the platform"
  [ "$(prop "$p" link-latency)" = 200ns ] || die "--link-latency did not reach the platform"
  [ "$(jget "$WORK/a100/ib/summary.json" workload.gpu)" = A100 ] || die "the job did not run on A100s"
  run_ok compare --fabrics ib "${job[@]}" --link-rate=100Gbps --tiers 2 --rail-optimized -o "$WORK/h100"
  p=$WORK/h100/platform.xml
  [ "$(prop "$p" link-rate)" = 100Gbps ] || die "--link-rate 100Gbps did not reach the platform"
  [ "$(prop "$p" gpu)" = H100 ] && [ "$(prop "$p" rail-optimized)" = 1 ] || die "default GPU or rails lost"
  # A given platform cannot take platform options, and one that does not match the job is named.
  expect_status 2 "cannot be combined with --platform" compare --platform "$tiny" --radix 8 -o "$WORK/c"
  run_ok compare --fabrics ideal --platform "$tiny" --gpus 8 --model llama3-8b --tp 8 --pp 1 --global-batch 8 \
    --gpu A100 -o "$WORK/mismatch"
  grep -q "warning: the job has 8 GPUs, the platform .* has 16" "$WORK/last.stderr" || die "no size warning"
  grep -q "warning: the job runs on A100 GPUs, the platform .* has H100" "$WORK/last.stderr" || die "no GPU warning"
  echo "compare's platform options reach platform.xml; mismatches are warned about"
  ;;
run_defaults)
  run_ok workload "${job[@]}" -o "$WORK/w.txt"
  run_ok run --platform "$tiny" --workload "$WORK/w.txt" --fabric ib --no-progress -o "$WORK/r"
  [ "$(jget "$WORK/r/summary.json" fidelity)" = flow ] || die "run does not default to flow fidelity"
  [ "$(wc -l <"$WORK/last.stdout")" -eq 1 ] || die "run printed $(wc -l <"$WORK/last.stdout") lines, expected one"
  grep -qE "^ib on .*: iteration [0-9.]+ s, MFU [0-9.]+ %, memory [0-9.]+ of [0-9]+ GB per GPU; results in $WORK/r\$" "$WORK/last.stdout" ||
    die "run's one-line result: $(cat "$WORK/last.stdout")"
  # Progress (forced, as on a terminal): the micro-batch k/m and the share of ranks done.
  run_ok run --platform "$tiny" --workload "$WORK/w.txt" --fabric ib --progress -o "$WORK/p"
  tr '\r' '\n' <"$WORK/last.stderr" >"$WORK/progress.txt"
  grep -qE 'micro-batch [0-9]+/8, [0-9]+/16 ranks done \([0-9]+ %\)' "$WORK/progress.txt" ||
    die "no micro-batch progress: $(tail -2 "$WORK/progress.txt")"
  grep -qF '16/16 ranks done (100 %)' "$WORK/progress.txt" || die "progress does not reach 100 %"
  echo "progress: $(grep -c 'ranks done' "$WORK/progress.txt") updates, last: $(grep 'ranks done' "$WORK/progress.txt" | tail -1)"
  # A workload smaller than the platform, or for another GPU, is run with a warning.
  run_ok workload --model llama3-8b --gpus 8 --tp 8 --gpu A100 -o "$WORK/a100.txt"
  run_ok run --platform "$tiny" --workload "$WORK/a100.txt" --no-progress -o "$WORK/a"
  grep -q "warning: the workload has 8 ranks, the platform .* has 16 GPUs: 8 stay idle" "$WORK/last.stderr" ||
    die "no warning for a workload smaller than the platform"
  grep -q "warning: the workload is for A100 GPUs, the platform .* has H100 GPUs" "$WORK/last.stderr" ||
    die "no warning for a workload of another GPU type"
  # Packet fidelity above 256 GPUs warns before it starts (the run itself is not needed here:
  # the platform is too small, so it stops right after the warning).
  run_ok workload --model llama3-8b --gpus 512 --tp 8 --pp 2 -o "$WORK/big.txt"
  expect_status 1 "has 512 ranks" run --platform "$tiny" --workload "$WORK/big.txt" --fidelity packet -o "$WORK/b"
  grep -q "warning: packet fidelity on 512 GPUs" "$WORK/stderr" || die "no warning for packet fidelity on 512 GPUs"
  head -1 "$WORK/stderr" | grep -q "warning: packet fidelity" || die "the packet-fidelity warning does not come first"
  echo "run: flow by default, one line: $(cat "$WORK/stdout" "$WORK/last.stdout" | tail -1)"
  ;;
*)
  die "unknown case $case_name"
  ;;
esac
