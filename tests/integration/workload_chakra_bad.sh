#!/usr/bin/env bash
# workload_chakra_bad CASE: a broken Chakra execution trace given to "sgfabric run --workload
# chakra:PREFIX". The run must fail with status 1 (not a crash), say why on stderr naming the
# file (and, for a file that does not decode, the byte offset of the bad message), and leave no
# --out directory. The traces are chakra_et_gen.py's 4-rank trace, then broken here.
set -euo pipefail
. "$(dirname "$0")/common.sh"
[ $# -eq 1 ] || die "usage: $0 SGFABRIC_BINARY SOURCE_DIR CASE"
name=$1
gen=$SRC/tests/integration/chakra_et_gen.py
et=$WORK/et

# offset FILE K: the byte offset of message K (0: the GlobalMetadata) of FILE.
offset() {
  python3 - "$1" "$2" <<'PY'
import sys
data, k, pos = open(sys.argv[1], "rb").read(), int(sys.argv[2]), 0
for i in range(k):
    n = shift = 0
    while True:
        b = data[pos]; pos += 1
        n |= (b & 0x7F) << shift; shift += 7
        if not b & 0x80:
            break
    pos += n
print(pos)
PY
}

expect() {
  expect_failure run "$1" --platform "$PLATFORMS/tiny-16.xml" --workload "chakra:$et" --no-progress
}

variant=basic
case $name in barrier | mismatch | cycle | baddep) variant=$name ;; esac
python3 "$gen" "$et" --ranks 4 --variant "$variant"

case $name in
truncated)
  # Rank 1's file loses the last 5 bytes of its last message (the world all-reduce, message 8).
  at=$(offset "$et.1.et" 8)
  size=$(stat -c %s "$et.1.et")
  truncate -s $((size - 5)) "$et.1.et"
  expect "$et.1.et: byte $at: truncated: the message announces"
  ;;
corrupt)
  # Message 3 of rank 2 (node n3) keeps its length but its bytes become 0xff: no valid field.
  at=$(offset "$et.2.et" 3)
  python3 - "$et.2.et" "$at" <<'PY'
import sys
path, at = sys.argv[1], int(sys.argv[2])
b = bytearray(open(path, "rb").read())
n, shift, pos = 0, 0, at
while True:
    c = b[pos]; pos += 1
    n |= (c & 0x7F) << shift; shift += 7
    if not c & 0x80:
        break
b[pos:pos + n] = b"\xff" * n
open(path, "wb").write(bytes(b))
PY
  expect "$et.2.et: byte $at: corrupt Node message"
  ;;
bad_length)
  # A length prefix that never ends (ten bytes with the continuation bit) after rank 3's nodes.
  printf '\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff' >>"$et.3.et"
  at=$(offset "$et.3.et" 9)
  expect "$et.3.et: byte $at: truncated or corrupt length prefix"
  ;;
empty) : >"$et.0.et"; expect "$et.0.et: empty file" ;;
gzip) gzip -c "$et.0.et" >"$et.gz" && mv "$et.gz" "$et.0.et"; expect "$et.0.et: gzip-compressed" ;;
missing_middle) rm "$et.2.et"; expect "$et.2.et: missing, but $et.3.et exists" ;;
missing_last)
  # Rank 2 sends to rank 3, whose file is gone: the job would silently shrink to 3 ranks.
  rm "$et.3.et"
  expect "$et.2.et: byte|sends to rank 3, but there are only 3 rank files ($et.3.et is missing)"
  ;;
no_files) rm "$et".*.et; expect "$et.0.et: cannot open" ;;
barrier) expect "$et.0.et: byte|collective BARRIER (comm_type 9) is not supported" ;;
mismatch) expect "collective #1 on the tp group of ranks 0..: rank 0 issues allreduce of 1048576 bytes, rank 1 issues allreduce of 524288 bytes" ;;
cycle) expect "$et.0.et: byte|dependency cycle: node 7" ;;
baddep) expect "$et.0.et: byte|node 7 has a data dependency on node 999, which the file does not have" ;;
unsupported) expect "this sgfabric was built without Chakra execution-trace support" ;;
*) die "unknown case $name" ;;
esac
echo "PASS"
