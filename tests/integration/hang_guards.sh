#!/usr/bin/env bash
# hang_guards CASE: inputs that once made a simulation run forever, eat memory until killed or
# crash, and what they do now. A refused input must fail with status 1 or 2 (not a crash), say
# why naming the file and line or the parameter, and leave no --out directory; a repaired one must
# finish (each run is bounded by `timeout`, so a regression fails instead of hanging ctest).
set -euo pipefail
. "$(dirname "$0")/common.sh"
[ $# -eq 1 ] || die "usage: $0 SGFABRIC_BINARY SOURCE_DIR CASE"
name=$1
tiny=$PLATFORMS/tiny-16.xml

# Every run is bounded: the tool is called through a wrapper that kills it after 60 s (exit 124,
# which expect_failure reports as not 1 or 2).
printf '#!/bin/sh\nexec timeout 60 "%s" "$@"\n' "$SGF" >"$WORK/sgfabric-bounded"
chmod +x "$WORK/sgfabric-bounded"
SGF=$WORK/sgfabric-bounded

# bounded ARGS...: sgfabric ARGS..., stderr in WORK/stderr; prints the exit status.
bounded() {
  local status=0
  "$SGF" "$@" >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
  [ "$status" -ne 124 ] || die "$name: sgfabric $* did not finish within 60 s"
  echo "$status"
}

# refused COMMAND "FRAGMENT[|...]" ARGS...: expect_failure (common.sh).
refused() { expect_failure "$@"; }

# derive NAME SED_SCRIPT: a copy of tiny-16.xml edited by sed, in WORK.
derive() {
  sed "$2" "$tiny" >"$WORK/$1"
  cmp -s "$tiny" "$WORK/$1" && die "sed '$2' did not change tiny-16.xml: update this test"
  echo "$WORK/$1"
}

# line_of FILE TEXT: the line number of the first line of FILE holding TEXT.
line_of() {
  local n
  n=$(grep -nF -- "$2" "$1" | head -1 | cut -d: -f1)
  [ -n "$n" ] || die "'$2' not found in $1"
  echo "$n"
}

# flows_file NAME ROW...: a flow file in WORK with the given data rows.
flows_file() {
  local f=$WORK/$1
  shift
  { echo "src,dst,bytes,start_us"; printf '%s\n' "$@"; } >"$f"
  echo "$f"
}

# trace_one_coll NAME N BYTES [EXTRA_LINE]: a trace of one dp all-reduce of BYTES over N ranks.
trace_one_coll() {
  local f=$WORK/$1
  cat >"$f" <<EOF
sgf-workload 1
model name=one-coll layers=1 hidden=64 heads=1 kv_heads=1 ffn=64 vocab=1 seq=1 experts=0 topk=0 gated=1
layout gpus=$2 tp=1 pp=1 vpp=1 dp=$2 ep=1 cp=1
${4:-}
gpu H100
batch micro=1 global=$2 microbatches=1 recompute=0 zero1=0 seq_parallel=0 grad_bytes=4
stages layers=1 vfirst=0 vlayers=1
program 0 ops=1
0 coll ph=bwd mb=0 coll=allreduce group=dp bytes=$3
end
EOF
  echo "$f"
}

case $name in
flow_fractional_bytes) # a fraction of a byte used to become a 0-byte packet sent forever
  for bytes in 0.5 1.5 4096.5; do
    f=$(flows_file "frac-$bytes.csv" "0,8,1000,0" "0,8,$bytes,0")
    refused flows "frac-$bytes.csv:3: |bytes must be a whole number of bytes from 1 to 2^50|$bytes" \
      --platform "$tiny" --flows "$f" --fabric ideal
  done ;;
flow_huge_bytes) # 1e308 bytes at packet fidelity: 2.4e304 packets
  f=$(flows_file huge.csv "0,8,1e308,0")
  refused flows "huge.csv:2: |2^50" --platform "$tiny" --flows "$f" --fabric ideal
  f=$(flows_file limit.csv "0,8,1125899906842625,0")
  refused flows "limit.csv:2: |2^50" --platform "$tiny" --flows "$f" --fabric ideal ;;
