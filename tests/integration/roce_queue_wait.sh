#!/usr/bin/env bash
# roce_queue_wait: transfers that start behind the queues PFC stands (docs/roce.md, "The congestion
# tree", roce/flow-queue-wait). On tiny-16 at 400 Gb/s (nic preset, seed 1) four GPUs of leaves 2
# and 3 send 32 MB each into gpu0 from t = 0: leaf0->gpu0 saturates, the floors of DCQCN cannot
# hold it, and PFC pauses the links feeding it, then the uplinks of leaves 2 and 3. At 300 us
# three other GPUs of those leaves start 4 MB transfers: gpu15 into gpu0 (behind the congested
# egress's queue), gpu14 to gpu6 (a victim: its ECMP path crosses a paused uplink of leaf3, whose
# queue it waits behind), gpu10 and gpu11 to leaf1 (paths that no pause reaches). Flow fidelity
# shares the rates out from a transfer's first byte; its first byte waits behind those queues.
# Without the sojourn the late transfer into gpu0 ends 46 % early and the victim 35 % early.
# The wait is bounded by the egress's makespan: leaf0->gpu0 is work-conserving, so a late
# transfer that outlasts the incast (64 MB instead of 4 MB) ends when every byte into gpu0 has
# been served, at both fidelities (3,618 us), and waits for nothing more.
set -euo pipefail
. "$(dirname "$0")/common.sh"

cat >"$WORK/late.csv" <<'CSV'
src,dst,bytes,start_us
8,0,32000000,0
9,0,32000000,0
12,0,32000000,0
13,0,32000000,0
10,4,4000000,300
11,5,4000000,300
14,6,4000000,300
15,0,4000000,300
CSV
sed 's/^15,0,4000000,300$/15,0,64000000,300/' "$WORK/late.csv" >"$WORK/long.csv"
for file in late long; do
  for run in packet flow nowait; do
    fidelity=$run extra=()
    [ "$run" = nowait ] && fidelity=flow extra=(--cfg=roce/flow-queue-wait:off)
    run_ok flows --platform "$PLATFORMS/tiny-16.xml" --flows "$WORK/$file.csv" --fabric roce --fidelity "$fidelity" \
      --seed 1 "${extra[@]}" --out "$WORK/$file-$run"
  done
done
python3 - "$WORK" <<'PY'
import csv, os, sys
def fcts(name):
    rows = csv.DictReader(open(os.path.join(sys.argv[1], name, "flows.csv")))
    return {(x["src"], x["dst"]): float(x["fct_us"]) for x in rows}
runs = {r: fcts("late-" + r) for r in ("packet", "flow", "nowait")}
long = {r: fcts("long-" + r)[("15", "0")] for r in ("packet", "flow", "nowait")}
def err(run, key):
    return 100 * (runs[run][key] / runs["packet"][key] - 1)
for key, what in ((("15", "0"), "into gpu0, behind the congested egress"), (("14", "6"), "victim behind a paused uplink"),
                  (("10", "4"), "no pause on its path")):
    print("  %s -> %s (%s): packet %.1f us, flow %.1f us (%+.1f %%), without the sojourn %.1f us (%+.1f %%)"
          % (key[0], key[1], what, runs["packet"][key], runs["flow"][key], err("flow", key), runs["nowait"][key],
             err("nowait", key)))
bad = []
if not abs(err("flow", ("15", "0"))) < 10 or not err("nowait", ("15", "0")) < -30:
    bad.append("the late transfer into gpu0")
if not abs(err("flow", ("14", "6"))) < 20 or not err("nowait", ("14", "6")) < -30:
    bad.append("the victim")
if not abs(err("flow", ("10", "4"))) < 2 or runs["flow"][("10", "4")] != runs["nowait"][("10", "4")]:
    bad.append("the transfer no pause reaches")
print("  15 -> 0, 64 MB (outlasts the incast): packet %.1f us, flow %.1f us, without the sojourn %.1f us"
      % (long["packet"], long["flow"], long["nowait"]))
if not abs(long["flow"] / long["packet"] - 1) < 0.01 or long["flow"] != long["nowait"]:
    bad.append("the late transfer that outlasts the incast (its wait is bounded by the makespan)")
for key in (("8", "0"), ("9", "0"), ("12", "0"), ("13", "0")):  # started before any queue stood
    if runs["flow"][key] != runs["nowait"][key]:
        bad.append("the incast transfer %s -> %s" % key)
if bad:
    sys.exit("FAIL: " + ", ".join(bad))
PY
echo "ok"
