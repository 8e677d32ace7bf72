#!/bin/sh
# Scale benchmarks of the whole tool (docs/performance.md, sections B1, B2, B3, B4): every case is one
# `sgfabric` process under /usr/bin/time -v, repeated --reps times; the median wall time and max
# RSS are printed with the run's events (summary.json counters.events), events per second and its
# simulated result. Every repetition's summary.json is compared (cmp) with the first one's: the
# `same` column says whether the reruns were byte-identical.
#
#   tests/bench/scale.sh [BUILD_DIR] [--reps N] [--only b1,b2,compare,b3,b4,b5,b6,b7,bare] [--work DIR]
#                        [--b1-sizes "64 512 1024"] [--b1-fidelities "flow packet"]
#                        [--b3-sizes "1280 2560 5120 10240"] [--fabrics "ideal ib roce"]
#                        [--b4-gpus N] [--simai FILE] [--timeout SECONDS] [--engine actors|events]
#
# BUILD_DIR defaults to build-rel at the top of the source tree (configured as a Release build if
# it has no CMakeCache.txt; `sgfabric` and the generated platforms/ft3-10240.xml are brought up to
# date). Inputs are generated at run time in the work directory (default BUILD_DIR/scale, kept for
# inspection: platforms, traces, one results directory per run, results.jsonl):
#
#   B1  a 64 MB ring all-reduce on group dp of a trace with layout tp=8 dp=N/8 pp=1 (one ring of
#       N/8 GPUs per rail), `--cfg=coll/algorithm:ring`, on `sgfabric platform --gpus N --radix 64
#       --rail-optimized`, each fabric and fidelity;
#   B2  one iteration of GPT-3 175B on 10,240 GPUs (tp 8, pp 16, dp 80, global batch 1,280) on
#       BUILD_DIR/platforms/ft3-10240.xml at flow fidelity, each fabric;
#   compare  the same job through `sgfabric compare` (ib and roce in parallel), once;
#   B3  the same job at 1,280 ... 10,240 GPUs (dp = gpus/128, global batch 16 x dp) on 3-tier
#       rail-optimized fat-trees (radix 64) at flow fidelity; 10,240 reuses B2's rows;
#   B4  the default job of `sgfabric compare --gpus 10240`: GPT-3 175B, tp 8, pp 8, dp 160, the
#       default global batch (32 micro-batches), on the platform compare generates (sgfabric
#       platform --gpus 10240 --radix 64 --rail-optimized --tiers 3), flow fidelity, each fabric
#       (--b4-gpus N: the same job on N GPUs, dp = N/64, e.g. a quick 1280);
#   B5  Llama-3 405B on 16,384 GPUs (tp 8, pp 16, dp 128, seq 8192, global batch 2,048, full
#       recomputation, sequence parallelism, distributed optimizer) on a 3-tier rail-optimized
#       radix-64 fat-tree, flow fidelity, each fabric (not in the default --only: minutes each);
#   B6  GPT-3 175B on 65,536 GPUs (tp 8, pp 16, dp 512, global batch 8,192) on the largest 3-tier
#       radix-64 fat-tree, flow fidelity, each fabric (not in the default --only);
#   B7  SimAI's published 9,216-GPU analytical MoE example (example/workload_analytical.txt of
#       the SimAI repository: TP 2, EP 16, PP 12, 24 micro-batches), imported with simai:FILE
#       (--simai FILE names it; not shipped here), on a 3-tier rail-optimized radix-64
#       fat-tree, flow fidelity, each fabric (not in the default --only);
#   bare  the bare packet engine (tests/bench/bench_fabric, no SimGrid): a permutation on
#       rail-1024 at packet fidelity, 1 MB and 16 MB flows, events and packet hops per second
#       (not in the default --only; tests/bench/run.sh runs all of bench_fabric's cases).
#
# Each case prints its median wall time, CPU time (user + system: the goals are per core) and
# max RSS.
#
# --engine events runs every `sgfabric run` with --cfg=replay/engine:events (ranks stepped inside
# the fabric's events, no actor per rank; docs/performance.md, B4); its case names end in -events.
#
# --timeout S stops a run after S seconds (timeout(1)); the case is reported as timed out, its
# remaining repetitions are skipped and the other cases go on.
set -eu

src=$(cd "$(dirname "$0")/../.." && pwd)
build=$src/build-rel
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  build=$(cd "$1" 2>/dev/null && pwd || echo "$1")
  shift
