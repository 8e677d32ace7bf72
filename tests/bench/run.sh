#!/bin/sh
# Runs the sgfabric benchmarks and prints their table (docs/performance.md).
#
#   tests/bench/run.sh [BUILD_DIR] [bench_fabric options...]
#
# BUILD_DIR defaults to build-bench at the top of the source tree; it is configured as a Release
# build when it has no CMakeCache.txt yet, and the `bench` target (bench_fabric, sgfabric and the
# generated 10,240-GPU platform) is brought up to date. Options after BUILD_DIR go to
# bench_fabric: --reps N (default 3), --only SUBSTRING, --no-cli, --seed N.
set -eu

src=$(cd "$(dirname "$0")/../.." && pwd)
build=$src/build-bench
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  build=$1
  shift
fi

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
if [ "$type" != "Release" ]; then
  echo "run.sh: warning: $build is a '$type' build, not Release: figures are not comparable" >&2
fi
jobs=$(nproc 2>/dev/null || echo 2)
log=$build/bench-build.log
nocli=
# Everything the bench target needs; when the CLI does not build (another part of the tree being
# written), the engine benchmarks still run and the cli- rows are skipped.
if ! cmake --build "$build" -j"$jobs" --target bench >"$log" 2>&1; then
  if cmake --build "$build" -j"$jobs" --target bench_fabric sgf_platform_ft3_10240 >>"$log" 2>&1; then
    echo "run.sh: sgfabric did not build (see $log): CLI rows skipped" >&2
    nocli=--no-cli
  else
    cat "$log" >&2
    exit 1
  fi
fi

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "machine: $(nproc) cores, ${cpu:-unknown CPU}, $(uname -sr); build: $build ($type)"
echo "revision: $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$src" diff --quiet HEAD -- plugins 2>/dev/null || echo ' (engine modified)')"
exec "$build/tests/bench/bench_fabric" --platforms "$src/platforms" --big "$build/platforms/ft3-10240.xml" \
  --sgfabric "$build/sgfabric" $nocli "$@"
