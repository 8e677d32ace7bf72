#!/usr/bin/env bash
# flows_outputs: one uncongested flow on tiny-16 against the analytic completion time, and the
# contents of summary.json and links.csv.
#   mode "cut-through" (default): FCT, summary keys, links.csv, an intra-node flow on NVLink;
#   mode "store-and-forward": the extra serialisation at each switch.
set -euo pipefail
. "$(dirname "$0")/common.sh"
mode=${1:-cut-through}

platform=$PLATFORMS/tiny-16.xml
# GPU 0 (node 0, leaf 0) to GPU 8 (node 1, leaf 2): gpu0 -> leaf0 -> spine -> leaf2 -> gpu8,
# 4 links of 400Gbps = 50e9 B/s and 100ns, 3 switches of 130ns, NIC latency 500ns.
rate=50e9
base_us=$(python3 -c 'print(repr(0.5 + 4 * 0.1 + 3 * 0.13))') # 1.29 us

case $mode in
cut-through)
  expected=$(python3 -c "print(repr(1e6 / $rate * 1e6 + $base_us))") # 21.29 us
  for fidelity in packet flow; do
    out=$WORK/$fidelity
    run_ok flows --platform "$platform" --flows "$DATA/flows/one_0_8_1MB.csv" --fidelity "$fidelity" --out "$out"
    for file in flows.csv summary.json manifest.json links.csv; do
      [ -s "$out/$file" ] || die "$fidelity: $out/$file is missing or empty"
    done
    approx "$fidelity: fct_us of 0->8, 1 MB" "$(fct "$out" 1)" "$expected" 0.01
    s=$out/summary.json
    [ "$(jget "$s" fabric)" = maxmin ] || die "$fidelity: summary fabric is '$(jget "$s" fabric)'"
    [ "$(jget "$s" fidelity)" = "$fidelity" ] || die "$fidelity: summary fidelity is '$(jget "$s" fidelity)'"
    [ "$(jget "$s" seed)" = 1 ] || die "$fidelity: summary seed is '$(jget "$s" seed)', the default is 1"
    approx "$fidelity: sim_time_s" "$(jget "$s" sim_time_s)" "$expected"e-6 0.01
    [ "$(jget "$s" flows)" = 1 ] || die "$fidelity: summary flows is '$(jget "$s" flows)'"
    equal "$fidelity: bytes_delivered" "$(jget "$s" bytes_delivered)" 1e6
    if [ "$fidelity" = packet ]; then
      equal "$fidelity: counters.drops" "$(jget "$s" counters.drops)" 0
    else # flow fidelity does not model drops: null, never a fake 0
      [ "$(jget "$s" counters.drops)" = None ] || die "flow: counters.drops is $(jget "$s" counters.drops), not null"
    fi
    equal "$fidelity: counters.fabric_bytes" "$(jget "$s" counters.fabric_bytes)" 1e6
    equal "$fidelity: counters.nvlink_bytes" "$(jget "$s" counters.nvlink_bytes)" 0
    # links.csv: one row per direction; the flow leaves gpu0 and enters gpu8.
    # Packets, busy time and queues: packet fidelity only; empty (unknown) at flow fidelity, not 0.
    python3 - "$out/links.csv" "$fidelity" <<'EOF' || die "$fidelity: links.csv is wrong"
import csv, sys
table = list(csv.DictReader(open(sys.argv[1])))
rows = {(r["link"], r["from"], r["to"]): float(r["bytes"]) for r in table}
want = {("gpu0--leaf0", "gpu0", "leaf0"): 1e6, ("gpu0--leaf0", "leaf0", "gpu0"): 0,
        ("gpu8--leaf2", "leaf2", "gpu8"): 1e6}
for key, value in want.items():
    if rows.get(key) != value:
        sys.exit("links.csv %s carries %s bytes, expected %s" % (key, rows.get(key), value))
packet_only = ("packets", "busy_s", "peak_queue_bytes")
for r in table:
    if sys.argv[2] == "flow" and any(r[k] != "" for k in packet_only):
        sys.exit("flow fidelity: %s has %s, expected empty fields" % (r["link"], [r[k] for k in packet_only]))
    if sys.argv[2] == "packet" and any(r[k] == "" for k in packet_only):
        sys.exit("packet fidelity: %s has an empty field" % r["link"])
sent = next(r for r in table if (r["link"], r["from"]) == ("gpu0--leaf0", "gpu0"))
if sys.argv[2] == "packet" and (int(sent["packets"]) != 245 or not float(sent["busy_s"]) > 0):
    sys.exit("packet fidelity: gpu0 -> leaf0 sent %s packets in %s s, expected 245 (1 MB in 4096 B) and > 0"
             % (sent["packets"], sent["busy_s"]))
EOF
  done

  # An intra-node flow (GPUs 0 and 4 are both in node 0) goes over NVLink only.
  for fidelity in packet flow; do
    out=$WORK/intra-$fidelity
    run_ok flows --platform "$platform" --flows "$DATA/flows/intra_node_0_4.csv" --fidelity "$fidelity" --out "$out"
    equal "$fidelity: intra-node counters.fabric_bytes" "$(jget "$out/summary.json" counters.fabric_bytes)" 0
    equal "$fidelity: intra-node counters.nvlink_bytes" "$(jget "$out/summary.json" counters.nvlink_bytes)" 1e6
    equal "$fidelity: intra-node bytes_delivered" "$(jget "$out/summary.json" bytes_delivered)" 1e6
  done
  ;;
store-and-forward)
  # Each of the 3 switches receives a packet whole before forwarding it. In a train of MTU
  # packets the last one waits at every switch behind the full packet ahead of it, so each
  # switch adds one largest-packet serialisation, min(bytes, MTU) / rate:
  #   1 MB  = 244 x 4096 + 576: 3 x 4096 / 50e9 s (a 576-byte last packet does not set the pace)
  #   1000 B, one packet:       3 x 1000 / 50e9 s
  for case in one_0_8_1MB:1000000 one_0_8_1000B:1000; do
    file=${case%%:*}
    bytes=${case#*:}
    expected=$(python3 -c "b = $bytes; print(repr((b + 3 * min(b, 4096)) / $rate * 1e6 + $base_us))")
    for fidelity in packet flow; do
      run_ok flows --platform "$platform" --flows "$DATA/flows/$file.csv" --fidelity "$fidelity" \
        --cfg=fabric/switching:store-and-forward --out "$WORK/$fidelity-$file"
      run_ok flows --platform "$platform" --flows "$DATA/flows/$file.csv" --fidelity "$fidelity" \
        --out "$WORK/ct-$fidelity-$file"
      got=$(fct "$WORK/$fidelity-$file" 1)
      approx "$fidelity, store-and-forward: fct_us of 0->8, $bytes B" "$got" "$expected" 0.01
      # The extra delay alone, to 2%: the 1% above cannot tell 3 x 576 B from 3 x 4096 B.
      extra=$(python3 -c "print(repr($got - $(fct "$WORK/ct-$fidelity-$file" 1)))")
      approx "$fidelity, $bytes B: store-and-forward minus cut-through fct_us" "$extra" \
        "$(python3 -c "print(repr(3 * min($bytes, 4096) / $rate * 1e6))")" 0.02
    done
  done
  ;;
*) die "unknown mode '$mode' (cut-through or store-and-forward)" ;;
esac
echo "PASS flows_outputs $mode"