fi
reps=3
only=b1,b2,compare,b3,b4
work=
b1_sizes="64 512 1024"
b1_fids="flow packet"
b3_sizes="1280 2560 5120 10240"
fabrics="ideal ib roce"
limit=0
b4_gpus=10240
simai=
engine=actors
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --b1-sizes) b1_sizes=$2; shift 2 ;;
    --b1-fidelities) b1_fids=$2; shift 2 ;;
    --b3-sizes) b3_sizes=$2; shift 2 ;;
    --fabrics) fabrics=$2; shift 2 ;;
    --timeout) limit=$2; shift 2 ;;
    --b4-gpus) b4_gpus=$2; shift 2 ;;
    --simai) simai=$2; shift 2 ;;
    --engine) engine=$2; shift 2 ;;
    -h|--help) sed -n '2,50p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scale.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
case $engine in
  actors) engine_args= ; engine_tag= ;;
  events) engine_args=--cfg=replay/engine:events; engine_tag=-events ;;
  *) echo "scale.sh: --engine is actors or events, not $engine" >&2; exit 2 ;;
esac
want() { case ",$only," in *",$1,"*) return 0 ;; esac; return 1; }

[ -x /usr/bin/time ] || { echo "scale.sh: /usr/bin/time (Debian package 'time') is needed" >&2; exit 1; }
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
[ "$type" = Release ] || echo "scale.sh: warning: $build is a '$type' build, not Release" >&2
jobs=$(nproc 2>/dev/null || echo 2)
cmake --build "$build" -j"$jobs" --target sgfabric sgf_platform_ft3_10240 >"$build/scale-build.log" 2>&1 ||
  { cat "$build/scale-build.log" >&2; exit 1; }

sgf=$build/sgfabric
ft3=$build/platforms/ft3-10240.xml
work=${work:-$build/scale}
mkdir -p "$work/in" "$work/runs"
res=$work/results.jsonl
: >"$res"

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "machine: $(nproc) cores, ${cpu:-unknown CPU}, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "build: $build ($type); revision: $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$src" diff --quiet HEAD -- plugins workloads tools 2>/dev/null || echo ' (modified)'); reps: $reps (medians)"

