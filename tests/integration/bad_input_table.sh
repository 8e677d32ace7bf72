#!/usr/bin/env bash
# bad_input_table [--write FILE]: runs every bad input of docs/bad-input.md and checks what the
# user sees: exit status 1 or 2 (never a signal), a message starting "sgfabric COMMAND: " that
# contains the expected file:line, parameter or option, no crash report (Aborted, Segmentation,
# backtrace, sanitizer), no output left behind. The rows of the table are this script's output:
# without --write it compares them with docs/bad-input.md and fails on any difference (after a
# deliberate change of a message, regenerate with
#   tests/integration/bad_input_table.sh build/sgfabric . --write docs/bad-input.md).
# Every input is made in a scratch directory and named relatively, so messages are stable.
set -euo pipefail
. "$(dirname "$0")/common.sh"
write=
if [ "${1:-}" = --write ]; then
  write=$2
  case $write in /*) ;; *) write=$PWD/$write ;; esac
fi
SGF=$(cd "$(dirname "$SGF")" && pwd)/$(basename "$SGF")
SRC=$(cd "$SRC" && pwd)
DATA=$SRC/tests/integration/data
PLATFORMS=$SRC/platforms
cd "$WORK"

# Inputs: copies of shipped files, and files derived from them.
cp "$PLATFORMS/tiny-16.xml" tiny-16.xml
cp "$DATA/platforms/bad_unclosed_tag.xml" unclosed-tag.xml
cp "$DATA/workloads/allreduce-dp16.trace" dp16.trace
cp "$SRC/workloads/examples/simai-every-type.txt" simai.txt
for f in "$SRC"/tests/unit/workloads/bogus/*; do cp "$f" .; done
printf 'src,dst,bytes,start_us\n0,8,1000,0\n' >one.csv
mkdir a-directory
# file NAME FORMAT: printf FORMAT > NAME (\n, \0 and \xHH escapes).
file() { printf "$2" >"$1"; }
# derive NAME FROM SED: FROM edited by sed; dies if sed changed nothing.
derive() {
  sed "$3" "$2" >"$1"
  cmp -s "$2" "$1" && die "sed '$3' did not change $2: update this table"
  return 0
}
# deploy NAME HOST3 RANK4 [drop15]: a 16-rank deployment whose line for rank 3 uses HOST3 and
# whose line for rank 4 has argument RANK4 (lines 6 and 7 of the file).
deploy() {
  {
    echo "<?xml version='1.0'?>"
    echo '<platform version="4.1">'
    for r in $(seq 0 15); do
      h=gpu$r v=$r
      [ "$r" = 3 ] && h=$2
      [ "$r" = 4 ] && v=$3
      [ "$r" = 15 ] && [ "${4:-}" = drop15 ] && continue
      echo "  <actor host=\"$h\" function=\"rank\"><argument value=\"$v\"/></actor>"
    done
    echo '</platform>'
  } >"$1"
}
header="sgf-workload 1
model name=tiny layers=2 hidden=64 heads=4 kv_heads=4 ffn=256 vocab=100 seq=16 experts=0 topk=0 gated=1
layout gpus=2 tp=2 pp=1 vpp=1 dp=1 ep=1 cp=1
gpu H100
stages layers=2 vfirst=0 vlayers=2"
model="name tiny\nlayers 2\nhidden 64\nheads 4\nffn 256\nvocab 1000\nseq 128\n"

rows=()
n=0
# row AREA CASE INPUT FRAGMENTS COMMAND ARGS...: runs sgfabric COMMAND ARGS...; FRAGMENTS are
# |-separated fixed strings the message must contain.
row() {
  local area=$1 case=$2 input=$3 fragments=$4 command=$5
  shift 5
  rm -rf out
  local status=0
  "$SGF" "$command" "$@" >stdout 2>stderr </dev/null || status=$?
  local what="sgfabric $command: $case"
  [ "$status" -eq 1 ] || [ "$status" -eq 2 ] || die "$what: exit status $status, expected 1 or 2: $(cat stderr)"
  # (an unknown command is reported by sgfabric itself: "sgfabric: ...")
  grep -qE "^sgfabric( $command)?: " stderr || die "$what: no line starts with 'sgfabric $command: ': $(cat stderr)"
  # AddressSanitizer's note on SimGrid's context switches (sanitizer builds, once the simulation has
  # run actors) is not a crash report, nor ours.
  grep -v -e '^==[0-9]*==WARNING: ASan is ignoring requested __asan_handle_no_return' \
    -e '^False positive error reports may follow' -e '^For details see https://github.com/google/sanitizers/issues/189' \
    stderr >stderr.ours || true
  if grep -qiE "Aborted|Segmentation|backtrace|Sanitizer|core dumped|terminate called" stderr.ours stdout; then
    die "$what: crash report in the output: $(cat stderr)"
  fi
  local IFS='|' fragment
  for fragment in $fragments; do
    grep -qF -- "$fragment" stderr || die "$what: stderr does not contain '$fragment': $(cat stderr)"
  done
  unset IFS
  [ ! -e out ] || die "$what: out exists after a failed run"
  compgen -G "out.*" >/dev/null && die "$what: something was left next to out: $(ls -d out.*)"
  # What the user sees: the sgfabric lines of stderr, '|' escaped for the table.
  local seen
  seen=$(grep -E "^sgfabric( [a-z]+)?: " stderr | sed 's/|/\\|/g' | paste -sd '~' | sed 's/~/<br>/g')
  n=$((n + 1))
  rows+=("| $n | $area: $case | $input | \`$seen\` (exit $status) |")
}

F=(--platform tiny-16.xml --flows one.csv --out out)

# --- Platform XML (sgfabric flows --platform) ---
row platform "missing file" "no-such.xml" "no-such.xml: cannot open the platform file: No such file" \
  flows --platform no-such.xml --flows one.csv --out out
row platform "a directory" "a-directory" "a-directory: is a directory" flows --platform a-directory --flows one.csv --out out
file empty.xml ''
row platform "empty file" "empty.xml (0 bytes)" "empty.xml|empty file" flows --platform empty.xml --flows one.csv --out out
file text.xml 'this is not XML\n'
row platform "not XML" "text.xml: plain text" "text.xml:1: malformed XML" flows --platform text.xml --flows one.csv --out out
row platform "unclosed tag" "unclosed-tag.xml: &lt;host&gt; never closed" "unclosed-tag.xml:6: malformed XML" \
  flows --platform unclosed-tag.xml --flows one.csv --out out
head -c 3000 tiny-16.xml >truncated.xml
row platform "truncated file" "truncated.xml: first 3,000 bytes of tiny-16.xml" "truncated.xml" \
  flows --platform truncated.xml --flows one.csv --out out
file wrong-root.xml '<?xml version="1.0"?>\n<network/>\n'
row platform "wrong root element" "wrong-root.xml: &lt;network/&gt;" "wrong-root.xml|root element" \
  flows --platform wrong-root.xml --flows one.csv --out out
file no-zone.xml '<?xml version="1.0"?>\n<platform version="4.1">\n</platform>\n'
row platform "no zone" "no-zone.xml: empty &lt;platform&gt;" "no-zone.xml:2|no <zone>" flows --platform no-zone.xml --flows one.csv --out out
file nul.xml '<?xml version="1.0"?>\n<platform\0 version="4.1">\n'
row platform "NUL byte" "nul.xml: a NUL inside a tag" "nul.xml" flows --platform nul.xml --flows one.csv --out out
derive unitless.xml tiny-16.xml '/"gpu5--leaf1"/s/bandwidth="400Gbps"/bandwidth="400"/'
row platform "bandwidth without unit" 'unitless.xml: bandwidth="400"' "unitless.xml:84|gpu5--leaf1" \
  flows --platform unitless.xml --flows one.csv --out out
derive negative.xml tiny-16.xml '/"leaf1--spine2"/s/bandwidth="400Gbps"/bandwidth="-400Gbps"/'
row platform "negative bandwidth" 'negative.xml: bandwidth="-400Gbps"' "negative.xml|leaf1--spine2" \
  flows --platform negative.xml --flows one.csv --out out
derive overflow.xml tiny-16.xml '/"leaf1--spine2"/s/bandwidth="400Gbps"/bandwidth="1e300TBps"/'
row platform "bandwidth overflows" 'overflow.xml: bandwidth="1e300TBps"' "overflow.xml|leaf1--spine2" \
  flows --platform overflow.xml --flows one.csv --out out
derive moved.xml tiny-16.xml 's/"gpu3--leaf0"/"gpu3--leaf1"/'
row platform "link contradicts the tree" "moved.xml: GPU 3's link moved to leaf 1" "moved.xml|gpu3--leaf" \
  flows --platform moved.xml --flows one.csv --out out
derive bad-prop.xml tiny-16.xml 's|<prop id="sgfabric/gpu" value="H100"/>|<prop id="sgfabric/gpu" value="H100"/><prop id="fabric/mtu" value="10"/>|'
row platform "model parameter out of range" 'bad-prop.xml: &lt;prop id="fabric/mtu" value="10"/&gt;' "bad-prop.xml|fabric/mtu" \
  flows --platform bad-prop.xml --flows one.csv --out out
derive unknown-prop.xml tiny-16.xml 's|<prop id="sgfabric/gpu" value="H100"/>|<prop id="sgfabric/gpu" value="H100"/><prop id="ib/nope" value="1"/>|'
row platform "unknown model parameter" 'unknown-prop.xml: &lt;prop id="ib/nope"&gt;' "unknown-prop.xml|ib/nope" \
  flows --platform unknown-prop.xml --flows one.csv --out out
derive gpus-prop.xml tiny-16.xml 's|<prop id="sgfabric/gpus" value="16"/>|<prop id="sgfabric/gpus" value="17"/>|'
row platform "GPU count contradicts the hosts" 'gpus-prop.xml: sgfabric/gpus 17, 16 hosts' "gpus-prop.xml" \
  flows --platform gpus-prop.xml --flows one.csv --out out
derive radix-prop.xml tiny-16.xml 's|<prop id="sgfabric/radix" value="8"/>|<prop id="sgfabric/radix" value="eight"/>|'
row platform "non-numeric radix" 'radix-prop.xml: sgfabric/radix "eight"' "radix-prop.xml" \
  flows --platform radix-prop.xml --flows one.csv --out out

# --- Model parameters (--cfg=area/name:value) ---
cfg() { row parameter "$1" "--cfg=$2" "$3" flows "${F[@]}" "--cfg=$2"; }
cfg "unknown parameter" fabric/nope:1 "fabric/nope"
cfg "unknown area" wifi/speed:1 "wifi/speed"
cfg "no colon" fabric/mtu "fabric/mtu"
cfg "empty value" fabric/mtu: "fabric/mtu"
cfg "out of range" fabric/mtu:10 "fabric/mtu|out of range"
cfg "not a number" fabric/mtu:big "fabric/mtu|big"
cfg "not an integer" fabric/mtu:4000.5 "fabric/mtu|integer"
cfg "NaN" fabric/mtu:nan "fabric/mtu|nan"
cfg "infinite" ib/ar-imbalance:inf "ib/ar-imbalance"
cfg "duration without unit" fabric/nic-latency:5 "fabric/nic-latency|needs a unit"
cfg "unknown unit" fabric/nic-latency:5parsec "fabric/nic-latency|unknown unit 'parsec'"
cfg "negative duration" fabric/nic-latency:-1us "fabric/nic-latency|negative"
cfg "duration overflows after scaling" fabric/nic-latency:1e307h "fabric/nic-latency"
cfg "rate overflows after scaling" roce/dcqcn-rai:1e300TBps "roce/dcqcn-rai|too large"
cfg "size overflows after scaling" roce/dcqcn-byte-counter:1e300TB "roce/dcqcn-byte-counter|too large"
cfg "rate above its range" roce/dcqcn-rhai:1000Tbps "roce/dcqcn-rhai|out of range"
cfg "bad enum word" fabric/switching:wormhole "fabric/switching|cut-through|store-and-forward"
cfg "bad on/off" roce/pfc:maybe "roce/pfc|on/off"
cfg "keyword-or-duration: bad word" ib/switch-latency:fast "ib/switch-latency|platform"
cfg "keyword-or-duration: above range" ib/switch-latency:2ms "ib/switch-latency|out of range"
cfg "preset-or-number: above range" roce/dcqcn-g:2 "roce/dcqcn-g|out of range"
cfg "keyword-or-size: negative" roce/pfc-headroom:-1KB "roce/pfc-headroom|negative"
cfg "preset switch: bad word" roce/dcqcn-clamp-target:maybe "roce/dcqcn-clamp-target|on|off|preset"
cfg "percentage above 100" roce/dcqcn-min-dec-factor:120 "roce/dcqcn-min-dec-factor"
row parameter "Kmin above Kmax" "--cfg=roce/ecn-kmin:300KB --cfg=roce/ecn-kmax:200KB" "roce/ecn-kmin" \
  flows "${F[@]}" --fabric roce --cfg=roce/ecn-kmin:300KB --cfg=roce/ecn-kmax:200KB
row parameter "XON above XOFF" "--cfg=roce/pfc-threshold:static --cfg=roce/pfc-xoff:50KB --cfg=roce/pfc-xon:60KB" \
  "roce/pfc-xon" flows "${F[@]}" --fabric roce --cfg=roce/pfc-threshold:static --cfg=roce/pfc-xoff:50KB --cfg=roce/pfc-xon:60KB
row parameter "headroom below one MTU" "--cfg=roce/pfc-headroom:1000" "roce/pfc-headroom" \
  flows "${F[@]}" --fabric roce --cfg=roce/pfc-headroom:1000
row parameter "trace-flow not an id" "--cfg=roce/trace-flow:3x" "roce/trace-flow" flows "${F[@]}" --fabric roce --cfg=roce/trace-flow:3x
row parameter "every packet lost" "--cfg=roce/drop-rate:1" "roce/drop-rate" flows "${F[@]}" --fabric roce --cfg=roce/drop-rate:1
row parameter "trace at flow fidelity without the fluid model" "--fidelity flow --cfg=roce/trace-flow:0 (nic preset)" \
  "roce/trace-flow|traced from the fluid model" flows "${F[@]}" --fabric roce --fidelity flow --cfg=roce/trace-flow:0
row parameter "trace-port unknown" "--cfg=roce/trace-port:leaf9-&gt;spine9" "roce/trace-port|leaf9->spine9" \
  flows "${F[@]}" --fabric roce '--cfg=roce/trace-port:leaf9->spine9'
row parameter "IB MTU not a power of two" "--cfg=ib/mtu:3000" "ib/mtu|3000" flows "${F[@]}" --fabric ib --cfg=ib/mtu:3000
row parameter "too many VLs" "--cfg=ib/num-vls:9" "ib/num-vls" flows "${F[@]}" --fabric ib --cfg=ib/num-vls:9
row parameter "buffer below one MTU" "--cfg=ib/buffer-per-vl:2048" "ib/buffer-per-vl" flows "${F[@]}" --fabric ib --cfg=ib/buffer-per-vl:2048
row parameter "SL2VL names a missing VL" "--cfg=ib/sl2vl:0,4" "ib/sl2vl|VL 4" flows "${F[@]}" --fabric ib --cfg=ib/sl2vl:0,4
row parameter "VL arbitration names a missing VL" "--cfg=ib/vlarb-low:0:64,3:64" "ib/vlarb-low|VL 3" \
  flows "${F[@]}" --fabric ib --cfg=ib/vlarb-low:0:64,3:64
row parameter "VL arbitration garbage" "--cfg=ib/vlarb-high:x" "ib/vlarb-high" flows "${F[@]}" --fabric ib --cfg=ib/vlarb-high:x

# --- Flow files (sgfabric flows --flows) ---
fl() { row "flow CSV" "$1" "$2" "$3" flows --platform tiny-16.xml --flows "$4" --out out; }
fl "missing file" "no-such.csv" "no-such.csv: cannot open the flow file: No such file" no-such.csv
fl "a directory" "a-directory" "a-directory: is a directory, not a flow file" a-directory
file empty.csv ''
fl "empty file" "empty.csv (0 bytes)" "empty.csv:1: empty flow file" empty.csv
file header-only.csv 'src,dst,bytes,start_us\n'
fl "header only" "header-only.csv" "header-only.csv|no flows" header-only.csv
file wrong-header.csv 'source,dest,size,time\n0,8,1000,0\n'
fl "wrong header" "wrong-header.csv: source,dest,size,time" "wrong-header.csv:1|src,dst,bytes,start_us" wrong-header.csv
flow() { file "$1" "src,dst,bytes,start_us\n0,8,1000,0\n$2\n"; fl "$3" "$1: row \`$(printf '%s' "$2" | sed 's/|/\\|/g')\`" "$1:3|$4" "$1"; }
flow short-row.csv '1,9,1000' "truncated row" "expected 4 fields"
flow long-row.csv '1,9,1000,0,7' "extra field" "more than 4"
flow src-text.csv 'abc,9,1000,0' "non-numeric src" "'abc' is not an integer"
flow src-junk.csv '1junk,9,1000,0' "src with trailing junk" "'1junk' is not an integer"
flow src-huge.csv '4294967296,9,1000,0' "src overflows 32 bits" "4294967296 is not a GPU"
flow src-neg.csv '-1,9,1000,0' "negative src" "'-1' is not an integer"
flow src-frac.csv '1.5,9,1000,0' "fractional src" "'1.5' is not an integer"
flow src-hex.csv '0x1,9,1000,0' "hexadecimal src" "'0x1' is not an integer"
flow dst-99.csv '1,99,1000,0' "dst not on the platform" "dst 99 is not a GPU of the platform (0..15)"
flow same.csv '3,3,1000,0' "src equals dst" "same GPU"
flow zero-bytes.csv '1,9,0,0' "zero bytes" "bytes must be positive"
flow neg-bytes.csv '1,9,-1000,0' "negative bytes" "bytes must be positive"
flow nan-bytes.csv '1,9,nan,0' "NaN bytes" "'nan' is not a number"
flow inf-bytes.csv '1,9,inf,0' "infinite bytes" "'inf' is not a number"
flow big-bytes.csv '1,9,1e400,0' "bytes overflow a double" "'1e400' is not a number"
flow hex-bytes.csv '1,9,0x10,0' "hexadecimal bytes" "'0x10' is not a number"
flow neg-start.csv '1,9,1000,-5' "negative start" "start_us must be non-negative"
flow text-start.csv '1,9,1000,soon' "non-numeric start" "'soon' is not a number"
flow late-start.csv '1,9,1000,1e30' "start too late to time a packet" "start_us must be at most 100000000000"
"$SGF" platform --gpus 16 --radix 8 --link-rate 1Mbps -o slow-16.xml >/dev/null
file huge-transfer.csv 'src,dst,bytes,start_us\n0,8,100000000000,0\n'
row "flow CSV" "transfers end too late to time a packet" "huge-transfer.csv: 100 GB over 1 Mb/s links" \
  "huge-transfer.csv|end 8e+05 s|later than 100000 s" flows --platform slow-16.xml --flows huge-transfer.csv \
  --fabric maxmin --fidelity flow --out out
row coll "collectives end too late to time a packet" "coll --sizes 100G on 1 Mb/s links" \
  "the collectives end 8.64e+05 s|later than 100000 s" coll --op allreduce --gpus 16 --group dp --sizes 100G:100G \
  --platform slow-16.xml --fabrics ib
file late-failure.csv 'time_us,action,target\n1e12,down,leaf0--spine0\n'
row "failure schedule" "time too late to time a packet" "late-failure.csv: a link down at 1e12 us" \
  "late-failure.csv:2|time_us must be at most 100000000000" flows --platform tiny-16.xml --flows one.csv \
  --failures late-failure.csv --out out
file nul.csv 'src,dst,bytes,start_us\n0,8,10\0000,0\n'
fl "NUL byte" "nul.csv: a NUL inside row 2" "nul.csv:2: NUL byte at column 7" nul.csv
{ printf 'src,dst,bytes,start_us\n0,8,'; head -c 2000 /dev/zero | tr '\0' 1; printf ',0\n'; } >long-line.csv
fl "line too long" "long-line.csv: a 2,000-digit size" "long-line.csv:2: line longer than" long-line.csv

# --- Deployments (sgfabric run --deployment) ---
R=(--platform tiny-16.xml --workload dp16.trace --fabric ideal --no-progress --out out)
dep() { row deployment "$1" "$2" "$3" run "${R[@]}" --deployment "$4"; }
dep "missing file" "no-such.xml" "no-such.xml: cannot open the deployment file: No such file" no-such.xml
dep "a directory" "a-directory" "a-directory: is a directory, not a deployment file" a-directory
file dep-text.xml 'rank 0 on gpu0\n'
file dep-empty.xml ''
dep "empty file" "dep-empty.xml (0 bytes)" "dep-empty.xml|empty file" dep-empty.xml
dep "not XML" "dep-text.xml: plain text" "dep-text.xml:1: malformed XML" dep-text.xml
file dep-root.xml '<?xml version="1.0"?>\n<deployment/>\n'
dep "wrong root element" "dep-root.xml: &lt;deployment/&gt;" "dep-root.xml:2|<platform>" dep-root.xml
file dep-elem.xml '<?xml version="1.0"?>\n<platform version="4.1">\n  <process host="gpu0"/>\n</platform>\n'
dep "not an actor" "dep-elem.xml: &lt;process&gt;" "dep-elem.xml:3|expected <actor>" dep-elem.xml
deploy host-junk.xml gpu3junk 4
dep "host with trailing junk" 'host-junk.xml: host="gpu3junk"' "host-junk.xml:6|'gpu3junk' is not a GPU" host-junk.xml
deploy host-zero.xml gpu03 4
dep "host with a leading zero" 'host-zero.xml: host="gpu03"' "host-zero.xml:6|'gpu03'" host-zero.xml
deploy host-99.xml gpu99 4
dep "host not on the platform" 'host-99.xml: host="gpu99"' "host-99.xml:6|'gpu99' is not a GPU of the platform (gpu0..gpu15)" host-99.xml
deploy host-huge.xml gpu4294967299 4
dep "host index overflows" 'host-huge.xml: host="gpu4294967299"' "host-huge.xml:6|'gpu4294967299'" host-huge.xml
deploy host-name.xml leaf0 4
dep "host is a switch" 'host-name.xml: host="leaf0"' "host-name.xml:6|'leaf0'" host-name.xml
deploy rank-huge.xml gpu3 4294967296
dep "rank overflows 32 bits" 'rank-huge.xml: value="4294967296"' "rank-huge.xml:7|rank argument '4294967296'" rank-huge.xml
deploy rank-neg.xml gpu3 -1
dep "negative rank" 'rank-neg.xml: value="-1"' "rank-neg.xml:7|'-1'" rank-neg.xml
deploy rank-junk.xml gpu3 4x
dep "rank with trailing junk" 'rank-junk.xml: value="4x"' "rank-junk.xml:7|'4x'" rank-junk.xml
deploy rank-16.xml gpu3 16
dep "rank beyond the workload" 'rank-16.xml: value="16"' "rank-16.xml:7|0..15" rank-16.xml
deploy rank-twice.xml gpu3 5
dep "rank placed twice" 'rank-twice.xml: rank 5 on two lines' "rank-twice.xml:8|rank 5 is placed twice" rank-twice.xml
deploy gpu-twice.xml gpu4 4
dep "GPU runs two ranks" 'gpu-twice.xml: gpu4 twice' "gpu-twice.xml:7|gpu4 runs two ranks" gpu-twice.xml
deploy missing-rank.xml gpu3 4 drop15
dep "rank not placed" "missing-rank.xml: no line for rank 15" "missing-rank.xml|rank 15 is not placed" missing-rank.xml
file no-arg.xml '<?xml version="1.0"?>\n<platform version="4.1">\n  <actor host="gpu0" function="rank"/>\n</platform>\n'
dep "actor without argument" 'no-arg.xml: &lt;actor host="gpu0" function="rank"/&gt;' "no-arg.xml:3|one <argument" no-arg.xml
file bad-function.xml '<?xml version="1.0"?>\n<platform version="4.1">\n  <actor host="gpu0" function="main"><argument value="0"/></actor>\n</platform>\n'
dep "wrong actor function" 'bad-function.xml: function="main"' 'bad-function.xml:3|function must be "rank"' bad-function.xml

# --- Workload traces (sgfabric run --workload) ---
W=(--platform tiny-16.xml --fabric ideal --no-progress --out out)
wl() { row trace "$1" "$2" "$3" run "${W[@]}" --workload "$4"; }
wl "missing file" "no-such.trace" "no-such.trace: cannot open the workload trace: No such file" no-such.trace
wl "a directory" "a-directory" "a-directory: is a directory, not a workload trace" a-directory
file empty.trace ''
wl "empty file" "empty.trace (0 bytes)" "empty.trace:|empty file" empty.trace
file other.trace 'hello world\n'
wl "not a workload" "other.trace: hello world" "other.trace:1|not a sgfabric workload" other.trace
wl "unsupported version" "wrong-version.trace: sgf-workload 7" "wrong-version.trace:1|unsupported format version 7" wrong-version.trace
wl "unknown op" "unknown-op.trace: op teleport" "unknown-op.trace:8|unknown op 'teleport'" unknown-op.trace
wl "truncated program" "truncated.trace: 2 of 3 ops, no end" "truncated.trace:8|truncated" truncated.trace
wl "negative size" "negative-size.trace: bytes=-4096" "negative-size.trace:8|negative value -4096" negative-size.trace
wl "non-numeric field" "non-numeric.trace: flops=lots" "non-numeric.trace:7|'lots' is not a number" non-numeric.trace
wl "group larger than the job" "group-too-large.trace: tp=16 of 8 GPUs" "group-too-large.trace:3|larger than the job" group-too-large.trace
wl "second layout line" "second-layout.trace" "second-layout.trace:4|second 'layout' line (the layout is given once" second-layout.trace
file early-program.trace 'sgf-workload 1\nprogram 0 ops=1\n'
wl "program before layout" "early-program.trace" "early-program.trace:2|before the 'layout' line" early-program.trace
file overflow.trace "$(printf '%s' "$header" | sed 's/layers=2 hidden/layers=99999999999 hidden/')\n"
wl "integer overflows" "overflow.trace: layers=99999999999" "overflow.trace:2|layers" overflow.trace
file unknown-field.trace "$(printf '%s' "$header" | sed 's/ gated=1/ gated=1 colour=red/')\n"
wl "unknown field" "unknown-field.trace: colour=red" "unknown-field.trace:2|unknown field 'colour'" unknown-field.trace
file nul.trace 'sgf-workload 1\nmodel name=ti\0ny\n'
wl "NUL byte" "nul.trace: a NUL in line 2" "nul.trace:2: NUL byte at column 14" nul.trace
file no-equals.trace "$header\nprogram 0 ops=1\n0 compute ph=fwd mb=0 class gemm\nend\n"
wl "field without =" "no-equals.trace: class gemm" "no-equals.trace:7|expected key=value" no-equals.trace
file bad-peer.trace "$header\nprogram 0 ops=1\n0 send ph=fwd mb=0 group=tp peer=+5 bytes=10\nend\n"
wl "peer outside its group" "bad-peer.trace: peer=+5 in a group of 2" "bad-peer.trace:7|peer offset +5" bad-peer.trace
cp "$DATA/workloads/ranks32.trace" ranks32.trace
wl "more ranks than GPUs" "ranks32.trace on 16 GPUs" "ranks32.trace|32 ranks|16 GPUs" ranks32.trace
file endless.trace "$header\nprogram 0 ops=2\n0 compute ph=fwd mb=0 class=gemm time=1e20\n1 coll ph=bwd mb=0 coll=allreduce group=tp bytes=64\nend\n"
wl "iteration too long to time a packet" "endless.trace: a compute op of time=1e20" \
  "endless.trace|the ranks end 1e+20 s into the simulation|later than 100000 s" endless.trace

# --- SimAI/AICB files (sgfabric run --workload simai:FILE) ---
sa() { row SimAI "$1" "$2" "$3" run "${W[@]}" --workload "simai:$4"; }
sa "missing file" "simai:no-such.txt" "no-such.txt: cannot open the SimAI workload file" no-such.txt
sa "a directory" "simai:a-directory" "a-directory: is a directory" a-directory
file simai-empty.txt ''
sa "empty file" "simai-empty.txt (0 bytes)" "simai-empty.txt:1|empty file" simai-empty.txt
sa "unknown policy" "simai-bad-policy.txt" "simai-bad-policy.txt:1|unsupported SimAI policy" simai-bad-policy.txt
sa "unknown comm type" "simai-unknown-comm.txt: ALLSHUFFLE" "simai-unknown-comm.txt:4|unknown comm type 'ALLSHUFFLE'" simai-unknown-comm.txt
sa "truncated row" "simai-truncated-row.txt" "simai-truncated-row.txt:4|truncated row" simai-truncated-row.txt
sa "negative bytes" "simai-negative.txt: -1024" "simai-negative.txt:3|negative value -1024" simai-negative.txt
sa "group larger than the job" "simai-group-too-large.txt" "simai-group-too-large.txt:1|group larger than the job" simai-group-too-large.txt
simai_head=$(head -1 simai-negative.txt)
file simai-count.txt "$simai_head\nmany\n"
sa "row count not a number" "simai-count.txt: many" "simai-count.txt:2|row count" simai-count.txt
file simai-nocount.txt "$simai_head\n"
sa "row count missing" "simai-nocount.txt" "simai-nocount.txt|missing the row count" simai-nocount.txt
file simai-zero.txt "$simai_head\n0\n"
sa "zero rows" "simai-zero.txt: row count 0" "simai-zero.txt:2|row count 0" simai-zero.txt
sed 's/^1$/2/' simai-negative.txt | sed 's/-1024/1024/' >simai-short.txt
sa "fewer rows than announced" "simai-short.txt: 2 announced, 1 given" "simai-short.txt|announces 2 rows" simai-short.txt
{ sed 's/-1024/1024/' simai-negative.txt; tail -1 simai-negative.txt | sed 's/-1024/1024/'; } >simai-extra.txt
sa "more rows than announced" "simai-extra.txt: 1 announced, 2 given" "simai-extra.txt:4|extra row" simai-extra.txt
file simai-field.txt 'HYBRID_TRANSFORMER model_parallel_NPU_group: 2 colour: 3 all_gpus: 4\n1\n'
sa "unknown header field (ignored with a warning, as SimAI does), then a missing row" "simai-field.txt: colour: 3" "simai-field.txt:1: ignoring header fields SimAI does not read: 'colour'|simai-field.txt:2: truncated" simai-field.txt
file simai-gpus.txt 'HYBRID_TRANSFORMER model_parallel_NPU_group: 2 pp: 1\n1\n'
sa "all_gpus missing (the platform's GPU count is taken, with a note), then a missing row" "simai-gpus.txt" "simai-gpus.txt:1: no all_gpus in the header|simai-gpus.txt:2: truncated" simai-gpus.txt
file simai-tp.txt 'HYBRID_TRANSFORMER model_parallel_NPU_group: two all_gpus: 4\n1\n'
sa "non-numeric header value" "simai-tp.txt: model_parallel_NPU_group: two" "simai-tp.txt:1|'two' is not an integer" simai-tp.txt
file simai-nul.txt 'HYBRID_TRANSFORMER\0 all_gpus: 4\n'
sa "NUL byte" "simai-nul.txt" "simai-nul.txt:1: NUL byte" simai-nul.txt

# --- Model files (sgfabric workload --model-file) ---
M=(--gpus 16 --tp 8 --pp 1 -o out)
mf() { row "model file" "$1" "$2" "$3" workload --model-file "$4" "${M[@]}"; }
mf "missing file" "no-such.model" "no-such.model: cannot open the model file: No such file" no-such.model
mf "a directory" "a-directory" "a-directory: is a directory, not a model file" a-directory
file empty.model ''
mf "empty file" "empty.model (0 bytes)" "empty.model|'layers' missing" empty.model
file two-values.model "${model}layers 2 3\n"
mf "two values" "two-values.model: layers 2 3" "two-values.model:8|expected 'key value'" two-values.model
file unknown-key.model "${model}colour red\n"
mf "unknown key" "unknown-key.model: colour red" "unknown-key.model:8|unknown key 'colour'" unknown-key.model
file text-value.model "${model}heads many\n"
mf "non-integer value" "text-value.model: heads many" "text-value.model:8|heads: 'many'" text-value.model
file huge-value.model "${model}layers 99999999999999999999\n"
mf "value overflows" "huge-value.model: layers 99999999999999999999" "huge-value.model:8|layers" huge-value.model
file neg-value.model "${model}ffn -256\n"
mf "negative value" "neg-value.model: ffn -256" "neg-value.model:8|ffn: '-256'" neg-value.model
file no-layers.model 'name tiny\nhidden 64\nheads 4\nffn 256\nvocab 1000\nseq 128\n'
mf "layers missing" "no-layers.model" "no-layers.model|'layers' missing" no-layers.model
file topk.model "${model}experts 4\ntop-k 8\n"
mf "top-k above experts" "topk.model: experts 4, top-k 8" "topk.model|top-k=8" topk.model
file key-only.model "${model}seq\n"
mf "key without value" "key-only.model: seq" "key-only.model:8|expected 'key value'" key-only.model
file nul.model "name ti\0ny\n"
mf "NUL byte" "nul.model" "nul.model:1: NUL byte at column 8" nul.model

# --- Command-line values ---
row "command line" "unknown subcommand" "sgfabric frobnicate" "frobnicate" frobnicate
row "command line" "unknown option" "flows --bogus" "--bogus" flows "${F[@]}" --bogus
row "command line" "missing --flows" "flows without --flows" "--flows" flows --platform tiny-16.xml --out out
row "command line" "unknown fabric" "--fabric nosuch" "--fabric|nosuch" flows "${F[@]}" --fabric nosuch
row "command line" "unknown fidelity" "--fidelity nosuch" "--fidelity|nosuch" flows "${F[@]}" --fidelity nosuch
row "command line" "negative seed" "--seed -3" "--seed|-3" flows "${F[@]}" --seed -3
row "command line" "unknown model" "workload --model gpt5" "gpt5" workload --model gpt5 "${M[@]}"
row "command line" "impossible layout" "workload --gpus 16 --tp 3" "tp" workload --model llama3-8b --gpus 16 --tp 3 --pp 1 -o out
row "command line" "non-numeric GPU count" "workload --gpus many" "--gpus" workload --model llama3-8b --gpus many --tp 8 --pp 1 -o out
row "command line" "unknown GPU type" "workload --gpu Z80" "Z80" workload --model llama3-8b --gpus 16 --tp 8 --pp 1 --gpu Z80 -o out
row "command line" "platform: GPUs not whole nodes" "platform --gpus 12" "--gpus" platform --gpus 12 -o out
row "command line" "platform: rate without unit" "platform --link-rate 400" "--link-rate" platform --gpus 16 --link-rate 400 -o out
row "command line" "platform: negative latency" "platform --link-latency -1ns" "--link-latency" platform --gpus 16 --link-latency -1ns -o out
row "command line" "platform: four tiers" "platform --tiers 4" "--tiers" platform --gpus 16 --tiers 4 -o out
row "command line" "platform: radix too small" "platform --gpus 16 --radix 2" "radix-2" platform --gpus 16 --radix 2 -o out

if [ -n "$write" ]; then
  {
    cat <<'HEAD'
# Bad inputs and what the user sees

Every row is a bad input and the message `sgfabric` prints for it, as produced by
`tests/integration/bad_input_table.sh` (run by ctest, label `integration`): each case exits with
status 1 (bad input) or 2 (bad command line), never a signal; the message starts with
`sgfabric COMMAND: ` and names the file and line, the parameter or the option; no crash report
appears; and no output file or directory is left behind. The test fails when this file and the
messages differ. Inputs are made in a scratch directory from the shipped files
(`platforms/tiny-16.xml`, `tests/integration/data`, `tests/unit/workloads/bogus`); a line break
of a message is shown as `<br>`.

| # | case | input | what the user sees |
|---|---|---|---|
HEAD
    printf '%s\n' "${rows[@]}"
  } >"$write"
  echo "wrote $n rows to $write"
  exit 0
fi
doc=$SRC/docs/bad-input.md
[ -f "$doc" ] || die "$doc is missing (write it with --write)"
diff <(grep '^| [0-9]' "$doc") <(printf '%s\n' "${rows[@]}") >diff.txt ||
  die "docs/bad-input.md differs from what the cases print (regenerate with --write):
$(cat diff.txt)"
echo "PASS bad_input_table: $n cases"
