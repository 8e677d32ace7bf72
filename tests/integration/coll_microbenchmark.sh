#!/usr/bin/env bash
# coll_microbenchmark: "sgfabric coll", the nccl-tests-format collective microbenchmark, on an
# idle 32-GPU rail-optimized fat-tree (4 nodes of 8, radix-8 switches, 400 Gbps), flow fidelity.
# What must show:
#  - stdout parses as nccl-tests' all_reduce_perf output, one block per fabric: its header lines
#    (the same column names and units), then rows of 13 fields (size count type redop root, then
#    time algbw busbw #wrong out of place and in place);
#  - the sizes are MIN, MIN*F, ... <= MAX (nccl-tests' -b/-e/-f), and --sizes MIN:MAX:F gives
#    the same output byte for byte (determinism included);
#  - algbw = size/time and busbw = algbw x 2(n-1)/n, nccl-tests' definitions;
#  - a dp all-reduce (one rank per node, one ring per rail, the 8 rails at once) reaches at its
#    largest size at least 97 % of the NIC's payload rate, line rate x MTU/(MTU + framing), the
#    framing per packet read from `sgfabric params` (ib/frame-overhead, roce/frame-overhead), and
#    no size ever exceeds that rate;
#  - NCCL's protocols under coll/protocol:auto, per size (JSON rows, header line): LL at the
#    smallest size, Simple at the largest, the protocol never switching back to a lower-latency
#    one as sizes grow (LL, then LL128, then Simple), as NCCL's tuning model picks them;
#  - -o DIR holds a CSV and a JSON per fabric and a manifest; without -o nothing is left behind;
#  - a bad size is refused with exit status 2.
set -euo pipefail
. "$(dirname "$0")/common.sh"

args=(coll --gpus 32 --gpus-per-node 8 --radix 8 --group dp --op allreduce)
out=$WORK/res
mkdir "$WORK/tmp"
TMPDIR=$WORK/tmp run_ok "${args[@]}" -b 8 -e 1G -f 4 -o "$out"
cp "$WORK/last.stdout" "$WORK/a.txt"
TMPDIR=$WORK/tmp run_ok "${args[@]}" --sizes 8:1G:4
cp "$WORK/last.stdout" "$WORK/b.txt"
cmp -s "$WORK/a.txt" "$WORK/b.txt" || die "-b 8 -e 1G -f 4 and --sizes 8:1G:4 print different tables"
[ -z "$(ls -A "$WORK/tmp")" ] || die "sgfabric coll without -o left files in TMPDIR: $(ls -A "$WORK/tmp")"
for f in ib.csv ib.json ib.txt roce.csv roce.json roce.txt manifest.json platform.xml; do
  [ -f "$out/$f" ] || die "-o DIR has no $f"
done

"$SGF" params >"$WORK/params.txt"
python3 - "$WORK/a.txt" "$out" "$WORK/params.txt" <<'EOF'
import json, re, sys

text, out, params = open(sys.argv[1]).read(), sys.argv[2], open(sys.argv[3]).read()

def fail(msg):
    sys.exit("FAIL: " + msg)

