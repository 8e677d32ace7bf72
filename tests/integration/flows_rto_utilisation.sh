#!/usr/bin/env bash
# flows_rto_utilisation: a retransmission timer still pending after the last byte was delivered
# is not activity. One 1 MB flow saturates its path at packet fidelity on RoCE; with the default
# RTO and with roce/rto:10ms, sim_time_s is the flow's completion (about 21.3 us, not the timer's
# expiry) and the busiest link's utilisation stays that of the saturated link (about 94 %, not
# diluted over the timer's 10 ms to 0.2 %). Also: at flow fidelity the packet-only counters are
# null, never 0.
set -euo pipefail
. "$(dirname "$0")/common.sh"

platform=$PLATFORMS/tiny-16.xml
flows=$DATA/flows/one_0_8_1MB.csv
run_ok flows --platform "$platform" --flows "$flows" --fabric roce --fidelity packet --out "$WORK/default"
run_ok flows --platform "$platform" --flows "$flows" --fabric roce --fidelity packet --cfg=roce/rto:10ms \
  --out "$WORK/rto10ms"
u_default=$(jget "$WORK/default/summary.json" counters.link_utilisation_max)
u_rto=$(jget "$WORK/rto10ms/summary.json" counters.link_utilisation_max)
fct_us=$(fct "$WORK/rto10ms" 1)
echo "link_utilisation_max: default RTO $u_default, roce/rto:10ms $u_rto; fct $fct_us us"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0.9 else 1)" "$u_default" ||
  die "the saturated link's utilisation is $u_default, expected > 0.9"
approx "utilisation with roce/rto:10ms" "$u_rto" "$u_default" 0.001
approx "sim_time_s with roce/rto:10ms" "$(jget "$WORK/rto10ms/summary.json" sim_time_s)" "${fct_us}e-6" 1e-9
# links.csv's utilisation column is over the same time.
python3 - "$WORK/rto10ms/links.csv" <<'PY' || die "links.csv utilisation diluted by the timer"
import csv, sys
best = max(float(r["utilisation"]) for r in csv.DictReader(open(sys.argv[1])))
sys.exit(0 if best > 0.9 else "links.csv: max utilisation %.4f" % best)
PY

# The same for a workload: run's utilisation is over the iteration, whatever timer is pending.
trace=$DATA/workloads/allreduce-dp16.trace
run_ok run --platform "$platform" --workload "$trace" --fabric roce --fidelity packet --no-progress --out "$WORK/run"
run_ok run --platform "$platform" --workload "$trace" --fabric roce --fidelity packet --no-progress \
  --cfg=roce/rto:10ms --out "$WORK/run-rto"
equal "run: iteration_time_s with roce/rto:10ms" "$(jget "$WORK/run-rto/summary.json" iteration_time_s)" \
  "$(jget "$WORK/run/summary.json" iteration_time_s)"
equal "run: link_utilisation_max with roce/rto:10ms" "$(jget "$WORK/run-rto/summary.json" counters.link_utilisation_max)" \
  "$(jget "$WORK/run/summary.json" counters.link_utilisation_max)"

# Flow fidelity does not model frames, marks or drops: null, not 0.
run_ok flows --platform "$platform" --flows "$flows" --fabric roce --fidelity flow --out "$WORK/flow"
for key in pfc_pause_frames ecn_marks cnps drops packets retransmitted_bytes; do
  [ "$(jget "$WORK/flow/summary.json" counters.$key)" = None ] ||
    die "flow fidelity: counters.$key is $(jget "$WORK/flow/summary.json" counters.$key), expected null"
done
[ "$(jget "$WORK/default/summary.json" counters.ecn_marks)" = 0 ] || die "packet fidelity: ecn_marks not an integer 0"
echo "PASS flows_rto_utilisation"
