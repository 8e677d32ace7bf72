#!/usr/bin/env bash
# compare_why: the "why" reports of sgfabric compare (docs/compare.md, "Why"; docs/outputs.md,
# comparison.json). On Llama 3 8B, 16 GPUs, TP 8, DP 2 (ring all-reduces):
#  - comparison.json's "collectives" has, per (op, group), a count equal to the collective calls of
#    the workload (calls in the stage program x groups), the runs' total times and busbw, and the
#    slowdown against the first fabric (time / time of the first);
#  - "why" holds each run's why.json as it is; the ten busiest links have a utilisation in [0, 1],
#    sorted, the groups that crossed them, and the first is summary.json's link_utilisation_max;
#  - the heatmap covers the iteration (bins x bin_s within one bin of it) and shows the busy links
#    (a cell near 1);
#  - the same command gives a byte-identical comparison.json, and run --why leaves summary.json as
#    it is without it.
# On Mixtral 8x7B's all-to-all (EP 8 over 4 leaves of a radix-8 tree, 4 GPUs a node), RoCEv2's ECMP
# hashes transfers of one all-to-all onto the same switch-to-switch link (collisions > 0) while
# InfiniBand's adaptive routing spreads every transfer over all paths (0), and with static routing
# (ib/routing:dmodk) InfiniBand's transfers collide too.
# Where DCQCN held a port the packet model did not measure (dcqcn_held_unestimated_s_est > 0: the
# all-to-all's with roce/flow-held-ports:off), RoCE's estimated marks, CNPs and cuts are lower
# bounds: ">= " in the table, "lower_bound" true in comparison.json and "&ge;" in report.html;
# where it held none (the ring all-reduces) or measured every port it held (the all-to-all's, by
# default) they are plain counts; the estimated PFC paused time likewise.
set -euo pipefail
. "$(dirname "$0")/common.sh"

job=(--gpus 16 --model llama3-8b --tp 8 --pp 1 --global-batch 8 --radix 8 --ignore-memory)
run_ok compare "${job[@]}" --out "$WORK/a"
cat "$WORK/last.stdout"
cp "$WORK/last.stdout" "$WORK/a.stdout"
grep -q '^per collective' "$WORK/last.stdout" || die "no per-collective table on stdout"
grep -q '^flows per switch link, max' "$WORK/last.stdout" || die "no why table on stdout"
run_ok compare "${job[@]}" --out "$WORK/b"
cmp "$WORK/a/comparison.json" "$WORK/b/comparison.json" || die "comparison.json differs between identical runs"
run_ok run --platform "$WORK/a/platform.xml" --workload "$WORK/a/workload.txt" --fabric roce --ignore-memory --out "$WORK/plain"
cmp "$WORK/a/roce/summary.json" "$WORK/plain/summary.json" || die "run --why changed summary.json"
[ ! -e "$WORK/plain/why.json" ] || die "run without --why wrote why.json"

python3 - "$WORK/a" <<'PY' || die "the why reports are wrong (above)"
import json, re, sys
d = sys.argv[1]
c = json.load(open(d + "/comparison.json"))
fab = c["fabrics"]
# collective calls of the workload: calls in the (single) stage program x number of groups
text = open(d + "/workload.txt").read()
lay = dict(kv.split("=") for kv in re.search(r"^layout (.*)$", text, re.M).group(1).split())
gpus = int(lay["gpus"])
size = {"tp": int(lay["tp"]), "dp": int(lay["dp"]), "ep": int(lay["ep"])}
calls = {}
for op, group in re.findall(r"^\d+ coll .*?coll=(\w+) group=(\w+)", text, re.M):
    calls[(op, group)] = calls.get((op, group), 0) + 1