coll_uneven_sizes) # all-reduces whose size does not divide by the ranks finish and move whole bytes
  # (NCCL's Simple protocol: the wire carries the data alone; LL and LL128 add their flag bytes)
  for fidelity in packet flow; do
    for case in "16 1001 ring" "16 1001 hierarchical" "3 1000 ring" "16 7 tree"; do
      read -r n bytes algo <<<"$case"
      t=$(trace_one_coll "ar-$n-$bytes.trace" "$n" "$bytes")
      out=$WORK/out-$n-$bytes-$algo-$fidelity
      status=$(bounded run --platform "$tiny" --workload "$t" --fabric ideal --fidelity "$fidelity" \
        --cfg=coll/algorithm:"$algo" --cfg=coll/protocol:simple --no-progress --out "$out")
      [ "$status" -eq 0 ] || { cat "$WORK/stderr" >&2; die "all-reduce of $bytes B over $n ($algo, $fidelity) failed"; }
      equal "collectives[0].bytes" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["collectives"][0]["bytes"])' "$out/summary.json")" "$bytes"
      echo "all-reduce $bytes B over $n ranks, $algo, $fidelity: $(jget "$out/summary.json" iteration_time_s) s"
    done
  done
  # Hierarchical on 2 nodes x 8: the fabric carries the inter-node rings, 2(L-1)S = 2 x 1001 B.
  equal "fabric_bytes_by_group.dp" "$(jget "$WORK/out-16-1001-hierarchical-packet/summary.json" fabric_bytes_by_group.dp)" 2002 ;;
generator_dp3) # "sgfabric workload --gpus 24 --tp 8": dp = 3, gradient all-reduces not divisible by 3
  run_ok platform --gpus 24 -o "$WORK/p24.xml"
  printf 'name: small\nlayers: 2\nhidden: 256\nheads: 8\nffn: 1000\nvocab: 1001\nseq: 128\n' >"$WORK/small.model"
  run_ok workload --model-file "$WORK/small.model" --gpus 24 --tp 8 --pp 1 -o "$WORK/w.trace"
  grep -q "group=dp bytes=1291520" "$WORK/w.trace" || die "the generated trace lost its 1291520 B dp all-reduce"
  status=$(bounded run --platform "$WORK/p24.xml" --workload "$WORK/w.trace" --fabric ideal --cfg=coll/protocol:simple \
    --no-progress --out "$WORK/r")
  [ "$status" -eq 0 ] || { cat "$WORK/stderr" >&2; die "the dp = 3 run failed"; }
  # 8 dp groups of 3 ranks on 3 nodes, a ring each: 8 x 2(3-1) x 1291520 B, to the byte (Simple
  # protocol: no flag bytes).
  equal "fabric_bytes_by_group.dp" "$(jget "$WORK/r/summary.json" fabric_bytes_by_group.dp)" $((8 * 4 * 1291520)) ;;
trace_fractional_bytes)
  t=$(trace_one_coll frac.trace 16 1000.5)
  refused run "frac.trace:9: |1000.5 is not a whole number of bytes" --platform "$tiny" --workload "$t" \
    --fabric ideal --no-progress ;;
trace_second_layout_larger) # used to overflow the stage tables sized by the first layout (SIGSEGV)
  t=$(trace_one_coll second.trace 16 4096 "layout gpus=16 tp=1 pp=16 vpp=1 dp=1 ep=1 cp=1")
  refused run "second.trace:4: |second 'layout' line|line 3" --platform "$tiny" --workload "$t" \
    --fabric ideal --no-progress ;;
trace_second_layout_same) # used to leak the first layout's stages and drop the programs read before
  t=$(trace_one_coll same.trace 16 4096)
  sed -i '/^end$/a layout gpus=16 tp=1 pp=1 vpp=1 dp=16 ep=1 cp=1' "$t"
  refused run "same.trace:11: |second 'layout' line" --platform "$tiny" --workload "$t" --fabric ideal \
    --no-progress ;;
