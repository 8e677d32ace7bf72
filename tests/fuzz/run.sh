#!/usr/bin/env bash
# tests/fuzz/run.sh [SECONDS] [FUZZER...]: builds the libFuzzer harnesses in build-fuzz (clang,
# ASan + UBSan) and runs each for SECONDS (default 30), one after the other, from a copy of its
# seed corpus in tests/fuzz/corpus/<parser>/. Fails on the first finding (crash, leak, timeout,
# out of memory): the input is kept as build-fuzz/findings/<parser>-crash-<sha1>. Prints the
# executions of each run. docs/fuzzing.md: long runs, adding a finding as a regression test.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-30}
shift || true
all=(units params flows_csv trace simai model platform deployment)
fuzzers=("$@")
[ ${#fuzzers[@]} -gt 0 ] || fuzzers=("${all[@]}")
command -v clang >/dev/null || { echo "run.sh: clang is required (apt-get install clang)" >&2; exit 2; }

cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSGF_FUZZ=ON -DBUILD_TESTING=OFF \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzzers >/dev/null

mkdir -p build-fuzz/findings
status=0
for f in "${fuzzers[@]}"; do
  work=build-fuzz/corpus-work/$f
  mkdir -p "$work"
  cp -n tests/fuzz/corpus/"$f"/* "$work"/ 2>/dev/null || true
  max_len=8192
  [ "$f" = platform ] && max_len=16384
  log=build-fuzz/findings/$f.log
  # -timeout: an input slower than 10 s is a finding (a hang); -rss_limit_mb: so is 2 GB.
  if ./build-fuzz/tests/fuzz/fuzz_"$f" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len="$max_len" -print_final_stats=1 -artifact_prefix=build-fuzz/findings/"$f"- \
    "$work" >"$log" 2>&1; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz_$f: ${execs:-?} executions in ${seconds}s, no finding"
  else
    status=1
    echo "fuzz_$f: FINDING (see $log):" >&2
    grep -E "ERROR|SUMMARY|Test unit written" "$log" >&2 || tail -20 "$log" >&2
  fi
done
exit $status
