#!/usr/bin/env bash
# roce_dcqcn_trap: the packet model's DCQCN trapped state on a flow file (docs/roce.md, "DCQCN's
# trapped state"). In the 1,024-GPU permutation of docs/validation.md (gen_flows.py perm-x, seed
# 1, 8 MB, rail-1024), five transfers collide on leaf7->spine28. Every other row is cut to 1 byte,
# which keeps the flow ids and so the ECMP paths. Alone, the five share the link to the end (5 x
# 163 us); beside the two pairs that collide on leaf7->spine8 and leaf7->spine31, the nic preset's
# start-up cuts take all five to the minimum rate together, the link idles until their rate timers
# fire, and they end 200-260 us later: the pairs' queues lower the leaf's dynamic PFC thresholds,
# so the five's senders are paused while every packet they send is marked, and a paused sender's
# byte counter cannot raise its rate between cuts. Flow fidelity has no trapped state (it ends them at the
# link time either way): printed, not asserted.
set -euo pipefail
. "$(dirname "$0")/common.sh"

python3 "$SRC/analysis/validation/gen_flows.py" perm-x 1024 8 8000000.0 1 "$WORK/perm.csv" >/dev/null

# subset NAME SRC:DST...: the permutation with only the transfers named keeping their bytes
subset() {
  local name=$1
  shift
  python3 - "$WORK/perm.csv" "$WORK/$name.csv" "$@" <<'PY'
import sys
keep = set(tuple(p.split(":")) for p in sys.argv[3:])
rows = open(sys.argv[1]).read().splitlines()
out, found = [rows[0]], 0
for r in rows[1:]:
    s, d, b, t = r.split(",")
    found += (s, d) in keep
    out.append(",".join((s, d, b if (s, d) in keep else "1", t)))
if found != len(keep):
    sys.exit("gen_flows.py's permutation changed: %d of the %d transfers found" % (found, len(keep)))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PY
}

five=(119:637 127:173 167:11 199:534 239:737)
subset alone "${five[@]}"
subset beside "${five[@]}" 7:204 87:289 15:917 103:136

# last FIDELITY NAME [CFG...]: the latest end (us) among the five
last() {
  local fidelity=$1 name=$2 out=$WORK/$1-$2-$#
  shift 2
  run_ok flows --platform "$PLATFORMS/rail-1024.xml" --flows "$WORK/$name.csv" --fabric roce --fidelity "$fidelity" \
    --seed 1 "$@" -o "$out"
  python3 - "$out/flows.csv" <<'PY'
import csv, sys
five = {("119", "637"), ("127", "173"), ("167", "11"), ("199", "534"), ("239", "737")}
print("%.1f" % max(float(r["fct_us"]) for r in csv.DictReader(open(sys.argv[1])) if (r["src"], r["dst"]) in five))
PY
}

alone=$(last packet alone)
beside=$(last packet beside)
flow=$(last flow beside)
# What tips them in: PFC pausing their senders (the pairs' queues lower the leaf's dynamic
# thresholds) while their egress is above Kmax. With a 128 MB buffer, which the queues never fill
# (no pause), or with it and small static thresholds (pauses, but no queue above Kmax), they are
# not trapped.
unpaused=$(last packet beside --cfg=roce/buffer:128MB)
shallow=$(last packet beside --cfg=roce/buffer:128MB --cfg=roce/pfc-threshold:static --cfg=roce/pfc-xoff:96KB \
  --cfg=roce/pfc-xon:88KB)
echo "  five transfers on leaf7->spine28, last end: alone ${alone} us, beside two colliding pairs ${beside} us (flow fidelity ${flow} us; link time 816 us)"
echo "  beside the pairs with a 128 MB buffer (no pause): ${unpaused} us; with static 96 KB thresholds too (no queue above Kmax): ${shallow} us"
python3 -c "import sys; sys.exit(0 if $alone < 830 else 1)" || die "alone, the five did not share the link to the end: $alone us"
python3 -c "import sys; sys.exit(0 if $beside > 950 else 1)" ||
  die "beside the colliding pairs the five were not trapped: $beside us (expected about 1,078)"
python3 -c "import sys; sys.exit(0 if $unpaused < 830 and $shallow < 830 else 1)" ||
  die "without pauses, or without a queue above Kmax, the five were trapped: $unpaused us, $shallow us"
echo "ok"
