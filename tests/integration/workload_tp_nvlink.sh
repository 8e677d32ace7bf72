#!/usr/bin/env bash
# workload_tp_nvlink: tensor-parallel traffic never enters the fabric when TP <= GPUs per node.
# Llama 3 8B on tiny-16.xml (2 nodes x 8 GPUs), TP 8, PP 2, 8 micro-batches, ideal fabric, flow
# fidelity, default (linear) placement: every TP group is one node, so
#   fabric_bytes_by_group.tp == 0, nvlink_bytes_by_group.tp > 0, fabric_bytes_by_group.pp > 0
# (the two stages are the two nodes). Then the same job with a placement that splits every TP
# group over both nodes (rank r on gpu (r%2)*8 + r/2) puts TP bytes on the fabric, and the PP
# peers (rank r and r+8) land in the same node: the zero above is the placement's doing. Both runs
# use NCCL's Simple protocol (coll/protocol:simple), whose wire bytes are the data: under auto, the
# protocol, and with it the flag bytes of LL and LL128, follows the hops a placement gives.
set -euo pipefail
. "$(dirname "$0")/common.sh"

run_ok workload --model llama3-8b --gpus 16 --tp 8 --pp 2 --global-batch 8 -o "$WORK/llama.trace"
cat "$WORK/last.stdout"

run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "$WORK/llama.trace" --fabric ideal --fidelity flow \
  --cfg=coll/protocol:simple --no-progress --out "$WORK/linear"
s=$WORK/linear/summary.json
ftp=$(jget "$s" fabric_bytes_by_group.tp)
ntp=$(jget "$s" nvlink_bytes_by_group.tp)
fpp=$(jget "$s" fabric_bytes_by_group.pp)
npp=$(jget "$s" nvlink_bytes_by_group.pp)
echo "linear placement: TP fabric $ftp B, TP NVLink $ntp B, PP fabric $fpp B, PP NVLink $npp B," \
  "iteration $(jget "$s" iteration_time_s) s, MFU $(jget "$s" mfu)"
equal "fabric_bytes_by_group.tp (TP 8 inside 8-GPU nodes)" "$ftp" 0
python3 -c "import sys; sys.exit(0 if $ntp > 0 else 1)" || die "nvlink_bytes_by_group.tp is $ntp, expected > 0"
python3 -c "import sys; sys.exit(0 if $fpp > 0 else 1)" || die "fabric_bytes_by_group.pp is $fpp, expected > 0"
equal "nvlink_bytes_by_group.pp (stages on different nodes)" "$npp" 0

python3 - "$WORK/split.xml" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write('<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n<platform version="4.1">\n')
    for r in range(16):
        f.write('  <actor host="gpu%d" function="rank"><argument value="%d"/></actor>\n' % ((r % 2) * 8 + r // 2, r))
    f.write('</platform>\n')
PY
run_ok run --platform "$PLATFORMS/tiny-16.xml" --workload "$WORK/llama.trace" --deployment "$WORK/split.xml" \
  --fabric ideal --fidelity flow --cfg=coll/protocol:simple --no-progress --out "$WORK/split"
s=$WORK/split/summary.json
ftp2=$(jget "$s" fabric_bytes_by_group.tp)
ntp2=$(jget "$s" nvlink_bytes_by_group.tp)
fpp2=$(jget "$s" fabric_bytes_by_group.pp)
echo "TP split over nodes: TP fabric $ftp2 B, TP NVLink $ntp2 B, PP fabric $fpp2 B, iteration $(jget "$s" iteration_time_s) s"
python3 -c "import sys; sys.exit(0 if $ftp2 > 0 else 1)" || die "split placement: fabric_bytes_by_group.tp is $ftp2, expected > 0"
equal "split placement: fabric_bytes_by_group.pp (PP peers share a node)" "$fpp2" 0
# Same job, same TP bytes in total: only where they go changes.
approx "TP bytes (fabric + NVLink) are the same under both placements" \
  "$(python3 -c "print($ftp2 + $ntp2)")" "$ntp" 1e-9
echo "PASS"