model_layers_limit) # layers: 1073741824 used to generate until the memory ran out
  printf 'name: deep\nlayers: 1073741824\nhidden: 256\nheads: 8\nffn: 1000\nvocab: 1001\nseq: 128\n' >"$WORK/deep.model"
  status=$(bounded workload --model-file "$WORK/deep.model" --gpus 8 --tp 8 --pp 1 -o "$WORK/deep.trace")
  cat "$WORK/stderr"
  [ "$status" -eq 1 ] || [ "$status" -eq 2 ] || die "exit status $status, expected 1 or 2"
  grep -qF "deep.model:2: layers: 1073741824 is more than the limit of 100000 layers" "$WORK/stderr" ||
    die "no message naming the file, line and limit"
  [ ! -e "$WORK/deep.trace" ] || die "a trace was written" ;;
generator_ops_limit) # within the layer and micro-batch limits, but 2 x 100000 x 100 ops on one stage
  printf 'name: deep\nlayers: 100000\nhidden: 256\nheads: 8\nffn: 1000\nvocab: 1001\nseq: 128\n' >"$WORK/deep.model"
  status=$(bounded workload --model-file "$WORK/deep.model" --gpus 8 --tp 8 --pp 1 --global-batch 100 -o "$WORK/deep.trace")
  cat "$WORK/stderr"
  [ "$status" -eq 1 ] || [ "$status" -eq 2 ] || die "exit status $status, expected 1 or 2"
  grep -qF "need at least 20000000 ops per stage, more than the limit of 4194304" "$WORK/stderr" ||
    die "no message naming the op limit"
  [ ! -e "$WORK/deep.trace" ] || die "a trace was written" ;;
simai_ga_limit) # ga: 1000000 used to build ops until killed
  sed '1s/ga: 2/ga: 1000000/' "$SRC/workloads/examples/simai-every-type.txt" >"$WORK/ga.txt"
  refused run "ga.txt:1: |ga: 1000000 micro-batches is more than the limit of 100000" --platform "$tiny" \
    --workload "simai:$WORK/ga.txt" --fabric ideal --no-progress
  # A comm size past 2^50 bytes (row on line 4).
  sed '4s/\t1048576\t/\t2000000000000000\t/' "$SRC/workloads/examples/simai-every-type.txt" >"$WORK/big.txt"
  refused run "big.txt:4: |forward comm bytes 2000000000000000 is more than the limit of 2^50 bytes" \
    --platform "$tiny" --workload "simai:$WORK/big.txt" --fabric ideal --no-progress ;;
pfc_headroom_exceeds_buffer) # 4 MB x 8 ports = the whole 32 MB buffer: one 1000 B flow paused forever
  for h in 4MB 5GB; do
    refused flows "roce/pfc-headroom|$h|8 ports|leaf0|roce/buffer = 32000000 B" --platform "$tiny" \
      --flows "$DATA/flows/one_0_8_1000B.csv" --fabric roce --cfg=roce/pfc-headroom:$h
  done
  # Just below the limit the flow is delivered.
  status=$(bounded flows --platform "$tiny" --flows "$DATA/flows/one_0_8_1000B.csv" --fabric roce \
    --cfg=roce/pfc-headroom:3.9MB --out "$WORK/ok")
  [ "$status" -eq 0 ] || { cat "$WORK/stderr" >&2; die "3.9 MB of headroom: the run failed"; }
  equal "bytes_delivered" "$(jget "$WORK/ok/summary.json" bytes_delivered)" 1000 ;;
