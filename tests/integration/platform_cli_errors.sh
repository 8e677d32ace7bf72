#!/usr/bin/env bash
# platform_cli_errors: "sgfabric platform" refuses impossible or malformed options, names the
# option on stderr, and writes no file (nor a temporary one).
set -euo pipefail
. "$(dirname "$0")/common.sh"

# expect_fail OPTION ARGS...: sgfabric platform ARGS... -o WORK/out/X.xml must fail naming OPTION.
mkdir "$WORK/out"
expect_fail() {
  local option=$1 status=0
  shift
  "$SGF" platform "$@" -o "$WORK/out/X.xml" >"$WORK/stdout" 2>"$WORK/stderr" || status=$?
  echo "sgfabric platform $* -o $WORK/out/X.xml: exit status $status, stderr: $(cat "$WORK/stderr")"
  [ "$status" -ne 0 ] || die "sgfabric platform $*: succeeded"
  [ "$status" -eq 1 ] || [ "$status" -eq 2 ] || die "sgfabric platform $*: exit status $status (a crash?)"
  grep -q "^sgfabric platform: " "$WORK/stderr" || die "sgfabric platform $*: no 'sgfabric platform: ' message"
  grep -qF -- "$option" "$WORK/stderr" || die "sgfabric platform $*: stderr does not name $option"
  [ -z "$(ls -A "$WORK/out")" ] || die "sgfabric platform $*: left files behind: $(ls -A "$WORK/out")"
}

# 12 GPUs are not whole nodes of 8. The message may blame --gpus or --gpus-per-node
# (whose name starts with --gpus) but must give the GPU count.
expect_fail --gpus --gpus 12 --gpus-per-node 8
grep -qE -- "(--gpus[^-].*|gpus = )12" "$WORK/stderr" || die "--gpus 12: the message does not give the GPU count 12"
expect_fail --link-rate --gpus 16 --gpus-per-node 8 --radix 8 --link-rate 400

# Control: the same options with valid values write the file.
run_ok platform --gpus 16 --gpus-per-node 8 --radix 8 --link-rate 400Gbps -o "$WORK/out/X.xml"
[ -s "$WORK/out/X.xml" ] || die "the valid command wrote no file"
echo "PASS platform_cli_errors"
