#!/usr/bin/env bash
# flows_bad_input CASE: one bad input to "sgfabric flows". The run must fail with status 1 or 2
# (not a crash), say why on stderr after "sgfabric flows: " naming the file and line or the
# parameter/option, and leave no --out directory (nor its temporary sibling).
set -euo pipefail
. "$(dirname "$0")/common.sh"
[ $# -eq 1 ] || die "usage: $0 SGFABRIC_BINARY SOURCE_DIR CASE"
name=$1

tiny=$PLATFORMS/tiny-16.xml
good_flows=$DATA/flows/one_0_8_1MB.csv
bad=$DATA/flows

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

# expect_fail "FRAGMENT[|FRAGMENT...]" ARGS...: sgfabric flows ARGS... must fail (common.sh).
expect_fail() {
  local fragments=$1
  shift
  expect_failure flows "$fragments" "$@"
}

case $name in
malformed_xml) # an unclosed <host>: libxml2 notices at </zone>, line 6
  expect_fail "bad_unclosed_tag.xml:6" --platform "$DATA/platforms/bad_unclosed_tag.xml" --flows "$good_flows" ;;
link_contradicts_tree) # GPU 3 is on leaf 0 by the fat-tree parameters; its link moved to leaf 1
  p=$(derive moved.xml 's/"gpu3--leaf0"/"gpu3--leaf1"/')
  expect_fail "moved.xml|gpu3--leaf" --platform "$p" --flows "$good_flows" ;;
unitless_bandwidth)
  p=$(derive unitless.xml '/"gpu5--leaf1"/s/bandwidth="400Gbps"/bandwidth="400"/')
  expect_fail "unitless.xml:$(line_of "$p" '"gpu5--leaf1"')|gpu5--leaf1" --platform "$p" --flows "$good_flows" ;;
negative_bandwidth)
  p=$(derive negative.xml '/"leaf1--spine2"/s/bandwidth="400Gbps"/bandwidth="-400Gbps"/')
  expect_fail "negative.xml:$(line_of "$p" '"leaf1--spine2"')|leaf1--spine2" --platform "$p" --flows "$good_flows" ;;
platform_missing)
  expect_fail "no_such_platform.xml" --platform "$WORK/no_such_platform.xml" --flows "$good_flows" ;;
cfg_unknown)
  expect_fail "fabric/nope" --platform "$tiny" --flows "$good_flows" --cfg=fabric/nope:1 ;;
cfg_out_of_range)
  expect_fail "fabric/mtu|10" --platform "$tiny" --flows "$good_flows" --cfg=fabric/mtu:10 ;;
cfg_not_numeric)
  expect_fail "fabric/mtu|big" --platform "$tiny" --flows "$good_flows" --cfg=fabric/mtu:big ;;
flow_unknown_gpu)
  expect_fail "bad_dst_99.csv:3|99" --platform "$tiny" --flows "$bad/bad_dst_99.csv" ;;
flow_truncated_row)
  expect_fail "bad_truncated_row.csv:3" --platform "$tiny" --flows "$bad/bad_truncated_row.csv" ;;
flow_non_numeric)
  expect_fail "bad_non_numeric.csv:3|abc" --platform "$tiny" --flows "$bad/bad_non_numeric.csv" ;;
flow_negative_size)
  expect_fail "bad_negative_size.csv:3|-1000" --platform "$tiny" --flows "$bad/bad_negative_size.csv" ;;
flow_wrong_header)
  expect_fail "bad_wrong_header.csv:1|src,dst,bytes,start_us" --platform "$tiny" --flows "$bad/bad_wrong_header.csv" ;;
flow_empty)
  expect_fail "bad_empty.csv:1" --platform "$tiny" --flows "$bad/bad_empty.csv" ;;
flow_header_only)
  expect_fail "bad_header_only.csv" --platform "$tiny" --flows "$bad/bad_header_only.csv" ;;
flow_file_missing)
  expect_fail "no_such_flows.csv" --platform "$tiny" --flows "$WORK/no_such_flows.csv" ;;
fabric_unknown)
  expect_fail "--fabric|nosuch" --platform "$tiny" --flows "$good_flows" --fabric nosuch ;;
fidelity_unknown)
  expect_fail "--fidelity|nosuch" --platform "$tiny" --flows "$good_flows" --fidelity nosuch ;;
seed_negative)
  expect_fail "--seed|-3" --platform "$tiny" --flows "$good_flows" --seed -3 ;;
unknown_option)
  expect_fail "--bogus" --platform "$tiny" --flows "$good_flows" --bogus ;;
*) die "unknown case '$name'" ;;
esac
echo "PASS flows_bad_input_$name"
