#!/usr/bin/env bash
# Regenerates the validation report from scratch:
#   analysis/validation/make_report.sh [BUILD_DIR]      (default BUILD_DIR: build)
# runs every scenario with BUILD_DIR/sgfabric, draws docs/figures/validation/*.png and writes
# docs/validation.md from analysis/validation/report.md.in. Scratch results go to
# results/validation/ (removed first). Needs /usr/bin/python3 with matplotlib.
# Environment: VAL_JOBS (parallel simulations, default 2), VAL_COMPARE_TIMEOUT (seconds per
# compare of part 3, default 1200), VAL_VARIANT_TIMEOUT (seconds per run of part 3's RoCE
# variants at 10,240 GPUs, default 2700), VAL_SCALE_SEEDS (part 3's other ECMP draws at 2,048 and
# 10,240 GPUs, default 2,3,4,5; empty: none).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
SGF=$BUILD/sgfabric
[ -x "$SGF" ] || { echo "make_report.sh: $SGF is not an executable (build first: cmake --build $BUILD)" >&2; exit 2; }
PY=/usr/bin/python3
$PY -c 'import matplotlib' 2>/dev/null || { echo "make_report.sh: $PY lacks matplotlib" >&2; exit 2; }

export SGF VAL_SRC=$SRC VAL_OUT=$SRC/results/validation VAL_FIG=$SRC/docs/figures/validation
export VAL_JOBS=${VAL_JOBS:-2}
rm -rf "$VAL_OUT"
mkdir -p "$VAL_OUT" "$VAL_FIG"
rm -f "$VAL_FIG"/*.png
cd "$SRC"

# what was measured: the binary, and the source tree it was (presumably) built from (read-only git)
{
  printf '%s' "\`$("$SGF" --help 2>&1 | tail -1)\` built in \`$(basename "$BUILD")\`"
  if git -C "$SRC" rev-parse --short HEAD >/dev/null 2>&1; then
    # the report's own outputs (removed above, rewritten below) do not count
    printf ' from commit %s (%s files modified in the working tree)' "$(git -C "$SRC" rev-parse --short HEAD)" \
      "$(git -C "$SRC" status --porcelain --untracked-files=no -- . ':!docs/validation.md' ':!docs/figures' | wc -l)"
  fi
  printf ', on %s, %s cores' "$(date -u +%Y-%m-%d)" "$(nproc)"
} > "$VAL_OUT/build_info.txt"

start=$(date +%s)
timings=()
phase() { # phase NAME SCRIPT
  local t0 t1
  t0=$(date +%s)
  echo "== [$((t0 - start)) s] $1"
  $PY "$SRC/analysis/validation/$2"
  t1=$(date +%s)
  echo "== [$((t1 - start)) s] $1 done in $((t1 - t0)) s"
  timings+=("\"$1\": $((t1 - t0))")
}
echo "make_report.sh: $SGF ($("$SGF" --help 2>&1 | tail -1)), $VAL_JOBS parallel simulations, results in $VAL_OUT"
phase "flow vs packet" fidelity.py
phase "DCQCN" dcqcn.py
phase "MFU vs scale" scale.py
phase "sensitivity" sensitivity.py
phase "held-out patterns" held_out.py
(IFS=,; echo "{${timings[*]}}") > "$VAL_OUT/timings.json"
end=$(date +%s)
$PY "$SRC/analysis/validation/render.py" "$SRC/analysis/validation/report.md.in" "$SRC/docs/validation.md" "$((end - start))"
du -b "$VAL_FIG"/*.png | awk '{t += $1; if ($1 > 200000) print "WARNING: " $2 " is " $1 " B (> 200 KB)"} END {printf "figures: %d B in total\n", t}'
echo "make_report.sh: wrote docs/validation.md and docs/figures/validation/ in $((end - start)) s"
