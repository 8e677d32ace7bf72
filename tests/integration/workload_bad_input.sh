#!/usr/bin/env bash
# workload_bad_input CASE: one bogus workload (or placement) given to "sgfabric run". The run must
# fail with status 1 or 2 (not a crash), say why on stderr after "sgfabric run: " naming the file
# and, for the workload files, the line, and leave no --out directory (nor a temporary sibling).
# The bogus traces and SimAI files are the unit tests' (tests/unit/workloads/bogus).
set -euo pipefail
. "$(dirname "$0")/common.sh"
[ $# -eq 1 ] || die "usage: $0 SGFABRIC_BINARY SOURCE_DIR CASE"
name=$1
bogus=$SRC/tests/unit/workloads/bogus
tiny=$PLATFORMS/tiny-16.xml

# expect_fail "FRAGMENT[|FRAGMENT...]" ARGS...: sgfabric run ARGS... must fail (common.sh).
expect_fail() {
  local fragments=$1
  shift
  expect_failure run "$fragments" "$@" --no-progress
}

# run_bogus FILE FRAGMENTS [PREFIX]: the trace FILE of the bogus directory (PREFIX simai: for SimAI).
run_bogus() {
  expect_fail "$1|$2" --platform "$tiny" --workload "${3:-}$bogus/$1" --fabric maxmin
}

case $name in
unknown_op) run_bogus unknown-op.trace ".trace:8: |unknown op 'teleport'" ;;
group_too_large) run_bogus group-too-large.trace ".trace:3: |group tp of 16 ranks is larger than the job (8 gpus)" ;;
truncated) run_bogus truncated.trace ".trace:8: |truncated: program 0 declares 3 ops, found 2" ;;
negative_size) run_bogus negative-size.trace ".trace:8: |negative value -4096" ;;
wrong_version) run_bogus wrong-version.trace ".trace:1: |unsupported format version 7" ;;
non_numeric) run_bogus non-numeric.trace ".trace:7: |field 'flops': 'lots' is not a number" ;;
simai_unknown_comm) run_bogus simai-unknown-comm.txt ".txt:4: |unknown comm type 'ALLSHUFFLE'" simai: ;;
simai_truncated_row) run_bogus simai-truncated-row.txt ".txt:4: |truncated row" simai: ;;
simai_negative) run_bogus simai-negative.txt ".txt:3: |negative value -1024" simai: ;;
simai_group_too_large) run_bogus simai-group-too-large.txt ".txt:1: |group larger than the job" simai: ;;
simai_bad_policy) run_bogus simai-bad-policy.txt ".txt:1: |unsupported SimAI policy" simai: ;;
simai_pp_no_pp_comm) run_bogus simai-pp-no-pp-comm.txt ".txt:1: |pp 2 needs pp_comm" simai: ;;
simai_pp_zero_pp_comm) run_bogus simai-pp-zero-pp-comm.txt ".txt:1: |pp 2 needs pp_comm" simai: ;;
simai_pp_ga_no_blocks) run_bogus simai-pp-ga-no-blocks.txt ".txt:1: |do not hold 4 repeated micro-batch blocks" simai: ;;
simai_fractional) run_bogus simai-fractional.txt ".txt:1: |pp_comm: '1048576.5' is not a whole number" simai: ;;
workload_missing)
  expect_fail "no-such.trace" --platform "$tiny" --workload "$WORK/no-such.trace" --fabric maxmin ;;
two_ranks_one_gpu) # a valid 16-rank trace, but ranks 4 and 5 both placed on gpu4 (line 10)
  expect_fail "two-ranks-one-gpu.xml:10: |gpu4 runs two ranks" --platform "$tiny" \
    --workload "$DATA/workloads/allreduce-dp16.trace" --deployment "$DATA/workloads/two-ranks-one-gpu.xml" \
    --fabric maxmin ;;
more_ranks_than_gpus) # a valid 32-rank trace on the 16-GPU platform
  expect_fail "ranks32.trace|32 ranks|16 GPUs" --platform "$tiny" --workload "$DATA/workloads/ranks32.trace" \
    --fabric maxmin ;;
deadlock) # parses, but stage 1 receives a message stage 0 never sends: found when the replay ends
  SIMGRID_FIRST=1 expect_fail "deadlock.trace|rank 1 never finished its program" --platform "$tiny" \
    --workload "$DATA/workloads/deadlock.trace" --fabric maxmin ;;
*) die "unknown case '$name'" ;;
esac
echo "PASS"
