#!/bin/sh
# Flow fidelity when models set caps (docs/performance.md, "Flow fidelity with model caps"): RoCE
# with DCQCN off (FIFO shares, PFC pause spreading), the fluid DCQCN model (`paper`) and the
# default (`nic`) on the flow-vs-packet scenarios of analysis/validation (flow files written by
# analysis/validation/gen_flows.py, seed 1). For every case it prints the user CPU time (median
# of --reps runs of `sgfabric flows`, /usr/bin/time) and, with --callgrind, the instructions
# executed (valgrind --tool=callgrind, one run: stable on a shared machine). With --base BIN the
# same cases run with another sgfabric too (e.g. one built from an older revision), and the
# `same` column says whether flows.csv and summary.json are byte-identical between the two and
# `d_mean` how far apart their mean FCTs are; --base-cfg area/name:value (repeatable) passes a
# parameter to the base runs only, e.g. the same binary with --base-cfg
# fabric/flow-drain-tolerance:0 (exact drain dates) against the default.
# With --packet the packet-fidelity run of each case is timed as well (flow/packet speed-up).
#
#   tests/bench/flow_caps.sh [BUILD_DIR] [--base BIN] [--base-cfg CFG]... [--reps N]
#                            [--callgrind] [--packet] [--only SUBSTRING] [--work DIR]
#
# BUILD_DIR defaults to build-bench (configured as a Release build if needed; sgfabric is
# brought up to date). Inputs and results go to the work directory (default BUILD_DIR/flow-caps).
set -eu

src=$(cd "$(dirname "$0")/../.." && pwd)
build=$src/build-bench
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  build=$(cd "$1" 2>/dev/null && pwd || echo "$1")
  shift
fi
base=
base_cfg=
reps=3
callgrind=0
packet=0
only=
work=
while [ $# -gt 0 ]; do
  case $1 in
    --base) base=$2; shift 2 ;;
    --base-cfg) base_cfg="$base_cfg --cfg=$2"; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --callgrind) callgrind=1; shift ;;
    --packet) packet=1; shift ;;
    --only) only=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "flow_caps.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x /usr/bin/time ] || { echo "flow_caps.sh: /usr/bin/time (Debian package 'time') is needed" >&2; exit 1; }
if [ "$callgrind" = 1 ] && ! command -v valgrind >/dev/null; then
  echo "flow_caps.sh: --callgrind needs valgrind" >&2
  exit 1
fi
if [ -n "$base" ] && [ ! -x "$base" ]; then
  echo "flow_caps.sh: --base $base is not an executable" >&2
  exit 1
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" -j2 --target sgfabric >"$build/flow-caps-build.log" 2>&1 ||
  { cat "$build/flow-caps-build.log" >&2; exit 1; }
sgf=$build/sgfabric
work=${work:-$build/flow-caps}
mkdir -p "$work/in" "$work/runs"

# case name, platform, gen_flows pattern (perm-var: below), GPUs, bytes per flow, fabric options
cases='permvar-1024-off rail-1024.xml perm-var 1024 0 --fabric roce --cfg=roce/dcqcn:off
permvar-1024-off-pfcoff rail-1024.xml perm-var 1024 0 --fabric roce --cfg=roce/dcqcn:off --cfg=roce/pfc:off
permvar-1024-paper rail-1024.xml perm-var 1024 0 --fabric roce --cfg=roce/dcqcn:paper
a2a-64-off ft2-128.xml a2a 64 256e3 --fabric roce --cfg=roce/dcqcn:off
a2a-128-off ft2-128.xml a2a 128 256e3 --fabric roce --cfg=roce/dcqcn:off
perm-1024-off rail-1024.xml perm-x 1024 8e6 --fabric roce --cfg=roce/dcqcn:off
ring-1024-off rail-1024.xml ring 1024 16e6 --fabric roce --cfg=roce/dcqcn:off
incast-1024-off rail-1024.xml incast 1024 4e6 --fabric roce --cfg=roce/dcqcn:off
perm-1024-off-pfcoff rail-1024.xml perm-x 1024 8e6 --fabric roce --cfg=roce/dcqcn:off --cfg=roce/pfc:off
perm-1024-paper rail-1024.xml perm-x 1024 8e6 --fabric roce --cfg=roce/dcqcn:paper
a2a-64-paper ft2-128.xml a2a 64 256e3 --fabric roce --cfg=roce/dcqcn:paper
perm-1024-nic rail-1024.xml perm-x 1024 8e6 --fabric roce
a2a-128-nic ft2-128.xml a2a 128 256e3 --fabric roce
a2a-128-paper ft2-128.xml a2a 128 256e3 --fabric roce --cfg=roce/dcqcn:paper
perm-1024-off-16qp rail-1024.xml perm-x 1024 8e6 --fabric roce --cfg=roce/dcqcn:off --cfg=roce/qps-per-conn:16
a2a-128-ib ft2-128.xml a2a 128 256e3 --fabric ib'

