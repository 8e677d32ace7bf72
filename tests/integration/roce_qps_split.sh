#!/usr/bin/env bash
# roce_qps_split: a transfer split over several QPs (roce/qps-per-conn) at packet fidelity, on a
# 128-GPU permutation where ECMP collisions make go-back-N rewind some QPs: every byte arrives,
# once (bytes_delivered), and the run neither crashes nor leaves a QP behind. A finished QP used
# to stay in its NIC's injection ring after a rewind, and the whole transfer used to grow by its
# finished parts' bytes while still injecting its own.
set -euo pipefail
. "$(dirname "$0")/common.sh"

flows=$WORK/perm.csv
python3 - "$flows" <<'PY'
import random, sys
rng = random.Random(1)
n = 128
while True:
    perm = list(range(n))
    rng.shuffle(perm)
    if all(i != p for i, p in enumerate(perm)):
        break
with open(sys.argv[1], "w") as out:
    out.write("src,dst,bytes,start_us\n")
    for i, p in enumerate(perm):
        out.write("%d,%d,%d,0\n" % (i, p, 2000000))
PY
for qps in 2 8; do
  run_ok flows --platform "$PLATFORMS/ft2-128.xml" --flows "$flows" --fabric roce --fidelity packet \
    --cfg=roce/qps-per-conn:$qps --out "$WORK/q$qps"
  equal "qps $qps: bytes delivered" "$(jget "$WORK/q$qps/summary.json" bytes_delivered)" 256000000
  equal "qps $qps: flows" "$(jget "$WORK/q$qps/summary.json" flows)" 128
  echo "qps $qps: mean FCT $(jget "$WORK/q$qps/summary.json" mean_fct_us) us, drops $(jget "$WORK/q$qps/summary.json" counters.drops)"
done
echo "PASS roce_qps_split"