watchdog_packet) # a threshold below what an 8-to-1 incast needs between deliveries trips the watchdog
  # The actors left blocked may make ASan warn first (as for a deadlock): the message on any line.
  SIMGRID_FIRST=1 refused flows "livelock: 100 events without a byte delivered|fabric/watchdog-events = 100|simulated time|port|queued|0 of 8 done" \
    --platform "$tiny" --flows "$DATA/flows/incast_8to1_4MB.csv" --fabric ideal --cfg=fabric/watchdog-events:100
  # The same run with the default threshold, and with the watchdog off, completes.
  for w in 50000000 0; do
    status=$(bounded flows --platform "$tiny" --flows "$DATA/flows/incast_8to1_4MB.csv" --fabric ideal \
      --cfg=fabric/watchdog-events:$w --out "$WORK/ok-$w")
    [ "$status" -eq 0 ] || { cat "$WORK/stderr" >&2; die "watchdog-events $w: the run failed"; }
  done
  cmp "$WORK/ok-50000000/flows.csv" "$WORK/ok-0/flows.csv" || die "the watchdog changed the results" ;;
watchdog_flow) # flow fidelity: the 8 flows start at one date, 3 events there trip a threshold of 3
  SIMGRID_FIRST=1 refused flows "livelock: 3 events in a row at one simulated date|flow start|GPU" --platform "$tiny" \
    --flows "$DATA/flows/incast_8to1_4MB.csv" --fabric ideal --fidelity flow --cfg=fabric/watchdog-events:3 ;;
watchdog_run) # through the replay: the livelock report, not SimGrid's deadlock report
  SIMGRID_FIRST=1 refused run "livelock: 50 events|fabric/watchdog-events = 50" --platform "$tiny" \
    --workload "$DATA/workloads/allreduce-dp16.trace" --fabric roce --cfg=coll/algorithm:ring \
    --cfg=fabric/watchdog-events:50 --fidelity packet --no-progress
  ! grep -q "Deadlock" "$WORK/stderr" || die "SimGrid's deadlock report is shown" ;;
platform_*) # platform files sgfabric's reader accepted but SimGrid's parser aborted on (SIGABRT)
  case $name in
  platform_speed_fast)
    p=$(derive speed.xml '0,/speed="989.4Tf"/s//speed="fast"/')
    fragments="speed.xml:$(line_of "$p" 'speed="fast"'): |host 'gpu0'|speed 'fast' is not a SimGrid speed" ;;
  platform_internal_dtd)
    p=$(derive dtd.xml 's|<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">|<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd" [\n  <!ELEMENT x ANY>\n]>|')
    fragments="dtd.xml:2: |internal DTD subset" ;;
  platform_entity)
    p=$(derive entity.xml 's|<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">|<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd" [ <!ENTITY bw "400Gbps"> ]>|')
    fragments="entity.xml:2: |internal DTD subset" ;;
  platform_bom)
    p=$WORK/bom.xml
    { printf '\xef\xbb\xbf'; cat "$tiny"; } >"$p"
    fragments="bom.xml:1: |byte order mark" ;;
  platform_second_zone)
    p=$(derive zone2.xml 's|</platform>|  <zone id="other" routing="None">\n    <host id="x" speed="1Gf"/>\n  </zone>\n</platform>|')
    fragments="zone2.xml:$(line_of "$p" '<zone id="other"'): |exactly one zone" ;;
  platform_simgrid_refuses) # past sgfabric's checks: SimGrid's own refusal, caught and reported
    p=$(derive core.xml '0,/speed="989.4Tf"/s//speed="989.4Tf" core="many"/')
    fragments="core.xml|SimGrid cannot load the platform|core.xml:$(line_of "$p" 'core="many"')|many is not an int" ;;
  *) die "unknown case '$name'" ;;
  esac
  for command in flows run; do
    if [ $command = flows ]; then
      refused flows "$fragments" --platform "$p" --flows "$DATA/flows/one_0_8_1000B.csv" --fabric ideal
    else
      refused run "$fragments" --platform "$p" --workload "$DATA/workloads/allreduce-dp16.trace" --fabric ideal \
        --no-progress
    fi
    ! grep -qiE "Aborted|backtrace|Exiting now|core dumped" "$WORK/stderr" || die "SimGrid aborted"
  done ;;
*) die "unknown case '$name'" ;;
esac
echo "PASS"