# JSON and medians: one helper, called as `py record ...` after each case and `py table ...` at the end.
py() {
  python3 - "$@" <<'EOF'
import json, math, os, statistics, subprocess, sys

def wall_of(path):                      # /usr/bin/time -v: "Elapsed (wall clock) time (h:mm:ss or m:ss): 0:43.74"
    for line in open(path):
        line = line.strip()
        if line.startswith("Elapsed (wall clock)"):
            v = line.rsplit(": ", 1)[1].split(":")
            s = 0.0
            for part in v:
                s = s * 60 + float(part)
            return s
        if line.startswith("Exit status") and line.split(":")[1].strip() != "0":
            pass
    raise SystemExit("no wall time in " + path)

def cpu_of(path):                       # user + system seconds: the goals of docs/performance.md are CPU time
    t = 0.0
    for line in open(path):
        line = line.strip()
        if line.startswith("User time (seconds)") or line.startswith("System time (seconds)"):
            t += float(line.rsplit(":", 1)[1])
    return t

def rss_of(path):
    for line in open(path):
        if "Maximum resident set size" in line:
            return int(line.rsplit(":", 1)[1]) / 1024.0   # kB -> MB (MiB)
    raise SystemExit("no max RSS in " + path)

def transfers(s):
    """Transfers the fabric carried, derived from summary.collectives (the tool prints no count):
    a ring of n members is n transfers per instance when pipelined (coll/ring auto at flow
    fidelity), n * 2(n-1) step by step (packet fidelity); a tree or other algorithm is not derived."""
    w = s.get("workload", {})
    size = {g: w.get(g, 1) for g in ("tp", "dp", "pp", "ep", "cp")}
    mode = s.get("parameters", {}).get("coll/ring", "auto")
    pipelined = mode == "pipelined" or (mode == "auto" and s["fidelity"] == "flow")
    t = 0
    for c in s.get("collectives", []):
        if c["op"] == "sendrecv":
            t += c["count"]
            continue
        n = size.get(c["group"])
        if n is None or c.get("algorithm") != "ring":
            return None
        if n <= 1:
            continue
        steps = 1 if pipelined else (2 * (n - 1) if c["op"] == "allreduce" else n - 1)
        t += c["count"] * n * steps
    return t

cmd = sys.argv[1]
if cmd == "record":
    res, name, kind, reps = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    d = sys.argv[6]
    walls = [wall_of(os.path.join(d, "time.%d" % i)) for i in range(1, reps + 1)]
    rsss = [rss_of(os.path.join(d, "time.%d" % i)) for i in range(1, reps + 1)]
    cpus = [cpu_of(os.path.join(d, "time.%d" % i)) for i in range(1, reps + 1)]
    first = os.path.join(d, "out.1", "summary.json")
    same = all(subprocess.call(["cmp", "-s", first, os.path.join(d, "out.%d" % i, "summary.json")]) == 0
               for i in range(2, reps + 1))
    s = json.load(open(first))
    row = {"name": name, "kind": kind, "reps": reps, "walls": walls, "rsss": rsss,
           "wall": statistics.median(walls), "rss": statistics.median(rsss),
           "cpus": cpus, "cpu": statistics.median(cpus), "same": same if reps > 1 else None,
           "fabric": s["fabric"], "fidelity": s["fidelity"], "gpus": s["platform"]["gpus"],
           "events": s["counters"]["events"], "iteration_s": s.get("iteration_time_s"),
           "mfu": s.get("mfu"), "transfers": transfers(s), "rate_updates": s["counters"].get("rate_updates"),
           "packet_hops": s["counters"].get("packet_hops"), "drops": s["counters"].get("drops"),
           "input": "simai" if "-simai-" in name else "trace"}
    dp = [c for c in s.get("collectives", []) if c["op"] == "allreduce" and c["group"] == "dp"]
    if dp:
        c = dp[0]
        row["coll_time_s"] = c["time_s"] / c["count"]   # time_s sums the instances (one per rail)
        row["busbw_GBps"] = c["busbw_GBps"]
        row["coll_count"] = c["count"]
    for k in ("credit_stall_s", "pfc_pause_frames", "ecn_marks", "cnps"):
        if k in s["counters"]:
            row[k] = s["counters"][k]
    with open(res, "a") as f:
        f.write(json.dumps(row) + "\n")
    ev = row["events"] / row["wall"] if row["wall"] > 0 else float("nan")
    extra = ""
    if "coll_time_s" in row:
        extra = "  allreduce %.4f ms  busbw %.2f GB/s" % (row["coll_time_s"] * 1e3, row["busbw_GBps"])
    if row["iteration_s"] is not None and kind != "b1":
        mfu = "n/a" if row["mfu"] is None else "%.2f %%" % (100 * row["mfu"])  # imported traces: no FLOPs
        extra += "  iteration %.4f s  MFU %s" % (row["iteration_s"], mfu)
    print("%-28s wall %8.3f s (%s)  CPU %8.2f s  RSS %7.1f MB  events %11d  %6.2f M ev/s  same %s%s" % (
        name, row["wall"], " ".join("%.2f" % w for w in walls), row["cpu"], row["rss"], row["events"], ev / 1e6,
        row["same"], extra), flush=True)
elif cmd == "table":
    rows = [json.loads(l) for l in open(sys.argv[2])]
    b1 = [r for r in rows if r["kind"] == "b1"]
    if b1:
        print("\nB1: 64 MB ring all-reduce on dp, one ring per rail (medians of %d)" % b1[0]["reps"])
        print("| GPUs | fabric | fidelity | input | wall (s) | max RSS (MB) | events | events/s | transfers | all-reduce time (ms) | busbw (GB/s) | reruns identical |")
        print("|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in b1:
            print("| %d | %s | %s | %s | %.3f | %.1f | %d | %.2f M | %s | %.4f | %.2f | %s |" % (
                r["gpus"], r["fabric"], r["fidelity"], r.get("input", "trace"), r["wall"], r["rss"], r["events"],
                r["events"] / r["wall"] / 1e6 if r["wall"] else float("nan"), r["transfers"],
                r["coll_time_s"] * 1e3, r["busbw_GBps"], r["same"]))
    g = sorted([r for r in rows if r["kind"] == "gpt3"], key=lambda r: (r["fabric"], r["gpus"]))
    if g:
        print("\nB2/B3: GPT-3 175B, one iteration, flow fidelity (medians of %d)" % g[0]["reps"])
        print("| GPUs | fabric | wall (s) | max RSS (MB) | events | events/s | transfers (derived) | iteration (s) | MFU | reruns identical |")
        print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in g:
            print("| %d | %s | %.2f | %.0f | %d | %.2f M | %s | %.4f | %.2f %% | %s |" % (
                r["gpus"], r["fabric"], r["wall"], r["rss"], r["events"], r["events"] / r["wall"] / 1e6,
                r["transfers"], r["iteration_s"], 100 * r["mfu"], r["same"]))
        print("\nGrowth exponents between consecutive sizes, log(y2/y1)/log(x2/x1); n log n in transfers T"
              " is 1 + log(log T2/log T1)/log(T2/T1)")
        print("| fabric | GPUs | transfers vs GPUs | events vs transfers | wall vs transfers | wall vs GPUs | RSS vs GPUs | n log n bound |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for fab in sorted({r["fabric"] for r in g}):
            fr = [r for r in g if r["fabric"] == fab]
            for a, b in zip(fr, fr[1:]):
                e = lambda y1, y2, x1, x2: math.log(y2 / y1) / math.log(x2 / x1)
                T1, T2 = a["transfers"], b["transfers"]
                nlogn = 1 + math.log(math.log(T2) / math.log(T1)) / math.log(T2 / T1)
                print("| %s | %d → %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
                    fab, a["gpus"], b["gpus"], e(T1, T2, a["gpus"], b["gpus"]),
                    e(a["events"], b["events"], T1, T2), e(a["wall"], b["wall"], T1, T2),
                    e(a["wall"], b["wall"], a["gpus"], b["gpus"]), e(a["rss"], b["rss"], a["gpus"], b["gpus"]), nlogn))
    b4 = [r for r in rows if r["kind"] == "b4"]
    if b4:
        print("\nB4: GPT-3 175B, tp 8, pp 8, 32 micro-batches (compare's default job), flow fidelity (medians of %d)" % b4[0]["reps"])
        print("| GPUs | fabric | wall (s) | CPU (s) | max RSS (MB) | events | events/s | iteration (s) | MFU | reruns identical |")
        print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in b4:
            print("| %d | %s | %.2f | %.2f | %.0f | %d | %.2f M | %.4f | %.2f %% | %s |" % (
                r["gpus"], r["fabric"], r["wall"], r.get("cpu", float("nan")), r["rss"], r["events"],
                r["events"] / r["wall"] / 1e6, r["iteration_s"], 100 * r["mfu"], r["same"]))
    # The full-scale rows of the performance issue's goal table: CPU seconds and max RSS per fabric.
    goals = {"b5": ("Llama-3 405B, 16,384 GPUs, tp 8, pp 16, seq 8192, global batch 2,048", 60, 4096),
             "b6": ("GPT-3 175B, 65,536 GPUs, tp 8, pp 16, dp 512, global batch 8,192", None, 8192),
             "b7": ("SimAI's 9,216-GPU analytical MoE example (tp 2, ep 16, pp 12, 24 micro-batches)", 120, None)}
    for kind, (what, cpu_goal, rss_goal) in goals.items():
        rs = [r for r in rows if r["kind"] == kind]
        if not rs:
            continue
        print("\n%s: %s, flow fidelity (medians of %d)" % (kind.upper(), what, rs[0]["reps"]))
        print("| fabric | CPU (s) | goal | wall (s) | max RSS (MB) | goal | events | iteration (s) | MFU | reruns identical |")
        print("|---|---:|---|---:|---:|---|---:|---:|---:|---|")
        for r in rs:
            cg = "finishes" if cpu_goal is None else ("met" if r["cpu"] <= cpu_goal else "not met") + " (<= %d s)" % cpu_goal
            mg = "-" if rss_goal is None else ("met" if r["rss"] <= rss_goal else "not met") + " (<= %d GB)" % (rss_goal // 1024)
            print("| %s | %.1f | %s | %.1f | %.0f | %s | %d | %.4f | %s | %s |" % (
                r["fabric"], r["cpu"], cg, r["wall"], r["rss"], mg, r["events"], r["iteration_s"],
                "n/a" if r["mfu"] is None else "%.2f %%" % (100 * r["mfu"]), r["same"]))
    for r in rows:
        if r["kind"] == "timeout":
            print("%s: not finished within %d s" % (r["name"], r["limit"]))
    c = [r for r in rows if r["kind"] == "compare"]
    for r in c:
        print("\ncompare (ib, roce in parallel): wall %.2f s, max RSS of one process %.0f MB" % (r["wall"], r["rss"]))
EOF
}

# run_case NAME KIND REPS COMMAND... : COMMAND must take "--out DIR" last (added here).
run_case() {
  name=$1 kind=$2 n=$3
  shift 3
  d=$work/runs/$name
  rm -rf "$d"
  mkdir -p "$d"
  i=1
  while [ "$i" -le "$n" ]; do
    rc=0
    if [ "$limit" -gt 0 ]; then
      /usr/bin/time -v -o "$d/time.$i" timeout "$limit" "$@" --out "$d/out.$i" >"$d/log.$i" 2>&1 || rc=$?
    else
      /usr/bin/time -v -o "$d/time.$i" "$@" --out "$d/out.$i" >"$d/log.$i" 2>&1 || rc=$?
    fi
    if [ "$rc" -eq 124 ]; then
      printf '%-28s TIMEOUT: not finished after %s s (rep %d), max RSS %s kB\n' "$name" "$limit" "$i" \
        "$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$d/time.$i")"
      echo "{\"name\": \"$name\", \"kind\": \"timeout\", \"limit\": $limit}" >>"$res"
      return 0
    fi
    if [ "$rc" -ne 0 ]; then
      echo "scale.sh: $name failed (rep $i, status $rc): $* --out $d/out.$i" >&2
      tail -n 20 "$d/log.$i" >&2
      return 1
    fi
    i=$((i + 1))
  done
  py record "$res" "$name" "$kind" "$n" "$d"
}

# B1 trace: a single 64 MB all-reduce on dp; tp = 8 puts the dp group of local GPU i on rail i.
# B1's all-reduce in SimAI's workload format (docs/workload-format.md, "SimAI/AICB import"):
# model_parallel_NPU_group 8 makes the weight-gradient all-reduce's data-parallel groups the rails.
b1_simai() {
  printf 'HYBRID_TRANSFORMER model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: %d checkpoints: 0 checkpoint_initiates: 0 pp_comm: 0\n1\n' "$1"
  printf 'grad_allreduce\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLREDUCE\t67108864\t100\n'
}

b1_trace() {
  g=$1 dp=$(($1 / 8))
  cat <<EOF
sgf-workload 1
# B1 (tests/bench/scale.sh): one 64 MB all-reduce on the dp group and nothing else; tp = 8 makes
# the 8 dp groups the 8 rails, each one ring of $dp GPUs across nodes.
model name=allreduce-only layers=1 hidden=64 heads=8 kv_heads=8 ffn=64 vocab=8 seq=1 experts=0 topk=0 gated=1
layout gpus=$g tp=8 pp=1 vpp=1 dp=$dp ep=1 cp=1
gpu H100
batch micro=1 global=$dp microbatches=1 recompute=0 zero1=0 seq_parallel=0 grad_bytes=4
stages layers=1 vfirst=0 vlayers=1
program 0 ops=1
0 coll ph=bwd mb=0 coll=allreduce group=dp bytes=67108864
end
EOF
}

if want b1; then
  echo "== B1: 64 MB ring all-reduce, one ring per rail"
  for g in $b1_sizes; do
    "$sgf" platform --gpus "$g" --radix 64 --rail-optimized -o "$work/in/rail-$g.xml" >/dev/null
    b1_trace "$g" >"$work/in/ar-$g.trace"
    b1_simai "$g" >"$work/in/ar-$g.simai.txt"
    for fid in $b1_fids; do
      for fab in $fabrics; do
        run_case "b1-$g-$fab-$fid$engine_tag" b1 "$reps" "$sgf" run $engine_args --platform "$work/in/rail-$g.xml" \
          --workload "$work/in/ar-$g.trace" --fabric "$fab" --fidelity "$fid" --seed 1 \
          --cfg=coll/algorithm:ring
        # the same all-reduce written as SimAI's workload text, through the simai: importer
        run_case "b1-simai-$g-$fab-$fid$engine_tag" b1 "$reps" "$sgf" run $engine_args --platform "$work/in/rail-$g.xml" \
          --workload "simai:$work/in/ar-$g.simai.txt" --fabric "$fab" --fidelity "$fid" --seed 1 \
          --cfg=coll/algorithm:ring
      done
    done
  done
fi

gpt3_inputs() {
  g=$1 dp=$(($1 / 128))
  if [ "$g" -eq 10240 ]; then
    plat=$ft3
  else
    plat=$work/in/ft3-$g.xml
    "$sgf" platform --gpus "$g" --gpus-per-node 8 --tiers 3 --radix 64 --rail-optimized -o "$plat" >/dev/null
  fi
  # --ignore-memory (and on the runs): the benchmark jobs keep their shape, recomputation or not
  # (GPT-3 175B without it does not fit in 80 GB: docs/compute-model.md, "Memory per GPU").
  "$sgf" workload --model gpt3-175b --gpus "$g" --tp 8 --pp 16 --global-batch $((16 * dp)) --ignore-memory \
    -o "$work/in/gpt3-$g.trace" >/dev/null
}

if want b2; then
  echo "== B2: GPT-3 175B, 10,240 GPUs, flow fidelity"
  gpt3_inputs 10240
  for fab in $fabrics; do
    run_case "gpt3-10240-$fab$engine_tag" gpt3 "$reps" "$sgf" run $engine_args --ignore-memory --platform "$plat" \
      --workload "$work/in/gpt3-10240.trace" --fabric "$fab" --fidelity flow --seed 1
  done
fi

if want compare; then
  echo "== compare: GPT-3 175B, 10,240 GPUs, ib and roce in parallel"
  d=$work/runs/compare
  rm -rf "$d"
  mkdir -p "$d"
  to= rc=0
  [ "$limit" -gt 0 ] && to="timeout $limit"
  /usr/bin/time -v -o "$d/time.1" $to "$sgf" compare --gpus 10240 --tp 8 --pp 16 --global-batch 1280 \
    --platform "$ft3" --out "$d/out" >"$d/log.1" 2>&1 || rc=$?
  if [ "$rc" -eq 124 ]; then
    echo "compare                      TIMEOUT: not finished after $limit s"
    echo "{\"name\": \"compare\", \"kind\": \"timeout\", \"limit\": $limit}" >>"$res"
  elif [ "$rc" -ne 0 ]; then
    echo "scale.sh: compare failed (status $rc)" >&2; tail -n 20 "$d/log.1" >&2; exit 1
  else
  python3 - "$d" "$res" <<'EOF'
import json, sys
d, res = sys.argv[1], sys.argv[2]
t = open(d + "/time.1").read().splitlines()
w = [l.strip().rsplit(": ", 1)[1] for l in t if "Elapsed (wall clock)" in l][0].split(":")
wall = 0.0
for p in w:
    wall = wall * 60 + float(p)
rss = [int(l.rsplit(":", 1)[1]) for l in t if "Maximum resident set size" in l][0] / 1024.0
open(res, "a").write(json.dumps({"name": "compare", "kind": "compare", "wall": wall, "rss": rss}) + "\n")
print("compare                      wall %8.2f s  max RSS of one process %.0f MB" % (wall, rss))
EOF
  fi
  # The compare's own runs must equal the stand-alone runs of B2 (same platform, workload and seed).
  for fab in ib roce; do
    if [ -f "$work/runs/gpt3-10240-$fab/out.1/summary.json" ] && [ -f "$d/out/$fab/summary.json" ]; then
      if cmp -s "$d/out/$fab/summary.json" "$work/runs/gpt3-10240-$fab/out.1/summary.json"; then
        echo "compare $fab summary.json: identical to B2's"
      else
        echo "compare $fab summary.json: differs from B2's (sgfabric compare writes its own workload file)"
      fi
    fi
  done
fi

if want b3; then
  echo "== B3: GPT-3 175B at 1,280 ... 10,240 GPUs, flow fidelity"
  for g in $b3_sizes; do
    made=
    for fab in $fabrics; do
      if grep -q "\"name\": \"gpt3-$g-$fab\"" "$res"; then
        continue
      fi
      [ -n "$made" ] || { gpt3_inputs "$g"; made=1; }
      run_case "gpt3-$g-$fab$engine_tag" gpt3 "$reps" "$sgf" run $engine_args --ignore-memory --platform "$plat" \
        --workload "$work/in/gpt3-$g.trace" --fabric "$fab" --fidelity flow --seed 1
    done
  done
fi

if want b4; then
  g=$b4_gpus
  echo "== B4: GPT-3 175B, $g GPUs, tp 8, pp 8, dp $((g / 64)), 32 micro-batches (compare's default job before it added selective recomputation and SP), flow fidelity"
  tiers=2
  [ "$g" -gt 2048 ] && tiers=3
  "$sgf" platform --gpus "$g" --radix 64 --rail-optimized --tiers $tiers -o "$work/in/compare-$g.xml" >/dev/null
  "$sgf" workload --model gpt3-175b --gpus "$g" --tp 8 --pp 8 --ignore-memory -o "$work/in/gpt3-$g-pp8.trace" >/dev/null
  for fab in $fabrics; do
    run_case "b4-gpt3-$g-pp8-$fab$engine_tag" b4 "$reps" "$sgf" run $engine_args --ignore-memory --platform "$work/in/compare-$g.xml" \
      --workload "$work/in/gpt3-$g-pp8.trace" --fabric "$fab" --fidelity flow --seed 1 --no-progress
  done
fi

if want b5; then
  echo "== B5: Llama-3 405B, 16,384 GPUs, tp 8, pp 16, dp 128, seq 8192, global batch 2,048 (16 micro-batches), flow fidelity"
  "$sgf" platform --gpus 16384 --radix 64 --rail-optimized --tiers 3 -o "$work/in/ft3-16384.xml" >/dev/null
  # Full recomputation, sequence parallelism and a distributed optimizer, as Llama 3's 405B run
  # needed to fit 80 GB (the generator refuses the job without them).
  "$sgf" workload --model llama3-405b --gpus 16384 --tp 8 --pp 16 --seq 8192 --global-batch 2048 \
    --recompute full --sequence-parallel --zero1 -o "$work/in/llama3-405b-16384.trace" >/dev/null
  for fab in $fabrics; do
    run_case "b5-llama3-405b-16384-$fab$engine_tag" b5 "$reps" "$sgf" run $engine_args --platform "$work/in/ft3-16384.xml" \
      --workload "$work/in/llama3-405b-16384.trace" --fabric "$fab" --fidelity flow --seed 1 --no-progress
  done
fi

if want b6; then
  echo "== B6: GPT-3 175B, 65,536 GPUs (3 tiers of radix-64 switches, the largest they build), tp 8, pp 16, dp 512, global batch 8,192 (16 micro-batches), flow fidelity"
  "$sgf" platform --gpus 65536 --radix 64 --rail-optimized --tiers 3 -o "$work/in/ft3-65536.xml" >/dev/null
  "$sgf" workload --model gpt3-175b --gpus 65536 --tp 8 --pp 16 --global-batch 8192 --recompute selective \
    --sequence-parallel -o "$work/in/gpt3-65536.trace" >/dev/null
  for fab in $fabrics; do
    run_case "b6-gpt3-65536-$fab$engine_tag" b6 "$reps" "$sgf" run $engine_args --platform "$work/in/ft3-65536.xml" \
      --workload "$work/in/gpt3-65536.trace" --fabric "$fab" --fidelity flow --seed 1 --no-progress
  done
fi

if want b7; then
  echo "== B7: SimAI's 9,216-GPU analytical MoE example (tp 2, ep 16, pp 12, 24 micro-batches), flow fidelity"
  if [ -z "$simai" ] || [ ! -f "$simai" ]; then
    echo "scale.sh: B7 needs --simai FILE, SimAI's example/workload_analytical.txt (github.com/aliyun/SimAI)" >&2
    exit 2
  fi
  "$sgf" platform --gpus 9216 --radix 64 --rail-optimized --tiers 3 -o "$work/in/ft3-9216.xml" >/dev/null
  for fab in $fabrics; do
    run_case "b7-simai-9216-$fab$engine_tag" b7 "$reps" "$sgf" run $engine_args --platform "$work/in/ft3-9216.xml" \
      --workload "simai:$simai" --fabric "$fab" --fidelity flow --seed 1 --no-progress
  done
fi

if want bare; then
  echo "== bare packet engine: permutation on rail-1024, packet fidelity (bench_fabric, medians of $reps)"
  cmake --build "$build" -j"$jobs" --target bench_fabric >>"$build/scale-build.log" 2>&1 ||
    { cat "$build/scale-build.log" >&2; exit 1; }
  "$build/tests/bench/bench_fabric" --platforms "$src/platforms" --sgfabric "$sgf" --no-cli --reps "$reps" \
    --only rail-1024 | grep -E '^(case|perm-.*packet)'
fi

py table "$res"