# nccl-tests' header lines (its common.cu, run()), the column block of all_reduce_perf.
header = [
    "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          " % ("", "", "", "", ""),
    "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s" % (
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"),
    "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s" % (
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""),
]

# Blocks: each starts with "# sgfabric coll: ..., fabric NAME, ..." and ends with nccl-tests' closing lines.
blocks = re.split(r"(?m)^(?=# sgfabric coll: )", text)
blocks = [b for b in blocks if b.strip()]
if len(blocks) != 2:
    fail("expected 2 blocks (ib, roce), got %d" % len(blocks))

def value(name):
    m = re.search(r"(?m)^%s\s+(\d+)B?\s" % re.escape(name), params)
    if not m:
        fail("sgfabric params has no %s" % name)
    return float(m.group(1))

mtu = value("fabric/mtu")
framing = {"ib": value("ib/frame-overhead"), "roce": value("roce/frame-overhead")}
xml = open(out + "/platform.xml").read()
m = re.search(r'sgfabric/link-rate" value="(\d+)Gbps"', xml)
if not m:
    fail("no link-rate prop in platform.xml")
line_rate = float(m.group(1)) * 1e9 / 8  # B/s

expected_sizes = []
s = 8
while s <= 1 << 30:
    expected_sizes.append(s)
    s *= 4
n = 4  # dp group: one rank per node
factor = 2 * (n - 1) / n
for block in blocks:
    lines = block.splitlines()
    fabric = re.match(r"# sgfabric coll: allreduce, fabric (\w+),", lines[0]).group(1)
    if not lines[3].startswith("# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 4(factor) "):
        fail("%s: nccl-tests' first line is %r" % (fabric, lines[3]))
    if "# Using devices" not in lines:
        fail("%s: no '# Using devices'" % fabric)
    ranks = [l for l in lines if l.startswith("#  Rank ")]
    if len(ranks) != 32:
        fail("%s: %d device lines, expected 32" % (fabric, len(ranks)))
    try:
        h = lines.index(header[0])
    except ValueError:
        fail("%s: nccl-tests' column header is missing" % fabric)
    if lines[h + 1:h + 3] != header[1:]:
        fail("%s: header lines differ from nccl-tests':\n%s" % (fabric, "\n".join(lines[h:h + 3])))
    rows = [l.split() for l in lines if l and not l.startswith("#")]
    if [int(r[0]) for r in rows] != expected_sizes:
        fail("%s: sizes %s, expected %s" % (fabric, [r[0] for r in rows], expected_sizes))
    for r in rows:
        if len(r) != 13:
            fail("%s: a row has %d fields, nccl-tests has 13: %s" % (fabric, len(r), r))
        size, count, typ, redop, root = int(r[0]), int(r[1]), r[2], r[3], int(r[4])
        t, algbw, busbw = float(r[5]), float(r[6]), float(r[7])
        if (count, typ, redop, root) != (size // 4, "float", "sum", -1):
            fail("%s: row %s: count/type/redop/root are not nccl-tests' all-reduce ones" % (fabric, r))
        if r[8] != "N/A" or r[5:9] != r[9:13]:
            fail("%s: row %s: #wrong is not N/A or in-place differs from out-of-place" % (fabric, r))
        # Printed to 2 decimals (time to 2 to 0 decimals): compare within the rounding.
        exp_algbw = size / (t * 1e-6) / 1e9
        if abs(algbw - exp_algbw) > 0.006 + exp_algbw * 0.0006:
            fail("%s: size %d: algbw %s, size/time = %.4f" % (fabric, size, r[6], exp_algbw))
        if abs(busbw - algbw * factor) > 0.011:
            fail("%s: size %d: busbw %s is not algbw x 2(n-1)/n = %.4f" % (fabric, size, r[7], algbw * factor))
    if not lines[-3].startswith("# Out of bounds values :") or not lines[-2].startswith("# Avg bus bandwidth    :"):
        fail("%s: nccl-tests' closing lines are missing" % fabric)

    # The exact values: the JSON; the NIC's payload rate bounds every size.
    j = json.load(open("%s/%s.json" % (out, fabric)))
    if j["groups"] != 8 or j["ranks_per_group"] != n or j["algorithm"] != "ring":
        fail("%s.json: %d groups of %d, algorithm %s; expected 8 rails of %d, ring" % (
            fabric, j["groups"], j["ranks_per_group"], j["algorithm"], n))
    payload = line_rate * mtu / (mtu + framing[fabric]) / 1e9
    for row in j["rows"]:
        if row["busbw_GBps"] > payload * (1 + 1e-9):
            fail("%s: size %d: busbw %.6f GB/s exceeds the NIC payload rate %.6f GB/s" % (
                fabric, row["size_B"], row["busbw_GBps"], payload))
        if abs(row["algbw_GBps"] - row["size_B"] / row["time_us"] / 1e3) > 1e-9 * row["algbw_GBps"]:
            fail("%s.json: size %d: algbw is not size/time" % (fabric, row["size_B"]))
    # ring all-reduces at flow fidelity on 400 Gb/s NICs: one pipelined transfer per ring edge
    if any(row["rings"] != "pipelined" for row in j["rows"]):
        fail("%s.json: rings %s; expected pipelined" % (fabric, sorted(set(str(row["rings"]) for row in j["rows"]))))
    protos = [row["protocol"] for row in j["rows"]]
    rank = {"ll": 0, "ll128": 1, "simple": 2}
    if protos[0] != "ll" or protos[-1] != "simple" or any(rank[a] > rank[b] for a, b in zip(protos, protos[1:])):
        fail("%s.json: protocols by size %s; expected LL first, Simple last, never going back" % (fabric, protos))
    group_line = [l for l in lines if l.startswith("# group ")][0]
    if "protocol ll 8" not in group_line or "simple" not in group_line:
        fail("%s: the header does not give the protocols by size: %s" % (fabric, group_line))
    print("  %s: protocols by size %s" % (fabric, " ".join(protos)))
    top = j["rows"][-1]["busbw_GBps"]
    print("  %s: largest size busbw %.3f GB/s, NIC payload rate %.3f GB/s (%.0f Gbps x %g/(%g+%g)): %.2f %%" % (
        fabric, top, payload, line_rate * 8 / 1e9, mtu, mtu, framing[fabric], 100 * top / payload))
    if top < 0.97 * payload:
        fail("%s: the largest all-reduce reaches %.3f GB/s, below 97 %% of the payload rate %.3f" % (fabric, top, payload))
    csv = open("%s/%s.csv" % (out, fabric)).read().splitlines()
    if csv[0] != "size_B,count,type,redop,root,time_us,algbw_GBps,busbw_GBps" or len(csv) != len(expected_sizes) + 1:
        fail("%s.csv: unexpected header or row count" % fabric)
EOF

# NCCL channels are connections of their own: on RoCE each hashes to its own ECMP path, so on a
# 2-tier tree whose data-parallel rings cross the spines more channels spread a ring's edges
# (with one key for every channel they kept one path and the time did not move).
chan_us() {
  "$SGF" coll --op allreduce --group dp --platform "$SRC/platforms/tiny-16.xml" --sizes 64M:64M --fabrics roce \
    --cfg coll/algorithm:ring --cfg coll/channels:"$1" --seed 1 2>/dev/null | awk '$1 == 67108864 { print $6; exit }'
}
one=$(chan_us 1)
four=$(chan_us 4)
echo "  roce, tiny-16, 64 MB data-parallel ring all-reduce: 1 channel $one us, 4 channels $four us"
awk -v a="$one" -v b="$four" 'BEGIN { exit !(a > 0 && b > 0 && b < 0.8 * a) }' ||
  die "4 channels ($four us) are not faster than 1 ($one us): the channels share one ECMP path"

# A bad size: exit 2, a message naming the option, nothing written.
set +e
"$SGF" coll --gpus 32 --radix 8 --sizes 8:1X -o "$WORK/bad" 2>"$WORK/err"
rc=$?
set -e
[ $rc -eq 2 ] || die "--sizes 8:1X: exit $rc, expected 2"
grep -q -- "--sizes" "$WORK/err" || die "--sizes 8:1X: the message does not name --sizes: $(cat "$WORK/err")"
[ ! -e "$WORK/bad" ] || die "--sizes 8:1X wrote $WORK/bad"
echo "PASS"