# user_s BIN OUT FIDELITY ARGS...: median user CPU seconds of $reps runs
user_s() {
  bin=$1 out=$2 fid=$3
  shift 3
  i=0
  : >"$out.times"
  while [ $i -lt "$reps" ]; do
    /usr/bin/time -f %U -o "$out.t" "$bin" flows --fidelity "$fid" --seed 1 --out "$out" "$@" >/dev/null 2>"$out.err" ||
      { echo "flow_caps.sh: $bin failed, see $out.err" >&2; exit 1; }
    cat "$out.t" >>"$out.times"
    i=$((i + 1))
  done
  sort -n "$out.times" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}

# instr BIN OUT ARGS...: instructions executed (callgrind), in millions
instr() {
  bin=$1 out=$2
  shift 2
  valgrind --tool=callgrind --callgrind-out-file="$out.cg" "$bin" flows --fidelity flow --seed 1 --out "$out.cgrun" "$@" \
    >/dev/null 2>"$out.cgerr" || { echo "flow_caps.sh: callgrind of $bin failed, see $out.cgerr" >&2; exit 1; }
  rm -rf "$out.cg" "$out.cgrun"
  sed -n 's/.*I *refs: *//p' "$out.cgerr" | tr -d , | awk '{printf "%.1f", $1 / 1e6}'
}

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "machine: $(nproc) cores, ${cpu:-unknown CPU}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "sgfabric: $sgf ($(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown))${base:+; base: $base$base_cfg}; reps: $reps (medians)"
printf '%-22s %7s' case flows
[ -n "$base" ] && printf ' %12s' base_user_s
printf ' %10s' user_s
[ -n "$base" ] && printf ' %8s' speedup
if [ "$callgrind" = 1 ]; then
  [ -n "$base" ] && printf ' %12s' base_Minstr
  printf ' %10s' Minstr
  [ -n "$base" ] && printf ' %7s' ratio
fi
[ -n "$base" ] && printf ' %5s %8s' same d_mean
[ "$packet" = 1 ] && printf ' %14s %12s' packet_user_s packet/flow
echo
echo "$cases" | while read -r name plat pattern gpus bytes opts; do
  case $name in *"$only"*) ;; *) continue ;; esac
  flows=$work/in/$pattern-$gpus.csv
  if [ ! -f "$flows" ] && [ "$pattern" = perm-var ]; then
    # a permutation across nodes (8 GPUs each) with sizes of 1-16 MB and starts in 0-200 us
    # (Python's random.Random(1)): flows drain one by one, each event touches one component
    python3 - "$gpus" "$flows" <<'EOF'
import random, sys
n, out = int(sys.argv[1]), sys.argv[2]
rng = random.Random(1)
while True:
    p = list(range(n))
    rng.shuffle(p)
    if all(p[i] // 8 != i // 8 for i in range(n)):
        break
with open(out, "w") as f:
    f.write("src,dst,bytes,start_us\n")
    for i in range(n):
        f.write("%d,%d,%d,%d\n" % (i, p[i], rng.randint(1, 16) * 1000000, rng.randint(0, 200)))
EOF
  fi
  [ -f "$flows" ] || python3 "$src/analysis/validation/gen_flows.py" "$pattern" "$gpus" 8 "$bytes" 1 "$flows"
  # shellcheck disable=SC2086 # opts are separate words
  set -- --platform "$src/platforms/$plat" --flows "$flows" $opts
  printf '%-22s %7s' "$name" $(($(wc -l <"$flows") - 1))
  if [ -n "$base" ]; then
    # shellcheck disable=SC2086 # base_cfg holds separate words
    b=$(user_s "$base" "$work/runs/$name-base" flow "$@" $base_cfg)
    printf ' %12s' "$b"
  fi
  u=$(user_s "$sgf" "$work/runs/$name" flow "$@")
  printf ' %10s' "$u"
  [ -n "$base" ] && printf ' %8s' "$(awk -v a="$b" -v b="$u" 'BEGIN {printf (b > 0 ? "%.1fx" : "n/a"), a / b}')"
  if [ "$callgrind" = 1 ]; then
    if [ -n "$base" ]; then
      # shellcheck disable=SC2086
      bi=$(instr "$base" "$work/runs/$name-base" "$@" $base_cfg)
      printf ' %12s' "$bi"
    fi
    ni=$(instr "$sgf" "$work/runs/$name" "$@")
    printf ' %10s' "$ni"
    [ -n "$base" ] && printf ' %7s' "$(awk -v a="$bi" -v b="$ni" 'BEGIN {printf "%.2fx", a / b}')"
  fi
  if [ -n "$base" ]; then
    if cmp -s "$work/runs/$name-base/flows.csv" "$work/runs/$name/flows.csv" &&
      cmp -s "$work/runs/$name-base/summary.json" "$work/runs/$name/summary.json"; then
      printf ' %5s' yes
    else
      printf ' %5s' no
    fi
    printf ' %8s' "$(python3 -c 'import json, sys
a, b = (json.load(open(f))["mean_fct_us"] for f in sys.argv[1:])
print("%+.3f%%" % (100 * (b - a) / a))' "$work/runs/$name-base/summary.json" "$work/runs/$name/summary.json")"
  fi
  if [ "$packet" = 1 ]; then
    p=$(user_s "$sgf" "$work/runs/$name-packet" packet "$@")
    printf ' %14s %12s' "$p" "$(awk -v a="$p" -v b="$u" 'BEGIN {printf (b > 0 ? "%.1fx" : "n/a"), a / b}')"
  fi
  echo
done
