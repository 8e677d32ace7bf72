#!/usr/bin/env python3
"""Chart of sgfabric compare: MFU and where the iteration's time goes, one bar group per fabric.

usage: plot_compare.py comparison.json compare.png
Reads the rows sgfabric compare wrote (comparison.json) and draws two panels under the scenario's
one-line title: MFU per fabric (n/a when the workload has no FLOPs), and the iteration time split
into compute, exposed communication per group (every group, dp_ep included), pipeline bubble,
waiting for stragglers and other waiting. The stacked bar is the breakdown of summary.json, whose
parts add up to the iteration time (the black mark).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

BREAKDOWN = [("breakdown.compute_s", "compute")]
BREAKDOWN += [("breakdown.exposed_comm_s." + g, "exposed " + g)
              for g in ("tp", "pp", "dp", "ep", "cp", "dp_ep", "world", "emb", "mp")]
BREAKDOWN += [("breakdown.bubble_s", "pipeline bubble"), ("breakdown.straggler_s", "waiting for stragglers"),
              ("breakdown.other_s", "other waiting")]


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    data = json.load(open(argv[1]))
    fabrics = data["fabrics"]
    rows = {row["key"]: row["values"] for row in data["rows"]}

    def values(key):
        return [v if v is not None else 0.0 for v in rows.get(key, [None] * len(fabrics))]

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8), gridspec_kw={"width_ratios": [1, 2]})
    title = data.get("scenario", {}).get("title")
    if title:
        # One line in the table; two here, split at the platform, to fit the figure's width.
        fig.suptitle(title.replace(" | ", "\n", 1), fontsize=8.5)
    raw_mfu = rows.get("mfu", [None] * len(fabrics))
    mfu = values("mfu")
    bars = left.bar(fabrics, mfu, color=["#4477aa", "#ee6677", "#228833", "#ccbb44"][: len(fabrics)])
    for bar, value, raw in zip(bars, mfu, raw_mfu):
        text = "n/a" if raw is None else "%.1f%%" % value
        left.text(bar.get_x() + bar.get_width() / 2, value, text, ha="center", va="bottom")
    left.set_ylabel("MFU (%)")
    left.set_title("Model FLOPs utilisation")
    left.set_ylim(0, max(mfu + [1]) * 1.2)

    bottom = [0.0] * len(fabrics)
    for key, label in BREAKDOWN:
        v = [max(x, 0.0) for x in values(key)]
        right.bar(fabrics, v, bottom=bottom, label=label if any(v) else "_" + label)
        bottom = [b + x for b, x in zip(bottom, v)]
    right.plot(fabrics, values("iteration_time_s"), "k_", markersize=40, label="iteration time")
    right.set_ylabel("seconds per iteration (mean over ranks)")
    right.set_title("Where the iteration goes")
    right.set_ylim(0, max(bottom + values("iteration_time_s") + [1e-9]) * 1.35)
    right.legend(fontsize=7, loc="upper center", ncol=4)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)


if __name__ == "__main__":
    main(sys.argv)