rows = {(r["op"], r["group"]): r for r in c["collectives"]}
checked = 0
for (op, group), n in calls.items():
    if group not in size:
        continue
    want = n * gpus // size[group]
    got = rows[(op, group)]["count"]
    print("%s %s: %d calls x %d groups = %d; comparison.json %s" % (op, group, n, gpus // size[group], want, got))
    assert got == [want] * len(fab), (op, group, got, want)
    checked += 1
assert checked >= 2, calls
for f_i, f in enumerate(fab):
    s = json.load(open("%s/%s/summary.json" % (d, f)))
    for e in s["collectives"]:
        if e["op"] == "sendrecv":
            continue
        r = rows[(e["op"], e["group"])]
        assert r["time_s"][f_i] == e["time_s"] and r["busbw_GBps"][f_i] == e["busbw_GBps"], (r, e)
    w = json.load(open("%s/%s/why.json" % (d, f)))
    assert c["why"][f] == w, "comparison.json's why.%s is not %s/why.json" % (f, f)
    top = w["top_links"]
    assert 1 <= len(top) <= 10, top
    u = [t["utilisation"] for t in top]
    assert all(0 <= x <= 1 for x in u) and u == sorted(u, reverse=True), u
    assert abs(u[0] - s["counters"]["link_utilisation_max"]) <= 1e-12, (u[0], s["counters"]["link_utilisation_max"])
    assert all(t["groups"] and sum(t["groups"].values()) > 0 for t in top), top
    assert "dp" in top[0]["groups"], top[0]  # TP stays on NVLink: the fabric carries dp
    hm = w["heatmap"]
    it = s["iteration_time_s"]
    assert len(hm["links"]) == len(hm["utilisation"]) > 0
    assert all(len(r) == hm["bins"] for r in hm["utilisation"])
    assert abs(hm["bins"] * hm["bin_s"] - it) <= hm["bin_s"] * 1.01, (hm["bins"], hm["bin_s"], it)
    peak = max(max(r) for r in hm["utilisation"])
    assert 0.5 < peak <= 1.0 + 1e-9, peak
    print("%s: busiest %s>%s %.1f %%, heatmap %d links x %d bins of %.3g s (peak %.2f), collisions %s of %s"
          % (f, top[0]["from"], top[0]["to"], 100 * u[0], len(hm["links"]), hm["bins"], hm["bin_s"], peak,
             w["collective_edges_sharing_link"], w["collective_edges"]))
for r in c["collectives"]:
    t = r["time_s"]
    assert all(abs(r["slowdown"][i] - t[i] / t[0]) <= 1e-12 * t[i] / t[0] for i in range(len(fab))), r
PY

moe=(--gpus 16 --model mixtral-8x7b --tp 1 --pp 1 --ep 8 --radix 8 --gpus-per-node 4 --global-batch 16 --seq 1024 --ignore-memory)
run_ok compare "${moe[@]}" --out "$WORK/moe"
cp "$WORK/last.stdout" "$WORK/moe.stdout"
run_ok compare "${moe[@]}" --cfg roce/flow-held-ports:off --out "$WORK/moe-unmeasured"
cp "$WORK/last.stdout" "$WORK/moe-unmeasured.stdout"
run_ok compare "${moe[@]}" --fabrics ib --cfg ib/routing:dmodk --out "$WORK/dmodk"
python3 - "$WORK/moe/comparison.json" "$WORK/dmodk/comparison.json" <<'PY' || die "the collision counts are wrong (above)"
import json, sys
c = json.load(open(sys.argv[1]))
dm = json.load(open(sys.argv[2]))["why"]["ib"]
ib, roce = c["why"]["ib"], c["why"]["roce"]
for name, w in (("ib (adaptive)", ib), ("roce (ECMP)", roce), ("ib (dmodk)", dm)):
    print("%s: %s of %s transfers on switch links share one with their own all-to-all, %s with another group's;"
          " flows per switch link max %s mean %.2f"
          % (name, w["collective_edges_sharing_link"], w["collective_edges"],
             w["collective_edges_sharing_link_in_group"], w["flows_per_switch_link_max"],
             w["flows_per_switch_link_mean"]))
assert roce["collective_edges"] > 0 and ib["collective_edges"] == roce["collective_edges"]
assert roce["collective_edges_sharing_link"] > 0
assert ib["collective_edges_sharing_link"] == 0
assert dm["collective_edges_sharing_link"] > 0
# the four expert groups' all-to-alls run at once: ECMP also puts pairs of different groups' on one link
assert 0 < roce["collective_edges_sharing_link_in_group"] <= roce["collective_edges"]
assert ib["collective_edges_sharing_link_in_group"] == 0
assert any(t["groups"] and "ep" in t["groups"] for t in roce["top_links"])
PY

python3 - "$WORK/a" "$WORK/moe" "$WORK/moe-unmeasured" <<'PY' || die "the lower bounds of the estimates are wrong (above)"
import json, re, sys
for d, held_expected in ((sys.argv[1], False), (sys.argv[2], False), (sys.argv[3], True)):
    stdout = d + ".stdout"
    c = json.load(open(d + "/comparison.json"))
    rows = {r["key"]: r for r in c["rows"]}
    counters = json.load(open(d + "/roce/summary.json"))["counters"]
    held = counters["dcqcn_held_unestimated_s_est"]
    print("%s: DCQCN-held port time %s s, not measured %s s" % (d, counters["dcqcn_held_s_est"], held))
    assert (held > 0) == held_expected, held
    if d == sys.argv[2]:  # held ports, every one measured on the packet model
        assert counters["dcqcn_held_s_est"] > 0 and counters["dcqcn_held_measures"] > 0, counters
    table = open(stdout).read()
    for k in ("counters.ecn_marks_est", "counters.cnps_est", "counters.dcqcn_rate_cuts_est"):
        r = rows[k]
        line = re.search(r"^%s .*$" % re.escape(r["label"]), table, re.M).group(0)
        print("  %s lower_bound %s | %s" % (r["values"], r["lower_bound"], line))
        assert r["lower_bound"] == [False, held_expected], r
        assert line.endswith((">= %.0f" if held_expected else " %.0f") % r["values"][1]), line
    r = rows["counters.pfc_paused_s_est"]
    line = re.search(r"^%s .*$" % re.escape(r["label"]), table, re.M).group(0)
    print("  %s lower_bound %s | %s" % (r["values"], r["lower_bound"], line))
    assert r["lower_bound"] == [False, held_expected] and (">= " in line) == held_expected, r
    assert ("&ge;" in open(d + "/report.html").read()) == held_expected, "report.html's lower bounds"
PY
echo "compare_why: ok"
